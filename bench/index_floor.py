#!/usr/bin/env python3
"""The memory floor of a bundle-index pod: what Lance costs before any bundle is held.

Each row is a fresh process (peak RSS is ``VmHWM``; private is ``RssAnon``, file-backed is
``RssFile``: mostly the pages of Lance's native library, shared by the pods of a node):

* ``python``: the interpreter alone;
* ``import lance``: plus ``import lance`` (pylance);
* ``lance: open, scan, full-text query``: plus opening a 3-row dataset with a full-text
  index, scanning a column and running one full-text query (the code paths a pod touches);
* ``OKFManager(index=...), 3 concepts``: the library's pod over a 3-concept bundle and its
  index, after construction and one search.

Usage:
    python bench/index_floor.py
"""

from __future__ import annotations

import json
import subprocess
import sys
import tempfile
from pathlib import Path

STAGES = ("python", "import", "lance", "okf")
LABELS = {
    "python": "python",
    "import": "import lance",
    "lance": "lance: open, scan, full-text query",
    "okf": "OKFManager(index=...), 3 concepts",
}


def _memory() -> dict[str, float]:
    found = {}
    with open("/proc/self/status") as status:
        for line in status:
            key, _, value = line.partition(":")
            if key in ("VmHWM", "RssAnon", "RssFile"):
                found[key] = int(value.split()[0]) / 1024
    return found


def stage(name: str, work: str) -> dict[str, float]:
    if name == "import":
        import lance
    elif name == "lance":
        import lance
        import lance.query

        queries: object = lance.query
        dataset = lance.dataset(str(Path(work) / "tiny.lance"))
        dataset.to_table(columns=["path"])
        match = queries.MatchQuery("alpha", "terms")  # type: ignore[attr-defined]
        occur = queries.Occur.SHOULD  # type: ignore[attr-defined]
        dataset.to_table(
            columns=["path", "_score"],
            full_text_query=queries.BooleanQuery([(occur, match)]),  # type: ignore[attr-defined]
            limit=5,
        )
    elif name == "okf":
        from agentkernel.knowledgebase import LocalDocumentStore, OKFManager

        store = LocalDocumentStore(Path(work) / "bundle", writable=False)
        kb = OKFManager(store, index=str(Path(work) / "kb.lance"), refresh_seconds=None)
        kb.search("alpha", 5)
    return _memory()


def prepare(work: Path) -> None:
    import lance
    import pyarrow as pa

    from agentkernel.knowledgebase import LocalDocumentStore
    from agentkernel.knowledgebase.okf.bundleindex.indexer import index_bundle

    table = pa.table({"path": ["a", "b", "c"], "terms": ["alpha beta", "beta gamma", "alpha"]})
    lance.write_dataset(table, str(work / "tiny.lance")).create_scalar_index("terms", "INVERTED")
    bundle = work / "bundle" / "notes"
    bundle.mkdir(parents=True)
    for n, word in enumerate(["alpha", "beta", "gamma"]):
        (bundle / f"n{n}.md").write_text(
            f"---\ntype: Note\ntitle: Note {word}\ndescription: about {word}\n---\n{word}\n"
        )
    index_bundle(LocalDocumentStore(work / "bundle", writable=False), str(work / "kb.lance"))


def main() -> int:
    if len(sys.argv) == 4 and sys.argv[1] == "--stage":
        print(json.dumps(stage(sys.argv[2], sys.argv[3])))
        return 0
    with tempfile.TemporaryDirectory(prefix="index-floor-") as scratch:
        prepare(Path(scratch))
        print("| fresh process | peak RSS (MB) | private (MB) | file-backed (MB) |")
        print("|---|---|---|---|")
        for name in STAGES:
            done = subprocess.run(
                [sys.executable, __file__, "--stage", name, scratch],
                capture_output=True,
                text=True,
                check=True,
            )
            found = json.loads(done.stdout.strip().splitlines()[-1])
            print(
                f"| {LABELS[name]} | {found['VmHWM']:.0f} | {found['RssAnon']:.0f} | "
                f"{found['RssFile']:.0f} |"
            )
    return 0


if __name__ == "__main__":
    sys.exit(main())
