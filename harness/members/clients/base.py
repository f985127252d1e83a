"""What every coordinator member shares, whatever its client library: the member template of
:mod:`harness.members.template` with the coordinator kind's recorder, commit policy, poll step and
rebalance bookkeeping. Each client module (:mod:`harness.members.clients`) fills in the rest.

Contract
--------
* :class:`ClientMemberBase` holds the config, its :class:`~harness.members.recorder.MemberRecorder`
  ``rec``, its :class:`~harness.members.recorder.CommitPolicy` ``policy`` (started at construction), the
  ``on_change`` callback and one re-entrant lock (``_lock``) under which the recorder and the policy are
  used: a client whose callbacks run on its own IO thread (kafka-python) takes the same lock; it is never
  held across a blocking client call.
* The life cycle's events: ``ready``; ``started`` with :meth:`~ClientMemberBase.started_fields`;
  ``stopped`` (``records`` and the template's fields).
* :meth:`~ClientMemberBase.poll_once`: :meth:`~ClientMemberBase.poll` gives the polled records as
  ``(partition, offset, value)`` (None: the poll failed and was backed off: nothing is processed and no
  commit is considered); under the lock each is recorded (``record``) and noted by the policy, in the
  client's order, then an interval commit (:meth:`~ClientMemberBase.commit_interval`) if the policy says
  one is due.
* Rebalance bookkeeping, called by the client's rebalance callbacks (each does its own commit before a
  revoke, and its own client calls): :meth:`~ClientMemberBase.joined` (identity),
  :meth:`~ClientMemberBase.note_assigned` (``assigned`` per partition, ``rebalance_end``),
  :meth:`~ClientMemberBase.note_revoked` (``rebalance_begin``, ``revoked`` per partition; the policy
  forgets the partitions), :meth:`~ClientMemberBase.announce` (``on_change``).
* Commit outcomes: :meth:`~ClientMemberBase.record_commit` for an attempt that succeeded or failed as a
  whole (the Kafka error name and code of the exception,
  :func:`~harness.members.recorder.error_of`), :meth:`~ClientMemberBase.record_outcomes` for one outcome
  per partition; either tells the policy of what was accepted.
"""

from __future__ import annotations

import threading
import time
from abc import abstractmethod
from collections.abc import Iterable, Mapping, Sequence
from typing import Any

from harness.history.writer import History
from harness.members.interface import OnChange
from harness.members.recorder import CommitPolicy, MemberConfig, MemberRecorder, error_of
from harness.members.template import MemberTemplate

#: One polled record: partition, offset, value.
Polled = tuple[int, int, bytes | None]

#: One partition's commit outcome: partition, offset, the Kafka error name (None: accepted), its code.
Outcome = tuple[int, int, str | None, int | None]


class ClientMemberBase(MemberTemplate):
    """One coordinator member on one client library (see the module contract)."""

    def __init__(self, config: MemberConfig, history: History, on_change: OnChange | None = None) -> None:
        super().__init__()
        self.config = config
        self.rec = MemberRecorder(config, history)
        self.on_change = on_change
        self.policy = CommitPolicy(
            config.auto_commit_interval_s, enabled=config.auto_commit, now=time.monotonic()
        )
        self._lock = threading.RLock()

    # -- the life cycle's events -----------------------------------------------------------------
    def announce_ready(self) -> None:
        self.rec.ready()  # booted, about to connect: t0 of a join (harness.kernel.events)

    def announce_started(self) -> None:
        self.rec.started(**self.started_fields())

    def announce_stopped(self, clean: bool, **fields: Any) -> None:
        self.rec.stopped(clean=clean, **fields)

    @abstractmethod
    def started_fields(self) -> dict[str, Any]:
        """The client's fields of ``started`` (its effective configuration)."""

    # -- the poll step ---------------------------------------------------------------------------
    def poll_once(self) -> None:
        polled = self.poll()
        if polled is None:
            return
        with self._lock:
            for partition, offset, value in polled:
                self.rec.record(partition, offset, value)
                self.policy.processed(partition, offset)
            if self.policy.due(time.monotonic()):
                self.commit_interval()

    @abstractmethod
    def poll(self) -> Sequence[Polled] | None:
        """One poll of the client: its records in order (None: failed and backed off)."""

    @abstractmethod
    def commit_interval(self) -> None:
        """An interval commit of what the policy has pending (its outcome recorded when known)."""

    # -- rebalance bookkeeping -------------------------------------------------------------------
    def joined(self, generation: int, member_id: str) -> None:
        with self._lock:
            self.rec.joined(generation, member_id)

    def note_assigned(self, partitions: Iterable[int]) -> list[int]:
        """Record an assignment callback's partitions; the partitions (sorted)."""
        with self._lock:
            return self.rec.assigned(partitions)

    def note_revoked(self, partitions: Iterable[int], lost: bool) -> list[int]:
        """Record a revoke callback's partitions (after the client's commit) and forget their commit
        positions; the partitions (sorted)."""
        with self._lock:
            ps = self.rec.revoked(partitions, lost=lost)
            self.policy.forget(ps)
        return ps

    def announce(self, what: str, partitions: list[int]) -> None:
        """``on_change(what, partitions, generation)`` when there is one."""
        if self.on_change:
            self.on_change(what, partitions, self.rec.generation)

    # -- commit outcomes -------------------------------------------------------------------------
    def record_commit(self, pending: Mapping[int, int], error: BaseException | None) -> None:
        """One commit attempt of ``pending`` (partition -> offset) that succeeded or failed as a whole."""
        with self._lock:
            if error is None:
                for p, o in pending.items():
                    self.rec.commit_result(p, o)
                self.policy.done(pending)
                return
            name, code = error_of(error)
            for p, o in pending.items():
                self.rec.commit_result(p, o, error=name, code=code)

    def record_outcomes(self, outcomes: Iterable[Outcome]) -> None:
        """One commit attempt's outcome per partition, in order; the policy told of the accepted ones."""
        done: dict[int, int] = {}
        with self._lock:
            for p, o, error, code in outcomes:
                if error is None:
                    done[p] = o
                    self.rec.commit_result(p, o)
                else:
                    self.rec.commit_result(p, o, error=error, code=code)
            self.policy.done(done)
