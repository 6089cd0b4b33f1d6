"""Turning records into OKF documents for write-through.

Two cases, from the manual. A record naming ``metadata["id"]`` is a whole document (as
``fetch`` returned it, perhaps edited) and is written exactly as given, after checking it is a
concept. A record without an id is authored on the caller's behalf: titled from the first
line of its text, stamped ``generated: {by, at}``, and slugged from that title.

An agent that writes OKF (text opening with a ``---`` frontmatter block, as every concept is
written) gets the concept it wrote: its frontmatter needs a ``type`` and is kept as written,
the title and description come from it, and only what is missing (``title``, ``description``,
``generated``, ``sources``) is added after the agent's own lines, so its text, timestamps
included, is stored as given. The path is still slugged from the title under the write
prefix: frontmatter never chooses where a concept goes (an ``id`` key is refused).
"""

from __future__ import annotations

import re
import unicodedata
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from agentkernel.errors import echo
from agentkernel.knowledgebase.errors import KnowledgeError, KnowledgePathError
from agentkernel.knowledgebase.model import Record
from agentkernel.knowledgebase.okf.concept import (
    RESERVED_NAMES,
    ConceptError,
    concept_id,
    is_reserved,
    parse_concept,
)
from agentkernel.storage import frontmatter
from agentkernel.storage.base import clean_path

_MAX_TITLE = 120
_MAX_SLUG = 60
_MAX_DESCRIPTION = 240
_HEADING = re.compile(r"^\s{0,3}#{1,6}\s+")
_SENTENCE = re.compile(r"(.+?[.!?])(?:\s|$)")

DEFAULT_TYPE = "Note"


@dataclass(frozen=True)
class Draft:
    """A document ready to store.

    Attributes:
        path: Where it goes (a candidate path when ``exact`` is false: a suffix may be added).
        data: The bytes to write.
        exact: Whether the path was named by the caller (written in place, replacing).
    """

    path: str
    data: bytes
    exact: bool


def draft(record: Record, *, actor: str, now_iso: str, prefix: str) -> Draft:
    """Prepare one record for writing.

    Args:
        record: ``{"text": ..., "metadata": {...}}``.
        actor: ``generated.by`` for authored documents.
        now_iso: ``generated.at``: ISO 8601 with an offset.
        prefix: Directory authored documents go to.

    Returns:
        The draft.

    Raises:
        KnowledgeError: The record is malformed, or a document named by id is not a concept.
        KnowledgePathError: The id is not a usable concept id.
    """
    if not isinstance(record, Mapping):
        raise KnowledgeError(f"A record must be a mapping, got {type(record).__name__}.")
    text = record.get("text")
    if not isinstance(text, str) or not text.strip():
        raise KnowledgeError("A record needs non-empty 'text' to write.")
    metadata = record.get("metadata") or {}
    if not isinstance(metadata, Mapping):
        raise KnowledgeError(f"'metadata' must be a mapping, got {type(metadata).__name__}.")
    given_id = metadata.get("id")
    if given_id is not None and str(given_id).strip():
        return _exact(str(given_id), text)
    if _opens_frontmatter(text):
        return _written_okf(text, metadata, actor=actor, now_iso=now_iso, prefix=prefix)
    return _authored(text, metadata, actor=actor, now_iso=now_iso, prefix=prefix)


def with_suffix(path: str, attempt: int) -> str:
    """Return the ``attempt``-th alternative of a slugged path (``x.md``, ``x-2.md``, ...).

    Args:
        path: The first candidate.
        attempt: 1 for the path itself, 2 and up for suffixed alternatives.

    Returns:
        The candidate path.
    """
    return path if attempt <= 1 else f"{path[:-3]}-{attempt}.md"


def title_from_text(text: str) -> str:
    """Derive a title from the first non-empty line of a text (markdown heading marks dropped).

    Args:
        text: The record's text.

    Returns:
        The title, at most 120 characters.
    """
    for line in text.splitlines():
        cleaned = " ".join(_HEADING.sub("", line).split()).strip(" *_`")
        if cleaned:
            return cleaned if len(cleaned) <= _MAX_TITLE else cleaned[: _MAX_TITLE - 1] + "…"
    return "Untitled"


