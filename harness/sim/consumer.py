"""The consumer implementation's simulated group (KIP-848's consumer group protocol): the real
:class:`~coordinator.core.consumer.machine.ConsumerGroupCoordinator` behind a simulated broker shell, and one
simulated librdkafka consumer-protocol member per member, in virtual time.

Contract
--------
:func:`make_group` returns a :class:`SimConsumerGroup` (a :class:`~harness.sim.group.SimGroup`) for one unit.
What is real and what is modelled:

* **The broker** (:class:`SimConsumerBroker`) runs THE SAME pure core as herdlab's broker for consumer groups,
  configured from the scenario's ``[group.consumer]`` as the rig configures the broker
  (``group.consumer.heartbeat.interval.ms`` / ``session.timeout.ms`` with their minimums lowered to them; the
  assignors ``uniform`` then ``range``), behind the classic simulation's shell
  (:class:`~harness.sim.coordinator_broker.SimShell`: one FIFO loop, ``broker_service_s`` per request,
  ``network_one_way_s`` each way, timers at their deadlines, no client cost before a request leaves). Its
  events are herdlab's broker's (source ``broker-0``, ``impl`` consumer): one ``group_request`` per
  ConsumerGroupHeartbeat exchange with ``group``, ``member``, ``member_epoch`` (the request's), ``epoch`` (the
  answer's), ``error`` (absent when none) and ``change`` (:func:`harness.kernel.heartbeats.carries_change`),
  written when the exchange is served; one per FindCoordinator, Metadata and OffsetFetch; the machine's own
  events (``group_state``, ``member_added`` / ``member_removed``, ``target_assignment``, ``member_epoch``,
  ``commit`` / ``commit_rejected``); ``broker_request`` counters; ``started`` / ``stopped``.
* **The members** (:class:`~harness.sim.consumer_member.SimKip848Member`) follow librdkafka's
  consumer-protocol loop (that module cites it) and write their events through
  :class:`harness.members.recorder.MemberRecorder` as herdlab's librdkafka member does.
* **Member ids** are chosen by the members (ConsumerGroupHeartbeat v1), as librdkafka does: random UUIDs in
  Kafka's base64 form, drawn from the unit's random source, so the order of the ids (which the uniform
  assignor's quotas follow) is a draw, as in a real run; ``ctx.options["member_ids"]`` (name -> id) gives
  them instead (to replay a real run's ids).
* **The scenario's settings**: ``[group.consumer]`` (``heartbeat_interval_ms``, ``session_timeout_ms``,
  ``max_poll_interval_ms``, ``auto_commit_interval_ms``, ``assignor``, ``properties``) where the scenario
  model has it, else :class:`ConsumerSettings`'s defaults, which are that section's.

Where the model departs from a real run (stated through :data:`MODEL_NOTES`): Fetch, ListOffsets and Produce
are not broker requests (members read the simulated topic); librdkafka's metadata refreshes are not simulated
(one Metadata at start); the client's own work takes no virtual time.
"""

from __future__ import annotations

import base64
import random
import uuid
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass, fields
from typing import Any

from greenlet import GreenletExit, getcurrent

from coordinator.core.consumer.api import (
    ConsumerGroupHeartbeatRequest,
    ConsumerGroupHeartbeatResponse,
    TopicMetadata,
)
from coordinator.core.consumer.config import ConsumerGroupConfig
from coordinator.core.consumer.machine import ConsumerGroupCoordinator
from coordinator.core.group import api as g
from coordinator.core.group.errors import ErrorCode
from coordinator.core.group.offsets import OffsetManager
from harness.kernel.heartbeats import carries_change
from harness.kernel.history import History
from harness.members.recorder import MemberConfig
from harness.scenario.model import Scenario
from harness.sim.clock import Task, VirtualScheduler
from harness.sim.consumer_member import SimKip848Member
from harness.sim.coordinator_broker import BROKER_ID, BROKER_SOURCE, CONSUMER_HEARTBEAT, Reply, SimShell
from harness.sim.coordinator_member import TopicFeed
from harness.sim.group import SimContext
from harness.sim.model import DelayModel
from harness.sim.workload import SimTopic

__all__ = [
    "IMPL",
    "MODEL_NOTES",
    "ConsumerSettings",
    "SimConsumerBroker",
    "SimConsumerGroup",
    "consumer_settings",
    "make_group",
    "unmodelled",
]

#: The implementation (design) this module simulates: KIP-848's consumer group protocol.
IMPL = "consumer"
#: Kafka's defaults of the minimums of the broker's interval and timeout (lowered to a shorter scenario value).
KAFKA_MIN_HEARTBEAT_INTERVAL_MS, KAFKA_MIN_SESSION_TIMEOUT_MS = 5000, 45000

#: What the report says about the consumer side of the model (one line each).
MODEL_NOTES = (
    "consumer: the real ConsumerGroupCoordinator machine (KIP-848); broker shell modelled as one FIFO server "
    "(broker_service_s per request, network_one_way_s each way, timers free)",
    "consumer members: librdkafka's consumer-protocol loop (join with epoch 0, one heartbeat in flight every "
    "heartbeat interval, revoke (commit first) then assign, the acknowledgement sent at once, leave with -1); "
    "the client's own work takes no virtual time; member ids random from the unit's seed",
    "consumer members: Fetch/ListOffsets/Produce are not simulated broker requests and metadata is not "
    "refreshed; records are read from the simulated log directly",
)


