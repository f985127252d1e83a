# pyright: strict
"""The one registry of nemesis actions: every action's spec, from which every vocabulary derives.

Contract
--------
:data:`SPECS` holds one :class:`ActionSpec` per action name: a *step* the nemesis performs (``join``,
``pause``, ``resume``, ...) or a *timeline* entry that the planner expands into steps
(``rolling_restart``, ``set_property``, ``switch``, ``rollback``), or both. A spec says its family,
whether the step is a trigger (a change the analysis measures from), which step ends it, which
implementations it applies to (the others record it as ``skipped``), the fields its ``invoke`` /
``complete`` pair carries beyond the common ones, and whether the random nemesis may draw it and the
simulator performs it.

The history contract (:data:`harness.kernel.events.ACTIONS` and its groups), the scenario model's
tuples, the random nemesis, the nemesis registry, the simulator, the toxic kinds, the planner (the step
that ends each fault, :func:`ending`) and the failover analysis take their lists from here; a test
checks that the scenario model's typed tags and the nemesis classes cover exactly these names.

A stall
-------
``stall`` (ended by ``unstall``, coordinator members only: a ZooKeeper-era member has no poll timer) makes
a member's processing stop while its client's background machinery (the heartbeat) goes on, as a slow
record handler would. Its effect is ``suspends``, as a pause's: the stalled member is not live from the
stall's ``complete`` until the unstall's. Why, from the definitions (docs/concepts.md): a live member is
one that acts for the group, and a stalled one processes nothing; its ownership ends only when the
client's poll timer (``max.poll.interval.ms``) makes it leave, which most clients report (``revoked``,
lost) only when the member polls again, after the unstall (aiokafka at the leave: its rebalance listener
runs on the member's event loop, which a stall keeps running). Were it live, its stale claims would double
the partitions the group hands to the others, so "settled" could not be reached before the unstall and
the stall's own rebalance could never be measured; not live, the window settles once the others own
every partition. From the unstall it is live again with the claims it still believes in (the zombie the
split-brain checks look for) until its first poll reports them revoked. As for a pause, a member's
processing intervals close at the stall's ``complete``. The stall is a trigger: the rebalance its poll
timer causes falls in its window. A stall shorter than the poll timer, or of a client that has none, draws
no reaction from the others: ``no_effect``.
"""

from __future__ import annotations

import signal
from dataclasses import dataclass
from typing import Literal

__all__ = [
    "ACTIONS",
    "COORDINATOR_END_ACTIONS",
    "COORDINATOR_FAULT_ACTIONS",
    "DOWN_ACTIONS",
    "JOIN_ACTIONS",
    "MIGRATION_ACTIONS",
    "RANDOM_ACTIONS",
    "SIMULATED_ACTIONS",
    "SPECS",
    "STALL_SIGNAL",
    "SUSPEND_ACTIONS",
    "TIMELINE_ACTIONS",
    "TOXIC_ACTIONS",
    "UNSTALL_SIGNAL",
    "UNSUSPEND_ACTIONS",
    "ActionSpec",
    "Effect",
    "Family",
    "ending",
    "spec",
]

#: What an action acts on: the group's membership, a member's process, a member's network (a cut or a
#: toxic on its proxies), ZooKeeper, the broker that coordinates the group, a broker, the topic, or a
#: migration between the implementations (timeline entries expanded into membership steps).
Family = Literal[
    "membership", "process", "cut", "toxic", "zookeeper", "coordinator", "broker", "topic", "migration"
]

#: What a step's ``complete`` does to its targets' membership of the group: ``joins`` (a new process;
#: its t0 is the process's ``ready``), ``down`` (no longer acts for the group: not live) or ``suspends``
#: (frozen, cut off or stalled: not live until the step that ends the fault, its ``ended_by``, completes).
Effect = Literal["joins", "down", "suspends"]

LEGACY_ZK, COORDINATOR, CONSUMER = "legacy_zk", "coordinator", "consumer"
#: Every implementation; a consumer unit's members are coordinator-kind, so every coordinator fault applies
#: to it as to a coordinator unit.
_ALL = (LEGACY_ZK, COORDINATOR, CONSUMER)

#: What a ``stall`` / ``unstall`` sends to each target's member process itself (not its process group):
#: the member's command stalls its poll loop, or tells its child program to. SIGUSR1 otherwise reaches
#: only legacy_zk members (their quiesce before a teardown), which a stall never targets.
STALL_SIGNAL, UNSTALL_SIGNAL = signal.SIGUSR2, signal.SIGUSR1


