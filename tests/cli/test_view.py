"""``agentkernel-kb view``: the self-contained bundle page, checked in a real browser.

Real: the ``agentkernel-kb`` console script run in a subprocess, reading the shared OKF
bundles (read-only) and temporary bundles through ``LocalDocumentStore`` and ``OKFManager``;
the page it writes opened from disk in Debian's headless Chromium, driven over the DevTools
protocol (``tests/support/chromium.py``) with real mouse clicks and typed text. Nothing is
mocked. Screenshots are kept under ``build/`` as CI artifacts.
"""

from __future__ import annotations

import json
import re
import subprocess
import sys
import time
from pathlib import Path

import pytest

from agentkernel.cli.viewer._markdown import Link, render
from agentkernel.cli.viewer.page import embed_json
from tests.support import REPO, okf_bundle
from tests.support.chromium import Browser, Page

ROOT = REPO
BUILD = ROOT / "build"
HOSTILE = "</script><script>alert(1)</script>"
IMG = '<img src=x onerror="window.pwned=1">'
ODD = f"odd/{IMG}"  # a concept id that is markup


# -- running the command --------------------------------------------------------------------


def run_view(*args: str) -> subprocess.CompletedProcess[str]:
    script = Path(sys.executable).with_name("agentkernel-kb")
    command = [str(script)] if script.exists() else [sys.executable, "-m", "agentkernel.cli"]
    return subprocess.run(
        [*command, "view", *args], capture_output=True, text=True, timeout=300, check=False
    )


def bundle_ids(root: Path) -> set[str]:
    """The concept ids of a bundle on disk, found independently of the library."""
    return {
        path.relative_to(root).as_posix()[:-3]
        for path in root.rglob("*.md")
        if path.name.lower() not in ("index.md", "log.md")
    }


def body_headings(text: str) -> list[str]:
    """ATX headings of a document body, outside fenced code."""
    body = text.split("\n---\n", 1)[1] if text.startswith("---\n") else text
    body = re.sub(r"^```.*?^```", "", body, flags=re.M | re.S)
    return [m.group(1).strip() for m in re.finditer(r"^#{1,6} +(.+?)\s*#*$", body, re.M)]


def plain_line(text: str) -> str:
    """Up to 40 characters opening a prose line of the body, before any markdown syntax."""
    body = text.split("\n---\n", 1)[1] if text.startswith("---\n") else text
    body = re.sub(r"^```.*?^```", "", body, flags=re.M | re.S)
    for line in body.splitlines():
        prose = re.match(r"[A-Za-z][^`*_\[\]<>|#\\]{24,}", line.strip())
        if prose:
            return " ".join(prose.group(0).split())[:40]
    return ""


# -- the browser ----------------------------------------------------------------------------


@pytest.fixture
def page(browser: Browser) -> Page:
    return browser.new_page()


def open_page(page: Page, path: Path) -> None:
    page.open(path)
    page.settle()
    assert page.evaluate("document.body.getAttribute('data-ready')") == "true"


def data_ids(page: Page, css: str) -> list[str]:
    return page.evaluate(
        f"Array.from(document.querySelectorAll({json.dumps(css)}))"
        ".map(e => e.getAttribute('data-id'))"
    )


def click_data_id(page: Page, css: str, data_id: str, inner: str = "") -> None:
    """Click the element of ``css`` whose data-id is ``data_id`` (any text: no selector),
    or the part of it that ``inner`` selects."""
    box = page.evaluate(
        f"(() => {{ const id = {json.dumps(data_id)};"
        f" const found = Array.from(document.querySelectorAll({json.dumps(css)}))"
        "  .find(x => x.getAttribute('data-id') === id);"
        f" const inner = {json.dumps(inner)};"
        " const e = found && inner ? found.querySelector(inner) : found;"
        " if (!e) return null; e.scrollIntoView({block: 'center'});"
        " const r = e.getBoundingClientRect();"
        " return {x: r.left + r.width / 2, y: r.top + r.height / 2}; })()"
    )
    assert box is not None, f"nothing shows {data_id!r}"
    page.click(box["x"], box["y"])
    page.settle()


def showing(page: Page) -> str:
    return page.evaluate("document.getElementById('detail').getAttribute('data-showing')")


