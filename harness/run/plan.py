"""The nemesis plan: a scenario's timeline turned into concrete actions on named members.

Pure: no processes, no clocks. The same case and seed give the same plan for every implementation,
so both face the same faults on the same members at the same offsets from stability.
:func:`make_plan` of a repetition first moves its timeline entries by seeded offsets (``timeline_jitter``,
:func:`jittered`). A fault that lasts (``pause``, ``stall``, ``cut``, a toxic, a coordinator or ZooKeeper
fault) is two steps: the fault at its time and, its ``duration`` / ``downtime`` later, the step the action
registry says ends it (:func:`harness.kernel.actions.ending`).

Member names: the initial members are ``m0`` .. ``m{N-1}``; members that join later are ``j0``,
``j1``, ... A member that is restarted keeps its name (and, with static membership, its instance id).
Members chosen by ``select = "random"`` are drawn with ``random.Random(seed)``; ``newest`` / ``oldest``
take the most / least recently started members still present.

Migration (legacy_zk units only, :data:`harness.scenario.model.MIGRATION_ACTIONS`): the planner tracks
the kind of every present member (``legacy_zk`` or ``coordinator``; the initial members and joiners are
the unit's implementation, legacy_zk). ``set_property`` is a rolling restart of the present legacy
members, each started again with ``props`` = the properties of every set_property so far (a later one
overriding an earlier one). ``switch`` replaces the present legacy members by coordinator members
``c0``, ``c1``, ... (one counter per unit); ``rollback`` replaces the present coordinator members by
legacy members ``r0``, ``r1``, ... with the set_property properties so far plus its own. The classic-to-consumer
migration (coordinator units, :func:`harness.scenario.model.is_protocol_migration`; the unit's members are then
``coordinator``): ``switch`` with ``to = "consumer"`` replaces the present coordinator (classic-protocol)
members by members of kind ``consumer`` (the same client with ``group.protocol=consumer``, started as a consumer
unit's members are) ``k0``, ``k1``, ...; ``rollback`` with ``to = "coordinator"`` the present consumer members by
coordinator members ``r0``, ``r1``, ...; the start steps carry the kind as ``member_kind``. ``all_at_once``:
one ``stop_member`` of all of them (a trigger), then after ``downtime`` one ``start_member`` of all the
replacements; ``rolling``: per member a stop (a trigger) and its replacement's start ``downtime`` later,
``interval`` apart. Every step of such an action carries ``migration`` (its name) and ``migration_step``
(its 1-based index among the unit's migration actions). ``leave``, ``crash``, ... afterwards choose among
the present members of either kind. A migration action with no member of the kind it replaces present is
a ``ValueError`` naming the action and its time.
"""

from __future__ import annotations

import random
from dataclasses import dataclass, field

from harness.faults.steps import (
    CoordinatorFault,
    CutFault,
    Label,
    Membership,
    ProcessFault,
    Step,
    TopicChange,
    ToxicFault,
    ZooKeeperFault,
)
from harness.kernel.actions import ending
from harness.scenario.model import (
    AddPartitions,
    Crash,
    Cut,
    CutBrokerZk,
    CutCoordinator,
    Expire,
    Join,
    KillCoordinator,
    KillZkLeader,
    Leave,
    Pause,
    PauseCoordinator,
    PauseZkLeader,
    RestartBroker,
    RestartZk,
    Rollback,
    RollingRestart,
    Scenario,
    SetProperty,
    Stall,
    Switch,
    ToxicAction,
    is_protocol_migration,
    property_string,
)

LEGACY, COORDINATOR, CONSUMER = "legacy_zk", "coordinator", "consumer"


@dataclass
class Plan:
    steps: list[Step] = field(default_factory=list)
    initial: list[str] = field(default_factory=list)
    joiners: list[str] = field(default_factory=list)
    # Members some fault hits (they must run in a process of their own), and which need proxies.
    isolated: set[str] = field(default_factory=set)
    proxied: dict[str, set[str]] = field(default_factory=dict)
    # The kind of every member present after the last step (None: the unit's implementation).
    final_kinds: dict[str, str | None] = field(default_factory=dict)

    @property
    def end(self) -> float:
        """Time of the last step (0 when the timeline is empty)."""
        return max((s.at for s in self.steps), default=0.0)


