"""Open bundles named on the command line, and name them for agents by one rule.

A bundle's backend name is its folder's name (``/srv/kb`` is ``kb``), an S3 prefix's last
segment (``s3://bucket/bundles/kb`` is ``kb``), or what ``--name`` says; two bundles that
would share a name are refused, never renamed behind the user's back. Every command that
serves bundles (``serve``, ``ask``, ``schema``, ``search``, ``fetch``, ``browse``, and
``python -m agentkernel.mcp --bundle``) names them here, so the name an agent's prompt uses
does not depend on how the server was started.
"""

from __future__ import annotations

import argparse
import sys
from collections.abc import Sequence
from typing import TYPE_CHECKING, Any

from agentkernel.errors import AKConfigError

if TYPE_CHECKING:
    from agentkernel.knowledgebase.okf.manager import OKFManager

NAME_HELP = (
    "the backend name agents use (default: the bundle's folder name, or an S3 prefix's last "
    "segment); give it once per bundle, in order"
)


BUNDLE_HELP = "the OKF bundle: a directory, file:///dir, s3://bucket/prefix or python:pkg.Store"


def add_bundle_argument(parser: argparse.ArgumentParser) -> None:
    """Add the bundle argument, ``--name`` and ``--embedder`` of the commands serving a bundle.

    Args:
        parser: The subcommand's parser.
    """
    parser.add_argument("bundle", metavar="PATH|URI", help=BUNDLE_HELP)
    add_name_argument(parser)
    add_embedder_argument(parser)
    add_index_argument(parser)


def add_index_argument(parser: argparse.ArgumentParser, *, required: bool = False) -> None:
    """Add ``--index INDEX_URI`` (serve from a bundle index) and ``--index-option``.

    Args:
        parser: The subcommand's parser.
        required: ``index`` itself takes the URI as ``--to``; this is for the readers.
    """
    parser.add_argument(
        "--index",
        metavar="INDEX_URI",
        help="serve search, browse and the schema from this bundle index (agentkernel-kb "
        "index ... --to INDEX_URI): s3://bucket/kb.lance or a path",
    )
    parser.add_argument(
        "--index-option",
        action="append",
        default=[],
        metavar="KEY=VALUE",
        help="an object-store option for the index (aws_endpoint=..., allow_http=true, "
        "node_cache=DIR|off, node_cache_bytes=N); repeat",
    )


def index_options(items: Sequence[str]) -> dict[str, str]:
    """Parse ``--index-option KEY=VALUE`` values.

    Args:
        items: The values given.

    Returns:
        ``{key: value}``.

    Raises:
        AKConfigError: A value is not ``KEY=VALUE``.
    """
    options: dict[str, str] = {}
    for item in items:
        key, sep, value = item.partition("=")
        if not sep or not key.strip():
            raise AKConfigError(f"--index-option takes KEY=VALUE, got {item!r}")
        options[key.strip()] = value
    return options


def add_embedder_argument(parser: argparse.ArgumentParser, *, lexical: bool = True) -> None:
    """Add ``--embedder`` (hybrid search), ``--lexical`` and ``--vector-cache``.

    Args:
        parser: The subcommand's parser.
        lexical: Add ``--lexical`` (the commands that search; hybrid is their default).
    """
    parser.add_argument(
        "--embedder",
        metavar="PATH_OR_NAME",
        help="search hybrid with this embedder: 'default' (the packaged all-MiniLM-L6-v2; "
        "the default when the embeddings extra is installed; with --index, the embedder the "
        "index was built with), a "
        "model folder, or http(s)://host/v1#model",
    )
    if lexical:
        parser.add_argument(
            "--lexical",
            action="store_true",
            help="search lexically only, even with the embeddings extra installed",
        )
    parser.add_argument(
        "--vector-cache",
        metavar="DIR",
        help="the vector cache (default: $XDG_CACHE_HOME/agentkernel/vectors)",
    )


