"""The endpoint embedder against hostile HTTP servers: one total deadline, bounded retries, the
environment's proxy.

Real: raw-socket HTTP servers on 127.0.0.1 (``tests/support/hostile_http.py``) that drip a
status line, headers or a body byte by byte under every framing (``Content-Length`` kept
alive, ``Connection: close``, HTTP/1.0 read to the end, chunked), accept and never answer, or
answer ``429`` / ``5xx`` with and without ``Retry-After``; and a recording HTTP proxy on
127.0.0.1 named by ``HTTP_PROXY`` / ``HTTPS_PROXY``. The embedder is the real
``OpenAIEmbedder`` over real sockets; nothing is mocked. No assertion reads a clock: a call
that kept its deadline shows on the server's side, which saw the connection closed before it
had sent what it meant to.
"""

from __future__ import annotations

import base64
import email.utils
import json
import re
from pathlib import Path

import pytest

from agentkernel.retrieval import EmbedderError
from agentkernel.retrieval import _openai_embeddings as openai_embeddings
from agentkernel.retrieval._openai_embeddings import OpenAIEmbedder
from tests.support.hostile_http import (
    Behaviour,
    HostileServer,
    Peer,
    answer,
    forward_proxy,
    hostile_server,
    self_signed,
)

KEY = "sk-secret-0123456789abcdef"
DRIP = 400  # bytes dripped 50 ms apart: 20 s, far past the 1 s deadline of these calls
PROXY_VARIABLES = ("http_proxy", "https_proxy", "all_proxy", "no_proxy")


@pytest.fixture(autouse=True)
def _environment(monkeypatch: pytest.MonkeyPatch) -> None:
    """No key and no proxy from the machine running the tests."""
    for name in ("AGENTKERNEL_EMBEDDINGS_API_KEY", "AGENTKERNEL_EMBEDDINGS_API_KEY_ENV"):
        monkeypatch.delenv(name, raising=False)
    for name in PROXY_VARIABLES:
        monkeypatch.delenv(name, raising=False)
        monkeypatch.delenv(name.upper(), raising=False)


def vectors(count: int, dimension: int = 8) -> bytes:
    row = [1.0] + [0.0] * (dimension - 1)
    return json.dumps({"data": [{"index": i, "embedding": row} for i in range(count)]}).encode()


def embeddings(peer: Peer, server: HostileServer) -> None:
    """A well-behaved endpoint, kept alive."""
    while (request := peer.request()) is not None:
        server.requests.append(request)
        count = len(json.loads(request.body)["input"])
        if not peer.send(answer("200 OK", vectors(count), "Content-Type: application/json")):
            return


# --- one total deadline, whatever the server does -------------------------------------------

