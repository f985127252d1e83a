"""Reach of the coordinator's simulation (benchmark, opt-in: ``-m bench``): the ``herd`` scenario's join,
leave and crash at 10^3 members through the simulator's own driver; prints virtual length, events, wall
time and peak RSS. 10^4 members is `herdlab bench simulator reach --impl coordinator` (a benchmark, not a
test: the closing note reports it).

The herd is linear in N for the coordinator: a join costs N + 2 JoinGroup and N + 1 SyncGroup, a leave N
of each (N + 1 members before it, one left), a crash N - 1 (the crashed one expired). These are the
protocol's counts, so the model runs without kafka-python's second join (``kafka_poll_gap_per_member_s`` 0:
with it, a share of the members that grows with the members per core joins twice, tested in
test_coordinator_sim.py), without the drawn boot and lateness (``ON_TIME``) and with every member on a
core of its own (``client_cores`` 0, as ``herdlab bench simulator reach`` runs): the per-member-per-core
costs are calibrated at 10 to 100 members on 2 cores, and at 1000 members on 2 cores the runner's step
lateness alone would be 0.9 s and the members' work on a round's JoinGroup answers 50 s, past the session
timeout.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from harness.scenario.loading import load_scenario
from harness.sim.session import peak_rss_mb
from tests.support.sim_units import ON_TIME, machine_model, simulate_unit, trigger_counts

pytestmark = pytest.mark.bench


def test_herd_reach_at_1000_members(tmp_path: Path) -> None:
    members = 1000
    sc = load_scenario("herd", [f"group.members={members}", 'implementations=["coordinator"]'])
    outcome = simulate_unit(
        sc,
        "coordinator",
        tmp_path / "u",
        machine_model(**ON_TIME, kafka_poll_gap_per_member_s=0.0, client_cores=0),
    )
    print(
        f"\ncoordinator simulation, {members} members: {outcome['virtual_s']:.1f} s virtual, "
        f"{outcome['events']} events, peak RSS {peak_rss_mb():.0f} MB (process so far)"
    )
    rows = trigger_counts(tmp_path / "u", sc)
    assert [(r.label.split()[0], r.outcome) for r in rows] == [
        ("join", "settled"), ("leave", "settled"), ("crash", "settled"),
    ]  # fmt: skip
    got = [(r.group_requests["JoinGroup"], r.group_requests["SyncGroup"]) for r in rows]
    assert got == [(members + 2, members + 1), (members, members), (members - 1, members - 1)]
