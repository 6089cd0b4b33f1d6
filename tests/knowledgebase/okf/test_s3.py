"""OKFManager over S3DocumentStore against a real S3 API server (moto's, on 127.0.0.1).

Real: the S3 HTTP API served by ``moto.server`` in its own process, boto3 and the store
speaking it, the manager. Requests are counted from boto3's own send events.
"""

from __future__ import annotations

from typing import Any

import pytest

from tests.support import require_extra

require_extra("boto3", "aws")

from agentkernel.knowledgebase import OKFManager  # noqa: E402
from agentkernel.knowledgebase.testing import assert_backend_contract  # noqa: E402
from agentkernel.storage.s3 import S3DocumentStore  # noqa: E402
from tests.knowledgebase.okf.helpers import SMALL_BUNDLE, Clock, concept  # noqa: E402
from tests.support.fixtures_s3 import count_s3_requests  # noqa: E402

PREFIX = "bundles/warehouse"


def upload(client: Any, bucket: str, files: dict[str, str | bytes]) -> None:
    for rel, content in files.items():
        body = content.encode() if isinstance(content, str) else content
        client.put_object(Bucket=bucket, Key=f"{PREFIX}/{rel}", Body=body)


@pytest.fixture
def s3_manager(
    s3_client: Any, s3_bucket: str, s3_endpoint: str
) -> tuple[OKFManager, S3DocumentStore, Clock]:
    upload(s3_client, s3_bucket, SMALL_BUNDLE)
    outside = concept("Secret", "Outside the prefix").encode()
    for key in ("bundles/outside.md", "bundles/warehouse-old/outside.md"):  # siblings of PREFIX
        s3_client.put_object(Bucket=s3_bucket, Key=key, Body=outside)
    store = S3DocumentStore(s3_bucket, PREFIX, endpoint_url=s3_endpoint)
    clock = Clock()
    return OKFManager(store, name="S3OKF", clock=clock, refresh_seconds=60), store, clock


def test_walk_fetch_browse_on_s3(s3_manager: tuple[OKFManager, S3DocumentStore, Clock]) -> None:
    kb, store, _ = s3_manager
    schema = kb.schema()
    assert schema["concepts"] == 4 and schema["diagnostics"] == 0
    assert schema["location"].startswith("s3://")
    requests = count_s3_requests(store.client)
    assert [r["metadata"]["id"] for r in kb.search("freshness alert", 1)] == ["playbooks/freshness"]
    assert kb.browse("")[0]["metadata"]["kind"] == "index"
    assert [r["metadata"]["id"] for r in kb.browse("tables")] == [
        "tables/customers",
        "tables/orders",
    ]
    assert requests["GetObject"] == 0  # search and browse answer from the manifest
    record = kb.fetch(["tables/orders"])[0]
    assert requests["GetObject"] == 1
    assert record["metadata"]["links"] == [
        "tables/customers",
        "playbooks/freshness",
        "metrics/revenue",
    ]
    assert record["metadata"]["trust"] == "human-reviewed"
    assert kb.search("outside prefix", 3) == []


def test_refresh_counts_gets(
    s3_manager: tuple[OKFManager, S3DocumentStore, Clock], s3_client: Any, s3_bucket: str
) -> None:
    kb, store, clock = s3_manager
    requests = count_s3_requests(store.client)
    clock.advance(60)
    kb.search("orders")
    assert requests["ListObjectsV2"] >= 1
    assert requests["GetObject"] == 0  # unchanged: the listing alone
    upload(
        s3_client,
        s3_bucket,
        {"tables/customers.md": concept("BigQuery Table", "Clients", "Renamed.")},
    )
    s3_client.delete_object(Bucket=s3_bucket, Key=f"{PREFIX}/playbooks/freshness.md")
    requests.clear()
    stats = kb.reload()
    assert requests["GetObject"] == 1  # only the changed document
    assert (stats.changed, stats.dropped) == (1, 1)
    assert [r["metadata"]["id"] for r in kb.search("clients", 1)] == ["tables/customers"]
    assert kb.fetch(["playbooks/freshness"]) == []


def test_write_through_on_s3(
    s3_manager: tuple[OKFManager, S3DocumentStore, Clock], s3_client: Any, s3_bucket: str
) -> None:
    kb, store, _ = s3_manager
    assert kb.capabilities.writable
    requests = count_s3_requests(store.client)
    written = kb.write(
        [{"text": "Loader retries\nThe loader retries three times.", "metadata": {}}]
    )
    assert written == ["generated/loader-retries"]
    assert requests["PutObject"] == 1 and requests["ListObjectsV2"] == 0
    assert [r["metadata"]["id"] for r in kb.search("loader retries", 1)] == written
    again = kb.write([{"text": "Loader retries\nagain", "metadata": {}}])
    assert again == ["generated/loader-retries-2"]
    body = s3_client.get_object(Bucket=s3_bucket, Key=f"{PREFIX}/generated/loader-retries.md")[
        "Body"
    ].read()
    assert b"The loader retries three times." in body
    record = kb.fetch(["tables/orders"])[0]
    original = s3_client.get_object(Bucket=s3_bucket, Key=f"{PREFIX}/tables/orders.md")[
        "Body"
    ].read()
    kb.write([record])
    assert (
        s3_client.get_object(Bucket=s3_bucket, Key=f"{PREFIX}/tables/orders.md")["Body"].read()
        == original
    )


def test_outage_keeps_serving(
    s3_manager: tuple[OKFManager, S3DocumentStore, Clock], s3_client: Any, s3_bucket: str
) -> None:
    kb, _, clock = s3_manager
    keys = [o["Key"] for o in s3_client.list_objects_v2(Bucket=s3_bucket)["Contents"]]
    saved = {k: s3_client.get_object(Bucket=s3_bucket, Key=k)["Body"].read() for k in keys}
    s3_client.delete_objects(Bucket=s3_bucket, Delete={"Objects": [{"Key": k} for k in keys]})
    s3_client.delete_bucket(Bucket=s3_bucket)  # the bucket vanishes
    clock.advance(60)
    assert [r["metadata"]["id"] for r in kb.search("freshness", 1)] == ["playbooks/freshness"]
    assert any("refresh failed" in d for d in kb.diagnostics)
    assert kb.schema()["concepts"] == 4
    s3_client.create_bucket(Bucket=s3_bucket)
    for key, body in saved.items():
        s3_client.put_object(Bucket=s3_bucket, Key=key, Body=body)
    clock.advance(60)
    assert kb.schema()["diagnostics"] == 0
    assert kb.schema()["concepts"] == 4


def test_contract_on_s3(s3_manager: tuple[OKFManager, S3DocumentStore, Clock]) -> None:
    kb, _, _ = s3_manager
    assert_backend_contract(
        kb,
        search_query="orders",
        browse_path="tables",
        sample_write=[{"text": "Contract\nnote", "metadata": {}}],
    )
