"""HTTP/1.1 requests under one total deadline, on httpcore (the engine of httpx).

httpcore's and httpx's own timeouts bound each operation: a server that sends one byte of its
headers or body every second never trips a five-second read timeout, and a call meant to take
at most five seconds runs for minutes. Here every socket operation of a request takes its
timeout from one deadline, the time left until it: resolving the host name (in a helper
thread that is abandoned, not waited for, when the deadline passes), connecting, the TLS
handshake, a proxy's ``CONNECT``, writing the request and every read of the status line,
headers and body. An operation that starts after the deadline fails at once; one that is
under way when it passes stops then. So a request ends by its deadline whatever the server
does (keep-alive or ``Connection: close``, ``Content-Length``, chunked or read to the end,
dripping headers or body, accepting and never answering), to within one system call.

The deadline is set per call with :func:`within` (a context variable, so a pool of kept-alive
connections is shared by threads each under its own deadline); :func:`pool` builds the
connection pool whose sockets obey it, through the proxy the environment names for the URL
(:func:`environment_proxy`). httpcore follows no redirect and reads no environment itself.
"""

from __future__ import annotations

import ipaddress
import select
import socket
import ssl
import threading
import time
import urllib.parse
import urllib.request
from collections.abc import Iterable, Iterator
from contextlib import contextmanager
from contextvars import ContextVar
from typing import Any

import httpcore

from agentkernel._loopback import is_loopback

_deadline: ContextVar[float | None] = ContextVar("agentkernel_http_deadline", default=None)


@contextmanager
def within(deadline: float) -> Iterator[None]:
    """Run the block's requests under a deadline on :func:`time.monotonic`'s clock.

    Args:
        deadline: The moment every socket operation of the block must have ended by.

    Yields:
        Nothing; requests made through :func:`pool`'s pools inside the block obey it.
    """
    token = _deadline.set(deadline)
    try:
        yield
    finally:
        _deadline.reset(token)


def _left(timeout: float | None, expired: type[Exception]) -> float | None:
    """The time an operation may block: its own timeout cut to what the deadline leaves."""
    deadline = _deadline.get()
    if deadline is None:
        return timeout
    remaining = deadline - time.monotonic()
    if remaining <= 0:
        raise expired("the request's total deadline passed")
    return remaining if timeout is None else min(timeout, remaining)


@contextmanager
def _mapped(timed_out: type[Exception], failed: type[Exception]) -> Iterator[None]:
    try:
        yield
    except TimeoutError as exc:  # socket.timeout
        raise timed_out("the request's total deadline passed") from exc
    except OSError as exc:
        raise failed(f"{type(exc).__name__}: {exc}") from exc


class _Stream(httpcore.NetworkStream):
    """A socket whose every read and write blocks at most until the deadline."""

    def __init__(self, sock: socket.socket) -> None:
        self._sock = sock

    def read(self, max_bytes: int, timeout: float | None = None) -> bytes:
        with _mapped(httpcore.ReadTimeout, httpcore.ReadError):
            self._sock.settimeout(_left(timeout, httpcore.ReadTimeout))
            return self._sock.recv(max_bytes)

    def write(self, buffer: bytes, timeout: float | None = None) -> None:
        with _mapped(httpcore.WriteTimeout, httpcore.WriteError):
            while buffer:  # each send waits at most for what is left, not a fresh timeout
                self._sock.settimeout(_left(timeout, httpcore.WriteTimeout))
                buffer = buffer[self._sock.send(buffer) :]

    def close(self) -> None:
        self._sock.close()

    def start_tls(
        self,
        ssl_context: ssl.SSLContext,
        server_hostname: str | None = None,
        timeout: float | None = None,
    ) -> httpcore.NetworkStream:
        if isinstance(self._sock, ssl.SSLSocket):
            self.close()
            raise httpcore.ConnectError(
                "TLS inside TLS (an https:// proxy for an https:// endpoint) is not supported; "
                "name the proxy with http://"
            )
        try:
            with _mapped(httpcore.ConnectTimeout, httpcore.ConnectError):
                # the handshake as a whole is bounded by the socket's timeout (CPython's ssl)
                self._sock.settimeout(_left(timeout, httpcore.ConnectTimeout))
                tls = ssl_context.wrap_socket(self._sock, server_hostname=server_hostname)
        except BaseException:
            self.close()
            raise
        return _Stream(tls)

    def get_extra_info(self, info: str) -> Any:
        sock = self._sock
        if info == "ssl_object":
            return sock if isinstance(sock, ssl.SSLSocket) else None
        if info == "socket":
            return sock
        if info == "client_addr":
            return sock.getsockname()
        if info == "server_addr":
            return sock.getpeername()
        if info == "is_readable":  # an idle kept-alive connection the server closed
            return sock.fileno() < 0 or bool(select.select([sock], [], [], 0)[0])
        return None


