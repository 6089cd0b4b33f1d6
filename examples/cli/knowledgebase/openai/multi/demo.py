"""KB_Router_Agent over Chroma, Neo4j and Starburst at once, with one semantic_map.

    python examples/cli/knowledgebase/openai/multi/demo.py ["your question"]
    python examples/cli/knowledgebase/openai/multi/demo.py --semantic-map galaxy.json

Needs ``pip install 'agentkernel[chromadb,neo4j,trino,openai]'``, the three servers of the
chromadb/, neo4j/ and starburst/ demos (same environment variables, same data), and
``OPENAI_API_KEY`` (or ``--model``). The backends, their sample data and their routing rules
are those demos' own (loaded from ../<name>/demo.py); this file adds how to route between them.
"""

from __future__ import annotations

import importlib.util
import json
from pathlib import Path
from typing import Any

from agentkernel.knowledgebase import KnowledgeBase

_SPEC = importlib.util.spec_from_file_location(
    "kb_router_shared", Path(__file__).resolve().parents[1] / "_shared.py"
)
assert _SPEC is not None and _SPEC.loader is not None
shared = importlib.util.module_from_spec(_SPEC)  # ../_shared.py: agent, transcript, CLI
_SPEC.loader.exec_module(shared)

chroma_demo = shared.load_demo("chromadb")
neo4j_demo = shared.load_demo("neo4j")
starburst_demo = shared.load_demo("starburst")

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
ask = shared.ask  # run, print each tool call and its result, return the answer


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


# build_agent(model=None, *, backends=None, semantic_map=None): the KB_Router_Agent, tools bound
build_agent = shared.agent_builder(ROUTING, build_backends, SEMANTIC_MAP)


def main(argv: list[str] | None = None) -> int:
    parser = shared.parser(__doc__, QUESTION)
    parser.add_argument("--semantic-map", help="a JSON file of placeholder -> target")
    args = parser.parse_args(argv)
    mapping = dict(SEMANTIC_MAP)
    if args.semantic_map:
        mapping.update(json.loads(Path(args.semantic_map).read_text(encoding="utf-8")))
    return shared.run(
        args,
        QUESTION,
        build_backends,
        build_agent,
        seed=lambda backends: seed(backends, mapping),
        semantic_map=mapping,
        extras="chromadb,neo4j,trino,openai",
    )


if __name__ == "__main__":
    raise SystemExit(main())
