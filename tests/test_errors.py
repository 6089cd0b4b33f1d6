"""One error tree: every exception class the package defines derives from AKError and is drawn.

Real: the source of every module of the package, read as Python (so a module whose optional
SDK is absent here is still read), and each module defining an exception, imported. The
drawing checked is the one in ``agentkernel.errors``' docstring.
"""

from __future__ import annotations

import ast
import builtins
import importlib
import re
from pathlib import Path

import agentkernel
import agentkernel.errors
from agentkernel.errors import AKError, MissingExtraError
from agentkernel.knowledgebase.errors import KnowledgeError

PACKAGE = Path(agentkernel.__file__).parent


def drawn_tree() -> dict[str, str | None]:
    """Every class drawn in ``agentkernel.errors``' docstring, with the parent drawn above it."""
    doc = agentkernel.errors.__doc__ or ""
    parents: dict[str, str | None] = {}
    for block in re.findall(r"::\n\n((?:    .*\n|\n)+)", doc):
        stack: list[str] = []
        for line in block.splitlines():
            match = re.match(r"    ((?:[│ ]   )*)(?:[├└]── )?([A-Za-z_]\w*)", line)
            if not match or (match.group(1).strip(" │") == "" and "── " not in line and stack):
                continue  # a blank line, or a description continued under a name
            depth = len(match.group(1)) // 4 + (1 if "── " in line else 0)
            name = match.group(2)
            del stack[depth:]
            parent = stack[-1] if stack else None
            assert parents.get(name, parent) == parent, f"{name} drawn under two parents"
            parents[name] = parent
            stack.append(name)
    return parents


def exception_classes() -> dict[str, tuple[str, list[str]]]:
    """Every exception class in the package's source: name -> (module, base names).

    Read from the text, so every module is covered, also one whose optional SDK is absent
    here: a class counts when one of its bases is a built-in exception or a class already
    counted (names are unique across the package, which the test checks).
    """
    classes: dict[str, tuple[str, list[str]]] = {}
    for path in sorted(PACKAGE.rglob("*.py")):
        parts = path.relative_to(PACKAGE.parent).with_suffix("").parts
        module = ".".join(parts[:-1] if parts[-1] == "__init__" else parts)
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            if isinstance(node, ast.ClassDef):
                bases = [ast.unparse(b).rsplit(".", 1)[-1] for b in node.bases]
                assert node.name not in classes or not any(
                    b in _BUILTIN_EXCEPTIONS for b in bases
                ), f"two classes named {node.name}"
                classes.setdefault(node.name, (module, bases))
    exceptions: dict[str, tuple[str, list[str]]] = {}
    grew = True
    while grew:
        grew = False
        for name, (module, bases) in classes.items():
            if name not in exceptions and any(
                b in _BUILTIN_EXCEPTIONS or b in exceptions for b in bases
            ):
                exceptions[name] = (module, bases)
                grew = True
    return exceptions


_BUILTIN_EXCEPTIONS = {
    name
    for name, value in vars(builtins).items()
    if isinstance(value, type) and issubclass(value, BaseException)
}


def test_the_drawing_has_one_root_and_it_is_akerror() -> None:
    tree = drawn_tree()
    assert [name for name, parent in tree.items() if parent is None] == ["AKError"]
    assert tree["KnowledgeError"] == "AKError"
    assert tree["KnowledgeStoreError"] == "KnowledgeError"


def test_every_exception_class_derives_from_akerror_under_the_parent_drawn() -> None:
    tree = drawn_tree()
    found = exception_classes()
    assert {"AKError", "KnowledgeError", "KnowledgeStoreError", "SQLRefusedError"} <= set(found)
    for name, (module_name, bases) in found.items():
        where = f"{name} ({module_name})"
        assert name in tree, f"{where} is not drawn in agentkernel.errors"
        if name == "AKError":
            continue
        assert tree[name] in bases, f"{where} derives from {bases}, drawn under {tree[name]}"
        try:
            module = importlib.import_module(module_name)
        except MissingExtraError:
            continue  # its SDK is not installed here; the source was checked above
        cls = getattr(module, name)
        assert issubclass(cls, AKError), f"{where} does not derive from AKError"
        ours = [b.__name__ for b in cls.__bases__ if b.__module__.startswith("agentkernel")]
        assert ours == [tree[name]], f"{where} derives from {ours}, drawn under {tree[name]}"


def test_the_drawing_names_only_classes_that_exist() -> None:
    drawn, defined = set(drawn_tree()), set(exception_classes())
    assert drawn == defined, f"drawn but not defined, or defined but not drawn: {drawn ^ defined}"


def test_except_knowledge_error_still_catches_what_the_manual_lists() -> None:
    from agentkernel.knowledgebase import (
        KnowledgeCapabilityError,
        KnowledgePathError,
        SQLQueryError,
        SQLRefusedError,
    )
    from agentkernel.knowledgebase.okf.bundleindex.indexer import IndexConflictError
    from agentkernel.knowledgestore import KnowledgeStoreError

    for error in (
        KnowledgeCapabilityError("B", "search"),
        KnowledgePathError("p"),
        SQLQueryError("q"),
        SQLRefusedError("r"),
        IndexConflictError("i"),
        KnowledgeStoreError("s"),
    ):
        try:
            raise error
        except KnowledgeError as caught:
            assert caught is error
    assert issubclass(KnowledgeError, AKError)


def test_configuration_mistakes_stay_apart_from_what_an_agent_reads() -> None:
    from agentkernel.errors import AKConfigError, MissingExtraError
    from agentkernel.retrieval import EmbedderError

    for developer_error in (AKConfigError, MissingExtraError, EmbedderError):
        assert issubclass(developer_error, AKError)
        assert not issubclass(developer_error, KnowledgeError)
    # the built-in bases callers already catch are kept
    assert issubclass(AKConfigError, ValueError)
    assert issubclass(MissingExtraError, ImportError)
    assert issubclass(EmbedderError, RuntimeError)


def test_the_module_drawn_beside_a_class_is_where_it_is_defined() -> None:
    """``(agentkernel.x)`` beside a class names its module or package; ``(here`` is this one."""
    doc = agentkernel.errors.__doc__ or ""
    drawn = re.findall(r"── (\w+)\s+(?:also an? \w+ )?\((here|agentkernel[\w.]*)", doc)
    assert len(drawn) >= 10
    found = exception_classes()
    for name, where in drawn:
        module = found[name][0]
        home = "agentkernel.errors" if where == "here" else where
        assert module == home or module.startswith(f"{home}."), f"{name}: drawn in {where}"
