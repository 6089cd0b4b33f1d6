"""Importing is free: the package root loads no optional SDK and does no work.

Each check runs in a fresh interpreter (subprocess), so modules imported by other tests
cannot hide a regression.
"""

from __future__ import annotations

import json
import subprocess
import sys

OPTIONAL_SDKS = [
    "chromadb",
    "neo4j",
    "trino",
    "boto3",
    "botocore",
    "sqlalchemy",
    "psycopg",
    "mcp",
    "agents",
    "openai",
    "langgraph",
    "langchain_core",
    "crewai",
    "google.adk",
]


def loaded_after(code: str) -> set[str]:
    script = f"import sys\n{code}\nimport json\nprint(json.dumps(sorted(sys.modules)))"
    out = subprocess.run(
        [sys.executable, "-c", script], check=True, capture_output=True, text=True
    ).stdout
    return set(json.loads(out.splitlines()[-1]))


def test_importing_the_root_costs_one_module_import() -> None:
    before = loaded_after("")
    after = loaded_after("import agentkernel.knowledgebase")
    ours = sorted(m for m in after - before if m.startswith("agentkernel"))
    assert ours == ["agentkernel", "agentkernel.knowledgebase"]
    assert not any(m.split(".")[0] in {"yaml", "pydantic"} for m in after - before)


def test_core_names_pull_no_optional_sdk() -> None:
    loaded = loaded_after(
        "from agentkernel.knowledgebase import (KnowledgeBase, KnowledgeBuilder, "
        "KnowledgeCapabilities, Record, KnowledgeRecord, KnowledgeMetadata, KnowledgeError, "
        "KnowledgeCapabilityError, KnowledgePathError, DocumentStore, LocalDocumentStore, "
        "OKFManager, DocumentKnowledgeBase, SQLQueryError, SQLRefusedError, CutRecords)"
    )
    leaked = [sdk for sdk in OPTIONAL_SDKS if sdk in loaded]
    assert leaked == []


def test_public_names_are_exactly_the_manuals() -> None:
    import agentkernel.knowledgebase as kb

    assert kb.__all__ == [
        "CutRecords",
        "DocumentKnowledgeBase",
        "DocumentStore",
        "KnowledgeBase",
        "KnowledgeBuilder",
        "KnowledgeCapabilities",
        "KnowledgeCapabilityError",
        "KnowledgeError",
        "KnowledgeMetadata",
        "KnowledgePathError",
        "KnowledgeRecord",
        "LocalDocumentStore",
        "OKFManager",
        "Record",
        "S3DocumentStore",
        "SQLQueryError",
        "SQLRefusedError",
    ]
    for hidden in ("ChromaManager", "Neo4jManager", "StarburstManager"):
        assert not hasattr(kb, hidden)


def test_an_unknown_name_is_an_attribute_error() -> None:
    import agentkernel.knowledgebase as kb

    try:
        kb.NoSuchThing  # noqa: B018
    except AttributeError as exc:
        assert "NoSuchThing" in str(exc)
    else:
        raise AssertionError("expected AttributeError")
