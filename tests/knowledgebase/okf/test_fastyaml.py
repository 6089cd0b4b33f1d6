"""The frontmatter fast path agrees with the YAML loader whenever it answers.

Pure computation; hypothesis generates frontmatter from a grammar biased towards the corner
cases (quotes, colons, hashes, YAML booleans, flow sequences, unicode), flat and in block
structure: block sequences (indentless and indented), nested and compact mappings, plain
values folded over continuation lines at random indentation, blank lines.
"""

from __future__ import annotations

import yaml
from hypothesis import given, settings
from hypothesis import strategies as st

from agentkernel.storage.yamltext import dump_yaml, load_yaml, simple_mapping
from tests.support import examples

atoms = st.sampled_from(
    [
        "a",
        "Orders",
        "yes",
        "No",
        "null",
        "On",
        "y",
        "x1",
        "é",
        "日本",
        "v2.0",
        "-",
        "#",
        ":",
        " ",
        "'",
        '"',
        "\\",
        ",",
        "[",
        "]",
        "{",
        "}",
        "&",
        "*",
        "!",
        "%",
        "@",
        "`",
        "\t",
        "\x85",
        "2026",
        ".5",
        "?",
        "~",
        "=",
        "<<",
        "https://x.org/a",
        "2026-07-10T21:16:21Z",
        "human:ada",
        "0x1F",
        "1:20",
    ]
)
scalars = st.lists(atoms, min_size=0, max_size=6).map("".join)
values = st.one_of(
    scalars,
    scalars.map(lambda v: f'"{v}"'),
    scalars.map(lambda v: f"'{v}'"),
    st.lists(st.one_of(scalars, scalars.map(lambda v: f'"{v}"')), max_size=4).map(
        lambda items: "[" + ", ".join(items) + "]"
    ),
)
keys = st.sampled_from(["type", "title", "tags", "yes", "on", "x-y", "_k", "a b", "1a", " type"])
lines = st.tuples(keys, st.sampled_from([": ", ":", ":  "]), values).map("".join)


def _agrees(raw: str) -> None:
    fast = simple_mapping(raw)
    if fast is None:
        return
    try:
        expected = load_yaml(raw)
    except yaml.YAMLError:
        raise AssertionError(f"fast path accepted invalid YAML: {raw!r}") from None
    assert fast == expected, raw


@settings(max_examples=examples(1000), deadline=None)
@given(st.lists(lines, min_size=1, max_size=6))
def test_fast_path_equals_the_yaml_loader(frontmatter_lines: list[str]) -> None:
    raw = "\n".join(frontmatter_lines) + "\n"
    _agrees(raw)


indents = st.sampled_from([0, 1, 2, 3, 4])
block_keys = st.sampled_from(["type", "title", "tags", "by", "at", "sources", "x-y", "_k"])
words = st.sampled_from(["a", "Orders", "x1", "é", "v2.0", "https://x.org/a", "human:ada"])
inline_values = st.one_of(
    words,
    st.tuples(words, st.lists(st.tuples(indents, words), max_size=2)),
    values,
    st.tuples(scalars, st.lists(st.tuples(indents, scalars), max_size=2)),
)


def _inline(value: str | tuple[str, list[tuple[int, str]]]) -> list[str]:
    """A value's lines: its text after the indicator, then continuation lines (indent, text)."""
    if isinstance(value, str):
        return [value]
    first, more = value
    return [first] + [" " * indent + text for indent, text in more]


@st.composite
def block_value(draw: st.DrawFn, column: int, depth: int) -> list[str]:
    """Lines following a ``key:`` line at ``column``: a sequence, a mapping or nothing."""
    kind = draw(
        st.sampled_from(["sequence", "mapping", "none"] if depth < 2 else ["sequence", "none"])
    )
    if kind == "none":
        return []
    shift = (
        draw(st.sampled_from([0, 1, 2, 4]))
        if kind == "sequence"
        else draw(st.sampled_from([1, 2, 4]))
    )
    at = column + shift
    out: list[str] = []
    if kind == "sequence":
        for _ in range(draw(st.integers(1, 3))):
            if depth < 2 and draw(st.booleans()):
                inner = draw(block_mapping(at + 2, depth + 1))
                out.append(" " * at + "- " + inner[0].lstrip(" "))
                out.extend(inner[1:])
            else:
                first, *rest = _inline(draw(inline_values))
                out.append(" " * at + "- " + first)
                out.extend(rest)
        return out
    return draw(block_mapping(at, depth + 1))


@st.composite
def block_mapping(draw: st.DrawFn, column: int, depth: int) -> list[str]:
    out: list[str] = []
    for _ in range(draw(st.integers(1, 4))):
        key = draw(st.one_of(keys, block_keys))
        if draw(st.booleans()):
            first, *rest = _inline(draw(inline_values))
            out.append(" " * column + key + draw(st.sampled_from([": ", ":  "])) + first)
            out.extend(rest)
        else:
            out.append(" " * column + key + ":")
            out.extend(draw(block_value(column, depth)))
        if draw(st.integers(0, 9)) == 0:
            out.append(draw(st.sampled_from(["", "  "])))
    return out


@settings(max_examples=examples(2000), deadline=None)
@given(block_mapping(0, 0))
def test_fast_path_equals_the_yaml_loader_on_block_structure(frontmatter_lines: list[str]) -> None:
    _agrees("\n".join(frontmatter_lines) + "\n")


def test_fast_path_takes_what_writes_and_real_bundles_produce() -> None:
    written = {
        "type": "Runbook",
        "title": "Nightly load failure",
        "description": "What to do when the nightly load fails.",
        "tags": ["ops", "warehouse"],
        "generated": {"by": "agentkernel/okf", "at": "2026-07-10T21:16:21Z"},
        "verified": [{"by": "human:ada", "at": "2026-07-11T08:00:00+02:00"}],
        "sources": [{"title": "Runbook wiki", "resource": "https://wiki.example.com/runbook"}],
    }
    assert simple_mapping(dump_yaml(written)) == written
    folded = (
        "type: Reference\ntitle: N-Day Inactive Users Metric\n"
        "description: Builds an audience of users active in the last M days who have not been\n"
        "  active in the last N days.\ntags:\n- metric\n- ga4\n"
        "generated:\n  by: reference_agent/gemini-3.5-flash\n  at: '2026-07-10T21:16:21+00:00'\n"
    )
    assert simple_mapping(folded) == load_yaml(folded)
    assert simple_mapping(folded) is not None


def test_fast_path_takes_typical_frontmatter_and_declines_the_rest() -> None:
    assert simple_mapping('type: Debian Package\ntitle: "zsh"\ntags: [shells, "utils"]\n') == {
        "type": "Debian Package",
        "title": "zsh",
        "tags": ["shells", "utils"],
    }
    assert simple_mapping("stale_after: 2026-01-01T00:00:00Z\n") == {
        "stale_after": "2026-01-01T00:00:00Z"  # kept as written, like the loader does
    }
    for declined in (
        "generated: {by: x}\n",
        "body: |\n  text\n",
        "tags:\n\n  - a\n",
        "title: &anchor x\n",
        "count: 5\n",
        "flag: yes\n",
        "title: a # comment\n",
        'title: "esc\\u00e9"\n',
    ):
        assert simple_mapping(declined) is None
