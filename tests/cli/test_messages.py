"""What ``agentkernel-kb`` and the examples print when something is wrong, or missing.

Real: the console script and the example demos in subprocesses, on the shared bundles (read in
place) and temporary bundles. A missing extra is a real failed import: a ``sitecustomize``
on the child's path refuses to import the named packages, as if they were not installed. The
closed pipe is a real pipe whose reading end is closed before the command writes.
"""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

from tests.support import REPO, okf_bundle, require_extra

ROOT = REPO
EXAMPLES = ROOT / "examples" / "cli" / "knowledgebase" / "openai"
SCRIPT = Path(sys.executable).parent / "agentkernel-kb"

_BLOCKER = """
import os, sys
_BLOCKED = tuple(filter(None, os.environ.get("AK_TEST_BLOCK", "").split(",")))
class _Refuse:
    def find_spec(self, name, path=None, target=None):
        if any(name == b or name.startswith(b + ".") for b in _BLOCKED):
            raise ModuleNotFoundError(f"No module named {name!r}", name=name)
        return None
sys.meta_path.insert(0, _Refuse())
"""


@pytest.fixture
def without(tmp_path: Path) -> dict[str, str]:
    """An environment whose Python refuses to import ``AK_TEST_BLOCK``'s packages."""
    site = tmp_path / "site"
    site.mkdir()
    (site / "sitecustomize.py").write_text(_BLOCKER)
    env = {k: v for k, v in os.environ.items() if k != "OPENAI_API_KEY"}
    env["PYTHONPATH"] = os.pathsep.join(filter(None, [str(site), env.get("PYTHONPATH", "")]))
    return env


def run(
    *args: str, env: dict[str, str] | None = None, block: str = ""
) -> subprocess.CompletedProcess[str]:
    environment = dict(env) if env is not None else dict(os.environ)
    environment.pop("OPENAI_API_KEY", None)
    environment["AK_TEST_BLOCK"] = block
    command = [str(SCRIPT), *args] if not args[0].endswith(".py") else [sys.executable, *args]
    return subprocess.run(
        command, capture_output=True, text=True, timeout=300, env=environment, cwd=ROOT
    )


def one_line(result: subprocess.CompletedProcess[str]) -> str:
    assert "Traceback" not in result.stderr, result.stderr[-2000:]
    lines = result.stderr.strip().splitlines()
    assert len(lines) == 1, result.stderr
    return lines[0]


@pytest.fixture
def ga4() -> Path:
    return okf_bundle("ga4")


# -- 4. expected failures: one line, exit 2; the unexpected keeps its traceback under -v ----


def test_a_model_without_a_key_is_one_line(ga4: Path) -> None:
    require_extra("agents", "openai")
    result = run("ask", "purchasers?", str(ga4), "--model", "gpt-4.1-mini")
    assert result.returncode == 2
    assert one_line(result) == (
        "agentkernel-kb ask: error: the model needs a valid OpenAI API key: set "
        "OPENAI_API_KEY (or run without --model for a retrieval-only answer)"
    )


@pytest.mark.parametrize(
    ("args", "block", "extra"),
    [
        (("serve", "{ga4}"), "mcp", "mcp"),
        (("ask", "q", "{ga4}", "--model", "x"), "agents", "openai"),
        (("search", "s3://bucket/kb", "q"), "boto3", "aws"),
        (("store", "serve", "{tmp}"), "mcp", "mcp"),
    ],
    ids=["serve-mcp", "ask-openai", "s3-aws", "store-mcp"],
)
def test_a_missing_extra_names_the_extra(
    args: tuple[str, ...],
    block: str,
    extra: str,
    without: dict[str, str],
    ga4: Path,
    tmp_path: Path,
) -> None:
    filled = [a.format(ga4=ga4, tmp=tmp_path) for a in args]
    result = run(*filled, env=without, block=block)
    assert result.returncode == 2
    assert one_line(result).endswith(f"pip install 'agentkernel[{extra}]'")


