"""The latency proxy for the benches: the test suite's own (``tests/support/latency_proxy.py``).

LanceDB talks to S3 from Rust, so boto3's event hooks cannot see its requests; the proxy,
run in the measuring process, forwards every request to the real server (moto), counts it by
method and, with ``delay``, adds a fixed round trip (20 ms: a bucket in the pod's region).
"""

from __future__ import annotations

import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from tests.support.latency_proxy import LatencyProxy

CountingProxy = LatencyProxy  # no delay: counts only

__all__ = ["CountingProxy", "LatencyProxy"]
