"""KB_Router_Agent over a Neo4j graph: Cypher reads and writes through one placeholder.

    python examples/cli/knowledgebase/openai/neo4j/demo.py ["your question"]

Needs ``pip install 'agentkernel[neo4j,openai]'``, a Neo4j (or other Bolt + Cypher) server
named by ``NEO4J_URI`` / ``NEO4J_USERNAME`` / ``NEO4J_PASSWORD``, and ``OPENAI_API_KEY`` (or
``--model``). The demo seeds a small account graph (idempotently: every write is a MERGE),
then lets the agent answer: get_schemas, read_kb with Cypher, write_kb with Cypher.
"""

from __future__ import annotations

import argparse
import os
from typing import Any

from agents import Agent, RunConfig, Runner, ToolCallItem, ToolCallOutputItem

from agentkernel.knowledgebase import KnowledgeBase, KnowledgeBuilder
from agentkernel.knowledgebase.neo4j import Neo4jManager
from agentkernel.knowledgebase.router import router_instructions
from agentkernel.openai import OpenAIToolBuilder

QUESTION = (
    "Who is Stark's account manager? Record in the graph that Grace Hopper backs them up "
    "while they are on leave."
)
# The agent writes <CLIENT> in Cypher; each deployment maps it to its own node label.
SEMANTIC_MAP = {"<CLIENT>": "Client"}
ROUTING = """\
Neo4jDB is a graph of people, clients and products: (:Person)-[:MANAGES]->(:<CLIENT>),
(:Person)-[:BACKS_UP]->(:<CLIENT>), (:<CLIENT>)-[:USES]->(:Product).
Every node has a name property. Always write the client label as <CLIENT>.
Read with read_kb(backend="Neo4jDB", query=<Cypher>); return named columns, e.g.
MATCH (p:Person)-[:MANAGES]->(c:<CLIENT> {name: 'Acme'}) RETURN p.name AS manager.
Write relationships with write_kb(backend="Neo4jDB", query=<Cypher with $parameters>,
params_json=<JSON object>): match existing nodes first and MERGE, so a rerun adds nothing."""

MANAGERS = [
    ("Ada Lovelace", "Stark"),
    ("Ada Lovelace", "Acme"),
    ("Grace Hopper", "Umbrella"),
    ("Grace Hopper", "Globex"),
    ("Alan Turing", "Tyrell"),
    ("Alan Turing", "Initech"),
]
PRODUCTS = [("Stark", "widget"), ("Stark", "gadget"), ("Acme", "widget"), ("Umbrella", "gadget")]
_SEED = """\
UNWIND $managers AS row
MERGE (p:Person {name: row.person})
MERGE (c:<CLIENT> {name: row.client})
MERGE (p)-[:MANAGES]->(c)
WITH count(*) AS done
UNWIND $products AS row
MERGE (c:<CLIENT> {name: row.client})
MERGE (x:Product {name: row.product})
MERGE (c)-[:USES]->(x)"""


def build_backends() -> list[KnowledgeBase]:
    """The demo's one backend: the graph named by the NEO4J_* variables."""
    graph = Neo4jManager(
        name="Neo4jDB",
        description="Who manages and backs up which client, and which products clients use.",
    ).add_schema(
        {
            "nodes": {"Person": ["name"], "<CLIENT>": ["name"], "Product": ["name"]},
            "relationships": ["MANAGES", "BACKS_UP", "USES"],
            "read": "read_kb(backend='Neo4jDB', query=<Cypher returning named columns>)",
            "write": "write_kb(backend='Neo4jDB', query=<Cypher MERGE>, params_json=<JSON>)",
        }
    )
    return [graph]


def seed(backends: list[KnowledgeBase], semantic_map: dict[str, str] | None = None) -> None:
    """MERGE the sample graph; a rerun changes nothing."""
    graph = next(b for b in backends if b.backend_name == "Neo4jDB")
    mapping = SEMANTIC_MAP if semantic_map is None else semantic_map
    statement = KnowledgeBuilder([graph], semantic_map=mapping).resolve(_SEED)
    params = {
        "managers": [{"person": p, "client": c} for p, c in MANAGERS],
        "products": [{"client": c, "product": x} for c, x in PRODUCTS],
    }
    graph.write([{"text": "", "metadata": {"query": statement, "params": params}}])


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