@dataclass(frozen=True)
class ActionSpec:
    """One action (see the module contract).

    ``step``: the nemesis performs it as a planned step; ``timeline``: a scenario timeline entry names
    it. ``trigger``: as a step, a trigger. ``ended_by``: the step that ends the fault it starts (None:
    it ends by itself). ``applies_to``: the implementations it means something for (others skip it).
    ``fields``: the pair's fields beyond the common ones (``action``, ``action_id``, ``targets``,
    ``target``, ``value``, ``trigger``). ``random``: a random nemesis may draw it. ``simulated``: the
    simulator performs it (others are recorded ``skipped``, "not simulated"). As a timeline entry:
    ``chooses``: it hits chosen members (``count``, ``select``); ``length``: the key of its length
    (``duration`` or ``downtime``; None: it has none). ``effect``: what the step's ``complete`` does to
    its targets (:data:`Effect`; None: nothing the liveness of members follows).
    """

    name: str
    family: Family
    step: bool = True
    timeline: bool = True
    trigger: bool = True
    ended_by: str | None = None
    applies_to: tuple[str, ...] = _ALL
    fields: tuple[str, ...] = ()
    random: bool = False
    simulated: bool = False
    chooses: bool = False
    length: Literal["duration", "downtime"] | None = None
    effect: Effect | None = None


_TOXIC_FIELDS = ("toxic",)
_MIGRATION_FIELDS = ("member_kind", "props", "migration", "migration_step", "mode")
_COORDINATOR_FIELDS = ("broker_id", "offsets_partition", "group")


def _end(name: str, family: Family, applies_to: tuple[str, ...] = _ALL) -> ActionSpec:
    """The step that ends a fault: not a trigger, never a timeline entry of its own."""
    return ActionSpec(name, family, timeline=False, trigger=False, applies_to=applies_to)


def _toxic(name: str) -> ActionSpec:
    return ActionSpec(
        name,
        "toxic",
        ended_by="remove_toxic",
        fields=_TOXIC_FIELDS,
        random=True,
        chooses=True,
        length="duration",
    )


_ONLY_COORDINATOR = (COORDINATOR, CONSUMER)

#: Every action, in the order of the history contract.
SPECS: tuple[ActionSpec, ...] = (
    ActionSpec("join", "membership", random=True, simulated=True, effect="joins"),
    ActionSpec("leave", "membership", random=True, simulated=True, chooses=True, effect="down"),
    ActionSpec("crash", "membership", random=True, simulated=True, chooses=True, effect="down"),
    ActionSpec(
        "pause", "process", ended_by="resume", random=True, chooses=True, length="duration", effect="suspends"
    ),
    _end("resume", "process"),
    # the poll timer's fault: see "A stall" in the module contract
    ActionSpec(
        "stall",
        "process",
        ended_by="unstall",
        applies_to=_ONLY_COORDINATOR,
        chooses=True,
        length="duration",
        effect="suspends",
    ),
    _end("unstall", "process", _ONLY_COORDINATOR),
    ActionSpec(
        "cut", "cut", ended_by="heal", random=True, chooses=True, length="duration", effect="suspends"
    ),
    _end("heal", "cut"),
    ActionSpec("expire", "process", applies_to=(LEGACY_ZK,), random=True, chooses=True),
    ActionSpec(
        "stop_member", "membership", timeline=False, fields=_MIGRATION_FIELDS, simulated=True, effect="down"
    ),
    ActionSpec(
        "start_member",
        "membership",
        timeline=False,
        trigger=False,
        fields=_MIGRATION_FIELDS,
        simulated=True,
        effect="joins",
    ),
    ActionSpec("add_partitions", "topic", fields=("partitions",)),
    ActionSpec("restart_broker", "broker", random=True, length="downtime"),
    ActionSpec("kill_zk_leader", "zookeeper", ended_by="restart_zk_server", random=True, length="downtime"),
    _end("restart_zk_server", "zookeeper"),
    ActionSpec("pause_zk_leader", "zookeeper", ended_by="resume_zk_server", random=True, length="duration"),
    _end("resume_zk_server", "zookeeper"),
    ActionSpec(
        "kill_coordinator",
        "coordinator",
        ended_by="restart_coordinator",
        applies_to=_ONLY_COORDINATOR,
        fields=_COORDINATOR_FIELDS,
        random=True,
        length="downtime",
    ),
    _end("restart_coordinator", "coordinator", _ONLY_COORDINATOR),
    ActionSpec(
        "pause_coordinator",
        "coordinator",
        ended_by="resume_coordinator",
        applies_to=_ONLY_COORDINATOR,
        fields=_COORDINATOR_FIELDS,
        random=True,
        length="duration",
    ),
    _end("resume_coordinator", "coordinator", _ONLY_COORDINATOR),
    ActionSpec(
        "cut_coordinator",
        "coordinator",
        ended_by="heal_coordinator",
        applies_to=_ONLY_COORDINATOR,
        fields=_COORDINATOR_FIELDS,
        random=True,
        length="duration",
    ),
    _end("heal_coordinator", "coordinator", _ONLY_COORDINATOR),
    _toxic("latency"),
    _toxic("bandwidth"),
    _toxic("reset_peer"),
    _toxic("slow_close"),
    _toxic("timeout"),
    _toxic("limit_data"),
    ActionSpec("remove_toxic", "toxic", timeline=False, trigger=False, fields=_TOXIC_FIELDS),
    ActionSpec("restart_zk", "zookeeper", fields=("server",), random=True, length="downtime"),
    ActionSpec(
        "cut_broker_zk",
        "zookeeper",
        ended_by="heal_broker_zk",
        fields=("broker_id",),
        random=True,
        length="duration",
    ),
    ActionSpec("heal_broker_zk", "zookeeper", timeline=False, trigger=False, fields=("broker_id",)),
    # timeline entries the planner expands into stop_member / start_member steps
    ActionSpec("rolling_restart", "membership", step=False, length="downtime"),
    ActionSpec("set_property", "migration", step=False, applies_to=(LEGACY_ZK,), length="downtime"),
    ActionSpec("switch", "migration", step=False, applies_to=(LEGACY_ZK,), length="downtime"),
    ActionSpec("rollback", "migration", step=False, applies_to=(LEGACY_ZK,), length="downtime"),
)

