"""The pieces of authentication that need no server: token tables, JWT rules, ids, the trail.

Real: PyJWT and ``cryptography`` keys (generated here), JWKS files on disk, the audit file.
No server is started (the HTTP tests are ``test_auth_http.py``).
"""

from __future__ import annotations

import json
import time
from pathlib import Path

import pytest

from tests.support import require_extra

require_extra("mcp", "mcp")

from agentkernel.errors import AKConfigError  # noqa: E402
from agentkernel.mcp._audit import AuditLog  # noqa: E402
from agentkernel.mcp._auth import Authenticators, JWTVerifier, TokenTable, issue_token  # noqa: E402
from agentkernel.mcp._wire import answer_unparsed, bad_id  # noqa: E402
from tests.mcp import auth_support as a  # noqa: E402

AUD = "https://kb.example.test/mcp"


def test_an_issued_token_is_known_by_its_hash_only() -> None:
    token, line = issue_token("Support_Agent")
    table = TokenTable.parse(f"# team\n\n{line}\n", "tokens")
    assert token not in line and line.startswith("Support_Agent sha256:")
    assert table.authenticate(token).identity == "Support_Agent"
    assert table.authenticate(token + "x").reason == "unknown token"
    assert table.authenticate("").identity is None


@pytest.mark.parametrize(
    "text",
    [
        "",
        "alice",
        "alice ak_plaintext_token",
        "alice sha256:XYZ",
        "al ice sha256:" + "0" * 64,
        "../etc sha256:" + "0" * 64,
        "a sha256:" + "0" * 64 + "\nb sha256:" + "0" * 64,
    ],
    ids=["empty", "no-hash", "plain-token", "bad-hex", "space", "bad-identity", "duplicate"],
)
def test_a_bad_token_table_is_refused_without_echoing_it(text: str) -> None:
    with pytest.raises(AKConfigError) as raised:
        TokenTable.parse(text, "tokens")
    assert "ak_plaintext_token" not in str(raised.value)


def test_the_token_table_from_an_environment_variable(monkeypatch: pytest.MonkeyPatch) -> None:
    token, line = issue_token("ops")
    monkeypatch.setenv("AK_TEST_TOKENS", f"{line},{issue_token('dev')[1]}")
    table = TokenTable.load("env:AK_TEST_TOKENS")
    assert table.identities == ["ops", "dev"]
    assert table.authenticate(token).identity == "ops"
    with pytest.raises(AKConfigError, match="is not set"):
        TokenTable.load("env:AK_TEST_NOT_SET_ANYWHERE")


@pytest.fixture(scope="module")
def verifier(tmp_path_factory: pytest.TempPathFactory) -> tuple[JWTVerifier, object, object]:
    key, other = a.rsa_key(), a.rsa_key()
    path = tmp_path_factory.mktemp("jwks") / "jwks.json"
    path.write_text(json.dumps(a.jwks(key)))
    return JWTVerifier(str(path), issuer=a.ISSUER, audience=AUD), key, other


def test_jwt_rules(verifier: tuple[JWTVerifier, object, object]) -> None:
    check, key, other = verifier
    good = a.sign(key, a.claims(AUD, "Ingest_Agent"))  # type: ignore[arg-type]
    assert check.authenticate(good).identity == "Ingest_Agent"
    now = int(time.time())
    cases = {
        "expired": a.claims(AUD, "x", exp=now - 3600),
        "not yet valid": a.claims(AUD, "x", nbf=now + 3600),
        "wrong audience": a.claims("https://elsewhere/mcp", "x"),
        "wrong issuer": a.claims(AUD, "x", iss="https://evil/"),
        "no usable sub claim": a.claims(AUD, "../../etc"),
    }
    for reason, payload in cases.items():
        assert check.authenticate(a.sign(key, payload)).reason == reason  # type: ignore[arg-type]
    assert check.authenticate(a.sign(other, a.claims(AUD, "x"))).reason == "bad signature"  # type: ignore[arg-type]
    assert check.authenticate(a.unsigned(a.claims(AUD, "x"))).reason == "algorithm not allowed"
    confused = a.hmac_with_public_key(key, a.claims(AUD, "x"))  # type: ignore[arg-type]
    assert check.authenticate(confused).reason == "algorithm not allowed"
    unknown_kid = a.sign(key, a.claims(AUD, "x"), kid="k9")  # type: ignore[arg-type]
    assert check.authenticate(unknown_kid).reason == "unknown signing key"
    assert check.authenticate("a.b.c").reason == "malformed token"


def test_jwks_rules_at_startup(tmp_path: Path) -> None:
    with pytest.raises(AKConfigError, match="https://"):
        JWTVerifier("http://idp.example.test/jwks", issuer=a.ISSUER, audience=AUD)
    secret = tmp_path / "oct.json"
    secret.write_text(json.dumps({"keys": [{"kty": "oct", "k": "c2VjcmV0", "kid": "k1"}]}))
    with pytest.raises(AKConfigError, match="no public signing key"):
        JWTVerifier(str(secret), issuer=a.ISSUER, audience=AUD)


def test_several_authenticators_answer_with_the_first_identity(
    verifier: tuple[JWTVerifier, object, object],
) -> None:
    check, key, _ = verifier
    token, line = issue_token("alice")
    both = Authenticators([TokenTable.parse(line, "t"), check])
    assert both.authenticate(token).identity == "alice"
    assert both.authenticate(a.sign(key, a.claims(AUD, "bob"))).identity == "bob"  # type: ignore[arg-type]
    assert both.authenticate("nope").reason == "unknown token"


