"""A minimal driver of the coordinator's simulated group: a stable group, then membership triggers, written
as a unit's history the checker reads (for the simulator's own tests, validation and reach benchmark until
:mod:`harness.sim.driver` drives every implementation from the plan).

Contract
--------
:func:`drive` starts ``members`` members ``m0`` ... at virtual time 0 with the scenario's producer,
writes ``unit_start``; ``stable`` once the group is Stable and every live member completed that
generation's join; then each :class:`Step` at ``stable + at_s``: nemesis ``invoke`` / ``complete`` as the
real runner writes them (a join's ``complete`` carries ``ready_ns``; a leave completes once the member
stopped; a crash at once); ``settling_end`` ``settle_s`` after the last step; then the live members stop
cleanly and the history is closed. Markers carry the unit fields (case, impl, repetition). Returns what
it did (:class:`DriveResult`). Nothing here reads the wall clock except ``wall_s``.
"""

from __future__ import annotations

import bisect
import json
import time
from collections import Counter
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from coordinator.group.api import GroupState
from harness.kernel.events import WORKLOAD_CLIENTS, Kind
from harness.kernel.windows import evaluate
from harness.scenario.model import Scenario
from harness.sim.clock import NS_PER_S, VirtualScheduler
from harness.sim.coordinator import SimCoordinatorGroup, make_group
from harness.sim.group import SimContext
from harness.sim.history import EventSink, SimHistory
from harness.sim.model import DelayModel
from harness.sim.workload import SimProducer

__all__ = ["DriveResult", "Step", "drive", "herd_counts", "read_history"]

_POLL_NS = NS_PER_S // 20  # how often the driver looks at the group (virtual time)


@dataclass(frozen=True)
class Step:
    """One trigger: ``action`` (join, leave, crash) of ``target`` at ``at_s`` after ``stable``."""

    at_s: float
    action: str
    target: str


@dataclass(frozen=True)
class DriveResult:
    """``stable_s``: virtual seconds to the first stable group; ``end_s``: the run's virtual length;
    ``events``: events written; ``wall_s``: wall-clock seconds the simulation took."""

    stable_s: float
    end_s: float
    events: int
    wall_s: float


def _stable(group: SimCoordinatorGroup, group_id: str) -> bool:
    g = group.broker.machine.group(group_id)
    if g is None or g.state is not GroupState.STABLE:
        return False
    gen = g.generation_id
    return all(
        group.member(n).rec.generation == gen and not group.member(n).rejoin_needed for n in group.members()
    )


def drive(
    scenario: Scenario,
    members: int,
    steps: list[Step],
    out: Path,
    delays: DelayModel | None = None,
    settle_s: float = 10.0,
    stable_timeout_s: float = 120.0,
) -> DriveResult:
    """Run one simulated coordinator unit (see the module contract); the history goes to ``out``."""
    wall0 = time.perf_counter()
    delays = delays if delays is not None else DelayModel()
    sched = VirtualScheduler()
    sink = EventSink(out)
    unit = {"case": "default", "impl": "coordinator", "repetition": 0}

    def history(source: str, role: str) -> SimHistory:
        return SimHistory(sched, sink, source, role, 0)

    ctx = SimContext(sched, delays, scenario, members, history, delays.rng(), unit)
    group = make_group(ctx)
    marks = history("nemesis", "harness")
    nemesis = history("nemesis", "nemesis")
    producer = SimProducer(
        sched, group.topic, delays, history("producer", "producer"), scenario.workload.rate
    )
    names = [f"m{i}" for i in range(members)]
    marks.emit(
        "unit_start", topic=group.topic.name, group=scenario.group.id, partitions=group.topic.partitions,
        members=names, **unit,
    )  # fmt: skip
    for name in names:
        group.start_member(name)
    producer.start()
    limit = round(stable_timeout_s * NS_PER_S)
    while not _stable(group, scenario.group.id):
        if sched.now_ns >= limit:
            raise RuntimeError(f"the simulated group was not stable after {stable_timeout_s} s")
        sched.run(until_ns=sched.now_ns + _POLL_NS)
    stable_ns = sched.now_ns
    marks.emit("stable", **unit)
    for action_id, step in enumerate(steps, start=1):
        sched.run(until_ns=stable_ns + round(step.at_s * NS_PER_S))
        common = {
            "action": step.action, "action_id": action_id, "targets": [step.target], "target": None,
            "value": None, "trigger": True, "partitions": None, **unit,
        }  # fmt: skip
        nemesis.emit("invoke", **common)
        if step.action == "join":
            group.start_member(step.target)
            sched.run(until_ns=sched.now_ns)  # the member's first instant: its ``ready``
            nemesis.emit("complete", ready_ns={step.target: group.ready_ns(step.target)}, **common)
        elif step.action == "leave":
            group.stop_member(step.target)
            while step.target in group.members():
                sched.run(until_ns=sched.now_ns + _POLL_NS // 10)
            nemesis.emit("complete", **common)
        elif step.action == "crash":
            group.crash_member(step.target)
            nemesis.emit("complete", **common)
        else:
            raise ValueError(f"the coordinator drive knows join, leave and crash, not {step.action!r}")
    last = stable_ns + round((steps[-1].at_s if steps else 0.0) * NS_PER_S)
    sched.run(until_ns=last + round(settle_s * NS_PER_S))
    marks.emit("settling_end", settled=True, **unit)
    producer.stop()
    group.close()  # every live member stops cleanly
    while group.members():
        sched.run(until_ns=sched.now_ns + _POLL_NS)
    sched.run(until_ns=sched.now_ns + _POLL_NS)  # the broker's last counters and ``stopped``
    end_ns = sched.now_ns
    sched.close()
    sink.close()
    return DriveResult(stable_ns / NS_PER_S, end_ns / NS_PER_S, sink.events, time.perf_counter() - wall0)


def read_history(paths: Iterable[Path]) -> list[dict[str, Any]]:
    """Every event of JSON-lines history files, in time order."""
    events: list[dict[str, Any]] = []
    for path in paths:
        with open(path, encoding="utf-8") as f:
            events.extend(json.loads(line) for line in f if line.strip())
    events.sort(key=lambda e: int(e["ts_ns"]))
    return events


def herd_counts(
    events: Sequence[Mapping[str, Any]], settle_s: float
) -> list[tuple[str, str, dict[str, int]]]:
    """Per trigger (in order): action, outcome and the broker's coordination requests by API in its window
    [t0, end) (:mod:`harness.kernel.windows`), the workload's clients left out: the herd analysis's ``api``
    table, computed without Spark."""
    facts = evaluate(events, round(settle_s * NS_PER_S))
    requests = sorted(
        (int(e["ts_ns"]), str(e.get("api")))
        for e in events
        if e.get("kind") == Kind.GROUP_REQUEST and e.get("client") not in WORKLOAD_CLIENTS
    )
    stamps = [ts for ts, _ in requests]
    out: list[tuple[str, str, dict[str, int]]] = []
    for t in facts.triggers:
        lo, hi = bisect.bisect_left(stamps, t.t0_ns), bisect.bisect_left(stamps, t.end_ns)
        c = Counter(api for _, api in requests[lo:hi])
        out.append((t.action, t.outcome, dict(sorted(c.items()))))
    return out
