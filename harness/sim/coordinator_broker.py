"""The simulated broker: a virtual-time shell around the real :class:`GroupCoordinator` machine.

Contract
--------
* :meth:`SimBroker.send` is a member's client issuing a request at this instant: after the client's cost
  ``kafka_client_s`` it leaves, arrives ``network_one_way_s`` later and waits for the broker's one event
  loop (FIFO); each request holds it for ``broker_service_s``, then runs. A coordination request (:data:`harness.kernel.events.COORDINATION_APIS`)
  writes one ``group_request`` event when it runs, as the real server does when it decodes one; every request
  is counted by API for the ``broker_request`` snapshots (every ``metrics_interval_s``, only when something
  was counted, and once at :meth:`close`).
* The machine's effects are applied as :mod:`coordinator.groups.runner` applies them: ``Respond`` delivers
  the response to the request's reply callback ``network_one_way_s`` later; an answer to another, parked
  request (the answers a completing JoinGroup, SyncGroup or timer sends) first holds the loop for
  ``broker_response_s`` + ``broker_response_per_member_s`` times the answers sent together per client
  core, one after another in the machine's order, after every request already booked (requests are booked
  when issued: one issued before the completing call but arriving after it keeps its turn, so the answers
  may wait up to its lead, ``kafka_client_s`` + ``network_one_way_s``, more behind a queue; herdlab's loop
  would send them first); timers still fire while the loop sends; ``SetTimer`` / ``CancelTimer``
  keep one virtual timer per key (re-arming to a later deadline only records it: the armed timer re-arms
  itself when it fires early, as the real runner does, so a heartbeat costs no heap entry); ``Emit``
  becomes a history event with ``impl`` and ``broker_id`` (commits with ``offsets_partition`` and
  ``leader_epoch`` -1, single-broker mode); ``Persist`` is dropped (no durable log in a simulation). A
  timer fires ``on_timer(now_ms, key)`` at its deadline on the loop, without service time.
* FindCoordinator and Metadata are answered by the shell (this broker coordinates every group; the
  topic's partitions), as the real server answers them without the machine.
* Member ids are deterministic (a counter in the uuid's place), so two runs give identical histories.

:class:`SimShell` is all of this but the machine; :class:`SimBroker` adds the classic GroupCoordinator, and the
consumer design's broker (:class:`harness.sim.consumer.SimConsumerBroker`) the consumer machine, with no client
cost before a request leaves and its ConsumerGroupHeartbeat events written by itself (with each answer).
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Callable
from typing import Any

from coordinator.core.group import api as g
from coordinator.core.group.config import GroupConfig
from coordinator.core.group.machine import GroupCoordinator
from harness.kernel.events import COORDINATION_APIS
from harness.kernel.history import History
from harness.kernel.javacompat import partition_for
from harness.scenario.model import Scenario
from harness.sim.clock import NS_PER_S, Timer, VirtualScheduler
from harness.sim.model import DelayModel
from harness.sim.workload import SimTopic

__all__ = ["BROKER_ID", "BROKER_SOURCE", "Reply", "SimBroker", "SimShell"]

BROKER_ID = (
    0  # the local cluster numbers its single broker 0 (harness.cluster.local): the same source, broker-0
)
BROKER_SOURCE = f"broker-{BROKER_ID}"
#: ``offsets.topic.num.partitions`` of the real broker (the ``offsets_partition`` of its commit events).
OFFSETS_PARTITIONS = 50
#: The real broker's ``metrics_interval_s`` default (coordinator/config.py).
METRICS_INTERVAL_S = 1.0
#: The consumer protocol's one request: its ``group_request`` event is written with its answer (the
#: exchange's fields), by the consumer shell (:mod:`harness.sim.consumer`), never before the call.
CONSUMER_HEARTBEAT = "ConsumerGroupHeartbeat"
_COORDINATION = frozenset(COORDINATION_APIS) - {CONSUMER_HEARTBEAT}

#: A reply callback: called on the loop with the machine's (or the shell's) response.
Reply = Callable[[Any], object]


class _Armed:
    __slots__ = ("deadline_ns", "timer")

    def __init__(self, deadline_ns: int, timer: Timer) -> None:
        self.deadline_ns = deadline_ns
        self.timer = timer


class SimShell:
    """The simulated broker's shell without its machine (see the module contract): the FIFO loop, the
    effects, the timers, the events and the counters. ``impl`` is the ``impl`` of its events;
    ``client_s`` a request's client-side cost before it leaves (None: ``kafka_client_s``); a subclass
    gives the machine's timer entry (:meth:`on_timer`)."""

    def __init__(
        self,
        sched: VirtualScheduler,
        delays: DelayModel,
        history: History,
        topic: SimTopic,
        metrics_interval_s: float = METRICS_INTERVAL_S,
        *,
        impl: str = "coordinator",
        client_s: float | None = None,
    ) -> None:
        self.sched = sched
        self.delays = delays
        self.history = history
        self.topic = topic
        self.impl = impl
        self._ids = 0
        self._net_ns = round(delays.network_one_way_s * NS_PER_S)
        self._service_ns = round(delays.broker_service_s * NS_PER_S)
        client = delays.kafka_client_s if client_s is None else client_s
        self._lead_ns = round(client * NS_PER_S) + self._net_ns
        self._busy_until = 0
        self._timers: dict[Any, _Armed] = {}
        self.requests: Counter[str] = Counter()
        self._reported: Counter[str] = Counter()
        self._last_report_ns = 0
        self._interval_s = metrics_interval_s
        self._report_timer: Timer | None = None
        self._closed = False

    def _new_uuid(self) -> str:
        self._ids += 1
        return f"00000000-0000-4000-8000-{self._ids:012d}"

    # -- life cycle -----------------------------------------------------------------------------------
    def start(self) -> None:
        self.history.emit("started", impl=self.impl, broker_id=BROKER_ID, host="sim", port=0)
        self._last_report_ns = self.sched.now_ns
        if self._interval_s > 0:
            self._report_timer = self.sched.call_later(self._interval_s, self._report_tick)

    def close(self) -> None:
        """The last counter snapshot and ``stopped``; timers dropped. Idempotent."""
        if self._closed:
            return
        self._closed = True
        for armed in self._timers.values():
            armed.timer.cancel()
        self._timers.clear()
        if self._report_timer is not None:
            self._report_timer.cancel()
        self.report()
        self.history.emit("stopped", impl=self.impl, broker_id=BROKER_ID)

    # -- requests -------------------------------------------------------------------------------------
    def send(
        self,
        api: str,
        client: str,
        call: Callable[[int, Reply], list[g.Effect]],
        reply: Reply,
        **fields: Any,
    ) -> None:
        """A member's client issues a request now: ``call(now_ms, token)`` runs the machine when the broker
        serves it (its ``Respond`` for ``token`` goes to ``reply``); ``fields`` are the ``group_request``
        event's (group, member, generation, assignments).

        The request's timeline is booked at once: the client's cost (``kafka_client_s``), the network
        (``network_one_way_s``), then its turn on the broker's loop (``broker_service_s``). Every request
        has the same lead before it arrives, so booking in issue order is FIFO in arrival order, and a
        request costs one scheduler entry instead of three."""
        if self._closed:
            return
        arrive = self.sched.now_ns + self._lead_ns
        self._busy_until = max(arrive, self._busy_until) + self._service_ns
        self.sched.call_at(self._busy_until, self._serve, api, client, call, reply, fields)

    def _serve(
        self,
        api: str,
        client: str,
        call: Callable[[int, Reply], list[g.Effect]],
        reply: Reply,
        fields: dict[str, Any],
    ) -> None:
        if self._closed:
            return
        self.requests[api] += 1
        if api in _COORDINATION:
            self.history.emit(
                "group_request",
                impl=self.impl,
                broker_id=BROKER_ID,
                api=api,
                client=client,
                group=fields.get("group"),
                member=fields.get("member"),
                generation=fields.get("generation"),
                assignments=fields.get("assignments"),
            )
        self.apply(call(self.sched.now_ms, reply), own=reply)

    def respond(self, reply: Reply, response: Any) -> list[g.Effect]:
        """A shell-answered request (FindCoordinator, Metadata): its one effect."""
        return [g.Respond(reply, response)]  # type: ignore[arg-type]

    # -- effects --------------------------------------------------------------------------------------
    def apply(self, effects: list[g.Effect], own: Reply | None = None) -> None:
        """Apply the machine's effects (module contract); ``own`` is the reply of the request being served,
        whose answer leaves at once: every other answer is a parked one, sent one after another."""
        sched = self.sched
        cost_ns = self._parked_answer_ns(effects, own)
        for effect in effects:
            if isinstance(effect, g.Respond):
                at = sched.now_ns
                if cost_ns and effect.token is not own:
                    self._busy_until = max(at, self._busy_until) + cost_ns
                    at = self._busy_until
                sched.call_at(at + self._net_ns, effect.token, effect.response)
            elif isinstance(effect, g.SetTimer):
                self._set_timer(effect.key, effect.deadline_ms * 1_000_000)
            elif isinstance(effect, g.CancelTimer):
                armed = self._timers.pop(effect.key, None)
                if armed is not None:
                    armed.timer.cancel()
            elif isinstance(effect, g.Emit):
                self._emit(effect)
            # Persist: no durable log in a simulation

    def _parked_answer_ns(self, effects: list[g.Effect], own: Reply | None) -> int:
        """The loop's time per parked answer in ``effects`` (0: none, or the model sends them at once)."""
        d = self.delays
        if not (d.broker_response_s or d.broker_response_per_member_s):
            return 0
        n = sum(1 for e in effects if isinstance(e, g.Respond) and e.token is not own)
        if not n:
            return 0
        return round((d.broker_response_s + d.broker_response_per_member_s * d.per_core(n)) * NS_PER_S)

    def _set_timer(self, key: Any, deadline_ns: int) -> None:
        armed = self._timers.get(key)
        if armed is not None:
            if armed.timer.when_ns <= deadline_ns:
                armed.deadline_ns = deadline_ns  # the armed timer re-arms itself when it fires
                return
            armed.timer.cancel()
        self._timers[key] = _Armed(deadline_ns, self.sched.call_at(deadline_ns, self._fire, key))

    def _fire(self, key: Any) -> None:
        armed = self._timers.get(key)
        if armed is None or self._closed:
            return
        if armed.deadline_ns > self.sched.now_ns:
            armed.timer = self.sched.call_at(armed.deadline_ns, self._fire, key)
            return
        del self._timers[key]
        self.apply(self.on_timer(self.sched.now_ms, key))

    def on_timer(self, now_ms: int, key: Any) -> list[g.Effect]:
        """The machine's timer entry (a subclass's)."""
        raise NotImplementedError

    def _emit(self, effect: g.Emit) -> None:
        fields = effect.fields
        if effect.kind in (g.EMIT_COMMIT, g.EMIT_COMMIT_REJECTED):
            group = fields.get("group")
            partition = partition_for(group, OFFSETS_PARTITIONS) if isinstance(group, str) else -1
            fields = {**fields, "offsets_partition": partition, "leader_epoch": -1}
        self.history.emit(effect.kind, impl=self.impl, broker_id=BROKER_ID, **fields)

    # -- counters -------------------------------------------------------------------------------------
    def _report_tick(self) -> None:
        if self._closed:
            return
        self.report()
        self._report_timer = self.sched.call_later(self._interval_s, self._report_tick)

    def report(self) -> None:
        """One ``broker_request`` snapshot of the requests since the previous one (none when nothing)."""
        now = self.sched.now_ns
        delta = self.requests - self._reported
        if delta:
            service_us = self.delays.broker_service_s * 1e6
            self.history.emit(
                "broker_request",
                impl=self.impl,
                broker_id=BROKER_ID,
                interval_s=round((now - self._last_report_ns) / NS_PER_S, 3),
                requests=dict(sorted(delta.items())),
                total=sum(delta.values()),
                handling_us={k: round(n * service_us) for k, n in sorted(delta.items())},
                rejected={},
            )
            self._reported = Counter(self.requests)
        self._last_report_ns = now


class SimBroker(SimShell):
    """One simulated broker with the real group coordinator machine (see the module contract)."""

    def __init__(
        self,
        sched: VirtualScheduler,
        delays: DelayModel,
        history: History,
        scenario: Scenario,
        topic: SimTopic,
        metrics_interval_s: float = METRICS_INTERVAL_S,
    ) -> None:
        super().__init__(sched, delays, history, topic, metrics_interval_s)
        c = scenario.group.coordinator
        self.machine = GroupCoordinator(
            GroupConfig(
                initial_rebalance_delay_ms=c.initial_rebalance_delay_ms,
                min_session_timeout_ms=c.min_session_timeout_ms,
            ),
            new_uuid=self._new_uuid,
        )

    def on_timer(self, now_ms: int, key: Any) -> list[g.Effect]:
        return self.machine.on_timer(now_ms, key)
