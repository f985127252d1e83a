"""Simulator validation, consumer side (KIP-848): the simulated timing-free counts of each trigger window
(ConsumerGroupHeartbeat exchanges that carry a change, members that moved to a new member epoch, partitions
given to another member: :func:`harness.sim.validate.consumer_counts`) equal a real run's, for the join, the
leave and the crash of the ``designs`` scenario at 10 and 50 members, here over two partitions per member (the
uniform assignor).

The members choose their own ids (random in a real run, as librdkafka makes them); the uniform assignor's
quotas follow the ids' order, so the simulation is given the real run's ids (``member_ids``, read from each
member's events) and the two must then agree exactly. With two partitions per member every change moves
partitions one at a time to members that take each as soon as it is free: a joiner takes one partition from
one member (Kafka 4.1's extra-slot rule keeps the other extra partitions where they are), a leaver's or a
crashed member's two partitions go to two members, so none of the counts depends on when the members'
heartbeats fall.
"""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

from harness.run.runner import Unit, planned_cases
from harness.scenario.loading import load_scenario
from harness.sim.driver import SimUnitRunner
from harness.sim.model import DEFAULT_PROFILE, load_profile
from harness.sim.validate import consumer_counts, read_unit
from tests.support.sim_units import EPOCH_NS

REPO = Path(__file__).resolve().parents[3]
SCENARIO = "designs"
SETS = ['implementations=["consumer"]', "repetitions=1"]


def _member_ids(events: list[dict[str, Any]]) -> dict[str, str]:
    """Each member's id (its name -> the first non-empty ``member`` of its own events)."""
    ids: dict[str, str] = {}
    for e in sorted(events, key=lambda e: int(e["ts_ns"])):
        if e.get("role") == "member" and e.get("member") and e["source"] not in ids:
            ids[str(e["source"])] = str(e["member"])
    return ids


@pytest.mark.long
@pytest.mark.parametrize("members", [10, 50])
def test_simulated_consumer_counts_equal_a_real_runs(tmp_path: Path, members: int) -> None:
    """A real run of ``designs``' consumer unit (a few minutes on 2 cores), then the same case simulated with
    the real members' ids; every trigger's counts equal."""
    chosen = [*SETS, f"group.members={members}", f"topic.partitions={2 * members}"]
    sets = [x for s in chosen for x in ("--set", s)]
    subprocess.run(
        [
            sys.executable,
            "-m",
            "harness",
            "run",
            SCENARIO,
            *sets,
            "--no-report",
            "--out",
            str(tmp_path / "real"),
        ],
        cwd=REPO,
        check=True,
        capture_output=True,
        timeout=1800,
    )
    scenario = load_scenario(SCENARIO, chosen)
    cases = planned_cases(scenario)
    units = sorted((tmp_path / "real" / SCENARIO / "latest" / "units").iterdir())
    assert [u.name for u in units] == [f"c{i}-consumer-r0" for i in range(len(cases))]
    for ci, (case, real_dir) in enumerate(zip(cases, units, strict=True)):
        events = read_unit(real_dir)
        real = consumer_counts(events, scenario.settle_window)
        assert all(r.outcome == "settled" for r in real), (
            f"{case.label}: a real trigger did not settle: {real}"
        )
        unit = Unit(ci, case, "consumer", 0, tmp_path / "sim" / real_dir.name)
        outcome = SimUnitRunner(
            scenario,
            unit,
            load_profile(DEFAULT_PROFILE),
            epoch_ns=EPOCH_NS,
            options={"member_ids": _member_ids(events)},
        ).run()
        assert not outcome.get("failed"), outcome
        sim = consumer_counts(read_unit(unit.dir), scenario.settle_window)
        assert [(r.label, r.outcome) for r in sim] == [(r.label, r.outcome) for r in real]
        for r, s in zip(real, sim, strict=True):
            assert s.counts() == r.counts(), (
                f"{case.label} {r.label}: real {r.counts()}, simulated {s.counts()}"
            )
