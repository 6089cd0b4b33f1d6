"""What the authentication tests share: real keys, real tokens, real server processes.

Nothing here is a double: RSA keys are generated with ``cryptography``, JWTs are signed with
PyJWT (or assembled byte by byte where the point is a token no library would sign: ``alg:
none``, an HMAC keyed with the public key), the servers are ``python -m agentkernel.mcp`` and
``agentkernel-kb`` processes on 127.0.0.1, and the counting backend is a real
``KnowledgeBase`` whose every operation appends a line to a file the test reads.
"""

from __future__ import annotations

import base64
import datetime as dt
import hashlib
import hmac
import json
import os
import queue
import re
import subprocess
import sys
import threading
import time
import urllib.error
import urllib.request
from collections.abc import AsyncIterator, Callable, Iterator
from contextlib import asynccontextmanager, contextmanager
from pathlib import Path
from typing import Any

import jwt
from cryptography import x509
from cryptography.hazmat.primitives import hashes, serialization
from cryptography.hazmat.primitives.asymmetric import rsa
from cryptography.x509.oid import NameOID
from mcp import ClientSession
from mcp.shared._httpx_utils import create_mcp_http_client

from agentkernel.knowledgebase import KnowledgeBuilder
from tests.knowledgebase.memory_backend import MemoryBackend
from tests.mcp.factories import FACTS
from tests.support.fixtures_mcp import REPO

ISSUER = "https://idp.example.test/"
CALLS_ENV = "AK_TEST_CALLS_FILE"
_READY = re.compile(r"Serving MCP .* at (https?://\S+) \(")


# -- the server-side counter ----------------------------------------------------------------


class CountingBackend(MemoryBackend):
    """A real in-memory backend that appends one line per operation to ``$AK_TEST_CALLS_FILE``."""

    def _count(self, what: str) -> None:
        target = os.environ.get(CALLS_ENV)
        if target:
            with open(target, "a", encoding="utf-8") as handle:
                handle.write(what + "\n")

    def search(self, query: str, limit: int = 3, **kwargs: Any) -> list[Any]:
        self._count("search")
        if query.startswith("slow"):
            time.sleep(0.5)
        return super().search(query, limit, **kwargs)

    def write(self, records: Any, **kwargs: Any) -> Any:
        self._count("write")
        return super().write(records, **kwargs)


def counted() -> KnowledgeBuilder:
    """``--factory tests.mcp.auth_support:counted``: one counting backend that takes writes."""
    backend = CountingBackend("Notes", search=True, writable=True).add_schema({"about": "notes"})
    backend.docs.update(FACTS)
    return KnowledgeBuilder([backend])


def calls_made(path: Path) -> list[str]:
    """The operations the server ran, in order."""
    return path.read_text(encoding="utf-8").splitlines() if path.exists() else []


# -- keys and tokens ------------------------------------------------------------------------


def rsa_key() -> rsa.RSAPrivateKey:
    """A fresh 2048-bit RSA key."""
    return rsa.generate_private_key(public_exponent=65537, key_size=2048)


def jwks(key: rsa.RSAPrivateKey, kid: str = "k1") -> dict[str, Any]:
    """The JWKS publishing ``key``'s public half."""
    public = json.loads(jwt.algorithms.RSAAlgorithm.to_jwk(key.public_key()))
    public.update({"kid": kid, "use": "sig", "alg": "RS256"})
    return {"keys": [public]}


def claims(audience: str, identity: str, **changes: Any) -> dict[str, Any]:
    """Valid claims for ``identity``, with ``changes`` applied."""
    now = int(time.time())
    base = {"iss": ISSUER, "aud": audience, "sub": identity, "iat": now, "exp": now + 600}
    base.update(changes)
    return base


def sign(key: rsa.RSAPrivateKey, payload: dict[str, Any], kid: str = "k1") -> str:
    """An RS256 JWT."""
    return jwt.encode(payload, key, algorithm="RS256", headers={"kid": kid})


def _b64(data: bytes) -> str:
    return base64.urlsafe_b64encode(data).rstrip(b"=").decode("ascii")


def unsigned(payload: dict[str, Any]) -> str:
    """A JWT with ``alg: none`` and no signature."""
    header = _b64(json.dumps({"alg": "none", "typ": "JWT", "kid": "k1"}).encode())
    return f"{header}.{_b64(json.dumps(payload).encode())}."


def hmac_with_public_key(key: rsa.RSAPrivateKey, payload: dict[str, Any]) -> str:
    """An HS256 JWT keyed with the RSA public key's PEM (the HS/RS confusion attack)."""
    pem = key.public_key().public_bytes(
        serialization.Encoding.PEM, serialization.PublicFormat.SubjectPublicKeyInfo
    )
    header = _b64(json.dumps({"alg": "HS256", "typ": "JWT", "kid": "k1"}).encode())
    body = _b64(json.dumps(payload).encode())
    signature = hmac.new(pem, f"{header}.{body}".encode(), hashlib.sha256).digest()
    return f"{header}.{body}.{_b64(signature)}"


def token_line(identity: str, token: str) -> str:
    """The token table's line for ``token``."""
    return f"{identity} sha256:{hashlib.sha256(token.encode()).hexdigest()}"


