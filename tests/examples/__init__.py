"""Tests of the runnable examples under ``examples/``: each demo as shipped, run offline."""

from __future__ import annotations

import importlib.util
from pathlib import Path
from types import ModuleType
from typing import Any

OPENAI_EXAMPLES = Path(__file__).resolve().parents[2] / "examples/cli/knowledgebase/openai"


def load_demo(name: str) -> ModuleType:
    """Import ``examples/cli/knowledgebase/openai/<name>/demo.py`` as a module.

    The example folders are not packages (and ``chromadb/`` or ``neo4j/`` on ``sys.path``
    would shadow the SDKs), so each demo is loaded from its file, as ``python demo.py`` runs it.
    """
    path = OPENAI_EXAMPLES / name / "demo.py"
    spec = importlib.util.spec_from_file_location(f"example_{name}_demo", path)
    assert spec is not None and spec.loader is not None, path
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def tool_outputs(call: Any) -> list[str]:
    """The tool results a scripted model was sent in one call, oldest first."""
    return [
        str(item["output"])
        for item in call.input
        if isinstance(item, dict) and item.get("type") == "function_call_output"
    ]


def record_lines(output: str) -> list[str]:
    """The record lines of a tool result (``- text (source: ...)``), bullets stripped."""
    return [line[2:] for line in output.splitlines() if line.startswith("- ")]
