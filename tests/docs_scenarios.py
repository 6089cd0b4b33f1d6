"""Checks that play a page's story end to end: several blocks, one set of real servers.

Real: the moto S3 API server of ``tests/support/fixtures_s3.py`` (boto3 and Lance reach it
through ``AWS_ENDPOINT_URL``, the variable the pages name), the PostgreSQL cluster of
``tests/support/fixtures_postgres.py``, server processes started from the pages' own command
lines, the mcp SDK's clients, MCP Inspector's CLI when it is installed (as
``tests/mcp/test_auth_inspector.py`` finds it), a self-signed certificate. The only rewriting:
absolute paths a page names (``/etc/agentkernel``, ``/srv``), the host a page names for a
server (``kb.internal``, ``db.internal``) and a placeholder token (``ak_3q2v...``).
"""

from __future__ import annotations

import json
import re
import shlex
import sqlite3
import subprocess
from pathlib import Path
from typing import Any
from urllib.parse import urlsplit

import pytest

from tests.docs_support import (
    EXAMPLE_BUNDLE,
    Workdir,
    http_tools,
    probe,
    serving,
    shell_lines,
    stdio_tools,
)


def _s3(work: Workdir, request: pytest.FixtureRequest, bucket: str, prefix: str) -> None:
    """A bucket holding the example bundle under ``prefix``; the endpoint in the env."""
    endpoint = request.getfixturevalue("s3_endpoint")
    client = request.getfixturevalue("s3_client")
    existing = {b["Name"] for b in client.list_buckets().get("Buckets", [])}
    if bucket not in existing:
        client.create_bucket(Bucket=bucket)
    for item in client.list_objects_v2(Bucket=bucket).get("Contents", []):
        client.delete_object(Bucket=bucket, Key=item["Key"])
    for path in sorted(EXAMPLE_BUNDLE.rglob("*")):
        if path.is_file():
            key = f"{prefix}/{path.relative_to(EXAMPLE_BUNDLE).as_posix()}"
            client.put_object(Bucket=bucket, Key=key, Body=path.read_bytes())
    work.env["AWS_ENDPOINT_URL"] = endpoint  # boto3 and Lance read it (docs/index.md)
    work.env["AWS_ALLOW_HTTP"] = "true"  # Lance: the local server speaks plain http
    for key, value in (
        ("AWS_ACCESS_KEY_ID", "testing"),
        ("AWS_SECRET_ACCESS_KEY", "testing"),
        ("AWS_DEFAULT_REGION", "us-east-1"),
    ):
        work.env.setdefault(key, value)


# -- docs/mcp.md -------------------------------------------------------------------------------

FACTORY = '''"""The factory docs/mcp.md serves: one bundle's backend."""
from agentkernel.knowledgebase import KnowledgeBuilder, LocalDocumentStore, OKFManager


def make():
    return KnowledgeBuilder([OKFManager(LocalDocumentStore("kb", writable=False))])
'''


def check_mcp_serve(blocks: list[Any], work: Workdir, request: pytest.FixtureRequest) -> None:
    """Every serving line of docs/mcp.md answers tools/list; its sample lines are real ones."""
    commands, sample = blocks
    _s3(work, request, "bucket", "bundles/policies")
    (work.path / "myapp").mkdir()
    (work.path / "myapp" / "__init__.py").write_text("")
    (work.path / "myapp" / "kb.py").write_text(FACTORY)
    seen: dict[str, tuple[list[str], str]] = {}
    for line in shell_lines(commands.body):
        names, startup = probe(work, line)
        seen[line.split("#")[0].strip()] = (names, startup)
        assert "search_kb" in names, f"{line}: {names}"
        assert ("write_kb" in names) == ("--writable" in line or "Steward" in line), line
    first, _, _, _, module, _ = (v for v in seen.values())
    assert module == first  # "the same server as the first line"
    stdio_line, http_line = sample.body.strip().splitlines()
    assert first[1] == stdio_line
    with serving(work, "agentkernel-kb serve ./kb --writable --http 127.0.0.1:0") as served:
        assert re.sub(r":\d+/mcp", ":41877/mcp", served.startup) == http_line