def self_signed(folder: Path) -> tuple[Path, Path]:
    """A self-signed certificate for 127.0.0.1 and its key, as PEM files."""
    key = rsa_key()
    name = x509.Name([x509.NameAttribute(NameOID.COMMON_NAME, "127.0.0.1")])
    now = dt.datetime.now(dt.UTC)
    import ipaddress

    cert = (
        x509.CertificateBuilder()
        .subject_name(name)
        .issuer_name(name)
        .public_key(key.public_key())
        .serial_number(x509.random_serial_number())
        .not_valid_before(now - dt.timedelta(minutes=5))
        .not_valid_after(now + dt.timedelta(days=1))
        .add_extension(
            x509.SubjectAlternativeName([x509.IPAddress(ipaddress.ip_address("127.0.0.1"))]),
            critical=False,
        )
        .sign(key, hashes.SHA256())
    )
    cert_path, key_path = folder / "cert.pem", folder / "key.pem"
    cert_path.write_bytes(cert.public_bytes(serialization.Encoding.PEM))
    key_path.write_bytes(
        key.private_bytes(
            serialization.Encoding.PEM,
            serialization.PrivateFormat.PKCS8,
            serialization.NoEncryption(),
        )
    )
    return cert_path, key_path


# -- server processes -----------------------------------------------------------------------


class Server:
    """A server process, its URL and everything it wrote on stderr."""

    def __init__(self, proc: subprocess.Popen[str], url: str, lines: list[str]) -> None:
        self.proc = proc
        self.url = url
        self.lines = lines


@contextmanager
def serving(
    command: list[str],
    env: dict[str, str] | None = None,
    timeout: float = 90.0,
    preexec_fn: Callable[[], None] | None = None,
    cwd: Path = REPO,
) -> Iterator[Server]:
    """Run a server command until it announces its URL; stop it afterwards.

    ``preexec_fn`` runs in the child before the server starts (to lower a resource limit);
    ``cwd`` is its working directory (the repository by default).
    """
    proc = subprocess.Popen(
        command,
        cwd=cwd,
        stderr=subprocess.PIPE,
        stdout=subprocess.DEVNULL,
        text=True,
        env={**os.environ, **(env or {})},
        preexec_fn=preexec_fn,
    )
    urls: queue.Queue[str | None] = queue.Queue()
    lines: list[str] = []

    def drain() -> None:
        assert proc.stderr is not None
        for line in proc.stderr:
            lines.append(line)
            match = _READY.search(line)
            if match:
                urls.put(match.group(1))
        urls.put(None)

    threading.Thread(target=drain, daemon=True).start()
    try:
        try:
            url = urls.get(timeout=timeout)
        except queue.Empty:
            url = None
        if url is None:
            raise RuntimeError(f"server did not start: {''.join(lines)[-3000:]}")
        yield Server(proc, url, lines)
    finally:
        proc.terminate()
        try:
            proc.wait(timeout=15)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.wait(timeout=15)


def module_command(*args: str) -> list[str]:
    """``python -m agentkernel.mcp ARGS --http 127.0.0.1:0``."""
    return [sys.executable, "-m", "agentkernel.mcp", *args, "--http", "127.0.0.1:0"]


def cli_command(*args: str) -> list[str]:
    """``agentkernel-kb ARGS`` (through ``python -m agentkernel.cli``)."""
    return [sys.executable, "-m", "agentkernel.cli", *args]


# -- clients ----------------------------------------------------------------------------------


def post(
    url: str, body: dict[str, Any], headers: dict[str, str] | None = None, context: Any = None
) -> tuple[int, dict[str, str], bytes]:
    """POST a JSON-RPC message with stdlib ``urllib``; returns status, headers and body."""
    request = urllib.request.Request(
        url,
        data=json.dumps(body).encode(),
        method="POST",
        headers={
            "content-type": "application/json",
            "accept": "application/json, text/event-stream",
            **(headers or {}),
        },
    )
    try:
        with urllib.request.urlopen(request, timeout=30, context=context) as response:
            return response.status, dict(response.headers), response.read()
    except urllib.error.HTTPError as exc:
        return exc.code, dict(exc.headers), exc.read()


INITIALIZE = {
    "jsonrpc": "2.0",
    "id": 1,
    "method": "initialize",
    "params": {
        "protocolVersion": "2025-06-18",
        "capabilities": {},
        "clientInfo": {"name": "raw", "version": "0"},
    },
}
CALL = {
    "jsonrpc": "2.0",
    "id": 2,
    "method": "tools/call",
    "params": {"name": "search_kb", "arguments": {"backend": "Notes", "query": "backups"}},
}


@asynccontextmanager
async def session(
    url: str, token: str | None = None, http_client: Any = None
) -> AsyncIterator[ClientSession]:
    """The mcp SDK's streamable-HTTP client, sending ``Authorization: Bearer TOKEN``."""
    from mcp.client.streamable_http import streamable_http_client

    headers = {"Authorization": f"Bearer {token}"} if token is not None else {}
    client = http_client or create_mcp_http_client(headers=headers)
    async with (
        client,
        streamable_http_client(url, http_client=client) as streams,
        ClientSession(streams[0], streams[1]) as opened,
    ):
        await opened.initialize()
        yield opened


def secrets_in_env() -> Callable[[str], list[str]]:
    """Finds, in a text, any value of this process's environment long enough to be a secret."""
    values = [v for v in os.environ.values() if len(v) >= 12 and not v.startswith("/")]

    def found(text: str) -> list[str]:
        return [v for v in values if v in text]

    return found
