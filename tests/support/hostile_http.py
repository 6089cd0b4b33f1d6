"""Hostile HTTP servers and a recording forward proxy, on 127.0.0.1, over raw sockets.

The server answers each connection with a behaviour written byte by byte (:class:`Peer`
reads the request and writes what the behaviour says, as slowly as it says), so a test can
drip a status line, headers or a body, close or keep the connection, use chunked framing, or
accept and never answer; and it records what happened on the wire: the requests received, the
bytes each connection sent, and whether the client went away before the behaviour finished
(:attr:`Peer.cut_off`). A client that obeys a deadline shows it here without a clock: the
server saw the connection closed early and sent only part of what it meant to.

:func:`forward_proxy` is a minimal HTTP proxy (absolute-form requests forwarded to a host
name the test maps to a local port, ``CONNECT`` answered as the test says) that records the
request lines and headers it was sent.
"""

from __future__ import annotations

import contextlib
import datetime
import ipaddress
import socket
import ssl
import threading
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from pathlib import Path

WAIT = 60.0  # the most any helper here waits for the other side (a hung test fails, not hangs)


@dataclass
class Request:
    """One request as received: its request line, headers (names lower-cased) and body."""

    line: str
    headers: dict[str, str]
    body: bytes


class Peer:
    """The server's side of one connection."""

    def __init__(self, sock: socket.socket) -> None:
        self.sock = sock
        self.sent = 0
        """Bytes written to the client so far."""
        self.cut_off = False
        """The client closed the connection before the behaviour finished."""
        self.finished = threading.Event()
        self._buffer = b""
        sock.settimeout(WAIT)

    def request(self) -> Request | None:
        """Read one request (``Content-Length`` framing); ``None`` when the client closed."""
        while b"\r\n\r\n" not in self._buffer:
            chunk = self._recv()
            if not chunk:
                return None
            self._buffer += chunk
        head, self._buffer = self._buffer.split(b"\r\n\r\n", 1)
        line, *fields = head.decode("latin-1").split("\r\n")
        headers = {}
        for entry in fields:
            name, _, value = entry.partition(":")
            headers[name.strip().lower()] = value.strip()
        length = int(headers.get("content-length", "0"))
        while len(self._buffer) < length:
            chunk = self._recv()
            if not chunk:
                return None
            self._buffer += chunk
        body, self._buffer = self._buffer[:length], self._buffer[length:]
        return Request(line, headers, body)

    def send(self, data: bytes) -> bool:
        """Write bytes; ``False`` (and :attr:`cut_off`) when the client has gone."""
        try:
            self.sock.sendall(data)
        except OSError:
            self.cut_off = True
            return False
        self.sent += len(data)
        return True

    def drip(self, data: bytes, every: float = 0.05) -> bool:
        """Write one byte at a time, ``every`` seconds apart; ``False`` when the client went."""
        for index in range(len(data)):
            if not self.send(data[index : index + 1]):
                return False
            time.sleep(every)
        return True

    def wait_for_close(self) -> None:
        """Read until the client closes (what a server that never answers does)."""
        while True:
            chunk = self._recv()
            if not chunk:
                self.cut_off = True
                return

    def _recv(self) -> bytes:
        try:
            return self.sock.recv(65_536)
        except OSError:
            return b""


@dataclass
class HostileServer:
    """A running hostile server: its base URL and what it saw."""

    url: str
    port: int
    peers: list[Peer] = field(default_factory=list)
    requests: list[Request] = field(default_factory=list)

    def settled(self) -> list[Peer]:
        """Every connection, once each behaviour has finished (or given up on a gone client)."""
        for peer in list(self.peers):
            assert peer.finished.wait(WAIT), "a hostile behaviour did not finish"
        return self.peers


Behaviour = Callable[[Peer, HostileServer], None]


@contextmanager
def hostile_server(
    behaviour: Behaviour, tls: ssl.SSLContext | None = None
) -> Iterator[HostileServer]:
    """Serve ``behaviour`` on every connection to 127.0.0.1 until the block ends.

    Args:
        behaviour: Called with each connection's :class:`Peer` (in its own thread) and the
            server's state; it reads requests with :meth:`Peer.request` and writes the answer.
        tls: A server context (:func:`self_signed`) to speak HTTPS; the handshake runs in the
            connection's thread.

    Yields:
        The server (``url`` is its ``/v1`` base).
    """
    listener = socket.create_server(("127.0.0.1", 0))
    port = listener.getsockname()[1]
    scheme = "https" if tls else "http"
    state = HostileServer(url=f"{scheme}://127.0.0.1:{port}/v1", port=port)
    stopping = threading.Event()

    def run(peer: Peer) -> None:
        try:
            if tls is not None:
                try:
                    peer.sock = tls.wrap_socket(peer.sock, server_side=True)
                except OSError:
                    return
            behaviour(peer, state)
        finally:
            with contextlib.suppress(OSError):
                peer.sock.close()
            peer.finished.set()

    def accept() -> None:
        while not stopping.is_set():
            try:
                sock, _ = listener.accept()
            except OSError:
                return
            peer = Peer(sock)
            state.peers.append(peer)
            threading.Thread(target=run, args=(peer,), daemon=True).start()

    thread = threading.Thread(target=accept, daemon=True)
    thread.start()
    try:
        yield state
    finally:
        stopping.set()
        with contextlib.suppress(OSError):  # wake the accepting thread: close alone does not
            socket.create_connection(("127.0.0.1", port), timeout=WAIT).close()
        thread.join(WAIT)
        listener.close()


