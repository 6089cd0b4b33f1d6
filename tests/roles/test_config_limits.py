"""``config.yaml`` that is too big, too deep or an alias bomb: refused with ``AKConfigError``.

Real: configuration files on disk read by :func:`agentkernel.config.load_config` with the
installed PyYAML (libyaml's loader where built); no server is involved.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from agentkernel import config as cfg
from agentkernel.config import load_config
from agentkernel.errors import AKConfigError


def _write(tmp_path: Path, text: str) -> Path:
    path = tmp_path / "config.yaml"
    path.write_text(text, encoding="utf-8")
    return path


def test_too_deep_block_nesting_is_refused(tmp_path: Path) -> None:
    deep = "".join(f"{'  ' * level}k{level}:\n" for level in range(200)) + "  " * 200 + "v: 1\n"
    with pytest.raises(AKConfigError, match="nests deeper than 64 levels"):
        load_config(_write(tmp_path, deep))


def test_twenty_thousand_deep_flow_nesting_is_refused_not_a_recursion_error(
    tmp_path: Path,
) -> None:
    with pytest.raises(AKConfigError) as raised:
        load_config(_write(tmp_path, "a: " + "[" * 20000 + "]" * 20000))
    assert "RecursionError" not in repr(raised.value.__cause__)


def test_a_file_over_the_size_bound_is_refused_unread(tmp_path: Path) -> None:
    with pytest.raises(AKConfigError, match="larger than 1048576 bytes"):
        load_config(_write(tmp_path, "x: '" + "a" * (cfg.MAX_CONFIG_BYTES + 10) + "'\n"))


def test_an_alias_bomb_is_refused(tmp_path: Path) -> None:
    lines = ['a0: &a0 ["x", "x", "x", "x", "x", "x", "x", "x", "x", "x"]']
    for level in range(1, 9):
        refs = ", ".join([f"*a{level - 1}"] * 10)
        lines.append(f"a{level}: &a{level} [{refs}]")
    with pytest.raises(AKConfigError, match="once its aliases are expanded"):
        load_config(_write(tmp_path, "\n".join(lines) + "\n"))


def test_a_real_configuration_with_anchors_still_loads(tmp_path: Path) -> None:
    text = (
        "defaults: &d {type: local, consumer: [A]}\n"
        "okf:\n"
        "  databases:\n"
        "    one: {<<: *d, uri: ./one}\n"
        "    two: {<<: *d, uri: ./two}\n"
    )
    loaded = load_config(_write(tmp_path, text))
    assert loaded.okf is not None and sorted(loaded.okf.databases) == ["one", "two"]
