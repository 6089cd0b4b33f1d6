"""The contract of an Attested Computation concept (OKF 0.2, section 10.2), read as it stands.

A contract is read from the concept's document, fetched whole from the bundle each time (never
from the manifest, so an edited concept is seen at once): ``runtime``, the typed
``parameters``, the trust (``verified``) and lifecycle (``stale_after``) families, and the
computation itself, which is the one code block under ``# Computation`` in the body (fenced
or indented) or the bundle file named by ``computation``. That path is resolved like a link
(:func:`agentkernel.bundle.links.resolve_target`: bundle-relative with ``/``, relative to the
concept, or from the root) and read through the bundle's store, whose containment refuses
``..``, absolute paths and symlinks that leave the root; a URL is never fetched.

``executor.resource`` and ``attester.resource`` are recorded and never read, imported or run
(see :mod:`agentkernel.knowledgebase.okf.computation.attest`).
"""

from __future__ import annotations

import hashlib
import re
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from datetime import datetime
from typing import Any

from agentkernel.bundle.links import resolve_target
from agentkernel.bundle.timestamps import parse_timestamp
from agentkernel.errors import AKError
from agentkernel.knowledgebase.errors import KnowledgePathError
from agentkernel.knowledgebase.okf.concept import (
    Concept,
    ConceptError,
    parse_concept,
    trust_tier,
)
from agentkernel.storage.base import DocumentStore

COMPUTATION_TYPE = "Attested Computation"
PARAMETER_TYPES = ("integer", "number", "string", "boolean", "date", "timestamp")

_HEADING = re.compile(r"^(#{1,6})\s+(.*?)\s*#*\s*$")
_FENCE = re.compile(r"^ {0,3}(`{3,}|~{3,})")


class ContractError(AKError, ValueError):
    """A concept is not a usable Attested Computation; the message says why and what to fix."""


def is_computation(kind: Any) -> bool:
    """Tell whether a ``type`` value names an Attested Computation (case and spaces ignored).

    Args:
        kind: The concept's ``type``.

    Returns:
        ``True`` for ``Attested Computation`` in any letter case.
    """
    return isinstance(kind, str) and " ".join(kind.split()).casefold() == "attested computation"


@dataclass(frozen=True)
class Parameter:
    """One declared hole the agent may fill.

    Attributes:
        name: The parameter's name, also its ``:name`` placeholder in the computation.
        type: One of :data:`PARAMETER_TYPES`.
        required: Whether a value must be given.
    """

    name: str
    type: str
    required: bool

    def describe(self) -> str:
        """Say the parameter in one phrase: ``year (integer, required)``."""
        return f"{self.name} ({self.type}, {'required' if self.required else 'optional'})"


@dataclass(frozen=True)
class Contract:
    """An Attested Computation as it stands in the bundle now.

    Attributes:
        concept_id: The concept's id.
        title: Its title.
        runtime: The ``runtime`` it names.
        parameters: Its declared parameters, in order.
        computation: The computation's text, exactly as written.
        computation_source: Where the text came from (``body`` or the bundle path of the file).
        receipt_fields: What ``executor.receipt`` asks a run to return.
        trust: The trust tier from ``verified``.
        verified: The latest verification (``by``, ``at``), or ``None``.
        stale_after: ``stale_after`` as written (``None`` when absent).
        stale_at: The instant it names, or ``None`` (absent, or without an offset).
        resources: ``executor.resource`` and ``attester.resource`` as written; never run.
        digest: SHA-256 of the concept document and the computation file, as read.
    """

    concept_id: str
    title: str
    runtime: str
    parameters: tuple[Parameter, ...]
    computation: str
    computation_source: str
    receipt_fields: tuple[str, ...]
    trust: str
    verified: Mapping[str, str] | None
    stale_after: str | None
    stale_at: datetime | None
    resources: Mapping[str, str] = field(default_factory=dict)
    digest: str = ""

    def parameter(self, name: str) -> Parameter | None:
        """The declared parameter called ``name``, or ``None``."""
        return next((p for p in self.parameters if p.name == name), None)

    def is_stale(self, now: datetime) -> bool:
        """``now >= stale_after`` (an instant without an offset is never stale: it is ignored)."""
        return self.stale_at is not None and now >= self.stale_at


