"""ClientCpu: the members' shared client cores, first come first served, in random order or prioritized."""

from __future__ import annotations

import random

import pytest

from harness.sim.clock import VirtualScheduler
from harness.sim.cpu import ClientCpu
from tests.support.sim_units import machine_model

MS = 1_000_000


def _run(cpu: ClientCpu, sched: VirtualScheduler, names: str, cost_s: float = 0.001) -> list[tuple[str, int]]:
    """Every name works ``cost_s`` from t=0, spawned in the order given: (name, ns it ended) in end order."""
    ended: list[tuple[str, int]] = []

    def member(name: str) -> None:
        cpu.work(cost_s)
        ended.append((name, sched.now_ns))

    for n in names:
        sched.spawn(member, n, name=n)
    sched.run()
    return ended


def _cpu(cores: int, random_order: bool, seed: int = 0) -> tuple[ClientCpu, VirtualScheduler]:
    sched = VirtualScheduler()
    return ClientCpu(sched, machine_model(client_cores=cores), random.Random(seed), random_order), sched


def test_first_come_first_served_serves_in_issue_order() -> None:
    cpu, sched = _cpu(1, random_order=False)
    assert _run(cpu, sched, "abcd") == [("a", 1 * MS), ("b", 2 * MS), ("c", 3 * MS), ("d", 4 * MS)]


def test_random_order_keeps_every_core_busy_and_draws_who_is_next() -> None:
    orders = set()
    for seed in range(10):
        cpu, sched = _cpu(1, random_order=True, seed=seed)
        ended = _run(cpu, sched, "abcde")
        # one core, five works of 1 ms issued at 0: whatever the order, they end at 1, 2, 3, 4 and 5 ms,
        # and the first issued found the core free
        assert [t for _, t in ended] == [1 * MS, 2 * MS, 3 * MS, 4 * MS, 5 * MS]
        assert ended[0][0] == "a"
        orders.add("".join(n for n, _ in ended))
    assert len(orders) > 1  # the waiting ones are not served in the order they came
    again, sched = _cpu(1, random_order=True, seed=3)
    cpu3, sched3 = _cpu(1, random_order=True, seed=3)
    assert _run(again, sched, "abcde") == _run(cpu3, sched3, "abcde")  # the unit's seed decides


def test_two_cores_serve_two_at_once_in_random_order() -> None:
    cpu, sched = _cpu(2, random_order=True)
    ended = _run(cpu, sched, "abcd")
    assert sorted(t for _, t in ended) == [1 * MS, 1 * MS, 2 * MS, 2 * MS]
    assert {n for n, t in ended if t == 1 * MS} == {"a", "b"}


def test_a_killed_task_gives_back_its_core_and_its_place() -> None:
    cpu, sched = _cpu(1, random_order=True)
    ended: list[tuple[str, int]] = []

    def member(name: str, cost_s: float) -> None:
        cpu.work(cost_s)
        ended.append((name, sched.now_ns))

    holder = sched.spawn(member, "holder", 0.010, name="holder")  # holds the core 0..10 ms
    waiter = sched.spawn(member, "waiter", 0.001, name="waiter")  # waits for it
    sched.spawn(member, "late", 0.001, name="late", delay_s=0.0005)
    sched.call_at(2 * MS, sched.kill, waiter)  # a waiting member crashes: its place is gone
    sched.call_at(3 * MS, sched.kill, holder)  # the holder crashes: the core serves "late" at once
    sched.run()
    assert ended == [("late", 4 * MS)]
    start = sched.now_ns
    # nothing leaked: the next work finds the core free and takes just its own 1 ms
    assert _run(cpu, sched, "x") == [("x", start + 1 * MS)]


def test_random_order_work_cannot_be_booked_ahead() -> None:
    cpu, _ = _cpu(2, random_order=True)
    assert not cpu.books_ahead
    with pytest.raises(RuntimeError, match="booked ahead"):
        cpu.reserve(0.001)


def test_unlimited_cores_book_ahead_in_either_order() -> None:
    for random_order in (False, True):
        cpu, sched = _cpu(0, random_order)
        assert cpu.books_ahead
        assert _run(cpu, sched, "abc") == [("a", 1 * MS), ("b", 1 * MS), ("c", 1 * MS)]


