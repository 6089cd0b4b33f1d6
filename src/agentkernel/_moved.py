"""Old import paths kept for one release after a package moved.

Each old package is a module whose attributes resolve from the new one, with a
``DeprecationWarning`` naming the new path the first time the old package is imported.
"""

from __future__ import annotations

import importlib
import sys
import warnings
from types import ModuleType


def alias_package(old: str, new: str, submodules: tuple[str, ...] = ()) -> None:
    """Make ``old`` (and ``old.<sub>`` for each name in ``submodules``) resolve to ``new``.

    Args:
        old: The package name callers used to import.
        new: The package that now holds the code.
        submodules: Submodules of ``new`` importable under ``old`` as well.
    """
    warnings.warn(
        f"{old} moved to {new}; import from {new} (the old path goes in the next release)",
        DeprecationWarning,
        stacklevel=2,
    )
    for name in submodules:
        sys.modules[f"{old}.{name}"] = importlib.import_module(f"{new}.{name}")


def forward(new: ModuleType, name: str) -> object:
    """Resolve ``name`` on the new package, as the old package's ``__getattr__``.

    Args:
        new: The package that now holds the code.
        name: The attribute asked of the old package.
    """
    try:
        return getattr(new, name)
    except AttributeError:
        raise AttributeError(f"module {new.__name__!r} has no attribute {name!r}") from None
