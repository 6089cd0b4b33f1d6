"""Slow clients and a hanging identity provider cannot lock out callers with valid tokens.

Real: ``agentkernel-kb serve --http 127.0.0.1:0 --auth-tokens ...`` processes (uvicorn with
the package's header deadline and connection cap), one of them started with its open-file
limit lowered (soft and hard) so that a few hundred connections reach it; raw TCP sockets
that send part of a request's headers and dribble the rest; a JWKS endpoint on 127.0.0.1
that is a real socket server accepting connections and never answering, counting every
connection; junk JWT-shaped bearers sent with stdlib ``urllib``. Nothing is mocked.

No test asserts on time: a client-side guard only bounds how long a broken server is
waited for, and the JWKS test asserts on order (the valid caller is answered while the
fetch is still hung) and on counts.
"""

from __future__ import annotations

import base64
import json
import secrets
import socket
import sys
import threading
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager, suppress
from pathlib import Path
from typing import Any
from urllib.parse import urlsplit

import pytest

from tests.support import require_extra

require_extra("mcp", "mcp")

from tests.mcp import auth_support as a  # noqa: E402

pytestmark = pytest.mark.skipif(sys.platform == "win32", reason="POSIX resource limits")

TOKEN = "ak_" + "s" * 40
GUARD = 60.0  # how long a broken server is waited for before the test fails


def _serve(tmp_path: Path, *extra: str, preexec_fn: Callable[[], None] | None = None) -> Any:
    table = tmp_path / "tokens"
    table.write_text(a.token_line("alice", TOKEN) + "\n")
    return a.serving(
        a.cli_command(
            "serve",
            "--factory",
            "tests.mcp.auth_support:counted",
            "--http",
            "127.0.0.1:0",
            "--auth-tokens",
            str(table),
            "--audit",
            str(tmp_path / "audit.jsonl"),
            *extra,
        ),
        env={a.CALLS_ENV: str(tmp_path / "calls.txt")},
        preexec_fn=preexec_fn,
    )


def _open_files(soft: int, hard: int) -> Callable[[], None]:
    def lower() -> None:
        import resource

        resource.setrlimit(resource.RLIMIT_NOFILE, (soft, hard))

    return lower


def _address(url: str) -> tuple[str, int]:
    parts = urlsplit(url)
    return parts.hostname or "", parts.port or 0


PARTIAL = b"POST /mcp HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Type: application/json\r\n"


def _closed_by_peer(sock: socket.socket) -> bool:
    """Whether the other end closed ``sock`` (an EOF or a reset is waiting to be read)."""
    timeout = sock.gettimeout()
    sock.setblocking(False)  # a socket with a timeout would wait for data before peeking
    try:
        return sock.recv(1, socket.MSG_PEEK) == b""
    except BlockingIOError:
        return False
    except OSError:
        return True
    finally:
        sock.settimeout(timeout)


def test_a_connection_dribbling_its_headers_is_closed_at_the_deadline(tmp_path: Path) -> None:
    with _serve(tmp_path) as server:  # the default deadline: 10 s
        sock = socket.create_connection(_address(server.url), timeout=5)
        closed = False
        with sock:
            sock.sendall(PARTIAL)
            give_up = time.monotonic() + GUARD
            while not closed and time.monotonic() < give_up:
                try:
                    sock.sendall(b"X")  # one byte of a header name, never finished
                except OSError:
                    closed = True
                    break
                time.sleep(0.1)
                closed = _closed_by_peer(sock)
        status, _, body = a.post(server.url, a.INITIALIZE, {"Authorization": f"Bearer {TOKEN}"})
    assert closed, "the server kept a connection whose headers never ended"
    assert status == 200 and b'"serverInfo"' in body


def test_the_open_file_limit_is_raised_to_the_hard_limit(tmp_path: Path) -> None:
    import resource

    _, hard = resource.getrlimit(resource.RLIMIT_NOFILE)
    limits = Path("/proc/self/limits")
    if not limits.exists() or (hard != resource.RLIM_INFINITY and hard < 512):
        pytest.skip("needs /proc and a hard open-file limit of at least 512")
    with _serve(tmp_path, preexec_fn=_open_files(256, 512)) as server:
        text = Path(f"/proc/{server.proc.pid}/limits").read_text()
    line = next(row for row in text.splitlines() if row.startswith("Max open files"))
    assert line.split()[3:5] == ["512", "512"]


