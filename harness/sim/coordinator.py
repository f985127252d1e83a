"""The coordinator implementation's simulated group: the real GroupCoordinator machine behind a simulated
broker shell, and one simulated kafka-python 3.0.12 consumer per member, in virtual time.

Contract
--------
:func:`make_group` returns a :class:`SimCoordinatorGroup` (a :class:`~harness.sim.group.SimGroup`) for one
unit. What is real and what is modelled:

* **The broker** (:class:`~harness.sim.coordinator_broker.SimBroker`) runs THE SAME pure core as the real
  broker, :class:`coordinator.core.group.machine.GroupCoordinator`, configured as the real rig configures it
  (``group.initial.rebalance.delay.ms``, ``group.min.session.timeout.ms`` from the scenario). Its shell
  is modelled: one event loop serving requests FIFO, ``broker_service_s`` each, ``network_one_way_s``
  each way; timers at their deadlines (no service cost). It writes the real broker's events (source
  ``broker-0``, role broker): one ``group_request`` per coordination request (FindCoordinator,
  Metadata, JoinGroup, SyncGroup, LeaveGroup, OffsetFetch) with api, client, group, member,
  generation, assignments; the machine's own events (group_state, rebalance_begin/end, member_added,
  member_removed with its reason, heartbeat_error, commit / commit_rejected); ``broker_request``
  counter snapshots every second (Heartbeat and OffsetCommit are counted there only, as the real
  broker does); ``started`` / ``stopped``.
* **The members** (:class:`~harness.sim.coordinator_member.SimConsumer`) follow kafka-python 3.0.12's
  request sequence as herdlab's kafka-python member drives it (see that module for the sequence and
  its sources), write their events through :class:`harness.members.recorder.MemberRecorder` and commit
  by :class:`harness.members.recorder.CommitPolicy`; the leader assigns with kafka-python's own
  assignor classes on the member metadata the broker returned.
* **Records** come from a :class:`~harness.sim.workload.SimTopic`: the driver's (``topic=``), or one
  this group makes. Members are told of new records on their own partitions by one dispatcher task
  (not by every member waiting on :meth:`SimTopic.wait_data`, which wakes every waiter on every
  record: at 10^4 members that is 10^4 switches per record).

Where the model departs from a real run (stated in the report through :data:`MODEL_NOTES`):
Fetch, ListOffsets and Produce are not broker requests here (the members read the topic's log
directly; no ``broker_request`` counts for them); a member's start-up (process boot, connection set-up)
takes no virtual time beyond its first requests; kafka-python's periodic metadata refresh is modelled
by ``metadata.max.age.ms`` (the scenario's, Kafka's 5 minutes by default) from the member's last refresh.

Capacity: the broker is one FIFO server, so it serves at most ``1 / broker_service_s`` requests a second
(10^4 with the default model). Heartbeats alone are ``members / heartbeat.interval.ms`` a second: at 10^4
members and 500 ms that is twice its capacity, every request queues and a rebalance slows down with the
queue (as the real single-loop broker would); with Kafka's default 3 s interval it is a third.
"""

from __future__ import annotations

from typing import Any

from greenlet import GreenletExit, getcurrent

from harness.scenario.model import Scenario
from harness.sim.clock import Task
from harness.sim.coordinator_broker import BROKER_SOURCE, SimBroker
from harness.sim.coordinator_member import SimConsumer, TopicFeed
from harness.sim.cpu import ClientCpu
from harness.sim.group import SimContext
from harness.sim.workload import SimTopic

__all__ = ["MODEL_NOTES", "SimCoordinatorGroup", "make_group", "unmodelled"]

#: What the report says about the coordinator side of the model (one line each).
MODEL_NOTES = (
    "coordinator: the real GroupCoordinator machine; broker shell modelled as one FIFO server "
    "(broker_service_s per request, timers free; a phase's parked answers sent one after another, "
    "broker_response_s + broker_response_per_member_s x answers per client core each, 0: at once)",
    "coordinator members: kafka-python 3.0.12's request sequence (FindCoordinator, Metadata, JoinGroup "
    "with MEMBER_ID_REQUIRED, SyncGroup, OffsetFetch of new partitions, Heartbeat, OffsetCommit, "
    "LeaveGroup) with kafka-python's own assignors",
    "coordinator members: Fetch/ListOffsets/Produce are not simulated broker requests; records are read "
    "from the simulated log directly",
    "coordinator members: a join task that ends (done or failed) while the main thread is between two polls "
    "(gaps of mean kafka_poll_gap_per_member_s x live members per client core, gamma-distributed with "
    "kafka_poll_gap_cv, from the unit's seed) is found done and sent again, as kafka-python 3.0.12 does, "
    "when the IO thread runs the next poll's join (late by a gamma draw, kafka_rejoin_late_cv, of mean "
    "kafka_rejoin_late_s + kafka_rejoin_late_per_member_s x live members per client core; that poll's "
    "window starts there)",
)


