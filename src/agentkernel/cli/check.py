"""``check PATH|URI``: is a bundle conformant OKF 0.2, and what else should its curator fix?

Exit status 1 when the bundle breaks a conformance rule or holds no concept at all (nothing
was checked: an empty folder, or not the bundle's root), 0 otherwise (warnings included).
``--json`` prints the report as one JSON document for machines. Every timestamp that is not an
ISO 8601 datetime with an offset is a warning naming its file, key and fix; ``--legacy-dates``
judges staleness as ``OKFManager(legacy_dates=True)`` serves it (bare dates as midnight UTC).
"""

from __future__ import annotations

import argparse
import json
import sys
from typing import Any

from agentkernel.cli._bundle import BUNDLE_HELP
from agentkernel.cli._options import subcommand


def _arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("bundle", metavar="PATH|URI", help=BUNDLE_HELP)
    parser.add_argument("--json", action="store_true", help="print the report as JSON")
    parser.add_argument(
        "--legacy-dates",
        action="store_true",
        help="judge staleness reading a bare-date stale_after (2026-09-23) as midnight UTC, "
        "as a server configured with legacy_dates does (still warned about)",
    )


def run(args: argparse.Namespace) -> int:
    """Check the bundle and print the report.

    Args:
        args: The parsed arguments.

    Returns:
        1 when the bundle is not conformant or holds no concept, else 0.
    """
    from rich.console import Console

    from agentkernel.cli._progress import progress_bar
    from agentkernel.knowledgebase.okf.conformance import check_bundle
    from agentkernel.storage.base import DocumentStore

    store = DocumentStore.from_uri(args.bundle, writable=False)
    with progress_bar("Checking documents", show=not args.json, from_total=500) as update:
        report = check_bundle(store, progress=update, legacy_dates=args.legacy_dates)
    if args.json:
        json.dump(report.as_dict(), sys.stdout, indent=2)
        sys.stdout.write("\n")
    else:
        _print_report(report, Console(highlight=False, soft_wrap=True))
    return 0 if report.conformant and report.concepts else 1


def _print_report(report: Any, console: Any) -> None:
    from rich.markup import escape

    version = f", declares okf_version {report.okf_version}" if report.okf_version else ""
    if not report.concepts:  # an empty folder conforms vacuously: say what was found instead
        verdict = "[red]nothing to check[/]: no concepts (no .md file with YAML frontmatter)"
    elif report.conformant:
        verdict = f"[green]conformant[/] OKF 0.2{version}"
    else:
        verdict = f"[red]NOT conformant[/] OKF 0.2{version}"
    console.print(f"{escape(report.location)}: {verdict}")
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


register = subcommand("check", run, _arguments, help="OKF conformance report for a bundle")