def slugify(title: str) -> str:
    """Make a file-name slug: ASCII lower-case words joined by ``-``.

    Args:
        title: The title.

    Returns:
        The slug (``"note"`` when nothing usable remains).
    """
    folded = unicodedata.normalize("NFKD", title).encode("ascii", "ignore").decode("ascii")
    words = re.findall(r"[a-z0-9]+", folded.lower())
    slug = ""
    for word in words:
        candidate = f"{slug}-{word}" if slug else word
        if len(candidate) > _MAX_SLUG:
            break
        slug = candidate
    slug = slug or (words[0][:_MAX_SLUG] if words else "note")
    # a note titled "Index" or "Log" must not land on a reserved name, which is never a concept
    return f"{slug}-note" if f"{slug}.md" in RESERVED_NAMES else slug


def encode_text(text: str, what: str) -> bytes:
    """Encode text to be stored as UTF-8, refusing text that is not valid Unicode.

    Args:
        text: The text.
        what: What it is, for the message (``"the text"``).

    Returns:
        The UTF-8 bytes.

    Raises:
        KnowledgeError: The text holds a lone surrogate (half of a UTF-16 pair), which no
            reader could decode; nothing is written.
    """
    try:
        return text.encode("utf-8")
    except UnicodeEncodeError as exc:
        bad = ord(exc.object[exc.start])
        raise KnowledgeError(
            f"Not written: {what} is not valid Unicode text: it holds a lone surrogate "
            f"(U+{bad:04X}) at character {exc.start}. Send it as UTF-8 text."
        ) from None


def _exact(given_id: str, text: str) -> Draft:
    if "," in given_id:
        raise KnowledgePathError(f"Concept id {echo(given_id)} contains a comma.")
    path = clean_path(given_id.strip().lstrip("/"))
    if not path:
        raise KnowledgePathError("A concept id must name a document, not the bundle root.")
    if not path.lower().endswith(".md"):
        path += ".md"
    if is_reserved(path):
        raise KnowledgePathError(
            f"{echo(concept_id(path))} is reserved (index.md and log.md are never concepts)."
        )
    data = encode_text(text, f"the text for {echo(concept_id(path))}")
    try:
        parse_concept(path, "", len(data), data, complete=True)
    except ConceptError as exc:
        raise KnowledgeError(
            f"Not written: the text for {echo(concept_id(path))} is not an OKF concept ({exc}). "
            "A record naming an id is written exactly as given, so its text must be the whole "
            "document: '---' frontmatter with a 'type', then the body."
        ) from exc
    return Draft(path, data, exact=True)


def _authored(
    text: str, metadata: Mapping[str, Any], *, actor: str, now_iso: str, prefix: str
) -> Draft:
    title = _string(metadata.get("title")) or title_from_text(text)
    kind = _string(metadata.get("type")) or _string(metadata.get("kind")) or DEFAULT_TYPE
    meta: dict[str, Any] = {"type": kind, "title": title}
    description = _string(metadata.get("description")) or _description(text, title)
    if description:
        meta["description"] = description
    meta.update(_given(metadata, actor=actor, now_iso=now_iso))
    body = text if text.endswith("\n") else text + "\n"
    encode_text(text, "the text")  # names the text itself when it is what cannot be stored
    document = frontmatter.render(meta, body)
    return Draft(_authored_path(prefix, title), encode_text(document, "the metadata"), exact=False)


def _given(metadata: Mapping[str, Any], *, actor: str, now_iso: str) -> dict[str, Any]:
    """The keys an authored concept takes from the record's metadata, and its stamp."""
    meta: dict[str, Any] = {}
    tags = metadata.get("tags")
    if isinstance(tags, list | tuple) and all(isinstance(t, str) for t in tags) and tags:
        meta["tags"] = list(tags)
    for key in ("status", "stale_after"):
        value = _string(metadata.get(key))
        if value:
            meta[key] = value
    meta["generated"] = {"by": actor, "at": now_iso}
    source = _string(metadata.get("source"))
    if source:
        meta["sources"] = [{"resource": source}]
    return meta


def _authored_path(prefix: str, title: str) -> str:
    directory = clean_path(prefix)
    name = f"{slugify(title)}.md"
    return f"{directory}/{name}" if directory else name


def _opens_frontmatter(text: str) -> bool:
    """Whether a text's first line (after blank lines) is a ``---`` fence."""
    first = text.lstrip("\ufeff \t\r\n").partition("\n")[0]
    return first.rstrip() == "---"


