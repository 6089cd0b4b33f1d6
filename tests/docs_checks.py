"""The checks that exercise the docs' blocks a script runner cannot run as they stand.

A block marked ``check=NAME`` (``tests/test_docs.py``) is exercised by ``CHECKS[NAME]``,
which gets every block of that name, in page order. What each check does is real: servers
are started, probed by the mcp SDK's clients and stopped; sample outputs are compared with
the output of the command they show (only the paths a page names outside the working folder
and a bound port are mapped); install lines are checked against ``pyproject.toml`` and the
distributions this environment installed from the registry; ``nox`` and ``make`` lines are
checked against ``noxfile.py`` and the ``Makefile`` (``make -n``), and the demo's command
itself runs.
"""

from __future__ import annotations

import ast
import importlib.metadata
import importlib.util
import inspect
import os
import re
import shlex
import subprocess
import sys
import tomllib
from collections.abc import Callable
from pathlib import Path
from typing import Any, Protocol

import pytest

from tests.docs_support import (
    BIN,
    ROOT,
    Workdir,
    probe,
    shell_lines,
)


class Block(Protocol):
    page: Path
    line: int
    lang: str
    body: str

    @property
    def where(self) -> str: ...


Check = Callable[[list[Any], Workdir, pytest.FixtureRequest], None]
PYPROJECT = tomllib.loads((ROOT / "pyproject.toml").read_text(encoding="utf-8"))
NOXFILE = (ROOT / "noxfile.py").read_text(encoding="utf-8")


# -- make, nox, pip ------------------------------------------------------------------------


def check_make(blocks: list[Any], work: Workdir, request: pytest.FixtureRequest) -> None:
    """``make TARGET`` lines: the recipe as ``make -n`` expands it; the demo's command runs.

    The install step needs the network, so the demo runs against this environment (its
    ``nox`` taken as built); a fresh ``.venv`` shows the install recipe, which must say what it
    does before each slow step.
    """
    env_root = BIN.parent
    for block in blocks:
        for line in shell_lines(block.body):
            words = shlex.split(line, comments=True)
            assert words[0] == "make" and len(words) == 2, f"{block.where}: {line}"
            fresh = _make(["-n", f"VENV={work.path / '.venv'}", words[1]])
            echoes = [w for w in fresh.splitlines() if w.startswith("echo ")]
            assert any("installing" in e for e in echoes), f"make {words[1]} is silent:\n{fresh}"
            built = _make(["-n", "-o", f"{env_root}/bin/nox", f"VENV={env_root}", words[1]])
            commands = [c for c in built.splitlines() if c and not c.startswith("echo ")]
            if words[1] == "demo":
                assert len(commands) == 1 and "agentkernel-kb ask" in commands[0], built
                done = subprocess.run(
                    ["sh", "-c", commands[0]],
                    cwd=ROOT,
                    env=work.env,
                    capture_output=True,
                    text=True,
                    timeout=300,
                    check=False,
                )
                assert done.returncode == 0 and done.stdout.strip(), done.stderr[-2000:]
            else:
                assert commands == [f"{env_root}/bin/nox"], built  # the full suite
                assert "nox.options.sessions" in NOXFILE


def _make(args: list[str]) -> str:
    # under `make test` this make is a sub-make: MAKELEVEL and MAKEFLAGS would add
    # "Entering directory" lines and the outer make's flags to what the check reads
    env = {k: v for k, v in os.environ.items() if k not in {"MAKELEVEL", "MAKEFLAGS", "MFLAGS"}}
    done = subprocess.run(
        ["make", "--no-print-directory", *args],
        cwd=ROOT,
        env=env,
        capture_output=True,
        text=True,
        timeout=60,
        check=False,
    )
    assert done.returncode == 0, done.stderr
    return done.stdout


def _sessions() -> set[str]:
    return set(re.findall(r"@nox\.session\([^)]*\)\s*\ndef (\w+)", NOXFILE))


