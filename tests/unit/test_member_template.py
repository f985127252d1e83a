"""The member template's life cycle (harness.members.template) with a fake client that notes each hook:
the order of the steps on each way a member ends (the registry: test_member_registry.py)."""

from __future__ import annotations

import threading
import time
from typing import Any

import pytest

from harness.members.template import MemberTemplate


class Fake(MemberTemplate):
    """Polls ``polls`` times, then stops itself with ``clean``; ``fail`` names a hook that raises."""

    def __init__(self, polls: int = 2, clean: bool = True, fail: str = "", closes: bool = True) -> None:
        super().__init__()
        self.calls: list[Any] = []
        self.polls, self.clean, self.fail, self.closes = polls, clean, fail, closes

    def _note(self, call: Any) -> None:
        self.calls.append(call)
        if self.fail == (call if isinstance(call, str) else call[0]):
            raise RuntimeError(self.fail)

    def announce_ready(self) -> None:
        self._note("ready")

    def construct(self) -> Any:
        self._note("construct")
        return "client"

    def announce_started(self) -> None:
        self._note("started")

    def subscribe(self) -> None:
        self._note("subscribe")

    def poll_once(self) -> None:
        self._note("poll")
        self.polls -= 1
        if self.polls == 0:
            self.stop(clean=self.clean)

    def final_commit(self) -> None:
        self._note("final_commit")

    def close(self) -> None:
        self._note("close")

    def announce_stopped(self, clean: bool, **fields: Any) -> None:
        self._note(("stopped", clean, sorted(fields)))

    def may_close(self, completed: bool) -> bool:
        self._note(("may_close", completed))
        return self.closes

    def unclean_fields(self) -> dict[str, Any]:
        return {"fatal": None}

    def release(self) -> None:
        self._note("release")

    def after_run(self) -> None:
        self._note("after_run")


class MustReturn(Fake):
    close_must_return = True


START = ["ready", "construct", "started", "subscribe"]


def test_a_clean_stop_commits_closes_releases_then_writes_stopped_with_the_close_time() -> None:
    m = Fake(polls=2)
    m.run()
    assert m.calls == [
        *START,
        "poll",
        "poll",
        ("may_close", True),
        "final_commit",
        "close",
        "release",
        ("stopped", True, ["close_ms"]),
        "after_run",
    ]
    assert m.stopping and m.consumer == "client"


def test_an_unclean_stop_neither_commits_nor_closes() -> None:
    m = Fake(polls=1, clean=False)
    m.run()
    assert m.calls == [*START, "poll", "release", ("stopped", False, ["fatal"]), "after_run"]


def test_a_client_that_may_not_close_ends_unclean() -> None:
    m = Fake(polls=1, closes=False)
    m.run()
    assert m.calls == [
        *START,
        "poll",
        ("may_close", True),
        "release",
        ("stopped", False, ["fatal"]),
        "after_run",
    ]


def test_a_construct_that_fails_writes_an_unclean_stopped_without_client_fields_and_raises() -> None:
    m = Fake(fail="construct")
    with pytest.raises(RuntimeError, match="construct"):
        m.run()
    assert m.calls == ["ready", "construct", "release", ("stopped", False, [])]
    assert m.consumer is None


def test_a_poll_that_raises_still_closes_cleanly_then_raises() -> None:
    m = Fake(fail="poll")
    with pytest.raises(RuntimeError, match="poll"):
        m.run()
    assert m.calls == [
        *START,
        "poll",
        ("may_close", False),
        "final_commit",
        "close",
        "release",
        ("stopped", True, ["close_ms"]),
    ]


@pytest.mark.parametrize(
    ("must_return", "stopped"), [(False, ("stopped", True, ["close_ms"])), (True, ("stopped", False, []))]
)
def test_a_close_that_raises_is_clean_unless_the_close_must_return(must_return: bool, stopped: Any) -> None:
    m = (MustReturn if must_return else Fake)(polls=1, fail="close")
    with pytest.raises(RuntimeError, match="close"):
        m.run()
    assert m.calls == [*START, "poll", ("may_close", True), "final_commit", "close", "release", stopped]


def test_a_stop_sets_the_flag_then_interrupts_the_waiting_step_on_the_stopping_thread() -> None:
    seen: list[tuple[bool, threading.Thread]] = []

    class Interrupted(Fake):
        def interrupt(self) -> None:
            seen.append((self.stopping, threading.current_thread()))

    m = Interrupted()
    stopper = threading.Thread(target=m.stop)
    stopper.start()
    stopper.join()
    assert seen == [(True, stopper)]


class Stalling(Fake):
    """Stalls itself in its first poll; ``waits`` stall waits later it is unstalled (by a thread of its
    own, as the CLI's signal handler would); its next poll stops it cleanly."""

    def __init__(self, waits: int) -> None:
        super().__init__(polls=2)
        self.waits = waits

    def poll_once(self) -> None:
        super().poll_once()
        if self.polls == 1:
            self.stall(True)

    def stall_wait(self) -> None:
        self._note("stall_wait")
        self.waits -= 1
        if self.waits == 0:
            unstaller = threading.Thread(target=self.stall, args=(False,))
            unstaller.start()
            unstaller.join()


def test_a_stalled_member_calls_stall_wait_instead_of_polling_until_it_is_unstalled() -> None:
    m = Stalling(waits=3)
    m.run()
    # worked out by hand: poll 1 stalls; three stall waits, the third unstalls; poll 2 stops
    assert m.calls == [
        *START,
        "poll",
        "stall_wait",
        "stall_wait",
        "stall_wait",
        "poll",
        ("may_close", True),
        "final_commit",
        "close",
        "release",
        ("stopped", True, ["close_ms"]),
        "after_run",
    ]
    assert not m.stalled


def test_a_stop_during_a_stall_ends_the_default_stall_wait_and_closes_cleanly() -> None:
    stalled = threading.Event()

    class StalledForever(Fake):
        stall_wait_s = 60.0  # the stop must end the wait, not its timeout

        def poll_once(self) -> None:
            self._note("poll")
            self.stall(True)
            stalled.set()

    m = StalledForever()

    def stop_once_stalled() -> None:
        stalled.wait(10)
        m.stop(clean=True)

    stopper = threading.Thread(target=stop_once_stalled)
    t0 = time.monotonic()
    stopper.start()
    m.run()
    stopper.join()
    assert time.monotonic() - t0 < StalledForever.stall_wait_s / 2  # ended by the stop, not the timeout
    assert m.stalled and m.stopping
    assert m.calls == [
        *START,
        "poll",
        ("may_close", True),
        "final_commit",
        "close",
        "release",
        ("stopped", True, ["close_ms"]),
        "after_run",
    ]
