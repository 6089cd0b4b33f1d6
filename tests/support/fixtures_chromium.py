"""Fixture: one headless Chromium per test module, driven over its DevTools pipe.

Debian's ``chromium`` (installed by ``tests/support/prepare.d/30-chromium.sh``); under the test
sessions (``AK_PREP_DIR`` set) a missing browser fails the run instead of skipping.
"""

from __future__ import annotations

import os
from collections.abc import Iterator

import pytest

from tests.support.chromium import Browser, available


@pytest.fixture(scope="module")
def browser() -> Iterator[Browser]:
    """Start Chromium for the module and close it afterwards."""
    if not available():
        if os.environ.get("AK_PREP_DIR"):
            pytest.fail("Chromium is missing: tests/support/prepare.d/30-chromium.sh installs it")
        pytest.skip("Chromium is not installed (apt-get install chromium)")
    started = Browser()
    try:
        yield started
    finally:
        started.close()
