"""The KB_Router_Agent over the checked-in OKF bundle; offline and scripted without a model.

    python examples/cli/knowledgebase/openai/okf/demo.py ["your question"]

No API key and no network needed: the bundle is read from ./bundle through a read-only
LocalDocumentStore and the tools are the plain callables KnowledgeBuilder builds. With
``OPENAI_API_KEY`` set (or ``--model``, and the ``openai`` extra installed) the
KB_Router_Agent answers with those tools. Without one the demo says so and makes the calls
an agent would make itself: get_schemas -> browse_kb at the root -> search_kb for the
question -> fetch_kb on the best id.
"""

from __future__ import annotations

import importlib.util
import os
import sys
from pathlib import Path

from agentkernel.knowledgebase import (
    KnowledgeBase,
    KnowledgeBuilder,
    LocalDocumentStore,
    OKFManager,
)
from agentkernel.knowledgebase.okf._walkthrough import render, retrieval_run

_SPEC = importlib.util.spec_from_file_location(
    "kb_router_shared", Path(__file__).resolve().parents[1] / "_shared.py"
)
assert _SPEC is not None and _SPEC.loader is not None
shared = importlib.util.module_from_spec(_SPEC)  # ../_shared.py: agent, transcript, CLI
_SPEC.loader.exec_module(shared)

BUNDLE = Path(__file__).resolve().parent / "bundle"
QUESTION = "How do I recover when the nightly load fails?"
# Paths and ids are resolved too: <RUNBOOKS> stands for the bundle's runbook namespace.
SEMANTIC_MAP = {"<RUNBOOKS>": "runbooks"}
ROUTING = """\
OKF is a bundle of markdown concepts about Larkspur Coffee Roasters' data (sources, warehouse
tables, metrics, runbooks, dashboards, glossary). Browse from the root (browse_kb with path "")
or a namespace such as <RUNBOOKS>, search_kb for the question, and fetch_kb the ids you use
before answering. Say how trusted each source is (its trust tier) and warn when it is STALE."""


def build_backends(bundle: str | os.PathLike[str] = BUNDLE) -> list[KnowledgeBase]:
    """The demo's one backend: the bundle, read-only.

    Args:
        bundle: An OKF bundle directory.
    """
    return [OKFManager(LocalDocumentStore(bundle, writable=False), name="OKF")]


# build_agent(model=None, *, backends=None, semantic_map=None): the KB_Router_Agent, tools bound
build_agent = shared.agent_builder(ROUTING, build_backends, SEMANTIC_MAP)


ask = shared.ask  # run, print each tool call and its result, return the answer


def main(argv: list[str] | None = None) -> int:
    parser = shared.parser(__doc__, QUESTION)
    parser.add_argument("--bundle", default=str(BUNDLE), help="an OKF bundle directory")
    parser.add_argument("--full", action="store_true", help="print tool results uncut")
    args = parser.parse_args(argv)
    question = " ".join(args.question) or QUESTION
    try:
        backends = build_backends(args.bundle)
        if shared.has_model(args):
            ask(build_agent(args.model, backends=backends), question)
            return 0
    except Exception as exc:
        problem = shared.expected_problem(exc, "openai")
        if problem is None:
            raise
        print(problem, file=sys.stderr)
        return 2
    tools = KnowledgeBuilder(backends, semantic_map=SEMANTIC_MAP).build()
    print(
        "No model configured (set OPENAI_API_KEY, or pass --model): making the calls an agent "
        "would make, scripted.\n"
    )
    print(f"Question: {question}")
    print(f"Tools: {', '.join(tool.__name__ for tool in tools)}\n")
    calls = retrieval_run(tools, "OKF", question)
    print(render(calls, max_chars=None if args.full else 1800))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
