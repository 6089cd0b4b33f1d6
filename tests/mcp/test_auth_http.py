"""Authenticated HTTP serving: who may connect, what refused callers see, what the trail keeps.

Real: ``python -m agentkernel.mcp --http 127.0.0.1:0`` processes with ``--auth-tokens`` and
``--auth-jwks`` (a JWKS file holding a freshly generated RSA key), spoken to by the mcp SDK's
streamable-HTTP client and by raw HTTP (stdlib ``urllib``); tokens signed with PyJWT or built
byte by byte; a counting backend whose every operation appends to a file, so a refused
request provably ran nothing. TLS with a self-signed certificate made by ``cryptography``.
Nothing is mocked.
"""

from __future__ import annotations

import json
import ssl
import urllib.request
from pathlib import Path
from typing import Any

import anyio
import pytest

from tests.support import require_extra

require_extra("mcp", "mcp")

from tests.mcp import auth_support as a  # noqa: E402
from tests.mcp._session import call, tools  # noqa: E402

SECRET_ENV = {"OPENAI_API_KEY": "sk-test-do-not-log-7f3a9c2e1b"}


@pytest.fixture
def keyed(tmp_path: Path) -> dict[str, Any]:
    """An IdP key with its JWKS file, a second key (not published), and a token table."""
    key, other = a.rsa_key(), a.rsa_key()
    jwks_path = tmp_path / "jwks.json"
    jwks_path.write_text(json.dumps(a.jwks(key)))
    opaque = "ak_" + "x" * 40
    table = tmp_path / "tokens"
    table.write_text(f"# issued tokens\n{a.token_line('alice', opaque)}\n")
    return {
        "key": key,
        "other": other,
        "jwks": jwks_path,
        "table": table,
        "opaque": opaque,
        "calls": tmp_path / "calls.txt",
        "audit": tmp_path / "audit.jsonl",
    }


def _server(keyed: dict[str, Any], *extra: str) -> Any:
    return a.serving(
        a.module_command(
            "--factory",
            "tests.mcp.auth_support:counted",
            "--writable",
            "--auth-tokens",
            str(keyed["table"]),
            "--auth-jwks",
            str(keyed["jwks"]),
            "--auth-issuer",
            a.ISSUER,
            "--audit",
            str(keyed["audit"]),
            *extra,
        ),
        env={a.CALLS_ENV: str(keyed["calls"]), **SECRET_ENV},
    )


def _bad_tokens(keyed: dict[str, Any], audience: str) -> dict[str, str | None]:
    key, other = keyed["key"], keyed["other"]
    past = {"exp": 1_000_000, "iat": 999_000}
    return {
        "missing": None,
        "malformed": "Basic YWxpY2U6c2VjcmV0",
        "empty bearer": "Bearer ",
        "wrong opaque": "Bearer ak_" + "y" * 40,
        "expired": "Bearer " + a.sign(key, a.claims(audience, "alice", **past)),
        "not yet valid": "Bearer "
        + a.sign(key, a.claims(audience, "alice", nbf=a.claims(audience, "x")["exp"] + 3600)),
        "wrong audience": "Bearer " + a.sign(key, a.claims("https://other.example/mcp", "alice")),
        "wrong issuer": "Bearer " + a.sign(key, a.claims(audience, "alice", iss="https://evil/")),
        "wrong signature": "Bearer " + a.sign(other, a.claims(audience, "alice")),
        "alg none": "Bearer " + a.unsigned(a.claims(audience, "alice")),
        "HS/RS confusion": "Bearer " + a.hmac_with_public_key(key, a.claims(audience, "alice")),
        "no exp": "Bearer " + a.sign(key, {"iss": a.ISSUER, "aud": audience, "sub": "alice"}),
    }


