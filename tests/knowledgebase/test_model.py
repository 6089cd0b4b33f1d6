"""KnowledgeCapabilities: the manual's fields and defaults, and the two invariants.

Pure contract code: nothing to start, nothing stood in for. The manual's table is read from the
real manual, ``spec/knowledge-bases.txt`` beside the shared data (a missing manual fails in CI).
"""

from __future__ import annotations

import dataclasses
import typing
from typing import Literal

import pytest

from agentkernel.knowledgebase import KnowledgeBase, KnowledgeCapabilities
from tests.support import SHARED_DATA, missing

_MANUAL = SHARED_DATA.parent / "spec" / "knowledge-bases.txt"


def _manual_table(heading: str) -> dict[str, tuple[str, str]]:
    """The rows ``Field<TAB>Type<TAB>Default<TAB>Meaning`` under ``heading`` in the manual."""
    if not _MANUAL.is_file():
        missing("the product manual spec/knowledge-bases.txt", "check out shared/ beside the repo")
    lines = _MANUAL.read_text(encoding="utf-8").splitlines()
    start = lines.index(heading)
    header = next(i for i in range(start, len(lines)) if lines[i].startswith("Field\tType\t"))
    rows: dict[str, tuple[str, str]] = {}
    for line in lines[header + 1 :]:
        if not line.strip():
            break
        name, type_text, default, _meaning = line.split("\t")
        rows[name] = (type_text, default)
    return rows


def _manual_type(text: str) -> object:
    """The Python type a manual's type column spells (``"a" | "b" | None`` is a Literal)."""
    parts = [p.strip() for p in text.split("|")]
    quoted = tuple(p.strip('"') for p in parts if p.startswith('"'))
    rest = [eval(p, {}) for p in parts if not p.startswith('"')]  # the manual's own text
    members: list[object] = [Literal[quoted]] if quoted else []
    members += rest
    union = members[0]
    for member in members[1:]:
        union = union | member  # type: ignore[operator]
    return union


def test_every_field_is_the_manuals_type_default_and_equality() -> None:
    table = _manual_table("KnowledgeCapabilities")
    hints = typing.get_type_hints(KnowledgeCapabilities)
    assert list(table) == [f.name for f in dataclasses.fields(KnowledgeCapabilities)]
    built = KnowledgeCapabilities()
    for name, (type_text, default_text) in table.items():
        assert hints[name] == _manual_type(type_text), name
        default = eval(default_text, {})  # the manual's own text
        assert getattr(built, name) == default, name
        assert type(getattr(built, name)) is type(default), name
    assert KnowledgeCapabilities(search=True).kinds == []
    assert KnowledgeCapabilities(kinds=["vector"], search=True).kinds == ["vector"]


def test_fields_and_defaults_are_the_manuals() -> None:
    defaults = {f.name: f for f in dataclasses.fields(KnowledgeCapabilities)}
    assert list(defaults) == [
        "kinds",
        "search",
        "search_mode",
        "query",
        "query_language",
        "fetch",
        "browse",
        "writable",
        "derives_schema",
    ]
    caps = KnowledgeCapabilities()
    assert caps.as_dict() == {
        "kinds": [],
        "search": False,
        "search_mode": None,
        "query": False,
        "query_language": None,
        "fetch": False,
        "browse": False,
        "writable": False,
        "derives_schema": False,
    }


@pytest.mark.parametrize("given", [["graph", "structured"], ("graph", "structured")])
def test_kinds_is_a_list_whatever_iterable_it_was_given(given: object) -> None:
    caps = KnowledgeCapabilities(kinds=given, query=True, query_language="cypher")  # type: ignore[arg-type]
    assert caps.kinds == ["graph", "structured"]
    assert caps.as_dict()["kinds"] == ["graph", "structured"]
    assert caps == KnowledgeCapabilities(kinds=iter(["graph", "structured"]), **_CYPHER)
    assert hash(caps) == hash(KnowledgeCapabilities(kinds=["graph", "structured"], **_CYPHER))


def test_the_list_a_declaration_was_built_from_cannot_change_it() -> None:
    kinds = ["vector"]
    caps = KnowledgeCapabilities(kinds=kinds, search=True)
    kinds.append("graph")
    assert caps.kinds == ["vector"]
    assert KnowledgeCapabilities().kinds == []
    assert KnowledgeCapabilities(search=True).kinds == []


_CYPHER: dict[str, object] = {"query": True, "query_language": "cypher"}


def test_declaration_is_immutable() -> None:
    caps = KnowledgeCapabilities(search=True)
    with pytest.raises(dataclasses.FrozenInstanceError):
        caps.search = False  # type: ignore[misc]