def assert_showing(page: Page, expected: str, timeout: float = 10.0) -> None:
    """The detail pane comes to show ``expected``: a click's route change lands a task or
    two after the click on a loaded machine, so poll briefly instead of reading once."""
    deadline = time.monotonic() + timeout
    while (found := showing(page)) != expected and time.monotonic() < deadline:
        page.settle()
    assert found == expected


def assert_clean(page: Page, html_file: Path) -> None:
    """No console error, no exception, and no request but the page itself."""
    assert page.problems() == []
    requested = {url for url in page.requests() if not url.startswith("data:")}
    assert requested <= {html_file.resolve().as_uri()}


# -- the real bundles -----------------------------------------------------------------------


@pytest.mark.parametrize("name", ["ga4", "crypto_bitcoin"])
def test_real_bundle_page_shows_every_concept_and_opens_each(
    name: str, page: Page, tmp_path: Path
) -> None:
    bundle = okf_bundle(name)
    output = tmp_path / f"{name}.html"
    result = run_view(str(bundle), "-o", str(output))
    assert result.returncode == 0, result.stderr
    assert output.is_file()
    expected = bundle_ids(bundle)
    assert f"({len(expected)} concepts" in result.stdout

    open_page(page, output)
    assert sorted(data_ids(page, "#concept-list a")) == sorted(expected)
    assert sorted(data_ids(page, "#nodes g.node")) == sorted(expected)
    # the overview shows the bundle's root index.md, rendered
    assert page.evaluate("document.querySelector('#detail .markdown h1') !== null")
    BUILD.mkdir(exist_ok=True)
    page.screenshot(BUILD / f"viewer-{name}.png")

    for cid in sorted(expected):  # a click on each list entry opens that concept
        click_data_id(page, "#concept-list a", cid)
        assert_showing(page, cid)
        text = (bundle / f"{cid}.md").read_text(encoding="utf-8")
        shown = page.evaluate(
            "Array.from(document.querySelectorAll('#detail .markdown :is(h1,h2,h3,h4,h5,h6)'))"
            ".map(h => h.textContent.trim())"
        )
        headings = [re.sub(r"[`*_]", "", h) for h in body_headings(text)]
        assert [re.sub(r"[`*_]", "", h) for h in shown] == headings
        prose = plain_line(text)
        assert headings or prose, f"{cid}: nothing to recognise its body by"
        if prose:
            rendered = page.evaluate("document.querySelector('#detail .markdown').textContent")
            assert prose in " ".join(rendered.split())
    assert_clean(page, output)


def test_a_click_on_a_graph_node_opens_it_with_links_and_backlinks(
    page: Page, tmp_path: Path
) -> None:
    bundle = okf_bundle("ga4")
    output = tmp_path / "ga4.html"
    assert run_view(str(bundle), "-o", str(output)).returncode == 0
    open_page(page, output)

    click_data_id(page, "#nodes g.node", "tables/events_", "circle.body")
    assert_showing(page, "tables/events_")
    assert page.evaluate("document.querySelector('#detail h2').textContent") == "GA4 Events Export"
    relations = page.evaluate(
        "Array.from(document.querySelectorAll('#detail .relations h3')).map(h => h.textContent)"
    )
    assert relations == ["Links (7)", "Backlinks (1)"]
    assert "event_date" in page.evaluate("document.querySelector('#detail table').textContent")
    BUILD.mkdir(exist_ok=True)
    page.screenshot(BUILD / "viewer-ga4-concept.png")

    # the backlink leads back to the dataset; its outgoing link is the table
    page.click_selector("#detail .relations div:nth-child(2) a")
    assert_showing(page, "datasets/ga4_obfuscated_sample_ecommerce")

    # the overview renders the root index.md; its directory links open that directory
    page.click_selector("#home-link")
    assert_showing(page, "")
    page.click_selector('#detail .markdown a[data-dir="tables"]')
    assert_showing(page, "tables/")
    page.evaluate("history.back()")  # routes are history entries
    page.settle()
    assert_showing(page, "")
    page.evaluate("history.forward()")
    page.settle()
    page.click_selector('#detail .markdown a[data-concept="tables/events_"]')
    assert_showing(page, "tables/events_")
    assert_clean(page, output)


