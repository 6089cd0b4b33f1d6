"""Malformed or unencodable MCP messages get an error response, never silence.

Real: ``python -m agentkernel.mcp`` serving an OKF bundle in a temporary directory, over stdio
(a subprocess fed raw bytes, since an SDK client refuses to send a lone surrogate) and over
streamable HTTP on 127.0.0.1 (the ``mcp_http_server`` fixture, spoken to with ``httpx``), and
the curated store's server ``python -m agentkernel.knowledgestore`` over stdio. Each case
writes the exact bytes of the message and waits for the answer with a timeout: silence fails.
"""

from __future__ import annotations

import json
import os
import select
import subprocess
import sys
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest

from tests.support import require_extra
from tests.support.fixtures_mcp import REPO, server_command

require_extra("mcp", "mcp")

import httpx  # noqa: E402  (a dependency of the mcp SDK)

_INIT = {
    "jsonrpc": "2.0",
    "id": 0,
    "method": "initialize",
    "params": {
        "protocolVersion": "2025-06-18",
        "capabilities": {},
        "clientInfo": {"name": "raw", "version": "1"},
    },
}
_SURROGATE = "\\ud800"  # the six characters of the JSON escape, written as raw bytes below


def _call(ident: int, name: str, arguments: str) -> bytes:
    return (
        f'{{"jsonrpc":"2.0","id":{ident},"method":"tools/call",'
        f'"params":{{"name":"{name}","arguments":{arguments}}}}}'
    ).encode()


class RawStdio:
    """A server subprocess spoken to in raw newline-delimited JSON-RPC."""

    def __init__(self, command: list[str]) -> None:
        env = dict(os.environ, PYTHONPATH=os.pathsep.join([str(REPO / "src"), str(REPO)]))
        self.proc = subprocess.Popen(
            command,
            cwd=REPO,
            env=env,
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            stderr=subprocess.DEVNULL,
        )
        answer = self.ask(json.dumps(_INIT).encode(), timeout=120)
        assert answer is not None and "result" in answer, answer
        self.send(b'{"jsonrpc":"2.0","method":"notifications/initialized"}')

    def send(self, raw: bytes) -> None:
        assert self.proc.stdin is not None
        self.proc.stdin.write(raw + b"\n")
        self.proc.stdin.flush()

    def ask(self, raw: bytes, timeout: float = 30.0) -> dict[str, Any] | None:
        """Send one message; the answer, or ``None`` after ``timeout`` seconds of silence."""
        self.send(raw)
        assert self.proc.stdout is not None
        ready, _, _ = select.select([self.proc.stdout], [], [], timeout)
        if not ready:
            return None
        line = self.proc.stdout.readline()
        return json.loads(line) if line else None

    def close(self) -> None:
        if self.proc.stdin is not None:
            self.proc.stdin.close()
        try:
            self.proc.wait(timeout=30)
        except subprocess.TimeoutExpired:
            self.proc.kill()
            self.proc.wait(timeout=30)


@pytest.fixture
def bundle(tmp_path: Path) -> Path:
    folder = tmp_path / "kb"
    (folder / "ops").mkdir(parents=True)
    (folder / "ops" / "oncall.md").write_text(
        "---\ntype: Runbook\ntitle: On-call rotation\n---\nThe rotation changes on Monday.\n"
    )
    return folder


@pytest.fixture
def stdio(bundle: Path) -> Iterator[RawStdio]:
    server = RawStdio(server_command("--bundle", str(bundle), "--kb-name", "KB", "--writable"))
    yield server
    server.close()


def _tool_error(answer: dict[str, Any] | None, ident: int) -> str:
    assert answer is not None, "no answer: the server stayed silent"
    assert answer["id"] == ident, answer
    assert answer["result"]["isError"] is True, answer
    text: str = answer["result"]["content"][0]["text"]
    return text


def _rpc_error(answer: dict[str, Any] | None, ident: int | None, code: int) -> str:
    assert answer is not None, "no answer: the server stayed silent"
    assert answer["id"] == ident and answer["error"]["code"] == code, answer
    message: str = answer["error"]["message"]
    return message


# -- stdio: the builder's server ------------------------------------------------------------

