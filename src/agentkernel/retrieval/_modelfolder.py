"""A local model folder, judged before anything loads it: what it may hold, and its fingerprint.

A model folder is data, never code. :func:`check_folder` refuses, whatever library loads it
next, a folder that could make that library import or unpickle something: a ``modules.json``
entry outside sentence-transformers' own modules (or a module path leaving the folder), an
``auto_map`` in a configuration (Hugging Face's remote code), and weights that are not
safetensors (``pytorch_model.bin`` and other pickles).

Every JSON file of a folder is read through :func:`read_json` / :func:`parse_json`: bounded in
size and in nesting (:data:`MAX_JSON_DEPTH`), so a crafted file is an :class:`EmbedderError`,
never a ``RecursionError`` from the parser or from whatever walks or prints the value later.
"""

from __future__ import annotations

import hashlib
import json
from pathlib import Path
from typing import Any

from agentkernel.retrieval._embedding import EmbedderError

CONFIGS = ("modules.json", "config.json", "sentence_bert_config.json", "1_Pooling/config.json")
WEIGHTS = ("model.safetensors", "pytorch_model.bin")
"""The weight files whose sizes enter :func:`fingerprint` (the ids of caches built so far)."""

SAFE_MODULES = frozenset(
    {
        "Transformer",
        "Pooling",
        "Normalize",
        "Dense",
    }
)
"""sentence-transformers' own modules a folder may name (by class name; the package is fixed)."""

_MODULE_PACKAGES = (
    "sentence_transformers.models.",
    "sentence_transformers.sentence_transformer.modules.",
    "sentence_transformers.base.modules.",
)
_PICKLES = (".bin", ".pt", ".pth", ".pkl", ".pickle", ".ckpt", ".joblib")
_MAX_CONFIG_BYTES = 1_000_000

MAX_JSON_DEPTH = 32
"""The deepest nesting of arrays and objects read from a model folder (real files nest 5)."""


def parse_json(raw: str | bytes, source: object) -> Any:
    """Parse JSON from a model folder, its nesting bounded.

    Args:
        raw: The text or UTF-8 bytes.
        source: What the text is, for messages (a path, ``"... header"``).

    Returns:
        The value.

    Raises:
        EmbedderError: Not JSON, or nested deeper than :data:`MAX_JSON_DEPTH`.
    """
    try:
        value = json.loads(raw)
    except RecursionError:
        value = None
        deep = True
    except ValueError as exc:
        raise EmbedderError(f"{source} is not readable JSON: {exc}") from exc
    else:
        deep = _deeper_than(value, MAX_JSON_DEPTH)
    if deep:
        raise EmbedderError(
            f"{source} nests JSON deeper than {MAX_JSON_DEPTH} levels: not a model file"
        )
    return value


def _deeper_than(value: Any, limit: int) -> bool:
    """Tell whether arrays and objects nest past ``limit`` (walked without recursion)."""
    stack = [(value, 1)] if isinstance(value, dict | list) else []
    while stack:
        item, depth = stack.pop()
        if depth > limit:
            return True
        children = item.values() if isinstance(item, dict) else item
        stack.extend((child, depth + 1) for child in children if isinstance(child, dict | list))
    return False


def read_json(path: Path, max_bytes: int) -> Any:
    """Read a model folder's JSON file, bounded in size and nesting.

    Args:
        path: The file.
        max_bytes: The largest file read.

    Returns:
        The value.

    Raises:
        FileNotFoundError: The file does not exist.
        EmbedderError: Too big, unreadable, not JSON, or nested too deeply.
    """
    try:
        if path.stat().st_size > max_bytes:
            raise EmbedderError(f"{path} is over {max_bytes} bytes: not a model file")
        raw = path.read_bytes()
    except FileNotFoundError:
        raise
    except OSError as exc:
        raise EmbedderError(f"{path} cannot be read: {exc}") from exc
    return parse_json(raw, path)


