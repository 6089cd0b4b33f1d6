"""OKF 0.2 conformance of a whole bundle: errors for the spec's rules, warnings for the rest.

Errors are the three conformance rules of section 11: every non-reserved ``.md`` document
has parseable YAML frontmatter, every frontmatter has a non-empty ``type``, and reserved
files follow sections 8 (``index.md``) and 9 (``log.md``). Everything a consumer must
tolerate is a warning: broken links, links that leave the bundle, timestamps that are not
ISO 8601 datetimes with an offset (OKF 0.2 §5: consumers ignore them, so each is named with
its key and its fix),
missing titles, files skipped and why, files ignored for not being markdown (one summary),
and concepts longer than an agent's answer budget (read in parts). Unlike ``OKFManager``,
which reads a bounded head of each document, the check reads every document whole, so links
deep in a body are checked too.
"""

from __future__ import annotations

import posixpath
import re
from collections import Counter
from collections.abc import Callable, Mapping
from dataclasses import asdict, dataclass, field
from datetime import UTC, datetime
from typing import Any, Literal

from agentkernel._tooling.budget import DEFAULT_ANSWER_CHARS
from agentkernel.bundle.links import link_targets, resolve_target
from agentkernel.bundle.timestamps import timestamp_fields, timestamp_problem
from agentkernel.errors import DocumentTooLargeError
from agentkernel.knowledgebase.okf.concept import (
    ConceptError,
    concept_from,
    decode_head,
    is_document,
    is_reserved,
)
from agentkernel.storage import frontmatter
from agentkernel.storage.base import MAX_DOCUMENT_BYTES, DocumentStore, StoredFile, oversized

_ISO_DAY = re.compile(r"^\d{4}-\d{2}-\d{2}$")
_INDEX_ENTRY = re.compile(r"^\s*[*+-]\s+\[[^\]]*\]\([^)]*\)")
_SCHEME = re.compile(r"^[A-Za-z][A-Za-z0-9+.-]*:")
_IGNORED_SHOWN = 5

Level = Literal["error", "warning"]


@dataclass(frozen=True)
class Finding:
    """One problem in a bundle.

    Attributes:
        level: ``error`` (breaks a conformance rule) or ``warning``.
        path: The bundle-relative path it concerns (``""`` for the bundle itself).
        message: What is wrong, and where relevant how to fix it.
    """

    level: Level
    path: str
    message: str


@dataclass
class ConformanceReport:
    """What ``check_bundle`` found.

    Attributes:
        location: Where the bundle lives.
        okf_version: The version the root ``index.md`` declares, if any.
        concepts: How many concept documents parsed.
        reserved: How many reserved files there are.
        types: Concept count per ``type``.
        trust: Concept count per trust tier.
        stale: Ids of the concepts past their ``stale_after``.
        findings: Every error and warning, errors first, each group by path.
    """

    location: str
    okf_version: str | None = None
    concepts: int = 0
    reserved: int = 0
    types: Counter[str] = field(default_factory=Counter)
    trust: Counter[str] = field(default_factory=Counter)
    stale: list[str] = field(default_factory=list)
    findings: list[Finding] = field(default_factory=list)

    @property
    def errors(self) -> list[Finding]:
        """The findings that break conformance."""
        return [f for f in self.findings if f.level == "error"]

    @property
    def warnings(self) -> list[Finding]:
        """The findings a consumer must tolerate."""
        return [f for f in self.findings if f.level == "warning"]

    @property
    def conformant(self) -> bool:
        """Whether the bundle meets the three rules of OKF 0.2 section 11."""
        return not self.errors

    def as_dict(self) -> dict[str, Any]:
        """Return the report as JSON-serialisable data (the ``--json`` output).

        Returns:
            Counts, the stale ids, and the errors and warnings as lists of mappings.
        """
        return {
            "location": self.location,
            "conformant": self.conformant,
            "okf_version": self.okf_version,
            "concepts": self.concepts,
            "reserved_files": self.reserved,
            "types": dict(self.types.most_common()),
            "trust": dict(self.trust.most_common()),
            "stale": self.stale,
            "errors": [asdict(f) for f in self.errors],
            "warnings": [asdict(f) for f in self.warnings],
        }