class SimCoordinatorGroup:
    """The coordinator implementation's :class:`~harness.sim.group.SimGroup` (see the module contract)."""

    impl = "coordinator"

    def __init__(self, ctx: SimContext, topic: SimTopic | None = None) -> None:
        scenario = ctx.scenario
        partitions = scenario.topic.partitions
        if not isinstance(partitions, int):
            partitions = ctx.members
        self.ctx = ctx
        topic = topic if topic is not None else getattr(ctx, "topic", None)  # the driver's shared topic
        self.topic = topic if topic is not None else SimTopic(ctx.sched, scenario.topic.name, partitions)
        self.broker = SimBroker(
            ctx.sched, ctx.delays, ctx.history(BROKER_SOURCE, "broker"), scenario, self.topic
        )
        self.feed = TopicFeed(ctx.sched, self.topic)
        self.cpu = ClientCpu(
            ctx.sched, ctx.delays, ctx.rng, prioritized=ctx.delays.kafka_sync_answer_priority > 0
        )
        self._members: dict[str, SimConsumer] = {}
        self._tasks: dict[str, Task] = {}
        self._live: dict[str, None] = {}
        self._closed = False
        self._finished = False
        self.broker.start()
        self.feed.start()

    # -- SimGroup -----------------------------------------------------------------------------------------
    def start_member(self, name: str) -> None:
        if name in self._live:
            raise ValueError(f"member {name} is already running")
        if self._closed:
            raise ValueError("the group is closed")
        member = SimConsumer(
            name, self.ctx.sched, self.ctx.delays, self.ctx.scenario, self.broker, self.feed,
            self.ctx.history(name, "member"), self.cpu, lambda: len(self._live), on_stopped=self._stopped,
        )  # fmt: skip
        self._members[name] = member
        self._live[name] = None
        self._tasks[name] = self.ctx.sched.spawn(member.run, name=f"member {name}")

    def stop_member(self, name: str) -> None:
        """A clean stop; the member stays in :meth:`members` until it wrote ``stopped``."""
        self._require(name).stop()

    def crash_member(self, name: str) -> None:
        member = self._require(name)
        del self._live[name]
        member.crash()
        self._kill(name)
        self._maybe_finish()

    def ready_ns(self, name: str) -> int | None:
        member = self._members.get(name)
        return None if member is None else member.ready_ns

    def members(self) -> list[str]:
        """Members started and not yet stopped (``stopped`` written) or crashed."""
        return list(self._live)

    def member(self, name: str) -> SimConsumer:
        """The simulated consumer ``name`` (for tests and the driver's checks)."""
        return self._members[name]

    def close(self) -> None:
        """The run's end: every live member stops cleanly (returns at once; :meth:`members` empties as
        they stop); once none is left the broker writes its last counters and ``stopped``. Idempotent."""
        if self._closed:
            return
        self._closed = True
        for name in list(self._live):
            self._members[name].stop()
        self._maybe_finish()

    # -- helpers ------------------------------------------------------------------------------------------
    def _stopped(self, name: str) -> None:
        self._live.pop(name, None)
        self._tasks.pop(name, None)
        self._maybe_finish()

    def _maybe_finish(self) -> None:
        if self._closed and not self._live and not self._finished:
            self._finished = True
            self.ctx.sched.call_later(0.0, self._finish)

    def _finish(self) -> None:
        self.feed.stop()
        self.broker.close()

    def _require(self, name: str) -> SimConsumer:
        if name not in self._live:
            raise ValueError(f"member {name} is not running")
        return self._members[name]

    def _kill(self, name: str) -> None:
        task = self._tasks.pop(name, None)
        if task is not None and not task.done:
            glet = task.glet
            if glet is getcurrent():
                raise RuntimeError("a member cannot crash itself")
            glet.parent = getcurrent()  # not started yet: it dies unstarted, and the loop skips it
            glet.throw(GreenletExit)


def unmodelled(scenario: Scenario) -> str | None:
    """What in ``scenario``'s coordinator settings the simulated members do not model (one line), or
    None: they are kafka-python consumers with dynamic membership only."""
    c = scenario.group.coordinator
    if c.client != "kafka-python":
        return f"group.coordinator.client is {c.client!r}; the simulator models kafka-python members only"
    if c.static_membership:
        return "group.coordinator.static_membership is set; the simulator models dynamic members only"
    return None


def make_group(ctx: SimContext, topic: SimTopic | None = None) -> SimCoordinatorGroup:
    """The coordinator implementation's simulated group for one unit; ``topic`` is the unit's shared
    simulated topic (the driver's, which its producer writes), else the group makes its own."""
    return SimCoordinatorGroup(ctx, topic)


def describe(ctx: SimContext) -> dict[str, Any]:
    """What the coordinator side of a simulated unit assumes, for the manifest."""
    return {
        "impl": "coordinator",
        "broker": BROKER_SOURCE,
        "notes": list(MODEL_NOTES),
        **ctx.delays.as_dict(),
    }
