"""KB_Router_Agent over a Chroma vector store: semantic recall of notes, and new notes.

    python examples/cli/knowledgebase/openai/chromadb/demo.py ["your question"]

Needs ``pip install 'agentkernel[chromadb,openai]'`` and ``OPENAI_API_KEY`` (or ``--model``).
Chroma is embedded in ``./.chroma`` unless ``CHROMA_HOST`` (and ``CHROMA_PORT``) name a
``chroma run`` server; ``CHROMA_PATH`` and ``CHROMA_COLLECTION`` move it. The demo seeds a few
account notes (idempotently), then lets the agent answer: get_schemas, search_kb, write_kb.
"""

from __future__ import annotations

import importlib.util
import os
from pathlib import Path
from typing import Any

from agentkernel.knowledgebase import KnowledgeBase

_SPEC = importlib.util.spec_from_file_location(
    "kb_router_shared", Path(__file__).resolve().parents[1] / "_shared.py"
)
assert _SPEC is not None and _SPEC.loader is not None
shared = importlib.util.module_from_spec(_SPEC)  # ../_shared.py: agent, transcript, CLI
_SPEC.loader.exec_module(shared)

QUESTION = "How does Stark want to be invoiced? Save a note that finance has confirmed it."
COLLECTION = "kb_router_demo"
# A vector store has no physical names to hide: nothing in a semantic search needs resolving,
# so the map is empty (placeholders are resolved in queries, paths and ids, never in the
# backend argument). See ../neo4j and ../starburst for placeholders that matter.
SEMANTIC_MAP: dict[str, str] = {}
ROUTING = """\
ChromaDB holds free-text account notes (meetings, billing arrangements, policies).
Find them with search_kb in plain language, never with a query language.
Store anything the user asks you to remember with write_kb(backend="ChromaDB", text=...),
one self-contained note per call, naming the client it is about."""

NOTES = [
    ("Stark asked to be invoiced quarterly instead of monthly, from the July invoice on.", "crm"),
    ("Acme's renewal is due in March; they want a discount on the widget bundle.", "crm"),
    ("Refunds above 500 EUR need written approval from finance before they are issued.", "policy"),
    ("Umbrella's procurement team needs a purchase order number on every invoice.", "crm"),
    (
        "EU clients get support from 08:00 to 18:00 CET; US clients from 09:00 to 17:00 ET.",
        "policy",
    ),
]


def build_backends(embedding_function: Any = None) -> list[KnowledgeBase]:
    """The demo's one backend: a Chroma collection, located by the CHROMA_* variables.

    Args:
        embedding_function: A chromadb embedding function; chromadb's default ONNX
            all-MiniLM-L6-v2 (downloaded once, ~80 MB) when not given.
    """
    # imported here, so that without the extra the demo says what to install (see main)
    from agentkernel.knowledgebase.chroma import ChromaManager

    if embedding_function is None:
        from chromadb.utils.embedding_functions import DefaultEmbeddingFunction

        embedding_function = DefaultEmbeddingFunction()
    chroma = ChromaManager(
        name="ChromaDB",
        collection=os.environ.get("CHROMA_COLLECTION") or COLLECTION,
        embedding_function=embedding_function,
        description="Account notes and policies as free text; semantic search, writable.",
    ).add_schema(
        {
            "holds": "account notes, billing arrangements and support policies",
            "read": "search_kb(backend='ChromaDB', query=<plain language>)",
            "write": "write_kb(backend='ChromaDB', text=<one self-contained note>)",
        }
    )
    return [chroma]


def seed(backends: list[KnowledgeBase]) -> None:
    """Write the sample notes; ids are derived from the text, so a rerun adds nothing."""
    chroma = next(b for b in backends if b.backend_name == "ChromaDB")
    chroma.write([{"text": text, "metadata": {"source": source}} for text, source in NOTES])


# build_agent(model=None, *, backends=None, semantic_map=None): the KB_Router_Agent, tools bound
build_agent = shared.agent_builder(ROUTING, build_backends, SEMANTIC_MAP)


ask = shared.ask  # run, print each tool call and its result, return the answer


def main(argv: list[str] | None = None) -> int:
    args = shared.parser(__doc__, QUESTION).parse_args(argv)
    return shared.run(
        args, QUESTION, build_backends, build_agent, seed=seed, extras="chromadb,openai"
    )


if __name__ == "__main__":
    raise SystemExit(main())
