"""The one error tree of the package: every exception agentkernel defines derives from AKError.

::

    AKError                        base of every agentkernel error
    ├── AKConfigError              also a ValueError: a configuration mistake (config.yaml, a
    │                              store URI, an unknown backend type, a bad limit); the message
    │                              names what is wrong and where
    ├── MissingExtraError          also an ImportError: an optional SDK is not installed; the
    │                              message names the extra to install
    ├── EmbedderError              also a RuntimeError (agentkernel.retrieval): an embedder
    │   │                          cannot be built or cannot embed
    │   └── IndexModelError        (agentkernel.knowledgebase.okf.bundleindex.dense) a bundle
    │                              index holds vectors of another model
    ├── ConceptError               also a ValueError (agentkernel.knowledgebase.okf.concept):
    │                              a document cannot be read as an OKF concept
    ├── FrontmatterError           also a ValueError (agentkernel.storage.frontmatter):
    │                              a document's frontmatter is missing or not a YAML mapping
    ├── YAMLLimitError             also a ValueError (agentkernel.storage.yamltext): YAML
    │                              refused by a bound (too many values once aliases expand,
    │                              or too deep)
    ├── CacheIntegrityError        also an OSError (agentkernel.storage.nodecache): a downloaded
    │                              object does not match what the object store said it holds
    ├── CachePathError             also a ValueError (agentkernel.storage.nodecache): a name from
    │                              the object store would leave the node cache or touch its
    │                              bookkeeping; nothing is written
    ├── ContractError              also a ValueError (agentkernel.knowledgebase.okf.computation):
    │                              a concept is not a usable Attested Computation
    ├── BindingError               also a ValueError (same package): the values given cannot be
    │                              bound (an unknown name, a missing or mistyped value)
    ├── ComputationError           (same package) a computation could not run, or its
    │                              attestation failed; no value is shown
    ├── WriteConflictError         (here: agentkernel.storage raises it) a conditional write
    │                              lost a race: the file changed since its token was read;
    │                              retry from a fresh read
    ├── ToolRefusal                (agentkernel._tooling.errors) a tool call refused where it
    │                              was decided; the one tool factory returns its message to
    │                              the agent as an error result
    └── KnowledgeError             (here; agentkernel.knowledgebase's) a knowledge-base failure
        │                          an agent can act on; the tools turn it into a string
        ├── KnowledgeCapabilityError   an operation the backend does not declare
        ├── KnowledgePathError         (here: agentkernel.storage raises it) a path escaped a
        │                              DocumentStore, or is unusable as an id
        ├── DocumentTooLargeError      (here: agentkernel.storage raises it) a document is over
        │                              the size bound; it was not read (or not written)
        ├── SQLRefusedError            a SQL statement refused before execution
        ├── SQLQueryError              the database reported an error for an accepted statement
        ├── IndexConflictError         (agentkernel.knowledgebase.okf.bundleindex.indexer)
        │                              other indexers kept committing first
        ├── IndexBundleError           (agentkernel.knowledgebase.okf.bundleindex.identity) the
        │                              index belongs to another bundle; nothing written or served
        ├── IndexUnavailable           (agentkernel.knowledgebase.okf._lanceview) the bundle index
        │                              cannot be opened
        └── KnowledgeStoreError        (agentkernel.knowledgestore) a curated store refused an
            │                          operation
            ├── PageConflictError      another writer changed the page first; retryable,
            │                          names the page
            └── StoreAccessError       the store's files could not be read or written (a full
                                       disk, a read-only disk, a missing bucket, an endpoint
                                       that can't be reached); names the store and the page

Signals that never leave the module raising them (each is caught there and reworded):

::

    AKError
    ├── _Decline                   knowledgebase.okf.fastyaml: the fast reader declines
    ├── Refusal                    knowledgebase._sql.relations: why a statement is refused
    ├── DeadlinePassed             knowledgebase._limits: the wall-clock limit passed while
    │                              rows were read
    ├── UnresolvedName             knowledgebase._sql.names: a name the guard cannot resolve
    └── WorkerTimeout              knowledgebase._sql.duckdb_process: DuckDB's process passed
                                   the time limit (stopped, or killed)

``except AKError`` therefore catches every error agentkernel raises on purpose. The
``KnowledgeError`` branch is what an agent reads (``KnowledgeBuilder`` and the knowledge-store
tools return its message); the rest are a developer's or an environment's mistakes, raised at
construction or import. ``tests/test_errors.py`` checks that every exception class in the
package appears in this drawing under the parent drawn.
"""

