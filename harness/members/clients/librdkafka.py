"""The librdkafka member: an unmodified confluent-kafka ``Consumer`` in the member template
(:class:`~harness.members.clients.base.ClientMemberBase`), recording through
:class:`~harness.members.recorder.MemberRecorder`.

Contract
--------
* :class:`LibrdkafkaMember` implements :class:`harness.members.interface.ClientMember`. Kafka properties
  (:attr:`MemberConfig.properties`, Kafka's dotted names) go to librdkafka as they are, except the commit
  policy's (``enable.auto.commit``, ``auto.commit.interval.ms``): the member carries those out itself
  (:class:`~harness.members.recorder.CommitPolicy`) and sets ``enable.auto.commit=false`` and
  ``enable.auto.offset.store=false`` (it commits explicit offsets, so librdkafka's offset store is unused).
  Identity (``bootstrap.servers``, ``group.id``, ``client.id``, ``group.instance.id`` when static) comes from
  the config. The ``started`` event carries ``effective``: the configuration the member gave librdkafka
  (passed properties and what it set itself). librdkafka has no API to read its effective configuration back
  (``rd_kafka_conf_dump`` is not exposed by confluent-kafka for a live client), so tests check what the broker
  saw instead.
* Rebalances come from the subscribe callbacks ``on_assign`` / ``on_revoke`` / ``on_lost``. With
  ``cooperative-sticky`` (librdkafka's only COOPERATIVE assignor; confluent-kafka 2.16 has no
  ``rebalance_protocol()`` binding, so the protocol follows from the configured assignor), and under the
  consumer group protocol (``group.protocol=consumer``, KIP-848: always incremental) the callbacks name
  only what changes and the member calls ``incremental_assign`` / ``incremental_unassign`` with exactly
  those partitions (also an empty list: a round that changes nothing of this member still writes
  ``rebalance_end``); eager protocols call ``assign`` / ``unassign`` with the whole assignment.
* Commits: every ``auto.commit.interval.ms`` an asynchronous commit of what was processed, its outcome per
  partition from the ``on_commit`` callback (``TopicPartition.error``); in ``on_revoke`` (never in
  ``on_lost``) and on a clean close a synchronous commit, its outcome from the returned partitions or the
  ``KafkaException``'s error code. librdkafka also reports a synchronous commit to ``on_commit``; such
  echoes are told from asynchronous commits by their offsets (an ``on_commit`` whose offsets match no
  outstanding asynchronous commit is not recorded again).
* Identity: ``member`` is ``Consumer.memberid()`` and ``generation`` the generation in
  ``Consumer.consumer_group_metadata()`` (under the consumer group protocol librdkafka keeps the member
  epoch there), both read in each rebalance callback. librdkafka has no
  accessor for the generation (the statistics' ``cgrp`` object has ``join_state``, ``rebalance_cnt``,
  ``assignment_size`` but no generation); ``consumer_group_metadata()`` returns librdkafka's serialised
  ``rd_kafka_consumer_group_metadata_t`` (``rd_kafka_consumer_group_metadata_write``, the bytes a
  transactional producer reads back), which carries the group id, generation and member id
  (:func:`generation_of`). Those bytes are trusted only when their layout is the one known here and their
  group and member id are this member's (``memberid()``); otherwise ``generation`` is -1, as before
  (read the broker's ``group_request`` / ``rebalance_end`` events for it then).
* Errors: ``error_cb`` and the error of a message from ``poll()``. ``_PARTITION_EOF`` is not an error. A
  fatal error (``KafkaError.fatal()``, or a message error ``_FATAL``: librdkafka 2.16 reports a fenced static
  member, ``FENCED_INSTANCE_ID``, that way, with ``fatal()`` false) is recorded once as ``heartbeat_error``
  and ends :meth:`run` with a :class:`LibrdkafkaFatal` naming it (no commit, no close: librdkafka forbids
  further group operations).
  Group errors (see :data:`GROUP_ERRORS`; from either source, e.g. ``INVALID_SESSION_TIMEOUT`` of a refused
  JoinGroup arrives as a message error) are recorded as ``heartbeat_error`` with librdkafka's error code;
  others (connection loss) are logged only: librdkafka retries them itself.
* The poll timer (a stall, :meth:`~harness.members.template.MemberTemplate.stall`): once the member has
  not polled for ``max.poll.interval.ms``, librdkafka leaves the group from its own threads (a dynamic
  member) and, on the next poll, delivers ``_MAX_POLL_EXCEEDED`` (recorded as ``heartbeat_error``) and
  calls ``on_lost`` with the partitions (``revoked`` lost); the member then rejoins.
* :meth:`stop` may be called from any thread (the CLI's signal handler): the poll loop polls with
  ``config.poll_timeout_ms`` and checks the flag between polls. ``clean=True``: synchronous commit, then
  ``Consumer.close()`` (LeaveGroup for a dynamic member; a static member stays in the group until its
  session expires, KIP-345); ``clean=False``: return without closing. A clean stop while no coordinator
  answers (the broker is gone) lasts until librdkafka gives up its synchronous commit (``Local: Waiting
  for coordinator``, recorded rejected), which it does when the member's session times out
  (``session.timeout.ms``, 45 s by default; measured with librdkafka 2.16): confluent-kafka's
  synchronous ``commit`` takes no timeout.
* librdkafka's log lines go to the Python logger ``harness.member.librdkafka.<name>`` (logs only, never
  parsed).
"""

