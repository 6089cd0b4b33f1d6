"""The knowledge store in one SQLite database, searched with FTS5.

The same interface and rules as the file store, kept in tables: ``pages`` (fields as JSON),
``links`` (who links to whom, rebuilt with each write), ``pages_fts`` (an FTS5 index of title,
aliases and content, accents folded), ``log`` and ``meta`` (the overview). FTS5 finds the
candidate pages; the shared ranking of :mod:`agentkernel.knowledgestore.search` orders them,
so a query ranks pages the same way in every store. Every change is one transaction
(``BEGIN IMMEDIATE``), so concurrent writers from several processes are serialised by SQLite.
"""

from __future__ import annotations

import builtins
import contextlib
import json
import os
import sqlite3
import threading
from collections.abc import Iterator, Sequence
from dataclasses import dataclass, replace
from typing import Any

from agentkernel.knowledgestore import _bundle, _catalog, _flows, _pages
from agentkernel.knowledgestore.base import KnowledgeStore
from agentkernel.knowledgestore.errors import KnowledgeStoreError
from agentkernel.knowledgestore.model import (
    STATUS_RETIRED,
    CheckReport,
    FieldChanges,
    KnowledgePage,
    NewPage,
    PageInfo,
    PageType,
    SearchHit,
    linked_ids,
    parse_id,
)
from agentkernel.knowledgestore.search import Searchable, query_terms, rank

_SCHEMA = """
CREATE TABLE IF NOT EXISTS pages (
    id TEXT PRIMARY KEY,
    type TEXT NOT NULL,
    slug TEXT NOT NULL,
    title TEXT NOT NULL,
    fields TEXT NOT NULL,
    content TEXT NOT NULL,
    status TEXT NOT NULL,
    description TEXT NOT NULL
);
CREATE TABLE IF NOT EXISTS links (
    source TEXT NOT NULL,
    target TEXT NOT NULL,
    PRIMARY KEY (source, target)
);
CREATE INDEX IF NOT EXISTS links_by_target ON links (target);
CREATE VIRTUAL TABLE IF NOT EXISTS pages_fts USING fts5 (
    id UNINDEXED, title, aliases, content, tokenize = 'unicode61 remove_diacritics 2'
);
CREATE TABLE IF NOT EXISTS log (
    seq INTEGER PRIMARY KEY AUTOINCREMENT,
    date TEXT NOT NULL,
    operation TEXT NOT NULL,
    what TEXT NOT NULL,
    pages TEXT NOT NULL
);
CREATE TABLE IF NOT EXISTS meta (key TEXT PRIMARY KEY, value TEXT NOT NULL);
"""


@dataclass(frozen=True)
class _Row:
    id: str
    type: str
    slug: str
    title: str
    fields: dict[str, str]
    content: str
    description: str = ""

    @property
    def status(self) -> str:
        return _pages.status_of(self.fields)


def _no_page(content: str) -> list[str]:
    """The ``.md`` file links in ``content``: in a database, none of them leads to a page."""
    return _bundle.dangling_file_links(content, "", lambda _target: False)


def _view(row: _Row) -> _flows.Page:
    return _flows.Page(row.id, row.type, row.title, row.fields, row.content)


