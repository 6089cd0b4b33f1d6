"""A real HAProxy on 127.0.0.1, balancing round robin over server processes, with no affinity.

HAProxy is Debian's package, unpacked by ``tests/support/prepare.d/60-haproxy.sh`` under
``$AK_PREP_DIR/haproxy`` (or the ``haproxy`` on PATH; ``AK_HAPROXY`` may name another). In HTTP
mode it balances every request on its own, keep-alive or not, and names the replica that
answered in an ``X-Replica`` response header, so a test can see consecutive requests land on
different processes.
"""

from __future__ import annotations

import os
import shutil
import socket
import subprocess
import tempfile
import time
from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from pathlib import Path
from urllib.parse import urlsplit

from tests.support import missing

#: The response header naming the replica that answered.
REPLICA_HEADER = "x-replica"


def haproxy_binary() -> str:
    """The HAProxy to run, or the missing-prerequisite rule (a failure under CI)."""
    named = os.environ.get("AK_HAPROXY")
    prep = Path(os.environ.get("AK_PREP_DIR", "")) / "haproxy" / "haproxy"
    for candidate in (named, str(prep) if os.environ.get("AK_PREP_DIR") else None):
        if candidate and Path(candidate).is_file() and os.access(candidate, os.X_OK):
            return candidate
    found = shutil.which("haproxy")
    if found:
        return found
    missing("HAProxy", "run tests/support/prepare.d/60-haproxy.sh (Debian's haproxy package)")


def free_port() -> int:
    """A port nothing listens on now, on 127.0.0.1."""
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        port: int = sock.getsockname()[1]
        return port


def _config(port: int, upstreams: Sequence[str]) -> str:
    servers = "\n".join(
        f"  server r{index} {urlsplit(url).netloc}" for index, url in enumerate(upstreams, 1)
    )
    return f"""global
  maxconn 512
defaults
  mode http
  timeout connect 5s
  timeout client 120s
  timeout server 120s
frontend knowledge
  bind 127.0.0.1:{port}
  default_backend replicas
backend replicas
  balance roundrobin
  http-response set-header X-Replica %[srv_name]
{servers}
"""


def wait_for_port(port: int, proc: subprocess.Popen[str] | None = None) -> None:
    """Wait until something listens on 127.0.0.1:``port`` (at most 30 s).

    Args:
        port: The port.
        proc: The process that should listen; its end stops the wait.

    Raises:
        RuntimeError: Nothing listened in time, or ``proc`` ended first.
    """
    deadline = time.monotonic() + 30
    while True:
        try:
            socket.create_connection(("127.0.0.1", port), timeout=1).close()
            return
        except OSError:
            ended = proc is not None and proc.poll() is not None
            if ended or time.monotonic() > deadline:
                said = proc.stderr.read() if proc is not None and proc.stderr else ""
                raise RuntimeError(f"nothing listens on 127.0.0.1:{port}: {said}") from None
            time.sleep(0.05)


@contextmanager
def round_robin(upstreams: Sequence[str]) -> Iterator[str]:
    """Run HAProxy in front of ``upstreams`` (endpoint URLs); yields the proxy's endpoint URL.

    Args:
        upstreams: The replicas' URLs (``http://127.0.0.1:PORT/mcp``), one path for all.

    Yields:
        ``http://127.0.0.1:PORT/PATH`` of the proxy.
    """
    binary = haproxy_binary()
    port = free_port()
    with tempfile.TemporaryDirectory() as folder:
        config = Path(folder) / "haproxy.cfg"
        config.write_text(_config(port, upstreams))
        check = subprocess.run(
            [binary, "-c", "-f", str(config)], capture_output=True, text=True, timeout=30
        )
        assert check.returncode == 0, check.stdout + check.stderr
        proc = subprocess.Popen(
            [binary, "-db", "-f", str(config)],
            stdout=subprocess.DEVNULL,
            stderr=subprocess.PIPE,
            text=True,
        )
        try:
            wait_for_port(port, proc)
            yield f"http://127.0.0.1:{port}{urlsplit(upstreams[0]).path}"
        finally:
            proc.terminate()
            try:
                proc.wait(timeout=10)
            except subprocess.TimeoutExpired:
                proc.kill()
                proc.wait(timeout=10)