SURROGATE_ARGUMENTS = [
    ("search_kb", f'{{"backend":"KB","query":"{_SURROGATE}"}}', "params.arguments.query"),
    ("search_kb", f'{{"backend":"KB{_SURROGATE}","query":"x"}}', "params.arguments.backend"),
    ("write_kb", f'{{"backend":"KB","text":"a {_SURROGATE} b"}}', "params.arguments.text"),
    ("search_kb", f'{{"{_SURROGATE}":"KB","query":"x"}}', "a key of params.arguments"),
    ("fetch_kb", f'{{"backend":"KB","ids":["x","{_SURROGATE}"]}}', "params.arguments.ids[1]"),
]


@pytest.mark.parametrize(("tool", "arguments", "where"), SURROGATE_ARGUMENTS)
def test_a_lone_surrogate_in_arguments_is_answered_over_stdio(
    stdio: RawStdio, bundle: Path, tool: str, arguments: str, where: str
) -> None:
    before = sorted(p.name for p in bundle.rglob("*"))
    text = _tool_error(stdio.ask(_call(7, tool, arguments)), 7)
    assert text.startswith(f"Invalid arguments for {tool}: {where} ")
    assert "lone surrogate" in text and "Nothing was run" in text
    assert sorted(p.name for p in bundle.rglob("*")) == before  # nothing was written
    ok = _call(8, "search_kb", '{"backend":"KB","query":"rotation"}')
    alive = stdio.ask(ok)
    assert alive is not None and "ops/oncall" in alive["result"]["content"][0]["text"]


def test_every_malformed_message_gets_an_answer_over_stdio(stdio: RawStdio) -> None:
    cases: list[tuple[bytes, Callable[[dict[str, Any] | None], object]]] = [
        (
            _call(1, "search_kb", '{"backend":5,"query":"x"}'),
            lambda a: "backend: Input should be a valid string" in _tool_error(a, 1),
        ),
        (
            _call(2, "search_kb", "{}"),
            lambda a: "backend is required; query is required" in _tool_error(a, 2),
        ),
        (_call(3, "search_kb", '"not an object"'), lambda a: _rpc_error(a, 3, -32602)),
        (
            b'{"jsonrpc":"2.0","id":4,"method":"tools/call","params":{"name"',
            lambda a: "Parse error" in _rpc_error(a, None, -32700),
        ),
        (b'\xff\xfe{"jsonrpc":"2.0","id":5}', lambda a: _rpc_error(a, None, -32700)),
        (b'{"jsonrpc":"2.0","id":6,"method":5}', lambda a: _rpc_error(a, 6, -32600)),
        (b"[1, 2, 3]", lambda a: _rpc_error(a, None, -32600)),
        (
            _call(9, "\\ud800", "{}"),
            lambda a: "params.name" in _rpc_error(a, 9, -32602),
        ),
        (
            f'{{"jsonrpc":"2.0","id":10,"method":"tools/list","params":{{"cursor":"{_SURROGATE}"}}}}'.encode(),
            lambda a: "params.cursor" in _rpc_error(a, 10, -32602),
        ),
        (
            _call(11, "nope_" + "x" * 1_000_000, "{}"),
            lambda a: len(_tool_error(a, 11)) < 1000,
        ),
        (
            _call(12, "search_kb", '{"backend":"KB","query":"x","' + "k" * 100_000 + '":1}'),
            lambda a: len(_tool_error(a, 12)) < 1000,
        ),
    ]
    for raw, check in cases:
        answer = stdio.ask(raw)
        assert check(answer), (raw[:120], answer)


def test_a_notification_is_never_answered_but_the_server_goes_on(stdio: RawStdio) -> None:
    silent = stdio.ask(
        f'{{"jsonrpc":"2.0","method":"notifications/x","params":{{"a":"{_SURROGATE}"}}}}'.encode(),
        timeout=3,
    )
    assert silent is None  # JSON-RPC forbids answering a notification
    answer = stdio.ask(_call(1, "search_kb", '{"backend":"KB","query":"rotation"}'))
    assert answer is not None and answer["result"]["isError"] is False


# -- streamable HTTP ------------------------------------------------------------------------


