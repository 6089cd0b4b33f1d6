"""Acknowledged means durable and visible: concurrent writers, ``kill -9``, refused writes.

Real: OKF bundles in temporary directories and on the moto S3 server of
``tests/support/fixtures_s3.py`` (real S3 HTTP API on 127.0.0.1), writer and reader processes
(``tests/security/_okf_process.py``) calling the real ``write_kb`` tool and opening the bundle
afresh, a real ``SIGKILL``. The only intervention is the writer's pause inside its first
write (after the temporary file is flushed, before the rename), which makes the moment of the
``kill -9`` deterministic; the write itself runs unchanged.
"""

from __future__ import annotations

import json
import os
import re
import signal
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from agentkernel.errors import ECHO_LIMIT, echo
from agentkernel.knowledgebase import KnowledgeBuilder, LocalDocumentStore, OKFManager
from agentkernel.knowledgebase.errors import KnowledgeError, KnowledgePathError
from agentkernel.knowledgebase.okf.conformance import check_bundle
from agentkernel.storage import fs as _fs
from agentkernel.storage.base import clean_file_path, clean_path
from tests.support import examples
from tests.support.fixtures_mcp import REPO

WRITERS = 4
WRITES_EACH = 6
_ACK = re.compile(r"^Wrote 1 record\(s\) to 'KB': \['([^']+)'\]$")
MIB = 1024 * 1024


def _env(**extra: str) -> dict[str, str]:
    env = dict(os.environ)
    env["PYTHONPATH"] = os.pathsep.join([str(REPO / "src"), str(REPO)])
    env.update(extra)
    return env


def _writer(location: str, count: int, tag: str, **env: str) -> subprocess.Popen[str]:
    return subprocess.Popen(
        [sys.executable, "-m", "tests.security._okf_process", "write", location, str(count), tag],
        cwd=REPO,
        env=_env(**env),
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )


def _acks(proc: subprocess.Popen[str]) -> dict[str, str]:
    """Wait for a writer; return each acknowledged concept id with the body it wrote."""
    out, err = proc.communicate(timeout=300)
    assert proc.returncode == 0, err[-3000:]
    acked: dict[str, str] = {}
    for line in out.splitlines():
        if not line.startswith("{"):
            continue
        answer = json.loads(line)
        match = _ACK.match(answer["answer"])
        assert match, answer["answer"]
        acked[match.group(1)] = f"Written by {answer['tag']}, number {answer['number']}."
    return acked


