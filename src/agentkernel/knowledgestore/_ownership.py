"""Which folders the file store may write in, and which markdown files it leaves alone.

The file store rewrites ``index.md`` after every change and prepends to ``log.md``, so writing
in a folder someone else wrote (a hand-made OKF bundle, a notes folder) would replace their
files. It writes only in a folder it owns, and ownership is known from a marker file,
:data:`MARKER_FILE`, which the store creates with its first write:

* a folder holding the marker is the store's;
* a folder that does not exist yet, or holds no markdown file, becomes the store's on the
  first write (the marker is written then);
* a folder in the store's own layout, as agent-kit's store and every earlier version of this
  one keep it (typed pages in their type folders, ``index.md``, ``log.md``, ``overview.md``),
  is adopted the same way: every markdown file in it is one the store reads as its page or
  as one of its listings;
* a folder written by a version of the store that had no marker (it holds the store's
  ``.knowledge.lock``, and every markdown file sits where the store puts pages) is claimed
  the same way;
* any other folder is refused, with a message saying what to do: point the store at an empty
  folder, or create the marker by hand to hand the folder over to the store.

Reading never claims anything: the marker, like every other file, appears only on a write.
Hidden files and folders (``.git``, temporary files) are never looked at.
"""

from __future__ import annotations

from collections.abc import Callable, Collection, Sequence
from pathlib import Path

from agentkernel.knowledgestore.errors import KnowledgeStoreError
from agentkernel.knowledgestore.model import is_slug

MARKER_FILE = ".knowledgestore"
"""The file that marks a folder as the file store's own."""

LEGACY_LOCK_FILE = ".knowledge.lock"
"""The lock file every writing version of the store created (the marker of older folders)."""

MARKER_TEXT = (
    "This folder is a FileKnowledgeStore (agentkernel): the store rewrites index.md and log.md\n"
    "and writes pages here. Delete this file to stop it writing in this folder.\n"
)
_SHOWN = 5


def require_owned(
    root: Path,
    found: Sequence[str],
    in_layout: Callable[[str], bool],
    recognised: Callable[[str], bool],
) -> bool:
    """Refuse to write in ``root`` unless the store owns it (see the module's rules).

    Args:
        root: The store's folder.
        found: Every visible markdown file in it, bundle-relative.
        in_layout: Whether a bundle-relative markdown path is where the store keeps its own
            files (a page folder, or the root).
        recognised: Whether a bundle-relative markdown path is one the store reads as its
            page or one of its listings (``index.md``, ``log.md``, ``overview.md``).

    Returns:
        Whether the marker still has to be written (the folder is being claimed now).

    Raises:
        KnowledgeStoreError: The folder holds markdown files the store did not write.
    """
    if (root / MARKER_FILE).is_file():
        return False
    foreign = [rel for rel in found if not recognised(rel)]
    if not foreign:
        return True
    if (root / LEGACY_LOCK_FILE).is_file() and all(in_layout(rel) for rel in found):
        return True
    refuse_foreign(root.name, foreign)
    return False  # pragma: no cover - refuse_foreign raised


def refuse_foreign(name: str, foreign: list[str], *, marker: bool = True) -> None:
    """Refuse to write where markdown files the store cannot read as its pages lie.

    Args:
        name: The location's name, for the message (never an absolute path).
        foreign: Those files, bundle-relative; nothing happens when there is none.
        marker: Whether the store honours :data:`MARKER_FILE` (the message offers it).

    Raises:
        KnowledgeStoreError: There is one, saying what to do.
    """
    if not foreign:
        return
    shown = ", ".join(foreign[:_SHOWN]) + (", ..." if len(foreign) > _SHOWN else "")
    hand_over = (
        f"; or, if this folder is meant to be the store's, create an empty file named "
        f"{MARKER_FILE} in it to let the store write (and rewrite index.md and log.md) there"
        if marker
        else ""
    )
    raise KnowledgeStoreError(
        f"The knowledge store won't write in the folder {name!r}: it holds {len(foreign)} "
        f"markdown file(s) the store didn't write and can't read as its pages ({shown}; "
        "check() says why), and a write would replace its index.md and log.md. "
        f"Point the store at an empty folder (a subfolder such as 'knowledge' will do){hand_over}."
    )


def why_not_a_page(rel: str, page_dirs: Collection[str]) -> str:
    """Say why a markdown file the store does not serve is not one of its pages.

    Args:
        rel: Its bundle-relative path.
        page_dirs: The folders the store keeps pages in.

    Returns:
        One sentence, for ``check()``.
    """
    folder, _, name = rel.rpartition("/")
    if folder and folder not in page_dirs:
        where = ", ".join(f"{d}/" for d in sorted(page_dirs))
        return f"not in a page folder (this store keeps its pages in {where})"
    if not is_slug(name[:-3]):
        return "its name is not a page slug (lowercase words joined by hyphens, then .md)"
    if not folder:
        return "at the root without the type of a root page in its frontmatter"
    return "not read as a page"


def claim(root: Path, write: Callable[[Path, str], object]) -> None:
    """Write the marker that makes ``root`` the store's.

    Args:
        root: The store's folder.
        write: How to write a file (atomically).
    """
    write(root / MARKER_FILE, MARKER_TEXT)
