"""The bench corpus: Debian package descriptions as a 10,000-concept OKF bundle.

Debian's English package descriptions are a real corpus that nobody on this project wrote.
``apt-get update -o Acquire::Languages=en`` brings the ``*_i18n_Translation-en*`` lists (one
short and one long description per package, keyed by ``Description-md5``) and
``apt-cache dumpavail`` gives each package's ``Section`` and the ``Description-md5`` of its
candidate version. One concept per package:

* ``type: package``, ``title`` = the package name, ``description`` = the short description,
  ``tags`` = ``[<section>]``, body = the long description (Debian's `` .`` paragraph breaks
  turned into blank lines);
* stored at ``<section>/<package>.md``, so the concept id is ``<section>/<package>``;
* a package whose long description is empty, or the same as an earlier package's (in name
  order), is skipped;
* 10,000 of the remaining packages are drawn with a seeded RNG.

A bundle larger than the usable packages (about 60,000; the index bench's 100,000) holds every
real package plus a clearly labelled **synthetic block** (:func:`synthetic_concepts`): extra
concept ``k`` copies a real package drawn with the seed, named ``<package>-syn<k>`` (a distinct
id and title), type ``package``, tags ``[<section>, synthetic]``, its description kept and its
body's words shuffled with ``random.Random(seed + k)`` (same words, new order, so no two bodies
repeat a real one's phrases).

The bundle and the query set are written once into a cache directory and reused.
"""

from __future__ import annotations

import glob
import hashlib
import json
import os
import random
import re
import shutil
import subprocess
import sys
from collections.abc import Callable, Iterable, Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from agentkernel.storage import frontmatter

APT_LISTS = Path("/var/lib/apt/lists")
APT_HELPER = "/usr/lib/apt/apt-helper"
CORPUS_VERSION = 1  # bump when the bundle layout changes, to rebuild caches

Log = Callable[[str], None]


@dataclass(frozen=True)
class Concept:
    id: str
    title: str
    description: str
    section: str
    body: str
    synthetic: bool = False

    @property
    def path(self) -> str:
        return f"{self.id}.md"

    @property
    def tags(self) -> list[str]:
        return [self.section, "synthetic"] if self.synthetic else [self.section]

    def render(self) -> str:
        data = {
            "type": "package",
            "title": self.title,
            "description": self.description,
            "tags": self.tags,
        }
        return frontmatter.render(data, self.body)


@dataclass(frozen=True)
class Query:
    text: str
    target: str  # concept id


# --------------------------------------------------------------------------- apt sources


def _translation_files() -> list[str]:
    return sorted(glob.glob(str(APT_LISTS / "*_i18n_Translation-en*")))


def ensure_apt_lists(log: Log) -> list[str]:
    """Return the Translation-en lists, running ``apt-get update`` once if there are none."""
    files = _translation_files()
    if files:
        log(f"apt lists: {len(files)} Translation-en file(s) already in {APT_LISTS}")
        return files
    log(
        "apt lists: no Translation-en file found; running `apt-get update -o Acquire::Languages=en`"
    )
    command = ["apt-get", "update", "-o", "Acquire::Languages=en"]
    if os.geteuid() != 0:
        command.insert(0, "sudo")
    try:
        subprocess.run(command, check=True, stdout=subprocess.DEVNULL)
    except (OSError, subprocess.CalledProcessError) as exc:
        raise SystemExit(
            f"`{' '.join(command)}` failed ({exc}); run it yourself (as root), then rerun the bench"
        ) from exc
    files = _translation_files()
    if not files:
        raise SystemExit(
            "apt-get update brought no *_i18n_Translation-en* list; cannot build corpus"
        )
    return files


def _cat_list(path: str) -> str:
    """Decompress one apt list (lz4, gz, xz or plain) with apt's own helper."""
    result = subprocess.run(
        [APT_HELPER, "cat-file", path], check=True, capture_output=True, text=True
    )
    return result.stdout


def _stanzas(text: str) -> Iterator[list[str]]:
    lines: list[str] = []
    for line in text.split("\n"):
        if line.strip() == "":
            if lines:
                yield lines
                lines = []
        else:
            lines.append(line)
    if lines:
        yield lines