@pytest.mark.parametrize(
    ("kwargs", "error"),
    [
        ({"search": "yes"}, TypeError),
        ({"writable": 1}, TypeError),
        ({"kinds": "vector"}, TypeError),
        ({"kinds": ["vector", 3]}, TypeError),
        ({"kinds": b"vector"}, TypeError),
        ({"kinds": 3}, TypeError),
        ({"search_mode": "fuzzy"}, ValueError),
        ({"query": True, "query_language": 5}, TypeError),
    ],
)
def test_wrong_types_get_a_clear_error(kwargs: dict[str, object], error: type[Exception]) -> None:
    with pytest.raises(error):
        KnowledgeCapabilities(**kwargs)  # type: ignore[arg-type]


def test_search_mode_is_advisory_and_does_not_imply_search() -> None:
    caps = KnowledgeCapabilities(search_mode="semantic", browse=True)
    assert caps.search is False
    assert caps.operations() == ["browse"]


def test_validate_capabilities_is_static_and_names_the_subject() -> None:
    with pytest.raises(ValueError, match="'Orders' declares no operation"):
        KnowledgeBase.validate_capabilities(KnowledgeCapabilities(kinds=["vector"]), "Orders")
    with pytest.raises(ValueError, match="'Graph' declares query=True without a query_language"):
        KnowledgeBase.validate_capabilities(KnowledgeCapabilities(query=True), "Graph")
    with pytest.raises(ValueError, match="'SQL' declares query_language='sql' but not query"):
        KnowledgeBase.validate_capabilities(
            KnowledgeCapabilities(query_language="sql", fetch=True), "SQL"
        )
    with pytest.raises(TypeError, match="must be a KnowledgeCapabilities"):
        KnowledgeBase.validate_capabilities({"search": True}, "X")  # type: ignore[arg-type]
    KnowledgeBase.validate_capabilities(
        KnowledgeCapabilities(query=True, query_language="cypher"), "ok"
    )


def _declared_in_source(module: str) -> KnowledgeCapabilities:
    """The module's ``CAPABILITIES = KnowledgeCapabilities(...)``, read without importing it.

    The SDK-backed modules import their SDK at import; the declaration is a constant call.
    """
    import ast
    import importlib.util
    from pathlib import Path

    spec = importlib.util.find_spec(module)
    assert spec is not None and spec.origin is not None
    tree = ast.parse(Path(spec.origin).read_text(encoding="utf-8"))
    [call] = [
        node.value
        for node in tree.body
        if isinstance(node, ast.Assign)
        and [ast.unparse(t) for t in node.targets] == ["CAPABILITIES"]
    ]
    return eval(ast.unparse(call), {"KnowledgeCapabilities": KnowledgeCapabilities})  # type: ignore[no-any-return]


def _manual_declares(text: str, kinds: str) -> KnowledgeCapabilities:
    """A manual row's ``kinds`` and ``Declares`` columns as a declaration (``writable*``: on)."""
    fields: dict[str, object] = {"kinds": [k.strip() for k in kinds.split(",")]}
    for part in text.replace(";", ",").split(","):
        word, _, detail = part.strip().rstrip("*").partition(" (")
        if word == "not writable":
            continue
        fields[word] = True
        if word == "search":
            fields["search_mode"] = detail.rstrip(")")
        elif word == "query":
            fields["query_language"] = detail.rstrip(")")
    return KnowledgeCapabilities(**fields)  # type: ignore[arg-type]


def test_each_built_in_backend_declares_what_the_manuals_table_says() -> None:
    if not _MANUAL.is_file():
        missing("the product manual spec/knowledge-bases.txt", "check out shared/ beside the repo")
    lines = _MANUAL.read_text(encoding="utf-8").splitlines()
    header = lines.index("Backend\tkinds\tDeclares")
    rows = {}
    for line in lines[header + 1 :]:
        if not line.strip():
            break
        backend, kinds, declares = line.split("\t")
        rows[backend] = _manual_declares(declares, kinds)

    from agentkernel.knowledgebase.okf.declared import okf_capabilities
    from agentkernel.knowledgebase.starburst import StarburstManager

    starburst = StarburstManager(host="127.0.0.1", port=1, user="u", catalog="c", schema="s")
    assert rows == {
        "ChromaManager": _declared_in_source("agentkernel.knowledgebase.chroma"),
        "Neo4jManager": _declared_in_source("agentkernel.knowledgebase.neo4j"),
        "StarburstManager": starburst.capabilities,  # constructed: no connection until a query
        "OKFManager": okf_capabilities(writable=True),
    }