def check_bundle(
    store: DocumentStore,
    *,
    now: datetime | None = None,
    progress: Callable[[int, int], None] | None = None,
    answer_chars: int = DEFAULT_ANSWER_CHARS,
    legacy_dates: bool = False,
) -> ConformanceReport:
    """Check a bundle against OKF 0.2.

    Args:
        store: The bundle's store (open it read-only).
        now: The instant staleness is judged at; the current time when ``None``.
        progress: Called as ``progress(done, total)`` while documents are read.
        answer_chars: The agents' answer budget: a concept longer than this is reported
            (agents read it in parts).
        legacy_dates: Judge staleness reading a bare-date ``stale_after`` as midnight UTC
            (as ``OKFManager(legacy_dates=True)`` serves it); each is still a warning.

    Returns:
        The report; a bundle that cannot be listed raises instead.

    Raises:
        OSError: The store cannot be listed.
    """
    now = now or datetime.now(UTC)
    report = ConformanceReport(location=store.location)
    listing: list[StoredFile] = []
    ignored: list[str] = []
    for stored in store.walk():
        if is_document(stored.path):
            listing.append(stored)
        else:
            ignored.append(stored.path)
    report.findings += [Finding("warning", "", f"skipped: {d}") for d in store.diagnostics]
    if ignored:
        ignored.sort()
        more = ", ..." if len(ignored) > _IGNORED_SHOWN else ""
        shown = ", ".join(ignored[:_IGNORED_SHOWN]) + more
        report.findings.append(
            Finding(
                "warning",
                "",
                f"ignored {len(ignored)} file(s) that are not markdown ({shown}): only .md "
                "documents are concepts or reserved files (OKF 0.2 §3); agents never see them",
            )
        )
    paths = {f.path for f in listing}
    directories = {posixpath.dirname(p) for p in paths}
    directories |= {d for p in list(directories) for d in _ancestors(p)}

    def exists(path: str) -> bool:
        stripped = path.rstrip("/")
        return stripped in paths if is_document(stripped) else stripped in directories

    for done, stored in enumerate(sorted(listing, key=lambda f: f.path), start=1):
        text = _read_text(store, stored, report)
        if text is not None:
            if is_reserved(stored.path):
                report.reserved += 1
                _check_reserved(stored.path, text, report)
            else:
                _check_concept(stored, text, report, exists, now, legacy_dates)
                if len(text) > answer_chars:
                    parts = -(-len(text) // answer_chars)
                    report.findings.append(
                        Finding(
                            "warning",
                            stored.path,
                            f"{len(text):,} characters: over the {answer_chars:,}-character "
                            f"answer budget, so an agent reads it in about {parts} fetch_kb "
                            "calls (id#offset=N); split it into smaller concepts",
                        )
                    )
        if progress is not None:
            progress(done, len(listing))
    if not report.concepts:
        report.findings.append(
            Finding(
                "warning",
                "",
                "no concept documents: a bundle holds concepts, .md files with YAML frontmatter "
                "(OKF 0.2 §3, §4); agents would be served nothing. Is this the bundle's root?",
            )
        )
    report.findings.sort(key=lambda f: (f.level != "error", f.path))
    return report


def _read_text(store: DocumentStore, stored: StoredFile, report: ConformanceReport) -> str | None:
    level: Literal["error", "warning"] = "warning" if is_reserved(stored.path) else "error"
    if stored.size > MAX_DOCUMENT_BYTES:
        report.findings.append(
            Finding(level, stored.path, f"skipped: {oversized(stored.size, MAX_DOCUMENT_BYTES)}")
        )
        return None
    try:
        return decode_head(store.read_bounded(stored.path, MAX_DOCUMENT_BYTES), complete=True)
    except DocumentTooLargeError as exc:
        report.findings.append(Finding(level, stored.path, f"skipped: {exc.reason}"))
    except ConceptError as exc:
        report.findings.append(Finding("error", stored.path, f"unreadable: {exc}"))
    except OSError as exc:
        report.findings.append(Finding("warning", stored.path, f"skipped: cannot read: {exc}"))
    return None


def _check_concept(
    stored: StoredFile,
    text: str,
    report: ConformanceReport,
    exists: Callable[[str], bool],
    now: datetime,
    legacy_dates: bool,
) -> None:
    path = stored.path
    try:
        meta, body = frontmatter.parse(text)
        concept = concept_from(path, stored.token, stored.size, meta, body, complete=True)
    except (frontmatter.FrontmatterError, ConceptError) as exc:
        message = " ".join(str(exc).split())
        rule = _RULE_TYPE if "'type'" in message else _RULE_FRONTMATTER
        report.findings.append(Finding("error", path, f"{message}; {rule}"))
        return
    report.concepts += 1
    report.types[concept.type] += 1
    report.trust[concept.trust] += 1
    if concept.is_stale(now, legacy_dates=legacy_dates):
        report.stale.append(concept.id)
    if not str(meta.get("title") or "").strip():
        report.findings.append(
            Finding(
                "warning",
                path,
                f"no title: readers will see '{concept.title}' (OKF 0.2 §4.1: a concept SHOULD "
                "carry a title)",
            )
        )
    for name, value in timestamp_fields(meta):
        problem = timestamp_problem(value, legacy_dates=legacy_dates)
        if problem is not None:
            report.findings.append(Finding("warning", path, f"{name} {value!r} {problem}"))
    for target in link_targets(body):
        resolved = resolve_target(path, target, exists)
        if resolved is None and _leaves_bundle(target):
            report.findings.append(
                Finding(
                    "warning",
                    path,
                    f"link leaves the bundle: {target} (agents are served only what is inside "
                    "the bundle; link to a concept in it, or use a full URL)",
                )
            )
        elif resolved is not None and not exists(resolved):
            report.findings.append(
                Finding(
                    "warning",
                    path,
                    f"broken link: {target} (OKF 0.2 §6.1; a warning only: consumers must not "
                    "reject a bundle for it, §11)",
                )
            )


def _leaves_bundle(target: str) -> bool:
    """Whether a link that resolves to no bundle path is a path (not a URL or a fragment)."""
    target = target.split("#", 1)[0].split("?", 1)[0].strip()
    return bool(target) and not _SCHEME.match(target) and not target.startswith("//")


_RULE_FRONTMATTER = (
    "every non-reserved .md file must open with parseable YAML frontmatter (OKF 0.2 §4.1, "
    "conformance rule §11.1)"
)
_RULE_TYPE = "every frontmatter block must hold a non-empty type (OKF 0.2 §4.1, rule §11.2)"


def _check_reserved(path: str, text: str, report: ConformanceReport) -> None:
    name = posixpath.basename(path).lower()
    parts = frontmatter.split(text)
    body = text if parts is None else parts[1]
    if name == "index.md":
        _check_index(path, parts[0] if parts else None, body, report)
    else:
        if parts is not None:
            report.findings.append(
                Finding(
                    "error",
                    path,
                    "log.md must not carry frontmatter, and this one does: a log file is only "
                    "date-grouped entries (OKF 0.2 §9, conformance rule §11.3)",
                )
            )
        _check_log(path, body, report)


def _check_index(path: str, raw_meta: str | None, body: str, report: ConformanceReport) -> None:
    if raw_meta is not None:
        if posixpath.dirname(path):
            report.findings.append(
                Finding(
                    "error",
                    path,
                    "only the bundle-root index.md may carry frontmatter (OKF 0.2 §8: index "
                    "files carry none, except okf_version at the root; rule §11.3)",
                )
            )
        else:
            try:
                meta = frontmatter.read_yaml(raw_meta) or {}
            except frontmatter.FrontmatterError as exc:  # invalid, or over the bounds
                report.findings.append(Finding("error", path, str(exc)))
                meta = {}
            if not isinstance(meta, Mapping) or set(meta) - {"okf_version"}:
                keys = sorted(meta) if isinstance(meta, Mapping) else meta
                report.findings.append(
                    Finding(
                        "error",
                        path,
                        f"root index.md frontmatter may hold only okf_version (OKF 0.2 §8, §12), "
                        f"got {keys}",
                    )
                )
            elif "okf_version" in meta:
                report.okf_version = str(meta["okf_version"])
                if report.okf_version != "0.2":
                    report.findings.append(
                        Finding(
                            "warning", path, f"okf_version {report.okf_version} (checked as 0.2)"
                        )
                    )
    lines = [line for line in body.splitlines() if line.strip()]
    if lines and not any(line.startswith("#") for line in lines):
        report.findings.append(
            Finding(
                "warning",
                path,
                "no section heading ('# ...'): an index groups entries under headings (OKF 0.2 §8)",
            )
        )
    if not any(_INDEX_ENTRY.match(line) for line in lines):
        report.findings.append(
            Finding(
                "warning",
                path,
                "lists no entries ('* [Title](url) - ...'): an index enumerates its directory "
                "(OKF 0.2 §8)",
            )
        )


def _check_log(path: str, body: str, report: ConformanceReport) -> None:
    days: list[str] = []
    for line in body.splitlines():
        if line.startswith("## "):
            heading = line[3:].strip()
            if not _ISO_DAY.match(heading) or _bad_day(heading):
                report.findings.append(
                    Finding(
                        "error",
                        path,
                        f"date heading {heading!r} is not YYYY-MM-DD: log date headings MUST be "
                        "ISO 8601 dates (OKF 0.2 §9, rule §11.3)",
                    )
                )
            else:
                days.append(heading)
    if days != sorted(days, reverse=True):
        report.findings.append(
            Finding(
                "warning",
                path,
                "date groups are not newest first: a log lists them newest first (OKF 0.2 §9)",
            )
        )


def _bad_day(value: str) -> bool:
    try:
        datetime.strptime(value, "%Y-%m-%d")
    except ValueError:
        return True
    return False


def _ancestors(directory: str) -> list[str]:
    found = []
    while directory:
        directory = posixpath.dirname(directory)
        found.append(directory)
    return found