# -- a hostile bundle -----------------------------------------------------------------------


def concept(kind: str, title: str, body: str, **extra: str) -> str:
    lines = ["---", f"type: {json.dumps(kind)}", f"title: {json.dumps(title)}"]
    lines += [f"{key}: {value}" for key, value in extra.items()]
    return "\n".join([*lines, "---", body])


HOSTILE_FILES = {
    "index.md": f"# Home {HOSTILE}\n\n* [notes](notes/index.md) {IMG}\n",
    "notes/index.md": "# Notes\n\nThe notes directory.\n",
    "notes/attack.md": concept(
        HOSTILE,
        f"Attack {HOSTILE}",
        f"# Heading {HOSTILE}\n\n{IMG} and <iframe src=x></iframe> and <!-- and ]]>\n\n"
        "[run](javascript:window.pwned=1) [data](data:text/html,<script>x</script>) "
        "![pic](http://example.invalid/x.png) {{script}} {{data}}\n\n"
        "```html\n</script><script>window.pwned=1</script>\n```\n\n"
        "| a | b |\n|---|---|\n| <b onmouseover=x>c</b> | `</style>` |\n\n"
        "Line\u2028separator and [reviewed](reviewed.md) and [missing](missing.md).\n",
        description=json.dumps(f"{HOSTILE} {IMG}"),
        tags=json.dumps([HOSTILE, "x\u2029y"]),
    ),
    "notes/reviewed.md": concept(
        "Playbook",
        "Reviewed by a human",
        "# Steps\n\nSee [the attack](attack.md).\n",
        verified='[{by: "human:ana", at: "2026-01-02T00:00:00Z"}]',
    ),
    "notes/checked.md": concept(
        "Playbook",
        "Checked by a process",
        "# Steps\n\nNothing.\n",
        verified='{by: "process:nightly", at: "2026-01-02T00:00:00Z"}',
        stale_after="2020-01-01T00:00:00Z",
        status="deprecated",
    ),
    f"{ODD}.md": concept("Note", IMG, f"# Odd {IMG}\n\nBody.\n"),
    "broken.md": "no frontmatter here\n",
}


@pytest.fixture
def hostile_bundle(tmp_path: Path) -> Path:
    root = tmp_path / "hostile"
    for rel, text in HOSTILE_FILES.items():
        path = root / rel
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(text, encoding="utf-8")
    return root


def test_hostile_text_is_shown_as_text_and_never_runs(
    hostile_bundle: Path, page: Page, tmp_path: Path
) -> None:
    output = tmp_path / "page.html"
    result = run_view(str(hostile_bundle), "-o", str(output))
    assert result.returncode == 0, result.stderr
    assert "1 diagnostic(s)" in result.stdout  # broken.md has no frontmatter
    html = output.read_text(encoding="utf-8")
    # one script element carrying data, one carrying code; the data block holds no markup
    assert html.count("<script") == 2 and html.count("</script>") == 2
    data_block = html.split('<script type="application/json" id="okf-data">', 1)[1]
    data_block = data_block.split("</script>", 1)[0]
    assert not set("<>&\u2028\u2029") & set(data_block)

    open_page(page, output)
    expected = bundle_ids(hostile_bundle) - {"broken"}
    assert sorted(data_ids(page, "#concept-list a")) == sorted(expected)
    assert sorted(data_ids(page, "#nodes g.node")) == sorted(expected)
    titles = page.evaluate(
        "Array.from(document.querySelectorAll('#concept-list .item-title span:last-child'))"
        ".map(e => e.textContent)"
    )
    assert f"Attack {HOSTILE}" in titles and IMG in titles
    assert "broken.md" in page.evaluate("document.getElementById('diagnostics').textContent")

    click_data_id(page, "#concept-list a", "notes/attack")
    assert_showing(page, "notes/attack")
    detail = "document.getElementById('detail')"
    assert page.evaluate(f"{detail}.querySelector('h2').textContent") == f"Attack {HOSTILE}"
    body = page.evaluate(f"{detail}.querySelector('.markdown').textContent")
    assert f"Heading {HOSTILE}" in body and IMG in body and "{{script}}" in body
    assert (
        page.evaluate(
            f"{detail}.querySelectorAll('img, script, iframe, [onerror], [onmouseover]').length"
        )
        == 0
    )
    hrefs = page.evaluate(
        f"Array.from({detail}.querySelectorAll('.markdown a[href]')).map(a => a.href)"
    )
    assert not [h for h in hrefs if h.startswith(("javascript:", "data:"))]
    # the bundle link opens its concept; the missing one is marked broken
    assert page.evaluate(f"{detail}.querySelectorAll('.broken-link').length") == 1
    page.click_selector("#detail .markdown a.concept-link")
    assert_showing(page, "notes/reviewed")
    backlinks = page.evaluate(
        "Array.from(document.querySelectorAll('#detail .relations div:nth-child(2) a'))"
        ".map(a => a.textContent)"
    )
    assert backlinks == [f"Attack {HOSTILE}"]

    click_data_id(page, "#concept-list a", ODD)
    assert page.evaluate(f"{detail}.querySelector('h2').textContent") == IMG
    assert page.evaluate("window.pwned") is None
    assert_clean(page, output)
    assert not [e for e in page.browser.events if e.get("method") == "Page.javascriptDialogOpening"]


