"""Run ``agentkernel.cli.main`` (what the console script runs) in this process, as a user would."""

from __future__ import annotations

import pytest

from agentkernel.cli import main


def run_cli(argv: list[str], capsys: pytest.CaptureFixture[str]) -> tuple[int, str, str]:
    """The exit status (argparse's usage errors included), stdout and stderr of one command."""
    try:
        status = main(argv)
    except SystemExit as exc:  # argparse's usage errors
        status = int(exc.code or 0)
    out, err = capsys.readouterr()
    return status, out, err
