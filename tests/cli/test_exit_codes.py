"""One rule for every subcommand: usage errors exit 2, misses and refusals exit 1, on stderr.

What is real: ``agentkernel.cli.main`` (what the console script runs) on the real GA4 bundle,
read in place, with real argument parsing and real bundles; stdout and stderr are the
process's own streams, captured. Nothing is mocked. One case per subcommand at least, and the
test fails when a subcommand is added without one.
"""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

from agentkernel.cli import build_parser
from tests.cli.cli_support import run_cli
from tests.support import okf_bundle

GA4 = str(okf_bundle("ga4"))
MISSING = "/nonexistent/agentkernel/bundle"

# (argv, exit status): 2 = usage (bad arguments, a path that is no bundle), 1 = not found or
# refused by the tool
CASES: list[tuple[list[str], int]] = [
    (["check"], 2),
    (["check", MISSING], 2),
    (["schema", MISSING], 2),
    (["search", GA4, ""], 2),
    (["search", GA4, "purchasers", "-n", "0"], 2),
    (["search", GA4, "purchasers", "-n", "many"], 2),
    (["search", GA4, "purchasers", "-n", "100000"], 2),  # past the tools' most: usage
    (["fetch", GA4, ""], 2),
    (["fetch", GA4, "nope/missing"], 1),
    (["fetch", GA4, "../../../etc/passwd"], 1),
    (["browse", GA4, "../.."], 1),
    (["browse", GA4, "no/such/dir"], 1),
    (["browse", GA4, "-n", "0"], 2),
    (["browse", GA4, "-n", "100000"], 2),
    (["ask", "", GA4], 2),
    (["ask", "purchasers?"], 2),
    (["ask", "purchasers?", GA4, "-n", "0"], 2),
    (["ask", "purchasers?", GA4, "-n", "100000"], 2),
    (["serve", MISSING], 2),
    (["view", GA4], 2),
    (["view", MISSING, "-o", "/nonexistent/dir/page.html"], 2),
    (["store"], 2),
    (["index", GA4], 2),
    (["embed"], 2),
    (["compute", GA4, "computations/revenue"], 2),
    (["compute", MISSING, "x", "--runtime", "sql=sqlite:///nowhere.sqlite"], 2),
    (["compute", GA4, "computations/revenue", "--runtime", "sql=sqlite:///nowhere.sqlite"], 1),
    (["no-such-command"], 2),
]


def test_every_subcommand_has_a_bad_input_case() -> None:
    parser = build_parser()
    commands = set(parser._subparsers._group_actions[0].choices)  # type: ignore[union-attr]
    covered = {argv[0] for argv, _ in CASES}
    assert commands <= covered, f"add a bad-input case for {sorted(commands - covered)}"


@pytest.mark.parametrize(("argv", "status"), CASES, ids=[" ".join(a)[:60] for a, _ in CASES])
def test_a_bad_input_exits_by_the_one_rule(
    argv: list[str], status: int, capsys: pytest.CaptureFixture[str]
) -> None:
    got, out, err = run_cli(argv, capsys)
    assert got == status, f"exit {got}\n--- stdout\n{out[-1500:]}\n--- stderr\n{err[-1500:]}"
    assert err.strip(), "the failure must be said on stderr"
    assert out.strip() == "", f"nothing on stdout for a failure: {out[-500:]!r}"
    assert "Traceback" not in err


def test_a_partial_fetch_prints_what_it_found_and_exits_1(
    capsys: pytest.CaptureFixture[str],
) -> None:
    got, out, err = run_cli(["fetch", GA4, "references/metrics/purchasers,nope"], capsys)
    assert got == 1 and out.startswith("[references/metrics/purchasers]")
    assert err.startswith("Not found: nope (")


LONG_BODY = "".join(f"line {n} of a long note\n" for n in range(3_000))


@pytest.fixture
def long_note(tmp_path: Path) -> Path:
    """A bundle of one note longer than the answer budget."""
    root = tmp_path / "kb"
    root.mkdir()
    (root / "long.md").write_text(
        f"---\ntype: note\ntitle: Long\n---\n{LONG_BODY}", encoding="utf-8"
    )
    return root


def test_a_long_answer_is_cut_unless_full(
    long_note: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    root, body = long_note, LONG_BODY
    got, out, err = run_cli(["fetch", str(root), "long"], capsys)
    assert got == 0 and len(out) <= 20_001 and "[cut] " in out
    assert "--full" in err
    got, out, _ = run_cli(["fetch", str(root), "long", "--full"], capsys)
    assert got == 0 and body.rstrip() in out and "[cut]" not in out
    got, out, _ = run_cli(["ask", "long note", str(root)], capsys)
    assert got == 0 and "[cut] " in out and body.rstrip() not in out
    got, out, _ = run_cli(["ask", "long note", str(root), "--full"], capsys)
    assert got == 0 and body.rstrip() in out and "[cut]" not in out


def test_a_cut_answer_is_said_on_stderr_and_read_on_with_a_command(
    long_note: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    root = long_note
    for argv in (["fetch", str(root), "long"], ["ask", "long note", str(root)]):
        got, out, err = run_cli([*argv, "--lexical"], capsys)
        assert got == 0, err
        (note,) = [line for line in out.splitlines() if line.startswith("[cut] ")]
        assert "fetch_kb(" not in note, note
        reading_on = f"agentkernel-kb fetch {root} 'long#offset="
        assert reading_on in note, note
        assert f"agentkernel-kb {argv[0]}: the answer is cut" in err and "--full" in err
        # the command the note names reads on from where the answer stopped
        ids = note.split(reading_on, 1)[1].split("'", 1)[0]
        got, more, _ = run_cli(["fetch", str(root), f"long#offset={ids}", "--lexical"], capsys)
        start = int(ids)
        assert got == 0 and more.startswith(f"[long#offset={start}] characters {start} to ")


def test_the_console_script_keeps_the_rule() -> None:
    script = Path(sys.executable).parent / "agentkernel-kb"
    result = subprocess.run(
        [str(script), "fetch", GA4, "nope/missing"],
        capture_output=True,
        text=True,
        timeout=300,
        check=False,
    )
    assert result.returncode == 1 and result.stdout == ""
    assert result.stderr.startswith("Not found: nope/missing (")