def _written_okf(
    text: str, metadata: Mapping[str, Any], *, actor: str, now_iso: str, prefix: str
) -> Draft:
    """Author the concept an OKF-shaped text describes (see the module docstring).

    Raises:
        KnowledgeError: The frontmatter does not close, is not a YAML mapping, has no
            ``type`` or carries an ``id``; nothing is written.
    """
    document = text.lstrip("\ufeff \t\r\n")
    parts = frontmatter.split(document)
    if parts is None:
        raise KnowledgeError(
            "Not written: the text opens with a '---' line, as OKF frontmatter does, but no "
            "second '---' line closes it. Close the frontmatter (---, then 'type: ...' and "
            "the other keys, then ---, then the body), or start the text with its title."
        )
    raw, body = parts
    try:
        meta = frontmatter.read_mapping(raw)
    except frontmatter.FrontmatterError as exc:
        raise KnowledgeError(
            f"Not written: the text's frontmatter is not a YAML mapping ({_one_line(exc)}). "
            "Write one 'key: value' per line between the '---' lines, e.g. 'type: Playbook'."
        ) from None
    if "id" in meta:
        raise KnowledgeError(
            f"Not written: the frontmatter names an id ({echo(meta['id'])}), but a concept's "
            "id is its path, which write_kb derives from the title under "
            f"{echo(prefix or '/')}: remove the 'id' key (and use 'title' to name the concept)."
        )
    kind = meta.get("type")
    if isinstance(kind, bool) or not isinstance(kind, str | int | float) or not str(kind).strip():
        raise KnowledgeError(
            "Not written: the frontmatter has no 'type', the one key every OKF concept needs "
            "(e.g. 'type: Playbook', 'type: Metric', 'type: Note')."
        )
    title = _string(meta.get("title")) or _string(metadata.get("title")) or title_from_text(body)
    missing: dict[str, Any] = {"title": title}
    description = _string(metadata.get("description")) or _body_description(body, title)
    if description:
        missing["description"] = description
    missing.update(_given(metadata, actor=actor, now_iso=now_iso))
    missing = {key: value for key, value in missing.items() if key not in meta}
    if missing:
        document = _with_keys(raw, meta, missing, body)
    data = encode_text(document, "the text")
    path = _authored_path(prefix, title)
    try:
        parse_concept(path, "", len(data), data, complete=True)
    except ConceptError as exc:
        raise KnowledgeError(f"Not written: the text is not an OKF concept ({exc}).") from exc
    return Draft(path, data, exact=False)


def _with_keys(raw: str, meta: Mapping[str, Any], missing: Mapping[str, Any], body: str) -> str:
    """The document with keys added after the frontmatter's own lines, which are kept as written.

    Appending is valid for a block mapping (any frontmatter written line by line); for
    anything else (a flow mapping over several lines) the frontmatter is rendered whole,
    which keeps every value, timestamps as the strings they were.
    """
    head = raw if not raw or raw.endswith("\n") else raw + "\n"
    grown = head + frontmatter.dump_yaml(dict(missing))
    try:
        kept = frontmatter.read_mapping(grown) == {**meta, **missing}
    except frontmatter.FrontmatterError:
        kept = False
    if not kept:
        grown = frontmatter.dump_yaml({**meta, **missing})
    return f"---\n{grown}---\n{body}"


def _body_description(body: str, title: str) -> str:
    """A body's first sentence, after a first line that only repeats the title."""
    lines = body.splitlines()
    first = next((i for i, line in enumerate(lines) if line.strip()), None)
    if first is not None and title_from_text(lines[first]) == title:
        lines = lines[first + 1 :]
    return _description("\n".join(["", *lines]), title)  # it reads from the second line


def _one_line(error: Exception, limit: int = 300) -> str:
    text = " ".join(str(error).split())
    return text if len(text) <= limit else text[: limit - 1] + "…"


def _description(text: str, title: str) -> str:
    lines = text.splitlines()
    rest = " ".join(" ".join(lines[1:]).split()) if len(lines) > 1 else ""
    if not rest:
        return ""
    match = _SENTENCE.match(rest)
    sentence = match.group(1) if match else rest
    if sentence == title:
        return ""
    return sentence if len(sentence) <= _MAX_DESCRIPTION else sentence[: _MAX_DESCRIPTION - 1] + "…"


def _string(value: Any) -> str:
    if not isinstance(value, str | int | float) or isinstance(value, bool):
        return ""
    return " ".join(str(value).split())