def test_badges_search_and_type_filter(hostile_bundle: Path, page: Page, tmp_path: Path) -> None:
    output = tmp_path / "page.html"
    assert run_view(str(hostile_bundle), "-o", str(output)).returncode == 0
    open_page(page, output)

    def badge(cid: str) -> list[str]:
        return page.evaluate(
            f"(() => {{ const id = {json.dumps(cid)};"
            " const a = Array.from(document.querySelectorAll('#concept-list a'))"
            "  .find(x => x.getAttribute('data-id') === id);"
            " return Array.from(a.querySelectorAll('.badge')).map(b => b.textContent); })()"
        )

    assert badge("notes/reviewed") == ["human-reviewed"]
    assert badge("notes/checked") == ["machine-confirmed", "stale", "deprecated"]
    assert badge("notes/attack") == ["unverified"]
    assert page.evaluate("document.querySelectorAll('#nodes g.node .stale-ring').length") == 1

    page.click_selector("#search")
    page.send("Input.insertText", {"text": "human"})
    page.settle()
    visible = page.evaluate(
        "Array.from(document.querySelectorAll('#concept-list li')).filter(li => !li.hidden)"
        ".map(li => li.firstChild.getAttribute('data-id'))"
    )
    assert visible == ["notes/reviewed"]
    assert page.evaluate("document.getElementById('list-count').textContent") == (
        "Showing 1 of 4 concepts"
    )
    page.evaluate(
        "(() => { const s = document.getElementById('search'); s.value = '';"
        " s.dispatchEvent(new Event('input')); })()"
    )

    chips = page.evaluate(
        "Array.from(document.querySelectorAll('#type-legend .type-chip')).map(c => c.textContent)"
    )
    assert chips[0] == "Playbook 2"
    page.click_selector("#type-legend .type-chip")
    visible = page.evaluate(
        "Array.from(document.querySelectorAll('#concept-list li')).filter(li => !li.hidden).length"
    )
    assert visible == 2
    BUILD.mkdir(exist_ok=True)
    page.screenshot(BUILD / "viewer-hostile.png")
    assert_clean(page, output)


# -- the command's failures -----------------------------------------------------------------


def test_a_missing_bundle_is_a_clear_error_and_writes_nothing(tmp_path: Path) -> None:
    output = tmp_path / "page.html"
    result = run_view(str(tmp_path / "nowhere"), "-o", str(output))
    assert result.returncode == 2
    assert "cannot read" in result.stderr and "nowhere" in result.stderr
    assert not output.exists()


def test_an_unwritable_output_is_a_clear_error(tmp_path: Path, hostile_bundle: Path) -> None:
    result = run_view(str(hostile_bundle), "-o", str(tmp_path / "no" / "dir" / "page.html"))
    assert result.returncode == 2
    assert "cannot write" in result.stderr