def chosen_embedder(args: argparse.Namespace) -> str | None:
    """The embedder a searching command uses: ``--embedder``, else hybrid when installed.

    Hybrid search with the packaged default is the default when the ``embeddings`` extra and
    the model package are installed; ``--lexical`` turns it off. With ``--index`` the index
    decides: its vectors are searched with the embedder it was built with
    (:func:`index_embedder`), ``--lexical`` searches it lexically.

    Args:
        args: Parsed arguments from a parser extended by :func:`add_embedder_argument`.

    Returns:
        The embedder spec, or ``None`` for lexical search.

    Raises:
        AKConfigError: ``--lexical`` and ``--embedder`` were both given.
    """
    from agentkernel.retrieval.embedders import AUTO
    from agentkernel.retrieval.embedders import chosen_embedder as resolve

    given: str | None = getattr(args, "embedder", None)
    if getattr(args, "lexical", False):
        if given is not None:
            raise AKConfigError("Give --lexical or --embedder, not both.")
        return None
    if given is not None:
        return given
    index = getattr(args, "index", None)
    if index:
        return index_embedder(index, getattr(args, "index_option", ()))
    return resolve(AUTO)


def index_embedder(index: str, options: Sequence[str]) -> str | None:
    """The embedder a bundle index was built with, to search its vectors (``None``: lexical).

    Args:
        index: ``--index``.
        options: ``--index-option`` values.

    Returns:
        The embedder its meta row names (or the packaged default when that made its vectors);
        ``None`` for an index without vectors, or one whose model must be named (a model
        folder: said on stderr), or one that cannot be read (opening it says why).
    """
    from agentkernel.knowledgebase.okf.bundleindex import dense
    from agentkernel.knowledgebase.okf.bundleindex.opener import index_opener

    try:
        recorded = dense.read_model_record(index_opener(index, index_options(options)).open())
    except Exception:
        return None
    spec = dense.recorded_spec(recorded)
    if recorded is not None and spec is None:
        print(
            f"agentkernel-kb: the bundle index {index} holds vectors of "
            f"{recorded.get('model_id')}; name that model with --embedder to search them "
            "(searching lexically)",
            file=sys.stderr,
        )
    return spec


def search_mode_line(manager: Any) -> str:
    """One line for stderr saying how a bundle's search answered: hybrid or lexical.

    Args:
        manager: The OKF manager searched.

    Returns:
        ``NAME: search is ...``: the engine that answered the latest search (as the schema
        names it), else the schema's ``search`` entry.
    """
    said = getattr(manager, "answered_by", "") or manager.schema().get("search", "")
    return f"{manager.backend_name}: search is {said}" if said else ""


def add_name_argument(parser: Any, *flags: str) -> None:
    """Add ``--name NAME`` (repeatable: one per bundle, in order) to a parser or group.

    Args:
        parser: The parser or argument group.
        *flags: More option strings for the same value (``--kb-name``), hidden from help.
    """
    parser.add_argument("--name", action="append", dest="names", metavar="NAME", help=NAME_HELP)
    for flag in flags:
        parser.add_argument(flag, action="append", dest="names", help=argparse.SUPPRESS)


def open_bundles(
    locations: Sequence[str],
    names: Sequence[str] | None = None,
    *,
    writable: bool = False,
    embedder: str | None = None,
    cache_dir: str | None = None,
    index: str | None = None,
    index_option: Sequence[str] = (),
    background: bool = False,
) -> list[OKFManager]:
    """Open bundles for a command, named by the one rule; read-only unless asked otherwise.

    Args:
        locations: Paths or store URIs.
        names: ``--name`` values, matched to ``locations`` in order; the rest are derived.
        writable: Whether writes are allowed (only ``serve --writable`` asks).
        embedder: ``--embedder``: makes search hybrid.
        cache_dir: ``--vector-cache``.
        index: ``--index``: the bundle index to serve from (one bundle only).
        index_option: ``--index-option KEY=VALUE`` values.
        background: Load on threads (a server; see ``OKFManager``'s ``background``).

    Returns:
        Connected managers that never refresh on their own, in the order given.

    Raises:
        AKConfigError: More names than bundles, an empty name, two bundles sharing a name,
            or ``--index`` with several bundles.
        OSError: A local bundle does not exist or cannot be listed.
    """
    from agentkernel.knowledgebase.okf.manager import OKFManager
    from agentkernel.storage.base import DocumentStore, bundle_name

    given = list(names or [])
    if len(given) > len(locations):
        raise AKConfigError(
            f"--name was given {len(given)} times for {len(locations)} bundle(s): give it at "
            "most once per bundle, in the order the bundles are named."
        )
    if any(not name.strip() for name in given):
        raise AKConfigError("--name needs a non-empty name.")
    if index is not None and len(locations) != 1:
        raise AKConfigError("--index names the index of one bundle: give exactly one bundle.")
    served: dict[str, Any] = {}
    if index is not None:
        served = {"index": index, "index_options": index_options(index_option)}
    options: dict[str, Any] = {} if writable else {"writable": False}
    stores = []
    try:
        for location in locations:
            stores.append(DocumentStore.from_uri(location, **options))
        chosen = given + [bundle_name(store.label) for store in stores[len(given) :]]
        _refuse_clashes(locations, chosen)
        return [
            OKFManager(
                store,
                name=name,
                refresh_seconds=None,
                embedder=embedder,
                cache_dir=cache_dir,
                background=background,
                **served,
            )
            for store, name in zip(stores, chosen, strict=True)
        ]
    except BaseException:
        for store in stores:
            store.close()
        raise