def parse_parameters(value: Any) -> tuple[Parameter, ...]:
    """Read ``parameters``: a list of ``{name, type, required}`` mappings.

    Args:
        value: The frontmatter value.

    Returns:
        The parameters.

    Raises:
        ContractError: Not a list of such mappings, a type not in :data:`PARAMETER_TYPES`, a
            name that is not an identifier, or a name declared twice.
    """
    if value is None:
        return ()
    if not isinstance(value, list):
        raise ContractError("'parameters' must be a list of {name, type, required} entries.")
    found: list[Parameter] = []
    for entry in value:
        if not isinstance(entry, Mapping):
            raise ContractError(
                f"a parameter must be a {{name, type, required}} mapping: {entry!r}"
            )
        name, kind, required = entry.get("name"), entry.get("type"), entry.get("required", False)
        if not isinstance(name, str) or not name.isidentifier():
            raise ContractError(f"parameter name {name!r} is not an identifier")
        if kind not in PARAMETER_TYPES:
            raise ContractError(
                f"parameter {name!r} has type {kind!r}; the types are {', '.join(PARAMETER_TYPES)}"
            )
        if not isinstance(required, bool):
            raise ContractError(f"parameter {name!r}: 'required' must be true or false")
        if any(p.name == name for p in found):
            raise ContractError(f"parameter {name!r} is declared twice")
        found.append(Parameter(name, str(kind), required))
    return tuple(found)


def computation_block(body: str) -> str | None:
    """The one code block under the ``# Computation`` heading, fenced or indented.

    Args:
        body: The concept's markdown body.

    Returns:
        The block's text (one trailing newline dropped), or ``None`` when there is none.

    Raises:
        ContractError: The section holds more than one code block.
    """
    lines = body.splitlines()
    start = None
    for number, line in enumerate(lines):
        heading = _HEADING.match(line)
        if heading and heading.group(2).strip().casefold() == "computation":
            start, level = number + 1, len(heading.group(1))
            break
    if start is None:
        return None
    blocks: list[list[str]] = []
    fence: str | None = None
    indented: list[str] | None = None
    for line in lines[start:]:
        if fence is not None:
            if line.strip().startswith(fence) and not line.strip()[len(fence) :].strip():
                fence = None
            else:
                blocks[-1].append(line)
            continue
        heading = _HEADING.match(line)
        if heading and len(heading.group(1)) <= level:
            break
        opened = _FENCE.match(line)
        if opened:
            fence, indented = opened.group(1), None
            blocks.append([])
        elif line.startswith(("    ", "\t")):
            if indented is None:
                indented = []
                blocks.append(indented)
            indented.append(line[4:] if line.startswith("    ") else line[1:])
        elif line.strip() and indented is not None:
            indented = None
    blocks = [block for block in blocks if any(text.strip() for text in block)]
    if len(blocks) > 1:
        raise ContractError("the '# Computation' section holds more than one code block")
    return "\n".join(blocks[0]).strip("\n") if blocks else None