def test_every_bad_token_gets_401_and_runs_nothing(keyed: dict[str, Any]) -> None:
    with _server(keyed) as server:
        bad = _bad_tokens(keyed, server.url)
        answers = {}
        for name, header in bad.items():
            headers = {"Authorization": header} if header is not None else {}
            for body in (a.INITIALIZE, a.CALL):
                answers[(name, body["method"])] = a.post(server.url, body, headers)

        async def sdk_attempts() -> list[str]:
            failures = []
            for token in ("ak_" + "z" * 40, bad["expired"][7:]):  # type: ignore[index]
                try:
                    async with a.session(server.url, token) as opened:
                        await call(opened, "search_kb", backend="Notes", query="backups")
                except BaseException as exc:  # the SDK client fails to connect
                    failures.append(type(exc).__name__)
            return failures

        sdk_failures = anyio.run(sdk_attempts)
    metadata_url = server.url.replace("/mcp", "/.well-known/oauth-protected-resource/mcp")
    for (name, method), (status, headers, body) in answers.items():
        assert status == 401, (name, method, status, body)
        challenge = {k.lower(): v for k, v in headers.items()}["www-authenticate"]
        assert challenge.startswith("Bearer "), name
        assert f'resource_metadata="{metadata_url}"' in challenge, name
        if name != "missing":
            assert 'error="invalid_token"' in challenge, name
        assert b"Nothing was run" in body
    assert len(sdk_failures) == 2
    assert a.calls_made(keyed["calls"]) == []  # the server-side counter: nothing ran


def test_valid_tokens_name_the_caller_and_the_trail_keeps_every_call(keyed: dict[str, Any]) -> None:
    with _server(keyed) as server:
        jwt_token = a.sign(keyed["key"], a.claims(server.url, "bob"))
        bad = _bad_tokens(keyed, server.url)
        for header in bad.values():
            a.post(server.url, a.CALL, {"Authorization": header} if header else {})

        async def run() -> dict[str, Any]:
            out: dict[str, Any] = {}
            async with a.session(server.url, keyed["opaque"]) as opened:
                out["alice_tools"] = list(await tools(opened))
                out["alice_search"] = await call(
                    opened, "search_kb", backend="Notes", query="backups"
                )
                out["alice_write"] = await call(
                    opened, "write_kb", backend="Notes", text="Rotation\nOn-call swaps on Friday."
                )
                out["alice_unknown"] = await call(opened, "drop_everything")
            async with a.session(server.url, jwt_token) as opened:
                out["bob_search"] = await call(opened, "search_kb", backend="Notes", query="oncall")
            return out

        out = anyio.run(run)
        with urllib.request.urlopen(
            server.url.replace("/mcp", "/.well-known/oauth-protected-resource/mcp"), timeout=30
        ) as response:
            metadata = json.loads(response.read())
    assert "write_kb" in out["alice_tools"]
    assert out["alice_search"][1] is False and "35 days" in out["alice_search"][0]
    assert out["alice_write"][1] is False
    assert out["alice_unknown"][1] is True
    assert out["bob_search"][1] is False
    assert a.calls_made(keyed["calls"]) == ["search", "write", "search"]
    assert metadata["resource"] == server.url
    assert metadata["authorization_servers"] == [a.ISSUER]
    assert metadata["bearer_methods_supported"] == ["header"]

    text = keyed["audit"].read_text(encoding="utf-8")
    records = [json.loads(line) for line in text.splitlines()]
    calls = [r for r in records if r["event"] == "call"]
    refusals = [r for r in records if r["event"] == "auth"]
    assert [(r["identity"], r["tool"], r["outcome"]) for r in calls] == [
        ("alice", "search_kb", "ok"),
        ("alice", "write_kb", "ok"),
        ("alice", "drop_everything", "refused"),
        ("bob", "search_kb", "ok"),
    ]
    write = calls[1]
    assert write["backend"] == "Notes" and "text_sha256" in write
    assert write["summary"].startswith("Wrote 1 record") and write["bytes"] > 0
    assert "On-call swaps" not in text  # the text written is kept as a digest only
    assert sorted(r["reason"] for r in refusals) == sorted(
        [
            "missing",
            "malformed",
            "malformed",
            "unknown token",
            "expired",
            "not yet valid",
            "wrong audience",
            "wrong issuer",
            "bad signature",
            "algorithm not allowed",
            "algorithm not allowed",
            "missing claim exp",
        ]
    )
    for token in [keyed["opaque"], jwt_token, *(h[7:] for h in bad.values() if h and len(h) > 7)]:
        assert token not in text
    assert SECRET_ENV["OPENAI_API_KEY"] not in text
    assert a.secrets_in_env()(text) == []


