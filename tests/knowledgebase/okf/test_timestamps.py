"""OKF timestamps as the spec states them, through the package's readers and writers.

OKF 0.2 §5: every timestamp-valued key is an ISO 8601 datetime with an explicit UTC offset, and
a value without a ``T`` or an offset is ignored. Real: the two third-party bundles of
``../shared/data/okf-bundles`` read in place, the project's example bundle, bundles written to
tmp, the ``LocalDocumentStore``, ``OKFManager``, the tools ``KnowledgeBuilder`` builds,
``OKFCapability`` from a configuration mapping, the conformance check, and the curated
``FileKnowledgeStore`` over a folder in tmp. PyYAML's own ``safe_load`` (a YAML 1.1 loader, as
most tools use) stands for every other reader of a bundle this package rewrote.
"""

from __future__ import annotations

from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import pytest
import yaml

from agentkernel.knowledgebase import KnowledgeBuilder, OKFManager
from agentkernel.knowledgebase.okf.concept import is_reserved
from agentkernel.knowledgebase.okf.conformance import check_bundle
from agentkernel.knowledgestore import FileKnowledgeStore
from agentkernel.roles import OKFCapability
from agentkernel.storage import frontmatter
from agentkernel.storage.local import LocalDocumentStore
from tests.knowledgebase.okf.helpers import JUNE_2026, Clock, concept, write_bundle
from tests.support import OKF_BUNDLES, REPO, okf_bundle

SHARED = ("ga4", "crypto_bitcoin")
JUNE = datetime.fromtimestamp(JUNE_2026, UTC)  # the Clock's default instant


# the last key of every timestamp-valued key of OKF 0.2 §5 (stale_after, generated.at,
# verified[].at, sources[].last_modified, usage_window.from/to); kept apart from the package's
# own list so that this module runs against any version of it
_TIMESTAMP_KEYS = {"stale_after", "at", "last_modified", "from", "to"}


def timestamp_fields(value: Any, where: str = "") -> list[tuple[str, Any]]:
    """Every timestamp-valued leaf of a frontmatter, as ``(dotted key, value)``."""
    found: list[tuple[str, Any]] = []
    if isinstance(value, dict):
        for key, item in value.items():
            name = f"{where}.{key}" if where else str(key)
            if key in _TIMESTAMP_KEYS and not isinstance(item, dict | list):
                found.append((name, item))
            else:
                found += timestamp_fields(item, name)
    elif isinstance(value, list):
        for item in value:
            found += timestamp_fields(item, where)
    return found


def _concepts(root: Path) -> list[Path]:
    return sorted(
        path
        for path in root.rglob("*.md")
        if not is_reserved(path.name) and frontmatter.split(path.read_text("utf-8")) is not None
    )


def _corpus() -> list[Any]:
    """Every concept document of the shared bundles and of the project's examples."""
    found = []
    for name in SHARED:
        root = OKF_BUNDLES / name
        found += [
            pytest.param(p, True, id=str(p.relative_to(OKF_BUNDLES))) for p in _concepts(root)
        ]
    examples = REPO / "examples"
    found += [pytest.param(p, False, id=str(p.relative_to(REPO))) for p in _concepts(examples)]
    return found


CORPUS = _corpus()


def _stamps(text: str) -> list[tuple[str, Any]]:
    return timestamp_fields(frontmatter.parse(text)[0])


def _stamps_elsewhere(text: str) -> list[tuple[str, Any]]:
    """The timestamps as another tool's YAML 1.1 loader reads the document."""
    raw = frontmatter.split(text)
    assert raw is not None
    return timestamp_fields(yaml.safe_load(raw[0]))


def test_the_corpus_holds_timestamps() -> None:
    okf_bundle("ga4")  # the shared data is there (skips, or fails under CI, when absent)
    assert len(CORPUS) >= 50
    stamped = [p for p in CORPUS if _stamps(p.values[0].read_text("utf-8"))]
    assert len(stamped) >= 40  # generated.at, verified.at, stale_after in most of them


