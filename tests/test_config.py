"""config.yaml loading: sources, typed blocks, unknown blocks kept, mistakes named.

Real files on disk in a temp directory; nothing stood in for.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from agentkernel.config import AKConfig, load_config
from agentkernel.errors import AKConfigError

BLOCK = """
okf:
  databases:
    warehouse:
      type: local
      uri: ./bundle
      description: "Analytics warehouse concepts, one per table."
      refresh_seconds: 300
      consumer: [Support_Agent]
      producer: [Ingest_Agent]
      curator:  [Steward_Agent]
schedule:
  every: 5m
"""


def test_the_manuals_block_loads_and_other_blocks_are_kept(tmp_path: Path) -> None:
    path = tmp_path / "config.yaml"
    path.write_text(BLOCK)
    config = load_config(path)
    assert config.okf is not None
    warehouse = config.okf.databases["warehouse"]
    assert (warehouse.type, warehouse.uri, warehouse.refresh_seconds) == ("local", "./bundle", 300)
    assert warehouse.consumer == ["Support_Agent"]
    assert warehouse.curator == ["Steward_Agent"]
    assert config.extra_blocks == {"schedule": {"every": "5m"}}
    assert config.base_dir == tmp_path.resolve()


def test_env_override_then_default_path(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.chdir(tmp_path)
    assert load_config() == AKConfig()  # no file at all: nothing configured
    (tmp_path / "config.yaml").write_text("okf:\n  databases: {}\n")
    assert load_config().okf is not None
    other = tmp_path / "other.yaml"
    other.write_text("something: else\n")
    monkeypatch.setenv("AK_CONFIG_PATH_OVERRIDE", str(other))
    assert load_config().okf is None
    monkeypatch.setenv("AK_CONFIG_PATH_OVERRIDE", str(tmp_path / "missing.yaml"))
    with pytest.raises(
        AKConfigError, match=r"missing.yaml.*\$AK_CONFIG_PATH_OVERRIDE.*does not exist"
    ):
        load_config()


def test_null_refresh_disables_refresh() -> None:
    config = load_config(
        {
            "okf": {
                "databases": {
                    "w": {"type": "local", "uri": "b", "refresh_seconds": None, "consumer": ["A"]}
                }
            }
        }
    )
    assert config.okf is not None
    assert config.okf.databases["w"].refresh_seconds is None


@pytest.mark.parametrize(
    ("text", "match"),
    [
        ("okf: [\n", "not valid YAML"),
        ("- a\n- b\n", "must hold a mapping"),
        (
            "okf:\n  databases:\n    w:\n      type: local\n      uri: b\n      consumers: [A]\n",
            "okf database 'w', field 'consumers': Extra inputs are not permitted",
        ),
        (
            "okf:\n  databases:\n    w:\n      type: local\n      uri: b\n"
            "      refresh_seconds: -3\n",
            "okf database 'w', field 'refresh_seconds'",
        ),
        (
            "okf:\n  databases:\n    w:\n      uri: b\n",
            "okf database 'w', field 'type': Field required",
        ),
        ("okf:\n  enabled: true\n", "field 'okf.enabled'"),
    ],
)
def test_mistakes_raise_config_errors_naming_the_setting(
    tmp_path: Path, text: str, match: str
) -> None:
    path = tmp_path / "config.yaml"
    path.write_text(text)
    with pytest.raises(AKConfigError, match=match):
        load_config(path)


def test_wrong_source_type() -> None:
    with pytest.raises(AKConfigError, match="path or a mapping"):
        load_config(42)  # type: ignore[arg-type]