def test_random_order_serves_by_share() -> None:
    """One core held by a first task; a task of share 9 and one of share 1 wait: the core that frees
    serves the heavy one with probability 9 / (9 + 1). Over 200 seeds that is 180 expected (binomial
    standard deviation 4.2); the seeds fix the draws, so the count is exact and the bounds are wide."""
    heavy_first = 0
    for seed in range(200):
        cpu, sched = _cpu(1, random_order=True, seed=seed)
        ended: list[str] = []

        def member(name: str, share: float, cpu: ClientCpu = cpu, ended: list[str] = ended) -> None:
            cpu.work(0.001, share)
            ended.append(name)

        sched.spawn(member, "holder", 1.0, name="holder")
        sched.spawn(member, "light", 1.0, name="light")
        sched.spawn(member, "heavy", 9.0, name="heavy")
        sched.run()
        assert ended[0] == "holder" and sorted(ended[1:]) == ["heavy", "light"]
        heavy_first += ended[1] == "heavy"
    assert 160 <= heavy_first <= 195


def test_equal_shares_draw_as_uniform_random_order() -> None:
    """Shares all 1 are the uniform random order: one ``randrange`` per hand-over and no weighted draw
    (``random``), so a model without shares keeps its draws; unequal shares take the weighted draw."""

    class Counting:
        """The unit's random source, counting which draws ClientCpu makes."""

        def __init__(self, seed: int) -> None:
            self.rng = random.Random(seed)
            self.calls = {"randrange": 0, "random": 0}

        def randrange(self, n: int) -> int:
            self.calls["randrange"] += 1
            return self.rng.randrange(n)

        def random(self) -> float:
            self.calls["random"] += 1
            return self.rng.random()

    def served(shares: dict[str, float]) -> dict[str, int]:
        sched = VirtualScheduler()
        rng = Counting(5)
        cpu = ClientCpu(sched, machine_model(client_cores=1), rng, random_order=True)

        def member(name: str) -> None:
            cpu.work(0.001, shares[name])

        for n in shares:
            sched.spawn(member, n, name=n)
        sched.run()
        return rng.calls

    # six works issued at once on one core: the first finds it free, the other five wait; each of the
    # first five ends hands the core over with a draw (5, 4, 3, 2, 1 waiting), the sixth to no one
    assert served(dict.fromkeys("abcdef", 1.0)) == {"randrange": 5, "random": 0}
    assert served({**dict.fromkeys("abcde", 1.0), "f": 3.0})["random"] > 0


def test_prioritized_serves_the_highest_priority_waiting_first_then_in_arrival_order() -> None:
    """One core, prioritized. By hand: "a" (priority 0, 3 ms) takes the core at 0; "b" and "c" (priority 0,
    1 ms each) wait from 0; "s1" and "s2" (priority 1, 1 ms each) come at 1 and 2 ms. Nothing running is
    preempted: "a" ends at 3; then the priority-1 ones in arrival order (s1 at 4, s2 at 5), then b and c
    (6, 7). First come first served would end them a 3, b 4, c 5, s1 6, s2 7."""
    sched = VirtualScheduler()
    cpu = ClientCpu(sched, machine_model(client_cores=1), random.Random(0), prioritized=True)
    assert not cpu.books_ahead
    ended: list[tuple[str, int]] = []

    def member(name: str, cost_s: float, priority: int) -> None:
        cpu.work(cost_s, priority=priority)
        ended.append((name, sched.now_ns))

    sched.spawn(member, "a", 0.003, 0, name="a")
    sched.spawn(member, "b", 0.001, 0, name="b")
    sched.spawn(member, "c", 0.001, 0, name="c")
    sched.spawn(member, "s1", 0.001, 1, name="s1", delay_s=0.001)
    sched.spawn(member, "s2", 0.001, 1, name="s2", delay_s=0.002)
    sched.run()
    assert ended == [("a", 3 * MS), ("s1", 4 * MS), ("s2", 5 * MS), ("b", 6 * MS), ("c", 7 * MS)]


def test_prioritized_with_equal_priorities_is_first_come_first_served() -> None:
    sched = VirtualScheduler()
    cpu = ClientCpu(sched, machine_model(client_cores=2), random.Random(0), prioritized=True)
    assert _run(cpu, sched, "abcd") == [("a", 1 * MS), ("b", 1 * MS), ("c", 2 * MS), ("d", 2 * MS)]
