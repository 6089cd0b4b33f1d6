"""S3DocumentStore against a real S3 API server.

Real: boto3 and botocore, speaking HTTP to moto's S3 server (``moto[server]``) running in its
own process on 127.0.0.1 (``tests/support/fixtures_s3.py``). Requests are counted with
botocore's own event hooks on the store's client. Nothing is patched.
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from tests.support import examples, require_extra
from tests.support.fixtures_s3 import count_s3_requests

boto3 = require_extra("boto3", "aws")

from agentkernel.errors import AKConfigError  # noqa: E402
from agentkernel.knowledgebase.errors import KnowledgePathError  # noqa: E402
from agentkernel.storage.s3 import S3DocumentStore  # noqa: E402

PREFIX = "bundles/kb"


@pytest.fixture
def store(s3_endpoint: str, s3_bucket: str) -> Iterator[S3DocumentStore]:
    opened = S3DocumentStore(s3_bucket, PREFIX, endpoint_url=s3_endpoint)
    yield opened
    opened.close()


def put(client: Any, bucket: str, key: str, body: bytes = b"x") -> str:
    return str(client.put_object(Bucket=bucket, Key=key, Body=body)["ETag"])


def test_walk_lists_the_prefix_with_etags_and_skips_unclean_keys(
    store: S3DocumentStore, s3_client: Any, s3_bucket: str
) -> None:
    etags = {
        "index.md": put(s3_client, s3_bucket, f"{PREFIX}/index.md", b"# Index\n"),
        "tables/orders.md": put(s3_client, s3_bucket, f"{PREFIX}/tables/orders.md", b"orders"),
    }
    put(s3_client, s3_bucket, f"{PREFIX}/.git/config")  # hidden: skipped silently
    put(s3_client, s3_bucket, f"{PREFIX}/tables/", b"")  # a console "folder": skipped
    put(s3_client, s3_bucket, f"{PREFIX}/a//b.md")
    put(s3_client, s3_bucket, f"{PREFIX}/x/../y.md")
    put(s3_client, s3_bucket, f"{PREFIX}/back\\slash.md")
    put(s3_client, s3_bucket, f"{PREFIX}-other/index.md")  # a sibling prefix
    put(s3_client, s3_bucket, "secret.md")

    files = list(store.walk())
    assert [(f.path, f.token) for f in files] == sorted(etags.items())
    assert [f.size for f in files] == [8, 6]
    assert len(store.diagnostics) == 3
    assert [f.path for f in store.walk("tables")] == ["tables/orders.md"]
    assert list(store.walk("missing")) == []


def test_walk_follows_pagination(s3_endpoint: str, s3_bucket: str, s3_client: Any) -> None:
    for index in range(7):
        put(s3_client, s3_bucket, f"{PREFIX}/c/{index}.md")
    store = S3DocumentStore(s3_bucket, PREFIX, endpoint_url=s3_endpoint, page_size=3)
    requests = count_s3_requests(store.client)
    assert [f.path for f in store.walk()] == [f"c/{index}.md" for index in range(7)]
    assert requests == {"ListObjectsV2": 3}


def test_read_is_one_get_and_read_head_one_ranged_get(
    store: S3DocumentStore, s3_client: Any, s3_bucket: str
) -> None:
    put(s3_client, s3_bucket, f"{PREFIX}/big.md", b"0123456789" * 100_000)
    put(s3_client, s3_bucket, f"{PREFIX}/empty.md", b"")
    ranges: list[bytes | None] = []

    def record_range(request: Any, **_: Any) -> None:
        ranges.append(request.headers.get("Range"))

    store.client.meta.events.register("before-send.s3.GetObject", record_range)
    requests = count_s3_requests(store.client)
    assert store.read_head("big.md", 25) == b"0123456789012345678901234"
    assert store.read_head("empty.md", 25) == b""
    assert len(store.read("big.md")) == 1_000_000
    assert store.read_head("big.md", 0) == b""  # no request at all
    assert ranges == [b"bytes=0-24", b"bytes=0-24", None]
    assert requests == {"GetObject": 3}


def test_missing_objects_and_buckets_are_file_not_found(
    store: S3DocumentStore, s3_endpoint: str
) -> None:
    with pytest.raises(FileNotFoundError, match=rf"s3://.*/{PREFIX}/nope.md"):
        store.read("nope.md")
    with pytest.raises(FileNotFoundError):
        store.read_head("nope.md", 10)
    with pytest.raises(FileNotFoundError, match="no-such-bucket"):
        list(S3DocumentStore("no-such-bucket", endpoint_url=s3_endpoint).walk())


def test_write_puts_under_the_prefix_and_matches_the_listing(
    store: S3DocumentStore, s3_client: Any, s3_bucket: str
) -> None:
    requests = count_s3_requests(store.client)
    written = store.write("generated/new.md", b"---\ntype: Note\n---\n")
    assert requests == {"PutObject": 1}
    stored = s3_client.get_object(Bucket=s3_bucket, Key=f"{PREFIX}/generated/new.md")
    assert stored["Body"].read() == b"---\ntype: Note\n---\n"
    assert stored["ContentType"] == "text/markdown"
    assert list(store.walk()) == [written]
    assert store.write("generated/new.md", b"changed").token != written.token


def test_overwrite_false_is_a_conditional_put(store: S3DocumentStore) -> None:
    store.write("a.md", b"first", overwrite=False)
    with pytest.raises(FileExistsError, match=r"a\.md"):
        store.write("a.md", b"second", overwrite=False)
    assert store.read("a.md") == b"first"


def test_declared_read_only_store_sends_no_write(s3_endpoint: str, s3_bucket: str) -> None:
    store = S3DocumentStore(s3_bucket, PREFIX, writable=False, endpoint_url=s3_endpoint)
    requests = count_s3_requests(store.client)
    assert store.writable is False
    with pytest.raises(PermissionError, match=f"s3://{s3_bucket}/{PREFIX}"):
        store.write("a.md", b"x")
    assert requests == {}


def test_construction_sends_nothing_and_borrows_a_given_client(
    s3_endpoint: str, s3_bucket: str
) -> None:
    client = boto3.client("s3", endpoint_url=s3_endpoint)
    requests = count_s3_requests(client)
    store = S3DocumentStore(s3_bucket, "p/", client=client)
    assert store.writable is True  # declared, not probed
    assert store.location == f"s3://{s3_bucket}/p"
    assert store.client is client
    store.close()
    assert requests == {}
    assert client.list_objects_v2(Bucket=s3_bucket)["KeyCount"] == 0  # not closed by the store
    client.close()


def test_bad_configuration_is_an_akconfigerror(s3_client: Any) -> None:
    with pytest.raises(AKConfigError):
        S3DocumentStore("", endpoint_url="http://127.0.0.1:1")
    with pytest.raises(AKConfigError):
        S3DocumentStore("bucket/key", endpoint_url="http://127.0.0.1:1")
    with pytest.raises(AKConfigError, match="prefix"):
        S3DocumentStore("bucket", "../up", endpoint_url="http://127.0.0.1:1")
    with pytest.raises(AKConfigError, match="not both"):
        S3DocumentStore("bucket", client=s3_client, endpoint_url="http://127.0.0.1:1")


def test_an_unreachable_endpoint_is_a_connection_error(s3_endpoint: str) -> None:
    store = S3DocumentStore("bucket", endpoint_url="http://127.0.0.1:9")
    with pytest.raises(ConnectionError, match="s3://bucket"):
        list(store.walk())


@pytest.mark.parametrize("bad", ["../x.md", "/abs.md", "a\x00.md", "a\\b.md", ".git/config", ""])
def test_unclean_paths_are_refused_before_any_request(store: S3DocumentStore, bad: str) -> None:
    requests = count_s3_requests(store.client)
    for call in (store.read, lambda p: store.read_head(p, 5), lambda p: store.write(p, b"x")):
        with pytest.raises(KnowledgePathError):
            call(bad)
    assert requests == {}


@settings(
    max_examples=examples(50),
    deadline=None,
    suppress_health_check=[HealthCheck.function_scoped_fixture],
)
@given(
    path=st.lists(
        st.sampled_from(["..", ".", "", "a", "b.md", "\\", "%2e%2e", "kb", "bundles"])
        | st.text(max_size=4),
        max_size=5,
    ).map("/".join),
    operation=st.sampled_from(["read", "head", "write", "walk"]),
)
def test_no_path_reaches_a_key_outside_the_prefix(
    store: S3DocumentStore, s3_client: Any, s3_bucket: str, path: str, operation: str
) -> None:
    put(s3_client, s3_bucket, "bundles/secret.md", b"SECRET")
    keys: list[str] = []

    def record(params: dict[str, Any], **_: Any) -> None:
        keys.extend(str(params[name]) for name in ("Key", "Prefix") if name in params)

    store.client.meta.events.register("before-parameter-build.s3", record)
    try:
        if operation == "read":
            store.read(path)
        elif operation == "head":
            store.read_head(path, 16)
        elif operation == "write":
            store.write(path, b"W")
        else:
            list(store.walk(path))
    except (KnowledgePathError, OSError):
        pass
    finally:
        store.client.meta.events.unregister("before-parameter-build.s3", record)
    assert all(key.startswith(f"{PREFIX}/") for key in keys)
    listed = s3_client.list_objects_v2(Bucket=s3_bucket)
    outside = [o["Key"] for o in listed["Contents"] if not o["Key"].startswith(f"{PREFIX}/")]
    assert outside == ["bundles/secret.md"]
    assert s3_client.get_object(Bucket=s3_bucket, Key="bundles/secret.md")["Body"].read() == (
        b"SECRET"
    )
