"""A server listens before its vectors are built: lexical answers that say so, then hybrid.

What is real: ``agentkernel-kb serve --config`` in its own process over streamable HTTP on
127.0.0.1 (the package's own server), the SDK's HTTP client, ``/readyz``, the GA4 bundle copied
from the shared data, and an embeddings endpoint speaking OpenAI's wire protocol on 127.0.0.1
(``tests/support/embeddings_server.py``) whose vectors come from the deterministic word-count
embedder (``tests/support/vocab_embedder.py``); the test holds the endpoint's batch requests
until it has asked its questions (a slow model), so nothing depends on timing. Nothing is mocked.
"""

from __future__ import annotations

import json
import os
import shutil
import threading
import time
import urllib.error
import urllib.request
from collections.abc import Sequence
from pathlib import Path

import anyio
import yaml

from tests.support import okf_bundle, require_extra

require_extra("mcp", "mcp")

from tests.mcp import auth_support as a  # noqa: E402
from tests.mcp._session import call, http_session  # noqa: E402
from tests.support.embeddings_server import serve as serve_embeddings  # noqa: E402
from tests.support.vocab_embedder import VocabularyEmbedder  # noqa: E402


class HeldEmbedder(VocabularyEmbedder):
    """The word-count embedder, holding every batch of concept texts until released."""

    def __init__(self, vocabulary: list[str]) -> None:
        super().__init__(vocabulary)
        self.release = threading.Event()

    def embed(self, texts: Sequence[str]) -> list[list[float]]:
        if len(texts) > 1:  # a batch of concept texts; a query or the probe is one text
            self.release.wait(120)
        return super().embed(texts)


def _readyz(base: str) -> tuple[int, dict[str, object]]:
    try:
        with urllib.request.urlopen(f"{base}/readyz", timeout=30) as response:
            return response.status, json.loads(response.read())
    except urllib.error.HTTPError as exc:
        return exc.code, json.loads(exc.read())


def _until(check: object, what: str) -> None:
    """Wait (two minutes at most) for the server to get there; not a timing check."""
    deadline = time.monotonic() + 120
    while not check():  # type: ignore[operator]
        assert time.monotonic() < deadline, what
        time.sleep(0.05)


def test_a_server_answers_lexically_while_its_vectors_are_built_then_hybrid(
    tmp_path: Path,
) -> None:
    bundle = tmp_path / "ga4"
    shutil.copytree(okf_bundle("ga4"), bundle)
    embedder = HeldEmbedder(["users", "active", "purchase", "revenue", "event"])
    with serve_embeddings(embedder, "vocab", api_key="sk-test") as endpoint:
        entry = {
            "type": "local",
            "uri": str(bundle),
            "embedder": f"{endpoint.url}#vocab",
            "vector_cache": str(tmp_path / "vectors"),
            "consumer": ["reader"],
        }
        config = tmp_path / "config.yaml"
        config.write_text(yaml.safe_dump({"okf": {"databases": {"ga4": entry}}}))
        env = {"AGENTKERNEL_EMBEDDINGS_API_KEY": "sk-test", "XDG_CACHE_HOME": str(tmp_path)}
        command = a.cli_command("serve", "--config", str(config), "--http", ":0")
        try:
            with a.serving(command, env={**os.environ, **env}) as server:
                base = server.url.removesuffix("/mcp")
                # ready (200) once the walk ends: lexically; the vectors are on their way
                warming = {"ga4": "warming vectors: 0/9 (0%); search is lexical until done"}
                _until(lambda: _readyz(base) == (200, {"ready": True, "databases": warming}), "")

                async def search() -> str:
                    async with http_session(server.url) as session:
                        text, error = await call(
                            session, "search_kb", backend="ga4", query="active users", limit=3
                        )
                        assert not error, text
                        return text

                lexical = anyio.run(search)
                assert lexical.startswith(
                    "(search: lexical (BM25F) while the vectors are built (0/"
                ), lexical
                assert "; hybrid once they are)\n- [" in lexical
                embedder.release.set()
                _until(lambda: _readyz(base)[1]["databases"] == {"ga4": "ready"}, "no vectors")
                hybrid = anyio.run(search)
                assert not hybrid.startswith("(search:") and hybrid.startswith("- ["), hybrid
        finally:
            embedder.release.set()
