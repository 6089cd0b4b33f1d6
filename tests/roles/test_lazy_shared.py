"""Configuration-driven OKF against real bundles: lazy opening, one shared manager per
database, writes by a producer found by a consumer, read-only warnings, local and S3.

Real: bundles on disk (LocalDocumentStore), a moto S3 API server on 127.0.0.1 for the S3
database, and the real OKFManager. The counting store is a genuine DocumentStore subclass
loaded from configuration by its dotted path.
"""

from __future__ import annotations

import json
import logging
import shutil
from pathlib import Path
from typing import Any

import pytest

from agentkernel.roles import OKFCapability
from tests.support import okf_bundle

from . import counting_store


def concept(type_: str, title: str, body: str) -> str:
    return f"---\ntype: {type_}\ntitle: {title}\n---\n{body}\n"


@pytest.fixture
def bundle(tmp_path: Path) -> Path:
    root = tmp_path / "warehouse"
    (root / "tables").mkdir(parents=True)
    (root / "tables" / "orders.md").write_text(
        concept("Table", "Orders", "Every order placed in the web shop, one row per order.")
    )
    (root / "tables" / "refunds.md").write_text(
        concept("Table", "Refunds", "Refunds issued against orders, settled nightly.")
    )
    return root


def tools(cap: OKFCapability, agent: str) -> dict[str, Any]:
    return {t.__name__: t for t in cap.tools_for(agent)}


def test_deciding_tools_and_prompts_opens_nothing(bundle: Path) -> None:
    counting_store.CALLS.clear()
    cap = OKFCapability.from_config(
        {
            "okf": {
                "databases": {
                    "warehouse": {
                        "type": "tests.roles.counting_store.CountingStore",
                        "uri": str(bundle),
                        "consumer": ["Support"],
                        "producer": ["Ingest"],
                    }
                }
            }
        }
    )
    assert cap is not None
    support, ingest = tools(cap, "Support"), tools(cap, "Ingest")
    assert cap.instructions_for("Support") and cap.instructions_for("Ingest")
    assert counting_store.CALLS == {}  # no store opened, no walk, no read

    assert "[tables/orders]" in support["search_kb"]("warehouse", "orders placed web shop")
    assert counting_store.CALLS["open"] == 1
    assert counting_store.CALLS["walk"] == 1
    reads_after_first_walk = counting_store.CALLS["read"]

    # A second agent reaching the same database shares the manager: no new store, no new walk.
    assert "Refunds" in ingest["browse_kb"]("warehouse", "tables")
    assert counting_store.CALLS["open"] == 1
    assert counting_store.CALLS["walk"] == 1
    assert counting_store.CALLS["read"] == reads_after_first_walk
    assert cap.manager("warehouse") is cap.manager("warehouse")


def test_a_producer_writes_and_a_consumer_finds_it(bundle: Path, tmp_path: Path) -> None:
    config = tmp_path / "config.yaml"
    config.write_text(
        "okf:\n  databases:\n    warehouse:\n      type: local\n      uri: ./warehouse\n"
        "      consumer: [Support]\n      producer: [Ingest]\n"
    )
    cap = OKFCapability.from_config(config)  # uri relative to the config file
    assert cap is not None
    written = tools(cap, "Ingest")["write_kb"](
        "warehouse", text="Late refunds runbook\nRefunds older than 90 days need finance approval."
    )
    assert written.startswith("Wrote 1 record(s) to 'warehouse'")
    found = tools(cap, "Support")["search_kb"]("warehouse", "refunds finance approval 90 days")
    first_id = found.splitlines()[0].split("]")[0].lstrip("- [")
    assert first_id.startswith("generated/")
    fetched = tools(cap, "Support")["fetch_kb"]("warehouse", first_id)
    assert "need finance approval" in fetched
    assert list((bundle / "generated").glob("*.md"))


def test_schemas_and_descriptions_list_only_the_agents_databases(bundle: Path) -> None:
    other = bundle.parent / "policies"
    shutil.copytree(bundle, other)
    cap = OKFCapability.from_config(
        {
            "okf": {
                "databases": {
                    "warehouse": {"type": "local", "uri": str(bundle), "producer": ["Ingest"]},
                    "policies": {"type": "local", "uri": str(other), "consumer": ["Other"]},
                }
            }
        }
    )
    assert cap is not None
    ingest = tools(cap, "Ingest")
    schemas = json.loads(ingest["get_schemas"]())
    assert list(schemas) == ["warehouse"]
    assert schemas["warehouse"]["capabilities"]["writable"] is True
    assert ingest["get_all_kb_descriptions"]().startswith("- warehouse: ")
    assert "policies" not in ingest["get_all_kb_descriptions"]()
    consumer_schema = json.loads(tools(cap, "Other")["get_schemas"]())
    assert consumer_schema["policies"]["capabilities"]["writable"] is False


def test_read_only_store_with_writers_warns_and_declines(
    caplog: pytest.LogCaptureFixture,
) -> None:
    real = okf_bundle("ga4")
    read_only = "tests.roles.counting_store.ReadOnlyStore"
    cap = OKFCapability.from_config(
        {
            "okf": {
                "databases": {"ga4": {"type": read_only, "uri": str(real), "producer": ["Ingest"]}}
            }
        }
    )
    assert cap is not None
    with caplog.at_level(logging.WARNING, logger="agentkernel.roles.capability"):
        result = tools(cap, "Ingest")["write_kb"]("ga4", text="A note\nbody")
    warning = [r.getMessage() for r in caplog.records if r.levelno == logging.WARNING]
    assert any("'ga4'" in m and "Ingest" in m and "read-only" in m for m in warning)
    assert result.startswith("Backend 'ga4' does not support write.")
    assert not (real / "generated").exists()


def test_s3_database(
    s3_endpoint: str, s3_bucket: str, bundle: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    import boto3

    client = boto3.client("s3", endpoint_url=s3_endpoint)
    for path in bundle.rglob("*.md"):
        client.put_object(
            Bucket=s3_bucket, Key=f"kb/{path.relative_to(bundle)}", Body=path.read_bytes()
        )
    monkeypatch.setenv("AWS_ENDPOINT_URL_S3", s3_endpoint)
    cap = OKFCapability.from_config(
        {
            "okf": {
                "databases": {
                    "lake": {"type": "s3", "uri": f"s3://{s3_bucket}/kb", "consumer": ["A"]}
                }
            }
        }
    )
    assert cap is not None
    assert "[tables/refunds]" in tools(cap, "A")["search_kb"]("lake", "refunds settled nightly")
