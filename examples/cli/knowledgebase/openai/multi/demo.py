"""KB_Router_Agent over Chroma, Neo4j and Starburst at once, with one semantic_map.

    python examples/cli/knowledgebase/openai/multi/demo.py ["your question"]
    python examples/cli/knowledgebase/openai/multi/demo.py --semantic-map galaxy.json

Needs ``pip install 'agentkernel[chromadb,neo4j,trino,openai]'``, the three servers of the
chromadb/, neo4j/ and starburst/ demos (same environment variables, same data), and
``OPENAI_API_KEY`` (or ``--model``). The backends, their sample data and their routing rules
are those demos' own (loaded from ../<name>/demo.py); this file adds how to route between them.
"""

from __future__ import annotations

import argparse
import importlib.util
import json
import os
from pathlib import Path
from types import ModuleType
from typing import Any

from agents import Agent

from agentkernel.knowledgebase import KnowledgeBase, KnowledgeBuilder
from agentkernel.knowledgebase.router import router_instructions
from agentkernel.openai import OpenAIToolBuilder

HERE = Path(__file__).resolve().parent


def _sibling(name: str) -> ModuleType:
    """Load ../<name>/demo.py (the folders are not packages, and ``chromadb`` would clash)."""
    spec = importlib.util.spec_from_file_location(
        f"kb_router_{name}_demo", HERE.parent / name / "demo.py"
    )
    if spec is None or spec.loader is None:
        raise ImportError(f"cannot load the {name} demo")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


chroma_demo = _sibling("chromadb")
neo4j_demo = _sibling("neo4j")
starburst_demo = _sibling("starburst")

QUESTION = (
    "Who manages our highest-revenue active client, and what have we noted about how they want "
    "to be invoiced? Save a reminder to confirm it with finance."
)
# One map for every backend: the graph's node label and the SQL sources.
SEMANTIC_MAP = {**neo4j_demo.SEMANTIC_MAP, **starburst_demo.SEMANTIC_MAP}
ROUTING = f"""\
Four knowledge bases answer together; pick by the shape of the question:
- facts and figures about clients or stock (SQL) -> StarburstDB-mongo / StarburstDB-sheets;
- who manages, backs up or uses what (relationships) -> Neo4jDB;
- what was said or agreed, policies (free text) -> ChromaDB.
A question may need several: carry names found in one backend into the next query.
Writes: notes go to ChromaDB, relationships to Neo4jDB. The StarburstDB backends are
read-only, so never send them a write_kb.

{chroma_demo.ROUTING}

{neo4j_demo.ROUTING}

{starburst_demo.ROUTING}"""
ask = chroma_demo.ask  # run, print each tool call and its result, return the answer


def build_backends(embedding_function: Any = None) -> list[KnowledgeBase]:
    """ChromaDB, Neo4jDB, StarburstDB-mongo and StarburstDB-sheets, as the single demos build them.

    Args:
        embedding_function: For Chroma; chromadb's default ONNX model when not given.
    """
    return [
        *chroma_demo.build_backends(embedding_function),
        *neo4j_demo.build_backends(),
        *starburst_demo.build_backends(),
    ]


def seed(backends: list[KnowledgeBase], semantic_map: dict[str, str] | None = None) -> None:
    """Seed the writable backends (Chroma notes, the Neo4j graph); Starburst is read-only."""
    chroma_demo.seed(backends)
    neo4j_demo.seed(backends, SEMANTIC_MAP if semantic_map is None else semantic_map)


def build_agent(
    model: Any = None,
    *,
    backends: list[KnowledgeBase] | None = None,
    semantic_map: dict[str, str] | None = None,
) -> Agent[Any]:
    """The KB_Router_Agent with the tools of all four backends bound.

    Args:
        model: A model name or an Agents SDK ``Model``; the SDK's default when ``None``.
        backends: The backends to route over; ``build_backends()`` when ``None``.
        semantic_map: Placeholders to resolve; ``SEMANTIC_MAP`` when ``None``.
    """
    builder = KnowledgeBuilder(
        backends if backends is not None else build_backends(),
        semantic_map=SEMANTIC_MAP if semantic_map is None else semantic_map,
    )
    return Agent(
        name="KB_Router_Agent",
        instructions=router_instructions(ROUTING),
        tools=OpenAIToolBuilder.bind(builder.build()),
        model=model,
    )


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=(__doc__ or "").splitlines()[0])
    parser.add_argument("question", nargs="*", help=f"default: {QUESTION!r}")
    parser.add_argument("--model", help="a model name for the OpenAI Agents SDK")
    parser.add_argument("--semantic-map", help="a JSON file of placeholder -> target")
    args = parser.parse_args(argv)
    if not (args.model or os.environ.get("OPENAI_API_KEY")):
        print(
            "OPENAI_API_KEY is not set, so there is no model to run the KB_Router_Agent. "
            "Set it (or pass --model) and run again; see README.md."
        )
        return 2
    mapping = dict(SEMANTIC_MAP)
    if args.semantic_map:
        mapping.update(json.loads(Path(args.semantic_map).read_text(encoding="utf-8")))
    backends = build_backends()
    try:
        seed(backends, mapping)
        agent = build_agent(args.model, backends=backends, semantic_map=mapping)
        ask(agent, " ".join(args.question) or QUESTION)
    finally:
        for backend in backends:
            backend.close()
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
