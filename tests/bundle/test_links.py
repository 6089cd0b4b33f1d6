"""The bundle's one link parser, and what the curated store makes of a link in a code fence.

Real: the parser is the library's; the store is a real ``FileKnowledgeStore`` writing real
files in a temporary folder, and a real ``BundleKnowledgeStore`` over a real
``LocalDocumentStore``.
"""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

import pytest

from agentkernel.bundle.links import link_targets, replace_targets, strip_links
from agentkernel.knowledgestore import (
    BundleKnowledgeStore,
    FileKnowledgeStore,
    KnowledgeStore,
    linked_ids,
)
from agentkernel.storage.local import LocalDocumentStore

FENCED = """Tides follow [the moon](concept/moon).

```markdown
Write links as [text](concept/mars) or [file](../concepts/venus.md).
```

~~~
[also not a link](concept/jupiter)
~~~
"""


def test_links_in_code_fences_and_images_are_not_links() -> None:
    assert link_targets(FENCED) == ["concept/moon"]
    assert link_targets("![a picture](concept/moon) and [b](x.md#part 'title')") == ["x.md#part"]
    assert linked_ids(FENCED) == ["concept/moon"]


def test_replacing_targets_leaves_everything_else_as_written() -> None:
    text = FENCED + "\n[again](concept/moon#phases)\n"
    replaced = replace_targets(text, lambda t: t.upper() if t.startswith("concept/") else None)
    assert replaced == text.replace("(concept/moon)", "(CONCEPT/MOON)").replace(
        "(concept/moon#phases)", "(CONCEPT/MOON#PHASES)"
    )
    assert strip_links("See [the moon](concept/moon).") == "See the moon."


@pytest.fixture(params=["file", "bundle-local"])
def make_store(request: pytest.FixtureRequest, tmp_path: Path) -> Callable[[], KnowledgeStore]:
    def make() -> KnowledgeStore:
        if request.param == "file":
            return FileKnowledgeStore(tmp_path / "knowledge")
        (tmp_path / "bundle").mkdir(exist_ok=True)
        return BundleKnowledgeStore(LocalDocumentStore(tmp_path / "bundle"), refresh_seconds=0)

    return make


def test_a_link_in_a_fenced_code_block_of_a_page_is_no_link(
    make_store: Callable[[], KnowledgeStore],
) -> None:
    """Not validated when written, not counted as a backlink, not reported by ``check``."""
    store = make_store()
    store.create("concept", "moon", "Moon", "The moon pulls the sea.")
    # concept/mars does not exist: a real link to it would be refused
    store.create("concept", "tides", "Tides", FENCED)
    reopened = make_store()  # what is on disk, read back by a new store object
    tides = reopened.read("concept/tides")
    assert tides is not None and tides.content == FENCED.strip()
    mars_example = "[text](concept/mars)"
    assert mars_example in tides.content  # shown as written, not turned into a file path
    moon = reopened.read("concept/moon")
    assert moon is not None and moon.linked_from == ["concept/tides"]
    report = reopened.check()
    assert report.broken_links == []
    assert "concept/tides" in report.orphans  # nothing links to it; the fence doesn't count
