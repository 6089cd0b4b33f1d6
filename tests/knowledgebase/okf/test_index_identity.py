"""An index knows its bundle, Lance errors read as one line, the CLI serves from an index.

Real: bundles written to tmp, the LocalDocumentStore, the indexer and LanceDB in tmp folders,
the installed ``agentkernel-kb`` console script run in subprocesses (as a user runs it), and
for the kill test an indexer process killed with SIGKILL while it writes to the S3 API server
(moto's, through the 20 ms latency proxy) and a pod serving from the node cache meanwhile.
"""

from __future__ import annotations

import json
import os
import random
import shutil
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

from tests.support import REPO, require_extra

require_extra("lancedb", "lancedb")

from agentkernel.knowledgebase import LocalDocumentStore, OKFManager  # noqa: E402
from agentkernel.knowledgebase.errors import KnowledgeError  # noqa: E402
from agentkernel.knowledgebase.okf.bundleindex.identity import IndexBundleError  # noqa: E402
from agentkernel.knowledgebase.okf.bundleindex.indexer import index_bundle  # noqa: E402
from agentkernel.knowledgebase.okf.bundleindex.lancesdk import one_line  # noqa: E402
from tests.knowledgebase.okf.helpers import concept, write_bundle  # noqa: E402
from tests.knowledgebase.okf.test_bundleindex_processes import (  # noqa: E402
    INDEXER,
    KILL_POINTS,
    kill_when,
    make_bundle,
    note,
    spawn,
)
from tests.support.latency_proxy import LatencyProxy  # noqa: E402

SCRIPT = Path(sys.executable).parent / "agentkernel-kb"


def cli(*args: str) -> subprocess.CompletedProcess[str]:
    env = {**os.environ, "PYTHONPATH": f"{REPO / 'src'}{os.pathsep}{REPO}"}
    return subprocess.run(
        [str(SCRIPT), *args], capture_output=True, text=True, env=env, timeout=180
    )


def two_bundles(tmp_path: Path) -> tuple[Path, Path]:
    first = write_bundle(
        tmp_path / "warehouse",
        {
            f"tables/t{i}.md": concept("Table", f"Table {i}", "orders and customers")
            for i in range(6)
        },
    )
    second = write_bundle(
        tmp_path / "recipes",
        {f"dishes/d{i}.md": concept("Recipe", f"Dish {i}", "soup and bread") for i in range(4)},
    )
    return first, second


def test_indexing_another_bundle_into_an_index_is_refused_and_writes_nothing(
    tmp_path: Path,
) -> None:
    first, second = two_bundles(tmp_path)
    index = str(tmp_path / "kb.lance")
    stats = index_bundle(LocalDocumentStore(first, writable=False), index)
    with pytest.raises(IndexBundleError) as caught:
        index_bundle(LocalDocumentStore(second, writable=False), index)
    message = str(caught.value)
    assert "'warehouse'" in message and "--replace" in message and "Nothing was written" in message
    kb = OKFManager(LocalDocumentStore(first, writable=False), index=index, refresh_seconds=None)
    assert kb.schema()["concepts"] == 6 and kb.schema()["index"]["version"] == stats.version
    replaced = index_bundle(LocalDocumentStore(second, writable=False), index, replace=True)
    assert replaced.deleted == 6 and replaced.committed
    kb = OKFManager(LocalDocumentStore(second, writable=False), index=index, refresh_seconds=None)
    assert kb.schema()["concepts"] == 4
    assert kb.search("soup", 1)[0]["metadata"]["id"].startswith("dishes/")


def test_the_same_bundle_at_another_location_is_indexed_and_served(tmp_path: Path) -> None:
    first, _ = two_bundles(tmp_path)
    index = str(tmp_path / "kb.lance")
    index_bundle(LocalDocumentStore(first, writable=False), index)
    copy = shutil.copytree(first, tmp_path / "mounted" / "elsewhere")
    (copy / "tables/t0.md").write_text(concept("Table", "Table 0", "revised orders"))
    stats = index_bundle(LocalDocumentStore(copy, writable=False), index)  # another mount
    assert stats.reads == 6 and stats.deleted == 0  # every token differs; nothing is lost
    kb = OKFManager(LocalDocumentStore(copy, writable=False), index=index, refresh_seconds=None)
    assert kb.search("revised", 1)[0]["metadata"]["id"] == "tables/t0"


def test_a_pod_refuses_an_index_built_from_another_bundle(tmp_path: Path) -> None:
    first, second = two_bundles(tmp_path)
    index = str(tmp_path / "kb.lance")
    index_bundle(LocalDocumentStore(first, writable=False), index)
    with pytest.raises(IndexBundleError) as caught:
        OKFManager(LocalDocumentStore(second, writable=False), index=index)
    message = str(caught.value)
    assert "another bundle's index" in message and "--replace" in message
    assert "\n" not in message