from __future__ import annotations

import logging
import sys
from typing import Any

from harness.history.writer import History
from harness.members.clients.base import ClientMemberBase, Polled
from harness.members.interface import MemberFatal, OnChange
from harness.members.recorder import MemberConfig
from harness.scenario.properties import ASSIGNORS, MEMBER_POLICY_PROPERTIES

log = logging.getLogger("harness.member.librdkafka")

#: librdkafka's error names that are about this member's group membership: recorded as ``heartbeat_error``.
GROUP_ERRORS = frozenset(
    {
        "UNKNOWN_MEMBER_ID",
        "ILLEGAL_GENERATION",
        "REBALANCE_IN_PROGRESS",
        "FENCED_INSTANCE_ID",
        "NOT_COORDINATOR",
        "COORDINATOR_NOT_AVAILABLE",
        "INVALID_SESSION_TIMEOUT",
        "_MAX_POLL_EXCEEDED",
    }
)


#: The layout of librdkafka's serialised consumer group metadata (``rd_kafka_consumer_group_metadata_write``,
#: as librdkafka 2.16 writes it): this magic, the generation (int32, host byte order), then the NUL-terminated
#: group id and member id, a byte saying whether the group instance id is absent, and that id when present.
CGMD_MAGIC = b"CGMDv2:"


def generation_of(metadata: object, group: str, member_id: str) -> int:
    """The generation in librdkafka's serialised group metadata ``metadata`` (``consumer_group_metadata()``),
    or -1 unless the bytes have the layout of :data:`CGMD_MAGIC` and name ``group`` and ``member_id``."""
    if not isinstance(metadata, bytes) or not metadata.startswith(CGMD_MAGIC) or not member_id:
        return -1
    body = metadata[len(CGMD_MAGIC) :]
    if len(body) < 4:
        return -1
    generation = int.from_bytes(body[:4], sys.byteorder, signed=True)
    names = body[4:].split(b"\0", 2)
    if len(names) < 3 or names[0] != group.encode() or names[1] != member_id.encode():
        return -1
    return generation


class LibrdkafkaFatal(MemberFatal):
    """librdkafka reported a fatal error: the member cannot go on (the message names the error)."""


