"""The simulator's virtual time (harness.sim.clock): order, sleeps, events, errors."""

from __future__ import annotations

import pytest

from harness.sim.clock import Event, SimulationError, VirtualScheduler

S = 1_000_000_000


def test_tasks_sleep_in_virtual_time_and_ties_run_in_scheduling_order() -> None:
    s = VirtualScheduler()
    log: list[tuple[str, int]] = []

    def task(name: str, pause: float) -> None:
        log.append((name, s.now_ns))
        s.sleep(pause)
        log.append((name, s.now_ns))

    s.spawn(task, "a", 2.0, name="a")
    s.spawn(task, "b", 0.5, name="b")
    s.call_later(0.5, lambda: log.append(("cb", s.now_ns)))
    s.run()
    # a and b start at 0 in spawn order; the callback was scheduled before b's wake-up at 0.5 s.
    assert log == [("a", 0), ("b", 0), ("cb", S // 2), ("b", S // 2), ("a", 2 * S)]
    assert s.now_ns == 2 * S


def test_an_event_wakes_its_waiter_and_a_timeout_returns_false() -> None:
    s = VirtualScheduler()
    ev = Event(s)
    seen: list[tuple[str, int, bool]] = []

    def setter() -> None:
        s.sleep(1.5)
        ev.set()

    def waiter() -> None:
        woke = ev.wait(10)
        seen.append(("set", s.now_ns, woke))
        woke = Event(s).wait(0.25)
        seen.append(("timeout", s.now_ns, woke))

    s.spawn(setter, name="setter")
    s.spawn(waiter, name="waiter")
    s.run()
    assert seen == [("set", 1_500_000_000, True), ("timeout", 1_750_000_000, False)]


def test_a_cancelled_timer_never_runs_and_run_until_stops_the_clock_there() -> None:
    s = VirtualScheduler()
    ran: list[str] = []
    t = s.call_later(1.0, lambda: ran.append("cancelled"))
    s.call_later(3.0, lambda: ran.append("late"))
    t.cancel()
    s.run(until_ns=2 * S)
    assert ran == [] and s.now_ns == 2 * S
    s.run()
    assert ran == ["late"]


def test_an_exception_in_a_task_stops_the_run_naming_the_task() -> None:
    s = VirtualScheduler()

    def bad() -> None:
        s.sleep(1)
        raise ValueError("boom")

    s.spawn(bad, name="member-7")
    with pytest.raises(SimulationError, match="member-7: ValueError: boom"):
        s.run()


def test_sleep_outside_a_task_is_refused_and_close_runs_finally_blocks() -> None:
    s = VirtualScheduler()
    with pytest.raises(RuntimeError, match="outside a simulation task"):
        s.sleep(1)
    cleaned: list[bool] = []

    def blocked() -> None:
        try:
            Event(s).wait()
        finally:
            cleaned.append(True)

    s.spawn(blocked, name="blocked")
    s.run()
    s.close()
    assert cleaned == [True]


def test_a_loop_sleeping_what_is_left_of_a_float_deadline_reaches_it() -> None:
    """The runner's wait loop (harness.run.tail.GroupWatch.until) sleeps ``deadline - now`` in float
    seconds; a remainder under half a nanosecond must still move the clock (1 ns), or the loop spins at
    one instant forever. By hand: now 0.3 s, deadline 0.3 s + 0.2 ns; the loop sleeps 0.2e-9 s once and
    then stands 1 ns later, past it."""
    sched = VirtualScheduler()
    seen: list[int] = []

    def waiter() -> None:
        sched.sleep(0.3)
        deadline = sched.now_s() + 0.2e-9
        while (remaining := deadline - sched.now_s()) > 0:
            assert len(seen) < 3, "the clock did not move"
            sched.sleep(remaining)
            seen.append(sched.now_ns)

    sched.spawn(waiter)
    sched.run()
    assert seen == [300_000_001]