from __future__ import annotations

__all__ = [
    "ECHO_LIMIT",
    "AKConfigError",
    "AKError",
    "DocumentTooLargeError",
    "KnowledgeError",
    "KnowledgePathError",
    "MissingExtraError",
    "WriteConflictError",
    "echo",
    "missing_extra",
]


class AKError(Exception):
    """Base class of every error agentkernel raises on purpose."""


class AKConfigError(AKError, ValueError):
    """A configuration mistake: the message names the offending setting and its value."""


class MissingExtraError(AKError, ImportError):
    """An optional SDK is not installed; the message names the extra to install."""


class KnowledgeError(AKError):
    """Base class of every knowledge-base failure (exported by :mod:`agentkernel.knowledgebase`)."""


class KnowledgePathError(KnowledgeError):
    """A path escaped a document store's root or cannot serve as an identity.

    Defined here, below every package, so that :mod:`agentkernel.storage` raises it without
    importing :mod:`agentkernel.knowledgebase`; exported by that package too.
    """


class DocumentTooLargeError(KnowledgeError):
    """A document is larger than the bound a read (or a write) allows; it was not buffered.

    Not an ``OSError``: the content is the problem, not the way to it, so retrying the same
    read gives the same answer until the document changes.

    Attributes:
        path: The store-relative path.
        reason: The bound's one message (``oversized: ... (the limit is max_document_bytes=...)``).
        token: The change token of the refused content when the read learnt it (an S3 ETag,
            a local file's token), else ``None``: a compare-and-swap can still replace it.
    """

    def __init__(self, path: str, reason: str, token: str | None = None) -> None:
        """Word the refusal.

        Args:
            path: The store-relative path.
            reason: The bound's message for its size.
            token: The refused content's change token, when known.
        """
        super().__init__(f"{echo(path)} is {reason}; it was not read.")
        self.path = path
        self.reason = reason
        self.token = token


class WriteConflictError(AKError):
    """A conditional write lost a race: the file changed since its token was read.

    Retryable: read the file again (with its new token) and redo the change.

    Attributes:
        path: The store-relative path written.
    """

    def __init__(self, message: str, path: str) -> None:
        """Keep the message and the path.

        Args:
            message: What happened, naming the path.
            path: The store-relative path.
        """
        super().__init__(message)
        self.path = path


def missing_extra(package: str, extra: str, *, feature: str | None = None) -> MissingExtraError:
    """Word the error for an optional dependency that is not installed.

    Args:
        package: The import name that failed (for example ``"boto3"``).
        extra: The agentkernel extra that installs it (for example ``"aws"``).
        feature: What needed it, for the message; defaults to the package name.

    Returns:
        An error to raise ``from`` the original ``ImportError``.
    """
    what = feature or package
    return MissingExtraError(
        f"{what} requires the '{extra}' extra ({package} is not installed): "
        f"pip install 'agentkernel[{extra}]'"
    )


ECHO_LIMIT = 200
"""The most characters of caller-supplied input a message quotes (see :func:`echo`)."""


def echo(value: object, limit: int = ECHO_LIMIT) -> str:
    """Quote caller-supplied input in a message, cut to ``limit`` characters.

    Every message that repeats what an agent or user sent (a backend name, a path, an id, an
    argument) quotes it through this function, so a 12 MB name comes back as a short quote
    saying how long the original was, not as 12 MB. The quote is the ``repr`` of the text,
    which also escapes control characters and lone surrogates: the message stays one line of
    encodable text whatever the input held.

    Args:
        value: The input; a non-string is shown by its ``repr``.
        limit: The most characters of the input shown.

    Returns:
        ``'text'``, or ``'first 200 characters…' (12000000 characters)`` when cut.
    """
    if isinstance(value, str):
        if len(value) <= limit:
            return repr(value)
        shown = repr(value[:limit])
        return f"{shown[:-1]}…{shown[-1]} ({len(value)} characters)"
    try:
        text = repr(value)
    except Exception:  # a hostile __repr__ must not break the message
        text = f"<{type(value).__name__}>"
    if len(text) <= limit:
        return text
    return f"{text[:limit]}… ({len(text)} characters)"
