"""A coordinator-side group member: an unmodified kafka-python ``KafkaConsumer`` that records events.

Contract
--------
* :class:`CoordinatorMember` subscribes one topic with a rebalance listener and polls until
  :meth:`stop`. It uses kafka-python as users run it: group management by the broker, auto-commit on
  (commits every ``auto_commit_interval_ms`` and before every rebalance), ``auto_offset_reset``
  earliest unless told otherwise.
* Events (history vocabulary): ``started``, ``assigned`` / ``revoked`` (one event per partition, with
  the generation; ``lost=True`` when the membership was lost), ``rebalance_begin`` / ``rebalance_end``
  (with the whole assignment), ``record`` (topic, partition, offset, and ``seq`` when the value is the
  workload's JSON), ``commit`` / ``commit_rejected`` and ``heartbeat_error`` (observed through
  kafka-python's own log records, so the client stays unmodified), ``stopped``.
  ``source`` is the harness's name for the member; ``member`` is the broker-assigned member id.
* One member per process: kafka-python's log records carry no member identity, so the log-based
  observation is only unambiguous with one consumer in the process.
* The one kafka-python member of the harness: runs, benches (:mod:`harness.bench.rebalance`) and tests
  start it as ``herdlab member coordinator`` (:class:`harness.run.launch.MemberService`) and read
  what it did from its history, never from kafka-python's private fields.
* With ``cooperative-sticky``, kafka-python 3.0.12 calls the listener only for partitions revoked or
  added, so a completed rebalance that changes nothing of this member's assignment writes no
  ``rebalance_end``: its ``generation`` field then lags the group's (read the broker's).
* A retriable client error from ``poll`` (no broker reachable: kafka-python 3.0.12 raises where
  Java's consumer retries) is logged and polling goes on; the member outlives a broker outage.
* :meth:`stop` with ``clean=True`` closes the consumer (commit, LeaveGroup for dynamic members);
  ``clean=False`` returns without leaving (used only when the process is about to die anyway).
"""

from __future__ import annotations

import contextlib
import json
import logging
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any, Literal, cast

from harness.history.writer import History

log = logging.getLogger("harness.member.coordinator")

ASSIGNORS = ("range", "roundrobin", "sticky", "cooperative-sticky")


@dataclass(frozen=True)
class CoordinatorMemberConfig:
    """What a coordinator member needs; names follow kafka-python's options."""

    bootstrap: str
    group: str
    topic: str
    name: str
    session_timeout_ms: int = 6000
    heartbeat_interval_ms: int = 500
    max_poll_interval_ms: int = 30000
    auto_commit_interval_ms: int = 5000
    enable_auto_commit: bool = True
    auto_offset_reset: Literal["earliest", "latest"] = "earliest"
    assignor: str = "range"
    group_instance_id: str | None = None
    metadata_max_age_ms: int = 5000
    poll_timeout_ms: int = 200


def _assignor_class(name: str) -> type:
    from kafka.coordinator.assignors.cooperative_sticky import CooperativeStickyAssignor
    from kafka.coordinator.assignors.range import RangePartitionAssignor
    from kafka.coordinator.assignors.roundrobin import RoundRobinPartitionAssignor
    from kafka.coordinator.assignors.sticky.sticky_assignor import StickyPartitionAssignor

    return {
        "range": RangePartitionAssignor,
        "roundrobin": RoundRobinPartitionAssignor,
        "sticky": StickyPartitionAssignor,
        "cooperative-sticky": CooperativeStickyAssignor,
    }[name]


def parse_seq(value: bytes | None) -> int | None:
    """The workload's sequence number from a record value (JSON with ``"seq"``), or None."""
    if not value or value[:1] != b"{":
        return None
    try:
        seq = json.loads(value).get("seq")
    except (ValueError, AttributeError):
        return None
    return seq if isinstance(seq, int) else None


class _ClientLogObserver(logging.Handler):
    """Turns kafka-python's commit and heartbeat log records into history events."""

    def __init__(self, member: CoordinatorMember) -> None:
        super().__init__(logging.DEBUG)
        self.member = member

    def emit(self, record: logging.LogRecord) -> None:  # noqa: D102 - logging.Handler API
        with contextlib.suppress(Exception):  # an observer must never break the client
            self._observe(record)

    def _observe(self, record: logging.LogRecord) -> None:
        msg = str(record.msg)
        m = self.member
        if record.name == "kafka.coordinator.consumer":
            if msg.startswith("Group %s committed offset %s for partition %s"):
                _group, offset, tp = cast(tuple[Any, Any, Any], record.args)
                m.emit(
                    "commit",
                    topic=tp.topic,
                    partition=tp.partition,
                    offset=getattr(offset, "offset", offset),
                    store="kafka",
                )
            elif "commit failed" in msg.lower() or (
                msg.startswith(("OffsetCommit for group", "Failing OffsetCommit")) and "ail" in msg
            ):
                m.emit("commit_rejected", error=record.getMessage()[:300], store="kafka")
        elif record.name == "kafka.coordinator.heartbeat" and record.levelno >= logging.WARNING:
            m.emit("heartbeat_error", error=record.getMessage()[:300])


