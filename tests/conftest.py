"""Fixture plugins: every ``tests/support/fixtures_*.py`` module is loaded, so each area's
server fixtures (S3, Chroma, Bolt, PostgreSQL, ...) live in a module of its own."""

from pathlib import Path

pytest_plugins = sorted(
    f"tests.support.{path.stem}"
    for path in (Path(__file__).parent / "support").glob("fixtures_*.py")
)
