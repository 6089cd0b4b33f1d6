"""``compute``: run one of a bundle's Attested Computations, attest it, and show it.

Two ways to say what runs it::

    agentkernel-kb compute PATH CONCEPT --runtime sql=sqlite:///warehouse.sqlite --param year=2024
    agentkernel-kb compute --config FILE [--agent NAME] DATABASE CONCEPT --param year=2024

With a bundle path, ``--runtime NAME=URL`` binds each runtime its computations name (a
SQLAlchemy URL, or ``trino://USER@HOST:PORT/CATALOG/SCHEMA``). With ``--config`` the okf block
binds them (``runtimes``, ``on_stale``, ``attesters``), and ``--agent`` must hold a role in the
database (running a computation is a read). Values come from ``--param NAME=VALUE`` (the value
read as JSON when it is JSON: ``2024`` a number, ``true`` a boolean, anything else text) and
``--params-json``. The answer is the ``run_computation`` tool's; ``--json`` prints the outcome
as one JSON document (the result only when attested).

Exit status, by the command line's one rule: 2 for a usage or configuration error (no runtime,
a bad URL or bundle, a value given twice); 1 when the computation was refused or not found
(unknown, a wrong or missing value, stale and refused, a failed attestation), its reason in one
line on stderr; 0 when the value is attested.
"""

from __future__ import annotations

import argparse
import json
import sys
from typing import TYPE_CHECKING, Any

from agentkernel.cli._bundle import add_full_argument, add_name_argument, nonempty
from agentkernel.cli._options import add_options, subcommand
from agentkernel.errors import AKConfigError

if TYPE_CHECKING:
    from agentkernel.knowledgebase.okf.computation import Computations

SOURCE_HELP = (
    "the OKF bundle (a directory, file:///dir, s3://bucket/prefix); with --config, the "
    "database's name"
)


def _arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("source", metavar="PATH|DATABASE", type=nonempty, help=SOURCE_HELP)
    parser.add_argument(
        "concept", metavar="CONCEPT", type=nonempty, help="the computation's id, e.g. "
        "computations/revenue"
    )  # fmt: skip
    # fmt: off
    add_options(
        parser,
        ("--runtime", "NAME=URL", "bind a runtime the bundle's computations name to a SQL "
         "database: a SQLAlchemy URL or trino://USER@HOST:PORT/CATALOG/SCHEMA; repeat",
         {"action": "append", "default": []}),
        ("--param", "NAME=VALUE", "a parameter's value (read as JSON when it is: 2024, true; "
         "else text); repeat", {"action": "append", "default": []}),
        ("--params-json", "JSON", "the values as one JSON object, e.g. '{\"year\": 2024}'"),
        ("--refuse-stale", None, "refuse a computation past its stale_after (default: warn)"),
        ("--json", None, "print the outcome as JSON: verdict, checks, receipt"),
        ("--config", "FILE", "a config.yaml whose okf block binds the runtimes"),
        ("--agent", "NAME", "with --config: run as this agent (it needs a role in DATABASE)"),
    )
    # fmt: on
    add_name_argument(parser)
    add_full_argument(parser)


def run(args: argparse.Namespace) -> int:
    """Run, attest and print the computation.

    Args:
        args: The parsed arguments.

    Returns:
        0 when attested, 1 when refused or not found.

    Raises:
        AKConfigError: A usage or configuration mistake (exit status 2).
    """
    from agentkernel._tooling.budget import DEFAULT_ANSWER_CHARS

    values = _values(args.param, args.params_json)
    runner = _from_config(args) if args.config else _from_path(args)
    if args.refuse_stale:
        runner.on_stale = "refuse"
    outcome = runner.gate(args.concept, values)
    if args.json:
        json.dump(outcome.as_json(), sys.stdout, indent=2, ensure_ascii=False, default=str)
        sys.stdout.write("\n")
    elif outcome.attested:
        print(outcome.render(None if args.full else DEFAULT_ANSWER_CHARS))
    if not outcome.attested:
        print(" ".join(outcome.error.split()), file=sys.stderr)
        return 1
    return 0


def _values(params: list[str], params_json: str | None) -> dict[str, Any]:
    values: dict[str, Any] = {}
    if params_json is not None:
        try:
            given = json.loads(params_json)
        except json.JSONDecodeError as exc:
            raise AKConfigError(f"--params-json is not JSON ({exc})") from exc
        if not isinstance(given, dict):
            raise AKConfigError("--params-json takes a JSON object, e.g. '{\"year\": 2024}'")
        values.update(given)
    for item in params:
        name, sep, text = item.partition("=")
        if not sep or not name.strip():
            raise AKConfigError(f"--param takes NAME=VALUE, got {item!r}")
        if name.strip() in values:
            raise AKConfigError(f"parameter {name.strip()!r} is given twice")
        try:
            values[name.strip()] = json.loads(text)
        except json.JSONDecodeError:
            values[name.strip()] = text
    return values


def _from_path(args: argparse.Namespace) -> Computations:
    from agentkernel.cli._bundle import open_bundles
    from agentkernel.knowledgebase.okf.computation import Computations
    from agentkernel.roles.runtimes import open_runtime

    if args.agent:
        raise AKConfigError("--agent NAME goes with --config FILE.")
    if not args.runtime:
        raise AKConfigError(
            "Bind the runtime the computations name: --runtime NAME=URL, e.g. "
            "--runtime sql=sqlite:///warehouse.sqlite"
        )
    runtimes = {}
    for item in args.runtime:
        name, sep, url = item.partition("=")
        if not sep or not name.strip() or "://" not in url:
            raise AKConfigError(f"--runtime takes NAME=URL, got {item!r}")
        if name.strip() in runtimes:
            raise AKConfigError(f"runtime {name.strip()!r} is bound twice")
        runtimes[name.strip()] = open_runtime(url.strip(), name=name.strip())
    (manager,) = open_bundles([args.source], args.names)
    return Computations(manager, runtimes)


def _from_config(args: argparse.Namespace) -> Computations:
    from agentkernel.roles import OKFCapability
    from agentkernel.roles.runtimes import load_attester

    if args.runtime or args.names:
        raise AKConfigError("With --config the okf block binds runtimes and names databases.")
    capability = OKFCapability.from_config(args.config)
    if capability is None:
        raise AKConfigError(f"{args.config} has no okf block: nothing to run.")
    database = args.source
    if database not in capability.databases():
        raise AKConfigError(
            f"No okf database named {database!r} in {args.config}: {capability.databases()}"
        )
    if args.agent and database not in capability.roles_of(args.agent):
        raise AKConfigError(
            f"Agent {args.agent!r} holds no role in {database!r}; its databases: "
            f"{list(capability.roles_of(args.agent))}"
        )
    runner = capability.computations(database)
    if runner is None:
        raise AKConfigError(
            f"okf database {database!r} binds no runtime: add runtimes: {{NAME: SQL database}}"
        )
    # open now what the first run would open, so a bad store, URL or attester is exit 2
    capability.manager(database)
    entry = capability.database_config(database)
    for runtime in entry.runtimes:
        capability.sql_database(database, runtime)
    for name in entry.attesters:
        load_attester(capability.attester_spec(name))
    return runner


register = subcommand(
    "compute",
    run,
    _arguments,
    help="run an Attested Computation, attest it, show the value",
    description="Run one of a bundle's Attested Computations (OKF 0.2, section 10) on a "
    "bound SQL database, attest the run and show the value with its verdict and receipt.",
)