def read_config(folder: Path, name: str) -> dict[str, Any] | None:
    """A JSON configuration of the folder, or ``None`` when absent.

    Args:
        folder: The model folder.
        name: The file, relative to the folder.

    Returns:
        The parsed object, or ``None`` when the file does not exist.

    Raises:
        EmbedderError: The file is too big, not JSON, nested too deeply, or not an object.
    """
    target = folder / name
    try:
        data = read_json(target, _MAX_CONFIG_BYTES)
    except FileNotFoundError:
        return None
    if not isinstance(data, dict | list):
        raise EmbedderError(f"{target} does not hold a JSON object")
    return data if isinstance(data, dict) else {"modules": data}


def check_folder(folder: Path) -> list[tuple[str, Path]]:
    """Refuse a model folder that could run code when loaded; list its modules.

    Args:
        folder: The model folder.

    Returns:
        ``(module class name, its folder)`` in ``modules.json``'s order; empty when the
        folder has no ``modules.json`` (a plain Transformers model).

    Raises:
        EmbedderError: Naming the first reason the folder is refused.
    """
    modules: list[tuple[str, Path]] = []
    listed = read_config(folder, "modules.json")
    entries = listed.get("modules", []) if listed is not None else []
    if not isinstance(entries, list):
        raise EmbedderError(f"{folder / 'modules.json'} is not a list of modules")
    root = folder.resolve()
    for entry in entries:
        kind = entry.get("type") if isinstance(entry, dict) else None
        name = _module_name(kind)
        if name is None:
            raise EmbedderError(
                f"{folder / 'modules.json'} names the module {kind!r}: only "
                f"sentence-transformers' own modules ({', '.join(sorted(SAFE_MODULES))}) are "
                "loaded, never code from a model folder."
            )
        where = (folder / str(entry.get("path") or "")).resolve()
        if where != root and root not in where.parents:
            raise EmbedderError(f"{folder / 'modules.json'} points outside the model folder")
        modules.append((name, where))
    for directory in {root, *(where for _, where in modules)}:
        if directory.is_dir():  # a module without files (Normalize) has no folder
            _check_directory(directory)
    return modules


def _module_name(kind: object) -> str | None:
    if not isinstance(kind, str):
        return None
    for package in _MODULE_PACKAGES:
        if kind.startswith(package):
            name = kind.removeprefix(package)
            return name if name in SAFE_MODULES else None
    return None


def _check_directory(directory: Path) -> None:
    for name in ("config.json", "tokenizer_config.json", "config_sentence_transformers.json"):
        config = read_config(directory, name)
        if config is not None and ("auto_map" in config or config.get("trust_remote_code")):
            raise EmbedderError(
                f"{directory / name} asks for code from the model folder (auto_map / "
                "trust_remote_code): refused, model folders never run code."
            )
    try:
        names = [path.name for path in directory.iterdir() if path.is_file()]
    except OSError as exc:
        raise EmbedderError(f"{directory} cannot be listed: {exc}") from exc
    if any(name.endswith(".py") for name in names):
        raise EmbedderError(f"{directory} holds Python files: model folders never run code.")
    pickles = [name for name in names if name.endswith(_PICKLES)]
    if pickles:
        raise EmbedderError(
            f"{directory} holds pickled weights ({', '.join(sorted(pickles))}): only "
            "safetensors are loaded. Convert the model to model.safetensors and remove them."
        )


def fingerprint(folder: Path) -> str:
    """A short digest of the model's configuration and weight sizes (cheap, no weight read).

    Args:
        folder: The model folder.

    Returns:
        Twelve hex digits; the same for a folder whose configs and weight sizes are the same.
    """
    digest = hashlib.sha256()
    for name in (*CONFIGS, *WEIGHTS):
        target = folder / name
        if target.is_file():
            digest.update(name.encode())
            if name in WEIGHTS:
                digest.update(str(target.stat().st_size).encode())
            else:
                digest.update(target.read_bytes())
    return digest.hexdigest()[:12]


def model_name(folder: Path) -> str:
    """The readable part of a model id: the folder's name, or its parent's for ``.../model``.

    Args:
        folder: The model folder.

    Returns:
        The name.
    """
    return folder.parent.name if folder.name == "model" else folder.name
