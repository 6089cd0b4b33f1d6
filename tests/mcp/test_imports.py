"""Importing ``agentkernel.mcp`` without the ``mcp`` SDK names the extra to install.

Real: a fresh interpreter whose import system refuses ``mcp`` (a meta-path finder), so the
check holds whether or not the SDK is installed here.
"""

from __future__ import annotations

import subprocess
import sys

BLOCK_MCP = """
import importlib.abc, sys
class Block(importlib.abc.MetaPathFinder):
    def find_spec(self, name, path=None, target=None):
        if name == "mcp" or name.startswith("mcp."):
            raise ImportError(f"No module named {name!r}")
        return None
sys.meta_path.insert(0, Block())
try:
    import agentkernel.mcp
except ImportError as exc:
    print(type(exc).__name__, "|", exc, "|", type(exc.__cause__).__name__)
"""


def test_missing_sdk_names_the_extra() -> None:
    out = subprocess.run(
        [sys.executable, "-c", BLOCK_MCP], check=True, capture_output=True, text=True
    ).stdout.strip()
    kind, message, cause = (part.strip() for part in out.split("|"))
    assert kind == "MissingExtraError"
    assert message == (
        "agentkernel.mcp requires the 'mcp' extra (mcp is not installed): "
        "pip install 'agentkernel[mcp]'"
    )
    assert cause == "ImportError"


def test_the_package_root_does_not_import_the_sdk() -> None:
    code = "import sys, agentkernel, agentkernel.knowledgebase; print('mcp' in sys.modules)"
    out = subprocess.run([sys.executable, "-c", code], check=True, capture_output=True, text=True)
    assert out.stdout.strip() == "False"
