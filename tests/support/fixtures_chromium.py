"""Fixture: one headless Chromium per test module, driven over its DevTools pipe.

Debian's ``chromium`` (installed by ``tests/support/prepare.d/30-chromium.sh``); a missing
browser follows ``tests.support.missing`` (a failure under CI, a skip locally).
"""

from __future__ import annotations

from collections.abc import Iterator

import pytest

from tests.support import missing
from tests.support.chromium import Browser, available


@pytest.fixture(scope="module")
def browser() -> Iterator[Browser]:
    """Start Chromium for the module and close it afterwards."""
    if not available():
        missing("Chromium", "tests/support/prepare.d/30-chromium.sh (apt-get install chromium)")
    started = Browser()
    try:
        yield started
    finally:
        started.close()