class _Backend(httpcore.NetworkBackend):
    """Connections whose name lookup, connect and every later operation obey the deadline."""

    def connect_tcp(
        self,
        host: str,
        port: int,
        timeout: float | None = None,
        local_address: str | None = None,
        socket_options: Iterable[Any] | None = None,
    ) -> httpcore.NetworkStream:
        failure: OSError | None = None
        for family, kind, proto, _, address in _resolve(host, port, timeout):
            sock = socket.socket(family, kind, proto)
            try:
                with _mapped(httpcore.ConnectTimeout, httpcore.ConnectError):
                    sock.settimeout(_left(timeout, httpcore.ConnectTimeout))
                    if local_address is not None:
                        sock.bind((local_address, 0))
                    sock.connect(address)
                    sock.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
                    for option in socket_options or ():
                        sock.setsockopt(*option)
            except httpcore.ConnectTimeout:
                sock.close()
                raise
            except httpcore.ConnectError as exc:
                sock.close()
                cause = exc.__cause__
                failure = cause if isinstance(cause, OSError) else OSError(str(exc))
                continue
            return _Stream(sock)
        raise httpcore.ConnectError(f"{type(failure).__name__}: {failure}") from failure

    def connect_unix_socket(
        self,
        path: str,
        timeout: float | None = None,
        socket_options: Iterable[Any] | None = None,
    ) -> httpcore.NetworkStream:
        raise httpcore.ConnectError("Unix sockets are not used here")

    def sleep(self, seconds: float) -> None:
        time.sleep(seconds)


def _resolve(host: str, port: int, timeout: float | None) -> list[Any]:
    """``getaddrinfo`` for a TCP connection, given up on at the deadline.

    The system resolver cannot be interrupted: a lookup that outlives the deadline is left to
    finish in its daemon thread, and its answer is dropped.
    """
    try:
        ipaddress.ip_address(host)
    except ValueError:
        pass
    else:  # a literal address: no lookup, no thread
        return socket.getaddrinfo(host, port, type=socket.SOCK_STREAM, flags=socket.AI_NUMERICHOST)
    answer: list[Any] = []
    error: list[OSError] = []

    def look_up() -> None:
        try:
            answer.extend(socket.getaddrinfo(host, port, type=socket.SOCK_STREAM))
        except OSError as exc:
            error.append(exc)

    worker = threading.Thread(target=look_up, name=f"resolve {host}", daemon=True)
    worker.start()
    worker.join(_left(timeout, httpcore.ConnectTimeout))
    if worker.is_alive():
        raise httpcore.ConnectTimeout(f"looking up {host} outlived the request's total deadline")
    if error:
        raise httpcore.ConnectError(f"{type(error[0]).__name__}: {error[0]}") from error[0]
    return answer


def environment_proxy(scheme: str, host: str) -> str | None:
    """The proxy the environment names for a URL, as curl and httpx read it.

    ``HTTPS_PROXY`` / ``HTTP_PROXY`` (or ``ALL_PROXY``; lower case too) name it and
    ``NO_PROXY`` exempts hosts. A loopback host never goes through a proxy: the proxy would
    reach its own loopback, not this machine's, and plain ``http://`` to this machine would
    travel beyond it.

    Args:
        scheme: ``http`` or ``https``.
        host: The URL's host.

    Returns:
        The proxy's URL (``http://`` added when the variable names no scheme), or ``None``.
    """
    if is_loopback(host):
        return None
    proxies = urllib.request.getproxies()
    proxy = proxies.get(scheme) or proxies.get("all")
    if not proxy or urllib.request.proxy_bypass(host):
        return None
    return proxy if "://" in proxy else f"http://{proxy}"


def shown(url: str) -> str:
    """A URL as messages may show it: scheme, host, port and path; no user info, no query.

    Args:
        url: The URL.

    Returns:
        The URL without credentials or query, or a placeholder when it cannot be parsed.
    """
    try:
        parsed = urllib.parse.urlsplit(url)
        if not parsed.scheme:
            return url[:40]
        return f"{parsed.scheme}://{netloc(parsed)}{parsed.path}"
    except ValueError:
        return "<unparsable URL>"


def netloc(parsed: urllib.parse.SplitResult) -> str:
    """``host[:port]`` of a parsed URL, IPv6 in brackets, without user info.

    Args:
        parsed: The URL, split.

    Returns:
        The network location.
    """
    host = parsed.hostname or ""
    if ":" in host:
        host = f"[{host}]"
    return f"{host}:{parsed.port}" if parsed.port else host


def pool(proxy_url: str | None, *, max_connections: int = 8) -> httpcore.ConnectionPool:
    """A pool of kept-alive connections whose every socket operation obeys :func:`within`.

    Args:
        proxy_url: An ``http://`` or ``https://`` proxy (user info becomes its
            ``Proxy-Authorization``), or ``None`` to connect directly.
        max_connections: Connections open at once.

    Returns:
        The pool (it verifies certificates with the system's trust store).

    Raises:
        ValueError: The proxy is not an http(s) URL.
    """
    proxy = None
    if proxy_url is not None:
        parsed = urllib.parse.urlsplit(proxy_url)
        if parsed.scheme not in ("http", "https") or not parsed.hostname:
            raise ValueError(
                f"the proxy {shown(proxy_url)} is not an http:// or https:// URL "
                "(SOCKS proxies are not supported)"
            )
        auth = None
        if parsed.username is not None:
            auth = (
                urllib.parse.unquote(parsed.username),
                urllib.parse.unquote(parsed.password or ""),
            )
        proxy = httpcore.Proxy(f"{parsed.scheme}://{netloc(parsed)}/", auth=auth)
    return httpcore.ConnectionPool(
        ssl_context=ssl.create_default_context(),
        proxy=proxy,
        max_connections=max_connections,
        keepalive_expiry=60.0,
        network_backend=_Backend(),
    )