class CoordinatorMember:
    """One kafka-python consumer in a group, recording what it does (see the module contract)."""

    def __init__(
        self,
        config: CoordinatorMemberConfig,
        history: History,
        on_change: Callable[[str, list[int], int], None] | None = None,
    ) -> None:
        self.config = config
        self.history = history
        self.on_change = on_change
        self._stop = threading.Event()
        self._clean = True
        self.consumer: Any = None
        self.generation = -1
        self.member_id = ""
        self.assignment: set[int] = set()
        self.records = 0

    def emit(self, kind: str, **fields: Any) -> None:
        self.history.emit(
            kind,
            impl="coordinator",
            group=self.config.group,
            member=self.member_id,
            generation=self.generation,
            **fields,
        )

    def _refresh_identity(self) -> None:
        meta = self.consumer._coordinator.group_metadata()  # read-only snapshot (kafka-python API)
        self.generation = meta.generation_id
        self.member_id = meta.member_id

    # -- rebalance listener --------------------------------------------------------------------
    def _listener(self) -> Any:
        from kafka import ConsumerRebalanceListener

        member = self

        class Listener(ConsumerRebalanceListener):
            def on_partitions_revoked(self, revoked: Any) -> None:
                member._revoked(revoked, lost=False)

            def on_partitions_assigned(self, assigned: Any) -> None:
                member._assigned(assigned)

            def on_partitions_lost(self, lost: Any) -> None:
                member._revoked(lost, lost=True)

        return Listener()

    def _revoked(self, partitions: Any, lost: bool) -> None:
        self.emit("rebalance_begin", lost=lost)
        for tp in sorted(partitions, key=lambda t: t.partition):
            self.emit("revoked", topic=tp.topic, partition=tp.partition, lost=lost)
            self.assignment.discard(tp.partition)
        if self.on_change and partitions:
            self.on_change("revoked", sorted(tp.partition for tp in partitions), self.generation)

    def _assigned(self, partitions: Any) -> None:
        self._refresh_identity()
        added = sorted(tp.partition for tp in partitions)
        for p in added:
            self.emit("assigned", topic=self.config.topic, partition=p)
            self.assignment.add(p)
        self.emit("rebalance_end", outcome="ok", partitions=sorted(self.assignment))
        log.info(
            "group=%s generation=%d member=%s (%s) assigned %s",
            self.config.group,
            self.generation,
            self.member_id,
            self.config.name,
            added,
        )
        if self.on_change:
            self.on_change("assigned", added, self.generation)

    # -- life cycle ----------------------------------------------------------------------------
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

    def run(self) -> None:
        """Join and consume until :meth:`stop`; then leave (clean) or just return."""
        from kafka import KafkaConsumer
        from kafka.errors import KafkaError

        c = self.config
        observer = _ClientLogObserver(self)
        kc_log = logging.getLogger("kafka.coordinator.consumer")
        hb_log = logging.getLogger("kafka.coordinator.heartbeat")
        kc_log.addHandler(observer)
        hb_log.addHandler(observer)
        kc_log.setLevel(logging.DEBUG)
        hb_log.setLevel(logging.INFO)
        kc_log.propagate = False  # its DEBUG records feed the observer, not the process log
        try:
            self.emit("ready")  # booted, about to connect: t0 of a join (harness.kernel.events)
            self.consumer = KafkaConsumer(
                bootstrap_servers=c.bootstrap.split(","),
                group_id=c.group,
                client_id=c.name,
                group_instance_id=c.group_instance_id,
                session_timeout_ms=c.session_timeout_ms,
                heartbeat_interval_ms=c.heartbeat_interval_ms,
                max_poll_interval_ms=c.max_poll_interval_ms,
                enable_auto_commit=c.enable_auto_commit,
                auto_commit_interval_ms=c.auto_commit_interval_ms,
                auto_offset_reset=c.auto_offset_reset,
                partition_assignment_strategy=[_assignor_class(c.assignor)],
                metadata_max_age_ms=c.metadata_max_age_ms,
            )
            self.emit("started", name=c.name, static=c.group_instance_id is not None, assignor=c.assignor)
            self.consumer.subscribe([c.topic], listener=self._listener())
            self._await_topic_metadata()
            while not self._stop.is_set():
                try:
                    batches = self.consumer.poll(timeout_ms=c.poll_timeout_ms)
                except KafkaError as e:
                    if not e.retriable:
                        raise
                    # kafka-python 3.0.12 raises from poll() when a coordinator lookup finds no broker
                    # (Java's consumer retries inside poll): a broker outage must not end the member.
                    log.warning("%s: poll failed (%s), polling again", c.name, e)
                    self._stop.wait(c.poll_timeout_ms / 1000)  # a poll's worth of backoff
                    continue
                for tp, records in batches.items():
                    for r in records:
                        self.emit(
                            "record",
                            topic=tp.topic,
                            partition=tp.partition,
                            offset=r.offset,
                            seq=parse_seq(r.value),
                        )
                    self.records += len(records)
        finally:
            if self.consumer is not None and self._clean:
                t0 = time.monotonic()
                try:
                    self.consumer.close()
                finally:
                    self.emit(
                        "stopped", clean=True, close_ms=(time.monotonic() - t0) * 1e3, records=self.records
                    )
            else:
                self.emit("stopped", clean=False, records=self.records)
            kc_log.removeHandler(observer)
            hb_log.removeHandler(observer)

    @property
    def stopping(self) -> bool:
        """Whether :meth:`stop` was called."""
        return self._stop.is_set()

    def stop(self, clean: bool = True) -> None:
        """Ask :meth:`run` to return after the current poll; ``clean`` closes the consumer (leave)."""
        self._clean = clean
        self._stop.set()