def _fresh_read(location: str, **env: str) -> dict[str, Any]:
    done = subprocess.run(
        [sys.executable, "-m", "tests.security._okf_process", "read", location],
        cwd=REPO,
        env=_env(**env),
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert done.returncode == 0, done.stderr[-3000:]
    result: dict[str, Any] = json.loads(done.stdout.splitlines()[-1])
    return result


def _assert_all_visible(acked: dict[str, str], seen: dict[str, Any]) -> None:
    assert len(acked) == WRITERS * WRITES_EACH  # every write got its own concept
    missing = sorted(set(acked) - set(seen["texts"]))
    assert not missing, f"acknowledged but not visible to a fresh process: {missing}"
    for concept, body in acked.items():
        assert body in seen["texts"][concept], concept
    assert seen["diagnostics"] == []


def _temps(root: Path) -> list[Path]:
    return sorted(p for p in root.rglob("*") if p.name.startswith(".") and p.is_file())


# -- concurrent writers ---------------------------------------------------------------------


def test_concurrent_writers_on_a_local_bundle_lose_nothing(tmp_path: Path) -> None:
    bundle = tmp_path / "bundle"
    bundle.mkdir()
    procs = [_writer(str(bundle), WRITES_EACH, f"w{n}") for n in range(WRITERS)]
    acked: dict[str, str] = {}
    for proc in procs:
        mine = _acks(proc)
        assert not set(mine) & set(acked), "two writers were acknowledged the same concept"
        acked.update(mine)
    _assert_all_visible(acked, _fresh_read(str(bundle)))
    assert _temps(bundle) == []


def test_concurrent_writers_on_s3_lose_nothing(s3_endpoint: str, s3_bucket: str) -> None:
    location = f"s3://{s3_bucket}/kb"
    procs = [
        _writer(location, WRITES_EACH, f"s{n}", AK_TEST_S3_ENDPOINT=s3_endpoint)
        for n in range(WRITERS)
    ]
    acked: dict[str, str] = {}
    for proc in procs:
        mine = _acks(proc)
        assert not set(mine) & set(acked), "two writers were acknowledged the same concept"
        acked.update(mine)
    _assert_all_visible(acked, _fresh_read(location, AK_TEST_S3_ENDPOINT=s3_endpoint))


# -- kill -9 mid-write ----------------------------------------------------------------------


@pytest.fixture
def paused_writer(tmp_path: Path) -> Iterator[tuple[Path, subprocess.Popen[str]]]:
    """A bundle with one note, and a writer stopped inside its write (temp file on disk)."""
    bundle = tmp_path / "bundle"
    bundle.mkdir()
    kb = OKFManager(LocalDocumentStore(bundle), name="KB", refresh_seconds=None)
    kb.write([{"text": "First note\nWritten before the crash.", "metadata": {}}])
    proc = _writer(str(bundle), 1, "victim", AK_TEST_PAUSE_IN_WRITE="1")
    assert proc.stdout is not None
    line = proc.stdout.readline()
    assert line.strip() == "PAUSED", line + (proc.stderr.read() if proc.stderr else "")
    yield bundle, proc
    if proc.poll() is None:
        proc.kill()
    proc.communicate(timeout=60)


def test_kill_9_mid_write_leaves_a_temp_file_the_walk_ignores_and_the_next_write_removes(
    paused_writer: tuple[Path, subprocess.Popen[str]],
) -> None:
    bundle, proc = paused_writer
    in_flight = _temps(bundle)
    assert len(in_flight) == 1 and in_flight[0].parent == bundle / "generated"
    assert f"-{proc.pid}-" in in_flight[0].name  # named by its writer's host and process

    os.kill(proc.pid, signal.SIGKILL)
    proc.wait(timeout=60)
    assert _temps(bundle) == in_flight  # nothing has removed it yet

    # the walk never serves it: not the store's listing, not a fresh process, not the check
    store = LocalDocumentStore(bundle, writable=False)
    assert [f.path for f in store.walk()] == ["generated/first-note.md"]
    seen = _fresh_read(str(bundle))
    assert list(seen["texts"]) == ["generated/first-note"] and seen["diagnostics"] == []
    report = check_bundle(store)
    assert not any(in_flight[0].name in f.message or ".tmp" in f.path for f in report.findings)

    # the next write in that folder removes it, and loses nothing
    acked = _acks(_writer(str(bundle), 1, "next"))
    assert _temps(bundle) == []
    after = _fresh_read(str(bundle))
    assert set(after["texts"]) == {"generated/first-note", *acked}
    assert after["listing"] == sorted(f"{concept}.md" for concept in after["texts"])


def test_a_live_writers_temp_file_is_never_removed_by_another_write(
    paused_writer: tuple[Path, subprocess.Popen[str]],
) -> None:
    bundle, proc = paused_writer
    in_flight = _temps(bundle)
    other = _acks(_writer(str(bundle), 1, "neighbour"))  # writes into the same folder
    assert _temps(bundle) == in_flight  # the paused writer is alive: its file stays
    assert proc.stdin is not None
    proc.stdin.write("\n")
    proc.stdin.flush()
    victim = _acks(proc)  # resumed, it renames its file into place and is acknowledged
    assert _temps(bundle) == []
    seen = _fresh_read(str(bundle))
    assert set(seen["texts"]) == {"generated/first-note", *other, *victim}
    assert len(set(other) | set(victim)) == 2


def test_only_abandoned_temp_files_of_ours_are_removed(tmp_path: Path) -> None:
    folder = tmp_path / "kb"
    folder.mkdir()
    host = _fs.host_tag()
    dead = subprocess.run(
        [sys.executable, "-c", "import os; print(os.getpid())"],
        capture_output=True,
        text=True,
        check=True,
    )
    dead_pid = int(dead.stdout)
    names = {
        "dead": f".a.md~{host}-{dead_pid}-abcd1234.tmp",  # its writer exited
        "live": f".b.md~{host}-{os.getppid()}-abcd1234.tmp",  # a live process of this host
        "mine": f".c.md~{host}-{os.getpid()}-abcd1234.tmp",  # this process (another thread)
        "remote": ".d.md~0123abcd-12345-abcd1234.tmp",  # another host, fresh
        "remote_old": ".e.md~0123abcd-12345-abcd1234.tmp",  # another host, hours old
        "users": ".notes.tmp",  # a hidden file of the user's, not ours
    }
    for name in names.values():
        (folder / name).write_text("partial")
    hours_ago = time.time() - 3 * 3600
    os.utime(folder / names["remote_old"], (hours_ago, hours_ago))
    store = LocalDocumentStore(folder)
    store.write("note.md", b"---\ntype: Note\n---\nbody\n")
    left = {p.name for p in folder.iterdir()}
    assert left == {"note.md", names["live"], names["mine"], names["remote"], names["users"]}


def test_s3_writes_leave_no_temporary_objects(s3_endpoint: str, s3_bucket: str) -> None:
    from agentkernel.storage.s3 import S3DocumentStore

    store = S3DocumentStore(s3_bucket, "kb", endpoint_url=s3_endpoint)
    store.write("a/note.md", b"---\ntype: Note\n---\nbody\n")
    keys = [o["Key"] for o in store.client.list_objects_v2(Bucket=s3_bucket)["Contents"]]
    assert keys == ["kb/a/note.md"]  # a PUT is atomic: there is no temp object to clean up


# -- a write the walk would skip is refused before anything is written ------------------------


@pytest.fixture
def okf(tmp_path: Path) -> tuple[Path, OKFManager, dict[str, Any]]:
    bundle = tmp_path / "bundle"
    bundle.mkdir()
    kb = OKFManager(LocalDocumentStore(bundle), name="KB", refresh_seconds=None, max_concepts=3)
    tools = {tool.__name__: tool for tool in KnowledgeBuilder([kb]).build()}
    return bundle, kb, tools


def _files(root: Path) -> list[str]:
    return sorted(str(p.relative_to(root)) for p in root.rglob("*") if p.is_file())


def test_a_5_mb_write_is_refused_with_the_limit_and_nothing_is_written(
    okf: tuple[Path, OKFManager, dict[str, Any]],
) -> None:
    bundle, kb, tools = okf
    answer = tools["write_kb"]("KB", text="Big note\n" + "x" * (5 * MIB))
    assert "Nothing was written" in answer and "max_document_bytes=4194304" in answer
    assert len(answer) < 1000
    assert _files(bundle) == []
    assert kb.search("big note") == []


def test_just_under_the_limit_is_written_and_seen_by_a_fresh_process(
    okf: tuple[Path, OKFManager, dict[str, Any]],
) -> None:
    bundle, _, tools = okf
    answer = tools["write_kb"]("KB", text="Large note\n" + "y" * (4 * MIB - 1000))
    match = _ACK.match(answer)
    assert match, answer
    assert match.group(1) in _fresh_read(str(bundle))["texts"]


@pytest.mark.parametrize(
    ("record", "reason"),
    [
        ({"text": "Bad \ud800 text", "metadata": {}}, "lone surrogate (U+D800)"),
        ({"text": "---\ntype: Note\n---\n\x00binary", "metadata": {"id": "bin"}}, "NUL byte"),
        ({"text": "---\ntype: Note\n---\nx\n", "metadata": {"id": "index"}}, "reserved"),
        ({"text": "---\ntype: Note\n---\nx\n", "metadata": {"id": "sub/log"}}, "reserved"),
        ({"text": "---\ntype: Note\n---\nx\n", "metadata": {"id": ".hidden/x"}}, "hidden"),
        ({"text": "---\ntype: Note\n---\nx\n", "metadata": {"id": "a/.git/x"}}, "hidden"),
        ({"text": "---\ntype: Note\n---\nx\n", "metadata": {"id": "a,b"}}, "comma"),
        (
            {
                "text": "---\ntype: Note\nx: '" + "z" * 20000 + "'\n---\nx\n",
                "metadata": {"id": "fm"},
            },
            "frontmatter does not close within the first 16384 bytes",
        ),
        ({"text": "no frontmatter", "metadata": {"id": "plain"}}, "frontmatter"),
    ],
)
def test_what_the_walk_would_skip_is_refused_and_nothing_is_written(
    okf: tuple[Path, OKFManager, dict[str, Any]], record: dict[str, Any], reason: str
) -> None:
    bundle, kb, _ = okf
    with pytest.raises((KnowledgeError, KnowledgePathError)) as refused:
        kb.write([record])
    assert reason in str(refused.value)
    assert _files(bundle) == []


def test_over_max_concepts_is_refused_with_the_limit_and_nothing_is_written(
    okf: tuple[Path, OKFManager, dict[str, Any]],
) -> None:
    bundle, _, tools = okf
    for n in range(3):
        assert _ACK.match(tools["write_kb"]("KB", text=f"Note {n}\nbody"))
    before = _files(bundle)
    answer = tools["write_kb"]("KB", text="One too many\nbody")
    assert "max_concepts=3" in answer and "Nothing" in answer
    assert _files(bundle) == before


def test_a_batch_with_one_bad_record_writes_none_of_it(
    okf: tuple[Path, OKFManager, dict[str, Any]],
) -> None:
    bundle, kb, _ = okf
    good = {"text": "Good note\nfine", "metadata": {}}
    bad = {"text": "Huge\n" + "x" * (5 * MIB), "metadata": {}}
    with pytest.raises(KnowledgeError, match="max_document_bytes"):
        kb.write([good, bad])
    assert _files(bundle) == []


def test_every_acknowledged_write_survives_a_restart(
    okf: tuple[Path, OKFManager, dict[str, Any]],
) -> None:
    bundle, _, tools = okf
    titles = ["Index", "Log", "Émigré café", "日本語のノート"]
    acked = [_ACK.match(tools["write_kb"]("KB", text=f"{t}\nbody of {t}")) for t in titles[:3]]
    assert all(acked), acked
    restarted = OKFManager(LocalDocumentStore(bundle), name="KB")
    served = {concept["metadata"]["id"] for concept in restarted.browse("generated", limit=50)}
    assert served == {m.group(1) for m in acked if m}


# -- echoed input, paths, bundle names ------------------------------------------------------


def test_echoed_input_is_cut_to_200_characters(
    okf: tuple[Path, OKFManager, dict[str, Any]],
) -> None:
    _, _, tools = okf
    huge = "N" * 12_000_000
    for answer in (
        tools["write_kb"](huge, text="x"),
        tools["read_kb"](huge, "q"),
        tools["fetch_kb"]("KB", huge),
        tools["browse_kb"]("KB", "../" + huge),
        tools["read_kb"]("KB", "q", limit=huge),
    ):
        assert len(answer) < ECHO_LIMIT + 400, answer[:300]
        assert re.search(r"\(1200000\d characters\)", answer), answer[:300]
    with pytest.raises(KnowledgePathError) as refused:
        clean_path("/" + huge)
    assert len(str(refused.value)) < ECHO_LIMIT + 200
    assert echo("\ud800") == "'\\ud800'"  # quoted input is always encodable text


def test_schemas_and_descriptions_name_the_bundle_not_its_path(
    okf: tuple[Path, OKFManager, dict[str, Any]], tmp_path: Path
) -> None:
    bundle, kb, _ = okf
    read_only = LocalDocumentStore(bundle, writable=False)
    unnamed = OKFManager(read_only)
    tools = {tool.__name__: tool for tool in KnowledgeBuilder([kb, unnamed]).build()}
    outputs = [tools["get_schemas"](), tools["get_all_kb_descriptions"]()]
    outputs.append(tools["write_kb"](unnamed.backend_name, text="x"))
    with pytest.raises(PermissionError) as refused:
        read_only.write("x.md", b"x")
    outputs += [str(refused.value), repr(kb.store), repr(read_only)]
    with pytest.raises(FileNotFoundError) as missing:
        read_only.read("nope.md")
    with pytest.raises(OSError) as too_long:
        kb.store.write("generated/" + "x" * 300 + ".md", b"x")
    outputs += [str(missing.value), str(too_long.value)]
    for text in outputs:
        assert str(tmp_path) not in text, text[:500]
    assert json.loads(outputs[0])["KB"]["location"] == "bundle"
    assert unnamed.backend_name == "bundle"


# -- path cleaning --------------------------------------------------------------------------

_SEGMENTS = st.sampled_from(["", ".", "..", "a", "b.md", "C:", "c:x", ".h", "x y", "é", "~", "-"])


@settings(max_examples=examples(400), deadline=None)
@given(st.lists(_SEGMENTS, max_size=6), st.booleans(), st.booleans())
def test_clean_path_is_idempotent_and_what_it_returns_the_store_accepts(
    tmp_path_factory: pytest.TempPathFactory, parts: list[str], lead: bool, trail: bool
) -> None:
    path = ("/" if lead else "") + "/".join(parts) + ("/" if trail else "")
    try:
        cleaned = clean_path(path)
    except KnowledgePathError:
        return
    assert clean_path(cleaned) == cleaned
    if not cleaned or any(part.startswith(".") for part in cleaned.split("/")):
        return  # the root, or a hidden entry: not a file a store holds
    assert clean_file_path(cleaned) == cleaned
    root = tmp_path_factory.mktemp("clean")
    store = LocalDocumentStore(root)
    stored = store.write(cleaned, b"x")
    assert stored.path == cleaned and store.read(cleaned) == b"x"


@pytest.mark.parametrize("path", ["./C:/x.md", "./c:x", ".//C:", "a/../C:/x"])
def test_a_path_that_would_clean_into_a_refused_one_is_refused(path: str) -> None:
    with pytest.raises(KnowledgePathError):
        clean_path(path)


class _SmallLimits(OKFManager):
    """Small bounds, so generated documents cross them often."""

    head_bytes = 256
    max_document_bytes = 1024


_IDS = st.sampled_from(["a", "sub/b", "index", "sub/log", ".h/c", "d,e", "f.md", "g.MD", "ü"])
_DOCUMENTS = st.builds(
    lambda pad, body, nul, fm: (
        (f"---\ntype: Note\npad: '{'p' * pad}'\n---\n" if fm else "")
        + body
        + ("\x00" if nul else "")
    ),
    st.integers(0, 400),
    st.text(st.characters(codec="utf-8", exclude_characters="\x00"), max_size=1200),
    st.booleans(),
    st.booleans(),
)


@settings(max_examples=examples(300), deadline=None)
@given(concept=_IDS, text=_DOCUMENTS)
def test_a_write_is_acknowledged_exactly_when_a_fresh_walk_serves_it(
    tmp_path_factory: pytest.TempPathFactory, concept: str, text: str
) -> None:
    bundle = tmp_path_factory.mktemp("agree")
    kb = _SmallLimits(LocalDocumentStore(bundle), name="KB", refresh_seconds=None)
    try:
        [written] = kb.write([{"text": text, "metadata": {"id": concept}}])
    except KnowledgeError:  # KnowledgePathError included
        assert _files(bundle) == []  # refused: nothing was written
        return
    fresh = _SmallLimits(LocalDocumentStore(bundle), name="KB", refresh_seconds=None)
    assert fresh.diagnostics == []
    [record] = fresh.fetch([written])
    assert record["text"] == text


def test_a_second_file_for_the_same_concept_id_is_refused(
    okf: tuple[Path, OKFManager, dict[str, Any]],
) -> None:
    bundle, kb, _ = okf
    document = "---\ntype: Note\n---\nbody\n"
    kb.write([{"text": document, "metadata": {"id": "sub/x"}}])
    with pytest.raises(KnowledgeError, match=r"same concept id as sub/x\.md"):
        kb.write([{"text": document, "metadata": {"id": "sub/x.MD"}}])
    assert _files(bundle) == ["sub/x.md"]  # one of the two would have shadowed the other
