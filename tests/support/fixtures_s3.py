"""S3 fixtures: a real S3 API server (moto's, ``moto[server]``) on 127.0.0.1.

The server runs in its own process and speaks the real S3 HTTP API; boto3 talks to it over
loopback exactly as it talks to AWS, so nothing is patched. It needs no network (tests run
under ``unshare -n``), and the fixture points boto3 at dummy credentials so no real AWS
account can ever be reached.

Fixtures (loaded for every test by ``tests/conftest.py``):

``s3_endpoint`` (session)
    The server's URL (``http://127.0.0.1:<port>``). While it is active the test process has
    dummy credentials, ``AWS_DEFAULT_REGION=us-east-1``, no AWS config files, no instance
    metadata lookups and no proxy for loopback, so ``S3DocumentStore(bucket,
    endpoint_url=s3_endpoint)`` and ``DocumentStore.from_uri("s3://...",
    endpoint_url=s3_endpoint)`` work as they are.
``s3_client`` (session)
    A boto3 S3 client on that server, for arranging objects behind a store's back. It is
    shared, so count requests on a store's own client rather than on this one.
``s3_bucket``
    The name of a fresh, empty bucket, emptied and deleted after the test.

Helper:

``count_s3_requests(client)``
    Returns a ``Counter`` of HTTP requests by operation name (``"GetObject"``,
    ``"ListObjectsV2"``, ...) sent by that client from now on, retries included. Use it on
    ``store.client`` to assert, say, that an unchanged refresh sent no ``GetObject``.
"""

from __future__ import annotations

import os
import socket
import subprocess
import sys
import time
import urllib.error
import urllib.request
import uuid
from collections import Counter
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from tests.support import require_extra

_STARTUP_SECONDS = 60.0

_AWS_ENV = {
    "AWS_ACCESS_KEY_ID": "testing",
    "AWS_SECRET_ACCESS_KEY": "testing",
    "AWS_SESSION_TOKEN": "testing",
    "AWS_DEFAULT_REGION": "us-east-1",
    "AWS_EC2_METADATA_DISABLED": "true",
    "NO_PROXY": "127.0.0.1,localhost",
    "no_proxy": "127.0.0.1,localhost",
}
_AWS_UNSET = ("AWS_PROFILE", "AWS_DEFAULT_PROFILE", "AWS_ENDPOINT_URL", "AWS_ENDPOINT_URL_S3")


def count_s3_requests(client: Any) -> Counter[str]:
    """Count the HTTP requests ``client`` sends from now on, by operation name.

    Args:
        client: A boto3 S3 client (``store.client`` for an ``S3DocumentStore``).

    Returns:
        A live ``Counter``: read it after the code under test ran.
    """
    counts: Counter[str] = Counter()

    def _count(event_name: str, **_: Any) -> None:
        counts[event_name.rsplit(".", 1)[-1]] += 1

    client.meta.events.register("before-send.s3", _count)
    return counts


def _free_port() -> int:
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as probe:
        probe.bind(("127.0.0.1", 0))
        return int(probe.getsockname()[1])


def _ready(url: str) -> bool:
    opener = urllib.request.build_opener(urllib.request.ProxyHandler({}))
    try:
        with opener.open(f"{url}/moto-api/", timeout=2):
            return True
    except urllib.error.HTTPError:
        return True  # it answered
    except OSError:
        return False


def _start_server(log_path: Path, env: dict[str, str]) -> tuple[subprocess.Popen[bytes], str]:
    """Start ``python -m moto.server`` on a free loopback port; retry if the port was taken."""
    last_error = ""
    for _ in range(3):
        port = _free_port()
        url = f"http://127.0.0.1:{port}"
        with log_path.open("ab") as log:
            process = subprocess.Popen(
                [sys.executable, "-m", "moto.server", "-H", "127.0.0.1", "-p", str(port)],
                stdout=log,
                stderr=subprocess.STDOUT,
                env=env,
            )
        deadline = time.monotonic() + _STARTUP_SECONDS
        while time.monotonic() < deadline and process.poll() is None:
            if _ready(url):
                return process, url
            time.sleep(0.1)
        _stop(process)
        last_error = log_path.read_text(errors="replace")[-2000:]
    raise RuntimeError(f"moto server did not start; its log ends with:\n{last_error}")


def _stop(process: subprocess.Popen[bytes]) -> None:
    if process.poll() is None:
        process.terminate()
        try:
            process.wait(timeout=10)
        except subprocess.TimeoutExpired:
            process.kill()
            process.wait()


@pytest.fixture(scope="session")
def s3_endpoint(tmp_path_factory: pytest.TempPathFactory) -> Iterator[str]:
    """Start a moto S3 server for the session and return its URL (see the module docstring)."""
    home = tmp_path_factory.mktemp("s3")
    isolated = {
        **_AWS_ENV,
        "AWS_CONFIG_FILE": str(home / "no-aws-config"),
        "AWS_SHARED_CREDENTIALS_FILE": str(home / "no-aws-credentials"),
        "AGENTKERNEL_NODE_CACHE": str(home / "node-cache"),  # never the user's ~/.cache
    }
    with pytest.MonkeyPatch.context() as patch:
        for name in _AWS_UNSET:
            patch.delenv(name, raising=False)
        for name, value in isolated.items():
            patch.setenv(name, value)
        process, url = _start_server(home / "moto.log", dict(os.environ))
        try:
            yield url
        finally:
            _stop(process)


@pytest.fixture(scope="session")
def s3_client(s3_endpoint: str) -> Iterator[Any]:
    """A boto3 S3 client on the test server (shared by the session: register no handlers)."""
    boto3 = require_extra("boto3", "aws")
    client = boto3.client("s3", endpoint_url=s3_endpoint)
    yield client
    client.close()


@pytest.fixture
def s3_bucket(s3_client: Any) -> Iterator[str]:
    """A fresh, empty bucket on the test server; emptied and deleted afterwards."""
    name = f"ak-test-{uuid.uuid4().hex[:16]}"
    s3_client.create_bucket(Bucket=name)
    yield name
    # One DELETE per key: a batch delete is XML, which cannot carry every key a test may use.
    paginator = s3_client.get_paginator("list_objects_v2")
    for page in paginator.paginate(Bucket=name):
        for item in page.get("Contents", ()):
            s3_client.delete_object(Bucket=name, Key=item["Key"])
    s3_client.delete_bucket(Bucket=name)
