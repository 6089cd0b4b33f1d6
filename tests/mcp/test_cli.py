"""``python -m agentkernel.mcp``: argument parsing and configuration mistakes.

Real: the module's ``main`` run in process (it fails before serving), and the factory
modules of ``tests/mcp/factories.py`` imported the way the server imports them.
"""

from __future__ import annotations

import argparse

import pytest

from tests.support import require_extra

require_extra("mcp", "mcp")

from agentkernel.cli.serving import (  # noqa: E402
    add_serve_arguments,
    builder_from_args,
    main,
    parse_http,
)
from agentkernel.errors import AKConfigError  # noqa: E402


@pytest.mark.parametrize(
    ("argv", "message"),
    [
        ([], "Name what to serve: --bundle PATH_OR_URI or --factory MODULE:FUNCTION."),
        (["--factory", "tests.mcp.nowhere:make"], "cannot import 'tests.mcp.nowhere'"),
        (["--factory", "tests.mcp.factories"], "--factory takes MODULE:FUNCTION"),
        (["--factory", "tests.mcp.factories:nothing"], "has no function 'nothing'"),
        (["--factory", "tests.mcp.factories:not_backends"], "must return a KnowledgeBuilder"),
        (
            ["--factory", "tests.mcp.factories:exploding"],
            "RuntimeError: cannot reach the warehouse",
        ),
        (["--bundle", "/nonexistent/bundle"], "cannot be opened"),
        (
            ["--factory", "tests.mcp.factories:mixed", "--http", "localhost"],
            "--http takes HOST:PORT",
        ),
    ],
)
def test_configuration_mistakes_exit_2_with_a_message(
    argv: list[str], message: str, capsys: pytest.CaptureFixture[str]
) -> None:
    with pytest.raises(SystemExit) as exited:
        main(argv)
    assert exited.value.code == 2
    assert message in capsys.readouterr().err


def test_bundle_and_factory_are_exclusive(capsys: pytest.CaptureFixture[str]) -> None:
    with pytest.raises(SystemExit):
        main(["--bundle", "x", "--factory", "a:b"])
    assert "not allowed with argument" in capsys.readouterr().err


def test_parse_http() -> None:
    assert parse_http("127.0.0.1:8765") == ("127.0.0.1", 8765)
    assert parse_http("[::1]:0") == ("::1", 0)
    with pytest.raises(AKConfigError):
        parse_http("127.0.0.1:99999")


def test_another_command_can_add_a_source_and_reuse_the_options() -> None:
    parser = argparse.ArgumentParser()
    sources = add_serve_arguments(parser)
    sources.add_argument("--config")
    args = parser.parse_args(["--config", "kb.yaml", "--read-only", "--http", "0.0.0.0:80"])
    assert (args.config, args.read_only, args.http, args.bundle) == (
        "kb.yaml",
        True,
        "0.0.0.0:80",
        None,
    )
    args = parser.parse_args(["--factory", "tests.mcp.factories:search_only"])
    assert list(builder_from_args(args).backends) == ["Vectors"]
