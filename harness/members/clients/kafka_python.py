"""The kafka-python member: an unmodified kafka-python ``KafkaConsumer`` in the member template
(:class:`~harness.members.clients.base.ClientMemberBase`), recording through
:class:`~harness.members.recorder.MemberRecorder` and committing by
:class:`~harness.members.recorder.CommitPolicy`.

Contract
--------
* Configuration: every property of ``config.properties`` except the member's own commit policy
  (``enable.auto.commit``, ``auto.commit.interval.ms``) becomes the ``KafkaConsumer`` keyword of the same
  name in snake case, its value converted to the type of ``KafkaConsumer.DEFAULT_CONFIG[key]``
  (:func:`consumer_kwargs`); ``partition.assignment.strategy`` is a comma list of Kafka's assignor names.
  The client's own auto-commit is always off (``enable_auto_commit=False``). ``started`` carries
  ``effective``: the client's effective value (``consumer.config[key]``) of every property given, by its
  dotted name (assignors by their names).
* Commits, each partition's outcome recorded from the client's own results: an interval commit is
  ``commit_async(offsets, callback)`` (outcome from the callback, which kafka-python delivers on a later
  ``poll`` or commit); before partitions are revoked (not when they are lost) the listener commits them
  and waits for the answer; on a clean stop the member commits with ``commit(offsets)`` before
  ``close()`` (outcome from the return or the exception). A rejected commit carries the Kafka error name
  and code where the exception has one (``CommitFailedError`` wraps the broker's error).
* Why the listener awaits ``commit_async``'s future rather than calling ``commit``: kafka-python 3.0.12
  runs rebalance listeners on its IO thread, where the blocking ``commit`` raises ("Cannot block on
  net.run() from the IO thread"); the listener is an ``AsyncConsumerRebalanceListener`` (kafka-python's
  own advice) and awaits the future ``commit_async`` returns, whose value is None on success and whose
  exception is the commit's error. When the coordinator is unknown at that moment, kafka-python returns
  the coordinator lookup's future instead (the commit is chained to it): the outcome is then not
  known here and nothing is recorded for that commit (rare: the member is usually being fenced then).
* Identity: ``KafkaConsumer.group_metadata()`` (public since kafka-python 3.0: a snapshot of generation
  and member id for KIP-447 transactions) is read when a join completes (``on_partitions_assigned``).
* Listener: eager assignors call it with the whole assignment; with ``cooperative-sticky`` kafka-python
  3.0.12 calls it only for partitions revoked or added, so a round that changes nothing of this member
  is seen after the next poll instead (:meth:`KafkaPythonMember._note_quiet_join`: a ``rebalance_end``
  with the new generation and the unchanged assignment). A broker that numbers every generation alike
  (tansu 0.6: always 0) shows only the member's first such round.
* Heartbeat errors: kafka-python has no callback or result for a failed heartbeat (it only logs), so
  this member writes no ``heartbeat_error``; a lost membership shows as ``revoked`` with ``lost=True``.
* The poll timer (a stall, :meth:`~harness.members.template.MemberTemplate.stall`): kafka-python's
  heartbeat thread leaves the group (a dynamic member) once the member has not polled for
  ``max.poll.interval.ms``; the next ``poll`` calls ``on_partitions_lost`` (``revoked`` lost) and rejoins.
* A retriable client error from ``poll`` (no broker reachable: kafka-python 3.0.12 raises where Java's
  consumer retries) is logged and polling goes on; the member outlives a broker outage.
* :meth:`stop` with ``clean=True`` commits and closes the consumer (LeaveGroup for a dynamic member);
  ``clean=False`` returns without leaving (used only when the process is about to die anyway).
"""

from __future__ import annotations

import logging
import time
from collections.abc import Mapping
from typing import Any

from harness.history.writer import History
from harness.members.clients.base import ClientMemberBase, Polled
from harness.members.clients.python_config import ASSIGNOR
from harness.members.clients.python_config import consumer_kwargs as python_consumer_kwargs
from harness.members.interface import OnChange
from harness.members.recorder import MemberConfig
from harness.scenario.properties import MEMBER_POLICY_PROPERTIES, client_defaults, snake

log = logging.getLogger("harness.member.kafka_python")


