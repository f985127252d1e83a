# pyright: strict
"""The nemesis: what one fault action needs, and how it records itself in the history.

Contract
--------
* A :class:`Nemesis` carries out one kind of planned action (``join``, ``crash``, ``cut``, ... the
  names of :data:`harness.kernel.events.ACTIONS`). :meth:`Nemesis.applicable` says, from the
  implementation alone, whether the action means anything there: ``None`` when it applies, else the
  reason it is skipped (a ZooKeeper cut of a coordinator member, say).
* :meth:`Nemesis.run` performs one step as a pair of events (``harness.kernel.events``): ``invoke``
  just before acting, then ``complete`` once the action was seen to take effect (with the effect's
  fields, e.g. ``ready_ns`` of a join), or ``skipped`` with a ``reason`` (not applicable, or a
  :class:`Skip` raised while acting, e.g. an expiry of a member with no ZooKeeper session yet).
  A :class:`ActionFailed` (the effect never took place in time) leaves the pair open and ends the unit.
* Everything a nemesis touches comes through a :class:`NemesisContext` (members, cluster, proxies,
  waiting on what the histories show); nothing here knows the runner. The context's types are
  structural (Protocols), so unit tests drive a nemesis with fakes.

This package sits below :mod:`harness.run`: it imports only :mod:`harness.kernel` of ours (and itself).
"""

from __future__ import annotations

import logging
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, ClassVar, Protocol

from harness.faults.steps import Step
from harness.faults.toxics import Toxic
from harness.kernel.errors import HerdlabError
from harness.kernel.events import Kind
from harness.kernel.history import History

log = logging.getLogger("harness.run")

#: Implementation names a nemesis distinguishes (the run's columns).
LEGACY_ZK, COORDINATOR = "legacy_zk", "coordinator"


class Skip(Exception):
    """Raised while acting: the action does not apply here after all (the message is the reason)."""


class ActionFailed(HerdlabError):
    """The action's effect did not take place (e.g. a joiner never became ready): the unit fails."""


class MemberProcess(Protocol):
    """A running member as a nemesis drives it (:class:`harness.run.launch.MemberHandle`)."""

    def alive(self) -> bool: ...

    def signal(self, sig: int, group: bool = True) -> None: ...

    def wait(self, timeout: float | None = None) -> int | None: ...

    def stop(self, grace: float = 5.0) -> None: ...


class ClusterControl(Protocol):
    """The part of :class:`harness.cluster.base.Cluster` a nemesis uses; the faults beyond a broker's
    clean restart are what the cluster declares in :meth:`fault_controls`."""

    @property
    def zookeeper_connect(self) -> str: ...
    @property
    def bootstrap(self) -> str: ...

    def stop_broker(self, index: int = 0) -> None: ...

    def start_broker(self, index: int = 0) -> None: ...

    def fault_controls(self) -> FaultControls: ...


class ZooKeeperControl(Protocol):
    """The part of :class:`harness.cluster.zookeeper_ensemble.ZooKeeperEnsemble` a nemesis uses."""

    @property
    def paused(self) -> set[int]: ...
    @property
    def down(self) -> set[int]: ...

    def leader(self) -> int | None: ...

    def kill_server(self, index: int) -> None: ...

    def start_server(self, index: int, timeout: float = ...) -> float: ...

    def pause(self, index: int, timeout: float = ...) -> None: ...

    def resume(self, index: int, timeout: float = ...) -> None: ...


class BrokerControl(Protocol):
    """The broker faults of :class:`harness.cluster.local.LocalCluster` (broker ids are its indexes):
    each call returns once its effect was seen; the sets say which brokers a fault holds now."""

    @property
    def brokers_down(self) -> set[int]: ...
    @property
    def brokers_paused(self) -> set[int]: ...
    @property
    def brokers_cut(self) -> set[int]: ...

    def kill_broker(self, broker_id: int) -> None: ...

    def start_broker(self, index: int = 0) -> None: ...

    def pause_broker(self, broker_id: int, timeout: float = ...) -> None: ...

    def resume_broker(self, broker_id: int, timeout: float = ...) -> None: ...

    def cut_broker_zookeeper(self, broker_id: int) -> None: ...

    def heal_broker_zookeeper(self, broker_id: int) -> None: ...


class ProxyControl(Protocol):
    """The part of :class:`harness.faults.proxy.ProxyHost` a nemesis uses: proxies by name."""

    def cut(self, name: str) -> None: ...

    def restore(self, name: str) -> None: ...


class ToxicControl(ProxyControl, Protocol):
    """The degraded-network part of :class:`harness.faults.proxy.ProxyHost`."""

    def add_toxic(self, name: str, toxic: Toxic) -> None: ...

    def remove_toxic(self, name: str, kind: str) -> None: ...


class ZooKeeperRestart(Protocol):
    """A ZooKeeper that can stop one server and start it again on the same data and ports: the local
    backend's :class:`~harness.cluster.zookeeper.ZooKeeperServer` (index 0) or
    :class:`~harness.cluster.zookeeper_ensemble.ZooKeeperEnsemble`."""

    def stop_server(self, index: int) -> None: ...

    def start_server(self, index: int, timeout: float = ...) -> float: ...