def test_the_page_replaces_an_old_one_whole(tmp_path: Path, hostile_bundle: Path) -> None:
    output = tmp_path / "page.html"
    output.write_text("old", encoding="utf-8")
    assert run_view(str(hostile_bundle), "-o", str(output)).returncode == 0
    assert output.read_text(encoding="utf-8").startswith("<!DOCTYPE html>")
    assert [p.name for p in tmp_path.iterdir() if p.name.startswith(".page.html")] == []


def test_help_lists_view() -> None:
    result = run_view("--help")
    assert result.returncode == 0 and "FILE.html" in result.stdout


# -- the renderer and the JSON embedding, without a browser --------------------------------


def test_markdown_escapes_every_piece_of_text() -> None:
    html = render(f"# {HOSTILE}\n\n{IMG} *{HOSTILE}*\n\n| {IMG} |\n|---|\n| {HOSTILE} |\n")
    assert "<script" not in html and "<img" not in html
    assert "&lt;/script&gt;&lt;script&gt;alert(1)&lt;/script&gt;" in html


def test_markdown_links_go_where_the_resolver_says() -> None:
    def resolve(target: str) -> Link:
        return {
            "a.md": Link("concept", 'a"b'),
            "d/": Link("directory", "d"),
            "gone.md": Link("broken", "gone"),
            "https://x.test/?a=1&b=2": Link("external", "https://x.test/?a=1&b=2"),
        }.get(target, Link("text"))

    html = render(
        "[A](a.md) [D](d/) [G](gone.md) [X](https://x.test/?a=1&b=2) [J](javascript:alert(1))",
        resolve,
    )
    assert 'href="#c=a%22b" class="concept-link" data-concept="a&quot;b"' in html
    assert 'href="#d=d"' in html
    assert '<span class="broken-link" title="not in this bundle: gone">G</span>' in html
    assert 'href="https://x.test/?a=1&amp;b=2"' in html
    assert "javascript" not in html


def test_markdown_structure() -> None:
    html = render(
        "Title\n=====\n\n- one\n- two\n  1. nested\n\n> quoted\n\n```sql\nSELECT 1 < 2\n```\n\n"
        "snake_case_name and **bold** and `code *not em*` and a footnote[^s]\n\n"
        "[^s]: The source.\n"
    )
    flat = html.replace("\n", "")  # markdown-it puts each block on its own line
    assert html.startswith("<h1>Title</h1>")
    assert "<ul><li>one</li><li>two<ol><li>nested</li></ol></li></ul>" in flat
    assert "<blockquote><p>quoted</p></blockquote>" in flat
    assert '<pre><code class="language-sql">SELECT 1 &lt; 2\n</code></pre>' in html
    assert "snake_case_name" in html and "<strong>bold</strong>" in html
    assert "<code>code *not em*</code>" in html
    assert 'data-fn="s">1</a></sup>' in html and '<li data-fn="s"><p>The source.</p>' in html


def test_markdown_images_are_links_and_footnotes_pair_with_their_notes() -> None:
    html = render(
        "[![logo](x.png)](https://a.test) ![alone](https://b.test/i.png)"
        " and a note^[inline] and [^a].\n\n[^a]: A.\n"
    )
    assert "<img" not in html and html.count('class="external') == 2
    assert html.count("<a ") == 4  # the two images' links (no anchor in an anchor), two notes
    assert 'data-fn="0">1</a>' in html and '<li data-fn="0"><p>inline</p>' in html
    assert 'data-fn="a">2</a>' in html and '<li data-fn="a"><p>A.</p>' in html


def test_markdown_survives_unbalanced_markers_and_deep_nesting() -> None:
    # each of these took quadratic time (minutes at this size) or recursed without bound
    # in naive renderers; they must come back as escaped text
    units = ["*a ", "**a ", "_b ", "~~c ", "`x ", "[", "[^x", "[a](b ", "<a ", "http://a "]
    for unit in units:
        assert render(unit * 20000).startswith("<p>")
    nested = render("> " * 500 + "deep\n\n" + "".join("  " * n + "- x\n" for n in range(300)))
    assert "deep" in nested and nested.count("<blockquote>") <= 13


def test_embedded_json_cannot_close_its_script_element() -> None:
    value = {"t": f"{HOSTILE}\u2028\u2029&<!--"}
    text = embed_json(value)
    assert not set("<>&\u2028\u2029") & set(text)
    assert json.loads(text) == value
