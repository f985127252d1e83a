"""kafka-python 3.0.12's thread timing, as the simulated coordinator members use it, in virtual time.

Contract
--------
A kafka-python 3.0 consumer runs two threads: the main thread (herdlab's member loop in
``poll(timeout_ms=200)`` windows) and the IO thread (the heartbeat coroutine, the join task, the
close's hand-offs). When each of them runs is what this module models, from the delay model's
``kafka_*`` fields; what they send is :mod:`harness.sim.coordinator_member`'s.

* :class:`PollGaps`: the main thread's poll windows while a join is in flight, with a drawn gap between
  two windows (``kafka_poll_gap_per_member_s`` per live member per client core, ``kafka_poll_gap_cv``);
  a join that ends in a gap is found done by the next poll;
* :class:`ThreadTiming`: per member, the drawn lateness of a thread woken at a deadline: the IO thread's
  heartbeat send (``kafka_heartbeat_late_*``), the main thread's check of the flags at a heartbeat's
  deadline (``kafka_main_check_late_*``), the IO thread's start of a join a poll found done
  (``kafka_rejoin_late_*``), the close's hand-offs before the LeaveGroup (``kafka_close_leave_*``), and
  how the shared cores order a SyncGroup answer's work (``kafka_sync_answer_priority``);
* :func:`flag_seen_ns`: when the main thread acts on a flag a heartbeat's answer set.

Every draw comes from the unit's random source (``ClientCpu.rng``) in the order the member asks for
them, so a seed gives one history.
"""

from __future__ import annotations

from collections.abc import Callable

from harness.sim.clock import NS_PER_S, VirtualScheduler, next_tick
from harness.sim.cpu import ClientCpu, gamma_draw
from harness.sim.model import DelayModel

__all__ = ["RETRY_BACKOFF_S", "PollGaps", "ThreadTiming", "flag_seen_ns"]

#: kafka-python 3.0.12's ``retry_backoff_ms`` default.
RETRY_BACKOFF_S = 0.1


class PollGaps:
    """The main thread's polls while a member's join is in flight: windows of ``poll_ns`` from the join's
    start (or from a late pickup, :meth:`restart`), each followed by a gap before the next window starts.
    A gap's length is drawn from a gamma distribution of mean ``mean_s()`` (read at each draw) and
    coefficient of variation ``cv`` (shape 1 / cv²; cv 0: exactly the mean) from the unit's random source
    (``cpu.rng``), and scaled by the model's jitter through ``cpu.cost``; it is not booked on the shared
    cores (a thread woken from a wait is scheduled at once); a mean of 0 at the start means no gaps at
    all. The join task completes on the IO thread; the main thread picks its result up only inside a
    window (:meth:`gap_end`)."""

    def __init__(
        self,
        sched: VirtualScheduler,
        cpu: ClientCpu,
        poll_ns: int,
        mean_s: Callable[[], float],
        cv: float,
    ) -> None:
        self.sched = sched
        self.cpu = cpu
        self.poll_ns = poll_ns
        self.mean_s = mean_s
        self.cv = cv
        self._gap: tuple[int, int] | None = None  # the latest gap: [start, end) in virtual ns
        self._chain = 0  # window ends booked for an earlier chain are dropped (see restart)
        self._live = mean_s() > 0
        if self._live:
            sched.call_later(poll_ns / NS_PER_S, self._window_end, self._chain)

    def _draw(self) -> float:
        return gamma_draw(self.cpu.rng, self.mean_s(), self.cv)

    def _window_end(self, chain: int) -> None:
        if not self._live or chain != self._chain:
            return
        start = self.sched.now_ns
        end = start + round(self.cpu.cost(self._draw()) * NS_PER_S)
        self._gap = (start, end)
        self.sched.call_later((end + self.poll_ns - start) / NS_PER_S, self._window_end, chain)

    def restart(self, at_ns: int) -> None:
        """The poll whose join kafka-python's IO thread ran at ``at_ns`` (after the gap, late): its window
        runs from there (the window's timer is the IO thread's), the windows and gaps after it follow on."""
        self._chain += 1
        self._gap = None
        if self._live:
            self.sched.call_at(at_ns + self.poll_ns, self._window_end, self._chain)

    def gap_end(self, now_ns: int) -> int | None:
        """When the main thread polls again, if ``now_ns`` falls between two of its polls; else None."""
        g = self._gap
        return g[1] if g is not None and g[0] <= now_ns < g[1] else None

    def stop(self) -> None:
        self._live = False