def _known_assignors() -> dict[str, type]:
    from kafka.coordinator.assignors.cooperative_sticky import CooperativeStickyAssignor
    from kafka.coordinator.assignors.range import RangePartitionAssignor
    from kafka.coordinator.assignors.roundrobin import RoundRobinPartitionAssignor
    from kafka.coordinator.assignors.sticky.sticky_assignor import StickyPartitionAssignor

    return {
        "range": RangePartitionAssignor,
        "roundrobin": RoundRobinPartitionAssignor,
        "sticky": StickyPartitionAssignor,
        "cooperative-sticky": CooperativeStickyAssignor,
    }


def consumer_kwargs(props: Mapping[str, str]) -> dict[str, Any]:
    """The ``KafkaConsumer`` keyword arguments of ``props`` (see the module contract), without the
    harness's own (addresses, group, identity, listener)."""
    return python_consumer_kwargs("kafka-python", props, client_defaults("kafka-python"), _known_assignors())


def _plain(value: Any) -> Any:
    """A config value as JSON can hold it."""
    if value is None or isinstance(value, bool | int | float | str):
        return value
    if isinstance(value, list | tuple):
        return [_plain(v) for v in value]  # pyright: ignore[reportUnknownVariableType]
    return str(value)


def effective_config(config: Mapping[str, Any], props: Mapping[str, str]) -> dict[str, Any]:
    """The client's effective value of every client property in ``props``, by dotted name."""
    out: dict[str, Any] = {}
    for name in props:
        if name in MEMBER_POLICY_PROPERTIES:
            continue
        value = config.get(snake(name))
        if name == ASSIGNOR:
            out[name] = ",".join(getattr(a, "name", str(a)) for a in value or [])
        else:
            out[name] = _plain(value)
    return out


