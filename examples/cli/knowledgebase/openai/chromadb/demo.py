"""KB_Router_Agent over a Chroma vector store: semantic recall of notes, and new notes.

    python examples/cli/knowledgebase/openai/chromadb/demo.py ["your question"]

Needs ``pip install 'agentkernel[chromadb,openai]'`` and ``OPENAI_API_KEY`` (or ``--model``).
Chroma is embedded in ``./.chroma`` unless ``CHROMA_HOST`` (and ``CHROMA_PORT``) name a
``chroma run`` server; ``CHROMA_PATH`` and ``CHROMA_COLLECTION`` move it. The demo seeds a few
account notes (idempotently), then lets the agent answer: get_schemas, search_kb, write_kb.
"""

from __future__ import annotations

import argparse
import os
from typing import Any

from agents import Agent, RunConfig, Runner, ToolCallItem, ToolCallOutputItem

from agentkernel.knowledgebase import KnowledgeBase, KnowledgeBuilder
from agentkernel.knowledgebase.chroma import ChromaManager
from agentkernel.knowledgebase.router import router_instructions
from agentkernel.openai import OpenAIToolBuilder

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


def build_agent(
    model: Any = None,
    *,
    backends: list[KnowledgeBase] | None = None,
    semantic_map: dict[str, str] | None = None,
) -> Agent[Any]:
    """The KB_Router_Agent with the knowledge tools bound.

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


def ask(agent: Agent[Any], question: str) -> str:
    """Run the agent on a question, print each tool call and result, return the answer."""
    print(f"Question: {question}\n")
    tracing = bool(os.environ.get("OPENAI_API_KEY"))
    result = Runner.run_sync(agent, question, run_config=RunConfig(tracing_disabled=not tracing))
    for item in result.new_items:
        if isinstance(item, ToolCallItem):
            raw: Any = item.raw_item
            print(f"-> {getattr(raw, 'name', '?')}({getattr(raw, 'arguments', '')})")
        elif isinstance(item, ToolCallOutputItem):
            text = str(item.output)
            text = text if len(text) <= 800 else text[:800] + " ..."
            print("   " + text.replace("\n", "\n   "))
    answer = str(result.final_output)
    print(f"\nAnswer: {answer}")
    return answer


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=(__doc__ or "").splitlines()[0])
    parser.add_argument("question", nargs="*", help=f"default: {QUESTION!r}")
    parser.add_argument("--model", help="a model name for the OpenAI Agents SDK")
    args = parser.parse_args(argv)
    if not (args.model or os.environ.get("OPENAI_API_KEY")):
        print(
            "OPENAI_API_KEY is not set, so there is no model to run the KB_Router_Agent. "
            "Set it (or pass --model) and run again; see README.md."
        )
        return 2
    backends = build_backends()
    try:
        seed(backends)
        ask(build_agent(args.model, backends=backends), " ".join(args.question) or QUESTION)
    finally:
        for backend in backends:
            backend.close()
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