class RawHTTP:
    """A session with an MCP endpoint, posting raw bodies."""

    def __init__(self, url: str) -> None:
        self.url = url
        self.client = httpx.Client(timeout=60)
        self.headers = {
            "Content-Type": "application/json",
            "Accept": "application/json, text/event-stream",
        }
        response = self.client.post(url, content=json.dumps(_INIT), headers=self.headers)
        assert response.status_code == 200, response.text
        self.headers["mcp-session-id"] = response.headers["mcp-session-id"]
        self.headers["mcp-protocol-version"] = "2025-06-18"
        self.client.post(
            url,
            content=b'{"jsonrpc":"2.0","method":"notifications/initialized"}',
            headers=self.headers,
        )

    def ask(self, raw: bytes) -> tuple[int, dict[str, Any]]:
        response = self.client.post(self.url, content=raw, headers=self.headers)
        body = response.text
        if body.startswith("event:") or "\ndata: " in body:
            body = next(line[6:] for line in body.splitlines() if line.startswith("data: "))
        return response.status_code, json.loads(body)


@pytest.fixture
def http(mcp_http_server: Callable[..., str], bundle: Path) -> Iterator[RawHTTP]:
    session = RawHTTP(mcp_http_server("--bundle", str(bundle), "--kb-name", "KB", "--writable"))
    yield session
    session.client.close()


@pytest.mark.parametrize(("tool", "arguments", "where"), SURROGATE_ARGUMENTS)
def test_a_lone_surrogate_in_arguments_is_answered_over_http(
    http: RawHTTP, bundle: Path, tool: str, arguments: str, where: str
) -> None:
    before = sorted(p.name for p in bundle.rglob("*"))
    status, answer = http.ask(_call(7, tool, arguments))
    assert status == 200
    assert _tool_error(answer, 7).startswith(f"Invalid arguments for {tool}: {where} ")
    assert sorted(p.name for p in bundle.rglob("*")) == before


def test_malformed_messages_are_answered_over_http(http: RawHTTP) -> None:
    status, answer = http.ask(_call(1, "search_kb", '{"backend":5,"query":"x"}'))
    assert status == 200 and "valid string" in _tool_error(answer, 1)
    status, answer = http.ask(b'{"jsonrpc":"2.0","id":2,"method":"tools/call","params":{')
    assert status == 400 and _rpc_error(answer, None, -32700)
    status, answer = http.ask(_call(3, "\\ud800", "{}"))
    assert status == 400 and "params.name" in _rpc_error(answer, 3, -32602)
    status, answer = http.ask(_call(4, "search_kb", '{"backend":"KB","query":"\\ud83d\\ude00"}'))
    assert status == 200 and answer["result"]["isError"] is False  # a valid pair is text
    status, answer = http.ask(_call(5, "search_kb", '{"backend":"KB","query":"rotation"}'))
    assert status == 200 and "ops/oncall" in answer["result"]["content"][0]["text"]


# -- the curated store's server ------------------------------------------------------------


@pytest.fixture
def store_stdio(tmp_path: Path) -> Iterator[RawStdio]:
    folder = tmp_path / "knowledge"
    folder.mkdir()
    server = RawStdio(
        [sys.executable, "-m", "agentkernel.knowledgestore", str(folder), "--writable"]
    )
    yield server
    server.close()


def test_the_curated_store_server_answers_malformed_messages(store_stdio: RawStdio) -> None:
    text = _tool_error(
        store_stdio.ask(_call(1, "knowledge_search", f'{{"query":"{_SURROGATE}"}}')), 1
    )
    assert "params.arguments.query" in text and "lone surrogate" in text
    text = _tool_error(
        store_stdio.ask(_call(2, "knowledge_create", f'{{"title":"T{_SURROGATE}"}}')), 2
    )
    assert "params.arguments.title" in text
    assert _rpc_error(store_stdio.ask(b'{"jsonrpc":"2.0","id":3,"method"'), None, -32700)
    assert _rpc_error(store_stdio.ask(b'{"jsonrpc":"2.0","id":4,"method":7}'), 4, -32600)
    assert "query" in _tool_error(store_stdio.ask(_call(5, "knowledge_search", "{}")), 5)
    answer = store_stdio.ask(_call(6, "knowledge_search", '{"query":"anything"}'))
    assert answer is not None and answer["result"]["isError"] is False