def _markers() -> set[str]:
    markers = PYPROJECT["tool"]["pytest"]["ini_options"]["markers"]
    return {m.split(":")[0].strip() for m in markers}


def check_nox(blocks: list[Any], work: Workdir, request: pytest.FixtureRequest) -> None:
    """``nox`` lines: each session exists; test paths and ``-m`` markers after ``--`` exist."""
    sessions = _sessions()
    for block in blocks:
        for line in shell_lines(block.body):
            words = shlex.split(line, comments=True)
            assert words[0] == "nox", f"{block.where}: {line}"
            own, _, passed = " ".join(words[1:]).partition("--")
            own_words = own.split()
            for index, word in enumerate(own_words):
                if word == "-s":
                    assert own_words[index + 1] in sessions, f"{block.where}: {line}"
            rest = passed.split()
            for index, word in enumerate(rest):
                if word == "-m":
                    assert rest[index + 1] in _markers(), f"{block.where}: {line}"
                elif not word.startswith("-") and rest[index - 1 : index] != ["-m"]:
                    assert (ROOT / word).exists(), f"{block.where}: no {word}"


def _check_pip(line: str, where: str) -> None:
    from packaging.requirements import Requirement

    words = shlex.split(line, comments=True)
    assert words[:2] == ["pip", "install"], f"{where}: {line}"
    requirements = [w for w in words[2:] if not w.startswith("-")]
    assert requirements, f"{where}: {line}"
    extras = set(PYPROJECT["project"]["optional-dependencies"])
    for text in requirements:
        if text.startswith("."):  # the checkout itself: pip install -e '.[bench,aws]'
            named = set(text.partition("[")[2].rstrip("]").split(","))
            assert named <= extras, f"{where}: unknown extras {named - extras}"
            continue
        requirement = Requirement(text)
        if requirement.name == PYPROJECT["project"]["name"]:
            assert requirement.extras <= extras, f"{where}: unknown extras"
        else:
            # a package the project installs itself (pinned in pyproject or the noxfile), and
            # this environment got it from the registry under that name
            assert requirement.name in NOXFILE or requirement.name in str(PYPROJECT), where
            importlib.metadata.version(requirement.name)


def check_install(blocks: list[Any], work: Workdir, request: pytest.FixtureRequest) -> None:
    """``pip install`` lines are checked (see :func:`_check_pip`); the other lines run here."""
    for block in blocks:
        for line in shell_lines(block.body):
            for part in (p.strip() for p in line.split("&&")):
                if part.startswith("pip "):
                    _check_pip(part, block.where)
                elif part.startswith("python bench/"):
                    _check_bench(part, block.where)
                else:
                    work.run(part)


def _check_bench(line: str, where: str) -> None:
    words = shlex.split(line, comments=True)
    done = subprocess.run(
        [sys.executable, words[1], "--help"],
        cwd=ROOT,
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
    )
    assert done.returncode == 0, f"{where}: {words[1]} --help: {done.stderr[-2000:]}"
    for option in (w for w in words[2:] if w.startswith("--")):
        assert option in done.stdout, f"{where}: {words[1]} has no {option}"


# -- shapes: a diagram, a signature, pytest modules ----------------------------------------


def check_diagram(blocks: list[Any], work: Workdir, request: pytest.FixtureRequest) -> None:
    """Every module the diagram names exists: ``agentkernel.x``, ``.y`` after it, ``x.{a,b}``."""
    for block in blocks:
        # a brace list may wrap, the next column's words between its lines: first word of each
        text = re.sub(
            r"\{([^}]*)\}",
            lambda m: "".join(line.split()[0] for line in m.group(1).splitlines() if line.strip()),
            block.body,
        )
        text = re.sub(
            r"(agentkernel(?:\.\w+)*)\.([\w,]+,[\w,]+)",
            lambda m: ", ".join(f"{m.group(1)}.{part}" for part in m.group(2).split(",")),
            text,
        )
        base = ""
        found = re.findall(r"(?<![\w/])(agentkernel(?:\.\w+)*|\.\w+)", text)
        assert len(found) > 20, f"{block.where}: the diagram names {found}"
        for name in found:
            full = base + name if name.startswith(".") else name
            if not name.startswith("."):
                base = name.rsplit(".", 1)[0]
            assert importlib.util.find_spec(full) is not None, f"{block.where}: {full}"


