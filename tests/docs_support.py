"""What the checks of the docs' non-script blocks share: a working folder, commands, servers.

Nothing here is a double. A :class:`Workdir` is a temporary folder holding copies of the
example OKF bundle under the names the docs use (``./bundle``, ``./kb``) and an empty curated
store (``./knowledge``); commands run there through the installed ``agentkernel-kb`` and this
interpreter; servers are real processes probed by the mcp SDK's own clients (stdio and
streamable HTTP) and stopped afterwards.
"""

from __future__ import annotations

import os
import queue
import re
import shlex
import shutil
import subprocess
import sys
import threading
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parent.parent
EXAMPLE_BUNDLE = ROOT / "examples" / "cli" / "knowledgebase" / "openai" / "okf" / "bundle"
BIN = Path(sys.executable).parent
STARTUP = re.compile(r"^Serving MCP '[^']+' (?:at (https?://\S+) |on stdio)")
TIMEOUT = 300


@dataclass
class Workdir:
    """A folder the docs' relative paths resolve in, and the environment commands get.

    ``paths`` maps an absolute path a page names (``/etc/agentkernel``) to a folder here: the
    only rewriting a command undergoes, applied by :meth:`sub` and undone by :meth:`unsub`
    on what it prints.
    """

    path: Path
    env: dict[str, str]
    paths: dict[str, str] = field(default_factory=dict)

    @classmethod
    def make(cls, root: Path) -> Workdir:
        root.mkdir(parents=True, exist_ok=True)
        for name in ("bundle", "kb"):
            shutil.copytree(EXAMPLE_BUNDLE, root / name)
        (root / "examples").symlink_to(ROOT / "examples")
        env = dict(os.environ)
        env["PATH"] = str(BIN) + os.pathsep + env.get("PATH", "")
        env["TMPDIR"] = str(root)
        env["XDG_CACHE_HOME"] = str(root / ".cache")  # vector caches stay in the folder
        env["PYTHONPATH"] = os.pathsep.join([str(root), str(ROOT), env.get("PYTHONPATH", "")])
        env.pop("OPENAI_API_KEY", None)
        return cls(root, env)

    def map(self, absolute: str, name: str) -> Path:
        """Stand the folder ``name`` here in for ``absolute`` in commands and outputs."""
        target = self.path / name
        target.mkdir(parents=True, exist_ok=True)
        self.paths[absolute] = str(target)
        return target

    def sub(self, text: str) -> str:
        for absolute, here in self.paths.items():
            text = text.replace(absolute, here)
        return text

    def unsub(self, text: str) -> str:
        for absolute, here in self.paths.items():
            text = text.replace(here, absolute)
        return text

    def argv(self, command: str) -> list[str]:
        """A doc's command line as the argv that runs it here (``agentkernel-kb``, ``python``)."""
        words = shlex.split(self.sub(command), comments=True)
        assert words, command
        if words[0] == "python":
            words[0] = sys.executable
        elif words[0] == "agentkernel-kb":
            words[0] = str(BIN / "agentkernel-kb")
        return words

    def run(self, command: str, *, expect: int = 0) -> subprocess.CompletedProcess[str]:
        """Run one command line of a page; it must exit ``expect``."""
        done = subprocess.run(
            self.argv(command),
            cwd=self.path,
            env=self.env,
            capture_output=True,
            text=True,
            timeout=TIMEOUT,
            stdin=subprocess.DEVNULL,
            check=False,
        )
        assert done.returncode == expect, (
            f"{command!r} exited {done.returncode}, not {expect}\n--- stdout\n"
            f"{done.stdout[-3000:]}\n--- stderr\n{done.stderr[-3000:]}"
        )
        return done

    def run_python(self, source: str) -> subprocess.CompletedProcess[str]:
        script = self.path / "block.py"
        script.write_text(self.sub(source), encoding="utf-8")
        return self.run(f"python {script}")


def shell_lines(body: str) -> list[str]:
    """The commands of a shell block: comments and blank lines dropped, ``\\`` lines joined."""
    joined = body.replace("\\\n", " ")
    lines = []
    for raw in joined.splitlines():
        line = raw.strip()
        if line and not line.startswith("#"):
            lines.append(line)
    return lines


@dataclass
class Served:
    """A server process started from a page's command line, until the ``with`` ends."""

    proc: subprocess.Popen[str]
    url: str | None
    startup: str
    stderr: list[str]


@contextmanager
def serving(work: Workdir, command: str, timeout: float = 120.0) -> Iterator[Served]:
    """Start an HTTP server command; yield once its startup line names the URL; stop it."""
    proc = subprocess.Popen(
        work.argv(command),
        cwd=work.path,
        env=work.env,
        stdin=subprocess.DEVNULL,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.PIPE,
        text=True,
    )
    found: queue.Queue[str | None] = queue.Queue()
    lines: list[str] = []

    def drain() -> None:
        assert proc.stderr is not None
        for line in proc.stderr:
            lines.append(line)
            if STARTUP.match(line):
                found.put(line.rstrip("\n"))
        found.put(None)

    threading.Thread(target=drain, daemon=True).start()
    try:
        try:
            startup = found.get(timeout=timeout)
        except queue.Empty:
            startup = None
        assert startup is not None, f"{command!r} did not start:\n{''.join(lines)[-3000:]}"
        match = STARTUP.match(startup)
        assert match is not None
        yield Served(proc, match.group(1), startup, lines)
    finally:
        proc.terminate()
        try:
            proc.wait(timeout=20)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.wait(timeout=20)


def stdio_tools(work: Workdir, command: str) -> tuple[list[str], str]:
    """Start a stdio server command under the mcp SDK's client; its tools and startup line."""
    import anyio
    from mcp import ClientSession
    from mcp.client.stdio import StdioServerParameters, stdio_client

    argv = work.argv(command)
    params = StdioServerParameters(command=argv[0], args=argv[1:], env=work.env, cwd=work.path)
    log = work.path / "stdio-stderr.txt"

    async def run() -> list[str]:
        with log.open("w", encoding="utf-8") as errlog:
            async with (
                stdio_client(params, errlog=errlog) as (read, write),
                ClientSession(read, write) as session,
            ):
                await session.initialize()
                return [tool.name for tool in (await session.list_tools()).tools]

    names = anyio.run(run)
    startup = [line for line in log.read_text().splitlines() if STARTUP.match(line)]
    assert startup, f"{command!r}: no startup line on stderr:\n{log.read_text()[-2000:]}"
    return names, startup[0]


def http_tools(url: str, headers: dict[str, str] | None = None, verify: Any = True) -> list[str]:
    """List the tools of a streamable-HTTP server with the mcp SDK's client."""
    import anyio
    import httpx
    from mcp import ClientSession
    from mcp.client.streamable_http import streamable_http_client

    async def run() -> list[str]:
        async with (
            httpx.AsyncClient(headers=headers or {}, verify=verify, timeout=60) as http,
            streamable_http_client(url, http_client=http) as streams,
            ClientSession(streams[0], streams[1]) as session,
        ):
            await session.initialize()
            return [tool.name for tool in (await session.list_tools()).tools]

    return anyio.run(run)


def probe(work: Workdir, command: str) -> tuple[list[str], str]:
    """Start a serving command (stdio or ``--http``), list its tools, stop it.

    Returns:
        The tool names and the startup line.
    """
    if "--http" not in shlex.split(command, comments=True):
        return stdio_tools(work, command)
    with serving(work, command) as served:
        assert served.url is not None
        return http_tools(served.url), served.startup
