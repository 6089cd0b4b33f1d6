"""The tables the SQL page backends share: SQLite and PostgreSQL keep a page in the same row.

Each backend's schema adds what is its own (revisions, authors, sequences) around these.
"""

from __future__ import annotations

PAGE_COLUMNS = """
    id TEXT PRIMARY KEY,
    type TEXT NOT NULL,
    slug TEXT NOT NULL,
    title TEXT NOT NULL,
    fields TEXT NOT NULL,
    content TEXT NOT NULL,
    status TEXT NOT NULL,
    description TEXT NOT NULL,"""
"""The columns of the ``pages`` table every SQL backend has (a backend appends its own)."""

LINKS_TABLE = """
CREATE TABLE IF NOT EXISTS links (
    source TEXT NOT NULL,
    target TEXT NOT NULL,
    PRIMARY KEY (source, target)
);
CREATE INDEX IF NOT EXISTS links_by_target ON links (target);"""
"""The ``links`` table (one row per link from a page to another) and its index on targets."""
