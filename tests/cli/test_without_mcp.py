"""Without the ``mcp`` extra, ``serve --help`` still lists every option; serving names the extra.

Real: a fresh interpreter runs ``agentkernel.cli.main`` (what the console script runs) with an
import hook refusing ``mcp`` (the SDK is installed here, so it is hidden rather than removed);
its help is compared with the same command's help where the SDK imports.
"""

from __future__ import annotations

import re
import subprocess
import sys
from pathlib import Path

import pytest

from tests.support import okf_bundle

HIDE_MCP = """
import importlib.abc, sys
class Hide(importlib.abc.MetaPathFinder):
    def find_spec(self, name, path=None, target=None):
        if name == "mcp" or name.startswith("mcp."):
            raise ImportError(f"No module named {name!r}")
        return None
if sys.argv[1] == "hide":
    sys.meta_path.insert(0, Hide())
from agentkernel.cli import main
sys.exit(main(sys.argv[2:]))
"""
EXTRA = "requires the 'mcp' extra (mcp is not installed): pip install 'agentkernel[mcp]'"


def _cli(mode: str, *argv: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-c", HIDE_MCP, mode, *argv],
        capture_output=True,
        text=True,
        check=False,
        stdin=subprocess.DEVNULL,
        timeout=120,
    )


def _options(text: str) -> set[str]:
    return set(re.findall(r"(?<![\w-])--[a-z][a-z-]+", text))


@pytest.mark.parametrize("command", [["serve"], ["store", "serve"]])
def test_help_without_the_extra_lists_every_option(command: list[str]) -> None:
    hidden, shown = _cli("hide", *command, "--help"), _cli("show", *command, "--help")
    assert hidden.returncode == shown.returncode == 0
    assert _options(hidden.stdout) == _options(shown.stdout)
    assert {"--http", "--writable", "--auth-tokens", "--tls-cert"} <= _options(hidden.stdout)


@pytest.mark.parametrize(
    "command", [["serve", str(okf_bundle("ga4")), "--http", ":0"], ["store", "serve", "KB"]]
)
def test_serving_without_the_extra_names_it(command: list[str], tmp_path: Path) -> None:
    argv = [str(tmp_path / "kb") if word == "KB" else word for word in command]
    done = _cli("hide", *argv)
    assert done.returncode == 2 and done.stdout == ""
    assert done.stderr.strip().endswith(EXTRA), done.stderr
    assert len(done.stderr.strip().splitlines()) == 1
    assert not (tmp_path / "kb").exists()  # refused before anything was opened
