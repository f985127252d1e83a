"""The nemesis plan: a scenario's timeline turned into concrete actions on named members.

Pure: no processes, no clocks. The same case and seed give the same plan for every implementation,
so both face the same faults on the same members at the same offsets from stability.

Member names: the initial members are ``m0`` .. ``m{N-1}``; members that join later are ``j0``,
``j1``, ... A member that is restarted keeps its name (and, with static membership, its instance id).
Members chosen by ``select = "random"`` are drawn with ``random.Random(seed)``; ``newest`` / ``oldest``
take the most / least recently started members still present.
"""

from __future__ import annotations

import random
from dataclasses import dataclass, field

from harness.scenario.model import (
    AddPartitions,
    Crash,
    Cut,
    Expire,
    Join,
    Leave,
    Pause,
    RestartBroker,
    RollingRestart,
    Scenario,
)


@dataclass(frozen=True)
class Step:
    """One nemesis action at ``at`` seconds after the group first became stable.

    ``kind`` is one of join, leave, crash, pause, resume, cut, heal, expire, stop_member,
    start_member, add_partitions, restart_broker. ``targets`` are member names; ``target`` says what
    a cut separates the member from (``zookeeper`` or ``broker``); ``value`` carries a partition count
    or a downtime.
    """

    at: float
    kind: str
    targets: tuple[str, ...] = ()
    target: str | None = None
    value: float | None = None
    trigger: bool = True  # a membership/topic change the analysis measures from


@dataclass
class Plan:
    steps: list[Step] = field(default_factory=list)
    initial: list[str] = field(default_factory=list)
    joiners: list[str] = field(default_factory=list)
    # Members some fault hits (they must run in a process of their own), and which need proxies.
    isolated: set[str] = field(default_factory=set)
    proxied: dict[str, set[str]] = field(default_factory=dict)

    @property
    def end(self) -> float:
        """Time of the last step (0 when the timeline is empty)."""
        return max((s.at for s in self.steps), default=0.0)


def make_plan(scenario: Scenario, members: int, seed: int | None = None) -> Plan:
    """Concrete steps for ``scenario`` with ``members`` initial members (see the module docstring)."""
    rng = random.Random(scenario.seed if seed is None else seed)
    present = [f"m{i}" for i in range(members)]  # in start order
    plan = Plan(initial=list(present))
    joined = 0

    def choose(count: int, select: str, at: float) -> tuple[str, ...]:
        if count > len(present):
            raise ValueError(f"timeline at {at:g}s wants {count} members but only {len(present)} are present")
        if select == "newest":
            chosen = present[-count:]
        elif select == "oldest":
            chosen = present[:count]
        else:
            chosen = rng.sample(present, count)
        return tuple(chosen)

    for action in sorted(scenario.timeline, key=lambda a: a.at):
        at = action.at
        if isinstance(action, Join):
            names = tuple(f"j{joined + i}" for i in range(action.count))
            joined += action.count
            present.extend(names)
            plan.joiners.extend(names)
            plan.steps.append(Step(at, "join", names))
        elif isinstance(action, Leave):
            names = choose(action.count, action.select, at)
            for n in names:
                present.remove(n)
            plan.steps.append(Step(at, "leave", names))
        elif isinstance(action, Crash):
            names = choose(action.count, action.select, at)
            for n in names:
                present.remove(n)
            plan.isolated.update(names)
            plan.steps.append(Step(at, "crash", names))
        elif isinstance(action, Pause):
            names = choose(action.count, action.select, at)
            plan.isolated.update(names)
            plan.steps.append(Step(at, "pause", names, value=action.duration))
            plan.steps.append(Step(at + action.duration, "resume", names, trigger=False))
        elif isinstance(action, Cut):
            names = choose(action.count, action.select, at)
            plan.isolated.update(names)
            for n in names:
                plan.proxied.setdefault(n, set()).add(action.target)
            plan.steps.append(Step(at, "cut", names, target=action.target, value=action.duration))
            plan.steps.append(Step(at + action.duration, "heal", names, target=action.target, trigger=False))
        elif isinstance(action, Expire):
            names = choose(action.count, action.select, at)
            plan.steps.append(Step(at, "expire", names))
        elif isinstance(action, RollingRestart):
            t = at
            for n in list(present):
                plan.isolated.add(n)
                plan.steps.append(Step(t, "stop_member", (n,)))
                # the restart is the second half of a compound window that the stop opened
                plan.steps.append(Step(t + action.downtime, "start_member", (n,), trigger=False))
                t += action.interval
        elif isinstance(action, AddPartitions):
            plan.steps.append(Step(at, "add_partitions", value=float(action.to)))
        elif isinstance(action, RestartBroker):
            plan.steps.append(Step(at, "restart_broker", value=action.downtime))
    plan.steps.sort(key=lambda s: s.at)
    return plan


def check_spacing(plan: Plan, settle_window: float) -> None:
    """Refuse a plan whose triggers the analysis cannot measure apart: two triggers closer than the
    settle window (a trigger's window ends at the next one, so the first could never settle). A
    compound action (a rolling restart: stop, then its restart inside the stop's window) has one
    trigger per member, so its own restart does not count. Raises ``ValueError`` naming both."""
    triggers = [s for s in plan.steps if s.trigger]
    for a, b in zip(triggers, triggers[1:], strict=False):
        if b.at - a.at < settle_window:
            raise ValueError(
                f"triggers {a.kind} at {a.at:g}s and {b.kind} at {b.at:g}s are {b.at - a.at:g}s apart, "
                f"less than the settle window ({settle_window:g}s): the first could never be measured as "
                "settled; space them further apart or shorten settle_window"
            )