class ThreadTiming:
    """When one member's kafka-python threads run (module contract): draws from ``cpu.rng``; the
    per-member parts scale with ``live_members()`` per client core (:meth:`DelayModel.per_core`)."""

    def __init__(self, delays: DelayModel, cpu: ClientCpu, live_members: Callable[[], int]) -> None:
        self.delays = delays
        self.cpu = cpu
        self.live_members = live_members

    def poll_gaps(self, sched: VirtualScheduler, poll_ns: int) -> PollGaps:
        """The main thread's windows and gaps for one join (:class:`PollGaps`)."""
        return PollGaps(sched, self.cpu, poll_ns, self.poll_gap_s, self.delays.kafka_poll_gap_cv)

    def poll_gap_s(self) -> float:
        """The mean gap between two polls now: ``kafka_poll_gap_per_member_s`` times the live members per
        client core (the woken main thread waits for a core behind the others' work)."""
        d = self.delays
        return d.kafka_poll_gap_per_member_s * d.per_core(self.live_members())

    def woken_late_s(self, base_s: float, per_member_s: float, cv: float | None = None) -> float:
        """How late a thread woken at a deadline runs: a gamma draw (coefficient of variation ``cv``,
        ``kafka_poll_gap_cv`` when None) of mean ``base_s`` plus ``per_member_s`` times the live members
        per client core."""
        d = self.delays
        mean = base_s + per_member_s * d.per_core(self.live_members())
        return gamma_draw(self.cpu.rng, mean, d.kafka_poll_gap_cv if cv is None else cv)

    def heartbeat_late_s(self) -> float:
        """How late the IO thread sends a heartbeat after its deadline (``kafka_heartbeat_late_*``)."""
        d = self.delays
        return self.woken_late_s(d.kafka_heartbeat_late_s, d.kafka_heartbeat_late_per_member_s)

    def main_check_late_s(self) -> float:
        """How late the main thread checks its flags at a heartbeat's deadline
        (``kafka_main_check_late_*``)."""
        d = self.delays
        return self.woken_late_s(d.kafka_main_check_late_s, d.kafka_main_check_late_per_member_s)

    def rejoin_late_s(self) -> float:
        """How late the IO thread starts the join of a poll that found the last one done
        (``kafka_rejoin_late_*``)."""
        d = self.delays
        return self.woken_late_s(
            d.kafka_rejoin_late_s, d.kafka_rejoin_late_per_member_s, d.kafka_rejoin_late_cv
        )

    def close_leave_s(self) -> float:
        """A clean stop's hand-offs to the IO thread between the revoke and the LeaveGroup
        (``kafka_close_leave_*``; not on the shared cores, not scaled with the group)."""
        d = self.delays
        return gamma_draw(self.cpu.rng, d.kafka_close_leave_s, d.kafka_close_leave_cv)

    def sync_answer_work(self, first: bool) -> tuple[float, int]:
        """A SyncGroup answer's work on the shared cores and its priority there:
        (``kafka_first_sync_client_s`` the first time, else ``kafka_sync_client_s``;
        ``kafka_sync_answer_priority``)."""
        d = self.delays
        return (d.kafka_first_sync_client_s if first else d.kafka_sync_client_s), d.kafka_sync_answer_priority


def flag_seen_ns(
    *,
    check_ns: int,
    sent_ns: int,
    now_ns: int,
    poll_end_ns: int,
    fetch: tuple[int, int] | None,
) -> int:
    """When the main thread acts on a flag (rejoin, a reset generation) a heartbeat's answer set at
    ``now_ns``. kafka-python 3.0.12 ``KafkaConsumer._poll_once`` checks the flags in ``coordinator.poll()``
    each time its wait ends, and caps the wait at the heartbeat's deadline (``time_to_next_poll``;
    auto-commit is off): it checks at the deadline of the very heartbeat whose answer set the flag,
    racing the IO thread that sent it, at ``check_ns`` (the deadline, late by
    :meth:`ThreadTiming.main_check_late_s`), and sees the answer when that check comes after it.
    Otherwise it acts at its next check: when its poll window ends (``poll_end_ns``) or, with a
    partition, when its parked Fetch comes back (``fetch``: sent at, ``fetch.max.wait.ms`` in ns; a
    record wakes it sooner), or, with none, at the end of the ``retry_backoff_ms`` sleep it began at its
    check, or at the heartbeat's send (``sent_ns``) when it checked before the send
    (``time_to_next_poll`` is 0 until then: it polls again without sleeping)."""
    if check_ns >= now_ns:
        return check_ns
    if fetch is not None:
        return min(poll_end_ns, next_tick(fetch[0], now_ns, fetch[1]))
    return min(poll_end_ns, next_tick(max(check_ns, sent_ns), now_ns, round(RETRY_BACKOFF_S * NS_PER_S)))