@pytest.mark.parametrize(("path", "shared"), CORPUS)
def test_a_rewrite_keeps_every_timestamp_string(path: Path, shared: bool) -> None:
    original = path.read_text("utf-8")
    meta, body = frontmatter.parse(original)
    rewritten = frontmatter.render(meta, body)  # the one writer of every store's documents
    before = _stamps(original)
    assert all(isinstance(value, str) for _, value in before), before
    assert _stamps(rewritten) == before
    # and any other tool reading the rewrite gets the same strings, not date objects that
    # it would write back as "2026-07-10 21:16:21+00:00"
    assert _stamps_elsewhere(rewritten) == before
    if shared:  # written by OKF's reference producer: the rewrite is the same bytes
        assert rewritten == original


def test_an_agents_okf_write_keeps_every_timestamp_string_byte_for_byte(tmp_path: Path) -> None:
    root = write_bundle(tmp_path / "b", {"index.md": "# Notes\n"})
    kb = OKFManager(LocalDocumentStore(root), name="kb", refresh_seconds=None)
    write_kb = {t.__name__: t for t in KnowledgeBuilder([kb]).build()}["write_kb"]
    for param in CORPUS:
        original = param.values[0].read_text("utf-8")
        answer = write_kb("kb", text=original)
        assert answer.startswith("Wrote 1 record(s) to 'kb': ['generated/"), answer
        written_id = answer.split("['", 1)[1].split("']", 1)[0]
        written = (root / f"{written_id}.md").read_text("utf-8")
        raw = frontmatter.split(original)
        assert raw is not None
        assert written.startswith(f"---\n{raw[0]}"), written_id  # the agent's lines, as sent
        assert _stamps(written)[: len(_stamps(original))] == _stamps(original)
        assert written.endswith(raw[1])


def _stale_bundle(root: Path) -> Path:
    return write_bundle(
        root,
        {
            "m/instant.md": concept("Metric", "Instant", stale_after="2026-01-01T00:00:00Z"),
            "m/offset.md": concept("Metric", "Offset", stale_after="'2026-01-01T02:00:00+02:00'"),
            "m/bare.md": concept("Metric", "Bare date", stale_after="2026-01-01"),
            "m/naive.md": concept("Metric", "Naive", stale_after="2026-01-01T00:00:00"),
            "m/spaced.md": concept("Metric", "Spaced", stale_after="2026-01-01 00:00:00+00:00"),
            "m/future.md": concept("Metric", "Future", stale_after="2027-01-01T00:00:00Z"),
        },
    )


def _labels(answer: str) -> dict[str, str]:
    """Concept id -> ``STALE`` or ``fresh``, from the lines the tools print."""
    labels = {}
    for line in answer.splitlines():
        if line.startswith(("- [", "[")) and "] " in line:
            cid = line.split("[", 1)[1].split("]", 1)[0]
            labels[cid] = "STALE" if "; STALE" in line else "fresh"
    return labels


def test_only_an_instant_with_an_offset_makes_a_concept_stale(tmp_path: Path) -> None:
    root = _stale_bundle(tmp_path / "b")
    kb = OKFManager(LocalDocumentStore(root), name="kb", clock=Clock(), refresh_seconds=None)
    tools = {t.__name__: t for t in KnowledgeBuilder([kb]).build()}
    expected = {
        "m/instant": "STALE",
        "m/offset": "STALE",
        "m/bare": "fresh",  # a date without a time: ignored (OKF 0.2 §5)
        "m/naive": "fresh",  # no offset: ignored
        "m/spaced": "fresh",  # YAML 1.1's form, no 'T': ignored
        "m/future": "fresh",
    }
    assert _labels(tools["browse_kb"]("kb", "m/")) == expected
    assert _labels(tools["search_kb"]("kb", "instant offset bare naive spaced future", 10)) == (
        expected
    )
    fetched = tools["fetch_kb"]("kb", ",".join(expected))
    assert _labels(fetched) == expected
    assert "stale_after: 2026-01-01\n" in fetched  # the text as written


def test_legacy_dates_read_a_bare_date_as_midnight_utc_when_configured(tmp_path: Path) -> None:
    root = _stale_bundle(tmp_path / "b")

    def labels(**entry: Any) -> dict[str, str]:
        database = {"type": "local", "uri": str(root), "consumer": ["A"], **entry}
        capability = OKFCapability.from_config({"okf": {"databases": {"kb": database}}})
        tools = {t.__name__: t for t in capability.tools_for("A")}
        return _labels(tools["browse_kb"]("kb", "m/"))

    assert labels()["m/bare"] == "fresh"  # off by default
    legacy = labels(legacy_dates=True)
    assert legacy["m/bare"] == "STALE"  # 2026-01-01 read as 2026-01-01T00:00:00Z, now past
    assert legacy["m/naive"] == "fresh" and legacy["m/spaced"] == "fresh"  # still ignored
    assert legacy["m/instant"] == "STALE" and legacy["m/future"] == "fresh"