def _fields(stanza: list[str]) -> dict[str, str]:
    """Parse a deb822 stanza; continuation lines are kept with their leading space."""
    fields: dict[str, str] = {}
    key = ""
    for line in stanza:
        if line[:1] in (" ", "\t") and key:
            fields[key] += "\n" + line
        else:
            key, _, value = line.partition(":")
            fields[key] = value.strip()
    return fields


def _long_description(continuation: str) -> str:
    """Turn Debian's indented long description into markdown paragraphs."""
    out: list[str] = []
    for line in continuation.split("\n"):
        if not line.strip():
            continue
        text = line[1:] if line.startswith(" ") else line
        out.append("" if text.strip() == "." else text.rstrip())
    return "\n".join(out).strip() + "\n"


def _read_translations(files: Iterable[str]) -> dict[str, tuple[str, str]]:
    """Map ``Description-md5`` to ``(short, long)``."""
    found: dict[str, tuple[str, str]] = {}
    for path in files:
        for stanza in _stanzas(_cat_list(path)):
            fields = _fields(stanza)
            md5 = fields.get("Description-md5")
            desc = fields.get("Description-en")
            if not md5 or desc is None:
                continue
            short, _, rest = desc.partition("\n")
            found.setdefault(md5, (short.strip(), _long_description(rest)))
    return found


def _read_sections() -> dict[str, tuple[str, str]]:
    """Map each package name to ``(section, description_md5)`` from ``apt-cache dumpavail``."""
    result = subprocess.run(["apt-cache", "dumpavail"], check=True, capture_output=True, text=True)
    found: dict[str, tuple[str, str]] = {}
    for stanza in _stanzas(result.stdout):
        fields = _fields(stanza)
        name = fields.get("Package")
        section = fields.get("Section")
        md5 = fields.get("Description-md5")
        if name and section and md5:
            found.setdefault(name, (section.replace("/", "-"), md5))
    return found


_SAFE_NAME = re.compile(r"^[a-z0-9][a-z0-9.+-]*$")


def collect_concepts(log: Log) -> list[Concept]:
    """Every usable package as a concept, in package-name order, long descriptions unique."""
    files = ensure_apt_lists(log)
    log("reading Translation-en lists with apt-helper cat-file ...")
    translations = _read_translations(files)
    log(f"  {len(translations)} distinct descriptions")
    log("reading sections with apt-cache dumpavail ...")
    sections = _read_sections()
    log(f"  {len(sections)} packages with a section")
    seen: set[str] = set()
    concepts: list[Concept] = []
    skipped = {"no translation": 0, "empty body": 0, "duplicate body": 0, "odd name": 0}
    for name in sorted(sections):
        section, md5 = sections[name]
        if not _SAFE_NAME.match(name):
            skipped["odd name"] += 1
            continue
        if md5 not in translations:
            skipped["no translation"] += 1
            continue
        short, body = translations[md5]
        if not body.strip():
            skipped["empty body"] += 1
            continue
        key = " ".join(body.split())
        if key in seen:
            skipped["duplicate body"] += 1
            continue
        seen.add(key)
        concepts.append(Concept(f"{section}/{name}", name, short, section, body))
    log(f"  {len(concepts)} usable packages (skipped: {skipped})")
    return concepts


# --------------------------------------------------------------------------- bundle + queries


def _index_md(concepts: list[Concept]) -> str:
    counts: dict[str, int] = {}
    for concept in concepts:
        counts[concept.section] = counts.get(concept.section, 0) + 1
    lines = [
        "---",
        "okf_version: '0.2'",
        "---",
        "",
        "# Debian packages",
        "",
        "Package descriptions from Debian's English Translation lists, one concept per package,",
        "grouped by archive section.",
        "",
    ]
    lines += [
        f"* [{section}](/{section}/) ({count} packages)"
        for section, count in sorted(counts.items())
    ]
    return "\n".join(lines) + "\n"


