"""The S3 API server as a pod sees a real bucket: 20 ms per request, every request counted.

Fixtures (loaded for every test by ``tests/conftest.py``):

``s3_latency``  (session)
    A :class:`~tests.support.latency_proxy.LatencyProxy` on 127.0.0.1 in front of the
    ``s3_endpoint`` server (moto's real S3 HTTP API), adding ``S3_DELAY`` seconds to every
    request. Its ``endpoint`` is what Lance (``aws_endpoint``) and boto3 (``endpoint_url``)
    are pointed at; ``take()`` returns the requests by method since the last call. Shared by
    the session: call ``take()`` right before what you count.
"""

from __future__ import annotations

from collections.abc import Iterator

import pytest

from tests.support.latency_proxy import LatencyProxy

S3_DELAY = 0.020


@pytest.fixture(scope="session")
def s3_latency(s3_endpoint: str) -> Iterator[LatencyProxy]:
    """The latency proxy in front of the session's S3 API server (see the module docstring)."""
    proxy = LatencyProxy(s3_endpoint, delay=S3_DELAY)
    yield proxy
    proxy.close()