def check_signature(blocks: list[Any], work: Workdir, request: pytest.FixtureRequest) -> None:
    """The documented call lists the constructor's parameters, in order, with their defaults."""
    import time

    from agentkernel.knowledgebase import OKFManager

    for block in blocks:
        call = ast.parse(block.body, mode="eval").body
        assert isinstance(call, ast.Call) and isinstance(call.func, ast.Name)
        real = inspect.signature({"OKFManager": OKFManager}[call.func.id]).parameters
        shown = [a.id for a in call.args if isinstance(a, ast.Name)]
        shown += [k.arg for k in call.keywords if k.arg]
        assert shown == list(real), f"{block.where}: the doc shows {shown}, the code {list(real)}"
        for keyword in call.keywords:
            value = eval(compile(ast.Expression(keyword.value), "doc", "eval"), {"time": time})
            assert value == real[keyword.arg or ""].default, f"{block.where}: {keyword.arg}"


def _pytest_module(work: Workdir, source: str) -> None:
    module = work.path / "test_shape.py"
    module.write_text(source, encoding="utf-8")
    done = subprocess.run(
        [sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider", str(module)],
        cwd=work.path,
        env=work.env,
        capture_output=True,
        text=True,
        timeout=600,
        check=False,
    )
    assert done.returncode == 0 and " passed" in done.stdout, done.stdout[-4000:]


def check_contract_test(blocks: list[Any], work: Workdir, request: pytest.FixtureRequest) -> None:
    """The test shape runs under pytest with ``my_backend`` an OKF bundle's backend."""
    for block in blocks:
        fixture = (
            "import pytest\n"
            "from agentkernel.knowledgebase import LocalDocumentStore, OKFManager\n"
            "from agentkernel.knowledgebase.testing import assert_backend_contract\n\n\n"
            "@pytest.fixture\ndef my_backend():\n"
            f"    folder = {str(work.path / 'kb')!r}\n"
            "    return OKFManager(LocalDocumentStore(folder, writable=False))\n"
        )
        _pytest_module(work, fixture + "\n\n" + block.body)


def check_conformance(blocks: list[Any], work: Workdir, request: pytest.FixtureRequest) -> None:
    """The conformance module runs under pytest: ``MyStore`` is the folder store, ``MyBackend``
    the backend the page shows whole (its class, up to the lines that use it)."""
    for block in blocks:
        header = "from agentkernel.knowledgestore import FileKnowledgeStore as MyStore\n"
        if "MyBackend" in block.body:
            page = block.page.read_text(encoding="utf-8")
            shown = re.search(r"```python\n(.*?class (\w+)\(PageBackend\).*?)\n\n\n\w", page, re.S)
            assert shown is not None, f"{block.where}: no backend class on the page"
            header = f"{shown.group(1)}\n\n\nMyBackend = {shown.group(2)}\n"
        _pytest_module(work, header + block.body)


# -- servers ---------------------------------------------------------------------------------


def check_serve(blocks: list[Any], work: Workdir, request: pytest.FixtureRequest) -> None:
    """Each serving line starts, answers ``tools/list`` over its transport, and stops."""
    for block in blocks:
        for line in shell_lines(block.body):
            names, startup = probe(work, line)
            assert names, f"{block.where}: {line} offers no tool"
            writes = "--writable" in line
            assert ("read-only" in startup) != writes, f"{line}: {startup}"