_BY_NAME = {s.name: s for s in SPECS}


def spec(name: str) -> ActionSpec:
    """The spec of action ``name``; ``KeyError`` naming it when there is none."""
    try:
        return _BY_NAME[name]
    except KeyError:
        raise KeyError(f"unknown nemesis action {name!r}") from None


def ending(name: str) -> str:
    """The step that ends the fault action ``name`` starts (its spec's ``ended_by``); ``KeyError`` for an
    unknown action, ``ValueError`` for one that ends by itself."""
    end = spec(name).ended_by
    if end is None:
        raise ValueError(f"nemesis action {name!r} ends by itself: no step ends it")
    return end


#: The steps the nemesis performs (the ``action`` of invoke / complete / skipped events).
ACTIONS = tuple(s.name for s in SPECS if s.step)
#: The actions a scenario's timeline may name.
TIMELINE_ACTIONS = tuple(s.name for s in SPECS if s.timeline)
#: The degraded-network actions of the timeline (toxiproxy's toxic names).
TOXIC_ACTIONS = tuple(s.name for s in SPECS if s.family == "toxic" and s.timeline)
#: The coordinator-side faults (triggers) and the steps that end them.
COORDINATOR_FAULT_ACTIONS = tuple(s.name for s in SPECS if s.family == "coordinator" and s.trigger)
COORDINATOR_END_ACTIONS = tuple(s.ended_by for s in SPECS if s.family == "coordinator" and s.ended_by)
#: Timeline actions of a migration (the ``migration`` field of nemesis events).
MIGRATION_ACTIONS = tuple(s.name for s in SPECS if s.family == "migration")
#: Actions a ``[[nemesis]] kind = "random"`` schedule may draw.
RANDOM_ACTIONS = tuple(s.name for s in SPECS if s.random)
#: The steps the simulator performs (every other one is recorded skipped, "not simulated").
SIMULATED_ACTIONS = tuple(s.name for s in SPECS if s.simulated)
#: Steps after whose ``complete`` the targets are new processes (t0 is the process's ``ready``).
JOIN_ACTIONS = tuple(s.name for s in SPECS if s.effect == "joins")
#: Steps after whose ``complete`` a target no longer acts for the group (not live).
DOWN_ACTIONS = tuple(s.name for s in SPECS if s.effect == "down")
#: Steps after whose ``complete`` a target is suspended (not live) until the step that ends them
#: (:data:`UNSUSPEND_ACTIONS`).
SUSPEND_ACTIONS = tuple(s.name for s in SPECS if s.effect == "suspends")
UNSUSPEND_ACTIONS = tuple(s.ended_by for s in SPECS if s.effect == "suspends" and s.ended_by)
