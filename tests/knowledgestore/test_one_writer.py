"""``index.md`` and ``log.md`` are written by the bundle core's one renderer of each, in fact.

Real: a ``FileKnowledgeStore`` and a ``BundleKnowledgeStore`` writing real files in a temporary
folder. The bundle core's renderers (``bundle.catalog.render_index``, ``bundle.logfile.entry``
and ``bundle.logfile.prepend``) are wrapped to count their calls and keep what they returned;
what the stores write must be exactly that, so no second writer of either format can exist.
"""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from agentkernel.bundle import catalog, logfile
from agentkernel.knowledgestore import BundleKnowledgeStore, FileKnowledgeStore, KnowledgeStore
from agentkernel.knowledgestore._stored import index_head
from agentkernel.storage.local import LocalDocumentStore


def _counted(monkeypatch: pytest.MonkeyPatch, module: Any, name: str) -> list[Any]:
    """Wrap ``module.name``; return the list of what each call returned."""
    returned: list[Any] = []
    original: Callable[..., Any] = getattr(module, name)

    def counting(*args: Any, **kwargs: Any) -> Any:
        returned.append(original(*args, **kwargs))
        return returned[-1]

    monkeypatch.setattr(module, name, counting)
    return returned


@pytest.mark.parametrize("kind", ["file", "bundle"])
def test_every_index_md_and_log_md_written_is_the_bundle_cores_rendering(
    kind: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    folder = tmp_path / "kb"
    folder.mkdir()
    store: KnowledgeStore = (
        FileKnowledgeStore(folder)
        if kind == "file"
        else BundleKnowledgeStore(LocalDocumentStore(folder))
    )
    indexes = _counted(monkeypatch, catalog, "render_index")
    entries = _counted(monkeypatch, logfile, "entry")
    logs = _counted(monkeypatch, logfile, "prepend")
    store.create("entity", "moon", "Moon", "Earth's satellite.")
    assert len(indexes) == 1
    assert (folder / "index.md").read_bytes() == index_head() + indexes[-1].encode()
    store.create("concept", "tides", "Tides", "Pulled by the [Moon](entity/moon).")
    store.retire("entity/moon", "Merged into tides.")
    assert len(indexes) == 3 and "[Moon]" not in indexes[-1] and "[Tides]" in indexes[-1]
    assert (folder / "index.md").read_bytes() == index_head() + indexes[-1].encode()
    store.log("update", "Merged the moon", ["concept/tides"])
    assert len(entries) == 1 and len(logs) == 1 and entries[0] in logs[0]
    assert (folder / "log.md").read_text(encoding="utf-8") == logs[0]
    assert store.index().startswith("# Concepts") and len(indexes) == 4  # the tools' index too
