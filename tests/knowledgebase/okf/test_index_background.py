"""A bundle index is refreshed in the background (issue 24): newest within one interval.

Real: a bundle on disk and the indexer writing a Lance dataset in a tmp folder. The manager's
clock is a fake one; the background thread polls when that clock says a poll is due and the
test wakes it, and every assertion waits for an event (a poll done), never for time.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from agentkernel.knowledgebase import LocalDocumentStore, OKFManager
from agentkernel.knowledgebase.okf._background import BackgroundRefresh, poll_interval
from tests.knowledgebase.okf.helpers import SMALL_BUNDLE, Clock, concept, write_bundle
from tests.support import require_extra

EVENT = 60.0  # seconds a test waits for an event that must come (never a measurement)


def test_the_poll_interval_leaves_room_for_the_switch() -> None:
    assert poll_interval(10, []) == 5  # half the interval while no switch is known
    assert poll_interval(10, [1.6, 0.4]) == 5
    assert poll_interval(10, [3.0]) == 4  # the interval minus twice the longest switch
    assert poll_interval(10, [6.0]) == 1  # never more often than a tenth of the interval
    assert poll_interval(300, [2.0]) == 150


class Index:
    """A fake index on the test's clock: versions committed at times, a switch taking time.

    With ``during``, the next version is committed just after a switching poll listed the
    versions (it lands while the switch runs); else the test commits just after a poll.
    """

    def __init__(self, clock: Clock, switches: list[float], during: bool) -> None:
        self.clock = clock
        self.switches = switches
        self.during = during
        self.commits: list[tuple[float, int]] = []
        self.served = 0
        self.served_at: dict[int, float] = {}

    def poll(self) -> tuple[bool, float | None]:
        newest = max((v for t, v in self.commits if t <= self.clock()), default=0)
        if newest <= self.served:
            return False, None
        if self.during:
            self.commits.append((self.clock() + 0.001, newest + 1))
        self.clock.advance(self.switches.pop(0))  # the download and the load
        self.served = newest
        self.served_at[newest] = self.clock()
        return True, None


def _poll_when_due(refresher: BackgroundRefresh, clock: Clock) -> None:
    """Move the clock to the next poll, wake the thread, wait for the poll."""
    polls = refresher.polls
    clock.now = max(clock.now, refresher.due)
    refresher.wake()
    assert refresher.wait_polls(polls + 1, EVENT)


@pytest.mark.parametrize("during", [False, True])
@pytest.mark.parametrize(
    "switches", [[0.1] * 9, [5.0] * 9, [4.9, 0.2, 5.0, 0.1, 3.0, 5.0, 2.5, 5.0, 1.0]]
)
def test_a_version_is_served_within_one_interval_of_its_commit(
    switches: list[float], during: bool
) -> None:
    """Commits land just after a poll or during a switch (the worst cases); each is served
    within R on the manager's clock, the switch taking up to R / 2."""
    seconds, clock = 10.0, Clock()
    index = Index(clock, list(switches), during)
    refresher = BackgroundRefresh(index.poll, seconds, clock, "fake")
    try:
        _poll_when_due(refresher, clock)
        for version in range(1, 9):
            if not any(v == version for _, v in index.commits):
                index.commits.append((clock() + 0.001, version))  # just missed by a poll
            while index.served < version:
                _poll_when_due(refresher, clock)
    finally:
        refresher.stop()
    late = {v: index.served_at[v] - t for t, v in index.commits if v in index.served_at}
    assert len(late) >= 8
    assert max(late.values()) <= seconds, late


def test_the_thread_stops_on_stop_and_is_a_daemon() -> None:
    clock = Clock()
    refresher = BackgroundRefresh(lambda: (False, None), 10.0, clock, "fake")
    assert refresher.thread.daemon
    refresher.stop()
    assert not refresher.thread.is_alive()
    refresher.stop()  # idempotent