@pytest.mark.parametrize(
    ("target", "message"),
    [
        ("/nonexistent/bundle", "Document store root '/nonexistent/bundle' does not exist."),
        ("s3:/nobucket", "An S3 URI needs 's3://bucket/prefix'"),
        ("ftp://host/kb", "Unknown document store scheme 'ftp'"),
        ("python:nowhere.Store", "Cannot import module 'nowhere'"),
    ],
)
def test_a_bad_path_or_uri_is_one_line(target: str, message: str) -> None:
    for command in (("schema", target), ("search", target, "q"), ("ask", "q", target)):
        result = run(*command)
        assert result.returncode == 2, (command, result.stderr)
        line = one_line(result)
        assert line.startswith(f"agentkernel-kb {command[0]}: error: ") and message in line


def test_an_unexpected_error_is_one_line_and_a_traceback_under_v(tmp_path: Path) -> None:
    (tmp_path / "exploding.py").write_text(
        "from agentkernel.storage.local import LocalDocumentStore\n"
        "class Store(LocalDocumentStore):\n"
        "    def __init__(self, **kwargs):\n"
        "        raise RuntimeError('the disk is on fire')\n"
    )
    env = dict(os.environ)
    env["PYTHONPATH"] = os.pathsep.join(filter(None, [str(tmp_path), env.get("PYTHONPATH")]))
    plain = run("schema", "python:exploding.Store", env=env)
    assert plain.returncode == 1
    assert one_line(plain) == (
        "agentkernel-kb schema: unexpected error: RuntimeError: the disk is on fire "
        "(run with -v for the traceback)"
    )
    verbose = run("-v", "schema", "python:exploding.Store", env=env)
    assert verbose.returncode == 1
    assert "Traceback" in verbose.stderr and "the disk is on fire" in verbose.stderr


def test_the_starburst_demo_names_the_extras_its_readme_names(without: dict[str, str]) -> None:
    readme = (EXAMPLES / "starburst" / "README.md").read_text(encoding="utf-8")
    assert "pip install 'agentkernel[trino,openai]'" in readme
    env = dict(without, OPENAI_API_KEY="sk-test")
    result = subprocess.run(
        [sys.executable, str(EXAMPLES / "starburst" / "demo.py")],
        capture_output=True,
        text=True,
        timeout=120,
        env={**env, "AK_TEST_BLOCK": "trino,sqlglot"},
        cwd=ROOT,
    )
    assert result.returncode == 2
    assert one_line(result).endswith(
        "is not installed: pip install 'agentkernel[trino,openai]' (see this demo's README.md)"
    )


def test_the_okf_demo_with_a_model_and_no_key_is_one_line() -> None:
    require_extra("agents", "openai")
    result = run(str(EXAMPLES / "okf" / "demo.py"), "--model", "gpt-4.1-mini")
    assert result.returncode == 2
    assert one_line(result).startswith("the model needs a valid OpenAI API key")
    missing = run(str(EXAMPLES / "okf" / "demo.py"), "--bundle", "/nonexistent")
    assert missing.returncode == 2
    assert one_line(missing) == "Document store root '/nonexistent' does not exist."


# -- 5. diagnostics where the user looks ----------------------------------------------------


@pytest.fixture
def plain(tmp_path: Path) -> Path:
    """Eight markdown files without frontmatter, and one concept."""
    root = tmp_path / "plain"
    root.mkdir()
    for n in range(8):
        (root / f"note{n}.md").write_text(f"# Note {n}\nsome text\n")
    (root / "ok.md").write_text("---\ntype: Note\ntitle: Fine\n---\nfine text\n")
    return root


