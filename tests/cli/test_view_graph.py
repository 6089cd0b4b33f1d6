"""``agentkernel-kb view``: the graph fills its pane, and its labels never overlap.

Real: the ``agentkernel-kb`` console script writes the page from the shared OKF bundles (read
in place, never written), the example bundle and a generated 30-concept bundle with long
titles and hubs; Debian's headless Chromium opens it (``tests/support/chromium.py``) at two
window sizes. Every check reads what the browser laid out: the bounding boxes of the label
and node elements, from the DOM. Screenshots go to ``build/`` (gitignored).
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from tests.cli.test_view import BUILD, ROOT, open_page, run_view
from tests.support import OKF_BUNDLES, okf_bundle
from tests.support.chromium import Browser, Page

EXAMPLE = ROOT / "examples" / "cli" / "knowledgebase" / "openai" / "okf" / "bundle"

# What the page shows, measured in the browser: the pane, each node's disc and whether its
# label is displayed, and the box of every displayed label.
MEASURE = """(() => {
  const pane = document.getElementById('graph').getBoundingClientRect();
  const nodes = Array.from(document.querySelectorAll('#nodes g.node')).map(g => {
    const disc = g.querySelector('circle.body').getBoundingClientRect();
    const text = g.querySelector('text');
    const shown = getComputedStyle(text).display !== 'none';
    const box = text.getBoundingClientRect();
    return {id: g.getAttribute('data-id'), disc: [disc.left, disc.right, disc.top, disc.bottom],
            shown: shown, label: [box.left, box.right, box.top, box.bottom]};
  });
  return {pane: [pane.left, pane.right, pane.top, pane.bottom], nodes: nodes};
})()"""


@pytest.fixture(scope="module")
def hub_bundle(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """30 concepts with long titles: three hubs linked from nearly everything, and a chain."""
    root = tmp_path_factory.mktemp("hubs") / "hubs"
    hubs = ["core/orders_fact_table", "core/customers_dimension", "core/revenue_metric"]
    ids = hubs + [f"area{i % 4}/concept_{i:02d}" for i in range(27)]
    for n, cid in enumerate(ids):
        links = [h for h in hubs if h != cid and (n + hubs.index(h) if h in hubs else n) % 5]
        if n >= 3:
            links.append(ids[n - 1])
        body = "\n".join(f"See [{target}](/{target}.md)." for target in links)
        title = f"A rather long concept title number {n} about {cid.split('/')[1]}"
        path = root / f"{cid}.md"
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(f"---\ntype: Note\ntitle: {title}\n---\n{body}\n", encoding="utf-8")
    return root


def _degrees(bundle: Path) -> dict[str, int]:
    """Links in and out of each concept, read from the files (independently of the viewer)."""
    import re

    degree: dict[str, int] = {}
    for path in bundle.rglob("*.md"):
        if path.name in ("index.md", "log.md"):
            continue
        cid = path.relative_to(bundle).as_posix()[:-3]
        degree.setdefault(cid, 0)
        for target in set(re.findall(r"\]\((/[^)#]+?)\.md", path.read_text(encoding="utf-8"))):
            target_id = target.lstrip("/")
            if target_id != cid and (bundle / f"{target_id}.md").is_file():
                degree[cid] += 1
                degree[target_id] = degree.get(target_id, 0) + 1
    return degree


def _intersect(a: list[float], b: list[float]) -> bool:
    return min(a[1], b[1]) - max(a[0], b[0]) > 0.5 and min(a[3], b[3]) - max(a[2], b[2]) > 0.5


def _open(browser: Browser, bundle: Path, out: Path, size: tuple[int, int]) -> Page:
    result = run_view(str(bundle), "-o", str(out))
    assert result.returncode == 0, result.stderr
    page = browser.new_page(*size)
    open_page(page, out)
    return page


CASES = [
    ("ga4", OKF_BUNDLES / "ga4"),
    ("crypto_bitcoin", OKF_BUNDLES / "crypto_bitcoin"),
    ("example", EXAMPLE),
    ("hubs", None),
]


@pytest.mark.parametrize("size", [(1600, 1000), (1280, 800)], ids=["1600x1000", "1280x800"])
@pytest.mark.parametrize(("name", "where"), CASES, ids=[c[0] for c in CASES])
def test_the_graph_fills_its_pane_and_no_label_overlaps_another(
    browser: Browser,
    hub_bundle: Path,
    tmp_path: Path,
    name: str,
    where: Path | None,
    size: tuple[int, int],
) -> None:
    bundle = hub_bundle if where is None else where
    if not bundle.is_dir():
        okf_bundle(bundle.name)  # a shared bundle that is missing: skip or fail as the rule says
    page = _open(browser, bundle, tmp_path / f"{name}.html", size)
    BUILD.mkdir(exist_ok=True)
    page.screenshot(BUILD / f"viewer-graph-{name}-{size[0]}x{size[1]}.png")
    seen = page.evaluate(MEASURE)
    pane, nodes = seen["pane"], seen["nodes"]

    # fitted on load: every node inside the pane, and the drawing spans most of it
    for node in nodes:
        left, right, top, bottom = node["disc"]
        assert pane[0] <= left and right <= pane[1] and pane[2] <= top and bottom <= pane[3], node
    span_x = max(n["disc"][1] for n in nodes) - min(n["disc"][0] for n in nodes)
    span_y = max(n["disc"][3] for n in nodes) - min(n["disc"][2] for n in nodes)
    assert span_x >= 0.6 * (pane[1] - pane[0]), (span_x, pane)
    assert span_y >= 0.5 * (pane[3] - pane[2]), (span_y, pane)

    # no two displayed labels overlap, and each displayed label stays in the pane
    shown = [n for n in nodes if n["shown"]]
    clashes = [
        (a["id"], b["id"])
        for i, a in enumerate(shown)
        for b in shown[i + 1 :]
        if _intersect(a["label"], b["label"])
    ]
    assert clashes == [], json.dumps(clashes)
    for node in shown:
        box = node["label"]
        assert pane[0] - 1 <= box[0] and box[1] <= pane[1] + 1, node

    # the most-linked concepts are labelled whatever else is
    degree = _degrees(bundle)
    top = sorted(degree, key=lambda cid: (-degree[cid], cid))[:3]
    labelled = {n["id"] for n in shown}
    assert set(top) <= labelled, (top, sorted(labelled))
    assert page.problems() == []  # no console error, no CSP violation


def test_a_hidden_label_shows_on_hover(browser: Browser, hub_bundle: Path, tmp_path: Path) -> None:
    page = _open(browser, hub_bundle, tmp_path / "hubs.html", (1280, 800))
    hidden = [n for n in page.evaluate(MEASURE)["nodes"] if not n["shown"]]
    if not hidden:
        pytest.skip("every label fits at this size")
    node = hidden[0]
    x = (node["disc"][0] + node["disc"][1]) / 2
    y = (node["disc"][2] + node["disc"][3]) / 2
    page.send("Input.dispatchMouseEvent", {"type": "mouseMoved", "x": x, "y": y})
    after = {n["id"]: n for n in page.evaluate(MEASURE)["nodes"]}
    assert after[node["id"]]["shown"]
