"""MCP server fixtures: a writable copy of a real OKF bundle, and HTTP server processes.

The servers are real ``python -m agentkernel.mcp`` processes bound to 127.0.0.1; nothing
here imports the ``mcp`` SDK, so this plugin loads in every environment.
"""

from __future__ import annotations

import queue
import re
import shutil
import subprocess
import sys
import threading
from collections.abc import Callable, Iterator
from pathlib import Path

import pytest

from tests.support import okf_bundle

REPO = Path(__file__).resolve().parents[2]
_READY = re.compile(r"Serving MCP .* at (http://\S+)")


@pytest.fixture
def ga4_bundle(tmp_path: Path) -> Path:
    """A writable copy of the GA4 OKF bundle in a temporary directory."""
    target = tmp_path / "ga4"
    shutil.copytree(okf_bundle("ga4"), target)
    return target


def server_command(*args: str) -> list[str]:
    """The command line that runs the MCP server module with ``args``."""
    return [sys.executable, "-m", "agentkernel.mcp", *args]


@pytest.fixture
def mcp_http_server() -> Iterator[Callable[..., str]]:
    """Start ``python -m agentkernel.mcp ... --http 127.0.0.1:0``; returns the endpoint URL.

    Every process started is terminated at teardown.
    """
    procs: list[subprocess.Popen[str]] = []

    def start(*args: str, timeout: float = 60.0) -> str:
        proc = subprocess.Popen(
            server_command(*args, "--http", "127.0.0.1:0"),
            cwd=REPO,
            stderr=subprocess.PIPE,
            stdout=subprocess.DEVNULL,
            text=True,
        )
        procs.append(proc)
        urls: queue.Queue[str | None] = queue.Queue()
        seen: list[str] = []

        def drain() -> None:
            # reads stderr to the end, so the server never blocks on a full pipe
            assert proc.stderr is not None
            for line in proc.stderr:
                seen.append(line)
                match = _READY.search(line)
                if match:
                    urls.put(match.group(1))
            urls.put(None)  # the process ended

        threading.Thread(target=drain, daemon=True).start()
        try:
            url = urls.get(timeout=timeout)
        except queue.Empty:
            url = None
        if url is None:
            raise RuntimeError(f"MCP server did not start: {''.join(seen)[-2000:]}")
        return url

    yield start
    for proc in procs:
        proc.terminate()
        try:
            proc.wait(timeout=10)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.wait(timeout=10)
