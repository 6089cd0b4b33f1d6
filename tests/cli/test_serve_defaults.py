"""``agentkernel-kb serve`` as people meet it: read-only by default, stable backend names, a
startup line that says what it serves (the URL over HTTP), log flags that do what they say.

Real: the ``agentkernel-kb`` console script in a subprocess, spoken to by the official MCP
client over stdio and over streamable HTTP on 127.0.0.1; the shared GA4 bundle read in place
(read-only runs) or a temporary copy (runs that may write). Nothing is mocked.
"""

from __future__ import annotations

import os
import queue
import re
import shutil
import subprocess
import sys
import tempfile
import threading
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import anyio
import pytest

from tests.support import REPO, require_extra

require_extra("mcp", "mcp")

from mcp import ClientSession, StdioServerParameters  # noqa: E402
from mcp.client.stdio import stdio_client  # noqa: E402

from tests.mcp._session import call, http_session, tools  # noqa: E402
from tests.support import okf_bundle  # noqa: E402

ROOT = REPO
SCRIPT = Path(sys.executable).parent / "agentkernel-kb"
_URL = re.compile(r"^Serving MCP 'knowledge' at (http://127\.0\.0\.1:\d+/mcp) \(")


@pytest.fixture
def ga4() -> Path:
    return okf_bundle("ga4")


@pytest.fixture
def ga4_copy(ga4: Path, tmp_path: Path) -> Path:
    return Path(shutil.copytree(ga4, tmp_path / "ga4"))


def cli(*args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [str(SCRIPT), *args], capture_output=True, text=True, timeout=120, check=False
    )


def over_stdio(*args: str, steps: Any) -> tuple[Any, str]:
    """Run ``agentkernel-kb ARGS`` as a stdio MCP server; returns what ``steps`` returned
    and everything the server wrote to stderr."""
    params = StdioServerParameters(
        command=str(SCRIPT), args=list(args), env=dict(os.environ), cwd=str(ROOT)
    )
    out: list[Any] = []
    with tempfile.TemporaryFile("w+") as errlog:

        async def run() -> None:
            async with (
                stdio_client(params, errlog=errlog) as streams,
                ClientSession(streams[0], streams[1]) as session,
            ):
                await session.initialize()
                out.append(await steps(session))

        anyio.run(run)
        errlog.seek(0)
        return out[0], errlog.read()


async def listing(session: ClientSession) -> dict[str, dict[str, Any]]:
    return await tools(session)


# -- 1. read-only unless --writable --------------------------------------------------------


def test_serve_is_read_only_by_default_and_says_so(ga4: Path) -> None:
    listed, err = over_stdio("serve", str(ga4), steps=listing)
    assert "write_kb" not in listed
    line = err.strip().splitlines()[0]
    assert line.startswith("Serving MCP 'knowledge' on stdio (6 tools over ga4; read-only")
    assert "pass --writable to offer write_kb" in line


def test_writable_offers_write_kb_which_is_not_destructive_on_okf(ga4_copy: Path) -> None:
    async def steps(session: ClientSession) -> Any:
        listed = await tools(session)
        written = await call(session, "write_kb", backend="ga4", text="Churn\nIs 28 days.")
        return listed, written

    (listed, (text, is_error)), err = over_stdio("serve", str(ga4_copy), "--writable", steps=steps)
    assert not is_error and "generated/" in text
    assert any(p.name.startswith("churn") for p in (ga4_copy / "generated").iterdir())
    # an OKF write only adds a document (docs/mcp.md): not destructive
    assert listed["write_kb"]["annotations"]["destructiveHint"] is False
    assert "writable: write_kb writes to ga4" in err.splitlines()[0]


# -- 2. one naming rule ---------------------------------------------------------------------