def test_check_warns_about_each_value_naming_the_file_the_key_and_the_fix(tmp_path: Path) -> None:
    root = _stale_bundle(tmp_path / "b")
    write_bundle(
        root,
        {
            "m/trust.md": concept(
                "Metric",
                "Trust",
                generated="{by: agent/1, at: 2026-05-01}",
                verified="[{by: 'human:ana', at: 2026-05-02T10:00:00}]",
                sources="[{resource: x, last_modified: '2026-05-02 10:00:00+00:00'}]",
            ),
        },
    )
    store = LocalDocumentStore(root, writable=False)
    report = check_bundle(store, now=JUNE)
    assert report.conformant  # a warning, never an error: consumers must not reject (§11)
    assert sorted(report.stale) == ["m/instant", "m/offset"]
    warnings = {(w.path, w.message) for w in report.warnings}

    def warned(path: str, start: str, fix: str) -> None:
        found = [m for p, m in warnings if p == path and m.startswith(start)]
        assert found and fix in found[0], (path, start, sorted(warnings))

    warned("m/bare.md", "stale_after '2026-01-01' is a date without a time", "2026-01-01T00:00:00Z")
    warned("m/naive.md", "stale_after '2026-01-01T00:00:00' has no UTC offset", "T00:00:00Z")
    warned("m/spaced.md", "stale_after '2026-01-01 00:00:00+00:00' has a space", "01T00:00:00+")
    warned("m/trust.md", "generated.at '2026-05-01' is a date without a time", "T00:00:00Z")
    warned("m/trust.md", "verified.at '2026-05-02T10:00:00' has no UTC offset", "10:00:00Z")
    warned("m/trust.md", "sources.last_modified '2026-05-02 10:00:00+00:00' has a", "T10:")
    assert not [p for p, _ in warnings if p in ("m/instant.md", "m/offset.md", "m/future.md")]
    legacy = check_bundle(store, now=JUNE, legacy_dates=True)
    assert sorted(legacy.stale) == ["m/bare", "m/instant", "m/offset"]
    assert any("only because legacy dates are turned on" in w.message for w in legacy.warnings)


def test_a_curated_store_edit_keeps_timestamps_and_their_structure(tmp_path: Path) -> None:
    folder = tmp_path / "knowledge"
    page = (
        "---\ntype: concept\ntitle: Tides\nstale_after: 2027-09-23T00:00:00Z\n"
        "reviewed: '2026-05-02T10:00:00+02:00'\nusage_count: 5000\n"
        "generated: {by: 'human:ana', at: 2026-05-01T09:00:00Z}\n"
        "verified:\n  - {by: process:nightly, at: 2026-05-02T10:00:00Z}\n"
        "---\n\nThe sea rises and falls.\n"
    )
    write_bundle(folder, {"concepts/tides.md": page})
    store = FileKnowledgeStore(folder)
    store.edit("concept/tides", "rises and falls", "rises and falls twice a day")
    text = (folder / "concepts/tides.md").read_text("utf-8")
    assert "twice a day" in text
    before, _ = frontmatter.parse(page)
    after, _ = frontmatter.parse(text)
    assert {k: v for k, v in after.items() if k != "updated"} == before  # values as read
    assert (
        timestamp_fields(after)
        == timestamp_fields(before)
        == [
            ("stale_after", "2027-09-23T00:00:00Z"),
            ("generated.at", "2026-05-01T09:00:00Z"),
            ("verified.at", "2026-05-02T10:00:00Z"),
        ]
    )
    elsewhere = yaml.safe_load(frontmatter.split(text)[0])  # type: ignore[index]
    assert elsewhere["reviewed"] == "2026-05-02T10:00:00+02:00"
    assert timestamp_fields(elsewhere) == timestamp_fields(before)
    # an OKF reader still sees who verified it
    served = OKFManager(LocalDocumentStore(folder, writable=False), refresh_seconds=None)
    assert served.fetch(["concepts/tides"])[0]["metadata"]["trust"] == "machine-confirmed"