def jittered(scenario: Scenario, repetition: int) -> Scenario:
    """``scenario`` with the timeline entries of repetition ``repetition`` moved later by offsets drawn
    uniformly from ``[0, timeline_jitter)``, one per distinct ``at`` (``random.Random`` seeded by the
    scenario's seed and the repetition: the same offsets for every implementation and case);
    ``scenario`` itself when the jitter is 0."""
    if not scenario.timeline_jitter:
        return scenario
    rng = random.Random(f"{scenario.seed}/{repetition}")
    # entries at the same time keep it: one offset per distinct time, drawn in time order
    offset = {
        at: rng.uniform(0.0, scenario.timeline_jitter) for at in sorted({a.at for a in scenario.timeline})
    }
    timeline = [a.model_copy(update={"at": a.at + offset[a.at]}) for a in scenario.timeline]
    return scenario.model_copy(update={"timeline": timeline})


def make_plan(
    scenario: Scenario, members: int, seed: int | None = None, repetition: int | None = None
) -> Plan:
    """Concrete steps for ``scenario`` with ``members`` initial members (see the module docstring); of
    repetition ``repetition`` when given (its timeline :func:`jittered`), of the unmoved timeline
    otherwise."""
    if repetition is not None:
        scenario = jittered(scenario, repetition)
    rng = random.Random(scenario.seed if seed is None else seed)
    present = [f"m{i}" for i in range(members)]  # in start order
    plan = Plan(initial=list(present))
    joined = 0
    # None = the unit's implementation: legacy_zk wherever a legacy migration action may appear, coordinator
    # where a protocol migration may (the model)
    kinds: dict[str, str | None] = dict.fromkeys(present)
    unit_kind = COORDINATOR if any(is_protocol_migration(a) for a in scenario.timeline) else LEGACY
    props: dict[str, str] = {}  # every set_property so far
    replaced = {"c": 0, "k": 0, "r": 0}
    migrations = 0

    def of_kind(kind: str) -> list[str]:
        return [n for n in present if (kinds[n] or unit_kind) == kind]

    def replace(action: Switch | Rollback, step: int, props_of_new: dict[str, str]) -> None:
        if isinstance(action, Switch):
            old, new, prefix = (
                (COORDINATOR, CONSUMER, "k") if action.to == CONSUMER else (LEGACY, COORDINATOR, "c")
            )
        else:
            old, new, prefix = (
                (CONSUMER, COORDINATOR, "r") if action.to == COORDINATOR else (COORDINATOR, LEGACY, "r")
            )
        going = of_kind(old)
        if not going:
            raise ValueError(f"{action.action} at {action.at:g}s: no {old} member is present to replace")
        names = tuple(f"{prefix}{replaced[prefix] + i}" for i in range(len(going)))
        replaced[prefix] += len(going)
        label = Label(action.action, step, action.mode)
        new_props = tuple(props_of_new.items()) if new == LEGACY else ()
        pairs = (
            [(tuple(going), names)]
            if action.mode == "all_at_once"
            else list(zip([(n,) for n in going], [(n,) for n in names], strict=True))
        )
        t = action.at
        for stopped, started in pairs:
            plan.isolated.update(stopped)
            plan.steps.append(Step(t, Membership("stop_member", stopped, migration=label)))
            plan.steps.append(
                Step(t + action.downtime, Membership("start_member", started, new, new_props, label))
            )
            t += action.interval
        for n in going:
            present.remove(n)
            del kinds[n]
        for n in names:
            present.append(n)
            kinds[n] = new

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
            kinds.update(dict.fromkeys(names))
            plan.joiners.extend(names)
            plan.steps.append(Step(at, Membership("join", names)))
        elif isinstance(action, Leave):
            names = choose(action.count, action.select, at)
            for n in names:
                present.remove(n)
                del kinds[n]
            plan.steps.append(Step(at, Membership("leave", names)))
        elif isinstance(action, Crash):
            names = choose(action.count, action.select, at)
            for n in names:
                present.remove(n)
                del kinds[n]
            plan.isolated.update(names)
            plan.steps.append(Step(at, Membership("crash", names)))
        elif isinstance(action, Pause | Stall):
            names = choose(action.count, action.select, at)
            plan.isolated.update(names)
            plan.steps.append(Step(at, ProcessFault(action.action, names, action.duration)))
            plan.steps.append(Step(at + action.duration, ProcessFault(ending(action.action), names)))
        elif isinstance(action, Cut):
            names = choose(action.count, action.select, at)
            plan.isolated.update(names)
            for n in names:
                plan.proxied.setdefault(n, set()).add(action.target)
            plan.steps.append(Step(at, CutFault("cut", names, action.target, action.duration)))
            plan.steps.append(
                Step(at + action.duration, CutFault(ending(action.action), names, action.target))
            )
        elif isinstance(action, Expire):
            names = choose(action.count, action.select, at)
            plan.steps.append(Step(at, ProcessFault("expire", names)))
        elif isinstance(action, RollingRestart):
            t = at
            for n in list(present):
                plan.isolated.add(n)
                plan.steps.append(Step(t, Membership("stop_member", (n,))))
                # the restart is the second half of a compound window that the stop opened
                plan.steps.append(Step(t + action.downtime, Membership("start_member", (n,))))
                t += action.interval
        elif isinstance(action, AddPartitions):
            plan.steps.append(Step(at, TopicChange("add_partitions", action.to)))
        elif isinstance(action, RestartBroker):
            plan.steps.append(Step(at, CoordinatorFault("restart_broker", action.downtime)))
        elif isinstance(action, KillZkLeader):
            plan.steps.append(Step(at, ZooKeeperFault("kill_zk_leader", action.downtime)))
            plan.steps.append(Step(at + action.downtime, ZooKeeperFault(ending(action.action))))
        elif isinstance(action, PauseZkLeader):
            plan.steps.append(Step(at, ZooKeeperFault("pause_zk_leader", action.duration)))
            plan.steps.append(Step(at + action.duration, ZooKeeperFault(ending(action.action))))
        elif isinstance(action, KillCoordinator):
            plan.steps.append(Step(at, CoordinatorFault("kill_coordinator", action.downtime)))
            plan.steps.append(Step(at + action.downtime, CoordinatorFault(ending(action.action))))
        elif isinstance(action, PauseCoordinator):
            plan.steps.append(Step(at, CoordinatorFault("pause_coordinator", action.duration)))
            plan.steps.append(Step(at + action.duration, CoordinatorFault(ending(action.action))))
        elif isinstance(action, CutCoordinator):
            plan.steps.append(Step(at, CoordinatorFault("cut_coordinator", action.duration)))
            plan.steps.append(Step(at + action.duration, CoordinatorFault(ending(action.action))))
        elif isinstance(action, ToxicAction):
            names = choose(action.count, action.select, at)
            plan.isolated.update(names)
            for n in names:
                plan.proxied.setdefault(n, set()).add(action.target)
            toxic = action.toxic_attributes()
            plan.steps.append(
                Step(at, ToxicFault(action.action, names, action.target, toxic, action.duration))
            )
            plan.steps.append(
                Step(at + action.duration, ToxicFault(ending(action.action), names, action.target, toxic))
            )
        elif isinstance(action, RestartZk):
            servers = scenario.zookeeper.servers
            server = rng.randrange(servers) if action.server == "random" else action.server
            plan.steps.append(Step(at, ZooKeeperFault("restart_zk", action.downtime, server=server)))
        elif isinstance(action, CutBrokerZk):
            broker = action.broker
            plan.steps.append(Step(at, ZooKeeperFault("cut_broker_zk", action.duration, broker_id=broker)))
            plan.steps.append(
                Step(at + action.duration, ZooKeeperFault(ending(action.action), broker_id=broker))
            )
        elif isinstance(action, SetProperty):
            migrations += 1
            going = of_kind(LEGACY)
            if not going:
                raise ValueError(f"set_property at {at:g}s: no legacy_zk member is present to restart")
            props.update({k: property_string(v) for k, v in action.properties.items()})
            label = Label(action.action, migrations)
            t = at
            for n in going:
                plan.isolated.add(n)
                plan.steps.append(Step(t, Membership("stop_member", (n,), migration=label)))
                start = Membership("start_member", (n,), LEGACY, tuple(props.items()), label)
                plan.steps.append(Step(t + action.downtime, start))
                t += action.interval
        elif isinstance(action, Switch):
            migrations += 1
            replace(action, migrations, {})
        elif isinstance(action, Rollback):
            migrations += 1
            own = {k: property_string(v) for k, v in action.properties.items()}
            replace(action, migrations, {**props, **own})
    plan.steps.sort(key=lambda s: s.at)
    plan.final_kinds = dict(kinds)
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
