"""The bundle's link parser against markdown-it, the CommonMark parser the viewer renders with.

Real: markdown-it-py (the package's own dependency, configured as the viewer configures it:
CommonMark, HTML off) is the oracle; the documents are every page of the shared OKF bundles
written by another project, and markdown generated from CommonMark's constructs (code spans,
fenced and indented code, reference links, lists, block quotes, escapes, nested brackets).
"""

from __future__ import annotations

from pathlib import Path

import pytest
from hypothesis import given
from hypothesis import strategies as st
from markdown_it import MarkdownIt

from agentkernel.bundle.links import link_targets, replace_targets, strip_links
from agentkernel.storage.frontmatter import split

BUNDLES = Path(__file__).resolve().parents[3] / "shared" / "data" / "okf-bundles"
_MARKDOWN = MarkdownIt("commonmark", {"html": False})


def rendered_links(markdown: str) -> list[str]:
    """The hrefs of the ``[...]`` links markdown-it renders (an image's description holds none).

    Autolinks (``<https://...>``) are left out: always a URL, never a bundle link.
    """
    return [
        child.attrs["href"]
        for token in _MARKDOWN.parse(markdown)
        if token.type == "inline"
        for child in token.children or ()
        if child.type == "link_open" and child.markup != "autolink"
    ]


def parsed_links(markdown: str) -> list[str]:
    """Our targets as markdown-it writes an href (percent-encoded)."""
    return [_MARKDOWN.normalizeLink(target) for target in link_targets(markdown)]


def _pages() -> list[Path]:
    return sorted(BUNDLES.rglob("*.md"))


@pytest.mark.parametrize("page", _pages(), ids=lambda path: str(path.relative_to(BUNDLES)))
def test_every_shared_bundle_page_has_the_links_markdown_it_renders(page: Path) -> None:
    text = page.read_text(encoding="utf-8")
    parts = split(text)
    body = text if parts is None else parts[1]
    assert parsed_links(body) == rendered_links(body)


def test_the_shared_bundles_are_there_and_have_links() -> None:
    pages = _pages()
    assert len(pages) >= 20
    assert sum(len(link_targets(page.read_text(encoding="utf-8"))) for page in pages) >= 50


CASES = {
    "code span": ("See `[not](a.md)` and [yes](b.md).", ["b.md"]),
    "double backticks": ("``a ` [no](a.md)`` [yes](b.md)", ["b.md"]),
    "unclosed backtick": ("`[yes](b.md)", ["b.md"]),
    "indented code": ("Text.\n\n    [no](a.md)\n\n[yes](b.md)", ["b.md"]),
    "indented lazy line": ("Text\n    [yes](a.md)", ["a.md"]),
    "fenced code": ("```\n[no](a.md)\n```\n[yes](b.md)", ["b.md"]),
    "unclosed fence": ("~~~\n[no](a.md)\n", []),
    "reference": ("[a][x] and [x] and [x][]\n\n[x]: b.md", ["b.md", "b.md", "b.md"]),
    "undefined reference": ("[a][nope] [b](c.md)", ["c.md"]),
    "escaped bracket": ("\\[no](a.md) [yes](b\\_c.md)", ["b_c.md"]),
    "nested link": ("[a [b](c.md)](d.md)", ["c.md"]),
    "image in link": ("[![alt](i.png)](d.md)", ["d.md"]),
    "link in image": ("![a [b](c.md)](i.png)", []),
    "parentheses": ("[a](b(c).md)", ["b(c).md"]),
    "angle brackets": ("[a](<b c.md>)", ["b%20c.md"]),
    "list code": ("- item\n\n        [no](a.md)\n\n  [yes](b.md)", ["b.md"]),
    "quote code": (">     [no](a.md)\n> [yes](b.md)", ["b.md"]),
}


@pytest.mark.parametrize("name", sorted(CASES))
def test_constructs_where_the_old_parser_disagreed(name: str) -> None:
    markdown, expected = CASES[name]
    assert rendered_links(markdown) == expected  # the oracle says so
    assert parsed_links(markdown) == expected