# -- docs/deployment.md ------------------------------------------------------------------------

CONFIG = """okf:
  databases:
    policies:
      type: local
      uri: ./kb
      producer: [Ingest_Agent]
      consumer: [Support_Agent]
    handbook:
      type: local
      uri: ./bundle
      consumer: [Support_Agent, Ingest_Agent]
"""


def check_deployment(blocks: list[Any], work: Workdir, request: pytest.FixtureRequest) -> None:
    """docs/deployment.md's three shapes, played with its own commands, in order."""
    from tests.mcp.auth_support import self_signed

    (stdio, tokens, serve, startup, client, inspector, jwks_serve, header, audit, grep) = blocks
    (work.path / "config.yaml").write_text(CONFIG)
    # 1. stdio per agent
    names, _ = stdio_tools(work, shell_lines(stdio.body)[0])
    assert "search_kb" in names and "write_kb" not in names
    # 2. tokens: the command prints what the page shows, a new secret each time
    printed = work.run(shell_lines(tokens.body)[0]).stdout
    shown = [line[2:] for line in tokens.body.splitlines() if line.startswith("# ")]
    issued = re.findall(r"^token: (ak_\S+)", printed, re.M)
    lines = re.findall(r"^line:\s+(\S+ sha256:[0-9a-f]{64})$", printed, re.M)
    assert len(issued) == 2 and len(lines) == 2, printed
    assert re.match(r"token: ak_", shown[0]) and re.match(
        r"line:\s+Support_Agent sha256:", shown[1]
    )
    etc = work.map("/etc/agentkernel", "etc")
    work.map("/var/log/agentkernel", "var")
    (etc / "tokens").write_text("\n".join(lines) + "\n")
    cert, key = self_signed(etc)
    work.env["SSL_CERT_FILE"] = str(cert)  # the client trusts the self-signed certificate
    token = dict(zip([line.split()[0] for line in lines], issued, strict=True))
    with serving(work, shell_lines(serve.body)[0]) as served:
        assert work.unsub(served.startup) == startup.body.strip()
        url = served.url or ""
        # the SDK client of the page, at this server, with Support_Agent's token
        work.paths["https://kb.internal:8765"] = url.removesuffix("/mcp").replace(
            "0.0.0.0", "127.0.0.1"
        )
        work.paths["ak_3q2v..."] = token["Support_Agent"]
        answer = work.run_python(client.body).stdout
        assert re.search(r"is_?[eE]rror=False", answer) and "refund" in answer.lower(), answer
        inspected = _inspector(work, inspector.body, cert)
        # Ingest_Agent writes the concept the audit section looks for; a bad token is refused
        base = work.paths["https://kb.internal:8765"]
        names = http_tools(
            f"{base}/mcp", {"Authorization": f"Bearer {token['Ingest_Agent']}"}, _trust(cert)
        )
        assert "write_kb" in names
        _write(f"{base}/mcp", token["Ingest_Agent"], cert)
        refused = subprocess.run(
            ["curl", "-s", "-o", "/dev/null", "-w", "%{http_code}", "--cacert", str(cert),
             "-X", "POST", "-H", "Authorization: Bearer ak_wrong", f"{base}/mcp"],
            capture_output=True, text=True, check=False,
        )  # fmt: skip
        assert refused.stdout == "401"
    written = (work.path / "var" / "audit.jsonl").read_text().splitlines()
    real = [json.loads(line) for line in written]
    for shown_line in audit.body.strip().splitlines():
        doc = json.loads(shown_line)
        same = [
            r for r in real if r.get("event") == doc["event"] and r.get("outcome") == doc["outcome"]
        ]
        assert same, f"no {doc['event']}/{doc['outcome']} line in {written}"
        assert set(doc) <= set(same[-1]), f"{set(doc) - set(same[-1])} missing from {same[-1]}"
    calls = [r for r in real if r.get("tool") == "write_kb"]
    assert calls and calls[0]["summary"] == json.loads(audit.body.splitlines()[0])["summary"]
    (work.path / "audit.jsonl").write_text("\n".join(written) + "\n")
    found = work.run(shell_lines(grep.body)[0]).stdout
    assert "Ingest_Agent" in found and "write_kb" in found
    # 3. behind an identity provider: the refusal's header is the page's (names fold case)
    del work.paths["https://kb.internal:8765"]  # --public-url names the public host itself
    (work.path / "cert.pem").write_bytes(cert.read_bytes())
    (work.path / "key.pem").write_bytes(key.read_bytes())
    with serving(work, shell_lines(jwks_serve.body)[0]) as served:
        local = (served.url or "").replace("0.0.0.0", "127.0.0.1")
        done = subprocess.run(
            ["curl", "-s", "-D", "-", "-o", "/dev/null", "--cacert", str(cert),
             "-X", "POST", local],
            capture_output=True, text=True, check=False,
        )  # fmt: skip
        assert done.stdout.startswith("HTTP/1.1 401") or " 401" in done.stdout.splitlines()[0]
        name, _, value = header.body.strip().partition(": ")
        seen = [line.strip().partition(": ") for line in done.stdout.splitlines()]
        assert (name.lower(), value) in [(n.lower(), v) for n, _, v in seen], done.stdout
    if not inspected:
        from tests.mcp.test_auth_inspector import _inspector as find

        find()  # skips here (fails under CI): the Inspector line was not run


