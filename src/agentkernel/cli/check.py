"""``check PATH|URI``: is a bundle conformant OKF 0.2, and what else should its curator fix?

Exit status 1 when the bundle breaks a conformance rule, 0 otherwise (warnings included).
``--json`` prints the report as one JSON document for machines.
"""

from __future__ import annotations

import argparse
import json
import sys
from typing import Any

_PROGRESS_FROM = 500  # documents; smaller bundles finish before a bar is worth drawing


def register(subparsers: Any) -> None:
    """Register the ``check`` subcommand.

    Args:
        subparsers: The top-level parser's subparsers.
    """
    parser = subparsers.add_parser("check", help="OKF conformance report for a bundle")
    parser.add_argument("bundle", metavar="PATH|URI", help="a directory or s3://bucket/prefix")
    parser.add_argument("--json", action="store_true", help="print the report as JSON")
    parser.set_defaults(handler=run)


def run(args: argparse.Namespace) -> int:
    """Check the bundle and print the report.

    Args:
        args: The parsed arguments.

    Returns:
        1 when the bundle is not conformant, else 0.
    """
    from rich.console import Console

    from agentkernel.knowledgebase.okf.conformance import check_bundle
    from agentkernel.storage.base import DocumentStore

    store = DocumentStore.from_uri(args.bundle, writable=False)
    err = Console(stderr=True)
    if args.json or not err.is_terminal:
        report = check_bundle(store)
    else:
        report = _with_progress(store, err, check_bundle)
    if args.json:
        json.dump(report.as_dict(), sys.stdout, indent=2)
        sys.stdout.write("\n")
    else:
        _print_report(report, Console(highlight=False, soft_wrap=True))
    return 0 if report.conformant else 1


def _with_progress(store: Any, console: Any, check: Any) -> Any:
    from rich.progress import Progress

    with Progress(console=console, transient=True) as progress:
        task = progress.add_task("Checking documents", total=None, visible=False)

        def advance(done: int, total: int) -> None:
            if total >= _PROGRESS_FROM:
                progress.update(task, completed=done, total=total, visible=True)

        return check(store, progress=advance)


def _print_report(report: Any, console: Any) -> None:
    from rich.markup import escape

    verdict = "[green]conformant[/]" if report.conformant else "[red]NOT conformant[/]"
    version = f", declares okf_version {report.okf_version}" if report.okf_version else ""
    console.print(f"{escape(report.location)}: {verdict} OKF 0.2{version}")
    console.print(f"{report.concepts} concepts, {report.reserved} reserved files")
    if report.types:
        types = ", ".join(f"{t} {n}" for t, n in report.types.most_common())
        console.print(escape(f"types: {types}"))
        console.print("trust: " + ", ".join(f"{t} {n}" for t, n in report.trust.most_common()))
    if report.stale:
        console.print(escape(f"stale ({len(report.stale)}): " + ", ".join(report.stale)))
    for finding in report.findings:
        colour = "red" if finding.level == "error" else "yellow"
        where = escape(finding.path or "(bundle)")
        console.print(f"[{colour}]{finding.level}[/] {where}: {escape(finding.message)}")
    console.print(f"{len(report.errors)} error(s), {len(report.warnings)} warning(s)")
