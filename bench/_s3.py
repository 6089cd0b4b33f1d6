"""A real S3 API on 127.0.0.1 for the bench: a seeded moto server and a request counter."""

from __future__ import annotations

import contextlib
import os
import socket
import subprocess
import sys
import time
import urllib.request
from collections import Counter
from collections.abc import Iterator
from pathlib import Path
from typing import Any

BUCKET = "okf-bench"
PREFIX = "debian"
REGION = "us-east-1"


def _free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        port: int = sock.getsockname()[1]
        return port


@contextlib.contextmanager
def moto_server(log_path: Path, bundle: Path) -> Iterator[tuple[str, int]]:
    """Start a moto S3 server on a free loopback port holding ``bundle`` under ``PREFIX/``.

    Yields:
        ``(endpoint, objects)``; the server stops when the block ends.
    """
    port = _free_port()
    endpoint = f"http://127.0.0.1:{port}"
    script = Path(__file__).with_name("_moto_seeded.py")
    with open(log_path, "wb") as log:
        process = subprocess.Popen(
            [sys.executable, str(script), str(port), str(bundle), BUCKET, PREFIX],
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            stderr=log,
            text=True,
        )
    try:
        assert process.stdout is not None
        line = process.stdout.readline().split()
        if not line or line[0] != "ready":
            raise RuntimeError(f"moto server did not start; see {log_path}")
        deadline = time.monotonic() + 30
        while True:
            try:
                with urllib.request.urlopen(endpoint + "/moto-api/", timeout=1):
                    break
            except OSError:
                if process.poll() is not None or time.monotonic() > deadline:
                    raise RuntimeError(f"moto server did not answer; see {log_path}") from None
                time.sleep(0.2)
        yield endpoint, int(line[1])
    finally:
        if process.stdin:
            process.stdin.close()
        try:
            process.wait(timeout=10)
        except subprocess.TimeoutExpired:
            process.kill()
            process.wait()


def client(endpoint: str) -> Any:
    import boto3
    from botocore.config import Config

    os.environ.setdefault("AWS_ACCESS_KEY_ID", "bench")
    os.environ.setdefault("AWS_SECRET_ACCESS_KEY", "bench")
    return boto3.client(
        "s3",
        endpoint_url=endpoint,
        region_name=REGION,
        config=Config(max_pool_connections=32, retries={"max_attempts": 2}),
    )


class RequestCounter:
    """Counts the S3 API calls a boto3 client makes, by operation name."""

    def __init__(self, s3: Any) -> None:
        self.counts: Counter[str] = Counter()
        s3.meta.events.register("before-call.s3", self._count)

    def _count(self, model: Any, **_kwargs: Any) -> None:
        self.counts[model.name] += 1

    def take(self) -> dict[str, int]:
        found = dict(self.counts)
        self.counts.clear()
        return found