def _trust(cert: Path) -> Any:
    import ssl

    return ssl.create_default_context(cafile=str(cert))


def _write(url: str, token: str, cert: Path) -> None:
    import anyio
    import httpx
    from mcp import ClientSession
    from mcp.client.streamable_http import streamable_http_client

    async def run() -> None:
        headers = {"Authorization": f"Bearer {token}"}
        async with (
            httpx.AsyncClient(headers=headers, verify=_trust(cert), timeout=60) as http,
            streamable_http_client(url, http_client=http) as streams,
            ClientSession(streams[0], streams[1]) as session,
        ):
            await session.initialize()
            result = await session.call_tool(
                "write_kb",
                {"backend": "policies", "text": "# Refund window\n\nRefunds within 30 days."},
            )
            failed = getattr(result, "is_error", None) or getattr(result, "isError", None)
            assert not failed, result

    anyio.run(run)


def inspector_version() -> str:
    """The MCP Inspector version the tests install."""
    script = Path(__file__).parent / "support" / "prepare.d" / "50-mcp-inspector.sh"
    found = re.search(r'^version="([^"]+)"', script.read_text(), re.M)
    assert found, script
    return found.group(1)


def _inspector(work: Workdir, body: str, cert: Path) -> bool:
    """Run the page's Inspector line; ``False`` when Inspector is not installed here."""
    from tests.mcp.test_auth_inspector import _inspector as find

    try:
        binary = find()
    except pytest.skip.Exception:  # said at the end, once the rest of the page has run
        return False
    line = work.sub(shell_lines(body)[0])
    words = shlex.split(line)
    # the page pins the version the tests install (tests/support/prepare.d/50-mcp-inspector.sh)
    assert words[:2] == ["npx", f"@modelcontextprotocol/inspector@{inspector_version()}"], line
    env = {**work.env, "NODE_EXTRA_CA_CERTS": str(cert)}
    done = subprocess.run(
        [binary, *words[2:]], cwd=work.path, env=env, capture_output=True, text=True,
        timeout=120, check=False,
    )  # fmt: skip
    assert done.returncode == 0 and "search_kb" in done.stdout, done.stderr[-2000:]
    return True


# -- docs/index.md -----------------------------------------------------------------------------


