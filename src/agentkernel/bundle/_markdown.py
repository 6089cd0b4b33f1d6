"""Where a markdown document's links are, as CommonMark (and markdown-it, HTML off) reads them.

The bundle's link parser (:mod:`agentkernel.bundle.links`) needs more than the rendered HTML:
the exact span of each link's destination, so a store can rewrite a target and leave every
other byte as written. markdown-it keeps no inline positions and costs about a millisecond a
page, so this module reads the two levels of CommonMark itself, in one pass over the lines
(:mod:`._markdown_blocks`) and one over each paragraph (:mod:`._markdown_inlines`):

* **blocks**: block quotes and list items (their content columns), fenced and indented code
  (no links inside), ATX and setext headings, thematic breaks, paragraphs with lazy
  continuation lines, and link reference definitions at the start of a paragraph;
* **inlines**: backslash escapes, code spans, autolinks and entities bind tighter than link
  brackets; inline links ``[text](dest "title")``, full, collapsed and shortcut reference
  links (``[text][label]``, ``[label][]``, ``[label]``); no link inside a link; an image's
  description is no link.

The inline rules follow markdown-it's own (``parseLinkLabel``, ``parseLinkDestination``, the
link rule's fallback from an inline link to a reference), so both agree on which brackets make
a link; ``tests/bundle/test_links_commonmark.py`` checks that agreement over the shared bundles
and over generated markdown. HTML is off, as in the viewer: ``<div>`` is text.
"""

from __future__ import annotations

from dataclasses import dataclass

from agentkernel.bundle._markdown_blocks import Blocks
from agentkernel.bundle._markdown_inlines import Inline
from agentkernel.bundle._markdown_syntax import Found

__all__ = ["Found", "Scan", "scan"]


@dataclass(frozen=True)
class Scan:
    """What one document holds: its links in order, and its images' spans.

    Attributes:
        links: Every link, in document order.
        images: The ``(span, alt)`` of every image outside a link, in document order.
    """

    links: tuple[Found, ...]
    images: tuple[tuple[tuple[int, int], tuple[int, int]], ...]


def scan(markdown: str) -> Scan:
    """Find the links (and images) of ``markdown`` as CommonMark reads them.

    Args:
        markdown: A markdown document (no frontmatter).

    Returns:
        Its links and images with their spans.
    """
    if "](" not in markdown and "]:" not in markdown:
        return Scan((), ())
    blocks = Blocks(markdown)
    blocks.run()
    links: list[Found] = []
    images: list[tuple[tuple[int, int], tuple[int, int]]] = []
    for chunk in blocks.chunks:
        Inline(chunk, blocks.references, links, images).run()
    return Scan(tuple(links), tuple(images))
