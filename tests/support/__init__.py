"""Shared test support: where the shared data lies, and the one rule for a missing prerequisite.

The rule (``missing``): a test whose extra, test dependency, server binary or data set is absent
skips locally with a message saying what to install, and FAILS under CI (``CI`` set to a true
value, as CI and ``.ci/run`` set it), so a broken install cannot pass by skipping. Extras follow
the nox session: ``AK_REQUIRE_EXTRAS`` names the extras the session installed; a test needing
one of them fails without it, and a test needing an extra the session does not install (the
crewai and adk adapters, each in its own session) skips, naming the session that runs it.
"""

from __future__ import annotations

import importlib
import os
from pathlib import Path
from types import ModuleType
from typing import NoReturn

import pytest
from hypothesis import settings

REPO = Path(__file__).resolve().parents[2]
# The repository sits beside shared/ (a clone gets a symlink there); the data is read in place.
SHARED_DATA = REPO.parent / "shared" / "data"
OKF_BUNDLES = SHARED_DATA / "okf-bundles"

# Extras whose SDKs cannot share the core environment: their tests run in a nox session each.
OWN_SESSION = {"crewai": "nox -s crewai", "adk": "nox -s adk", "embeddings-torch": "nox -s model"}


def in_ci() -> bool:
    """Whether this run is CI's, where every prerequisite must be present."""
    return os.environ.get("CI", "").strip().lower() in {"1", "true", "yes"}


def missing(what: str, how: str, extra: str | None = None) -> NoReturn:
    """Stop a test whose prerequisite is absent: a failure under CI, a skip locally.

    Args:
        what: The prerequisite, e.g. ``"the 'mcp' extra"`` or ``"PostgreSQL's initdb"``.
        how: What to run or install to get it.
        extra: The extra the prerequisite comes with: where this session installed that
            extra, its absence is a failure outside CI too.
    """
    if in_ci():
        pytest.fail(f"{what} is missing, and CI runs every test: {how}", pytrace=False)
    if extra is not None and extra in required_extras():
        pytest.fail(f"{what} is missing, though this session installs '{extra}': {how}")
    pytest.skip(f"{what} is missing: {how}", allow_module_level=True)


def required_extras() -> set[str]:
    """The extras this nox session installed (``AK_REQUIRE_EXTRAS``); empty outside nox."""
    return {e.strip() for e in os.environ.get("AK_REQUIRE_EXTRAS", "").split(",") if e.strip()}


def require_extra(module: str, extra: str) -> ModuleType:
    """Import an optional SDK for a test, or apply the missing-prerequisite rule.

    Args:
        module: The module to import, e.g. ``"google.adk"``.
        extra: The project extra that installs it.

    Returns:
        The imported module.
    """
    try:
        return importlib.import_module(module)
    except ImportError as exc:
        session = required_extras()
        if extra in session:
            pytest.fail(f"the '{extra}' extra is installed but {module} fails: {exc}")
        if extra in OWN_SESSION or (session and extra not in session):
            # Not this session's extra: another session installs it and runs the test.
            where = OWN_SESSION.get(extra, "nox -s core")
            reason = f"the '{extra}' extra is not in this session: {where} runs this test"
            pytest.skip(reason, allow_module_level=True)
        missing(f"the '{extra}' extra ({module})", f"pip install -e '.[{extra}]'")


def require_module(module: str, package: str | None = None) -> ModuleType:
    """Import a test-only dependency (duckdb, psycopg, ...), or apply the rule.

    Args:
        module: The module to import.
        package: The pip package that provides it, when its name differs.

    Returns:
        The imported module.
    """
    try:
        return importlib.import_module(module)
    except ImportError:
        missing(f"the test dependency {module}", f"pip install '{package or module}' (nox -s core)")


def okf_bundle(name: str) -> Path:
    """A real OKF bundle of ``../shared/data/okf-bundles`` (read it; never write it).

    Args:
        name: The bundle's folder name, e.g. ``"ga4"``.

    Returns:
        The bundle's folder.
    """
    path = OKF_BUNDLES / name
    if not (path / "index.md").is_file():
        missing(
            f"the shared OKF bundle {path}",
            "the tests read ../shared/data beside the repository: put or symlink shared/ there",
        )
    return path


def load_hypothesis_profile() -> None:
    """Few examples locally (``dev``), many under CI (``ci``); ``HYPOTHESIS_PROFILE`` overrides."""
    settings.register_profile("dev", max_examples=20, deadline=None)
    settings.register_profile("ci", max_examples=200, deadline=None, print_blob=True)
    settings.load_profile(os.environ.get("HYPOTHESIS_PROFILE") or ("ci" if in_ci() else "dev"))


def examples(ci: int) -> int:
    """How many examples a property test that asks for ``ci`` of them runs in this profile.

    All of them under the ``ci`` profile; a twentieth (at least 10) locally, so the inner loop
    stays fast while CI keeps the depth.

    Args:
        ci: The examples the test runs under CI.

    Returns:
        The ``max_examples`` to give ``hypothesis.settings``.
    """
    if settings.get_current_profile_name() == "ci":
        return ci
    return max(10, ci // 20)
