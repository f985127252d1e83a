# pyright: strict
"""A planned step: its time plus one operation, a small frozen type per action family.

Contract
--------
:class:`Step` is ``at`` (seconds after the group first became stable) and ``op``, one of
:data:`Operation`: :class:`Membership` (join, leave, crash, stop_member, start_member; a migration's
steps carry its :class:`Label`), :class:`ProcessFault` (pause, resume, stall, unstall, expire),
:class:`CutFault` (cut, heal), :class:`ToxicFault` (a toxic and remove_toxic), :class:`ZooKeeperFault`
(the ensemble's leader, a server's restart, a broker's cut from ZooKeeper), :class:`CoordinatorFault`
(the broker that coordinates the group, and restart_broker) and :class:`TopicChange` (add_partitions). Each
operation's ``kind`` is an action of :mod:`harness.kernel.actions` of its family; whether the step is
a trigger comes from that registry, not from the step.

The read-only views (:attr:`Step.kind`, :attr:`Step.targets`, ... :attr:`Step.extra`) are the fields
of the step's ``invoke`` / ``complete`` pair (:class:`harness.faults.nemesis.ActionPair`), the same
for every family; :meth:`Step.of` builds a step from those flat fields (tests, and tools that read a
pair back).
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

from harness.kernel.actions import spec

__all__ = [
    "CoordinatorFault",
    "CutFault",
    "Label",
    "Membership",
    "Operation",
    "ProcessFault",
    "Step",
    "TopicChange",
    "ToxicFault",
    "ZooKeeperFault",
]


@dataclass(frozen=True)
class Label:
    """The migration action a step belongs to: its name, 1-based index among the unit's, and for a
    switch or rollback its mode (all_at_once | rolling)."""

    name: str
    step: int
    mode: str | None = None


@dataclass(frozen=True)
class Membership:
    """A member joins, leaves, crashes, is stopped or started. ``member_kind``: the kind a
    start_member starts (None: the unit's implementation, or what the member was before); ``props``:
    (0.8 property, string value) pairs a started legacy member gets on top of the scenario's."""

    kind: str
    targets: tuple[str, ...]
    member_kind: str | None = None
    props: tuple[tuple[str, str], ...] = ()
    migration: Label | None = None


@dataclass(frozen=True)
class ProcessFault:
    """A member's process paused or its processing stalled (``duration`` s), the fault's end (resumed,
    unstalled), or its ZooKeeper session expired."""

    kind: str
    targets: tuple[str, ...]
    duration: float | None = None


@dataclass(frozen=True)
class CutFault:
    """Members' proxies to ``target`` (zookeeper | broker) cut for ``duration`` s, or healed."""

    kind: str
    targets: tuple[str, ...]
    target: str
    duration: float | None = None


@dataclass(frozen=True)
class ToxicFault:
    """A toxic (its kind, stream and attributes: ``toxic``) on members' proxies to ``target`` for
    ``duration`` s, or removed (``remove_toxic``)."""

    kind: str
    targets: tuple[str, ...]
    target: str
    toxic: Mapping[str, Any]
    duration: float | None = None


@dataclass(frozen=True)
class ZooKeeperFault:
    """A fault of ZooKeeper: its leader killed or paused (``value``: downtime or duration) and the
    fault's end, server ``server`` restarted after ``value`` s, broker ``broker_id`` cut from it."""

    kind: str
    value: float | None = None
    server: int | None = None
    broker_id: int | None = None


@dataclass(frozen=True)
class CoordinatorFault:
    """The broker that coordinates the group killed, paused or cut from ZooKeeper (``value``: downtime
    or duration) and each fault's end; ``restart_broker``: broker 0 down for ``value`` s."""

    kind: str
    value: float | None = None


@dataclass(frozen=True)
class TopicChange:
    """The topic grown to ``partitions`` partitions."""

    kind: str
    partitions: int


Operation = (
    Membership | ProcessFault | CutFault | ToxicFault | ZooKeeperFault | CoordinatorFault | TopicChange
)


@dataclass(frozen=True)
class Step:
    """One planned action at ``at`` seconds after stability (see the module contract)."""

    at: float
    op: Operation = field()

    @property
    def kind(self) -> str:
        return self.op.kind

    @property
    def trigger(self) -> bool:
        """A membership or topic change, or a fault's start: the analysis measures from it."""
        return spec(self.op.kind).trigger

    @property
    def targets(self) -> tuple[str, ...]:
        op = self.op
        return op.targets if isinstance(op, Membership | ProcessFault | CutFault | ToxicFault) else ()

    @property
    def target(self) -> str | None:
        """What a cut or a toxic separates the members from (zookeeper | broker)."""
        return self.op.target if isinstance(self.op, CutFault | ToxicFault) else None

    @property
    def value(self) -> float | None:
        """A fault's duration or downtime, or the partition count of a topic change."""
        op = self.op
        if isinstance(op, ProcessFault | CutFault | ToxicFault):
            return op.duration
        if isinstance(op, ZooKeeperFault | CoordinatorFault):
            return op.value
        if isinstance(op, TopicChange):
            return float(op.partitions)
        return None

    @property
    def member_kind(self) -> str | None:
        return self.op.member_kind if isinstance(self.op, Membership) else None

    @property
    def props(self) -> tuple[tuple[str, str], ...]:
        return self.op.props if isinstance(self.op, Membership) else ()

    @property
    def label(self) -> Label | None:
        return self.op.migration if isinstance(self.op, Membership) else None

    @property
    def migration(self) -> str | None:
        return self.label.name if self.label else None

    @property
    def migration_step(self) -> int | None:
        return self.label.step if self.label else None

    @property
    def mode(self) -> str | None:
        return self.label.mode if self.label else None

    @property
    def extra(self) -> tuple[tuple[str, Any], ...]:
        """The family's own fields both events of the pair carry (``toxic``, ``server``, ``broker_id``)."""
        op = self.op
        if isinstance(op, ToxicFault):
            return (("toxic", dict(op.toxic)),)
        if isinstance(op, ZooKeeperFault):
            fields = (("server", op.server), ("broker_id", op.broker_id))
            return tuple((k, v) for k, v in fields if v is not None)
        return ()

    @classmethod
    def of(
        cls,
        at: float,
        kind: str,
        targets: tuple[str, ...] = (),
        target: str | None = None,
        value: float | None = None,
        member_kind: str | None = None,
        props: tuple[tuple[str, str], ...] = (),
        migration: str | None = None,
        migration_step: int | None = None,
        mode: str | None = None,
        extra: Mapping[str, Any] | None = None,
    ) -> Step:
        """The step of action ``kind`` from a pair's flat fields (``KeyError`` for an unknown action)."""
        family = spec(kind).family
        more = dict(extra or {})
        op: Operation
        if family in ("membership", "migration"):
            label = Label(migration, migration_step or 0, mode) if migration else None
            op = Membership(kind, targets, member_kind, props, label)
        elif family == "process":
            op = ProcessFault(kind, targets, value)
        elif family == "cut":
            op = CutFault(kind, targets, target or "", value)
        elif family == "toxic":
            op = ToxicFault(kind, targets, target or "", more.get("toxic", {}), value)
        elif family == "zookeeper":
            op = ZooKeeperFault(kind, value, more.get("server"), more.get("broker_id"))
        elif family == "topic":
            op = TopicChange(kind, int(value or 0))
        else:
            op = CoordinatorFault(kind, value)
        return cls(at, op)
