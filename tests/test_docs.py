"""Every fenced code block of README.md, CONTRIBUTING.md and docs/*.md runs.

What is real: each ``python`` block runs in a fresh interpreter (this one's) with the repository
root as working directory and ``TMPDIR`` pointing at a fresh temporary directory; each
``sh``/``console``/``bash`` block runs its ``agentkernel-kb ...`` and ``python ...`` command
lines through the installed console script and interpreter and must exit 0; ``yaml`` blocks
are validated by :func:`agentkernel.config.load_config` (and, with an ``okf`` block, by
``OKFCapability``, which checks roles and store types without opening a store); ``json`` blocks
must parse. Blocks marked ``fixture=s3`` run against the real local S3 API server of
``tests/support/fixtures_s3.py`` (boto3 finds it through ``AWS_ENDPOINT_URL``). Nothing is mocked.

The info string after the language carries the flags:

* ``check=<name>``: not a script as it stands (a server that runs until stopped, a command
  that needs a bucket or a database, sample output, an install line, a diagram): exercised by
  the check of that name in ``tests/test_docs_checked.py``, which also fails for any block
  that is neither a script nor named by a check.
* ``chain=<name>``: the page's blocks with the same chain run together as one script, in order.
* ``extra=<extra>``: needs an optional SDK (``tests.support.require_extra``: a skip locally
  when absent, an error under CI or where the nox session installs it); ``crewai`` and ``adk``
  blocks are marked so, and run in those sessions.
* ``fixture=s3``: gets a local S3 server and an empty bucket named ``docs-bucket``.
"""

from __future__ import annotations

import os
import re
import shlex
import subprocess
import sys
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import pytest
import yaml

from tests.support import require_extra

ROOT = Path(__file__).resolve().parent.parent
PAGES = [ROOT / "README.md", ROOT / "CONTRIBUTING.md", *sorted((ROOT / "docs").glob("*.md"))]
RUNNABLE = {"python", "sh", "bash", "console", "yaml", "json"}
SHELL = {"sh", "bash", "console"}
# extra -> a module it installs
EXTRA_MODULES = {
    "chromadb": "chromadb",
    "neo4j": "neo4j",
    "trino": "trino",
    "sql": "sqlalchemy",
    "aws": "boto3",
    "mcp": "mcp",
    "openai": "agents",
    "langgraph": "langgraph",
    "crewai": "crewai",
    "adk": "google.adk",
}
TIMEOUT = 300

_FENCE = re.compile(r"^(`{3,})(.*)$")


@dataclass
class Block:
    page: Path
    line: int
    lang: str
    flags: dict[str, str]
    body: str

    @property
    def where(self) -> str:
        return f"{self.page.relative_to(ROOT)}:{self.line}"


@dataclass
class Case:
    blocks: list[Block] = field(default_factory=list)

    @property
    def first(self) -> Block:
        return self.blocks[0]

    @property
    def id(self) -> str:
        chain = self.first.flags.get("chain")
        suffix = f"[chain {chain}]" if chain else f"[{self.first.lang}]"
        return f"{self.first.where}{suffix}"


def parse_info(info: str) -> tuple[str, dict[str, str]]:
    """Split an info string into the language and its flags."""
    lang, _, rest = info.strip().partition(" ")
    flags: dict[str, str] = {}
    for token in rest.split():
        key, _, value = token.partition("=")
        flags[key] = value
    return lang.lower(), flags


def blocks_of(page: Path) -> list[Block]:
    """Every fenced block of a page, with its opening line number."""
    found: list[Block] = []
    lines = page.read_text(encoding="utf-8").splitlines()
    index = 0
    while index < len(lines):
        match = _FENCE.match(lines[index])
        if not match:
            index += 1
            continue
        fence, info = match.groups()
        start = index
        body: list[str] = []
        index += 1
        while index < len(lines) and not lines[index].startswith(fence):
            body.append(lines[index])
            index += 1
        if index >= len(lines):
            raise AssertionError(f"{page.name}:{start + 1}: unclosed code fence")
        lang, flags = parse_info(info)
        found.append(Block(page, start + 1, lang, flags, "\n".join(body) + "\n"))
        index += 1
    return found


