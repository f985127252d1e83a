"""Reach of the coordinator's simulation (benchmark, opt-in: ``-m bench``): the ``herd`` scenario's join,
leave and crash at 10^3 and 10^4 members; prints virtual length, events, wall time and peak RSS (figures
measured on a shared machine are load-dependent: the closing note reports them with that caveat).

The herd is linear in N for the coordinator: a join costs N + 2 JoinGroup and N + 1 SyncGroup, a leave N
of each (N + 1 members before it, one left), a crash N - 1 (the crashed one expired).
"""

from __future__ import annotations

import resource
from pathlib import Path

import pytest

from harness.scenario.loading import load_scenario
from harness.sim.coordinator_drive import Step, drive, herd_counts, read_history

pytestmark = pytest.mark.bench


@pytest.mark.parametrize("members", [1000, 10_000])
def test_herd_reach(members: int, tmp_path: Path) -> None:
    sc = load_scenario("herd", [f"group.members={members}", 'implementations=["coordinator"]'])
    out = tmp_path / "sim.jsonl"
    steps = [Step(5.0, "join", "j0"), Step(25.0, "leave", "m2"), Step(45.0, "crash", "j0")]
    result = drive(sc, members, steps, out)
    peak_mb = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024
    print(
        f"\ncoordinator simulation, {members} members: {result.end_s:.1f} s virtual, {result.events} events, "
        f"{result.wall_s:.1f} s wall, peak RSS {peak_mb:.0f} MB (process so far)"
    )
    rows = herd_counts(read_history([out]), sc.settle_window)
    assert [(a, o) for a, o, _ in rows] == [("join", "settled"), ("leave", "settled"), ("crash", "settled")]
    got = [(c["JoinGroup"], c["SyncGroup"]) for _, _, c in rows]
    assert got == [(members + 2, members + 1), (members, members), (members - 1, members - 1)]