def test_a_flood_of_unfinished_headers_does_not_lock_out_a_valid_caller(tmp_path: Path) -> None:
    import resource

    soft, _ = resource.getrlimit(resource.RLIMIT_NOFILE)
    if soft != resource.RLIM_INFINITY and soft < 2048:
        pytest.skip("the test process itself needs about 700 descriptors")
    flood: list[socket.socket] = []
    # 512 descriptors in the server, soft and hard: 600 connections would exhaust them
    with _serve(tmp_path, preexec_fn=_open_files(512, 512)) as server:
        try:
            address = _address(server.url)
            for _ in range(600):
                sock = socket.socket()
                sock.settimeout(5)
                with suppress(OSError):
                    sock.connect(address)
                    sock.sendall(PARTIAL)
                flood.append(sock)
            for sock in flood:  # every one dribbles another byte and never finishes
                with suppress(OSError):
                    sock.sendall(b"X")
            answered = a.post(server.url, a.INITIALIZE, {"Authorization": f"Bearer {TOKEN}"})
            again = a.post(server.url, a.INITIALIZE, {"Authorization": f"Bearer {TOKEN}"})
        finally:
            for sock in flood:
                sock.close()
    assert answered[0] == 200 and b'"serverInfo"' in answered[2]
    assert again[0] == 200
    assert "Traceback" not in "".join(server.lines)


# -- an identity provider that hangs ----------------------------------------------------------


class HangingEndpoint:
    """A socket server on 127.0.0.1 that accepts connections and never answers."""

    def __init__(self) -> None:
        self._listener = socket.create_server(("127.0.0.1", 0))
        self._listener.settimeout(0.2)
        self.url = f"http://127.0.0.1:{self._listener.getsockname()[1]}/jwks"
        self.held: list[socket.socket] = []
        self._lock = threading.Lock()
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._accept, daemon=True)
        self._thread.start()

    def _accept(self) -> None:
        while not self._stop.is_set():
            try:
                conn, _ = self._listener.accept()
            except TimeoutError:
                continue
            except OSError:
                return
            with self._lock:
                self.held.append(conn)

    @property
    def accepted(self) -> int:
        with self._lock:
            return len(self.held)

    def still_hung(self) -> bool:
        """Whether every connection accepted is still open from the client's side."""
        with self._lock:
            return bool(self.held) and not any(_closed_by_peer(conn) for conn in self.held)

    def fail(self) -> None:
        """Close every connection held without an answer (the fetch fails)."""
        with self._lock:
            for conn in self.held:
                conn.close()

    def close(self) -> None:
        self._stop.set()
        self.fail()
        self._thread.join(timeout=5)
        self._listener.close()


@contextmanager
def hanging_endpoint() -> Iterator[HangingEndpoint]:
    endpoint = HangingEndpoint()
    try:
        yield endpoint
    finally:
        endpoint.close()


def _b64(data: bytes) -> str:
    return base64.urlsafe_b64encode(data).rstrip(b"=").decode("ascii")


def _junk_jwt() -> str:
    """A JWT-shaped bearer naming a key id nobody has (any outsider can send one)."""
    header = {"alg": "RS256", "typ": "JWT", "kid": secrets.token_hex(8)}
    payload = {"sub": "mallory", "iss": a.ISSUER, "exp": int(time.time()) + 600}
    return f"{_b64(json.dumps(header).encode())}.{_b64(json.dumps(payload).encode())}.{_b64(b'x')}"


def _junk_burst(url: str, count: int) -> tuple[list[threading.Thread], list[int]]:
    statuses: list[int] = []

    def one() -> None:
        status, _, _ = a.post(url, a.INITIALIZE, {"Authorization": f"Bearer {_junk_jwt()}"})
        statuses.append(status)

    threads = [threading.Thread(target=one, daemon=True) for _ in range(count)]
    for thread in threads:
        thread.start()
    return threads, statuses