def all_blocks() -> list[Block]:
    return [block for page in PAGES for block in blocks_of(page)]


def cases() -> list[Case]:
    """Runnable cases: one per block, except chained python blocks, one per chain."""
    found: list[Case] = []
    chains: dict[tuple[Path, str], Case] = {}
    for block in all_blocks():
        if "check" in block.flags or block.lang not in RUNNABLE:
            continue
        chain = block.flags.get("chain")
        if chain and block.lang == "python":
            key = (block.page, chain)
            if key not in chains:
                chains[key] = Case()
                found.append(chains[key])
            chains[key].blocks.append(block)
        else:
            found.append(Case([block]))
    return found


# -- the structural checks ---------------------------------------------------------------


def test_the_docs_exist_and_hold_code() -> None:
    names = {page.name for page in PAGES}
    for expected in (
        "architecture.md",
        "custom-backend.md",
        "okf.md",
        "configuration.md",
        "mcp.md",
        "knowledge-store.md",
        "benchmarks.md",
        "frameworks.md",
    ):
        assert expected in names
    assert len(cases()) > 20


def test_flags_are_known() -> None:
    known = {"check", "chain", "extra", "fixture"}
    for block in all_blocks():
        assert set(block.flags) <= known, f"{block.where}: unknown flags {block.flags}"
        extra = block.flags.get("extra")
        if extra is not None:
            assert set(extra.split(",")) <= set(EXTRA_MODULES), f"{block.where}: {extra}"
        if "fixture" in block.flags:
            assert block.flags["fixture"] == "s3", f"{block.where}: unknown fixture"


def test_the_quickstart_is_the_two_make_commands() -> None:
    readme = blocks_of(ROOT / "README.md")
    quickstart = [b for b in readme if "make demo" in b.body]
    assert quickstart, "README.md lost its quickstart"
    commands = [line.split("#")[0].strip() for line in quickstart[0].body.splitlines()]
    assert [c for c in commands if c] == ["make demo", "make test"]


def test_relative_links_between_pages_resolve() -> None:
    broken = []
    for page in PAGES:
        text = page.read_text(encoding="utf-8")
        text = re.sub(r"^(`{3,}).*?^\1", "", text, flags=re.M | re.S)  # code blocks
        text = re.sub(r"`[^`\n]*`", "", text)  # code spans
        for target in re.findall(r"\]\(([^)#\s]+)(?:#[^)]*)?\)", text):
            if "://" in target:
                continue
            if not (page.parent / target).exists():
                broken.append(f"{page.name}: {target}")
    assert not broken


def test_benchmark_tables_are_the_recorded_results() -> None:
    page = (ROOT / "docs" / "benchmarks.md").read_text(encoding="utf-8")
    results = (ROOT / "bench" / "RESULTS.md").read_text(encoding="utf-8")
    section = page.split("## Results", 1)[1].split("\n## ", 1)[0]
    rows = [line for line in section.splitlines() if line.startswith("|")]
    assert len(rows) > 10, "docs/benchmarks.md lost its result tables"
    stale = [row for row in rows if row not in results.splitlines()]
    assert not stale, f"rows not in bench/RESULTS.md (copy the new tables): {stale}"


# -- running the blocks -------------------------------------------------------------------


def _require_extras(block: Block) -> None:
    for extra in filter(None, block.flags.get("extra", "").split(",")):
        require_extra(EXTRA_MODULES[extra], extra)