class LibrdkafkaMember(ClientMemberBase):
    """One confluent-kafka consumer in a group (see the module contract). Its callbacks are all served
    from ``poll()`` / ``close()`` on the member's thread."""

    def __init__(self, config: MemberConfig, history: History, on_change: OnChange | None = None) -> None:
        if config.assignor not in ASSIGNORS["librdkafka"]:
            raise ValueError(
                f"librdkafka has no assignor {config.assignor!r} (it has: {', '.join(ASSIGNORS['librdkafka'])})"
            )
        super().__init__(config, history, on_change)
        # the consumer group protocol (KIP-848) is incremental whatever the assignor: librdkafka refuses an
        # eager assign() in its rebalance callbacks there
        consumer_protocol = config.prop("group.protocol", "classic").lower() == "consumer"
        self.cooperative = config.assignor == "cooperative-sticky" or consumer_protocol
        self._fatal: str | None = None
        #: asynchronous commits not yet answered by on_commit, in the order they were sent
        self._async_commits: list[dict[int, int]] = []
        self.logger = logging.getLogger(f"harness.member.librdkafka.{config.name}")

    # -- configuration ---------------------------------------------------------------------------
    def effective_config(self) -> dict[str, str]:
        """The properties given to librdkafka (no callbacks): passed ones, then the member's own settings."""
        c = self.config
        conf = {k: v for k, v in c.properties.items() if k not in MEMBER_POLICY_PROPERTIES}
        conf.update(
            {
                "bootstrap.servers": c.bootstrap,
                "group.id": c.group,
                "client.id": c.name,
                "enable.auto.commit": "false",
                "enable.auto.offset.store": "false",
            }
        )
        if c.group_instance_id is not None:
            conf["group.instance.id"] = c.group_instance_id
        return conf

    # -- rebalance callbacks ---------------------------------------------------------------------
    def _identity(self, consumer: Any) -> None:
        member_id = consumer.memberid() or ""
        self.joined(
            generation_of(consumer.consumer_group_metadata(), self.config.group, member_id), member_id
        )

    def _on_assign(self, consumer: Any, partitions: list[Any]) -> None:
        self._identity(consumer)
        if self.cooperative:
            consumer.incremental_assign(partitions)
        else:
            consumer.assign(partitions)
        added = self.note_assigned(tp.partition for tp in partitions)
        self.logger.info(
            "member=%s assigned %s (now %s)", self.rec.member_id, added, sorted(self.rec.assignment)
        )
        self.announce("assigned", added)

    def _on_revoke(self, consumer: Any, partitions: list[Any]) -> None:
        self._revoke(consumer, partitions, lost=False)

    def _on_lost(self, consumer: Any, partitions: list[Any]) -> None:
        self._revoke(consumer, partitions, lost=True)

    def _revoke(self, consumer: Any, partitions: list[Any], lost: bool) -> None:
        self._identity(consumer)
        ps = sorted(tp.partition for tp in partitions)
        if not lost:
            self._commit_sync(ps)  # before the partitions go: the next owner starts from here
        self.note_revoked(ps, lost=lost)
        if self.cooperative:
            consumer.incremental_unassign(partitions)
        else:
            consumer.unassign()
        self.logger.info("member=%s %s %s", self.rec.member_id, "lost" if lost else "revoked", ps)
        if ps:
            self.announce("lost" if lost else "revoked", ps)

    # -- errors ----------------------------------------------------------------------------------
    def _on_error(self, err: Any) -> None:
        from confluent_kafka import KafkaError

        if err.fatal() or err.code() == KafkaError._FATAL:
            self._fatal_error(err)
        elif err.name() in GROUP_ERRORS:
            self.rec.heartbeat_error(err.str(), code=err.code())
        else:
            self.logger.warning("client error %s: %s", err.name(), err.str())

    def _fatal_error(self, err: Any) -> None:
        """Record the first fatal error (error_cb and poll() may both report it) and stop polling."""
        if self._fatal is None:
            self._fatal = f"{err.name()}: {err.str()}"
            self.rec.heartbeat_error(err.str(), code=err.code())
        self._stop.set()

    # -- commits ---------------------------------------------------------------------------------
    def _tps(self, offsets: dict[int, int]) -> list[Any]:
        from confluent_kafka import TopicPartition

        return [TopicPartition(self.config.topic, p, o) for p, o in offsets.items()]

    def _on_commit(self, err: Any, partitions: list[Any]) -> None:
        offsets = {tp.partition: tp.offset for tp in partitions}
        if offsets not in self._async_commits:
            return  # the echo of a synchronous commit, recorded from its return value
        self._async_commits.remove(offsets)
        self.record_outcomes(_outcome(tp, tp.error or err) for tp in partitions)

    def commit_interval(self) -> None:
        offsets = self.policy.pending()
        if offsets:
            self._async_commits.append(offsets)
            self.consumer.commit(offsets=self._tps(offsets), asynchronous=True)

    def final_commit(self) -> None:
        self._commit_sync()

    def _commit_sync(self, partitions: list[int] | None = None) -> None:
        from confluent_kafka import KafkaException

        offsets = self.policy.pending(partitions)
        if not offsets:
            return
        try:
            result = self.consumer.commit(offsets=self._tps(offsets), asynchronous=False)
        except KafkaException as e:
            err = e.args[0]
            self.record_outcomes((p, o, err.str(), err.code()) for p, o in offsets.items())
            return
        self.record_outcomes(_outcome(tp, tp.error) for tp in result or [])

    # -- life cycle ------------------------------------------------------------------------------
    def construct(self) -> Any:
        from confluent_kafka import Consumer

        conf: dict[str, Any] = dict(self.effective_config())
        conf.update({"on_commit": self._on_commit, "error_cb": self._on_error, "logger": self.logger})
        return Consumer(conf)

    def started_fields(self) -> dict[str, Any]:
        return {"effective": self.effective_config(), "cooperative": self.cooperative}

    def subscribe(self) -> None:
        self.consumer.subscribe(
            [self.config.topic], on_assign=self._on_assign, on_revoke=self._on_revoke, on_lost=self._on_lost
        )

    def poll(self) -> list[Polled] | None:
        from confluent_kafka import KafkaError

        msg = self.consumer.poll(self.config.poll_timeout_ms / 1000)
        if msg is None:
            return []
        err = msg.error()
        if err is None:
            return [(msg.partition(), msg.offset(), msg.value())]
        if err.code() == KafkaError._PARTITION_EOF:
            pass  # the end of a partition for now: not an error
        elif err.fatal() or err.code() == KafkaError._FATAL:
            # librdkafka signals a fatal error as a message error _FATAL whose fatal() is false
            self._fatal_error(err)
            return None  # stopping: no commit
        elif err.name() in GROUP_ERRORS:  # e.g. a JoinGroup the broker refused
            self.rec.heartbeat_error(err.str(), code=err.code())
        else:
            self.logger.warning("poll error %s: %s", err.name(), err.str())
        return []

    def close(self) -> None:
        self.consumer.close()  # serves the final callbacks (eager: on_revoke), then LeaveGroup

    def may_close(self, completed: bool) -> bool:
        """Only after a normal end of the poll loop without a fatal error (librdkafka forbids further
        group operations then)."""
        return completed and self._fatal is None

    def unclean_fields(self) -> dict[str, Any]:
        return {"fatal": self._fatal}

    def after_run(self) -> None:
        if self._fatal is not None:
            raise LibrdkafkaFatal(f"{self.config.name}: librdkafka fatal error {self._fatal}")


def _outcome(tp: Any, error: Any) -> tuple[int, int, str | None, int | None]:
    """A committed ``TopicPartition``'s outcome with its error (a ``KafkaError`` or None)."""
    if error is None:
        return tp.partition, tp.offset, None, None
    return tp.partition, tp.offset, error.str(), error.code()
