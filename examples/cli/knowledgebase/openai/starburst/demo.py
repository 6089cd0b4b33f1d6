"""KB_Router_Agent over Starburst / Trino: read-only SQL behind logical placeholders.

    python examples/cli/knowledgebase/openai/starburst/demo.py ["your question"]
    python examples/cli/knowledgebase/openai/starburst/demo.py --semantic-map galaxy.json

Needs ``pip install 'agentkernel[trino,openai]'``, a Trino or Starburst Galaxy cluster named by
the ``STARBURST_*`` variables (see README.md), and ``OPENAI_API_KEY`` (or ``--model``). The agent
writes SQL against ``<MONGO_SOURCE>`` and ``<SHEETS_SOURCE>``; the semantic_map turns them into
the cluster's tables. Both backends are read-only, so a write_kb to them is declined.
"""

from __future__ import annotations

import argparse
import json
import os
from pathlib import Path
from typing import Any

from agents import Agent, RunConfig, Runner, ToolCallItem, ToolCallOutputItem

from agentkernel.knowledgebase import KnowledgeBase, KnowledgeBuilder
from agentkernel.knowledgebase.router import router_instructions
from agentkernel.knowledgebase.starburst import StarburstManager
from agentkernel.openai import OpenAIToolBuilder

QUESTION = (
    "Which active client brings in the most revenue, and which products are out of stock? "
    "Save the answer in the knowledge base."
)
# Targets on the local Trino that seed.sql fills; pass --semantic-map for any other cluster
# (semantic_map.galaxy.json shows Starburst Galaxy's MongoDB and Google Sheets catalogs).
SEMANTIC_MAP = {
    "<MONGO_SOURCE>": "memory.crm.clients",
    "<SHEETS_SOURCE>": "memory.sheets.inventory",
}
ROUTING = """\
StarburstDB-mongo answers questions about clients: SELECT ... FROM <MONGO_SOURCE>
(columns client_name, status ('active', 'churned' or 'prospect'), region, revenue, signed).
StarburstDB-sheets answers questions about stock: SELECT ... FROM <SHEETS_SOURCE>
(columns product, stock). Read them with read_kb and one SQL SELECT; always write the
placeholders exactly as shown, never a catalog or table name."""
WRITES = """\
Both StarburstDB backends are read-only (writable: false), so write_kb declines them: when asked
to save something, tell the user it was not saved and why."""


def build_backends() -> list[KnowledgeBase]:
    """Two read-only SQL backends on the cluster named by the STARBURST_* variables."""
    mongo = StarburstManager(
        name="StarburstDB-mongo",
        description="Clients (MongoDB collection via Starburst): status, region, revenue.",
    ).add_schema(
        {
            "tables": {
                "<MONGO_SOURCE>": "client_name varchar, status varchar, region varchar, "
                "revenue decimal(10,2), signed date"
            },
            "query_template": "SELECT client_name, revenue FROM <MONGO_SOURCE> WHERE ...",
        }
    )
    sheets = StarburstManager(
        name="StarburstDB-sheets",
        description="Stock levels per product (a Google Sheet via Starburst).",
    ).add_schema(
        {
            "tables": {"<SHEETS_SOURCE>": "product varchar, stock integer"},
            "query_template": "SELECT product, stock FROM <SHEETS_SOURCE> WHERE ...",
        }
    )
    return [mongo, sheets]


def load_semantic_map(path: str | None) -> dict[str, str]:
    """``SEMANTIC_MAP`` with the entries of a JSON file laid over it.

    Args:
        path: A JSON object of placeholder -> target, or ``None`` for the defaults.
    """
    mapping = dict(SEMANTIC_MAP)
    if path:
        mapping.update(json.loads(Path(path).read_text(encoding="utf-8")))
    return mapping


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
        instructions=router_instructions(f"{ROUTING}\n{WRITES}"),
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
    parser.add_argument("--semantic-map", help="a JSON file of placeholder -> target")
    args = parser.parse_args(argv)
    if not (args.model or os.environ.get("OPENAI_API_KEY")):
        print(
            "OPENAI_API_KEY is not set, so there is no model to run the KB_Router_Agent. "
            "Set it (or pass --model) and run again; see README.md."
        )
        return 2
    backends = build_backends()
    try:
        agent = build_agent(
            args.model, backends=backends, semantic_map=load_semantic_map(args.semantic_map)
        )
        ask(agent, " ".join(args.question) or QUESTION)
    finally:
        for backend in backends:
            backend.close()
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
