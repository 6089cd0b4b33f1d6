"""An agent writing OKF over MCP: ``write_kb`` text opening with frontmatter becomes that concept.

What is real: the SDK's own client (``stdio_client`` + ``ClientSession``) spawning
``python -m agentkernel.mcp --bundle DIR --writable`` over an OKF bundle written to a temporary
directory, and the files the server writes there. Nothing is mocked.
"""

from __future__ import annotations

from pathlib import Path

import anyio

from tests.support import require_extra

require_extra("mcp", "mcp")

from agentkernel.storage import frontmatter  # noqa: E402
from tests.knowledgebase.okf.helpers import write_bundle  # noqa: E402
from tests.mcp._session import call, stdio_session  # noqa: E402

CONCEPT = """---
type: Metric
title: Roast yield
description: Roasted weight over green weight, per batch.
stale_after: 2027-03-31T00:00:00Z
generated: { by: roaster_agent/1.0, at: '2026-05-02T10:00:00+02:00' }
---
# Roast yield

Divide the roasted weight by the green weight.
"""


def test_an_okf_write_over_mcp_creates_the_concept_and_a_bad_one_is_flagged(
    tmp_path: Path,
) -> None:
    root = write_bundle(
        tmp_path / "kb",
        {
            "index.md": '---\nokf_version: "0.2"\n---\n# KB\n',
            "notes/a.md": "---\ntype: N\n---\nA\n",
        },
    )

    async def run() -> list[tuple[str, bool]]:
        async with stdio_session("--bundle", str(root), "--writable") as session:
            return [
                await call(session, "write_kb", backend="kb", text=CONCEPT),
                await call(session, "search_kb", backend="kb", query="roast yield", limit=1),
                await call(session, "write_kb", backend="kb", text="---\ntitle: x\n---\nb\n"),
                await call(session, "write_kb", backend="kb", text="---\ntype: [x\n---\nb\n"),
            ]

    wrote, found, untyped, bad_yaml = anyio.run(run)
    assert wrote == ("Wrote 1 record(s) to 'kb': ['generated/roast-yield']", False)
    text = (root / "generated/roast-yield.md").read_text("utf-8")
    assert text.startswith(CONCEPT.split("---\n# Roast")[0])  # the agent's frontmatter, as sent
    meta, body = frontmatter.parse(text)
    assert meta["type"] == "Metric" and meta["stale_after"] == "2027-03-31T00:00:00Z"
    assert meta["generated"] == {"by": "roaster_agent/1.0", "at": "2026-05-02T10:00:00+02:00"}
    assert body.startswith("# Roast yield\n")
    assert found == (
        "- [generated/roast-yield] Roast yield (Metric; unverified; fresh): Roasted weight over "
        "green weight, per batch.",
        False,
    )
    assert untyped[1] and "has no 'type'" in untyped[0], untyped
    assert bad_yaml[1] and "not a YAML mapping" in bad_yaml[0], bad_yaml
    assert sorted(p.name for p in (root / "generated").iterdir()) == ["roast-yield.md"]