def test_search_schema_and_ask_say_how_many_files_were_skipped(plain: Path) -> None:
    expected = (
        "plain: 8 file(s) skipped (8 no YAML frontmatter); run 'agentkernel-kb check "
        f"{plain.resolve()}' to see each file and the rule it breaks"
    )
    for command in (("search", str(plain), "note", "--lexical"), ("schema", str(plain))):
        result = run(*command)
        lines = result.stderr.strip().splitlines()
        assert result.returncode == 0 and expected in lines, result.stderr
    asked = run("ask", "note", str(plain), "--lexical")
    assert asked.returncode == 0 and one_line(asked) == expected
    clean = run("search", str(okf_bundle("ga4")), "purchasers", "--lexical")
    assert clean.returncode == 0 and clean.stderr == "ga4: search is lexical (BM25F)\n"


def test_check_on_a_folder_without_concepts_says_there_is_nothing_to_check(
    tmp_path: Path,
) -> None:
    result = run("check", str(tmp_path))
    assert result.returncode == 1  # found nothing: the command line's rule
    first = result.stdout.splitlines()[0]
    assert first == f"{tmp_path}: nothing to check: no concepts (no .md file with YAML frontmatter)"
    assert "conformant" not in result.stdout
    assert "warning (bundle): no concept documents" in result.stdout
    assert "(OKF 0.2 §3, §4)" in result.stdout and "0 error(s), 1 warning(s)" in result.stdout


def test_a_busy_port_names_the_address_and_what_to_do(ga4: Path) -> None:
    import socket

    with socket.socket() as taken:
        taken.bind(("127.0.0.1", 0))
        taken.listen()
        address = f"127.0.0.1:{taken.getsockname()[1]}"
        result = run("serve", str(ga4), "--lexical", "--http", address)
    assert result.returncode == 2
    assert one_line(result) == (
        f"agentkernel-kb serve: error: cannot listen on {address}: the port is already in use "
        "(another server is listening there). Stop that server, or choose another port with "
        "--http HOST:PORT (:0 takes any free port)."
    )


def test_check_states_the_rule_and_cites_the_section(tmp_path: Path) -> None:
    (tmp_path / "a.md").write_text("---\ntype: Note\ntitle: A\n---\nbody\n")
    (tmp_path / "log.md").write_text("---\ntitle: Log\n---\n# Log\n\n## 2026-01-02\n* x\n")
    (tmp_path / "b.md").write_text("no frontmatter\n")
    result = run("check", str(tmp_path))
    assert result.returncode == 1
    out = " ".join(result.stdout.split())
    assert (
        "error log.md: log.md must not carry frontmatter, and this one does: a log file is "
        "only date-grouped entries (OKF 0.2 §9, conformance rule §11.3)"
    ) in out
    assert "every non-reserved .md file must open with parseable YAML frontmatter" in out
    assert "(OKF 0.2 §4.1, conformance rule §11.1)" in out


def test_fetch_and_browse_of_nothing_say_so_once_and_exit_1(ga4: Path) -> None:
    fetched = run("fetch", str(ga4), "nope/missing")
    assert fetched.returncode == 1 and fetched.stdout == ""
    assert one_line(fetched).startswith("Not found: nope/missing (")
    browsed = run("browse", str(ga4), "nosuchdir")
    assert browsed.returncode == 1 and browsed.stdout == ""
    assert one_line(browsed).startswith("Nothing at directory or concept 'nosuchdir'")
    found = run("browse", str(ga4), "tables")
    assert found.returncode == 0 and found.stderr == ""


# -- 8. a closed pipe --------------------------------------------------------------------------


def test_a_reader_that_closes_the_pipe_ends_the_command_quietly(ga4: Path) -> None:
    env = dict(os.environ)
    for command in (
        ("browse", str(ga4)),
        ("fetch", str(ga4), "tables/events_"),
        ("check", str(ga4)),
    ):
        proc = subprocess.Popen(
            [str(SCRIPT), *command],
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            env=env,
        )
        assert proc.stdout is not None and proc.stderr is not None
        proc.stdout.close()  # the reader is gone before a byte is written, like `| head -0`
        err = proc.stderr.read().decode()
        proc.wait(timeout=120)
        assert err == "", (command, err)
