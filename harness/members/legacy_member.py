"""The legacy_zk member (Kafka 0.8's ZooKeeper consumer, :class:`legacy_zk.member.LegacyZkMember`) on the
member template (:mod:`harness.members.template`): the same life cycle as the coordinator members and a
member in another language, its hooks driving the consumer through its public API.

Contract
--------
* The hooks, in the template's order:

  - :meth:`~LegacyMember.construct` makes the consumer (no IO yet) on the given kazoo handler, writing to
    the given history; its assignment changes reach :meth:`~LegacyMember.assignment_changed` (0.8's
    rebalance outcome: ``assigned``, ``revoked`` or ``gave_up``, with the partitions), which calls the
    ``on_assignment`` callback;
  - :meth:`~LegacyMember.subscribe` is the consumer's ``start()``: connect, register, watch, the first
    synced rebalance (its outcome in :attr:`~LegacyMember.converged`); :attr:`~LegacyMember.running` is
    true once it returned;
  - :meth:`~LegacyMember.poll_once`: the consumer fetches, rebalances and commits on its own threads (or
    greenlets); one poll waits, on the consumer's handler (so that a gevent host keeps running), until
    :meth:`~LegacyMember.stop` or a poll interval passed;
  - :meth:`~LegacyMember.final_commit` does nothing and :meth:`~LegacyMember.close` is the consumer's
    ``close()``: 0.8's shutdown stops the fetcher, then commits, then closes the session, in that order
    (committing before the fetcher stopped would commit a position it still moves);
  - every end closes the consumer (a start that raised too: its session and threads are released), as
    0.8's shutdown did whatever state the connector was in.

* The life cycle's events: the consumer writes its own history (``legacy_zk`` is handed a history and
  writes every event of its protocol into it): ``ready`` as its start begins (t0 of a join), ``started``
  once its session is open, ``stopped`` (with its statistics) at the end of its close. The announce hooks
  therefore write nothing; they mark where the template's steps meet those events.
* :meth:`~LegacyMember.stop` (any thread, or a greenlet of the member's gevent hub): the stop flag, and the
  end of the current poll's wait; a stop while the consumer is still starting closes it at once (its
  start's waits for ZooKeeper, for a registration to expire or for an offset manager end only when it
  closes), so that ``run`` returns without waiting for ZooKeeper. A clean and an unclean stop are the
  same for this member: 0.8's shutdown is the only way it leaves.
* :meth:`~LegacyMember.quiesce`: stop re-arming watches and starting rebalances (see
  :meth:`legacy_zk.member.LegacyZkMember.quiesce`); a host quiesces every member of a process before
  stopping any (:mod:`harness.members.legacy_host`).
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from harness.kernel.history import History
from harness.members.template import MemberTemplate
from legacy_zk.config import ConsumerConfig
from legacy_zk.ids import TopicPartition
from legacy_zk.member import LegacyZkMember

#: ``on_assignment(consumer, what, partitions)``: what changed (``assigned``, ``revoked``, ``gave_up``).
OnAssignment = Callable[[LegacyZkMember, str, list[TopicPartition]], None]

#: How a consumer is made (the test seam): ``make(config, history=, handler=, on_assignment=)``.
MakeConsumer = Callable[..., LegacyZkMember]


class LegacyMember(MemberTemplate):
    """One legacy_zk member (see the module contract); ``poll_interval_s``: the longest one poll waits."""

    def __init__(
        self,
        config: ConsumerConfig,
        history: History,
        handler: str = "threading",
        on_assignment: OnAssignment | None = None,
        poll_interval_s: float = 0.2,
        make: MakeConsumer = LegacyZkMember,
    ) -> None:
        super().__init__()
        self.config = config
        self.history = history
        self.handler = handler
        self.on_assignment = on_assignment
        self.poll_interval_s = poll_interval_s
        self._make = make
        #: whether the first synced rebalance succeeded (None until the consumer's start returned)
        self.converged: bool | None = None
        self._wake: Any = None  # the handler's event that ends a poll's wait (made with the consumer)

    @property
    def running(self) -> bool:
        """Whether the consumer's start returned (it is registered, or gave up finding an offset manager)."""
        return self.converged is not None

    # -- the template's hooks --------------------------------------------------------------------
    def announce_ready(self) -> None:
        return None  # the consumer writes ready as its start begins

    def construct(self) -> LegacyZkMember:
        consumer = self._make(
            self.config, history=self.history, handler=self.handler, on_assignment=self._assignment
        )
        self._wake = consumer.handler.event_object()
        return consumer

    def announce_started(self) -> None:
        return None  # the consumer writes started once its session is open

    def subscribe(self) -> None:
        if self.stopping:
            return  # stopped before it started: nothing to join
        self.converged = self.consumer.start()

    def poll_once(self) -> None:
        self._wake.wait(self.poll_interval_s)

    def final_commit(self) -> None:
        return None  # the consumer's close commits, after stopping its fetcher (0.8's shutdown order)

    def close(self) -> None:
        self.consumer.close()

    def announce_stopped(self, clean: bool, **fields: Any) -> None:
        return None  # the consumer writes stopped at the end of its close

    # -- control ---------------------------------------------------------------------------------
    def stop(self, clean: bool = True) -> None:
        """Stop (see the module contract): always a clean one, 0.8's shutdown being the only way to leave."""
        super().stop(clean=True)

    def interrupt(self) -> None:
        """End the poll's wait; close a consumer that is still starting (see the module contract)."""
        consumer: LegacyZkMember | None = self.consumer
        if consumer is None:
            return
        self._wake.set()
        if not self.running:
            consumer.close()  # ends its start's waits; the life cycle's close then finds it closed

    def quiesce(self) -> None:
        """Stop re-arming watches and starting rebalances (nothing before the consumer exists)."""
        if self.consumer is not None:
            self.consumer.quiesce()

    # -- the rebalance callback ------------------------------------------------------------------
    def _assignment(self, consumer: LegacyZkMember, what: str, partitions: list[TopicPartition]) -> None:
        self.assignment_changed(consumer, what, partitions)

    def assignment_changed(
        self, consumer: LegacyZkMember, what: str, partitions: list[TopicPartition]
    ) -> None:
        """A rebalance's outcome for this member (``assigned``, ``revoked``, ``gave_up``), on the consumer's
        thread: tell the callback."""
        if self.on_assignment is not None:
            self.on_assignment(consumer, what, partitions)
