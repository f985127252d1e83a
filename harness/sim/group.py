"""What the simulator's driver needs from one implementation's simulated group.

Contract
--------
The driver (:mod:`harness.sim.driver`, one per simulated unit) interprets the unit's plan
(:func:`harness.run.plan.make_plan`: the same steps, members and seed as a real run) in virtual time and
writes the nemesis ``invoke`` / ``complete`` pairs and the harness markers exactly as the real runner
does. For the members and servers it calls a :class:`SimGroup`, made by the implementation's factory
(:func:`harness.sim.legacy.make_group`, :func:`harness.sim.coordinator.make_group`,
:func:`harness.sim.consumer.make_group`) from a
:class:`SimContext`. A group's members run as tasks of ``ctx.sched``; every event they, the broker or the
ZooKeeper model write goes through ``ctx.history(source, role)`` with the same kinds and fields as the
real members and broker (:mod:`harness.kernel.events`), so the same checker measures them.

Every method is called on the loop or from a driver task at the virtual instant the action takes place
and returns at once (the effect happens later in virtual time, through the group's own tasks):

* ``start_member(name)``: a member process starts now; it writes ``ready`` after its start-up delay
  and then joins (``ready_ns`` of a join's ``complete`` comes from :meth:`SimGroup.ready_ns`);
* ``stop_member(name)``: a clean stop (legacy: close the session, which deletes its ephemerals;
  coordinator: LeaveGroup, then close; consumer: the leave heartbeat, epoch -1); it writes ``stopped``
  when done;
* ``crash_member(name)``: SIGKILL: the member's tasks end now, without a request; its ZooKeeper session
  or its coordinator membership stays until the session timeout expires it on the server side;
* ``members()``: the names of members started and not stopped or crashed;
* ``close()``: end every task (the run's end); no event after it.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from typing import Any, Protocol

from harness.kernel.history import History
from harness.scenario.model import Scenario
from harness.sim.clock import VirtualScheduler
from harness.sim.model import DelayModel
from harness.sim.workload import SimTopic

__all__ = ["SimContext", "SimGroup"]


@dataclass
class SimContext:
    """Everything one simulated unit's group needs.

    ``scenario`` is the case's resolved scenario (one point of the matrix, as a real unit gets it:
    ``scenario.group``, ``scenario.topic``, ``scenario.workload``); ``members`` the initial group size;
    ``history(source, role)`` returns the writer for one source (members: their plan names ``m0``,
    ``j0``...; the broker ``broker-0``; the ZooKeeper model ``zookeeper``); ``rng`` the unit's only random
    source (from ``delays.seed`` and the repetition); ``unit`` the unit's context fields (case,
    implementation, repetition) as a real run records them; ``options`` the simulator's
    options for the implementation (``herdlab simulate --option``), empty by default.
    """

    sched: VirtualScheduler
    delays: DelayModel
    scenario: Scenario
    members: int
    history: Callable[[str, str], History]
    rng: Any
    unit: Mapping[str, Any] = field(default_factory=dict)
    #: simulator options an implementation may read (e.g. legacy's ``aggregate_from``); empty = defaults
    options: Mapping[str, Any] = field(default_factory=dict)
    #: the unit's topic (its partition logs), made and fed by the driver's producer; members fetch from it
    topic: SimTopic | None = None


class SimGroup(Protocol):
    """One implementation's simulated group (see the module contract)."""

    impl: str

    def start_member(self, name: str) -> None: ...

    def stop_member(self, name: str) -> None: ...

    def crash_member(self, name: str) -> None: ...

    def ready_ns(self, name: str) -> int | None: ...

    def members(self) -> list[str]: ...

    def close(self) -> None: ...
