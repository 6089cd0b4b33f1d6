"""The frontmatter fast path agrees with the YAML loader whenever it answers.

Pure computation; hypothesis generates flat frontmatter from a grammar biased towards the
corner cases (quotes, colons, hashes, YAML booleans, flow sequences, unicode).
"""

from __future__ import annotations

import yaml
from hypothesis import given, settings
from hypothesis import strategies as st

from agentkernel.knowledgebase.okf.fastyaml import simple_mapping
from agentkernel.knowledgebase.okf.frontmatter import load_yaml

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


@settings(max_examples=1000, deadline=None)
@given(st.lists(lines, min_size=1, max_size=6))
def test_fast_path_equals_the_yaml_loader(frontmatter_lines: list[str]) -> None:
    raw = "\n".join(frontmatter_lines) + "\n"
    fast = simple_mapping(raw)
    if fast is None:
        return
    try:
        expected = load_yaml(raw)
    except yaml.YAMLError:
        raise AssertionError(f"fast path accepted invalid YAML: {raw!r}") from None
    assert fast == expected, raw


def test_fast_path_takes_typical_frontmatter_and_declines_the_rest() -> None:
    assert simple_mapping('type: Debian Package\ntitle: "zsh"\ntags: [shells, "utils"]\n') == {
        "type": "Debian Package",
        "title": "zsh",
        "tags": ["shells", "utils"],
    }
    for declined in (
        "generated:\n  by: x\n",
        "stale_after: 2026-01-01T00:00:00Z\n",
        "count: 5\n",
        "flag: yes\n",
        "title: a # comment\n",
        'title: "esc\\u00e9"\n',
    ):
        assert simple_mapping(declined) is None
