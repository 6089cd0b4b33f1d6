"""Importing ``agentkernel.mcp`` without the ``mcp`` SDK names the extra to install; the
store's server lives there, its old module path warning for one release.

Real: a fresh interpreter (whose import system refuses ``mcp``, a meta-path finder, where
the SDK must be missing), so each check holds whether or not the SDK is installed here.
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


def test_the_store_server_is_in_agentkernel_mcp_and_no_old_path_remains() -> None:
    code = (
        "import importlib, warnings\n"
        "with warnings.catch_warnings(record=True) as caught:\n"
        "    warnings.simplefilter('always')\n"
        "    from agentkernel.knowledgestore import create_knowledge_server as documented\n"
        "    quiet = [str(w.message) for w in caught if w.category is DeprecationWarning]\n"
        "from agentkernel.mcp.store import create_knowledge_server\n"
        "assert documented is create_knowledge_server\n"
        "assert quiet == [], quiet\n"
        "for old in ('agentkernel.knowledgestore.server', 'agentkernel.okf',\n"
        "            'agentkernel.knowledgebase.store', 'agentkernel._moved'):\n"
        "    try:\n"
        "        importlib.import_module(old)\n"
        "    except ModuleNotFoundError:\n"
        "        continue\n"
        "    raise AssertionError(f'{old} still imports')\n"
    )
    subprocess.run([sys.executable, "-c", code], check=True)


def test_the_store_server_without_the_sdk_names_the_extra() -> None:
    code = BLOCK_MCP.replace(
        "import agentkernel.mcp\n",
        "from agentkernel.knowledgestore import create_knowledge_server\n",
    )
    out = subprocess.run(
        [sys.executable, "-c", code], check=True, capture_output=True, text=True
    ).stdout.strip()
    assert out.startswith("MissingExtraError | agentkernel.mcp requires the 'mcp' extra")
