"""Without boto3, only touching ``S3DocumentStore`` fails, and it says what to install.

Real: a fresh Python interpreter per check, in which a meta-path finder refuses to import
boto3 and botocore exactly as an environment without the ``aws`` extra would.
"""

from __future__ import annotations

import subprocess
import sys

_BLOCK_BOTO = """
import sys

class _NoBoto:
    def find_spec(self, name, path=None, target=None):
        if name.partition(".")[0] in ("boto3", "botocore"):
            raise ModuleNotFoundError(f"No module named {name!r}", name=name)
        return None

sys.meta_path.insert(0, _NoBoto())
"""


def run(code: str) -> list[str]:
    result = subprocess.run(
        [sys.executable, "-c", _BLOCK_BOTO + code], capture_output=True, text=True, check=True
    )
    return result.stdout.splitlines()


def test_touching_s3_document_store_without_boto3_names_the_extra() -> None:
    lines = run(
        """
import agentkernel.knowledgebase as kb
try:
    kb.S3DocumentStore
except ImportError as exc:
    print(type(exc).__name__)
    print(exc)
    print(type(exc.__cause__).__name__)
"""
    )
    assert lines[0] == "MissingExtraError"
    assert "pip install 'agentkernel[aws]'" in lines[1]
    assert lines[2] == "ModuleNotFoundError"


def test_the_rest_of_the_package_works_without_boto3() -> None:
    lines = run(
        """
import sys, tempfile
from agentkernel.knowledgebase import DocumentStore, LocalDocumentStore
with tempfile.TemporaryDirectory() as root:
    store = DocumentStore.from_uri(root)
    store.write("a.md", b"x")
    print(type(store).__name__, [f.path for f in store.walk()])
try:
    DocumentStore.from_uri("s3://bucket/prefix")
except ImportError as exc:
    print("s3:", exc)
print(sorted(m for m in sys.modules if m.partition(".")[0] in ("boto3", "botocore")))
"""
    )
    assert lines[0] == "LocalDocumentStore ['a.md']"
    assert lines[1].startswith("s3:") and "agentkernel[aws]" in lines[1]
    assert lines[2] == "[]"
