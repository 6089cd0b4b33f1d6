"""The ``agentkernel-kb`` parser and entry point: every subcommand, errors as exit codes."""

from __future__ import annotations

import argparse
import errno
import importlib
import logging
import os
import sys
from collections.abc import Sequence

__all__ = ["build_parser", "main"]

# subcommand modules, in the order --help lists them
_COMMANDS = ("check", "bundle", "compute", "ask", "serve", "view", "store", "index", "embed")


def build_parser() -> argparse.ArgumentParser:
    """Build the argument parser with every subcommand registered.

    Returns:
        The top-level parser.
    """
    parser = argparse.ArgumentParser(
        prog="agentkernel-kb",
        description="Inspect, query, serve and view knowledge bases (OKF bundles and more).",
    )
    parser.add_argument("-v", "--verbose", action="store_true", help="log at INFO level")
    from agentkernel import __version__

    parser.add_argument("--version", action="version", version=f"%(prog)s {__version__}")
    subparsers = parser.add_subparsers(dest="command", metavar="COMMAND", required=True)
    for name in _COMMANDS:
        try:
            module = importlib.import_module(f"agentkernel.cli.{name}")
        except ModuleNotFoundError as exc:
            if exc.name != f"agentkernel.cli.{name}":
                raise
            continue
        module.register(subparsers)
    return parser


def main(argv: Sequence[str] | None = None) -> int:
    """Run the command line.

    An expected failure (a bad path or URI, a missing extra or key, a configuration mistake)
    prints one line saying what to do and exits 2; anything else prints one line too, with
    the traceback under ``-v``. A reader that closes the pipe early (``... | head``) ends
    the command quietly.

    Args:
        argv: Arguments without the program name; ``sys.argv[1:]`` when ``None``.

    Returns:
        The exit status: 0 on success, 1 when the command found errors (or nothing), 2 on
        bad usage or configuration.
    """
    # The command is its own process: BLAS on the calling thread, unless the user says
    # otherwise. A multi-threaded BLAS spins for cores a busy machine does not have (the
    # default embedder then spent 3-4x its CPU: bench/RESULTS.md, issue 26); the embedder
    # splits a large batch over its own threads instead. Takes effect before numpy loads.
    os.environ.setdefault("OPENBLAS_NUM_THREADS", "1")
    # ... and the allocator settings of a serving pod, before pyarrow loads (the library
    # leaves them to the program that imports it)
    from agentkernel.cli._allocator import tune_process

    tune_process()
    parser = build_parser()
    args = parser.parse_args(argv)
    logging.basicConfig(
        level=logging.INFO if args.verbose else logging.WARNING,
        format="%(levelname)s %(name)s: %(message)s",
        stream=sys.stderr,
    )
    if args.command == "serve":
        # a server loads in the background: its progress lines show at any log level (a
        # one-shot command draws its bar instead)
        from agentkernel.knowledgebase.model import PROGRESS_LOGGER

        logging.getLogger(PROGRESS_LOGGER).setLevel(logging.INFO)
    from agentkernel.cli._progress import EmbeddingProgress
    from agentkernel.errors import AKError
    from agentkernel.knowledgebase.errors import KnowledgeError
    from agentkernel.retrieval.semantic import reporting

    try:
        with reporting(EmbeddingProgress(show=not getattr(args, "quiet", False))):
            status: int = args.handler(args)
        sys.stdout.flush()
    except BrokenPipeError:
        return _closed_pipe()
    except (AKError, KnowledgeError, OSError) as exc:
        print(f"{parser.prog} {args.command}: error: {_said(exc, args)}", file=sys.stderr)
        return 2
    except KeyboardInterrupt:
        return 130
    except Exception as exc:
        if args.verbose:
            raise
        print(
            f"{parser.prog} {args.command}: unexpected error: {type(exc).__name__}: {exc} "
            "(run with -v for the traceback)",
            file=sys.stderr,
        )
        return 1
    return status


def _said(exc: BaseException, args: argparse.Namespace) -> str:
    """An expected failure in words: a busy port names the address and what to do."""
    address = getattr(args, "http", None)
    if isinstance(exc, OSError) and exc.errno == errno.EADDRINUSE and address:
        return (
            f"cannot listen on {address}: the port is already in use (another server is "
            "listening there). Stop that server, or choose another port with --http "
            "HOST:PORT (:0 takes any free port)."
        )
    return str(exc)


def _closed_pipe() -> int:
    # the reader is gone: nothing more can be shown, and the interpreter's own flush at exit
    # would fail again, so stdout is pointed at nothing
    devnull = os.open(os.devnull, os.O_WRONLY)
    os.dup2(devnull, sys.stdout.fileno())
    os.close(devnull)
    return 1


if __name__ == "__main__":  # pragma: no cover
    sys.exit(main())
