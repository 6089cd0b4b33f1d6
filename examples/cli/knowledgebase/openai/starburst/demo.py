"""KB_Router_Agent over Starburst / Trino: read-only SQL behind logical placeholders.

    python examples/cli/knowledgebase/openai/starburst/demo.py ["your question"]
    python examples/cli/knowledgebase/openai/starburst/demo.py --semantic-map galaxy.json

Needs ``pip install 'agentkernel[trino,openai]'``, a Trino or Starburst Galaxy cluster named by
the ``STARBURST_*`` variables (see README.md), and ``OPENAI_API_KEY`` (or ``--model``). The agent
writes SQL against ``<MONGO_SOURCE>`` and ``<SHEETS_SOURCE>``; the semantic_map turns them into
the cluster's tables. Both backends are read-only, so a write_kb to them is declined.
"""

from __future__ import annotations

import importlib.util
import json
from pathlib import Path

from agentkernel.knowledgebase import KnowledgeBase

_SPEC = importlib.util.spec_from_file_location(
    "kb_router_shared", Path(__file__).resolve().parents[1] / "_shared.py"
)
assert _SPEC is not None and _SPEC.loader is not None
shared = importlib.util.module_from_spec(_SPEC)  # ../_shared.py: agent, transcript, CLI
_SPEC.loader.exec_module(shared)

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
    # imported here, so that without the extra the demo says what to install (see main)
    from agentkernel.knowledgebase.starburst import StarburstManager

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


# build_agent(model=None, *, backends=None, semantic_map=None): the KB_Router_Agent, tools bound
build_agent = shared.agent_builder(f"{ROUTING}\n{WRITES}", build_backends, SEMANTIC_MAP)


ask = shared.ask  # run, print each tool call and its result, return the answer


def main(argv: list[str] | None = None) -> int:
    parser = shared.parser(__doc__, QUESTION)
    parser.add_argument("--semantic-map", help="a JSON file of placeholder -> target")
    args = parser.parse_args(argv)
    mapping = load_semantic_map(args.semantic_map)
    return shared.run(
        args, QUESTION, build_backends, build_agent, semantic_map=mapping, extras="trino,openai"
    )


if __name__ == "__main__":
    raise SystemExit(main())
