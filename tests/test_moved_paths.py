"""Old import paths of moved packages still import for one release, with a DeprecationWarning.

Real: the package's own modules, imported in a fresh interpreter so the warning fires once.
"""

from __future__ import annotations

import subprocess
import sys

import pytest

MOVED = [
    ("agentkernel.okf", "OKFCapability", "agentkernel.roles"),
    ("agentkernel.okf.capability", "OKFCapability", "agentkernel.roles.capability"),
    ("agentkernel.knowledgebase.store", "base", "agentkernel.storage"),
    ("agentkernel.knowledgebase.store.local", "LocalDocumentStore", "agentkernel.storage.local"),
    ("agentkernel.knowledgebase.store.base", "DocumentStore", "agentkernel.storage.base"),
]


@pytest.mark.parametrize(("old", "name", "new"), MOVED)
def test_old_path_warns_and_resolves_to_the_new_object(old: str, name: str, new: str) -> None:
    code = (
        "import importlib, warnings\n"
        "with warnings.catch_warnings(record=True) as caught:\n"
        "    warnings.simplefilter('always')\n"
        f"    old = importlib.import_module({old!r})\n"
        f"new = importlib.import_module({new!r})\n"
        f"assert getattr(old, {name!r}) is getattr(new, {name!r})\n"
        "messages = [str(w.message) for w in caught if w.category is DeprecationWarning]\n"
        "assert any('moved to' in m for m in messages), messages\n"
    )
    subprocess.run([sys.executable, "-c", code], check=True)


def test_old_package_names_an_unknown_attribute() -> None:
    code = (
        "import warnings\n"
        "warnings.simplefilter('ignore')\n"
        "import agentkernel.okf as old\n"
        "try:\n"
        "    old.nothing_here\n"
        "except AttributeError as exc:\n"
        "    assert 'nothing_here' in str(exc)\n"
        "else:\n"
        "    raise SystemExit('no AttributeError')\n"
    )
    subprocess.run([sys.executable, "-c", code], check=True)
