"""The aiokafka member: an unmodified ``AIOKafkaConsumer`` on an asyncio loop in the member's thread, in
the member template (:class:`~harness.members.clients.base.ClientMemberBase`), recording through
:class:`~harness.members.recorder.MemberRecorder` and committing by
:class:`~harness.members.recorder.CommitPolicy`.

Contract
--------
* Configuration: every property of ``config.properties`` except the member's own commit policy
  (``enable.auto.commit``, ``auto.commit.interval.ms``) becomes the ``AIOKafkaConsumer`` keyword of the
  same name in snake case, its value converted to the type of that keyword's default
  (:func:`consumer_kwargs`); ``partition.assignment.strategy`` is a comma list of range, roundrobin,
  sticky (aiokafka 0.14 has no cooperative protocol). The client's own auto-commit is always off.
* ``started`` carries ``effective``: what the consumer holds for each property given, by dotted name.
  aiokafka has no public configuration view: the values are read from the attributes its constructor
  stores them in (``consumer._<key>``, else ``consumer._client._<key>``; None where it keeps none under
  that name, e.g. ``consumer.timeout.ms``, which it keeps in seconds).
* Static membership: ``group_instance_id`` (aiokafka sends no LeaveGroup for a static member on close).
* Commits, each partition's outcome from the client's own result: an interval commit runs
  ``consumer.commit(offsets)`` in a task whose done callback records it (aiokafka's advice for a
  fire-and-forget commit); the rebalance listener's ``on_partitions_revoked`` (a coroutine, which
  aiokafka awaits) commits the revoked partitions and awaits the answer; a clean stop commits with
  ``await consumer.commit(offsets)`` before ``consumer.stop()``. A rejected commit carries the Kafka
  error name and code (aiokafka raises ``CommitFailedError`` from the broker's error). Every commit is
  given up after the client's ``request.timeout.ms`` (aiokafka's default when not given) and recorded
  rejected with ``TimeoutError``: aiokafka's ``commit`` looks for a coordinator until one answers or the
  consumer is closing, so an unbounded commit during a broker outage kept a stopping member (and a
  revoke listener, which ``consumer.stop()`` waits for) running until the broker came back; the bound is
  the one kafka-python applies to its blocking ``commit`` and ``close``.
* Identity: aiokafka has no public generation / member id; the member reads its group coordinator's
  ``generation`` and ``member_id`` attributes (``consumer._coordinator``) when a join completes
  (``on_partitions_assigned``), read-only.
* aiokafka calls ``on_partitions_revoked`` with the whole previous assignment and
  ``on_partitions_assigned`` with the whole new one (eager protocol only), and has no lost callback: when
  the membership was lost (the broker answered UNKNOWN_MEMBER_ID or ILLEGAL_GENERATION: aiokafka's
  ``GroupCoordinator.reset_generation()``, generation -1 and member id ""), the same
  ``on_partitions_revoked`` comes before the rejoin. The member tells the two apart by that generation
  (read-only, as for identity): a lost revoke is recorded ``lost=True`` and commits nothing, as
  ``on_partitions_lost`` on the other clients. (A commit then goes out with generation -1 and no member
  id, which a broker takes for an admin commit when the group is empty: Kafka's ``validateOffsetCommit``
  accepts it, so a process that owns nothing committed.)
* Heartbeat errors: aiokafka has no callback or result for a failed heartbeat (it logs and rejoins), so
  this member writes no ``heartbeat_error``.
* The loop: one :class:`asyncio.Runner` per member; each step of the template that talks to the client
  (construct and start, subscribe, each poll, the final commit, the close) runs on it, and it is closed
  (remaining tasks cancelled, as :func:`asyncio.run` does) before ``stopped`` is written. The client's
  own tasks (heartbeat, fetcher, the rebalance listener, interval commits) run whenever a step does. So a
  stalled member (:meth:`~harness.members.template.MemberTemplate.stall`) keeps running the loop, with no
  ``getmany`` (:meth:`AiokafkaMember.stall_wait`): its heartbeat goes on and its poll timer (the
  heartbeat routine leaves once the consumer has not fetched for ``max.poll.interval.ms``) can fire; a
  blocking wait would freeze them all, a pause rather than a stall.
* :meth:`stop` may be called from any thread (or a signal handler): the loop polls with
  ``getmany(timeout_ms=poll_timeout_ms)`` and checks the stop flag between polls. ``clean=True`` commits
  and stops the consumer (LeaveGroup for a dynamic member); ``clean=False`` returns without leaving.
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Mapping
from typing import Any

from harness.history.writer import History
from harness.members.clients.base import ClientMemberBase, Polled
from harness.members.clients.python_config import ASSIGNOR
from harness.members.clients.python_config import consumer_kwargs as python_consumer_kwargs
from harness.members.interface import OnChange
from harness.members.recorder import MemberConfig
from harness.scenario.properties import MEMBER_POLICY_PROPERTIES, client_defaults, snake

log = logging.getLogger("harness.member.aiokafka")


def _known_assignors() -> dict[str, type]:
    from aiokafka.coordinator.assignors.range import RangePartitionAssignor
    from aiokafka.coordinator.assignors.roundrobin import RoundRobinPartitionAssignor
    from aiokafka.coordinator.assignors.sticky.sticky_assignor import StickyPartitionAssignor

    return {
        "range": RangePartitionAssignor,
        "roundrobin": RoundRobinPartitionAssignor,
        "sticky": StickyPartitionAssignor,
    }


def _defaults() -> dict[str, Any]:
    return client_defaults("aiokafka")


def consumer_kwargs(props: Mapping[str, str]) -> dict[str, Any]:
    """The ``AIOKafkaConsumer`` keyword arguments of ``props`` (see the module contract)."""
    return python_consumer_kwargs("aiokafka", props, _defaults(), _known_assignors())


def effective_config(consumer: Any, props: Mapping[str, str]) -> dict[str, Any]:
    """What ``consumer`` holds for each client property in ``props`` (see the module contract)."""
    missing = object()
    out: dict[str, Any] = {}
    for name in props:
        if name in MEMBER_POLICY_PROPERTIES:
            continue
        attr = "_" + snake(name)
        value: Any = getattr(consumer, attr, missing)
        if value is missing:
            value = getattr(getattr(consumer, "_client", None), attr, None)
        if name == ASSIGNOR:
            out[name] = ",".join(getattr(a, "name", str(a)) for a in value or ())
        elif value is None or isinstance(value, bool | int | float | str):
            out[name] = value
        else:
            out[name] = str(value)
    return out


class AiokafkaMember(ClientMemberBase):
    """One aiokafka consumer in a group (see the module contract)."""

    #: a close that raised is not a clean stop
    close_must_return = True

    def __init__(self, config: MemberConfig, history: History, on_change: OnChange | None = None) -> None:
        #: the client's keyword arguments, checked now: a bad property is a ValueError from the constructor
        self.kwargs = consumer_kwargs(config.properties)
        super().__init__(config, history, on_change)
        self._runner = asyncio.Runner()
        self._tasks: set[asyncio.Task[None]] = set()
        #: how long a commit may take (see the module contract)
        self.commit_timeout_s = (
            int(config.prop("request.timeout.ms", str(_defaults()["request_timeout_ms"]))) / 1000
        )

    # -- commits -------------------------------------------------------------------------------
    def _offsets(self, pending: Mapping[int, int]) -> dict[Any, int]:
        from aiokafka import TopicPartition

        return {TopicPartition(self.config.topic, p): o for p, o in pending.items()}

    async def _commit(self, pending: Mapping[int, int]) -> None:
        """Commit ``pending`` and record the outcome (never raises a client error)."""
        if not pending:
            return
        try:
            await asyncio.wait_for(self.consumer.commit(self._offsets(pending)), self.commit_timeout_s)
        except Exception as e:  # the commit's outcome (TimeoutError: given up): recorded, the member goes on
            self.record_commit(pending, e)
        else:
            self.record_commit(pending, None)

    def commit_interval(self) -> None:
        """A task on the member's loop (it runs with the next poll)."""
        pending = self.policy.pending()
        if pending:
            task = self._runner.get_loop().create_task(self._commit(pending))
            self._tasks.add(task)
            task.add_done_callback(self._tasks.discard)

    async def _final_commit(self) -> None:
        if self._tasks:
            await asyncio.wait(self._tasks)
        await self._commit(self.policy.pending())

    def final_commit(self) -> None:
        self._runner.run(self._final_commit())

    # -- rebalance listener ----------------------------------------------------------------------
    def _listener(self) -> Any:
        from aiokafka.abc import ConsumerRebalanceListener

        member = self

        class Listener(ConsumerRebalanceListener):
            async def on_partitions_revoked(self, revoked: Any) -> None:  # pyright: ignore[reportIncompatibleMethodOverride]
                ps = sorted(tp.partition for tp in revoked)
                lost = bool(ps) and member.consumer._coordinator.generation < 0  # reset: membership lost
                if not lost:
                    await member._commit(member.policy.pending(ps))
                member.note_revoked(ps, lost=lost)
                if ps:
                    member.announce("lost" if lost else "revoked", ps)

            async def on_partitions_assigned(self, assigned: Any) -> None:  # pyright: ignore[reportIncompatibleMethodOverride]
                coordinator = member.consumer._coordinator  # no public identity (see the module contract)
                member.joined(coordinator.generation, coordinator.member_id)
                member.announce("assigned", member.note_assigned(tp.partition for tp in assigned))

        return Listener()

    # -- life cycle ----------------------------------------------------------------------------
    async def _construct(self) -> Any:
        from aiokafka import AIOKafkaConsumer

        c = self.config
        consumer = AIOKafkaConsumer(
            bootstrap_servers=c.bootstrap,  # aiokafka splits a comma list itself
            group_id=c.group,
            client_id=c.name,
            group_instance_id=c.group_instance_id,
            **self.kwargs,
        )
        await consumer.start()
        return consumer

    def construct(self) -> Any:
        """The consumer, started (connected to the bootstrap brokers)."""
        return self._runner.run(self._construct())

    def started_fields(self) -> dict[str, Any]:
        return {"effective": effective_config(self.consumer, self.config.properties)}

    async def _subscribe(self) -> None:
        self.consumer.subscribe([self.config.topic], listener=self._listener())

    def subscribe(self) -> None:
        self._runner.run(self._subscribe())

    async def _poll(self) -> list[Polled] | None:
        from aiokafka.errors import KafkaError

        c = self.config
        try:
            batches = await self.consumer.getmany(timeout_ms=c.poll_timeout_ms)
        except KafkaError as e:
            if not e.retriable:
                raise
            log.warning("%s: poll failed (%s), polling again", c.name, e)
            await asyncio.sleep(c.poll_timeout_ms / 1000)  # a poll's worth of backoff
            return None
        return [(tp.partition, r.offset, r.value) for tp, records in batches.items() for r in records]

    def poll(self) -> list[Polled] | None:
        return self._runner.run(self._poll())

    def stall_wait(self) -> None:
        """Run the loop, polling nothing, for the template's stall wait (see the module contract)."""
        self._runner.run(asyncio.sleep(self.stall_wait_s))

    def close(self) -> None:
        self._runner.run(self._stop_consumer())

    async def _stop_consumer(self) -> None:
        """``consumer.stop()`` (commit hooks, LeaveGroup, then the fetcher and the client). aiokafka 0.14's
        ``Fetcher.close`` cancels its in-flight fetch requests and awaits them unguarded, so when one is
        pending (a fetch retrying against a broker that is gone) ``stop()`` raises their
        ``CancelledError`` after the group was left: that one is logged, not taken for this task's own
        cancellation (which is re-raised)."""
        try:
            await self.consumer.stop()
        except asyncio.CancelledError:
            task = asyncio.current_task()
            if task is not None and task.cancelling():
                raise
            log.warning("%s: aiokafka's close ended on a cancelled fetch request", self.config.name)

    def release(self) -> None:
        """Close the loop (what :func:`asyncio.run` does at its end)."""
        self._runner.close()