@dataclass(frozen=True)
class ConsumerSettings:
    """The scenario's ``[group.consumer]`` keys the simulator reads, with that section's defaults."""

    heartbeat_interval_ms: int = 500
    session_timeout_ms: int = 6000
    max_poll_interval_ms: int = 30000
    auto_commit_interval_ms: int = 5000
    assignor: str | None = None
    client: str = "librdkafka"
    static_membership: bool = False


def consumer_settings(scenario: Scenario) -> tuple[ConsumerSettings, Mapping[str, Any]]:
    """The scenario's consumer settings and its ``[group.consumer.properties]`` (the defaults and no
    properties where the scenario model has no ``consumer`` section)."""
    section: Any = getattr(scenario.group, "consumer", None)
    if section is None:
        return ConsumerSettings(), {}
    values = {f.name: getattr(section, f.name) for f in fields(ConsumerSettings) if hasattr(section, f.name)}
    return ConsumerSettings(**values), dict(getattr(section, "properties", {}) or {})


def _member_properties(s: ConsumerSettings, table: Mapping[str, Any]) -> dict[str, str]:
    """The properties of a simulated member: the protocol, its assignor and commit policy, the table over them."""
    props = {
        "group.protocol": "consumer",
        "max.poll.interval.ms": str(s.max_poll_interval_ms),
        "auto.commit.interval.ms": str(s.auto_commit_interval_ms),
    }
    if s.assignor is not None:
        props["group.remote.assignor"] = s.assignor
    for k, v in table.items():
        props[k] = str(v).lower() if isinstance(v, bool) else str(v)
    return props


def machine_config(s: ConsumerSettings) -> ConsumerGroupConfig:
    """The broker's ``group.consumer.*`` as the rig sets them: the interval and the timeout, their minimums
    lowered to them where Kafka's defaults are higher."""
    return ConsumerGroupConfig(
        heartbeat_interval_ms=s.heartbeat_interval_ms,
        min_heartbeat_interval_ms=min(s.heartbeat_interval_ms, KAFKA_MIN_HEARTBEAT_INTERVAL_MS),
        session_timeout_ms=s.session_timeout_ms,
        min_session_timeout_ms=min(s.session_timeout_ms, KAFKA_MIN_SESSION_TIMEOUT_MS),
    )


class _Topics:
    """The broker's topics image: the unit's one topic, its id derived from its name."""

    def __init__(self, topic: SimTopic) -> None:
        self.topic = topic
        self.topic_id = uuid.uuid5(uuid.NAMESPACE_URL, f"herdlab-sim:{topic.name}")

    def _meta(self) -> TopicMetadata:
        return TopicMetadata(self.topic_id, self.topic.name, self.topic.partitions)

    def by_name(self, name: str) -> TopicMetadata | None:
        return self._meta() if name == self.topic.name else None

    def by_id(self, topic_id: uuid.UUID) -> TopicMetadata | None:
        return self._meta() if topic_id == self.topic_id else None

    def names(self) -> Iterable[str]:
        return (self.topic.name,)


class SimConsumerBroker(SimShell):
    """One simulated broker serving consumer groups with the real machine (see the module contract)."""

    def __init__(
        self,
        sched: VirtualScheduler,
        delays: DelayModel,
        history: History,
        settings: ConsumerSettings,
        topic: SimTopic,
    ) -> None:
        super().__init__(sched, delays, history, topic, impl=IMPL, client_s=0.0)
        self.topics = _Topics(topic)
        self.machine = ConsumerGroupCoordinator(
            machine_config(settings),
            self.topics,
            offsets=OffsetManager(max_metadata_bytes=4096),
            new_uuid=self._new_uuid,
        )

    def on_timer(self, now_ms: int, key: Any) -> list[g.Effect]:
        return self.machine.on_timer(now_ms, key)

    def heartbeat_call(self, req: ConsumerGroupHeartbeatRequest) -> Callable[[int, Reply], list[g.Effect]]:
        """The machine call serving one ConsumerGroupHeartbeat; it writes the exchange's ``group_request``."""

        def call(now_ms: int, reply: Reply) -> list[g.Effect]:
            effects = self.machine.heartbeat(now_ms, reply, req)
            resp = next(e.response for e in effects if isinstance(e, g.Respond) and e.token is reply)
            self._exchange(req, resp)  # type: ignore[arg-type]
            return effects

        return call

    def _exchange(self, req: ConsumerGroupHeartbeatRequest, resp: ConsumerGroupHeartbeatResponse) -> None:
        """The exchange's ``group_request`` event, as herdlab's broker writes it."""
        fields_: dict[str, Any] = {
            "api": CONSUMER_HEARTBEAT,
            "client": req.client_id,
            "group": req.group_id,
            "member": req.member_id or resp.member_id,
            "member_epoch": req.member_epoch,
            "epoch": resp.member_epoch,
            "change": carries_change(
                request_epoch=req.member_epoch,
                request_owned=req.topic_partitions is not None,
                response_error=int(resp.error),
                response_epoch=resp.member_epoch,
                response_assignment=resp.assignment is not None,
            ),
        }
        if resp.error != ErrorCode.NONE:
            fields_["error"] = resp.error.name
        self.history.emit("group_request", impl=IMPL, broker_id=BROKER_ID, **fields_)