BODY = b'{"data": [' + b" " * DRIP
JSON = "Content-Type: application/json\r\n"
# (what is sent at once, what is dripped after it); None: accept, read, never answer
HOSTILE = {
    "keep-alive, dripped body": (
        f"HTTP/1.1 200 OK\r\n{JSON}Content-Length: {len(BODY) + 2}\r\n\r\n".encode(),
        BODY,
    ),
    "Connection: close, dripped body": (
        f"HTTP/1.1 200 OK\r\n{JSON}Connection: close\r\n\r\n".encode(),
        BODY,
    ),
    "HTTP/1.0, body to the end, dripped": (f"HTTP/1.0 200 OK\r\n{JSON}\r\n".encode(), BODY),
    "chunked, dripped chunks": (
        f"HTTP/1.1 200 OK\r\n{JSON}Transfer-Encoding: chunked\r\n\r\n".encode(),
        b"1\r\n \r\n" * (DRIP // 6),
    ),
    "dripped status line and headers": (b"", b"HTTP/1.1 200 OK\r\nX-Padding: " + b"a" * DRIP),
    "Connection: close, dripped headers": (
        b"HTTP/1.1 200 OK\r\nConnection: close\r\n",
        b"X-Padding: " + b"a" * DRIP,
    ),
    "accepts, never answers": None,
}


@pytest.mark.parametrize("behaviour", list(HOSTILE))
def test_a_call_ends_at_its_deadline_whatever_the_server_does(behaviour: str) -> None:
    plan = HOSTILE[behaviour]

    def hostile(peer: Peer, server: HostileServer) -> None:
        request = peer.request()
        if request is None:
            return
        server.requests.append(request)
        if plan is None:
            peer.wait_for_close()
            return
        at_once, dripped = plan
        if peer.send(at_once):
            peer.drip(dripped)

    with hostile_server(hostile) as server:
        embedder = OpenAIEmbedder(server.url, "m", api_key=KEY, dimension=8, timeout_seconds=1)
        with pytest.raises(EmbedderError, match="did not answer within 1 s") as caught:
            embedder.embed(["a text"])
        (peer,) = server.settled()  # one connection: a timed-out request is not retried
    assert KEY not in str(caught.value)
    assert peer.cut_off, "the server finished: the client waited for the whole answer"
    if plan is not None:
        assert peer.sent < len(plan[0]) + len(plan[1])


@pytest.mark.parametrize("behaviour", ["Connection: close, dripped body", "accepts, never answers"])
def test_the_deadline_holds_over_tls(
    behaviour: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    cert, tls = self_signed(tmp_path)
    monkeypatch.setenv("SSL_CERT_FILE", str(cert))  # the client trusts this server only
    plan = HOSTILE[behaviour]

    def hostile(peer: Peer, server: HostileServer) -> None:
        request = peer.request()
        if request is None:
            return
        server.requests.append(request)
        if plan is None:
            peer.wait_for_close()
        elif peer.send(plan[0]):
            peer.drip(plan[1])

    with hostile_server(hostile, tls=tls) as server:
        embedder = OpenAIEmbedder(server.url, "m", api_key=KEY, dimension=8, timeout_seconds=1)
        with pytest.raises(EmbedderError, match="did not answer within 1 s"):
            embedder.embed(["a text"])
        (peer,) = server.settled()
    assert server.requests[0].headers["authorization"] == f"Bearer {KEY}"  # sent inside TLS
    assert peer.cut_off


def test_a_server_that_never_finishes_the_tls_handshake_is_cut_off(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    cert, _ = self_signed(tmp_path)
    monkeypatch.setenv("SSL_CERT_FILE", str(cert))

    def silent(peer: Peer, _: HostileServer) -> None:
        peer.wait_for_close()  # reads the ClientHello, never answers it

    with hostile_server(silent) as server:
        url = server.url.replace("http://", "https://")
        embedder = OpenAIEmbedder(url, "m", api_key=KEY, dimension=8, timeout_seconds=1)
        with pytest.raises(EmbedderError, match="did not answer within 1 s"):
            embedder.embed(["a text"])
        (peer,) = server.settled()
    assert peer.cut_off


def test_connections_are_kept_alive_between_requests() -> None:
    with hostile_server(embeddings) as server:
        embedder = OpenAIEmbedder(server.url, "m", api_key=KEY, batch_size=2)  # probes too
        assert len(embedder.embed(["a", "b", "c", "d", "e"])) == 5
        assert [len(json.loads(r.body)["input"]) for r in server.requests] == [1, 2, 2, 1]
        assert len(server.peers) == 1


# --- 429 and 5xx: retried with back-off, inside the deadline --------------------------------


def scripted(*answers: bytes) -> tuple[list[bytes], Behaviour]:
    """A behaviour answering the given answers in turn, then vectors; one request per
    connection (each answer closes it)."""
    queue = list(answers)

    def behaviour(peer: Peer, server: HostileServer) -> None:
        request = peer.request()
        if request is None:
            return
        server.requests.append(request)
        count = len(json.loads(request.body)["input"])
        peer.send(queue.pop(0) if queue else answer("200 OK", vectors(count), "Connection: close"))

    return queue, behaviour


def error(status: str, message: str, *headers: str) -> bytes:
    body = json.dumps({"error": {"message": message}}).encode()
    return answer(status, body, "Connection: close", *headers)


def test_429_and_5xx_are_retried_and_retry_after_is_honoured() -> None:
    now = email.utils.formatdate(usegmt=True)  # an HTTP date: "retry now"
    _, behaviour = scripted(
        error("429 Too Many Requests", "slow down", "Retry-After: 0"),
        error("503 Service Unavailable", "overloaded", f"Retry-After: {now}"),
    )
    with hostile_server(behaviour) as server:
        embedder = OpenAIEmbedder(server.url, "m", dimension=8, timeout_seconds=30)
        assert len(embedder.embed(["a", "b"])) == 2
    assert len(server.requests) == 3
    assert len({r.body for r in server.requests}) == 1  # the same batch each time


def test_a_server_error_without_retry_after_is_retried_after_a_back_off() -> None:
    _, behaviour = scripted(error("500 Internal Server Error", "oops"))
    with hostile_server(behaviour) as server:
        embedder = OpenAIEmbedder(server.url, "m", dimension=8, timeout_seconds=30)
        assert len(embedder.embed(["a"])) == 1
    assert len(server.requests) == 2


def test_retries_end_at_their_limit_with_the_servers_message() -> None:
    attempts = openai_embeddings.RETRIES + 1
    failures = [error("502 Bad Gateway", f"upstream gone {KEY}", "Retry-After: 0")] * 10
    queue, behaviour = scripted(*failures)
    with hostile_server(behaviour) as server:
        embedder = OpenAIEmbedder(server.url, "m", api_key=KEY, dimension=8)
        with pytest.raises(EmbedderError, match=f"HTTP 502 {attempts} times: upstream gone"):
            embedder.embed(["a"])
    assert len(server.requests) == attempts
    assert len(queue) == 10 - attempts


@pytest.mark.parametrize(
    ("retry_after", "timeout", "expected"),
    [
        (
            "3600",
            30,
            "asked to retry after 3600 s (more than 20)",
        ),  # beyond MAX_RETRY_AFTER: not waited for
        ("5", 2, "a retry in 5 s would pass the 2 s deadline"),
    ],
)
def test_a_retry_that_would_outlive_the_deadline_is_not_waited_for(
    retry_after: str, timeout: float, expected: str
) -> None:
    _, behaviour = scripted(error("429 Too Many Requests", "quota", f"Retry-After: {retry_after}"))
    with hostile_server(behaviour) as server:
        embedder = OpenAIEmbedder(server.url, "m", dimension=8, timeout_seconds=timeout)
        with pytest.raises(EmbedderError, match=re.escape(f"HTTP 429 and {expected}: quota")):
            embedder.embed(["a"])
    assert len(server.requests) == 1


# --- the environment's proxy ----------------------------------------------------------------


def test_plain_http_goes_through_the_environment_proxy(monkeypatch: pytest.MonkeyPatch) -> None:
    with hostile_server(embeddings) as server:
        with forward_proxy({"embeddings.test": server.port}) as proxy:
            monkeypatch.setenv("HTTP_PROXY", proxy.url.replace("://", "://me:s3cret@"))
            embedder = OpenAIEmbedder(f"http://embeddings.test:{server.port}/v1", "m", dimension=8)
            assert len(embedder.embed(["a", "b"])) == 2
        (request,) = proxy.requests
        assert request.line == (f"POST http://embeddings.test:{server.port}/v1/embeddings HTTP/1.1")
        assert request.headers["proxy-authorization"] == (
            "Basic " + base64.b64encode(b"me:s3cret").decode()
        )
        assert len(server.requests) == 1  # it reached the endpoint through the proxy


def test_https_goes_through_the_proxy_as_a_tunnel_the_key_inside_it(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    with forward_proxy({}, connect_status="403 Forbidden") as proxy:
        monkeypatch.setenv("HTTPS_PROXY", proxy.url)
        embedder = OpenAIEmbedder("https://embeddings.test/v1", "m", api_key=KEY, dimension=8)
        with pytest.raises(
            EmbedderError, match=r"the proxy http://127\.0\.0\.1:\d+ refused"
        ) as caught:
            embedder.embed(["a"])
    (request,) = proxy.requests
    assert request.line == "CONNECT embeddings.test:443 HTTP/1.1"
    assert KEY not in json.dumps(request.headers) and KEY not in str(caught.value)


def test_no_proxy_and_loopback_endpoints_skip_the_proxy(monkeypatch: pytest.MonkeyPatch) -> None:
    with hostile_server(embeddings) as server, forward_proxy({"embeddings.test": 1}) as proxy:
        monkeypatch.setenv("HTTP_PROXY", proxy.url)
        for host in ("127.0.0.1", "localhost"):  # the proxy would reach its own loopback
            embedder = OpenAIEmbedder(f"http://{host}:{server.port}/v1", "m", api_key=KEY)
            assert len(embedder.embed(["a"])) == 1
        monkeypatch.setenv("NO_PROXY", "embeddings.test")
        direct = OpenAIEmbedder("http://embeddings.test:9/v1", "m", dimension=8, timeout_seconds=2)
        with pytest.raises(EmbedderError, match=r"embeddings\.test"):
            direct.embed(["a"])  # looked up and connected directly: no such host here
        assert proxy.requests == []
    assert len(server.requests) == 4  # two probes, two batches, none through the proxy


def test_a_socks_proxy_is_refused_clearly(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("ALL_PROXY", "socks5://user:pw@127.0.0.1:1080")
    with pytest.raises(EmbedderError, match="SOCKS proxies are not supported") as caught:
        OpenAIEmbedder("https://embeddings.test/v1", "m", dimension=8)
    assert "pw" not in str(caught.value)
