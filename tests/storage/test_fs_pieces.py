"""``atomic_write`` of a file given in pieces: every byte, in order, whatever the pieces.

Real: files written in a temporary folder and read back.
"""

from __future__ import annotations

import random
from pathlib import Path

from agentkernel.storage.fs import atomic_write


def test_pieces_are_written_whole_and_in_order(tmp_path: Path) -> None:
    rng = random.Random(3)
    # more pieces than one writev(2) takes, empty ones among them, some of them large
    pieces = [bytes([65 + i % 26]) * rng.choice([0, 1, 7, 5000, 70_000]) for i in range(2500)]
    target = tmp_path / "index.md"
    atomic_write(target, pieces, durable=False)
    assert target.read_bytes() == b"".join(pieces)
    atomic_write(target, ["é", "\n", "", "x" * 10], durable=True)  # text pieces, as before
    assert target.read_text(encoding="utf-8") == "é\n" + "x" * 10
    assert [p.name for p in tmp_path.iterdir()] == ["index.md"]  # no temporary file left