class SQLiteKnowledgeStore(KnowledgeStore):
    """A :class:`KnowledgeStore` in a SQLite database file (or ``":memory:"``)."""

    def __init__(
        self, path: str | os.PathLike[str], page_types: Sequence[PageType] | None = None
    ) -> None:
        """Open the database; a missing one is created (with its tables) by the first write.

        Reading never creates nor changes the file: until the first write, a store whose file
        doesn't exist yet (or holds no store tables) reads as empty.

        Args:
            path: The database file, or ``":memory:"``.
            page_types: Declared page types, besides the built-ins.

        Raises:
            KnowledgeStoreError: An invalid page type declaration, a file that is no SQLite
                database, or a SQLite without FTS5.
        """
        self._registry = _pages.TypeRegistry(page_types)
        self._path = os.fspath(path)
        self._mutex = threading.RLock()
        self._conn: sqlite3.Connection | None = None
        self._blank: sqlite3.Connection | None = None
        if self._path == ":memory:" or self._holds_store():
            self._conn = self._open(self._path)

    def _open(self, path: str) -> sqlite3.Connection:
        """Connect to ``path``, creating the tables when missing (a write)."""
        db = sqlite3.connect(path, isolation_level=None, check_same_thread=False, timeout=30.0)
        try:
            if path != ":memory:":
                db.execute("PRAGMA journal_mode=WAL")
            db.executescript(_SCHEMA)
        except sqlite3.DatabaseError as exc:
            db.close()
            raise KnowledgeStoreError(f"Can't set up the knowledge database {path}: {exc}") from exc
        return db

    def _holds_store(self) -> bool:
        """Whether the file exists and holds the store's tables; looked up without writing."""
        if not os.path.isfile(self._path):
            return False
        try:
            with contextlib.closing(sqlite3.connect(self._path, timeout=30.0)) as db:
                found = db.execute(
                    "SELECT 1 FROM sqlite_master WHERE type = 'table' AND name = 'pages'"
                ).fetchone()
        except sqlite3.DatabaseError as exc:
            raise KnowledgeStoreError(
                f"Can't open the knowledge database {self._path}: {exc}"
            ) from exc
        return found is not None

    @property
    def _db(self) -> sqlite3.Connection:
        """The connection reads use: the file once it holds the store, else an empty stand-in."""
        if self._conn is None and self._holds_store():
            self._conn = self._open(self._path)
        if self._conn is not None:
            return self._conn
        if self._blank is None:
            self._blank = self._open(":memory:")
        return self._blank

    def __repr__(self) -> str:
        return f"SQLiteKnowledgeStore({self._path!r})"

    @property
    def path(self) -> str:
        """The database file (or ``":memory:"``)."""
        return self._path

    def close(self) -> None:
        """Close the database connection."""
        with self._mutex:
            for db in (self._conn, self._blank):
                if db is not None:
                    db.close()

    @contextlib.contextmanager
    def _write(self) -> Iterator[sqlite3.Connection]:
        with self._mutex:
            if self._conn is None:
                self._conn = self._open(self._path)
            db = self._conn
            db.execute("BEGIN IMMEDIATE")
            try:
                yield db
            except BaseException:
                db.execute("ROLLBACK")
                raise
            db.execute("COMMIT")

    # -- rows ----------------------------------------------------------------------------

    @staticmethod
    def _row(values: Sequence[Any]) -> _Row:
        page_id, page_type, slug, title, fields, content, description = values
        return _Row(page_id, page_type, slug, title, json.loads(fields), content, description)

    def _get(self, page_id: str) -> _Row | None:
        found = self._db.execute(
            "SELECT id, type, slug, title, fields, content, description FROM pages WHERE id = ?",
            (page_id,),
        ).fetchone()
        return self._row(found) if found else None

    def _all(self) -> list[_Row]:
        rows = self._db.execute(
            "SELECT id, type, slug, title, fields, content, description FROM pages"
        )
        order = {name: i for i, name in enumerate(self._registry.names())}
        return sorted(
            (self._row(r) for r in rows), key=lambda r: (order.get(r.type, len(order)), r.slug)
        )

    def _find(self, page_id: str) -> _Row:
        return _flows.require_page(self._registry, page_id, self._get)

    def _put_changed(self, db: sqlite3.Connection, row: _Row, changed: _flows.Changed) -> None:
        """Store a page's new values."""
        new = replace(row, title=changed.title, fields=changed.fields, content=changed.content)
        self._put(db, new, new=False)

    def _exists(self, page_id: str) -> bool:
        return self._get(page_id) is not None

    def _put(self, db: sqlite3.Connection, row: _Row, *, new: bool) -> None:
        description = _pages.description_of(row.fields, row.content)
        values = (row.title, json.dumps(row.fields), row.content, row.status, description, row.id)
        if new:
            db.execute(
                "INSERT INTO pages (type, slug, title, fields, content, status, description, id) "
                "VALUES (?, ?, ?, ?, ?, ?, ?, ?)",
                (row.type, row.slug, *values),
            )
        else:
            db.execute(
                "UPDATE pages SET title = ?, fields = ?, content = ?, status = ?, description = ? "
                "WHERE id = ?",
                values,
            )
        db.execute("DELETE FROM links WHERE source = ?", (row.id,))
        db.executemany(
            "INSERT INTO links (source, target) VALUES (?, ?)",
            [(row.id, target) for target in linked_ids(row.content)],
        )
        db.execute("DELETE FROM pages_fts WHERE id = ?", (row.id,))
        db.execute(
            "INSERT INTO pages_fts (id, title, aliases, content) VALUES (?, ?, ?, ?)",
            (row.id, row.title, row.fields.get("aliases", ""), row.content),
        )

    def _info(self, row: _Row) -> PageInfo:
        return PageInfo(
            id=row.id,
            type=row.type,
            slug=row.slug,
            title=row.title,
            description=row.description,
            status=row.status,
            fields=dict(row.fields),
        )

    # -- reading -------------------------------------------------------------------------

    def types(self) -> tuple[PageType, ...]:
        """Return the page types this store holds."""
        return self._registry.types

    def list(self) -> list[PageInfo]:
        """Return every page but the retired ones, by type, then slug."""
        with self._mutex:
            rows = self._all()
        return [self._info(r) for r in rows if r.status != STATUS_RETIRED]

    def read(self, page_id: str) -> KnowledgePage | None:
        """Return a page with the pages linking to it, or ``None``.

        Args:
            page_id: ``type/slug``.

        Returns:
            The page, retired ones included.
        """
        if not isinstance(page_id, str) or parse_id(page_id) is None:
            return None
        with self._mutex:
            row = self._get(page_id.strip())
            if row is None:
                return None
            sources = [
                source
                for (source,) in self._db.execute(
                    "SELECT source FROM links WHERE target = ? AND source != ?", (row.id, row.id)
                )
            ]
        rank = {name: i for i, name in enumerate(self._registry.names())}

        def order(page_id: str) -> tuple[int, str]:
            page_type, _, slug = page_id.partition("/")
            return rank.get(page_type, len(rank)), slug

        linked_from = sorted(sources, key=order)
        return KnowledgePage(**vars(self._info(row)), content=row.content, linked_from=linked_from)

    def search(self, query: str, limit: int = 10) -> builtins.list[SearchHit]:
        """Find pages by words in their title, aliases or content, best first.

        FTS5 finds the candidates (each term as a prefix); the shared ranking orders them.

        Args:
            query: Words to look for.
            limit: How many hits at most.

        Returns:
            The hits; retired pages are left out.
        """
        limit = _pages.require_limit(limit)
        terms = query_terms(query if isinstance(query, str) else "")
        if not terms:
            return []
        match = " OR ".join('"' + term.replace('"', '""') + '"*' for term in terms)
        with self._mutex:
            found = self._db.execute(
                "SELECT p.id, p.type, p.slug, p.title, p.fields, p.content, p.description "
                "FROM pages_fts "
                "JOIN pages AS p ON p.id = pages_fts.id "
                "WHERE pages_fts MATCH ? AND p.status != ?",
                (match, STATUS_RETIRED),
            ).fetchall()
        docs = []
        for values in found:
            row = self._row(values)
            docs.append(Searchable(row.id, row.type, row.title, row.content, row.fields))
        return rank(query, docs, limit)

    def index(self) -> str:
        """Return the catalog, linked by id; ``""`` when there is no page."""
        with self._mutex:
            infos = [self._info(r) for r in self._all()]
        return _catalog.render_index(self._registry, infos, lambda info: info.id)

    def recent_log(self, limit: int = 10) -> builtins.list[str]:
        """Return the latest log entries, newest first.

        Args:
            limit: How many at most.

        Returns:
            Entries as ``## [date] operation | what`` (and ``- pages: ...``).
        """
        limit = _pages.require_limit(limit)
        with self._mutex:
            rows = self._db.execute(
                "SELECT date, operation, what, pages FROM log ORDER BY seq DESC LIMIT ?", (limit,)
            ).fetchall()
        return [_catalog.format_log_entry(d, op, what, json.loads(p)) for d, op, what, p in rows]

    def check(self) -> CheckReport:
        """Report broken links (``.md`` file links included), orphans and links to retired pages."""
        with self._mutex:
            rows = self._all()
            overview = self.overview()
        sources = [
            _catalog.LinkSource(r.id, r.type, r.status, linked_ids(r.content), _no_page(r.content))
            for r in rows
        ]
        return _catalog.compute_check(sources, linked_ids(overview), _no_page(overview))

    def overview(self) -> str:
        """Return the overview (``""`` if none yet)."""
        with self._mutex:
            found = self._db.execute("SELECT value FROM meta WHERE key = 'overview'").fetchone()
        return str(found[0]) if found else ""

    # -- writing -------------------------------------------------------------------------

    def create_many(self, pages: Sequence[NewPage]) -> builtins.list[str]:
        """Create several pages, links among them allowed: all of them, or none.

        Args:
            pages: The pages.

        Returns:
            Their ids.

        Raises:
            KnowledgeStoreError: The first problem found; nothing is written then.
        """
        with self._write() as db:
            valid = _pages.validate_new_pages(list(pages), self._registry, self._exists)
            for page in valid:
                row = _Row(
                    page.id, page.page_type.name, page.slug, page.title, page.fields, page.content
                )
                self._put(db, row, new=True)
        return [page.id for page in valid]

    def edit(
        self, page_id: str, old_text: str, new_text: str, fields: FieldChanges | None = None
    ) -> None:
        """Replace the one occurrence of ``old_text`` in a page.

        Args:
            page_id: ``type/slug``.
            old_text: Text as ``read()`` returned it; must occur exactly once.
            new_text: The replacement.
            fields: Field changes.

        Raises:
            KnowledgeStoreError: No such page, zero or several matches, or a link to nowhere.
        """
        with self._write() as db:
            row = self._find(page_id)
            changed = _flows.edited(_view(row), old_text, new_text, fields, self._exists)
            self._put_changed(db, row, changed)

    def rewrite(self, page_id: str, content: str, fields: FieldChanges | None = None) -> None:
        """Replace a page's whole content (a summary's ``ingested`` is stamped anew).

        Args:
            page_id: ``type/slug``.
            content: The new body.
            fields: Field changes.

        Raises:
            KnowledgeStoreError: No such page, or a link to nowhere.
        """
        with self._write() as db:
            row = self._find(page_id)
            changed = _flows.rewritten(_view(row), content, fields, self._exists)
            self._put_changed(db, row, changed)

    def supersede(self, page_id: str, by: str, reason: str | None = None) -> None:
        """Mark a page superseded by another.

        Args:
            page_id: The outdated page.
            by: Its replacement.
            reason: Why, optionally.

        Raises:
            KnowledgeStoreError: Either page missing, the same page, or a retired page.
        """
        with self._write() as db:
            row = self._find(page_id)
            replacement = self._find(by)
            changed = _flows.superseded(_view(row), _view(replacement), reason)
            self._put_changed(db, row, changed)

    def retire(self, page_id: str, reason: str) -> None:
        """Retire a page: it leaves the listing, the index and the search, and is kept.

        Args:
            page_id: ``type/slug``.
            reason: Why.

        Raises:
            KnowledgeStoreError: No such page, no reason, or already retired.
        """
        why = _pages.require_reason(reason)
        with self._write() as db:
            row = self._find(page_id)
            changed = _flows.retired(_view(row), why)
            self._put_changed(db, row, changed)

    def log(self, operation: str, what: str, pages: Sequence[str] | None = None) -> None:
        """Add an entry to the log, dated today.

        Args:
            operation: The operation.
            what: What was done, in one line.
            pages: The ids of the pages it touched.

        Raises:
            KnowledgeStoreError: An empty operation or description, or a page that is no id.
        """
        op, text, ids = _catalog.clean_log_entry(operation, what, pages)
        with self._write() as db:
            db.execute(
                "INSERT INTO log (date, operation, what, pages) VALUES (?, ?, ?, ?)",
                (_pages.utc_today(), op, text, json.dumps(ids)),
            )

    def write_overview(self, content: str) -> None:
        """Replace the overview.

        Args:
            content: Markdown; its links must resolve.

        Raises:
            KnowledgeStoreError: A link to a page that does not exist.
        """
        content = _pages.normalize_content(content)
        with self._write() as db:
            _pages.require_links_resolve(content, self._exists)
            db.execute(
                "INSERT INTO meta (key, value) VALUES ('overview', ?) "
                "ON CONFLICT (key) DO UPDATE SET value = excluded.value",
                (content,),
            )