def test_every_form_of_serve_names_the_bundle_by_its_folder(ga4: Path) -> None:
    async def schemas(session: ClientSession) -> str:
        text, _ = await call(session, "get_all_kb_descriptions")
        return text

    for args in (["serve", str(ga4)], ["serve", "--bundle", str(ga4)]):
        text, err = over_stdio(*args, steps=schemas)
        assert '"ga4"' in text or "ga4" in text.splitlines()[0], text[:300]
        assert "over ga4;" in err
    text, err = over_stdio("serve", str(ga4), "--name", "analytics", steps=schemas)
    assert "analytics" in text and "over analytics;" in err


def test_two_bundles_get_two_names_and_a_clash_is_refused(ga4: Path, tmp_path: Path) -> None:
    other = Path(shutil.copytree(ga4, tmp_path / "web"))
    _, err = over_stdio("serve", str(ga4), str(other), steps=listing)
    assert "over ga4, web;" in err
    twin = Path(shutil.copytree(ga4, tmp_path / "copy" / "ga4"))
    clash = cli("serve", str(ga4), str(twin))
    assert clash.returncode == 2
    assert clash.stderr.startswith("agentkernel-kb serve: error: Two bundles would both be named")
    assert "--name" in clash.stderr and "Traceback" not in clash.stderr
    named = cli("search", str(twin), "purchasers", "--name", "twin", "-n", "1")
    assert named.returncode == 0, named.stderr
    ask = cli("ask", "purchasers", str(ga4), str(twin), "--name", "a", "--name", "b")
    assert "## a: best matches" in ask.stdout and "## b: best matches" in ask.stdout


def test_the_library_names_an_unnamed_bundle_the_same_way(ga4: Path) -> None:
    from agentkernel.knowledgebase import LocalDocumentStore, OKFManager
    from agentkernel.storage.base import bundle_name

    kb = OKFManager(LocalDocumentStore(ga4, writable=False), refresh_seconds=None)
    assert kb.backend_name == "ga4"
    assert bundle_name("s3://bucket/bundles/ga4/") == "ga4"
    assert bundle_name("s3://bucket") == "bucket"
    assert bundle_name("file:///srv/kb") == "kb"


# -- 3. the URL over HTTP, and log flags -----------------------------------------------------


@pytest.fixture
def http_serve() -> Iterator[Any]:
    procs: list[subprocess.Popen[str]] = []

    def start(*args: str) -> tuple[str, list[str]]:
        proc = subprocess.Popen(
            [str(SCRIPT), "serve", *args, "--http", "127.0.0.1:0"],
            stdout=subprocess.DEVNULL,
            stderr=subprocess.PIPE,
            text=True,
        )
        procs.append(proc)
        lines: list[str] = []
        first: queue.Queue[str] = queue.Queue()

        def drain() -> None:
            assert proc.stderr is not None
            for line in proc.stderr:
                lines.append(line)
                first.put(line)
            first.put("")

        threading.Thread(target=drain, daemon=True).start()
        return first.get(timeout=60), lines

    yield start
    for proc in procs:
        proc.terminate()
        proc.wait(timeout=30)


def test_http_on_port_0_prints_the_url_it_listens_on(ga4: Path, http_serve: Any) -> None:
    line, lines = http_serve(str(ga4))
    match = _URL.match(line)
    assert match, line
    assert "read-only: pass --writable to offer write_kb; " in line
    assert line.rstrip().endswith("; authentication off (loopback only); audit: off)")

    async def run() -> list[str]:
        async with http_session(match.group(1)) as session:
            return list(await tools(session))

    assert "search_kb" in anyio.run(run)
    assert len(lines) == 1, lines  # one line, and the default log level adds none


def test_log_level_does_what_the_help_says(ga4: Path) -> None:
    _, quiet = over_stdio("serve", str(ga4), steps=listing)
    assert "INFO" not in quiet
    _, chatty = over_stdio("serve", str(ga4), "--log-level", "INFO", steps=listing)
    assert "INFO agentkernel.mcp.server: Serving MCP" in chatty
    bad = cli("serve", str(ga4), "--log-level", "LOUD")
    assert bad.returncode == 2 and "invalid choice: 'LOUD'" in bad.stderr
    helped = cli("serve", "--help").stdout
    assert "default WARNING" in helped and "--writable" in helped