def answer(status: str, body: bytes, *headers: str) -> bytes:
    """A whole HTTP/1.1 answer with ``Content-Length``."""
    lines = [f"HTTP/1.1 {status}", *headers, f"Content-Length: {len(body)}"]
    return ("\r\n".join(lines) + "\r\n\r\n").encode() + body


@dataclass
class ProxyLog:
    """What the proxy was asked: request lines and their headers."""

    url: str
    requests: list[Request] = field(default_factory=list)


@contextmanager
def forward_proxy(
    hosts: dict[str, int], connect_status: str = "403 Forbidden"
) -> Iterator[ProxyLog]:
    """A recording HTTP proxy on 127.0.0.1.

    Args:
        hosts: Host names the proxy forwards to, each to a port on 127.0.0.1 (anything else
            gets ``502``).
        connect_status: The answer to every ``CONNECT`` (a tunnel is never opened).

    Yields:
        The log; ``url`` is the proxy's ``http://127.0.0.1:PORT``.
    """

    def handle(peer: Peer, _: HostileServer) -> None:
        while (request := peer.request()) is not None:
            log.requests.append(request)
            method, target, _version = request.line.split(" ", 2)
            if method == "CONNECT":
                peer.send(answer(connect_status, b""))
                return
            rest = target.removeprefix("http://")
            authority, _, path = rest.partition("/")
            host = authority.rsplit(":", 1)[0]
            if host not in hosts:
                peer.send(answer("502 Bad Gateway", b"unknown host"))
                return
            forwarded = {k: v for k, v in request.headers.items() if not k.startswith("proxy-")}
            forwarded["connection"] = "close"
            head = f"{method} /{path} HTTP/1.1\r\n" + "".join(
                f"{name}: {value}\r\n" for name, value in forwarded.items()
            )
            with socket.create_connection(("127.0.0.1", hosts[host]), timeout=WAIT) as upstream:
                upstream.sendall(head.encode() + b"\r\n" + request.body)
                while chunk := upstream.recv(65_536):
                    if not peer.send(chunk):
                        return
            return

    with hostile_server(handle) as server:
        log = ProxyLog(url=f"http://127.0.0.1:{server.port}")
        yield log


def self_signed(folder: Path) -> tuple[Path, ssl.SSLContext]:
    """A throw-away certificate for 127.0.0.1: its PEM file (for ``SSL_CERT_FILE``) and a
    server context presenting it."""
    from cryptography import x509
    from cryptography.hazmat.primitives import hashes, serialization
    from cryptography.hazmat.primitives.asymmetric import ec
    from cryptography.x509.oid import NameOID

    key = ec.generate_private_key(ec.SECP256R1())
    name = x509.Name([x509.NameAttribute(NameOID.COMMON_NAME, "127.0.0.1")])
    now = datetime.datetime.now(datetime.UTC)
    certificate = (
        x509.CertificateBuilder()
        .subject_name(name)
        .issuer_name(name)
        .public_key(key.public_key())
        .serial_number(x509.random_serial_number())
        .not_valid_before(now - datetime.timedelta(minutes=5))
        .not_valid_after(now + datetime.timedelta(days=1))
        .add_extension(x509.BasicConstraints(ca=True, path_length=None), critical=True)
        .add_extension(
            x509.SubjectAlternativeName([x509.IPAddress(ipaddress.ip_address("127.0.0.1"))]),
            critical=False,
        )
        .sign(key, hashes.SHA256())
    )
    cert = folder / "cert.pem"
    key_file = folder / "key.pem"
    cert.write_bytes(certificate.public_bytes(serialization.Encoding.PEM))
    key_file.write_bytes(
        key.private_bytes(
            serialization.Encoding.PEM,
            serialization.PrivateFormat.PKCS8,
            serialization.NoEncryption(),
        )
    )
    context = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
    context.load_cert_chain(cert, key_file)
    return cert, context
