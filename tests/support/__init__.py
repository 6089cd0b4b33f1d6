"""Shared test support: fixtures that start real servers, and extra-gating helpers."""

from __future__ import annotations

import os
from types import ModuleType

import pytest


def require_extra(module: str, extra: str) -> ModuleType:
    """Import an optional SDK for a test module, or skip it where the extra is absent.

    In a nox session that installed the extra (named in ``AK_REQUIRE_EXTRAS``), a failed
    import is an error rather than a skip, so a broken install cannot pass silently.
    """
    required = {e.strip() for e in os.environ.get("AK_REQUIRE_EXTRAS", "").split(",") if e}
    if extra in required:
        return __import__(module)
    return pytest.importorskip(module, reason=f"the '{extra}' extra is not installed")
