"""``bundle.logfile``: the one writer and reader of ``log.md``'s entries.

Pure text functions: nothing to start, nothing stood in for.
"""

from __future__ import annotations

from agentkernel.bundle import logfile


def test_an_entry_reads_back_as_it_was_written() -> None:
    line = logfile.entry("update", "Renamed [tides](concepts/tides.md)", ["[a](a.md)", "b"])
    assert line == "* **update**: Renamed [tides](concepts/tides.md) — pages: [a](a.md), b"
    assert logfile.split_line(line) == (
        "update",
        "Renamed [tides](concepts/tides.md)",
        ["[a](a.md)", "b"],
    )
    assert logfile.entry("lint", "Checked", []) == "* **lint**: Checked"
    assert logfile.split_line("* **lint**: Checked") == ("lint", "Checked", [])


def test_prepend_puts_the_newest_entry_on_top_of_todays_group() -> None:
    first = logfile.prepend("", logfile.entry("ingest", "One", []), "2026-01-02")
    assert first == "# Knowledge Base Log\n\n## 2026-01-02\n* **ingest**: One\n"
    second = logfile.prepend(first, logfile.entry("ingest", "Two", []), "2026-01-02")
    third = logfile.prepend(second, logfile.entry("query", "Three", []), "2026-01-03")
    assert list(logfile.lines(third)) == [
        ("2026-01-03", "* **query**: Three"),
        ("2026-01-02", "* **ingest**: Two"),
        ("2026-01-02", "* **ingest**: One"),
    ]
