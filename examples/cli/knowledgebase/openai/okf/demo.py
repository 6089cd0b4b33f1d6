"""The main job, offline: an agent-like retrieval run over the checked-in OKF bundle.

    python examples/cli/knowledgebase/openai/okf/demo.py ["your question"]

No API key and no network: the bundle is read from ./bundle through a read-only
LocalDocumentStore, the tools are the plain callables KnowledgeBuilder builds (the same ones
an OpenAI Agents SDK agent is given), and the calls an agent would make are scripted:
get_schemas -> browse_kb at the root -> search_kb for the question -> fetch_kb on the best id.
"""

from __future__ import annotations

import argparse
from pathlib import Path

from agentkernel.knowledgebase import KnowledgeBuilder, LocalDocumentStore, OKFManager
from agentkernel.knowledgebase.okf.walkthrough import render, retrieval_run

BUNDLE = Path(__file__).resolve().parent / "bundle"
DEFAULT_QUESTION = "How do I recover when the nightly load fails?"


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("question", nargs="*", help=f"default: {DEFAULT_QUESTION!r}")
    parser.add_argument("--bundle", default=str(BUNDLE), help="an OKF bundle directory")
    parser.add_argument("--full", action="store_true", help="print tool results uncut")
    args = parser.parse_args(argv)
    question = " ".join(args.question) or DEFAULT_QUESTION

    kb = OKFManager(LocalDocumentStore(args.bundle, writable=False), name="OKF")
    tools = KnowledgeBuilder([kb]).build()
    print(f"Question: {question}")
    print(f"Tools: {', '.join(tool.__name__ for tool in tools)}\n")
    calls = retrieval_run(tools, "OKF", question)
    print(render(calls, max_chars=None if args.full else 1800))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