def check_warehouse(blocks: list[Any], work: Workdir, request: pytest.FixtureRequest) -> None:
    """docs/index.md over the S3 API server: index, open, configure, embed, search, serve."""
    from tests.test_docs import _check_yaml

    opened, config, embedded, embedded_python, indexer, served = blocks
    _s3(work, request, "warehouse-kb", "bundle")
    work.run(shell_lines(indexer.body)[0])
    work.run_python(opened.body + "\nprint(kb.search('orders', limit=1))\n")
    _check_yaml(config)
    work.run(shell_lines(embedded.body)[0])
    out = work.run_python(
        opened.body
        + embedded_python.body
        + "\nassert kb.capabilities.search_mode == 'semantic', kb.capabilities\n"
    )
    assert out.returncode == 0
    search, serve = shell_lines(served.body)
    assert work.run(search).stdout.strip()
    with serving(work, serve) as server:
        assert server.url and ":8080/" in server.url
        assert "search_kb" in http_tools(server.url)


CONCEPT = "---\ntype: Definition\ntitle: {title}\n---\n# {title}\n\nAbout {title}.\n"


def check_index_refusal(blocks: list[Any], work: Workdir, request: pytest.FixtureRequest) -> None:
    """The refusal docs/index.md shows is what indexing another bundle prints, word for word."""
    (sample,) = blocks
    srv = work.map("/srv", "srv")
    for bundle, titles in (("warehouse", "ABCDEF"), ("recipes", "UVW")):
        for title in titles:
            path = srv / bundle / f"{title.lower()}.md"
            path.parent.mkdir(parents=True, exist_ok=True)
            path.write_text(CONCEPT.format(title=f"Concept {title}"))
    work.run("agentkernel-kb index /srv/warehouse --to /srv/kb.lance")
    done = work.run("agentkernel-kb index /srv/recipes --to /srv/kb.lance", expect=2)
    assert done.stdout == ""
    assert work.unsub(done.stderr.strip()) == sample.body.strip()


# -- docs/sql.md -------------------------------------------------------------------------------


def check_sql_cap(blocks: list[Any], work: Workdir, request: pytest.FixtureRequest) -> None:
    """The row cap's line is what a read over 1000 rows ends with (a real SQLite file)."""
    from agentkernel.knowledgebase import KnowledgeBuilder
    from agentkernel.knowledgebase.sql import SQLManager

    (sample,) = blocks
    path = work.path / "big.sqlite"
    with sqlite3.connect(path) as conn:
        conn.execute("CREATE TABLE t (n INTEGER)")
        conn.executemany("INSERT INTO t VALUES (?)", [(n,) for n in range(1500)])
    kb = SQLManager(f"sqlite:///{path}")
    try:
        # a statement with its own LIMIT is capped at max_rows
        answer = KnowledgeBuilder([kb]).build()[1]("sql", "SELECT n FROM t LIMIT 1400")
        records = kb.query("SELECT n FROM t LIMIT 1400")
    finally:
        kb.close()
    assert records.notice == sample.body.strip()  # type: ignore[attr-defined]
    lines = answer.splitlines()
    # the answer budget's [cut] note, when it cuts the rows too, comes after the cap's line
    assert sample.body.strip() in lines[-2:], answer[-600:]