def _environment(tmp_path: Path, request: pytest.FixtureRequest, case: Case) -> dict[str, str]:
    env = dict(os.environ)
    bindir = str(Path(sys.executable).parent)
    env["PATH"] = bindir + os.pathsep + env.get("PATH", "")
    env["TMPDIR"] = str(tmp_path)
    env["XDG_CACHE_HOME"] = str(tmp_path / ".cache")  # vector caches, per test
    env["PYTHONPATH"] = str(ROOT) + os.pathsep + env.get("PYTHONPATH", "")
    env.pop("AK_CONFIG_PATH_OVERRIDE", None)
    env.pop("OPENAI_API_KEY", None)
    if any(block.flags.get("fixture") == "s3" for block in case.blocks):
        endpoint = request.getfixturevalue("s3_endpoint")
        client = request.getfixturevalue("s3_client")
        existing = [b["Name"] for b in client.list_buckets().get("Buckets", [])]
        if "docs-bucket" in existing:
            listed = client.list_objects_v2(Bucket="docs-bucket").get("Contents", [])
            for item in listed:
                client.delete_object(Bucket="docs-bucket", Key=item["Key"])
        else:
            client.create_bucket(Bucket="docs-bucket")
        env["AWS_ENDPOINT_URL"] = endpoint
        for key in ("AWS_ACCESS_KEY_ID", "AWS_SECRET_ACCESS_KEY", "AWS_DEFAULT_REGION"):
            env[key] = os.environ.get(key, "testing" if "REGION" not in key else "us-east-1")
    return env


def _run(argv: list[str], env: dict[str, str], label: str) -> subprocess.CompletedProcess[str]:
    result = subprocess.run(
        argv,
        cwd=ROOT,
        env=env,
        capture_output=True,
        text=True,
        timeout=TIMEOUT,
        stdin=subprocess.DEVNULL,
        check=False,
    )
    assert result.returncode == 0, (
        f"{label} exited {result.returncode}\n--- stdout\n{result.stdout[-4000:]}"
        f"\n--- stderr\n{result.stderr[-4000:]}"
    )
    return result


def shell_commands(block: Block) -> list[str]:
    """The command lines of a shell block (comments, blank lines and prompts removed)."""
    commands = []
    for raw in block.body.splitlines():
        line = raw.strip()
        if block.lang == "console":
            if not line.startswith("$ "):
                continue  # output
            line = line[2:]
        if not line or line.startswith("#"):
            continue
        commands.append(line)
    return commands


def _run_shell(block: Block, env: dict[str, str]) -> None:
    commands = shell_commands(block)
    assert commands, f"{block.where}: a shell block with no command"
    for command in commands:
        words = shlex.split(command, comments=True)
        assert words and words[0] in ("agentkernel-kb", "python"), (
            f"{block.where}: only 'agentkernel-kb ...' and 'python ...' lines run here; "
            f"name a check ('check=NAME', tests/test_docs_checked.py) for {command!r}"
        )
        if words[0] == "python":
            words[0] = sys.executable
        else:
            words[0] = str(Path(sys.executable).parent / "agentkernel-kb")
        _run(words, env, f"{block.where}: {command}")


def _check_yaml(block: Block) -> None:
    from agentkernel.config import load_config
    from agentkernel.roles import OKFCapability

    data: Any = yaml.safe_load(block.body)
    assert isinstance(data, dict), f"{block.where}: a yaml block must be a config mapping"
    config = load_config(data)
    if config.okf is not None:
        capability = OKFCapability(config.okf, ROOT)
        assert capability.agents(), f"{block.where}: an okf block reaching no agent"


def _param(case: Case) -> Any:
    """The case as a test, marked for the nox session (crewai, adk) that installs its extra."""
    extras = {e for b in case.blocks for e in b.flags.get("extra", "").split(",") if e}
    marks = [pytest.mark.crewai, pytest.mark.adk]
    return pytest.param(case, id=case.id, marks=[m for m in marks if m.name in extras])


@pytest.mark.parametrize("case", [_param(case) for case in cases()])
def test_block_runs(case: Case, tmp_path: Path, request: pytest.FixtureRequest) -> None:
    for block in case.blocks:
        _require_extras(block)
    block = case.first
    if block.lang == "json":
        import json

        json.loads(block.body)
        return
    if block.lang == "yaml":
        _check_yaml(block)
        return
    env = _environment(tmp_path, request, case)
    if block.lang in SHELL:
        _run_shell(block, env)
        return
    script = tmp_path / "block.py"
    parts = [f"# {b.where}\n{b.body}" for b in case.blocks]
    script.write_text("\n".join(parts), encoding="utf-8")
    _run([sys.executable, str(script)], env, case.id)