_WORDS = st.sampled_from(["tides", "moon", "orbit", "*em*", "_x_", "a)", "(b", "!", "&amp;", ":"])
_TARGETS = st.sampled_from(["a.md", "b/c.md", "../d.md", "e.md#part", "f(g).md", "h\\_i.md", ""])
_LABELS = st.sampled_from(["ref", "Ref", "other", "r e f"])


@st.composite
def _inline(draw: st.DrawFn) -> str:
    target = draw(_TARGETS)
    label = draw(_LABELS)
    word = draw(_WORDS)
    return draw(
        st.sampled_from(
            [
                word,
                f"[{word}]({target})",
                f"[{word}](<{target} x>)",
                f'[{word}]({target} "t")',
                f"![{word}]({target})",
                f"`[{word}]({target})`",
                f"``[{word}]`({target})``",
                f"\\[{word}]({target})",
                f"[{word}][{label}]",
                f"[{label}]",
                f"[{label}][]",
                f"[{word} [{label}]]({target})",
                f"[a [{word}]({target})]({target})",
                f"<http://x.example/{word}>",
                "`",
                "[",
                "]",
                "](",
                f"[{word}]\n({target})",
            ]
        )
    )


@st.composite
def _block(draw: st.DrawFn) -> str:
    line = " ".join(draw(st.lists(_inline(), min_size=1, max_size=4)))
    second = " ".join(draw(st.lists(_inline(), min_size=1, max_size=3)))
    label = draw(_LABELS)
    target = draw(_TARGETS) or "z.md"
    return draw(
        st.sampled_from(
            [
                line,
                f"{line}\n{second}",
                f"# {line}",
                f"{line}\n---",
                f"```\n{line}\n```",
                f"~~~~ info\n{line}\n~~~",
                f"    {line}",
                f"{line}\n    {second}",
                f"- {line}\n  {second}",
                f"- {line}\n\n      {second}",
                f"1. {line}\n\n    {second}",
                f"- {line}\n- {second}",
                f"> {line}\n{second}",
                f">     {line}",
                f"> - {line}\n>   {second}",
                f"[{label}]: {target}",
                f'[{label}]: <{target}> "title"\n{line}',
                f"[{label}]:\n  {target}",
                "",
            ]
        )
    )


@given(st.lists(_block(), min_size=1, max_size=6), st.sampled_from(["\n", "\n\n"]))
def test_generated_markdown_has_the_links_markdown_it_renders(
    blocks: list[str], joiner: str
) -> None:
    markdown = joiner.join(blocks)
    assert parsed_links(markdown) == rendered_links(markdown)


@given(st.lists(_block(), min_size=1, max_size=6))
def test_rewriting_every_target_changes_only_what_markdown_it_calls_a_link(
    blocks: list[str],
) -> None:
    markdown = "\n\n".join(blocks)
    rewritten = replace_targets(markdown, lambda target: "new/" + target.replace("\\", ""))
    before = rendered_links(markdown)
    after = rendered_links(rewritten)
    assert len(after) == len(before)
    assert all(href.startswith("new/") for href in after)
    # a document without links is left byte for byte
    if not before:
        assert rewritten == markdown


def test_strip_links_reads_as_a_sentence() -> None:
    assert strip_links("See [the moon](concept/moon) and `[x](y)`.") == "See the moon and `[x](y)`."
    assert strip_links("A [ref] here.\n\n[ref]: a.md") == "A ref here.\n\n[ref]: a.md"


def test_a_long_paragraph_opening_with_a_bracket_is_read_once() -> None:
    # a page of 20,000 lines after a link: each line used to re-read the whole paragraph for
    # reference definitions (the square of its lines); markdown-it agrees on the one link
    markdown = "[a](b.md)\n" + "x\n" * 20_000 + "[c]: d.md\n"
    assert parsed_links(markdown) == rendered_links(markdown) == ["b.md"]