def _refuse_clashes(locations: Sequence[str], names: Sequence[str]) -> None:
    first: dict[str, str] = {}
    for location, name in zip(locations, names, strict=True):
        if name in first:
            raise AKConfigError(
                f"Two bundles would both be named {name!r} ({first[name]} and {location}): "
                "name them apart with --name, once per bundle in order "
                f"(for example --name {name} --name {name}_2)."
            )
        first[name] = location


def skipped_summary(name: str, kb: Any) -> str:
    """One line saying how many files a bundle's walk skipped and why; ``""`` when none.

    Args:
        name: The backend name.
        kb: The backend (its ``diagnostics`` are ``"path: reason"`` lines).

    Returns:
        For example ``plain: 8 file(s) skipped (8 no YAML frontmatter); run 'agentkernel-kb
        check /srv/plain' to see each file and the rule it breaks``.
    """
    diagnostics = list(getattr(kb, "diagnostics", None) or [])
    if not diagnostics:
        return ""
    reasons: dict[str, int] = {}
    for line in diagnostics:
        _, _, reason = str(line).partition(": ")
        reason = (reason or str(line)).split(" (", 1)[0].split(": ", 1)[0].strip()
        reasons[reason] = reasons.get(reason, 0) + 1
    shown = ", ".join(f"{count} {reason}" for reason, count in list(reasons.items())[:3])
    more = ", ..." if len(reasons) > 3 else ""
    where = kb.store.location if hasattr(kb, "store") else name
    return (
        f"{name}: {len(diagnostics)} file(s) skipped ({shown}{more}); run "
        f"'agentkernel-kb check {where}' to see each file and the rule it breaks"
    )


def add_full_argument(parser: argparse.ArgumentParser) -> None:
    """Add ``--full``: print whole answers instead of cutting them at the answer budget.

    Args:
        parser: The subcommand's parser.
    """
    parser.add_argument(
        "--full",
        action="store_true",
        help="print the whole text; by default an answer is cut at the agent's budget "
        "(20,000 characters) with a note saying how to read on",
    )


def positive(text: str) -> int:
    """An argparse type: a whole number of at least 1 (a usage error otherwise).

    Args:
        text: The argument.

    Returns:
        The number.

    Raises:
        argparse.ArgumentTypeError: Not a whole number of at least 1.
    """
    try:
        value = int(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"expected a whole number, got {text!r}") from None
    if value < 1:
        raise argparse.ArgumentTypeError(f"must be at least 1, got {value}")
    return value


def result_limit(text: str) -> int:
    """An argparse type: a result count the tools accept, 1 to their most (a usage error otherwise).

    Args:
        text: The argument.

    Returns:
        The number.

    Raises:
        argparse.ArgumentTypeError: Not a whole number from 1 to the tools' most.
    """
    from agentkernel.knowledgebase.knowledgebuilder import MAX_LIMIT

    value = positive(text)
    if value > MAX_LIMIT:
        raise argparse.ArgumentTypeError(f"must be at most {MAX_LIMIT}, got {value}")
    return value


def nonempty(text: str) -> str:
    """An argparse type: text that is not blank (a usage error otherwise).

    Args:
        text: The argument.

    Returns:
        The text.

    Raises:
        argparse.ArgumentTypeError: Blank text.
    """
    if not text.strip():
        raise argparse.ArgumentTypeError("must not be empty")
    return text