def test_a_hanging_jwks_url_never_holds_a_static_token(tmp_path: Path) -> None:
    with (
        hanging_endpoint() as idp,
        _serve(tmp_path, "--auth-jwks", idp.url, "--auth-issuer", a.ISSUER) as server,
    ):
        first, first_statuses = _junk_burst(server.url, 16)
        give_up = time.monotonic() + GUARD
        while idp.accepted == 0 and time.monotonic() < give_up:
            time.sleep(0.05)
        assert idp.accepted >= 1, "no junk token ever reached the JWKS URL"
        status, _, body = a.post(server.url, a.INITIALIZE, {"Authorization": f"Bearer {TOKEN}"})
        hung_while_answered = idp.still_hung()
        idp.fail()  # the fetch fails now: the server backs off
        for thread in first:
            thread.join(timeout=GUARD)
        second, second_statuses = _junk_burst(server.url, 16)
        for thread in second:
            thread.join(timeout=GUARD)
        fetches = idp.accepted
    assert status == 200 and b'"serverInfo"' in body
    assert hung_while_answered, "the valid caller was answered only after the fetch gave up"
    assert first_statuses == [401] * 16 and second_statuses == [401] * 16
    assert fetches == 1  # one fetch for 32 junk tokens: single flight, then backoff
    reasons = {
        json.loads(line).get("reason")
        for line in (tmp_path / "audit.jsonl").read_text().splitlines()
    }
    assert "signing keys unavailable" in reasons


def test_a_failing_jwks_url_backs_off_and_the_keys_fetched_before_keep_serving() -> None:
    import http.server

    from agentkernel.mcp._jwks import RemoteKeys

    body = json.dumps(a.jwks(a.rsa_key(), kid="k1")).encode()
    state = {"up": True, "requests": 0}

    class JWKS(http.server.BaseHTTPRequestHandler):
        def do_GET(self) -> None:
            state["requests"] += 1
            if not state["up"]:
                self.send_error(503)
                return
            self.send_response(200)
            self.send_header("content-type", "application/json")
            self.send_header("content-length", str(len(body)))
            self.end_headers()
            self.wfile.write(body)

        def log_message(self, *args: object) -> None:
            pass

    now = [1000.0]  # the key source's clock, moved by hand: no test waits on time
    server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), JWKS)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    try:
        keys = RemoteKeys(f"http://127.0.0.1:{server.server_address[1]}/jwks", clock=lambda: now[0])
        seen: dict[str, Any] = {"first": keys.keys("k1")}
        seen["unknown kid, at once"] = keys.keys("zz")  # within 30 s of the fetch: no refetch
        state["up"] = False
        now[0] += 301  # the keys' lifespan is over: one refetch, which fails
        seen["refetch failed"] = keys.keys("k1")
        for after, step in ((1, 1), (10, 9), (29, 19)):  # within the first backoff: 30 s
            now[0] += step
            seen[f"backing off, {after} s"] = keys.keys("zz")
        during_backoff = state["requests"]
        now[0] += 2  # past 30 s: one more attempt, which fails: now 60 s
        keys.keys("zz")
        after_second = state["requests"]
        now[0] += 45
        keys.keys("zz")
        still_backing_off = state["requests"]
        state["up"] = True
        now[0] += 16  # past 60 s: fetched again
        seen["recovered"] = keys.keys("k1")
    finally:
        server.shutdown()
    ids = {name: [k.key_id for k in found or []] for name, found in seen.items()}
    assert all(found == ["k1"] for found in ids.values()), ids  # the old keys kept serving
    assert during_backoff == 2  # the first fetch and the failed refetch, nothing while backing off
    assert after_second == 3 and still_backing_off == 3
    assert state["requests"] == 4


def test_a_jwks_url_that_redirects_is_not_followed() -> None:
    import http.server

    from agentkernel.mcp._jwks import RemoteKeys

    asked: list[str] = []

    class Redirecting(http.server.BaseHTTPRequestHandler):
        def do_GET(self) -> None:  # every URL sends the caller elsewhere
            asked.append(self.path)
            self.send_response(302)
            self.send_header("location", "/elsewhere")
            self.end_headers()

        def log_message(self, *args: object) -> None:
            pass

    server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), Redirecting)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    try:
        keys = RemoteKeys(f"http://127.0.0.1:{server.server_address[1]}/jwks")
        assert keys.keys("k1") is None  # no keys: the redirect was refused
        assert asked == ["/jwks"]  # and the other URL never asked
    finally:
        server.shutdown()
