"""A moto S3 API server of a test's own, that can be killed and started again on its port.

The session's server (``s3_endpoint``) is shared; a test that kills its endpoint starts
this one instead: ``kill()`` is ``SIGKILL`` (everything it held is gone, as with a server
that crashed), ``start()`` brings up a fresh, empty server on the same port.
"""

from __future__ import annotations

import os
import subprocess
import sys
import time
from pathlib import Path

from tests.support.fixtures_s3 import _free_port, _ready, _stop

_STARTUP_SECONDS = 60.0


class MotoServer:
    """``python -m moto.server`` on a fixed loopback port, restartable."""

    def __init__(self, log_path: Path) -> None:
        """Pick the port; nothing runs yet.

        Args:
            log_path: Where the server's output goes.
        """
        self.port = _free_port()
        self.url = f"http://127.0.0.1:{self.port}"
        self._log_path = log_path
        self._process: subprocess.Popen[bytes] | None = None

    def start(self) -> None:
        """Start an empty server on the port and wait until it answers."""
        with self._log_path.open("ab") as log:
            self._process = subprocess.Popen(
                [sys.executable, "-m", "moto.server", "-H", "127.0.0.1", "-p", str(self.port)],
                stdout=log,
                stderr=subprocess.STDOUT,
                env=dict(os.environ),
            )
        deadline = time.monotonic() + _STARTUP_SECONDS
        while time.monotonic() < deadline and self._process.poll() is None:
            if _ready(self.url):
                return
            time.sleep(0.1)
        tail = self._log_path.read_text(errors="replace")[-2000:]
        raise RuntimeError(f"moto server did not start on {self.url}; its log ends:\n{tail}")

    def kill(self) -> None:
        """``SIGKILL`` the server and wait for it: its buckets are gone."""
        if self._process is not None and self._process.poll() is None:
            self._process.kill()
            self._process.wait()

    def stop(self) -> None:
        """Stop the server if it runs."""
        if self._process is not None:
            _stop(self._process)