def test_lance_errors_read_as_one_line() -> None:
    raised = OSError(
        "LanceError(IO): Generic S3 error: request failed, "
        "/home/runner/.cargo/registry/src/index.crates.io-6f17d22bba15001f/lance-io-0.30.0/"
        "src/object_store.rs:421:38\nCaused by: connection refused"
    )
    line = one_line(raised)
    assert line == "OSError: LanceError(IO): Generic S3 error: request failed"


def test_a_pod_over_an_unreadable_index_says_what_to_do_in_one_line(tmp_path: Path) -> None:
    first, _ = two_bundles(tmp_path)
    index = tmp_path / "kb.lance"
    index_bundle(LocalDocumentStore(first, writable=False), str(index))
    for manifest in (index / "_versions").glob("*.manifest"):
        manifest.write_bytes(b"not a manifest")
    with pytest.raises(KnowledgeError) as caught:
        OKFManager(LocalDocumentStore(first, writable=False), index=str(index))
    message = str(caught.value)
    assert ".rs:" not in message and "\n" not in message
    assert "agentkernel-kb index" in message


def test_the_cli_refuses_another_bundle_then_replaces_and_serves_from_the_index(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    from agentkernel.cli import main

    def run(*args: str) -> tuple[int, str, str]:
        """The same command line in this process (the console script is run twice above)."""
        capsys.readouterr()
        status = main(list(args))
        out, err = capsys.readouterr()
        return status, out, err

    first, second = two_bundles(tmp_path)
    index = str(tmp_path / "kb.lance")
    assert cli("index", str(first), "--to", index, "--quiet").returncode == 0
    refused = cli("index", str(second), "--to", index, "--quiet")
    assert refused.returncode == 2
    lines = refused.stderr.strip().splitlines()
    assert len(lines) == 1 and "--replace" in lines[0] and ".rs:" not in lines[0]
    status, out, _ = run("search", str(first), "--index", index, "orders")
    assert status == 0 and "tables/t" in out
    _, out, _ = run("schema", str(first), "--index", index)
    assert "Lance's BM25" in out
    status, out, _ = run("fetch", str(first), "--index", index, "tables/t2")
    assert status == 0 and "Table 2" in out
    status, out, _ = run("browse", str(first), "tables", "--index", index)
    assert status == 0 and "tables/t5" in out
    assert run("index", str(second), "--to", index, "--quiet", "--replace")[0] == 0
    status, _, err = run("search", str(first), "--index", index, "orders")
    assert status == 2 and "another bundle's index" in err
    status, out, _ = run("search", str(second), "--index", index, "soup")
    assert status == 0 and "dishes/d" in out


def test_an_indexer_killed_while_writing_to_s3_leaves_pods_serving(
    tmp_path: Path, s3_bucket: str, s3_endpoint: str, s3_latency: LatencyProxy
) -> None:
    require_extra("boto3", "aws")
    root = make_bundle(tmp_path / "b", 600)
    uri = f"s3://{s3_bucket}/kb.lance"
    keys = {
        "allow_http": "true",
        "aws_region": "us-east-1",
        "aws_access_key_id": "testing",
        "aws_secret_access_key": "testing",
    }
    direct = {**keys, "aws_endpoint": s3_endpoint}
    index_bundle(LocalDocumentStore(root, writable=False), uri, storage_options=direct)
    pod_options = {**keys, "aws_endpoint": s3_latency.endpoint, "node_cache": str(tmp_path / "n")}
    pod = OKFManager(
        LocalDocumentStore(root, writable=False),
        index=uri,
        index_options=pod_options,
        refresh_seconds=None,
    )
    import boto3

    client = boto3.client(
        "s3",
        endpoint_url=s3_endpoint,
        region_name="us-east-1",
        aws_access_key_id="testing",
        aws_secret_access_key="testing",
    )

    def written() -> set[str]:
        pages = client.get_paginator("list_objects_v2").paginate(
            Bucket=s3_bucket, Prefix="kb.lance/"
        )
        return {
            item["Key"][len("kb.lance/") :] for page in pages for item in page.get("Contents", ())
        }

    rng = random.Random(24)
    for round_, folder in enumerate(KILL_POINTS):
        for i in rng.sample(range(600), 120):
            (root / f"notes/n{i:05d}.md").write_text(note(i, f"kill {round_}"))
        runner = spawn(INDEXER, str(root), uri, json.dumps(direct), "")
        assert kill_when(runner, written, folder), "the indexer finished before the kill"
        pod.reload()  # whatever version is newest: complete on the node, or the old one kept
        assert pod.search("note about topic", 5)
        assert pod.schema()["concepts"] == 600
    stats = index_bundle(LocalDocumentStore(root, writable=False), uri, storage_options=direct)
    assert stats.listed == 600
    pod.reload()
    after: Any = pod.schema()["index"]["version"]
    assert after == stats.version
    assert pod.search("kill 2", 1)[0]["metadata"]["id"].startswith("notes/")
