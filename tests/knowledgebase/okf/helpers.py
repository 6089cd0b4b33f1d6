"""Helpers for OKF tests: temp bundles on disk, a settable clock, a read-counting store.

``CountingStore`` is the real ``LocalDocumentStore`` with its read calls counted; nothing
about how it reads is replaced.
"""

from __future__ import annotations

from collections import Counter
from pathlib import Path

from agentkernel.storage.local import LocalDocumentStore

# 2026-06-01T00:00:00Z
JUNE_2026 = 1780272000.0


class Clock:
    """A settable clock returning seconds since the epoch."""

    def __init__(self, now: float = JUNE_2026) -> None:
        self.now = now

    def __call__(self) -> float:
        return self.now

    def advance(self, seconds: float) -> None:
        self.now += seconds


class CountingStore(LocalDocumentStore):
    """A LocalDocumentStore that counts walks, whole reads and leading reads."""

    def __init__(self, root: str | Path, writable: bool | None = None) -> None:
        super().__init__(root, writable=writable)
        self.calls: Counter[str] = Counter()

    def walk(self, prefix: str = ""):  # type: ignore[no-untyped-def]
        self.calls["walk"] += 1
        return super().walk(prefix)

    def read(self, path: str) -> bytes:
        self.calls["read"] += 1
        return super().read(path)

    def read_bounded(self, path: str, max_bytes: int) -> bytes:
        self.calls["read"] += 1  # a whole read, with the size bound
        return super().read_bounded(path, max_bytes)

    def read_head(self, path: str, max_bytes: int) -> bytes:
        self.calls["read_head"] += 1
        return super().read_head(path, max_bytes)

    def read_heads(self, paths, max_bytes, *, workers=1):  # type: ignore[no-untyped-def]
        self.calls["read_head"] += len(paths)  # the walk's batch: one leading read per path
        return super().read_heads(paths, max_bytes, workers=workers)

    def reads(self) -> int:
        return self.calls["read"] + self.calls["read_head"]


def concept(
    kind: str = "Note",
    title: str | None = None,
    description: str | None = None,
    body: str = "Body text.\n",
    **extra: str,
) -> str:
    """Compose a small OKF concept document; extra keys are raw YAML values."""
    lines = ["---", f"type: {kind}"]
    if title is not None:
        lines.append(f"title: {title}")
    if description is not None:
        lines.append(f"description: {description}")
    lines += [f"{key}: {value}" for key, value in extra.items()]
    lines.append("---")
    return "\n".join(lines) + "\n" + body


def write_bundle(root: Path, files: dict[str, str | bytes]) -> Path:
    """Write ``files`` (bundle path -> text or bytes) under ``root``."""
    for rel, content in files.items():
        target = root / rel
        target.parent.mkdir(parents=True, exist_ok=True)
        if isinstance(content, bytes):
            target.write_bytes(content)
        else:
            target.write_text(content, encoding="utf-8")
    return root


SMALL_BUNDLE: dict[str, str | bytes] = {
    "index.md": '---\nokf_version: "0.2"\n---\n# Warehouse\n\n* [Tables](tables/) - the tables\n',
    "log.md": "# Log\n\n## 2026-05-01\n* **Creation**: started.\n",
    "tables/orders.md": concept(
        "BigQuery Table",
        "Customer Orders",
        "One row per completed customer order.",
        body=(
            "Orders join [customers](/tables/customers.md) and the "
            "[freshness playbook](../playbooks/freshness.md). See also "
            "[revenue](metrics/revenue.md) and [nothing yet](/tables/missing.md) and "
            "[the web](https://example.com/x.md).\n"
        ),
        tags="[sales, orders]",
        verified="{by: 'human:ana', at: 2026-05-02T10:00:00Z}",
    ),
    "tables/customers.md": concept(
        "BigQuery Table",
        "Customers",
        "One row per customer account.",
        verified="[{by: process:nightly, at: 2026-05-02T10:00:00Z}]",
    ),
    "playbooks/freshness.md": concept(
        "Playbook",
        "Freshness alert",
        "Steps to triage a freshness alert on the orders pipeline.",
        body="Check the ingestion dashboard, then rerun the loader.\n",
        stale_after="2026-01-01T00:00:00Z",
    ),
    "metrics/revenue.md": concept(
        "Metric",
        "Revenue",
        "Recognized revenue for a fiscal year.",
        stale_after="2027-01-01",
    ),
}