def test_tls_with_a_self_signed_certificate(keyed: dict[str, Any], tmp_path: Path) -> None:
    cert, key = a.self_signed(tmp_path)
    with _server(keyed, "--tls-cert", str(cert), "--tls-key", str(key)) as server:
        assert server.url.startswith("https://127.0.0.1:")
        trusted = ssl.create_default_context(cafile=str(cert))
        status, _, _ = a.post(server.url, a.INITIALIZE, context=trusted)
        ok, _, body = a.post(
            server.url, a.INITIALIZE, {"Authorization": f"Bearer {keyed['opaque']}"}, trusted
        )
        refused_plain = None
        try:
            a.post(server.url.replace("https://", "http://"), a.INITIALIZE)
        except Exception as exc:  # plain HTTP to a TLS port gets no HTTP answer
            refused_plain = exc
        untrusted = None
        try:
            a.post(server.url, a.INITIALIZE, context=ssl.create_default_context())
        except Exception as exc:
            untrusted = exc
    assert status == 401
    assert ok == 200 and b'"serverInfo"' in body
    assert refused_plain is not None
    assert untrusted is not None and "CERTIFICATE_VERIFY_FAILED" in str(untrusted)


def test_a_request_over_the_size_bound_is_refused_with_413(keyed: dict[str, Any]) -> None:
    with _server(keyed, "--max-request-bytes", "2048") as server:
        big = dict(a.CALL)
        big["params"] = {
            "name": "search_kb",
            "arguments": {"backend": "Notes", "query": "q" * 5000},
        }
        status, _, body = a.post(server.url, big, {"Authorization": f"Bearer {keyed['opaque']}"})
    assert status == 413
    assert b"larger than 2048 bytes" in body
    assert a.calls_made(keyed["calls"]) == []


def test_one_caller_over_its_limit_gets_an_error_not_a_wait(keyed: dict[str, Any]) -> None:
    keyed["table"].write_text(
        a.token_line("alice", keyed["opaque"]) + "\n" + a.token_line("carol", "ak_" + "c" * 40)
    )
    with _server(keyed, "--max-calls-per-identity", "2", "--max-concurrency", "4") as server:

        async def run() -> tuple[list[tuple[str, bool]], tuple[str, bool]]:
            results: list[tuple[str, bool]] = []
            other: list[tuple[str, bool]] = []
            async with (
                a.session(server.url, keyed["opaque"]) as flood,
                a.session(server.url, "ak_" + "c" * 40) as calm,
            ):

                async def one() -> None:
                    results.append(await call(flood, "search_kb", backend="Notes", query="slow"))

                async def calm_call() -> None:
                    other.append(await call(calm, "search_kb", backend="Notes", query="backups"))

                async with anyio.create_task_group() as group:
                    for _ in range(8):
                        group.start_soon(one)
                    group.start_soon(calm_call)
            return results, other[0]

        flooded, calm = anyio.run(run)
    limited = [text for text, failed in flooded if failed]
    assert len(flooded) == 8
    assert limited, "the flooding caller was never limited"
    assert all("Too many calls at once for 'alice'" in text for text in limited)
    assert calm[1] is False and "35 days" in calm[0]
    records = [json.loads(line) for line in keyed["audit"].read_text().splitlines()]
    outcomes = [r["outcome"] for r in records if r.get("identity") == "alice"]
    assert len(outcomes) == 8  # nothing lost from the trail
    assert outcomes.count("limit") == len(limited)


def test_a_session_opened_by_one_identity_is_unknown_to_another(keyed: dict[str, Any]) -> None:
    bob_token = "ak_" + "b" * 40
    keyed["table"].write_text(
        a.token_line("alice", keyed["opaque"]) + "\n" + a.token_line("bob", bob_token)
    )
    with _server(keyed) as server:
        alice = {"Authorization": f"Bearer {keyed['opaque']}"}
        status, headers, _ = a.post(server.url, a.INITIALIZE, alice)
        session_id = {k.lower(): v for k, v in headers.items()}["mcp-session-id"]
        hijack = {"Authorization": f"Bearer {bob_token}", "mcp-session-id": session_id}
        stolen, _, _ = a.post(server.url, a.CALL, {**hijack, "mcp-protocol-version": "2025-06-18"})
    assert status == 200
    assert stolen in (400, 404)  # bob's server has no such session
    assert a.calls_made(keyed["calls"]) == []