def check_sql_admin(blocks: list[Any], work: Workdir, request: pytest.FixtureRequest) -> None:
    """The administrator's SQL, the reader's connection and the refusal, on real PostgreSQL."""
    import psycopg

    grants, connect, refusal = blocks
    server = request.getfixturevalue("postgres_server")
    with psycopg.connect(server.conninfo(), autocommit=True) as conn:
        if not conn.execute("SELECT 1 FROM pg_database WHERE datname = 'warehouse'").fetchone():
            conn.execute("CREATE DATABASE warehouse")
    with psycopg.connect(server.conninfo("warehouse"), autocommit=True) as conn:
        conn.execute("CREATE TABLE IF NOT EXISTS orders (id int, late bool)")
        # lower(1) names no schema; the server resolves it to this one (no built-in takes int)
        conn.execute("CREATE OR REPLACE FUNCTION public.lower(integer) RETURNS integer "
                     "LANGUAGE sql AS $$ SELECT $1 $$")  # fmt: skip
        exists = conn.execute("SELECT 1 FROM pg_roles WHERE rolname = 'kb_reader'").fetchone()
        for statement in filter(None, (s.strip() for s in grants.body.split(";"))):
            if exists and statement.startswith("CREATE ROLE kb_reader"):
                # the session's other tests made the role; give it the same attributes
                statement = statement.replace("CREATE ROLE", "ALTER ROLE", 1)
            conn.execute(statement)
    work.paths["db.internal"] = f"{server.host}:{server.port}"
    probe_calls = (
        "\nfrom agentkernel.knowledgebase import KnowledgeBuilder\n"
        "read_kb = KnowledgeBuilder([kb]).build()[1]\n"
        "print(read_kb(kb.backend_name, 'SELECT lower(1) AS n'))\n"
        "print(read_kb(kb.backend_name, 'SELECT count(*) AS n FROM orders'))\n"
    )
    out = work.run_python(connect.body + probe_calls).stdout.splitlines()
    assert out[0].endswith(": " + refusal.body.strip()), out  # after "Error from backend ..."
    assert "n: 0" in "\n".join(out[1:]), out


def check_pg_store(blocks: list[Any], work: Workdir, request: pytest.FixtureRequest) -> None:
    """The PostgreSQL store's roles, a writer and a refused reader, on real PostgreSQL."""
    import psycopg

    roles, program, output = blocks
    server = request.getfixturevalue("postgres_server")
    with psycopg.connect(server.conninfo(), autocommit=True) as conn:
        conn.execute("DROP DATABASE IF EXISTS knowledge")
        conn.execute("CREATE DATABASE knowledge")
    with psycopg.connect(server.conninfo("knowledge"), autocommit=True) as conn:
        for statement in filter(None, (s.strip() for s in roles.body.split(";"))):
            name = statement.split()[2] if statement.startswith("CREATE ROLE") else ""
            if (
                name
                and conn.execute("SELECT 1 FROM pg_roles WHERE rolname = %s", (name,)).fetchone()
            ):
                statement = statement.replace("CREATE ROLE", "ALTER ROLE", 1)  # made earlier
            conn.execute(statement)
    work.paths["db.internal"] = f"{server.host}:{server.port}"
    out = work.run_python(program.body).stdout
    assert out.splitlines() == output.body.strip().splitlines(), out


# -- docs/deployment.md: Run it for a team ------------------------------------------------------


