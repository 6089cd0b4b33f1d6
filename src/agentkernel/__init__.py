"""agentkernel: durable, cross-session knowledge for AI agents.

The package root does no I/O and pulls in no optional SDK. It holds one helper, the lazy
(PEP 562) export table its packages use: here, because the root is imported anyway, so a
package that exports its names lazily costs one module import, as the manual promises.
Start at :mod:`agentkernel.knowledgebase`.
"""

from __future__ import annotations

import importlib
import sys
from collections.abc import Callable, Mapping
from typing import Any

__version__ = "0.1.0"


def _lazy_exports(
    package: str, homes: Mapping[str, tuple[str, ...]]
) -> tuple[Callable[[str], Any], Callable[[], list[str]]]:
    """Build a package's ``__getattr__`` and ``__dir__`` that import its names on first touch.

    PEP 562: a name is looked up in the module that defines it the first time it is read
    from the package, then kept in the package's namespace, so later reads are plain
    attribute reads.

    Args:
        package: The package's ``__name__``.
        homes: Each module that defines public names -> those names.

    Returns:
        ``(__getattr__, __dir__)``, to assign at the package's top level.
    """
    namespace = sys.modules[package].__dict__
    exports = {name: module for module, names in homes.items() for name in names}

    def __getattr__(name: str) -> Any:
        module_name = exports.get(name)
        if module_name is None:
            raise AttributeError(f"module {package!r} has no attribute {name!r}")
        value = getattr(importlib.import_module(module_name), name)
        namespace[name] = value
        return value

    def __dir__() -> list[str]:
        return sorted(set(namespace) | set(exports))

    return __getattr__, __dir__