def make_queries(concepts: list[Concept], count: int, seed: int) -> list[Query]:
    """``count`` known-item queries: 8 consecutive body words; the target is that concept."""
    rng = random.Random(seed)
    eligible = [c for c in concepts if len(c.body.split()) >= 8]
    queries: list[Query] = []
    for concept in rng.sample(eligible, count):
        words = concept.body.split()
        start = rng.randrange(0, len(words) - 8 + 1)
        queries.append(Query(" ".join(words[start : start + 8]), concept.id))
    return queries


def synthetic_concepts(real: list[Concept], count: int, seed: int) -> list[Concept]:
    """``count`` synthetic concepts made from real ones (see the module docstring).

    Args:
        real: The usable packages.
        count: How many to make.
        seed: The bench seed.

    Returns:
        The concepts, ``k`` = 1 .. ``count``.
    """
    rng = random.Random(seed)
    made: list[Concept] = []
    for k in range(1, count + 1):
        base = real[rng.randrange(len(real))]
        words = base.body.split()
        random.Random(seed + k).shuffle(words)
        name = f"{base.title}-syn{k}"
        body = " ".join(words) + "\n"
        made.append(
            Concept(f"{base.section}/{name}", name, base.description, base.section, body, True)
        )
    return made


def _fingerprint(concepts: list[Concept]) -> str:
    digest = hashlib.sha256()
    for concept in concepts:
        digest.update(concept.render().encode())
    return digest.hexdigest()[:16]


@dataclass(frozen=True)
class Corpus:
    bundle: Path
    concepts: list[Concept]
    queries: list[Query]
    info: dict[str, Any]


def prepare(
    cache: Path, size: int, n_queries: int, seed: int, log: Log, rebuild: bool = False
) -> Corpus:
    """Build (once) and load the bundle and the query set in ``cache``."""
    tag = f"debian-{size}-s{seed}-v{CORPUS_VERSION}"
    bundle = cache / tag / "bundle"
    meta_path = cache / tag / "corpus.json"
    if rebuild and (cache / tag).exists():
        shutil.rmtree(cache / tag)
    if meta_path.exists():
        meta = json.loads(meta_path.read_text())
        concepts = [Concept(**row) for row in meta.pop("concepts")]
        log(
            f"corpus: reusing {bundle} "
            f"({len(concepts)} concepts, fingerprint {meta['fingerprint']})"
        )
    else:
        log(f"corpus: building a {size}-concept OKF bundle in {bundle} (first run only)")
        everything = collect_concepts(log)
        if len(everything) < size:
            extra = size - len(everything)
            log(f"  {len(everything)} usable packages: adding {extra} synthetic concepts")
            picked = everything + synthetic_concepts(everything, extra, seed)
        else:
            picked = random.Random(seed).sample(everything, size)
        concepts = sorted(picked, key=lambda c: c.id)
        tmp = bundle.with_name("bundle.tmp")
        if tmp.exists():
            shutil.rmtree(tmp)
        tmp.mkdir(parents=True)
        (tmp / "index.md").write_text(_index_md(concepts))
        for concept in concepts:
            target = tmp / concept.path
            target.parent.mkdir(exist_ok=True)
            target.write_text(concept.render())
        if bundle.exists():
            shutil.rmtree(bundle)
        tmp.rename(bundle)
        meta = {
            "source": "Debian " + ", ".join(Path(f).name for f in _translation_files()),
            "available": len(everything),
            "size": size,
            "synthetic": max(0, size - len(everything)),
            "seed": seed,
            "fingerprint": _fingerprint(concepts),
            "bytes": sum(len(c.render().encode()) for c in concepts),
        }
        payload = dict(meta)
        payload["concepts"] = [c.__dict__ for c in concepts]
        meta_path.write_text(json.dumps(payload))
        log(
            f"  wrote {size} concepts + index.md ({meta['bytes'] / 1e6:.1f} MB), "
            f"fingerprint {meta['fingerprint']}"
        )
    queries = make_queries(concepts, n_queries, seed)
    return Corpus(bundle, concepts, queries, meta)


def stderr_log(message: str) -> None:
    print(message, file=sys.stderr, flush=True)