def check_team(blocks: list[Any], work: Workdir, request: pytest.FixtureRequest) -> None:
    """The team section, played: index on S3, a store on S3, two replicas behind HAProxy (TLS).

    The venv is this environment (its ``bin`` stands in for ``/srv/agentkernel/venv/bin``; the
    install line is checked against pyproject.toml's extras); the bucket is on the moto S3
    API server; HAProxy is Debian's (tests/support/haproxy.py finds it); the certificate is a
    self-signed one the client trusts through ``SSL_CERT_FILE``, as the page says.
    """
    import tomllib

    from tests.docs_support import BIN
    from tests.mcp.auth_support import self_signed
    from tests.support.haproxy import free_port, haproxy_binary, wait_for_port

    install, index, config, tokens, replicas, proxy, client, probe_line = blocks
    haproxy = haproxy_binary()
    # 1. the install line names extras pyproject.toml defines
    extras = tomllib.loads((Path(__file__).parents[1] / "pyproject.toml").read_text())
    defined = set(extras["project"]["optional-dependencies"])
    named = re.search(r"agentkernel\[([^\]]+)\]", install.body)
    assert named and set(named.group(1).split(",")) <= defined, install.body
    work.paths["/srv/agentkernel/venv/bin"] = str(BIN)
    srv = work.map("/srv/agentkernel", "srv")
    work.map("/var/log/agentkernel", "var")
    # 2. the bundle in the bucket, then the page's index line
    _s3(work, request, "team-kb", "handbook")
    work.run(shell_lines(index.body)[0])
    # 3. the configuration, as the page writes it
    (srv / "config.yaml").write_text(config.body)
    # 4. tokens: the page's command; its line: lines into the tokens file
    printed = work.run(shell_lines(tokens.body)[0]).stdout
    issued = re.findall(r"^token: (ak_\S+)", printed, re.M)
    lines = re.findall(r"^line:\s+(\S+ sha256:[0-9a-f]{64})$", printed, re.M)
    assert len(issued) == 3 and len(lines) == 3, printed
    (srv / "tokens").write_text("\n".join(lines) + "\n")
    token = dict(zip([line.split()[0] for line in lines], issued, strict=True))
    # 5. the two replicas, on ports of their own here
    first_line, second_line = shell_lines(replicas.body)
    cert, key = self_signed(work.path)
    pem = work.path / "kb.pem"
    pem.write_bytes(cert.read_bytes() + key.read_bytes())
    with (
        serving(work, _replace(first_line, {"127.0.0.1:8801": "127.0.0.1:0"})) as first,
        serving(work, _replace(second_line, {"127.0.0.1:8802": "127.0.0.1:0"})) as second,
    ):
        assert "stateless (no MCP sessions)" in first.startup
        up = [urlsplit(first.url or "").netloc, urlsplit(second.url or "").netloc]
        port = free_port()
        shown = _replace(
            proxy.body,
            {
                "bind :443": f"bind 127.0.0.1:{port}",
                "/etc/haproxy/kb.pem": str(pem),
                "127.0.0.1:8801": up[0],
                "127.0.0.1:8802": up[1],
            },
        )
        (work.path / "haproxy.cfg").write_text(shown)
        checked = subprocess.run(
            [haproxy, "-c", "-f", str(work.path / "haproxy.cfg")],
            capture_output=True, text=True, timeout=60, check=False,
        )  # fmt: skip
        assert checked.returncode == 0, checked.stdout + checked.stderr
        balancer = subprocess.Popen(
            [haproxy, "-db", "-f", str(work.path / "haproxy.cfg")],
            stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL,
        )  # fmt: skip
        try:
            wait_for_port(port)
            # 7. the page's client through the proxy, trusting the certificate by SSL_CERT_FILE
            work.paths["https://kb.internal"] = f"https://127.0.0.1:{port}"
            work.paths["ak_ingest..."] = token["Ingest_Agent"]
            work.env["SSL_CERT_FILE"] = str(cert)
            answer = work.run_python(client.body).stdout
            del work.paths["https://kb.internal"]
            # 8. the probe line, at the first replica
            probed = work.run(_replace(shell_lines(probe_line.body)[0], {"127.0.0.1:8801": up[0]}))
        finally:
            balancer.terminate()
            balancer.wait(timeout=30)
    assert "Created concept/cold-brew." in answer, answer
    assert answer.count("is_error=False") == 2 or answer.count("isError=False") == 2, answer
    assert json.loads(probed.stdout) == {
        "ready": True,
        "databases": {"handbook": "ready", "team": "ready"},
    }
    client_s3 = request.getfixturevalue("s3_client")
    keys = {item["Key"] for item in client_s3.list_objects_v2(Bucket="team-kb")["Contents"]}
    assert "knowledge/concepts/cold-brew.md" in keys, keys  # the store's page is on S3
    assert any(key.startswith("handbook.lance/") for key in keys)
    audits = [work.path / "var" / f"audit-{n}.jsonl" for n in (8801, 8802)]
    calls = [
        json.loads(line)
        for audit in audits
        for line in audit.read_text().splitlines()
        if '"event":"call"' in line
    ]
    assert sorted(c["tool"] for c in calls) == ["knowledge_create", "search_kb"]


def _replace(text: str, changes: dict[str, str]) -> str:
    for old, new in changes.items():
        assert old in text, f"{old!r} not in {text!r}"
        text = text.replace(old, new)
    return text
