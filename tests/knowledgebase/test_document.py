"""DocumentKnowledgeBase: a KnowledgeBase over a DocumentStore, writability folded with ``and``.

Real LocalDocumentStore on a temporary directory; a minimal subclass supplies a meaning.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from agentkernel.knowledgebase.document import DocumentKnowledgeBase
from agentkernel.knowledgebase.errors import KnowledgeCapabilityError
from agentkernel.knowledgebase.model import KnowledgeCapabilities
from agentkernel.storage.local import LocalDocumentStore


class Plain(DocumentKnowledgeBase):
    def connect(self, **kwargs: Any) -> None:
        pass

    def get_description(self) -> str:
        return "plain files"

    def write(self, records: Any, **kwargs: Any) -> list[str]:
        for i, record in enumerate(records):
            self.store.write(f"r{i}.txt", record["text"].encode())
        return []


@pytest.mark.parametrize(
    ("backend_writable", "store_writable", "folded"),
    [(True, True, True), (True, False, False), (False, True, False), (False, False, False)],
)
def test_writability_folds_with_and(
    tmp_path: Path, backend_writable: bool, store_writable: bool, folded: bool
) -> None:
    store = LocalDocumentStore(tmp_path, writable=store_writable)
    caps = KnowledgeCapabilities(kinds=["document"], browse=True, writable=backend_writable)
    kb = Plain(store, caps, name="plain")
    assert kb.capabilities.writable is folded
    assert kb.store is store
    if folded:
        kb.write([{"text": "hello"}])
        assert (tmp_path / "r0.txt").read_text() == "hello"
    else:
        with pytest.raises(KnowledgeCapabilityError):
            kb.write([{"text": "hello"}])
        assert not (tmp_path / "r0.txt").exists()


def test_name_defaults_to_the_location_and_store_is_checked(tmp_path: Path) -> None:
    store = LocalDocumentStore(tmp_path)
    kb = Plain(store, KnowledgeCapabilities(browse=True))
    assert kb.backend_name == store.label == tmp_path.name  # the bundle's name, never a path
    with pytest.raises(TypeError):
        Plain("not a store", KnowledgeCapabilities(browse=True))  # type: ignore[arg-type]
