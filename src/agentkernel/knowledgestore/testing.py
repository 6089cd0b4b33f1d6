# ruff: noqa: D102 - each test is named for the rule it checks
"""The conformance suite every knowledge store passes, exported for third-party stores.

Subclass :class:`KnowledgeStoreConformance` in a test module and provide a ``make_store``
fixture: a factory that opens a fresh, empty store (``page_types`` are declared types)::

    import pytest
    from agentkernel.knowledgestore.testing import KnowledgeStoreConformance

    class TestMyStore(KnowledgeStoreConformance):
        @pytest.fixture
        def make_store(self, tmp_path):
            return lambda page_types=None: MyStore(tmp_path / "db", page_types=page_types)

Optionally override ``remove_behind_store`` (delete a page without the store's API, the way a
person deleting a file would) to run the broken-link check. It needs ``pytest``.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Iterator

import pytest

from agentkernel.knowledgestore.base import KnowledgeStore
from agentkernel.knowledgestore.errors import KnowledgeStoreError
from agentkernel.knowledgestore.model import NewPage, PageInfo, PageLink, PageType
from agentkernel.storage.base import MAX_DOCUMENT_BYTES

StoreFactory = Callable[..., KnowledgeStore]
_ISO_INSTANT = re.compile(r"^\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2}(\.\d+)?(Z|[+-]\d{2}:\d{2})$")
_TOPIC = PageType(
    name="topic",
    dir="topics",
    template="<What the topic covers.>",
    index_section="Topics",
    description="A course topic.",
    index_fields=("mastery",),
)


def _snapshot(store: KnowledgeStore) -> tuple[list[str], str]:
    return [info.id for info in store.list()], store.index()


def _names(page: PageInfo) -> tuple[str, str, str, str]:
    """What names a page: its id, type, slug and title."""
    return page.id, page.type, page.slug, page.title


class KnowledgeStoreConformance:
    """Every rule of the ``KnowledgeStore`` contract, as tests over a ``make_store`` fixture."""

    @pytest.fixture
    def make_store(self) -> StoreFactory:
        """Open a fresh, empty store; override it in your test class."""
        raise NotImplementedError("define a make_store fixture returning a store factory")

    @pytest.fixture
    def remove_behind_store(self) -> Callable[[KnowledgeStore, str], None] | None:
        """Delete a page without the store's API; ``None`` skips the broken-link test."""
        return None

    @pytest.fixture
    def store(self, make_store: StoreFactory) -> Iterator[KnowledgeStore]:
        """A fresh store with only the built-in types."""
        opened = make_store()
        yield opened
        opened.close()

    # -- types, ids, create, read --------------------------------------------------------

    def test_built_in_types_have_templates(self, store: KnowledgeStore) -> None:
        names = [t.name for t in store.types()]
        for name in ("summary", "concept", "entity", "synthesis", "preference"):
            assert name in names
        assert all(t.template.strip() and t.index_section for t in store.types())

    def test_create_then_read_gives_the_page_back(self, store: KnowledgeStore) -> None:
        page_id = store.create(
            "concept",
            "spring-tides",
            "Spring tides",
            "Tides at **new moon**.\n\n## Why\n- Sun",
            {"aliases": "king tides"},
        )
        assert page_id == "concept/spring-tides"
        page = store.read(page_id)
        assert page is not None
        assert _names(page) == ("concept/spring-tides", "concept", "spring-tides", "Spring tides")
        assert page.content == "Tides at **new moon**.\n\n## Why\n- Sun"
        assert page.fields["aliases"] == "king tides"
        assert page.status == "active"
        assert page.linked_from == []
        assert all(isinstance(v, str) for v in page.fields.values())

    def test_read_of_unknown_page_is_none(self, store: KnowledgeStore) -> None:
        assert store.read("concept/nothing-here") is None
        assert store.read("not an id") is None

    def test_list_describes_pages(self, store: KnowledgeStore) -> None:
        store.create("entity", "moon", "Moon", "Earth's satellite. It drives the tides.")
        [info] = store.list()
        assert _names(info) == ("entity/moon", "entity", "moon", "Moon")
        assert info.description == "Earth's satellite."
        assert info.status == "active"

    @pytest.mark.parametrize("slug", ["Spring-Tides", "spring tides", "spring--tides", "-x", ""])
    def test_create_refuses_invalid_slug(self, store: KnowledgeStore, slug: str) -> None:
        with pytest.raises(KnowledgeStoreError, match="slug"):
            store.create("concept", slug, "Title", "Body.")
        assert store.list() == []

    @pytest.mark.parametrize("slug", ["index", "log", "x" * 300, "-".join(["tide"] * 80)])
    def test_create_refuses_reserved_and_overlong_slugs(
        self, store: KnowledgeStore, slug: str
    ) -> None:
        with pytest.raises(KnowledgeStoreError, match=r"(reserved|characters)") as refused:
            store.create("concept", slug, "Title", "Body.")
        assert "/" + slug[:20] not in str(refused.value).split("'")[0]  # no path in the message
        assert store.list() == []
        assert store.read(f"concept/{slug}") is None

    def test_create_refuses_unknown_type_naming_the_known_ones(self, store: KnowledgeStore) -> None:
        with pytest.raises(KnowledgeStoreError, match="concept"):
            store.create("recipe", "bread", "Bread", "Flour.")

    def test_create_refuses_an_existing_id(self, store: KnowledgeStore) -> None:
        store.create("concept", "tides", "Tides", "First.")
        with pytest.raises(KnowledgeStoreError, match="already exists"):
            store.create("concept", "tides", "Tides again", "Second.")
        page = store.read("concept/tides")
        assert page is not None and page.content == "First."

    def test_create_refuses_links_to_missing_pages(self, store: KnowledgeStore) -> None:
        with pytest.raises(KnowledgeStoreError) as refused:
            store.create(
                "concept", "tides", "Tides", "See [Moon](entity/moon) and [Sun](entity/sun)."
            )
        assert "entity/moon" in str(refused.value) and "entity/sun" in str(refused.value)
        assert "Create" in str(refused.value)
        assert store.list() == []

    def test_declared_types_are_labels_the_store_holds(self, make_store: StoreFactory) -> None:
        store = make_store([_TOPIC])
        try:
            assert "topic" in [t.name for t in store.types()]
            store.create("topic", "tides", "Tides", "The tides unit.", {"mastery": "low"})
            assert [i.id for i in store.list()] == ["topic/tides"]
            assert "# Topics" in store.index()
            assert "mastery: low" in store.index()
        finally:
            store.close()

    # -- create_many ---------------------------------------------------------------------

    def test_create_many_allows_links_among_new_pages(self, store: KnowledgeStore) -> None:
        ids = store.create_many(
            [
                NewPage("summary", "tide-tables", "Tide tables", "Feeds [Tides](concept/tides)."),
                NewPage("concept", "tides", "Tides", "From [the tables](summary/tide-tables)."),
            ]
        )
        assert ids == ["summary/tide-tables", "concept/tides"]
        tides = store.read("concept/tides")
        assert tides is not None and tides.linked_from == ["summary/tide-tables"]

    @pytest.mark.parametrize(
        "bad",
        [
            NewPage("concept", "Bad Slug", "Bad", "Body."),
            NewPage("concept", "broken", "Broken", "Links [nowhere](concept/nowhere)."),
            NewPage("concept", "first", "Duplicate of the first", "Same id twice."),
        ],
        ids=["invalid-slug", "broken-link", "duplicate-id"],
    )
    def test_create_many_is_all_or_none(self, store: KnowledgeStore, bad: NewPage) -> None:
        store.create("entity", "moon", "Moon", "Satellite.")
        before = _snapshot(store)
        pages = [
            NewPage("concept", "first", "First", "Links [Moon](entity/moon)."),
            bad,
            NewPage("concept", "third", "Third", "Links [First](concept/first)."),
        ]
        with pytest.raises(KnowledgeStoreError):
            store.create_many(pages)
        assert _snapshot(store) == before
        assert store.read("concept/first") is None and store.read("concept/third") is None

    # -- edit and rewrite ----------------------------------------------------------------

    def test_edit_replaces_the_one_occurrence(self, store: KnowledgeStore) -> None:
        store.create("concept", "tides", "Tides", "High water twice a day. Low water too.")
        store.edit("concept/tides", "twice a day", "about every 12 hours", {"aliases": "tide"})
        page = store.read("concept/tides")
        assert page is not None
        assert page.content == "High water about every 12 hours. Low water too."
        assert page.fields["aliases"] == "tide"
        store.edit("concept/tides", "Low water", "Ebb", {"aliases": None})
        page = store.read("concept/tides")
        assert page is not None and "aliases" not in page.fields

    @pytest.mark.parametrize(
        ("content", "old", "refusal"),
        [
            ("High water.", "low water", "isn't in"),
            ("Water rises. Water falls.", "Water", "2 times"),
        ],
        ids=["no match", "two matches"],
    )
    def test_edit_without_exactly_one_match_fails_and_changes_nothing(
        self, store: KnowledgeStore, content: str, old: str, refusal: str
    ) -> None:
        store.create("concept", "tides", "Tides", content)
        with pytest.raises(KnowledgeStoreError, match=refusal):
            store.edit("concept/tides", old, "ebb")
        page = store.read("concept/tides")
        assert page is not None and page.content == content

    def test_edit_and_rewrite_refuse_links_to_missing_pages(self, store: KnowledgeStore) -> None:
        store.create("concept", "tides", "Tides", "Water rises.")
        with pytest.raises(KnowledgeStoreError, match="entity/moon"):
            store.edit("concept/tides", "rises", "rises with the [Moon](entity/moon)")
        with pytest.raises(KnowledgeStoreError, match="entity/moon"):
            store.rewrite("concept/tides", "Driven by the [Moon](entity/moon).")
        page = store.read("concept/tides")
        assert page is not None and page.content == "Water rises."

    def test_edit_of_a_missing_page_is_refused(self, store: KnowledgeStore) -> None:
        with pytest.raises(KnowledgeStoreError, match="no page"):
            store.edit("concept/nothing", "a", "b")

    def test_rewrite_replaces_the_content_and_keeps_the_id(self, store: KnowledgeStore) -> None:
        store.create("entity", "moon", "Moon", "Satellite.")
        store.create("concept", "tides", "Tides", "Old text about [Moon](entity/moon).")
        store.rewrite("concept/tides", "New text.", {"title": "Ocean tides"})
        page = store.read("concept/tides")
        assert page is not None
        assert (page.content, page.title) == ("New text.", "Ocean tides")
        moon = store.read("entity/moon")
        assert moon is not None and moon.linked_from == []

    def test_lifecycle_fields_are_refused(self, store: KnowledgeStore) -> None:
        store.create("concept", "tides", "Tides", "Water.")
        with pytest.raises(KnowledgeStoreError, match="knowledge_retire"):
            store.edit("concept/tides", "Water", "Sea", {"status": "retired"})
        assert [i.id for i in store.list()] == ["concept/tides"]

    def test_summary_ingested_is_set_by_the_store(self, store: KnowledgeStore) -> None:
        store.create(
            "summary",
            "tables",
            "Tables",
            "What the tables say.",
            {"ingested": "1999-01-01T00:00:00Z", "file": "docs/tables.pdf"},
        )
        page = store.read("summary/tables")
        assert page is not None
        assert page.fields["ingested"] != "1999-01-01T00:00:00Z"
        assert _ISO_INSTANT.match(page.fields["ingested"])
        assert page.fields["file"] == "docs/tables.pdf"
        stamped = page.fields["ingested"]
        store.edit("summary/tables", "say", "state", {"ingested": "2000-01-01T00:00:00Z"})
        page = store.read("summary/tables")
        assert page is not None and page.fields["ingested"] == stamped
        store.rewrite("summary/tables", "Redone.", {"ingested": "2000-01-01T00:00:00Z"})
        page = store.read("summary/tables")
        assert page is not None and _ISO_INSTANT.match(page.fields["ingested"])
        assert page.fields["ingested"] >= stamped

    # -- links ---------------------------------------------------------------------------

    def test_links_come_back_as_ids_with_backlinks(self, store: KnowledgeStore) -> None:
        store.create("entity", "moon", "Moon", "## Orbit\nSatellite.")
        store.create("concept", "tides", "Tides", "Pulled by [the Moon](entity/moon#orbit).")
        store.create("synthesis", "why-tides", "Why tides", "See [Tides](concept/tides).")
        tides = store.read("concept/tides")
        assert tides is not None
        assert tides.content == "Pulled by [the Moon](entity/moon#orbit)."
        assert tides.linked_from == ["synthesis/why-tides"]
        moon = store.read("entity/moon")
        assert moon is not None and moon.linked_from == ["concept/tides"]

    # -- supersede and retire ------------------------------------------------------------

    def test_supersede_marks_the_page_and_keeps_it(self, store: KnowledgeStore) -> None:
        store.create("concept", "old-tides", "Old tides", "An outdated view.")
        store.create("concept", "tides", "Tides", "The current view.")
        store.supersede("concept/old-tides", "concept/tides", "a better source")
        old = store.read("concept/old-tides")
        assert old is not None
        assert old.status == "superseded"
        assert old.fields["superseded_by"] == "concept/tides"
        assert old.content.startswith("> Superseded on ")
        assert "a better source" in old.content and "](concept/tides)" in old.content
        assert old.content.endswith("An outdated view.")
        assert "concept/old-tides" in [i.id for i in store.list()]
        assert "(concept/old-tides)" in store.index()
        tides = store.read("concept/tides")
        assert tides is not None and tides.linked_from == ["concept/old-tides"]

    def test_supersede_refusals(self, store: KnowledgeStore) -> None:
        store.create("concept", "tides", "Tides", "Water.")
        with pytest.raises(KnowledgeStoreError, match="itself"):
            store.supersede("concept/tides", "concept/tides")
        with pytest.raises(KnowledgeStoreError, match="no page"):
            store.supersede("concept/tides", "concept/nothing")

    def test_retired_pages_are_hidden_but_readable(self, store: KnowledgeStore) -> None:
        store.create("concept", "tides", "Tides", "Tidal water rises.")
        store.create("concept", "waves", "Waves", "Tidal waves are not tides.")
        store.retire("concept/tides", "Learned from a wrong table")
        assert [i.id for i in store.list()] == ["concept/waves"]
        assert "concept/tides" not in store.index()
        assert [h.id for h in store.search("tidal")] == ["concept/waves"]
        page = store.read("concept/tides")
        assert page is not None
        assert page.status == "retired"
        assert page.content.startswith("> Retired on ")
        assert "Learned from a wrong table" in page.content
        assert page.content.endswith("Tidal water rises.")
        with pytest.raises(KnowledgeStoreError, match="retired already"):
            store.retire("concept/tides", "Again")

    def test_retire_needs_a_reason(self, store: KnowledgeStore) -> None:
        store.create("concept", "tides", "Tides", "Water.")
        with pytest.raises(KnowledgeStoreError, match="why"):
            store.retire("concept/tides", "  ")
        assert [i.id for i in store.list()] == ["concept/tides"]

    # -- index and search ----------------------------------------------------------------

    def test_index_lists_pages_by_section_linked_by_id(self, store: KnowledgeStore) -> None:
        assert store.index() == ""
        store.create("concept", "tides", "Tides", "Water that rises.", {"description": "Sea rise."})
        store.create("entity", "moon", "Moon", "Satellite.")
        index = store.index()
        assert "# Concepts" in index and "# Entities" in index
        assert index.index("# Concepts") < index.index("# Entities")
        assert "* [Tides](concept/tides) - Sea rise." in index
        assert "* [Moon](entity/moon) - Satellite." in index

    def test_search_ranks_title_above_alias_above_body(self, store: KnowledgeStore) -> None:
        store.create("concept", "body", "Water level", "Tides tides tides. Tides again.\nTides!")
        store.create("concept", "alias", "Sea rise", "Water.", {"aliases": "tides, flood"})
        store.create("concept", "title", "Tides", "Water.")
        hits = store.search("tides")
        assert [h.id for h in hits] == ["concept/title", "concept/alias", "concept/body"]
        assert hits[0].score > hits[1].score > hits[2].score
        assert hits[0].type == "concept" and hits[0].title == "Tides"
        assert "Tides tides" in hits[2].snippet

    def test_search_ignores_accents_and_case(self, store: KnowledgeStore) -> None:
        store.create("concept", "ecluse", "Écluse", "Une écluse régule le niveau d'EAU.")
        assert [h.id for h in store.search("ECLUSE")] == ["concept/ecluse"]
        assert [h.id for h in store.search("regule")] == ["concept/ecluse"]
        assert [h.id for h in store.search("niveau")] == ["concept/ecluse"]

    def test_search_matches_at_word_starts(self, store: KnowledgeStore) -> None:
        store.create("concept", "rips", "Rips", "A riptide pulls swimmers out.")
        store.create("concept", "tides", "Tides", "Spring-tides and neap tides.")
        assert [h.id for h in store.search("tide")] == ["concept/tides"]
        assert [h.id for h in store.search("rip")] == ["concept/rips"]
        assert [h.id for h in store.search("neap")] == ["concept/tides"]

    def test_search_limit_and_no_match(self, store: KnowledgeStore) -> None:
        for n in range(5):
            store.create("concept", f"tide-{n}", f"Tide {n}", "Water.")
        assert len(store.search("tide", limit=3)) == 3
        assert store.search("volcano") == []

    # -- check ---------------------------------------------------------------------------

    def test_check_finds_orphans_and_links_to_retired(self, store: KnowledgeStore) -> None:
        assert store.check().clean
        store.create("entity", "moon", "Moon", "Satellite.")
        store.create("concept", "tides", "Tides", "Pulled by [Moon](entity/moon).")
        store.create("summary", "tables", "Tables", "Nothing links here, and that is fine.")
        report = store.check()
        assert report.orphans == ["concept/tides"]
        assert report.broken_links == [] and report.links_to_retired == []
        store.retire("entity/moon", "Wrong")
        report = store.check()
        assert report.links_to_retired == [PageLink("concept/tides", "entity/moon")]

    def test_check_finds_broken_links(
        self,
        store: KnowledgeStore,
        remove_behind_store: Callable[[KnowledgeStore, str], None] | None,
    ) -> None:
        if remove_behind_store is None:
            pytest.skip("no way to remove a page behind this store's back")
        store.create("entity", "moon", "Moon", "Satellite.")
        store.create("concept", "tides", "Tides", "Pulled by [Moon](entity/moon).")
        remove_behind_store(store, "entity/moon")
        report = store.check()
        assert report.broken_links == [PageLink("concept/tides", "entity/moon")]

    def test_file_links_to_no_page_are_refused_like_id_links(self, store: KnowledgeStore) -> None:
        for content in (
            "See [nope](../concepts/nope.md).",
            "See [notes](notes/tide-notes.md).",
            "See [outside](../../x.md#top).",
        ):
            with pytest.raises(KnowledgeStoreError) as refused:
                store.create("concept", "tides", "Tides", content)
            written = content.split("](", 1)[1].split(")")[0].split("#")[0]
            assert written in str(refused.value) and "[text](type/slug)" in str(refused.value)
            assert store.read("concept/tides") is None and store.list() == []
        with pytest.raises(KnowledgeStoreError):
            store.create_many(
                [
                    NewPage("entity", "moon", "Moon", "Satellite."),
                    NewPage("concept", "tides", "Tides", "[gone](../concepts/gone.md)"),
                ]
            )
        assert store.list() == []
        store.create("concept", "tides", "Tides", "See [web](https://x.org/a.md).")
        before = store.read("concept/tides")
        with pytest.raises(KnowledgeStoreError, match=r"nope\.md"):
            store.edit("concept/tides", "See", "See [n](../concepts/nope.md) and")
        with pytest.raises(KnowledgeStoreError, match=r"nope\.md"):
            store.rewrite("concept/tides", "Now [n](../concepts/nope.md).")
        assert store.read("concept/tides") == before
        with pytest.raises(KnowledgeStoreError, match=r"draft\.md"):
            store.write_overview("Start at [Tides](concept/tides); [draft](../draft.md).")
        assert store.overview() == "" and store.check().broken_links == []

    # -- size bound ----------------------------------------------------------------------

    def test_a_page_over_the_size_bound_is_refused_and_nothing_is_written(
        self, store: KnowledgeStore
    ) -> None:
        huge = "x" * (MAX_DOCUMENT_BYTES + 1)
        bound = f"max_document_bytes={MAX_DOCUMENT_BYTES}"
        with pytest.raises(KnowledgeStoreError) as refused:
            store.create("concept", "huge", "Huge", huge)
        assert bound in str(refused.value) and "Nothing was written" in str(refused.value)
        assert "concept/huge" in str(refused.value) and len(str(refused.value)) < 500
        with pytest.raises(KnowledgeStoreError, match=bound):
            store.create_many(
                [NewPage("entity", "moon", "Moon", "Small."), NewPage("concept", "huge", "H", huge)]
            )
        assert store.list() == [] and store.index() == ""
        store.create("concept", "tides", "Tides", "Water rises.")
        before = store.read("concept/tides")
        with pytest.raises(KnowledgeStoreError, match=bound):
            store.rewrite("concept/tides", huge)
        with pytest.raises(KnowledgeStoreError, match=bound):
            store.edit("concept/tides", "rises", huge)
        with pytest.raises(KnowledgeStoreError, match=bound):
            store.write_overview(huge)
        assert store.read("concept/tides") == before and store.overview() == ""
        assert [h.id for h in store.search("water")] == ["concept/tides"]

    # -- log and overview ----------------------------------------------------------------

    def test_log_is_read_back_newest_first(self, store: KnowledgeStore) -> None:
        store.create("concept", "tides", "Tides", "Water.")
        store.log("ingest", "Read the tide tables", ["concept/tides"])
        store.log("query", "Answered  a question\nabout tides")
        store.log("lint", "Checked links")
        try:
            entries = store.recent_log(10)
        except NotImplementedError:
            pytest.skip("this store can't show its log")
        assert len(entries) == 3
        assert re.match(r"^## \[\d{4}-\d{2}-\d{2}\] lint \| Checked links$", entries[0])
        assert entries[1].endswith("] query | Answered a question about tides")
        assert entries[2].endswith("] ingest | Read the tide tables\n- pages: concept/tides")
        assert store.recent_log(2) == entries[:2]

    def test_log_refuses_what_it_cannot_record(self, store: KnowledgeStore) -> None:
        with pytest.raises(KnowledgeStoreError):
            store.log("", "Nothing")
        with pytest.raises(KnowledgeStoreError):
            store.log("update", "Something", ["not an id"])

    def test_overview_round_trip_with_validated_links(self, store: KnowledgeStore) -> None:
        assert store.overview() == ""
        store.create("concept", "tides", "Tides", "Water.")
        store.write_overview("# Overview\nAll about [Tides](concept/tides).")
        assert store.overview() == "# Overview\nAll about [Tides](concept/tides)."
        with pytest.raises(KnowledgeStoreError, match="entity/moon"):
            store.write_overview("And the [Moon](entity/moon).")
        assert store.overview() == "# Overview\nAll about [Tides](concept/tides)."
        assert store.check().orphans == []
