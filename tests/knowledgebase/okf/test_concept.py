"""Parsing one document into a manifest entry, trust tiers, instants, and authored documents.

Pure computation on bytes and strings; nothing to start.
"""

from __future__ import annotations

from datetime import UTC, datetime

import pytest

from agentkernel.knowledgebase.okf._authoring import draft, slugify, title_from_text, with_suffix
from agentkernel.knowledgebase.okf.concept import (
    ConceptError,
    concept_id,
    is_reserved,
    parse_concept,
    trust_tier,
)


def test_trust_tiers_follow_the_spec() -> None:
    assert trust_tier(None) == "unverified"
    assert trust_tier([]) == "unverified"
    assert trust_tier({"by": "human:ana", "at": "2026-01-01T00:00:00Z"}) == "human-reviewed"
    assert trust_tier([{"by": "process:nightly"}]) == "machine-confirmed"
    assert trust_tier([{"by": "process:nightly"}, {"by": "human:bo"}]) == "human-reviewed"
    assert trust_tier([{"by": "agent/1.0"}]) == "machine-confirmed"
    assert trust_tier("human:ana") == "unverified"  # not a mapping or list


def test_a_bare_date_or_naive_stale_after_never_makes_a_concept_stale() -> None:
    later = datetime(2030, 1, 1, tzinfo=UTC)
    for value in ("2026-09-23", "2026-09-23T00:00:00", "2026-09-23 00:00:00+00:00"):
        data = f"---\ntype: Metric\nstale_after: {value}\n---\n".encode()
        concept = parse_concept("m.md", "t", len(data), data, complete=True)
        assert concept.stale_after is None and not concept.is_stale(later), value
        assert concept.frontmatter["stale_after"] == value  # kept as written
    data = b"---\ntype: Metric\nstale_after: 2026-09-23\n---\n"
    concept = parse_concept("m.md", "t", len(data), data, complete=True)
    assert concept.is_stale(later, legacy_dates=True)  # the operator's setting
    assert not concept.is_stale(datetime(2026, 9, 22, 23, 59, tzinfo=UTC), legacy_dates=True)


def test_parse_keeps_values_as_written() -> None:
    data = b"---\ntype: Metric\nstale_after: 2026-09-23T00:00:00Z\ntags: [a, b]\n---\n# Body\n"
    concept = parse_concept("m/rev.md", "t", len(data), data, complete=True)
    assert concept.id == "m/rev"
    assert concept.frontmatter["stale_after"] == "2026-09-23T00:00:00Z"
    assert concept.title == "rev" and concept.tags == ["a", "b"]
    assert concept.body_head == "# Body\n"
    assert concept.is_stale(datetime(2026, 9, 23, tzinfo=UTC))
    assert not concept.is_stale(datetime(2026, 9, 22, tzinfo=UTC))


def test_a_character_cut_by_the_leading_read_is_tolerated() -> None:
    data = "---\ntype: Note\n---\nnaïve".encode()
    head = data[: data.index("ï".encode()) + 1]
    concept = parse_concept("n.md", "t", len(data), head, complete=False)
    assert concept.body_head == "na" and not concept.complete
    with pytest.raises(ConceptError):
        parse_concept("n.md", "t", len(data), head, complete=True)


@pytest.mark.parametrize("path", ["index.md", "a/INDEX.md", "a/b/log.md", "Log.md"])
def test_reserved_names_at_every_level(path: str) -> None:
    assert is_reserved(path)


def test_concept_ids_drop_the_suffix() -> None:
    assert concept_id("a/b.md") == "a/b" and not is_reserved("a/index2.md")


def test_titles_and_slugs() -> None:
    assert title_from_text("\n\n## Late  orders \nmore") == "Late orders"
    assert slugify("Late orders: 23:00 → next day!") == "late-orders-23-00-next-day"
    assert slugify("日本語") == "note"
    assert len(slugify("word " * 40)) <= 60
    assert with_suffix("g/x.md", 1) == "g/x.md" and with_suffix("g/x.md", 3) == "g/x-3.md"


def test_authored_draft_is_an_okf_concept() -> None:
    made = draft(
        {"text": "Pager rota\nWho is on call this week.", "metadata": {"tags": ["ops"]}},
        actor="bot/1",
        now_iso="2026-06-01T00:00:00Z",
        prefix="generated",
    )
    assert made.path == "generated/pager-rota.md" and not made.exact
    concept = parse_concept(made.path, "", len(made.data), made.data, complete=True)
    assert concept.type == "Note" and concept.title == "Pager rota"
    assert concept.description == "Who is on call this week."
    assert concept.frontmatter["generated"] == {"by": "bot/1", "at": "2026-06-01T00:00:00Z"}
    assert "sources" not in concept.frontmatter