def load_contract(
    store: DocumentStore, path: str, token: str = "", *, legacy_dates: bool = False
) -> Contract:
    """Read the contract of the concept stored at ``path``, as it stands now.

    Args:
        store: The bundle's store.
        path: The concept's bundle path.
        token: The store's change token, if known.
        legacy_dates: Read a bare-date ``stale_after`` as midnight UTC, as the bundle does.

    Returns:
        The contract.

    Raises:
        ContractError: The document is not an Attested Computation, or its contract or
            computation cannot be read (the message names what to fix).
    """
    try:
        data = store.read(path)
        concept = parse_concept(path, token, len(data), data, complete=True)
    except (FileNotFoundError, ConceptError, KnowledgePathError) as exc:
        raise ContractError(f"{path} cannot be read as a concept: {exc}") from exc
    meta = concept.frontmatter
    if not is_computation(concept.type):
        raise ContractError(f"{concept.id} is a {concept.type!r}, not an Attested Computation")
    runtime = meta.get("runtime")
    if not isinstance(runtime, str) or not runtime.strip():
        raise ContractError(f"{concept.id} names no 'runtime' (required for this type)")
    digest = hashlib.sha256(data)
    named = meta.get("computation")
    inline = computation_block(concept.body_head)
    if named is not None:
        if inline is not None:
            raise ContractError(
                f"{concept.id} has both a 'computation' file and a '# Computation' block; keep one"
            )
        source, text = _computation_file(store, concept.path, named)
        digest.update(text.encode("utf-8"))
    elif inline is None:
        raise ContractError(
            f"{concept.id} has no computation: add a code block under '# Computation' or "
            "name a bundle file with 'computation'"
        )
    else:
        source, text = "body", inline
    executor, attester = meta.get("executor"), meta.get("attester")
    receipt = executor.get("receipt") if isinstance(executor, Mapping) else None
    resources = {
        key: str(block.get("resource"))
        for key, block in (("executor", executor), ("attester", attester))
        if isinstance(block, Mapping) and block.get("resource") is not None
    }
    return Contract(
        concept_id=concept.id,
        title=concept.title,
        runtime=runtime.strip(),
        parameters=parse_parameters(meta.get("parameters")),
        computation=text,
        computation_source=source,
        receipt_fields=tuple(str(f) for f in receipt) if isinstance(receipt, list) else (),
        trust=trust_tier(meta.get("verified")),
        verified=_latest_verification(meta.get("verified")),
        stale_after=None if meta.get("stale_after") is None else str(meta.get("stale_after")),
        stale_at=parse_timestamp(meta.get("stale_after"), legacy_dates=legacy_dates),
        resources=resources,
        digest=digest.hexdigest(),
    )


def _computation_file(store: DocumentStore, concept_path: str, named: Any) -> tuple[str, str]:
    """The bundle path and text of the file ``computation`` names, read through the store."""
    if not isinstance(named, str) or not named.strip():
        raise ContractError(f"'computation' must be a bundle path, got {named!r}")

    def exists(candidate: str) -> bool:
        try:
            store.read_head(candidate, 1)
        except (FileNotFoundError, KnowledgePathError, IsADirectoryError):
            return False
        return True

    resolved = resolve_target(concept_path, named.strip(), exists)
    if resolved is None:
        raise ContractError(
            f"'computation: {named}' is not a file inside the bundle (a URL is never fetched; "
            "a path may not leave the bundle)"
        )
    try:
        data = store.read(resolved)
    except FileNotFoundError as exc:
        raise ContractError(f"the computation file {resolved} does not exist") from exc
    except (KnowledgePathError, IsADirectoryError) as exc:
        raise ContractError(f"the computation file {named!r} cannot be read: {exc}") from exc
    try:
        return resolved, data.decode("utf-8").strip("\n")
    except UnicodeDecodeError as exc:
        raise ContractError(f"the computation file {resolved} is not UTF-8 text") from exc


def _latest_verification(value: Any) -> dict[str, str] | None:
    entries = [value] if isinstance(value, Mapping) else value if isinstance(value, list) else []
    found = [
        {"by": str(e.get("by")), "at": str(e.get("at", ""))}
        for e in entries
        if isinstance(e, Mapping) and e.get("by")
    ]
    return max(found, key=lambda e: e["at"]) if found else None


def summary(frontmatter: Mapping[str, Any]) -> dict[str, Any]:
    """What discovery shows of a computation from its frontmatter alone (no file is read).

    Args:
        frontmatter: The concept's frontmatter.

    Returns:
        ``runtime`` and ``parameters`` (as phrases); ``problem`` when they cannot be read.
    """
    shown: dict[str, Any] = {"runtime": str(frontmatter.get("runtime") or "")}
    try:
        shown["parameters"] = [
            p.describe() for p in parse_parameters(frontmatter.get("parameters"))
        ]
    except ContractError as exc:
        shown["parameters"], shown["problem"] = [], str(exc)
    return shown


def computations_of(concepts: Iterable[Concept]) -> dict[str, dict[str, Any]]:
    """The schema's listing of a bundle's Attested Computations, by concept id.

    Args:
        concepts: The concepts served.

    Returns:
        Concept id to its ``title``, ``runtime`` and ``parameters``, in id order.
    """
    found = {
        c.id: {"title": c.title, **summary(c.frontmatter)}
        for c in concepts
        if is_computation(c.type)
    }
    return dict(sorted(found.items()))
