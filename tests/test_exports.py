"""``__all__`` says what every public package exports, and lazily exported packages stay lazy.

Real: the package's own modules, imported here and, for the laziness checks, in a fresh
interpreter (subprocess), so modules other tests imported cannot hide an eager import.
"""

from __future__ import annotations

import importlib
import pkgutil
import re
import subprocess
import sys
from pathlib import Path
from types import ModuleType

import pytest

import agentkernel
from agentkernel.errors import MissingExtraError
from tests.test_imports import OPTIONAL_SDKS, loaded_after

ROOT = Path(__file__).resolve().parents[1]

# modules (not packages) whose __all__ is part of the public surface
MODULES = [
    "agentkernel",
    "agentkernel.errors",
    "agentkernel.knowledgebase.errors",
    "agentkernel.knowledgestore.errors",
]


def public_packages() -> list[str]:
    """Every package of agentkernel without a private (``_``) part in its name."""
    found = [
        info.name
        for info in pkgutil.walk_packages(agentkernel.__path__, "agentkernel.", onerror=str)
        if info.ispkg and not any(p.startswith("_") for p in info.name.split("."))
    ]
    return sorted(set(found))


def test_the_walk_finds_the_packages_the_manual_names() -> None:
    expected = {"knowledgebase", "knowledgestore", "retrieval", "roles", "storage", "mcp"}
    expected |= {"openai", "langgraph", "crewai", "adk", "cli"}
    assert {f"agentkernel.{name}" for name in expected} <= set(public_packages())


def load(name: str) -> ModuleType:
    try:
        return importlib.import_module(name)
    except MissingExtraError as exc:  # the adk and crewai extras cannot share one environment
        pytest.skip(str(exc))


def own_public_names(module: ModuleType) -> set[str]:
    """The public names a module binds that are its own: not imports from elsewhere.

    A submodule, ``TYPE_CHECKING`` and anything defined outside this package or module (a
    ``typing`` helper, a function imported from ``agentkernel.errors``) is not an export;
    a constant (which carries no ``__module__``) is.
    """
    prefix = module.__name__
    names = set()
    for name, value in vars(module).items():
        if name.startswith("_") or name == "TYPE_CHECKING" or isinstance(value, ModuleType):
            continue
        where = getattr(value, "__module__", None)
        if where is None or where == prefix or where.startswith(prefix + "."):
            names.add(name)
    return names


@pytest.mark.parametrize("name", public_packages() + MODULES)
def test_all_is_exactly_what_the_package_exports(name: str) -> None:
    module = load(name)
    declared = getattr(module, "__all__", [])
    assert len(declared) == len(set(declared)), f"{name}.__all__ repeats a name"
    lazy = {public for names in getattr(module, "_HOMES", {}).values() for public in names}
    exported = own_public_names(module) | lazy
    assert set(declared) == exported, (
        f"{name}: in __all__ but not exported: {sorted(set(declared) - exported)}; "
        f"exported but not in __all__: {sorted(exported - set(declared))}"
    )
    assert set(declared) <= set(dir(module))


@pytest.mark.parametrize("name", public_packages() + MODULES)
def test_every_name_in_all_resolves(name: str) -> None:
    module = load(name)
    for public in getattr(module, "__all__", []):
        try:
            value = getattr(module, public)
        except MissingExtraError as exc:  # an extra this session lacks; the message says which
            assert "pip install" in str(exc)
            continue
        assert value is not None


LAZY = ["agentkernel.knowledgebase", "agentkernel.knowledgestore", "agentkernel.storage"]
# besides the optional SDKs, what a lazy package must not load either
HEAVY = ["sqlglot", "lancedb", "numpy", "yaml", "pydantic"]


@pytest.mark.parametrize("name", LAZY)
def test_a_lazy_package_costs_one_module_import_and_no_sdk(name: str) -> None:
    before = loaded_after("")
    after = loaded_after(f"import {name}")
    ours = sorted(m for m in after - before if m.startswith("agentkernel"))
    assert ours == ["agentkernel", name]
    loaded = {m.split(".")[0] for m in after - before} | (after - before)
    assert sorted(loaded & {*OPTIONAL_SDKS, *HEAVY}) == []


def test_the_root_exports_the_documented_entry_points_for_one_module() -> None:
    before = loaded_after("")
    after = loaded_after("import agentkernel")
    assert sorted(m for m in after - before if m.startswith("agentkernel")) == ["agentkernel"]
    import agentkernel.knowledgebase as knowledgebase
    import agentkernel.knowledgestore as knowledgestore

    assert agentkernel.OKFManager is knowledgebase.OKFManager
    assert agentkernel.KnowledgeBuilder is knowledgebase.KnowledgeBuilder
    assert agentkernel.FileKnowledgeStore is knowledgestore.FileKnowledgeStore
    assert agentkernel.create_knowledge_tools is knowledgestore.create_knowledge_tools


@pytest.mark.parametrize("name", [*LAZY, "agentkernel"])
def test_a_lazy_package_declares_its_names_for_type_checkers(name: str) -> None:
    """Each lazily exported name is imported under ``TYPE_CHECKING`` from where it lives."""
    module = importlib.import_module(name)
    source = Path(module.__file__ or "").read_text(encoding="utf-8")
    checked = source.split("if TYPE_CHECKING:", 1)[1].split("\n\n", 1)[0]
    for home, names in module._HOMES.items():
        for public in names:
            assert re.search(rf"from {re.escape(home)} import [^)]*\b{public}\b", checked), public


def test_openai_loads_its_module_adapter_only_when_asked() -> None:
    pytest.importorskip("agents")
    code = (
        "import sys, agentkernel.openai as adapter\n"
        "assert 'agentkernel.openai.module' not in sys.modules\n"
        "assert adapter.OpenAIModule.__module__ == 'agentkernel.openai.module'\n"
    )
    subprocess.run([sys.executable, "-c", code], check=True)


def documented_imports() -> list[tuple[str, str]]:
    """``from agentkernel... import a, b`` in the manual, DESIGN.md and docs, one per name."""
    shared = ROOT.parent / "shared"
    texts = [p.read_text(encoding="utf-8") for p in sorted((ROOT / "docs").glob("*.md"))]
    texts += [(ROOT / "README.md").read_text(encoding="utf-8")]
    for extra in ("spec/knowledge-bases.txt", "spec/knowledge-store.txt", "DESIGN.md"):
        if (shared / extra).is_file():
            texts.append((shared / extra).read_text(encoding="utf-8"))
    found = set()
    for text in texts:
        for module, names in re.findall(
            r"from (agentkernel[\w.]*) import \(?([\w, \n]+?)\)?(?:\s*#.*)?$", text, re.M
        ):
            for public in re.split(r"[,\s]+", names.strip()):
                if public:
                    found.add((module, public))
    return sorted(found)


def test_the_documents_import_something() -> None:
    assert ("agentkernel.knowledgebase", "KnowledgeBase") in documented_imports()


@pytest.mark.parametrize(("module_name", "public"), documented_imports())
def test_every_documented_import_works(module_name: str, public: str) -> None:
    module = load(module_name)
    if public == "S3DocumentStore":
        pytest.importorskip("boto3")
    assert hasattr(module, public), f"from {module_name} import {public} fails"
    declared = getattr(module, "__all__", None)
    if declared is not None:
        assert public in declared, f"{module_name}.__all__ misses {public}"