@pytest.mark.parametrize(
    ("ident", "answered"),
    [
        ({"a": 1}, True),
        ([1], True),
        (1.5, True),
        (True, True),
        (2**64, True),
        ("abc", False),
        (7, False),
        (None, False),
    ],
)
def test_json_rpc_ids_as_the_specification_says(ident: object, answered: bool) -> None:
    answer = bad_id({"jsonrpc": "2.0", "id": ident, "method": "tools/list"})
    assert (answer is not None) is answered
    if answer is not None:
        assert answer["id"] is None and answer["error"]["code"] == -32600


def test_a_five_thousand_digit_id_is_an_invalid_request_not_bad_utf8() -> None:
    answer = answer_unparsed('{"jsonrpc":"2.0","id":' + "9" * 5000 + ',"method":"tools/list"}')
    assert answer is not None and answer["error"]["code"] == -32600
    assert "not UTF-8" not in answer["error"]["message"]


def test_the_trail_keeps_names_and_digests_never_contents(tmp_path: Path) -> None:
    trail = AuditLog(str(tmp_path / "audit.jsonl"))
    trail.call(
        identity="bob",
        tool="read_kb",
        arguments={"backend": "sales", "query": "SELECT secret FROM vault", "ids": ["a", "b"]},
        outcome="ok",
        started=time.perf_counter(),
        text="row 1\nrow 2",
        writes=False,
    )
    trail.close()
    (record,) = [json.loads(line) for line in (tmp_path / "audit.jsonl").read_text().splitlines()]
    assert record["identity"] == "bob" and record["backend"] == "sales"
    assert record["ids"] == ["a", "b"] and len(record["query_sha256"]) == 32
    assert record["bytes"] == len("row 1\nrow 2") and "summary" not in record
    assert "SELECT" not in json.dumps(record) and "row 1" not in json.dumps(record)


def test_a_jwks_url_on_loopback_is_fetched_and_cached(tmp_path: Path) -> None:
    import http.server
    import threading

    key = a.rsa_key()
    body = json.dumps(a.jwks(key)).encode()
    fetched: list[str] = []

    class JWKS(http.server.BaseHTTPRequestHandler):
        def do_GET(self) -> None:
            fetched.append(self.path)
            self.send_response(200)
            self.send_header("content-type", "application/json")
            self.send_header("content-length", str(len(body)))
            self.end_headers()
            self.wfile.write(body)

        def log_message(self, *args: object) -> None:
            pass

    server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), JWKS)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    try:
        url = f"http://127.0.0.1:{server.server_address[1]}/certs"
        check = JWTVerifier(url, issuer=a.ISSUER, audience=AUD)
        for name in ("one", "two", "three"):
            token = a.sign(key, a.claims(AUD, name))
            assert check.authenticate(token).identity == name
    finally:
        server.shutdown()
    assert fetched == ["/certs"]  # fetched once, then served from the cache


def test_header_tricks_cannot_bring_their_own_key(
    verifier: tuple[JWTVerifier, object, object],
) -> None:
    import jwt

    check, key, other = verifier
    attacker_jwk = json.loads(jwt.algorithms.RSAAlgorithm.to_jwk(other.public_key()))  # type: ignore[attr-defined]
    payload = a.claims(AUD, "mallory")
    tricks = {
        "jku": {"kid": "k1", "jku": "https://evil.example/jwks.json"},
        "x5u": {"kid": "k1", "x5u": "https://evil.example/cert.pem"},
        "embedded jwk": {"kid": "k1", "jwk": attacker_jwk},
        "no kid, embedded jwk": {"jwk": attacker_jwk},
    }
    for name, headers in tricks.items():
        token = jwt.encode(payload, other, algorithm="RS256", headers=headers)
        verdict = check.authenticate(token)
        assert verdict.identity is None and verdict.reason == "bad signature", (name, verdict)
    # crit naming an extension nobody understands: refused even when signed by the real key
    critical = jwt.encode(
        payload,
        key,
        algorithm="RS256",
        headers={"kid": "k1", "crit": ["x-unknown"], "x-unknown": 1},
    )
    assert check.authenticate(critical).identity is None


def test_control_characters_cannot_forge_an_audit_line(tmp_path: Path) -> None:
    trail = AuditLog(str(tmp_path / "audit.jsonl"))
    forged = '\n{"event":"call","identity":"admin","tool":"write_kb","outcome":"ok"}\r\n\x1b[2K'
    trail.refused_authentication(reason="unknown token", client="10.0.0.1" + forged, method="POST")
    trail.call(
        identity="bob",
        tool="read_kb" + forged,
        arguments={"backend": "sales" + forged, "ids": ["a" + forged]},
        outcome="error",
        started=time.perf_counter(),
        text="refused" + forged,
        writes=False,
    )
    trail.close()
    lines = (tmp_path / "audit.jsonl").read_text().splitlines()
    records = [json.loads(line) for line in lines]
    assert len(lines) == 2 and [r["event"] for r in records] == ["auth", "call"]
    assert all(line.isascii() and "\x1b" not in line and "\r" not in line for line in lines)
    assert not any(r.get("identity") == "admin" for r in records)