class KafkaPythonMember(ClientMemberBase):
    """One kafka-python consumer in a group (see the module contract). The listener and commit callbacks
    run on kafka-python's IO thread: they use the recorder and the policy under the base's lock."""

    def __init__(self, config: MemberConfig, history: History, on_change: OnChange | None = None) -> None:
        #: the client's keyword arguments, checked now: a bad property is a ValueError from the constructor
        self.kwargs = consumer_kwargs(config.properties)
        super().__init__(config, history, on_change)

    # -- commits -------------------------------------------------------------------------------
    def _offsets(self, pending: Mapping[int, int]) -> dict[Any, Any]:
        from kafka.structs import OffsetAndMetadata, TopicPartition

        return {
            TopicPartition(self.config.topic, p): OffsetAndMetadata(o, "", -1) for p, o in pending.items()
        }

    def commit_interval(self) -> None:
        """``commit_async`` with a callback (called under the lock: it only schedules)."""
        pending = self.policy.pending()
        if not pending:
            return

        def callback(_offsets: Any, response: Any) -> None:
            self.record_commit(pending, response if isinstance(response, BaseException) else None)

        self.consumer.commit_async(self._offsets(pending), callback=callback)

    def final_commit(self) -> None:
        with self._lock:
            pending = self.policy.pending()
        if not pending:
            return
        try:
            self.consumer.commit(self._offsets(pending))
        except Exception as e:  # the commit's outcome: recorded, the member goes on
            self.record_commit(pending, e)
        else:
            self.record_commit(pending, None)

    # -- rebalance listener (runs on kafka-python's IO thread) ----------------------------------
    def _listener(self) -> Any:
        # (the type stubs predate kafka-python 3.0's async listener)
        from kafka.consumer.subscription_state import AsyncConsumerRebalanceListener  # pyright: ignore[reportAttributeAccessIssue]

        member = self

        class Listener(AsyncConsumerRebalanceListener):
            async def on_partitions_revoked(self, revoked: Any) -> None:
                await member._on_revoked(revoked)

            async def on_partitions_assigned(self, assigned: Any) -> None:
                member._on_assigned(assigned)

            async def on_partitions_lost(self, lost: Any) -> None:
                member._revoke(sorted(tp.partition for tp in lost), lost=True)

        return Listener()

    async def _on_revoked(self, revoked: Any) -> None:
        ps = sorted(tp.partition for tp in revoked)
        with self._lock:
            pending = self.policy.pending(ps)
        if pending:
            try:
                value = await self.consumer.commit_async(self._offsets(pending))
            except Exception as e:
                self.record_commit(pending, e)
            else:
                if value is None:  # else: the coordinator lookup's future (see the module contract)
                    self.record_commit(pending, None)
        self._revoke(ps, lost=False)

    def _revoke(self, ps: list[int], lost: bool) -> None:
        self.note_revoked(ps, lost=lost)
        if ps:
            self.announce("revoked", ps)  # (lost ones too: this member's CLI line says "revoked")

    def _on_assigned(self, assigned: Any) -> None:
        meta = self.consumer.group_metadata()
        with self._lock:
            self.joined(meta.generation_id, meta.member_id)
            added = self.note_assigned(tp.partition for tp in assigned)
        log.info(
            "group=%s generation=%d member=%s (%s) assigned %s",
            self.config.group,
            self.rec.generation,
            self.rec.member_id,
            self.config.name,
            added,
        )
        self.announce("assigned", added)

    def _note_quiet_join(self) -> None:
        """Cooperative-sticky: a join that completed without a listener call (nothing of this member's
        assignment changed) is recorded after the poll that saw it, as ``rebalance_end`` with the new
        generation (``assigned([])``), from the public snapshot ``group_metadata()`` (generation and
        ``state``, which kafka-python documents for "whether the consumer has converged"): so a member that
        joins and gets nothing is live, and every member's rounds show. Never for eager assignors, whose
        listener is called on every join."""
        from kafka.coordinator.base import MemberState

        meta = self.consumer.group_metadata()
        if meta.state is not MemberState.STABLE or meta.generation_id < 0:
            return
        with self._lock:
            if meta.generation_id <= self.rec.generation and meta.member_id == self.rec.member_id:
                return
            self.joined(meta.generation_id, meta.member_id)
            self.note_assigned(())
        log.info(
            "group=%s generation=%d member=%s (%s) joined; assignment unchanged",
            self.config.group,
            meta.generation_id,
            meta.member_id,
            self.config.name,
        )

    # -- life cycle ----------------------------------------------------------------------------
    def construct(self) -> Any:
        from kafka import KafkaConsumer

        c = self.config
        return KafkaConsumer(
            bootstrap_servers=c.bootstrap.split(","),
            group_id=c.group,
            client_id=c.name,
            group_instance_id=c.group_instance_id,
            **self.kwargs,
        )

    def started_fields(self) -> dict[str, Any]:
        return {"effective": effective_config(self.consumer.config, self.config.properties)}

    def subscribe(self) -> None:
        self.consumer.subscribe([self.config.topic], listener=self._listener())
        self._await_topic_metadata()

    def _await_topic_metadata(self, timeout_s: float = 30.0) -> None:
        """Before the first poll (so before the first JoinGroup): refresh metadata now that the topic is
        subscribed and wait until it names the topic's partitions (at most ``timeout_s``, or until stop).

        Without it the first member to join, the leader, assigns nothing in generation 1 (its metadata
        does not have the topic yet) and rejoins when the metadata arrives. kafka-python 3.0.12 starts
        that rejoin from its metadata snapshot, not from its rejoin flag, and the leader's assignment
        makes the snapshots equal again: if ``poll``'s timeout ends while that JoinGroup/SyncGroup is in
        flight, the completed join is never picked up. The member then has no assignment and sends no
        heartbeat; the broker expires it and it never rejoins (a zombie that the runner counted as
        joined). With the partitions known at the first join, rejoins come only from the rejoin flag,
        which stays set until the join's result is applied.
        """
        deadline = time.monotonic() + timeout_s
        self.consumer.topics()  # one Metadata refresh that includes the subscribed topic
        while not self.consumer.partitions_for_topic(self.config.topic):
            if time.monotonic() > deadline or self._stop.is_set():
                return  # join as before: the topic may yet be created
            self._stop.wait(0.1)  # polling the client's metadata cache

    def poll(self) -> list[Polled] | None:
        from kafka.errors import KafkaError

        c = self.config
        try:
            batches = self.consumer.poll(timeout_ms=c.poll_timeout_ms)
        except KafkaError as e:
            if not e.retriable:
                raise
            # kafka-python 3.0.12 raises from poll() when a coordinator lookup finds no broker
            # (Java's consumer retries inside poll): a broker outage must not end the member.
            log.warning("%s: poll failed (%s), polling again", c.name, e)
            self._stop.wait(c.poll_timeout_ms / 1000)  # a poll's worth of backoff
            return None
        if self.config.assignor == "cooperative-sticky":
            self._note_quiet_join()
        return [(tp.partition, r.offset, r.value) for tp, records in batches.items() for r in records]

    def close(self) -> None:
        self.consumer.close()