def test_a_failing_poll_is_logged_and_the_thread_goes_on(caplog: pytest.LogCaptureFixture) -> None:
    clock, calls = Clock(), []

    def poll() -> tuple[bool, float | None]:
        calls.append(clock())
        raise RuntimeError("boom")

    refresher = BackgroundRefresh(poll, 10.0, clock, "fake")
    try:
        for n in (1, 2):
            clock.now = refresher.due
            refresher.wake()
            assert refresher.wait_polls(n, EVENT)
    finally:
        refresher.stop()
    assert len(calls) == 2
    assert "background refresh failed" in caplog.text


# -- a manager over a real index ------------------------------------------------------------


def _pod(
    tmp_path: Path, clock: Clock, seconds: float | None = 10.0
) -> tuple[OKFManager, Path, str]:
    require_extra("lancedb", "lancedb")
    from agentkernel.knowledgebase.okf.bundleindex import indexer

    root = write_bundle(tmp_path / "b", SMALL_BUNDLE)
    index = str(tmp_path / "kb.lance")
    indexer.index_bundle(LocalDocumentStore(root, writable=False), index)
    kb = OKFManager(
        LocalDocumentStore(root, writable=False), index=index, refresh_seconds=seconds, clock=clock
    )
    return kb, root, index


def _commit(root: Path, index: str, title: str) -> int:
    from agentkernel.knowledgebase.okf.bundleindex import indexer

    (root / "notes").mkdir(exist_ok=True)
    (root / f"notes/{title.lower().replace(' ', '-')}.md").write_text(concept("Note", title))
    stats = indexer.index_bundle(LocalDocumentStore(root, writable=False), index)
    assert stats.committed
    return int(stats.version)


def test_a_pod_serves_a_new_version_within_the_interval_without_a_call(tmp_path: Path) -> None:
    clock = Clock()
    kb, root, index = _pod(tmp_path, clock)
    poller = kb._poller
    assert poller is not None
    served = kb.schema()["index"]["version"]
    committed_at = clock()
    version = _commit(root, index, "Fresh orders note")
    assert version > served
    # no call reaches the manager: the thread polls when the manager's clock says so
    clock.now = poller.due
    assert clock() - committed_at <= 10.0
    poller.wake()
    assert poller.wait_polls(1, EVENT)
    assert kb._view.contents.version == version
    assert kb.last_refresh is not None
    # a tool call finds it served; the call did not refresh (no refresh was due for calls)
    seen = kb.last_refresh
    assert kb.search("fresh orders note", 1)[0]["metadata"]["id"] == "notes/fresh-orders-note"
    assert kb.last_refresh is seen
    kb.close()
    assert not poller.thread.is_alive()


def test_a_failed_background_refresh_is_reported_in_the_diagnostics(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    clock = Clock()
    kb, _, _ = _pod(tmp_path, clock)
    poller = kb._poller
    assert poller is not None

    def broken(current: object) -> None:
        raise OSError("the object store is down")

    monkeypatch.setattr(kb._view.source, "newer", broken)
    try:
        clock.now = poller.due
        poller.wake()
        assert poller.wait_polls(1, EVENT)
        assert any("the object store is down" in d for d in kb.diagnostics)
        assert kb.search("orders", 1)  # the old version serves
        assert poller.thread.is_alive()
    finally:
        kb.close()


def test_no_thread_without_an_interval_nor_for_a_walk(tmp_path: Path) -> None:
    kb, root, _ = _pod(tmp_path, Clock(), seconds=None)
    assert kb._poller is None
    walked = OKFManager(LocalDocumentStore(root, writable=False), refresh_seconds=10)
    assert walked._poller is None
    kb.close()
    walked.close()


def test_the_thread_ends_with_its_manager(tmp_path: Path) -> None:
    import gc

    clock = Clock()
    kb, _, _ = _pod(tmp_path, clock)
    poller = kb._poller
    assert poller is not None
    del kb
    gc.collect()
    clock.now = poller.due  # its next poll finds the manager gone
    poller.wake()
    poller.thread.join(EVENT)
    assert not poller.thread.is_alive()


def test_connecting_again_replaces_the_thread(tmp_path: Path) -> None:
    kb, _, _ = _pod(tmp_path, Clock())
    first = kb._poller
    assert first is not None
    kb.connect()
    assert kb._poller is not None and kb._poller is not first
    assert not first.thread.is_alive()
    kb.close()
