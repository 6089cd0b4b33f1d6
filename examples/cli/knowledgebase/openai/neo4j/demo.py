"""KB_Router_Agent over a Neo4j graph: Cypher reads and writes through one placeholder.

    python examples/cli/knowledgebase/openai/neo4j/demo.py ["your question"]

Needs ``pip install 'agentkernel[neo4j,openai]'``, a Neo4j (or other Bolt + Cypher) server
named by ``NEO4J_URI`` / ``NEO4J_USERNAME`` / ``NEO4J_PASSWORD``, and ``OPENAI_API_KEY`` (or
``--model``). The demo seeds a small account graph (idempotently: every write is a MERGE),
then lets the agent answer: get_schemas, read_kb with Cypher, write_kb with Cypher.
"""

from __future__ import annotations

import importlib.util
from pathlib import Path

from agentkernel.knowledgebase import KnowledgeBase, KnowledgeBuilder

_SPEC = importlib.util.spec_from_file_location(
    "kb_router_shared", Path(__file__).resolve().parents[1] / "_shared.py"
)
assert _SPEC is not None and _SPEC.loader is not None
shared = importlib.util.module_from_spec(_SPEC)  # ../_shared.py: agent, transcript, CLI
_SPEC.loader.exec_module(shared)

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
    # imported here, so that without the extra the demo says what to install (see main)
    from agentkernel.knowledgebase.neo4j import Neo4jManager

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


# build_agent(model=None, *, backends=None, semantic_map=None): the KB_Router_Agent, tools bound
build_agent = shared.agent_builder(ROUTING, build_backends, SEMANTIC_MAP)


ask = shared.ask  # run, print each tool call and its result, return the answer


def main(argv: list[str] | None = None) -> int:
    args = shared.parser(__doc__, QUESTION).parse_args(argv)
    return shared.run(args, QUESTION, build_backends, build_agent, seed=seed, extras="neo4j,openai")


if __name__ == "__main__":
    raise SystemExit(main())
