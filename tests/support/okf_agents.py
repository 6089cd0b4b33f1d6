"""The producer/consumer run every framework's OKF attachment is proven with, offline.

A producer agent writes a concept through ``write_kb`` into a temporary copy of the example
bundle (``examples/cli/knowledgebase/openai/okf/bundle``); a consumer agent then searches for
it, fetches it, and tries to write, which is refused with the exact read-only message. The
framework test modules drive these scripts through each framework's own scripted model.

The ``roastery`` database is served by ``tests.roles.counting_store.CountingStore`` (a real
``DocumentStore`` over the copied directory, loaded from configuration by its dotted path)
so the tests can count when a bundle is first opened and walked.
"""

from __future__ import annotations

import re
import shutil
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from tests.roles import counting_store

EXAMPLE_BUNDLE = (
    Path(__file__).resolve().parents[2] / "examples/cli/knowledgebase/openai/okf/bundle"
)
DB = "roastery"
SCRATCH = "scratch"
PRODUCER = "Ingest_Agent"
CONSUMER = "Support_Agent"
BYSTANDER = "Weather_Agent"
CONCEPT = (
    "Green lot moisture gate\n"
    "Every green coffee lot is probed on arrival; lots above 12.5 percent moisture are "
    "quarantined before roasting."
)
FACT = "lots above 12.5 percent moisture are quarantined"
QUERY = "green lot moisture quarantined arrival"
READ_ONLY = (
    f"Agent '{CONSUMER}' has read-only access to '{DB}'. "
    f"Knowledge bases it may write to: ['{SCRATCH}']."
)
OKF_TOOLS = [
    "get_schemas",
    "read_kb",
    "write_kb",
    "get_all_kb_descriptions",
    "search_kb",
    "fetch_kb",
    "browse_kb",
]

_ID = re.compile(r"^- \[([^\]]+)\]", re.MULTILINE)


def okf_config(tmp_path: Path) -> dict[str, Any]:
    """Copy the example bundle into ``tmp_path`` and configure two databases over it.

    ``roastery``: the producer writes, the consumer only reads. ``scratch``: the consumer is
    its producer, so it carries ``write_kb`` and meets the per-database refusal.
    """
    bundle = tmp_path / DB
    shutil.copytree(EXAMPLE_BUNDLE, bundle)
    scratch = tmp_path / SCRATCH
    scratch.mkdir()
    (scratch / "index.md").write_text('---\nokf_version: "0.2"\n---\n# Scratch\n')
    counting_store.CALLS.clear()
    return {
        "okf": {
            "databases": {
                DB: {
                    "type": "tests.roles.counting_store.CountingStore",
                    "uri": str(bundle),
                    "description": "Larkspur Coffee Roasters: tables, metrics and runbooks.",
                    "refresh_seconds": None,
                    "consumer": [CONSUMER],
                    "producer": [PRODUCER],
                },
                SCRATCH: {
                    "type": "local",
                    "uri": str(scratch),
                    "description": "Notes the support agent keeps.",
                    "refresh_seconds": None,
                    "producer": [CONSUMER],
                },
            }
        }
    }


def store_calls() -> dict[str, int]:
    """How often the ``roastery`` store was opened, walked and read so far."""
    return dict(counting_store.CALLS)


def first_id(search_output: str) -> str:
    """The first ``[id]`` a search output lists, as a model would read it."""
    match = _ID.search(search_output)
    if match is None:
        raise AssertionError(f"no [id] in the search output:\n{search_output}")
    return match.group(1)


Call = tuple[str, dict[str, Any]]


@dataclass
class Script:
    """What a scripted model does next: each step sees every tool output so far.

    A step returns a tool call ``(name, arguments)`` or the final answer (a string).
    """

    steps: list[Callable[[list[str]], Call | str]]
    outputs: list[str] = field(default_factory=list)
    turns: int = 0

    def next(self, last_output: str | None) -> Call | str:
        """Record the last tool output (``None`` on the first turn) and play the next step."""
        if last_output is not None:
            self.outputs.append(last_output)
        if self.turns >= len(self.steps):
            raise AssertionError(f"unscripted model turn #{self.turns + 1}")
        step = self.steps[self.turns]
        self.turns += 1
        return step(self.outputs)

    @property
    def done(self) -> bool:
        return self.turns == len(self.steps)


def producer_script() -> Script:
    """Write the concept into ``roastery``, then report what the tool said."""
    return Script(
        [
            lambda _: ("write_kb", {"backend": DB, "text": CONCEPT}),
            lambda outputs: f"Recorded. {outputs[-1]}",
        ]
    )


def consumer_script() -> Script:
    """Search for the concept, fetch it by id, try to write, then answer from it."""
    return Script(
        [
            lambda _: ("search_kb", {"backend": DB, "query": QUERY}),
            lambda o: ("fetch_kb", {"backend": DB, "ids": first_id(o[-1])}),
            lambda _: ("write_kb", {"backend": DB, "text": "Moisture note\nA correction."}),
            lambda o: f"{FACT} (per {first_id(o[0])})",
        ]
    )


def assert_run(producer: Script, consumer: Script, answer: str) -> None:
    """What a user relies on after the two runs, whatever the framework."""
    assert producer.done and consumer.done
    assert producer.outputs[0].startswith(f"Wrote 1 record(s) to '{DB}'"), producer.outputs
    found, fetched, refused = consumer.outputs
    assert first_id(found).startswith("generated/"), found
    assert FACT in fetched
    assert refused == READ_ONLY
    assert FACT in answer
    calls = store_calls()
    # Two agents, one shared manager: the store is opened once and the bundle walked once.
    assert calls["open"] == 1 and calls["walk"] == 1, calls
