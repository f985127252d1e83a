"""The legacy_zk member on the member template (harness.members.legacy_member), with a fake consumer that
notes each call of its public API: which hook drives which call, in the template's order, on each way the
member ends; and that the adapter writes no event of its own (the consumer writes its history)."""

from __future__ import annotations

import threading
from typing import Any

import pytest

from harness.kernel.errors import Unreachable
from harness.members.legacy_member import LegacyMember
from legacy_zk.config import ConsumerConfig
from legacy_zk.ids import TopicPartition
from tests.support.recording import RecordingHistory
from tests.support.waiting import wait_until


class FakeHandler:
    def event_object(self) -> threading.Event:
        return threading.Event()


class FakeConsumer:
    """Notes ``start``, ``quiesce`` and ``close``; ``start`` returns ``converged``, or raises ``fails``, or
    (``blocks``) waits until ``close`` is called, as the real start's waits end when it closes."""

    def __init__(self, calls: list[Any], converged: bool = True, fails: bool = False, blocks: bool = False):
        self.calls = calls
        self.handler = FakeHandler()
        self.converged, self.fails, self.blocks = converged, fails, blocks
        self.closed = threading.Event()
        self.starting = threading.Event()

    def start(self) -> bool:
        self.calls.append("start")
        self.starting.set()
        if self.fails:
            raise Unreachable("ZooKeeper did not answer")
        if self.blocks:
            assert self.closed.wait(10), "close() never came"
        return self.converged

    def quiesce(self) -> None:
        self.calls.append("quiesce")

    def close(self) -> None:
        self.calls.append("close")
        self.closed.set()


CONFIG = ConsumerConfig(group_id="g", zookeeper_connect="127.0.0.1:2181", topics={"t": 1}, fetch=False)


def make(history: RecordingHistory, **fake: Any) -> tuple[LegacyMember, list[Any], list[FakeConsumer]]:
    calls: list[Any] = []
    made: list[FakeConsumer] = []

    def consumer(config: ConsumerConfig, **kw: Any) -> FakeConsumer:
        calls.append(("construct", config.group_id, kw["handler"]))
        made.append(FakeConsumer(calls, **fake))
        return made[-1]

    return LegacyMember(CONFIG, history, handler="gevent", make=consumer), calls, made


def run_in_thread(m: LegacyMember) -> tuple[threading.Thread, list[BaseException]]:
    errors: list[BaseException] = []

    def target() -> None:
        try:
            m.run()
        except BaseException as e:  # noqa: BLE001 - the test looks at it
            errors.append(e)

    t = threading.Thread(target=target, daemon=True)
    t.start()
    return t, errors


def test_a_stop_after_the_start_closes_the_consumer_once_through_the_life_cycle() -> None:
    history = RecordingHistory()
    m, calls, made = make(history)
    t, errors = run_in_thread(m)
    wait_until(lambda: m.running, what="the start returned")
    assert m.converged is True
    m.quiesce()
    m.stop()
    t.join(10)
    assert not t.is_alive() and errors == []
    assert calls == [("construct", "g", "gevent"), "start", "quiesce", "close"]
    assert history.events == []  # the consumer writes ready, started and stopped itself


def test_a_start_that_gave_up_still_runs_and_closes() -> None:
    m, calls, _ = make(RecordingHistory(), converged=False)
    t, errors = run_in_thread(m)
    wait_until(lambda: m.running, what="the start returned")
    assert m.converged is False
    m.stop()
    t.join(10)
    assert errors == [] and calls[1:] == ["start", "close"]


def test_a_stop_while_starting_closes_the_consumer_so_that_its_start_returns() -> None:
    m, calls, made = make(RecordingHistory(), blocks=True)
    t, errors = run_in_thread(m)
    wait_until(lambda: made and made[0].starting.is_set(), what="the start began")
    m.stop()  # the start is blocked: only a close ends it
    t.join(10)
    assert not t.is_alive() and errors == []
    # the stop's close, then the life cycle's own close (the real one returns at once when closed)
    assert calls[1:] == ["start", "close", "close"]


def test_a_start_that_raises_closes_the_consumer_and_run_raises_it() -> None:
    m, calls, _ = make(RecordingHistory(), fails=True)
    with pytest.raises(Unreachable):
        m.run()
    assert calls[1:] == ["start", "close"]
    assert not m.running


def test_a_stop_before_the_run_neither_starts_nor_skips_the_close() -> None:
    m, calls, _ = make(RecordingHistory())
    m.quiesce()  # nothing to quiesce yet
    m.stop(clean=False)  # the legacy member has one way to leave: 0.8's shutdown
    m.run()
    assert calls == [("construct", "g", "gevent"), "close"]


def test_the_rebalance_callback_reaches_on_assignment_with_the_consumer() -> None:
    seen: list[Any] = []
    m = LegacyMember(CONFIG, RecordingHistory(), on_assignment=lambda c, what, ps: seen.append((c, what, ps)))
    tp = TopicPartition("t", 0)
    m.assignment_changed("consumer", "assigned", [tp])  # type: ignore[arg-type]
    assert seen == [("consumer", "assigned", [tp])]
