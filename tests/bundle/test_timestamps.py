"""The one reader of OKF timestamps: ISO 8601 datetimes with an explicit UTC offset, or nothing.

Pure computation on strings; nothing to start. What a bundle's reader, the check and the
writers make of it is tested where they are (tests/knowledgebase/okf/test_timestamps.py).
"""

from __future__ import annotations

from datetime import UTC, date, datetime, timedelta, timezone

import pytest

from agentkernel.bundle.timestamps import parse_timestamp, timestamp_fields, timestamp_problem

NOON = datetime(2026, 6, 30, 14, 0, tzinfo=UTC)


@pytest.mark.parametrize(
    "value",
    [
        "2026-06-30T14:00:00Z",
        "2026-06-30T16:00:00+02:00",
        "2026-06-30T14:00:00+00:00",
        "2026-06-30t14:00:00z",  # RFC 3339 allows lower case
        "2026-06-30T14:00:00.000Z",
        " 2026-06-30T14:00:00Z ",
    ],
)
def test_a_datetime_with_an_offset_is_read_as_its_instant(value: str) -> None:
    instant = parse_timestamp(value)
    assert instant == NOON and instant is not None and instant.utcoffset() == timedelta(0)
    assert timestamp_problem(value) is None


@pytest.mark.parametrize(
    ("value", "fix"),
    [
        ("2026-09-23", "write 2026-09-23T00:00:00Z"),
        ("2026-12-07T10:00:00", "write 2026-12-07T10:00:00Z if it is UTC"),
        ("2026-06-30 14:00:00+00:00", "write 2026-06-30T14:00:00+00:00"),
        ("2026-06-30T14:00:00 Z", "write it like 2026-06-30T14:00:00Z"),
        ("someday", "write it like 2026-06-30T14:00:00Z"),
        ("2026-02-30T00:00:00Z", "write it like 2026-06-30T14:00:00Z"),
    ],
)
def test_anything_else_is_ignored_and_the_problem_names_the_fix(value: str, fix: str) -> None:
    assert parse_timestamp(value) is None
    problem = timestamp_problem(value)
    assert problem is not None and "OKF 0.2 §5" in problem and fix in problem, problem


def test_legacy_dates_read_a_bare_date_as_midnight_utc_and_nothing_else() -> None:
    assert parse_timestamp("2026-09-23", legacy_dates=True) == datetime(2026, 9, 23, tzinfo=UTC)
    assert parse_timestamp(date(2026, 9, 23), legacy_dates=True) == datetime(
        2026, 9, 23, tzinfo=UTC
    )
    assert parse_timestamp("2026-12-07T10:00:00", legacy_dates=True) is None  # naive: still not
    assert parse_timestamp("2026-13-01", legacy_dates=True) is None
    problem = timestamp_problem("2026-09-23", legacy_dates=True)
    assert problem is not None and "read as midnight UTC only because legacy dates" in problem
    assert "ignored, so it decides nothing" in (timestamp_problem("2026-09-23") or "")


def test_values_that_are_not_strings() -> None:
    assert parse_timestamp(None) is None and parse_timestamp(1767225600) is None
    assert parse_timestamp(True) is None and parse_timestamp(["2026-06-30T14:00:00Z"]) is None
    assert parse_timestamp(date(2026, 9, 23)) is None
    aware = datetime(2026, 6, 30, 16, 0, tzinfo=timezone(timedelta(hours=2)))
    assert parse_timestamp(aware) == NOON
    assert parse_timestamp(datetime(2026, 6, 30, 14, 0)) is None  # naive
    assert "no UTC offset" in (timestamp_problem(datetime(2026, 6, 30, 14, 0)) or "")


def test_every_timestamp_key_of_okf_is_listed() -> None:
    meta = {
        "type": "Metric",
        "stale_after": "a",
        "generated": {"by": "x", "at": "b"},
        "verified": {"by": "human:ana", "at": "c"},  # a bare mapping is one event
        "usage_window": {"from": "d", "to": "e"},
        "sources": [
            {"resource": "r", "last_modified": "f", "usage_window": {"from": "g"}},
            "not a mapping",
        ],
    }
    assert timestamp_fields(meta) == [
        ("stale_after", "a"),
        ("generated.at", "b"),
        ("verified.at", "c"),
        ("usage_window.from", "d"),
        ("usage_window.to", "e"),
        ("sources.last_modified", "f"),
        ("sources.usage_window.from", "g"),
    ]
    assert timestamp_fields({"verified": [{"by": "a", "at": "x"}, {"by": "b"}]}) == [
        ("verified.at", "x")
    ]