def _librdkafka_member_id(rng: random.Random) -> str:
    """A random member id as librdkafka makes one (``rd_kafka_Uuid_random``, base64 without padding)."""
    return base64.urlsafe_b64encode(rng.getrandbits(128).to_bytes(16, "big")).decode().rstrip("=")


class SimConsumerGroup:
    """The consumer implementation's :class:`~harness.sim.group.SimGroup` (see the module contract)."""

    impl = IMPL

    def __init__(self, ctx: SimContext, topic: SimTopic | None = None) -> None:
        scenario = ctx.scenario
        partitions = scenario.topic.partitions
        if not isinstance(partitions, int):
            partitions = ctx.members
        self.ctx = ctx
        topic = topic if topic is not None else ctx.topic
        self.topic = topic if topic is not None else SimTopic(ctx.sched, scenario.topic.name, partitions)
        self.settings, table = consumer_settings(scenario)
        self.properties = _member_properties(self.settings, table)
        self.broker = SimConsumerBroker(
            ctx.sched, ctx.delays, ctx.history(BROKER_SOURCE, "broker"), self.settings, self.topic
        )
        self.feed = TopicFeed(ctx.sched, self.topic)
        self._ids = random.Random(ctx.rng.getrandbits(64))
        self._given_ids: Mapping[str, str] = dict(ctx.options.get("member_ids") or {})
        self._members: dict[str, SimKip848Member] = {}
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
        s, ctx = self.settings, self.ctx
        config = MemberConfig(
            bootstrap="sim",
            group=ctx.scenario.group.id,
            topic=ctx.scenario.topic.name,
            name=name,
            client="librdkafka",
            properties=self.properties,
        )
        member = SimKip848Member(
            name,
            ctx.sched,
            self.broker,
            self.broker.heartbeat_call,
            self.broker.machine,
            self.feed,
            ctx.history(name, "member"),
            config,
            member_id=self._given_ids.get(name) or _librdkafka_member_id(self._ids),
            topic_id=self.broker.topics.topic_id,
            rebalance_timeout_ms=s.max_poll_interval_ms,
            server_assignor=s.assignor,
            on_stopped=self._stopped,
        )
        self._members[name] = member
        self._live[name] = None
        self._tasks[name] = ctx.sched.spawn(member.run, name=f"member {name}")

    def stop_member(self, name: str) -> None:
        """A clean stop; the member stays in :meth:`members` until it wrote ``stopped``."""
        self._require(name).stop()

    def crash_member(self, name: str) -> None:
        member = self._require(name)
        del self._live[name]
        member.crash()
        task = self._tasks.pop(name, None)
        if task is not None and not task.done:
            glet = task.glet
            if glet is getcurrent():
                raise RuntimeError("a member cannot crash itself")
            glet.parent = getcurrent()  # not started yet: it dies unstarted, and the loop skips it
            glet.throw(GreenletExit)
        self._maybe_finish()

    def ready_ns(self, name: str) -> int | None:
        member = self._members.get(name)
        return None if member is None else member.ready_ns

    def members(self) -> list[str]:
        """Members started and not yet stopped (``stopped`` written) or crashed."""
        return list(self._live)

    def member(self, name: str) -> SimKip848Member:
        """The simulated member ``name`` (for tests)."""
        return self._members[name]

    def close(self) -> None:
        """The run's end: every live member stops cleanly; once none is left the broker writes its last
        counters and ``stopped``. Idempotent."""
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

    def _require(self, name: str) -> SimKip848Member:
        if name not in self._live:
            raise ValueError(f"member {name} is not running")
        return self._members[name]


def unmodelled(scenario: Scenario) -> str | None:
    """What in ``scenario``'s consumer settings the simulated members do not model (one line), or None: they
    are librdkafka members with dynamic membership."""
    s, _ = consumer_settings(scenario)
    if s.client != "librdkafka":
        return f"group.consumer.client is {s.client!r}; the simulator models librdkafka members only"
    if s.static_membership:
        return "group.consumer.static_membership is set; the simulator models dynamic members only"
    return None


def make_group(ctx: SimContext, topic: SimTopic | None = None) -> SimConsumerGroup:
    """The consumer implementation's simulated group for one unit (``topic``: as the coordinator's)."""
    return SimConsumerGroup(ctx, topic)


def describe(ctx: SimContext) -> dict[str, Any]:
    """What the consumer side of a simulated unit assumes, for the manifest."""
    return {"impl": IMPL, "broker": BROKER_SOURCE, "notes": list(MODEL_NOTES), **ctx.delays.as_dict()}