@dataclass(frozen=True)
class FaultControls:
    """The faults a cluster can do, as it declares them (:meth:`ClusterControl.fault_controls`), each
    None when it cannot: its brokers' faults (the local backend's brokers), its ZooKeeper ensemble's
    leader faults (three servers), a restart of one ZooKeeper server on the same data and ports."""

    brokers: BrokerControl | None = None
    ensemble: ZooKeeperControl | None = None
    zookeeper_restart: ZooKeeperRestart | None = None


class NemesisContext(Protocol):
    """What a nemesis may see and touch in one unit.

    ``members`` maps names to the processes started so far (a stopped member stays until restarted).
    ``wait(seconds, until)`` keeps observing the histories for up to ``seconds`` and returns True as
    soon as ``until()`` holds (False on timeout). ``ready_ns(name)`` is the time of the member's
    latest ``ready`` event (0: none yet); ``registration(name)`` its ZooKeeper session
    ``(id, password hex)`` from its latest ``registered`` event, read up to now.
    ``start_member(name, kind, props)`` starts (or restarts) a member of ``kind`` (``legacy_zk`` or
    ``coordinator``; None: what the member was before, else the unit's implementation) in the unit's
    group; a legacy member gets ``props`` (0.8 property -> string) on top of the scenario's settings
    (None: the props it had before, else none).
    ``group`` is the unit's group id; ``coordinator(timeout)`` the id of the broker that coordinates it
    now (FindCoordinator, client id ``herdlab-harness``), None when no broker names one in time.
    """

    impl: str
    unit_key: str
    logs_dir: Path
    stable_timeout: float
    topic: str
    group: str

    @property
    def members(self) -> Mapping[str, MemberProcess]: ...
    @property
    def cluster(self) -> ClusterControl: ...
    @property
    def proxies(self) -> ProxyControl | None: ...

    def start_member(
        self, name: str, kind: str | None = None, props: Mapping[str, str] | None = None
    ) -> None: ...

    def frozen(self, member: MemberProcess) -> bool: ...

    def wait(self, seconds: float, until: Callable[[], bool] | None = None) -> bool: ...

    def ready_ns(self, name: str) -> int: ...

    def registration(self, name: str) -> tuple[int, str] | None: ...

    def time_ns(self) -> int: ...

    def coordinator(self, timeout: float) -> int | None: ...


@dataclass
class ActionPair:
    """The ``invoke`` / ``complete`` | ``skipped`` events of one step (one ``action_id``)."""

    step: Step
    action_id: int
    history: History
    now_ns: Callable[[], int]
    context: Mapping[str, Any] = field(default_factory=dict[str, Any])

    @property
    def fields(self) -> dict[str, Any]:
        """The fields both events of the pair carry (:mod:`harness.kernel.events`); the migration
        fields (``member_kind``, ``props``, ``migration``, ``migration_step``, and a switch's or
        rollback's ``mode``) only when set."""
        s = self.step
        migration: dict[str, Any] = {
            "member_kind": s.member_kind,
            "props": dict(s.props) if s.props else None,
            "migration": s.migration,
            "migration_step": s.migration_step,
            "mode": s.mode,
        }
        return {
            "action": s.kind,
            "action_id": self.action_id,
            "targets": list(s.targets),
            "target": s.target,
            "value": s.value,
            "trigger": s.trigger,
            "partitions": int(s.value) if s.kind == "add_partitions" and s.value else None,
            **{k: v for k, v in migration.items() if v is not None},
            **dict(s.extra),  # toxic, server, broker_id
            **self.context,
        }

    def invoke(self) -> None:
        self.history.emit(Kind.INVOKE, ts_ns=self.now_ns(), **self.fields)

    def complete(self, **effect: Any) -> None:
        self.history.emit(Kind.COMPLETE, ts_ns=self.now_ns(), **self.fields, **effect)

    def skipped(self, reason: str) -> None:
        self.history.emit(Kind.SKIPPED, ts_ns=self.now_ns(), reason=reason, **self.fields)


class Nemesis(Protocol):
    """One kind of action (see the module contract)."""

    action: ClassVar[str]

    def applicable(self, impl: str) -> str | None:
        """None when the action applies to ``impl``; else why it is skipped there."""
        ...

    def run(self, pair: ActionPair, ctx: NemesisContext) -> None:
        """Perform ``pair.step``: ``invoke``, act, then ``complete`` or ``skipped``."""
        ...


class Action:
    """Base of the nemesis classes: the pair around :meth:`act`, which subclasses implement."""

    action: ClassVar[str] = ""

    def __init__(self, target: str | None = None) -> None:
        self.target = target

    def applicable(self, impl: str) -> str | None:
        """Applies everywhere unless a subclass says otherwise."""
        return None

    def act(self, step: Step, ctx: NemesisContext) -> dict[str, Any]:
        """Carry out ``step``; return once it took effect, with the ``complete`` event's extra fields.
        Raise :class:`Skip` when it turns out not to apply, :class:`ActionFailed` when it never takes
        effect."""
        raise NotImplementedError

    def run(self, pair: ActionPair, ctx: NemesisContext) -> None:
        step = pair.step
        log.info("%s: %s %s %s", ctx.unit_key, step.kind, ",".join(step.targets), step.target or "")
        pair.invoke()
        reason = self.applicable(ctx.impl)
        if reason is not None:
            pair.skipped(reason)
            return
        try:
            effect = self.act(step, ctx)
        except Skip as e:
            pair.skipped(str(e))
            return
        pair.complete(**effect)
