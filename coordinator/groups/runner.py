# pyright: strict
"""The effect runner: the asyncio shell that runs a pure group machine, the classic
:class:`~coordinator.core.group.machine.GroupCoordinator` or the consumer protocol's
``ConsumerGroupCoordinator`` (:class:`Machine`: what the runner asks of either).

In single-broker mode it runs :class:`~coordinator.core.groups.GroupCoordinators`, the facade of both machines
(the online migration between them); what only the classic machine offers is then the facade's classic machine's,
a group the consumer machine holds is never reset, and the consumer machine's events carry ``impl`` ``"consumer"``
(:meth:`GroupRunner._impl_of`).

The kio adapters (:mod:`coordinator.groups`) turn requests into machine calls; this module runs those calls and
applies the effects the machine returns. It knows nothing of the wire. What only the classic machine offers
(resetting a failed group, two-phase writes, replicated mode, the wedge check of PreparingRebalance) is used
only when the runner runs the classic machine.

Contract
--------
* :meth:`GroupRunner.call` runs one machine request (tagged by a :class:`Token` that carries the adapter's
  conversion of the machine's response) and applies the returned effects in order:

  - :class:`~coordinator.core.group.api.Respond` for the call's own token during the same call gives the converted
    response directly (Heartbeat, most errors); otherwise ``call`` returns a future that a later Respond
    completes (a parked JoinGroup or SyncGroup);
  - ``SetTimer`` / ``CancelTimer`` keep one asyncio timer per key; a timer fires
    ``on_timer(now_ms, key)`` with ``now_ms >= deadline``. Re-arming a timer to a later deadline
    (every heartbeat) only records the new deadline: the armed handle re-arms itself when it fires
    early, so a heartbeat costs no timer-heap work;
  - ``Persist`` records go to the :class:`~coordinator.groups.log.GroupLog` (if any), written before
    any later Respond of the same effect list is delivered. Replicated mode (a
    :class:`~coordinator.groups.store.TopicGroupStore`): a two-phase write (``Persist.write``) is appended as
    one batch in the background and its outcome goes back to the machine
    (:meth:`~coordinator.core.group.machine.GroupCoordinator.persisted`), which answers the request behind it; a
    commit refused by its append also gives a ``fenced`` event (what ``commit``, the append's error name).
    Other records are appended in the background per offsets partition and a failure is only logged;
  - ``Emit`` events go to the history with the runner's ``impl`` (``"coordinator"`` for the classic machine,
    ``"consumer"`` for the consumer protocol's) and the broker id; group state transitions also get one INFO log
    line naming the group.

* **Failures are loud, never a wedge.** Every machine call (a request or a timer) runs through
  :meth:`GroupRunner.run`: if the machine raises, if applying an effect fails (a group-log write, a
  timer), or if afterwards a group is in PreparingRebalance without an armed join timer, the runner
  logs the error with its traceback, counts it (``group_failure`` in the broker's ``rejected``
  counters), and resets the group (:meth:`~coordinator.core.group.machine.GroupCoordinator.reset_group`):
  every parked JoinGroup / SyncGroup of it is answered (UNKNOWN_MEMBER_ID, or UNKNOWN_SERVER_ERROR
  when its answer was lost in the failure), its timers go, and it continues Empty with its offsets,
  so members simply join again. The request that hit the failure is answered UNKNOWN_SERVER_ERROR
  (by the server, on :class:`GroupFailure`). A machine without ``reset_group`` (the consumer protocol's) is
  not reset: its heartbeats are never parked, so the failed request's answer is the only one lost, and its
  timers stay armed (a member that stops heartbeating still expires); a request of the group waiting for a write
  outcome (replicated mode) is answered UNKNOWN_SERVER_ERROR. A response that cannot be converted fails only that
  request; an event that cannot be written to the history is logged.
* Time is wall-clock milliseconds (record timestamps are meaningful across restarts).
* Loading: :meth:`GroupRunner.load` replays the group log into the machine between
  ``begin_loading`` and ``finish_loading``, yielding to the event loop between chunks, so requests
  arriving meanwhile are answered by the machine (COORDINATOR_LOAD_IN_PROGRESS). Several machines share one
  group log: ``load(also=...)`` gives each record to the runner whose ``takes`` predicate holds for it (by
  record type), each machine loading between its own ``begin_loading`` and ``finish_loading``, whose effects
  (timers) its own runner applies.
* Replicated mode: the runner is the ``__consumer_offsets``
  :class:`~coordinator.ports.LeadershipListener`. :meth:`GroupRunner.on_became_leader` loads the partition's
  committed records in the background (events ``coordinator_load`` begin, then end with groups, offsets,
  duration_ms); :meth:`GroupRunner.on_resigned` cancels a load in progress and unloads the partition
  (``coordinator_load`` unload). An election older than the last epoch heard is ignored, and a partition
  already loading or owned is not reloaded (Kafka 3.7 ``loadGroupsAndOffsets``). When a write of the consumer
  machine's records fails while this broker still leads the partition, the partition is unloaded and loaded again
  (events ``coordinator_load`` unload, begin, end): the machine's unwritten change goes, as Kafka 4's runtime
  reverts to the last written offset; the classic machine's groups of the partition are reloaded with it (Kafka
  reverts only what was not written). ``group_served`` is emitted for
  the first answer without error to each group after its partition's load (:meth:`GroupRunner.maybe_served`).
  ``commit`` / ``commit_rejected`` events carry ``offsets_partition`` and ``leader_epoch`` (-1 without
  replication).
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import time
from collections import Counter
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass
from functools import lru_cache
from typing import Any, Protocol, cast

from coordinator.core.group import api as g
from coordinator.core.group.errors import ErrorCode
from coordinator.core.group.machine import GroupCoordinator
from coordinator.core.group.offsets import OffsetManager
from coordinator.core.group.records import OffsetCommitRecord, Record
from coordinator.core.groups import GroupCoordinators
from coordinator.groups.log import GroupLog
from coordinator.groups.store import TopicGroupStore
from coordinator.ports import OFFSETS_TOPIC
from harness.kernel.history import History
from harness.kernel.javacompat import partition_for

__all__ = ["CONSUMER_IMPL", "GroupFailure", "GroupRunner", "Machine", "PartitionedMachine", "Token", "now_ms"]

log = logging.getLogger("coordinator")

_LOAD_CHUNK = 2000

#: The ``impl`` of the consumer protocol's history events.
CONSUMER_IMPL = "consumer"


@dataclass(slots=True)
class _Tally:
    """Records a load put into the machine and records it skipped."""

    loaded: int = 0
    skipped: int = 0


_partition_for = lru_cache(maxsize=100_000)(partition_for)


def _error_name(code: int) -> str:
    """Kafka's name of a wire error code (the number itself when unknown)."""
    try:
        return ErrorCode(code).name
    except ValueError:
        return str(code)


def now_ms() -> int:
    """Wall-clock time in milliseconds (the runner's default clock)."""
    return time.time_ns() // 1_000_000


class Machine(Protocol):
    """What the runner asks of every group machine: its timers and loading from the group log (``partition``: a
    replicated machine loads one offsets partition at a time). Requests are calls the adapters pass to
    :meth:`GroupRunner.call` as closures."""

    def on_timer(self, now_ms: int, key: Any) -> list[g.Effect]: ...

    def begin_loading(self, partition: int | None = None) -> list[g.Effect]: ...

    def load(self, record: Any) -> None: ...

    def finish_loading(self, now_ms: int, partition: int | None = None) -> list[g.Effect]: ...


class PartitionedMachine(Machine, Protocol):
    """A machine that can own its groups per ``__consumer_offsets`` partition (replicated mode): both group
    machines are."""

    @property
    def replicated(self) -> bool: ...

    @property
    def offsets(self) -> OffsetManager: ...

    def partition_for(self, group_id: str) -> int | None: ...

    def partition_status(self, partition: int) -> str: ...

    def unload(self, partition: int, now_ms: int) -> list[g.Effect]: ...

    def persisted(self, write: int, error: int, now_ms: int, leader_epoch: int = -1) -> list[g.Effect]: ...

    def group_ids(self) -> list[str]: ...

    def group(self, group_id: str) -> Any: ...


class GroupFailure(RuntimeError):
    """A machine call or the application of its effects failed for a group; the group was reset."""


class Token:
    """Tags one request in the machine; carries where its answer goes.

    ``convert`` turns the machine's response into what the caller answers (a kio response); it runs when the
    machine responds, during the call or later. ``group`` / ``api`` name the request for ``group_served``."""

    __slots__ = ("api", "convert", "error", "fut", "group", "response")

    def __init__(self, convert: Callable[[Any], Any], group: str | None = None, api: str = "") -> None:
        self.convert = convert
        self.group = group
        self.api = api
        self.fut: asyncio.Future[Any] | None = None
        self.response: Any = None
        #: Set when ``convert`` failed for an answer given during the call itself.
        self.error: BaseException | None = None


class _Timer:
    __slots__ = ("deadline_ms", "fires_ms", "handle")

    def __init__(self, deadline_ms: int, fires_ms: int, handle: asyncio.TimerHandle) -> None:
        self.deadline_ms = deadline_ms
        self.fires_ms = fires_ms
        self.handle = handle


class GroupRunner:
    """Runs machine calls and applies their effects: timers, group-log appends, responses, history events."""

    def __init__(
        self,
        machine: Machine,
        history: History,
        group_log: GroupLog | None = None,
        *,
        broker_id: int = 0,
        clock: Callable[[], int] = now_ms,
        rejected: Counter[str] | None = None,
        store: TopicGroupStore | None = None,
        offsets_partitions: int = 50,
        impl: str = "coordinator",
    ) -> None:
        """``group_log`` is the file store (single-broker mode); ``store`` the topic store (replicated mode: the
        classic machine in replicated mode, and ``group_log`` is then not used). ``impl``: the ``impl`` of the
        machine's history events."""
        facade = machine if isinstance(machine, GroupCoordinators) else None
        classic = machine if isinstance(machine, GroupCoordinator) else None
        if facade is not None:
            classic = facade.classic
        if store is not None and not getattr(machine, "replicated", False):
            raise ValueError("a topic store needs the machine in replicated mode (own_by_partition)")
        self.machine = machine
        #: The machine when it is the classic one, or the facade's classic machine (what only it offers: see the
        #: module docstring).
        self.classic = classic
        #: The machine when it is the facade of both group types (single-broker mode's online migration).
        self.facade = facade
        #: Replicated mode: the runners of other machines sharing this runner's offsets partitions, each with the
        #: records its machine takes; this runner (the leadership listener) loads and unloads their partitions
        #: with its own, in one read of each partition.
        self.co_runners: list[tuple[GroupRunner, Callable[[Record], bool]]] = []
        #: A co-runner's leadership listener (set when the listener first loads a partition for it): what reloads
        #: a partition after a failed write of this runner's consumer-group records.
        self.listener: GroupRunner | None = None
        self.impl = impl
        self.history = history
        self.group_log = group_log if store is None else None
        self.store = store
        self.offsets_partitions = offsets_partitions
        #: Replicated mode: the leader epoch last heard per offsets partition, the running loads, the groups
        #: served since their partition's load ended (``group_served`` once per group per load), write tasks.
        self.epochs: dict[int, int] = {}
        self._loads: dict[int, asyncio.Task[None]] = {}
        self._served: set[str] = set()
        self._tasks: set[asyncio.Task[Any]] = set()
        #: Seconds between two attempts of a load barrier that was not acknowledged.
        self.barrier_retry_s = 0.1
        self.broker_id = broker_id
        self.clock = clock
        #: Counters by reason; a group failure counts as ``group_failure`` (the broker reports them).
        self.rejected: Counter[str] = rejected if rejected is not None else Counter()
        self._timers: dict[Any, _Timer] = {}
        #: Parked requests (JoinGroup / SyncGroup) by group, so that a failed group answers all of them.
        self._waiting: dict[str, set[Token]] = {}
        self._loop: asyncio.AbstractEventLoop | None = None
        self.loading = False

    # ------------------------------------------------------------------ effects

    def call(
        self, token: Token, group_ids: Sequence[str], what: str, call: Callable[[], list[g.Effect]]
    ) -> Any:
        """Run a machine request for ``group_ids`` (see :meth:`run`); the handler's answer: the response, or a
        future of it when the request is parked. Raises :class:`GroupFailure` (the request is then answered
        UNKNOWN_SERVER_ERROR by the server) or the response conversion's error."""
        self.run(group_ids, what, call)
        if token.error is not None:
            raise token.error
        if token.response is not None:
            return token.response
        fut = asyncio.get_running_loop().create_future()
        token.fut = fut
        if group_ids:
            waiting = self._waiting.setdefault(group_ids[0], set())
            waiting.add(token)
            fut.add_done_callback(lambda _f: waiting.discard(token))
        return fut

    def run(self, group_ids: Sequence[str], what: str, call: Callable[[], list[g.Effect]]) -> None:
        """Call the machine and apply its effects; afterwards no group of ``group_ids`` may be wedged
        (:meth:`GroupCoordinator.wedged`, or PreparingRebalance without an armed join timer).

        Any exception -- in the machine, in applying an effect, or a wedged group -- is a loud failure: an ERROR
        log line with the traceback, the ``group_failure`` counter, and every group of ``group_ids`` is reset
        (:meth:`GroupCoordinator.reset_group`: parked requests answered, members rejoin). Then
        :class:`GroupFailure` is raised.
        """
        try:
            self.apply(call())
            for group_id in group_ids:
                why = self._wedged(group_id)
                if why is not None:
                    raise GroupFailure(f"group {group_id} is wedged after {what}: {why}")
        except Exception as e:
            self._fail(group_ids, what, e)
            raise GroupFailure(f"{what} failed for group(s) {list(group_ids)}: {e}") from e

    def _wedged(self, group_id: str) -> str | None:
        if self.classic is None:
            return None
        why = self.classic.wedged(group_id)
        if why is not None:
            return why
        group = self.classic.group(group_id)
        if (
            group is not None
            and group.state is g.GroupState.PREPARING_REBALANCE
            and group.join_key not in self._timers
        ):
            return "PreparingRebalance without an armed join timer"
        return None

    def _fail(self, group_ids: Sequence[str], what: str, error: BaseException) -> None:
        self.rejected["group_failure"] += 1
        classic = self.classic
        facade = self.facade
        if facade is not None and any(facade.consumer.holds(gid) for gid in group_ids):
            classic = None  # a consumer group is not reset (see the module docstring)
        if classic is None:
            log.error("group(s) %s: %s failed: %s", list(group_ids), what, error, exc_info=error)
            for group_id in group_ids:  # a request waiting for a write outcome: answered UNKNOWN_SERVER_ERROR
                for token in list(self._waiting.pop(group_id, ())):
                    if token.fut is not None and not token.fut.done():
                        token.fut.set_exception(GroupFailure(f"group {group_id}: {what} failed"))
            return
        log.error("group(s) %s: %s failed; resetting: %s", list(group_ids), what, error, exc_info=error)
        for group_id in group_ids:
            for key in [k for k in self._timers if len(k) > 1 and k[1] == group_id]:
                self._timers.pop(key).handle.cancel()
            try:
                effects = classic.reset_group(self.clock(), group_id, f"{what} failed: {error}")
            except Exception:
                log.critical("group=%s cannot be reset; dropping it from memory", group_id, exc_info=True)
                classic.drop_group(group_id)
            else:
                try:
                    self.apply(effects)  # its one Persist comes last: a failed write loses only that
                except Exception:
                    log.error(
                        "group=%s was reset, but its empty state was not written", group_id, exc_info=True
                    )
            for key in [k for k in self._timers if len(k) > 1 and k[1] == group_id]:
                self._timers.pop(key).handle.cancel()
            for token in list(self._waiting.pop(group_id, ())):
                if token.fut is not None and not token.fut.done():
                    token.fut.set_exception(GroupFailure(f"group {group_id}: {what} failed"))

    def apply(self, effects: Iterable[g.Effect]) -> None:
        """Apply machine effects in order (see the module docstring). A failing Persist or timer effect raises
        (the caller resets the group); a response that cannot be converted fails that request only; a history
        event that cannot be written is logged."""
        pending: list[Record] = []
        writes: dict[int, list[Record]] = {}
        for effect in effects:
            match effect:
                case g.Respond():
                    if pending:
                        self._persist(pending)
                        pending = []
                    self._respond(effect.token, effect.response)
                case g.SetTimer():
                    self._set_timer(effect.key, effect.deadline_ms)
                case g.CancelTimer():
                    t = self._timers.pop(effect.key, None)
                    if t is not None:
                        t.handle.cancel()
                case g.Persist():
                    if effect.write is None:
                        pending.append(effect.record)
                    else:
                        writes.setdefault(effect.write, []).append(effect.record)
                case g.Emit():
                    try:
                        self._emit(effect)
                    except Exception:
                        log.exception("cannot record group event %s", effect.kind)
        if pending:
            self._persist(pending)
        for write, records in writes.items():
            self._persist_write(write, records)

    def _persist(self, records: list[Record]) -> None:
        """One-phase records: the file store writes them now; the topic store appends them in the background
        per offsets partition and only logs a failure (Kafka 3.7 writes tombstones with acks 0 and only logs a
        failed Empty-group record)."""
        if self.store is None:
            if self.group_log is not None:
                self.group_log.append(records)
            return
        by_partition: dict[int, list[Record]] = {}
        for r in records:
            by_partition.setdefault(self.store.partition_for(r.group_id), []).append(r)
        for partition, batch in by_partition.items():
            self._spawn(self._append_logged(partition, batch))

    def _persist_write(self, write: int, records: list[Record]) -> None:
        """A two-phase write: the file store writes it and reports success at once; the topic store appends it
        in the background and reports the outcome (:meth:`GroupCoordinator.persisted`) when it comes."""
        if self.store is None:
            if self.group_log is not None:
                self.group_log.append(records)
            self.apply(self._partitioned().persisted(write, 0, self.clock()))
            return
        self._spawn(self._append_write(write, records))

    def _spawn(self, coro: Any) -> None:
        task = asyncio.ensure_future(coro)
        self._tasks.add(task)
        task.add_done_callback(self._tasks.discard)

    async def _append_logged(self, partition: int, records: list[Record]) -> None:
        assert self.store is not None
        try:
            result = await self.store.append(partition, records)
        except Exception:
            log.exception("offsets_partition=%d: append of %d group records failed", partition, len(records))
            self._reload_after_failed_write(partition)
            return
        if result.error != 0:
            log.warning(
                "offsets_partition=%d: %d group records (groups %s) not written: %s",
                partition,
                len(records),
                sorted({r.group_id for r in records})[:5],
                _error_name(result.error),
            )
            self._reload_after_failed_write(partition)

    async def _append_write(self, write: int, records: list[Record]) -> None:
        assert self.store is not None
        group_id = records[0].group_id
        partition = self.store.partition_for(group_id)
        try:
            result = await self.store.append(partition, records)
            error, epoch = result.error, result.leader_epoch
        except Exception:
            log.exception("group=%s offsets_partition=%d: append failed", group_id, partition)
            error, epoch = int(ErrorCode.UNKNOWN_SERVER_ERROR), self.epochs.get(partition, -1)
        if error != 0 and isinstance(records[0], OffsetCommitRecord):
            self._fenced_commit(group_id, partition, error, epoch)
        with contextlib.suppress(GroupFailure):  # loud already (see run); the group was reset
            self.run(
                (group_id,),
                f"write {write} outcome",
                lambda: self._partitioned().persisted(write, error, self.clock(), epoch),
            )
        if error != 0 and not isinstance(records[0], OffsetCommitRecord):
            self._reload_after_failed_write(partition)

    def _reload_after_failed_write(self, partition: int) -> None:
        """A write of the consumer machine's records (not an offset commit, whose offsets become visible only once
        written) failed: its change is in the machine but not in the log. Kafka's ``CoordinatorRuntime`` reverts
        the partition's state to its last written offset (``revertLastWrittenOffset``); here, while this broker
        still leads ``partition``, its leadership listener unloads and loads it again as on a re-election (the load
        barrier makes the load read every record appended before it), which restores the written state. Nothing
        happens for the classic machine (Kafka 3.7 keeps its state and only logs), when the partition is not owned
        (resigned: unloaded already; loading: being reloaded) or when this broker no longer leads it (its
        resignation unloads it)."""
        store, listener = self.store, self.listener
        if self.classic is not None or store is None:
            return
        if listener is None:
            log.error(
                "offsets_partition=%d: a failed write cannot be reverted: no leadership listener", partition
            )
            return
        if self._partitioned().partition_status(partition) != "owned":
            return
        epoch = store.log.leader_epoch(OFFSETS_TOPIC, partition)
        if epoch is None:
            return
        log.warning(
            "offsets_partition=%d leader_epoch=%d: a write of consumer-group records failed; reloading the "
            "partition from its log to drop the unwritten change",
            partition,
            epoch,
        )
        listener.on_resigned(partition, epoch)
        listener.on_became_leader(partition, epoch)

    def _fenced_commit(self, group_id: str, partition: int, error: int, epoch: int) -> None:
        name = _error_name(error)
        group = self._partitioned().group(group_id)
        log.warning(
            "group=%s generation=%s offsets_partition=%d leader_epoch=%d: commit refused, its append failed: %s",
            group_id,
            group.generation_id if group is not None else "-",
            partition,
            epoch,
            name,
        )
        try:
            self.history.emit(
                "fenced",
                impl="coordinator",
                broker_id=self.broker_id,
                what="commit",
                error=name,
                group=group_id,
                topic=OFFSETS_TOPIC,
                partition=partition,
            )
        except Exception:
            log.exception("cannot record a fenced event")

    def _respond(self, token: Any, response: Any) -> None:
        if not isinstance(token, Token):
            return
        if self.store is not None and token.group is not None:
            self.maybe_served(token.group, token.api, response)
        try:
            converted = token.convert(response)
        except Exception as e:
            log.exception("cannot convert the answer %r", response)
            if token.fut is None:
                token.error = e
            elif not token.fut.done():
                token.fut.set_exception(e)
            return
        if token.fut is None:
            token.response = converted
        elif not token.fut.done():
            token.fut.set_result(converted)

    def _emit(self, effect: g.Emit) -> None:
        fields = effect.fields
        if effect.kind in (g.EMIT_COMMIT, g.EMIT_COMMIT_REJECTED) and "offsets_partition" not in fields:
            # single-broker mode (and commits refused before any append): the contract's fields all the same
            group = fields.get("group")
            partition = _partition_for(group, self.offsets_partitions) if isinstance(group, str) else -1
            epoch = self.epochs.get(partition, -1) if self.store is not None else -1
            fields = {**fields, "offsets_partition": partition, "leader_epoch": epoch}
        impl = self._impl_of(effect)
        self.history.emit(effect.kind, impl=impl, broker_id=self.broker_id, **fields)
        if self.classic is None or impl != self.impl:
            if effect.kind in (g.EMIT_GROUP_STATE, g.EMIT_MEMBER_REMOVED, g.EMIT_MEMBER_ADDED):
                log.info("%s %s", effect.kind, fields)
            return
        if effect.kind == g.EMIT_GROUP_STATE:
            log.info(
                "group=%s generation=%s state %s -> %s members=%s [%s]",
                fields.get("group"),
                fields.get("generation"),
                fields.get("from_state"),
                fields.get("to_state"),
                fields.get("members"),
                ",".join(self._member_ids(fields.get("group"))),
            )
        elif effect.kind == g.EMIT_MEMBER_REMOVED:
            log.info(
                "group=%s generation=%s member=%s removed (%s)",
                fields.get("group"),
                fields.get("generation"),
                fields.get("member"),
                fields.get("reason"),
            )
        elif effect.kind in (g.EMIT_REBALANCE_BEGIN, g.EMIT_REBALANCE_END, g.EMIT_MEMBER_ADDED):
            log.debug("%s %s", effect.kind, fields)

    def _impl_of(self, effect: g.Emit) -> str:
        """The ``impl`` of an event: the runner's, except under the facade, where the consumer machine's events
        (they carry ``epoch``, the classic machine's ``generation``; so does ``group_converted``) and a consumer
        group's commits are the consumer protocol's."""
        facade = self.facade
        if facade is None:
            return self.impl
        fields = effect.fields
        if effect.kind in (g.EMIT_COMMIT, g.EMIT_COMMIT_REJECTED):
            group = fields.get("group")
            consumer = isinstance(group, str) and facade.consumer.holds(group)
        else:
            consumer = "epoch" in fields and "generation" not in fields
        return CONSUMER_IMPL if consumer else self.impl

    def _member_ids(self, group: Any) -> list[str]:
        if not isinstance(group, str) or self.classic is None:
            return []
        try:
            described = self.classic.describe_groups(self.clock(), g.DescribeGroupsRequest([group]))
        except Exception:  # a log line must never break the broker
            return []
        return [m.member_id for d in described.groups for m in d.members]

    # ------------------------------------------------------------------ timers

    def _set_timer(self, key: Any, deadline_ms: int) -> None:
        t = self._timers.get(key)
        if t is not None:
            if t.fires_ms <= deadline_ms:
                t.deadline_ms = deadline_ms  # the handle fires first and re-arms itself
                return
            t.handle.cancel()
        self._arm(key, deadline_ms)

    def _arm(self, key: Any, deadline_ms: int) -> None:
        loop = self._loop or asyncio.get_running_loop()
        self._loop = loop
        delay = max(0.0, (deadline_ms - self.clock()) / 1000.0)
        handle = loop.call_later(delay, self._fire, key)
        self._timers[key] = _Timer(deadline_ms, deadline_ms, handle)

    def _fire(self, key: Any) -> None:
        t = self._timers.get(key)
        if t is None:
            return
        now = self.clock()
        if t.deadline_ms > now + 1:  # re-armed to a later deadline since this handle was set
            self._arm(key, t.deadline_ms)
            return
        del self._timers[key]
        group_id = key[1] if len(key) > 1 and isinstance(key[1], str) else None
        due = max(now, t.deadline_ms)
        with contextlib.suppress(GroupFailure):  # loud already (see run); the group was reset
            self.run(
                (group_id,) if group_id is not None else (),
                f"timer {key}",
                lambda: self.machine.on_timer(due, key),
            )

    def cancel_timers(self) -> None:
        """Stop everything the runner has scheduled (the broker is stopping): timers, loads, appends."""
        for t in self._timers.values():
            t.handle.cancel()
        self._timers.clear()
        for task in [*self._loads.values(), *self._tasks]:
            task.cancel()
        self._loads.clear()

    @property
    def timer_count(self) -> int:
        return len(self._timers)

    # ------------------------------------------------------------------ loading

    async def load(
        self, also: Sequence[tuple[GroupRunner, Callable[[Record], bool]]] = ()
    ) -> tuple[int, int]:
        """Replay the group log into the machine; ``(records loaded, records skipped)``.

        A line that does not decode (see :class:`~coordinator.groups.log.GroupLog`) or a record the machine
        rejects is skipped with a warning naming its line; everything else is loaded. If reading the log
        itself fails, the error propagates, and the groups loaded until then are served (Kafka's
        ``loadGroupsAndOffsets`` logs the error and owns the partition all the same): loading always ends.

        ``also``: other runners sharing this group log, each with the predicate of the records its machine
        takes (the first that holds wins; the rest go to this runner's machine). Each machine is between its
        ``begin_loading`` and ``finish_loading`` for the whole replay, and its runner applies their effects.
        """
        if self.store is not None:
            raise RuntimeError(
                "replicated mode loads per offsets partition, on leadership (on_became_leader)"
            )
        runners = [self, *(r for r, _ in also)]
        for runner in runners:
            runner.loading = True
            runner.apply(runner.machine.begin_loading())
        tally = _Tally()
        try:
            if self.group_log is not None:
                path = self.group_log.path
                await self._replay(
                    ((f"group log {path} line {n}", r) for n, r in self.group_log.replay_lines()), tally, also
                )
                tally.skipped += self.group_log.skipped
        finally:
            for runner in runners:
                try:
                    runner.apply(runner.machine.finish_loading(runner.clock()))
                finally:
                    runner.loading = False
        return tally.loaded, tally.skipped

    async def _replay(
        self,
        items: Iterable[tuple[str, Record]],
        tally: _Tally,
        also: Sequence[tuple[GroupRunner, Callable[[Record], bool]]] = (),
    ) -> None:
        """Load each ``(where, record)`` into the machine taking it (see :meth:`load`) in order, yielding to the
        loop every ``_LOAD_CHUNK`` records; a record the machine rejects is skipped (counted in ``tally``) with a
        warning naming ``where``."""
        for where, record in items:
            machine = next((r.machine for r, takes in also if takes(record)), self.machine)
            try:
                machine.load(record)
            except Exception as e:
                tally.skipped += 1
                log.warning("%s skipped: %s (%s: %s)", where, record, type(e).__name__, e)
                continue
            tally.loaded += 1
            if tally.loaded % _LOAD_CHUNK == 0:
                await asyncio.sleep(0)

    def _partitioned(self) -> PartitionedMachine:
        """The machine, for replicated mode and two-phase writes (both group machines offer them)."""
        if not getattr(self.machine, "replicated", False):
            raise RuntimeError("this needs a group machine in replicated mode")
        return cast(PartitionedMachine, self.machine)

    # ------------------------------------------------------------------ replicated mode: leadership

    def on_became_leader(self, partition: int, leader_epoch: int) -> None:
        """:class:`~coordinator.ports.LeadershipListener`: this broker leads offsets partition ``partition``.
        Loads its groups in the background (CatchUp: ``coordinator_load`` begin ... end); an epoch older than the
        last one heard is refused, and a partition already loading or owned is not reloaded (Kafka 3.7
        ``loadGroupsAndOffsets``: ``maybeUpdateCoordinatorEpoch``, "Already loading")."""
        classic = self._partitioned()
        store = self.store
        if store is None:
            raise RuntimeError("leadership callbacks need the topic store (replicated mode)")
        known = self.epochs.get(partition, -1)
        if leader_epoch < known:
            log.warning(
                "offsets_partition=%d: leadership at epoch %d ignored, epoch %d already seen",
                partition,
                leader_epoch,
                known,
            )
            return
        self.epochs[partition] = leader_epoch
        if classic.partition_status(partition) != "not_owned":
            log.info(
                "offsets_partition=%d: leader again at epoch %d, already served", partition, leader_epoch
            )
            return
        self.apply(classic.begin_loading(partition))
        for runner, _takes in self.co_runners:
            runner.listener = self
            runner.apply(runner.machine.begin_loading(partition))
        log.info("offsets_partition=%d leader_epoch=%d: loading its groups", partition, leader_epoch)
        self._emit_load("begin", partition, leader_epoch)
        task = asyncio.ensure_future(self._load_partition(partition, leader_epoch, time.monotonic()))
        self._loads[partition] = task
        task.add_done_callback(
            lambda t: self._loads.pop(partition, None) if self._loads.get(partition) is t else None
        )

    def on_resigned(self, partition: int, leader_epoch: int) -> None:
        """:class:`~coordinator.ports.LeadershipListener`: this broker no longer leads ``partition``: a load in
        progress is cancelled, its groups are unloaded (``coordinator_load`` unload; Kafka 3.7 ``onResignation``).
        Nothing happens for a partition it neither loads nor owns."""
        classic = self._partitioned()
        self.epochs[partition] = max(leader_epoch, self.epochs.get(partition, -1))
        task = self._loads.pop(partition, None)
        if task is not None:
            task.cancel()
        for runner, _takes in self.co_runners:
            runner.resign(partition)
        if classic.partition_status(partition) == "not_owned":
            return
        effects = classic.unload(partition, self.clock())
        for key in [k for k in self._timers if len(k) > 1 and isinstance(k[1], str)]:
            if classic.partition_for(key[1]) == partition:
                self._timers.pop(key).handle.cancel()  # the machine cancels its own; nothing of it may fire
        self.apply(effects)
        self._served = {gid for gid in self._served if classic.partition_for(gid) != partition}
        log.info(
            "offsets_partition=%d leader_epoch=%d: resigned, its groups unloaded", partition, leader_epoch
        )
        self._emit_load("unload", partition, leader_epoch)

    def resign(self, partition: int) -> None:
        """A co-runner's part of :meth:`on_resigned`: its machine unloads ``partition``, whose timers go."""
        machine = self._partitioned()
        if machine.partition_status(partition) == "not_owned":
            return
        effects = machine.unload(partition, self.clock())
        for key in [k for k in self._timers if len(k) > 1 and isinstance(k[1], str)]:
            if machine.partition_for(key[1]) == partition:
                self._timers.pop(key).handle.cancel()
        self.apply(effects)
        self._served = {gid for gid in self._served if machine.partition_for(gid) != partition}

    async def _load_partition(self, partition: int, leader_epoch: int, started: float) -> None:
        """Read ``partition``'s committed records into the machine, yielding to the loop every chunk; then
        Ready. A record the machine rejects is skipped with a warning; if reading fails the groups read so far
        are served (as :meth:`load` and Kafka 3.7 do).

        The load barrier (DECIDED, a deviation): 0.9 ``loadGroupsAndOffsets`` reads up to the high watermark,
        3.7 ``doLoadGroupsAndOffsets`` up to the log end. A newly elected leader's high watermark may lag (it
        learns the followers' positions only from their next fetches), so reading below it can miss commits
        the previous leader acknowledged: offsets lost. The port offers only committed reads, so the loader
        first appends an empty entry with acks -1 and waits for it (:meth:`TopicGroupStore.barrier`): then the
        high watermark covers the whole log as it was at election, which is what 3.7 reads (a leader's log
        holds every acknowledged entry). If the barrier fails (too few in-sync replicas, timeout, deposed, an
        exception) the partition stays loading (COORDINATOR_LOAD_IN_PROGRESS) and the barrier is appended again
        after :attr:`barrier_retry_s`, until it is acknowledged or the partition is resigned (which cancels
        this task): loading below a high watermark the barrier did not move would hide acknowledged
        commits."""
        classic = self._partitioned()
        store = self.store
        assert store is not None
        tally = _Tally()
        try:
            await self._await_barrier(store, partition, leader_epoch)
            await self._replay(
                ((f"offsets_partition={partition}: record", r) for r in store.read(partition)),
                tally,
                self.co_runners,
            )
            tally.skipped += store.skipped
        except asyncio.CancelledError:
            log.info("offsets_partition=%d: load cancelled after %d records", partition, tally.loaded)
            raise
        except Exception:
            log.exception(
                "offsets_partition=%d: reading failed after %d records; serving them", partition, tally.loaded
            )
        if classic.partition_status(partition) != "loading":
            return  # resigned meanwhile (the task was not cancelled in time)
        groups = [
            gr
            for gid in classic.group_ids()
            if classic.partition_for(gid) == partition
            if (gr := classic.group(gid)) is not None
        ]
        offsets = sum(classic.offsets.count(gr.group_id) for gr in groups)
        loaded = len(groups)
        for runner, _takes in self.co_runners:
            machine = runner._partitioned()
            if machine.partition_status(partition) != "loading":
                continue
            mine = [gid for gid in machine.group_ids() if machine.partition_for(gid) == partition]
            loaded += len(mine)
            offsets += sum(machine.offsets.count(gid) for gid in mine)
            runner.apply(machine.finish_loading(runner.clock(), partition))
        self.apply(classic.finish_loading(self.clock(), partition))
        duration_ms = round((time.monotonic() - started) * 1000)
        log.info(
            "offsets_partition=%d leader_epoch=%d: loaded %d groups, %d offsets (%d records, %d skipped) in %d ms",
            partition,
            leader_epoch,
            loaded,
            offsets,
            tally.loaded,
            tally.skipped,
            duration_ms,
        )
        self._emit_load(
            "end", partition, leader_epoch, groups=loaded, offsets=offsets, duration_ms=duration_ms
        )

    async def _await_barrier(self, store: TopicGroupStore, partition: int, leader_epoch: int) -> None:
        """Append the load barrier until it is acknowledged (see :meth:`_load_partition`); only a cancellation
        (resignation) ends it otherwise. A failure is logged the first time and every 50th retry."""
        attempt = 0
        while True:
            try:
                result = await store.barrier(partition)
                if result.error == 0:
                    return
                why = _error_name(result.error)
            except Exception as e:
                why = f"{type(e).__name__}: {e}"
            if attempt % 50 == 0:
                log.warning(
                    "offsets_partition=%d leader_epoch=%d: load barrier not acknowledged (%s, attempt %d); "
                    "still loading, retrying",
                    partition,
                    leader_epoch,
                    why,
                    attempt + 1,
                )
            attempt += 1
            await asyncio.sleep(self.barrier_retry_s)

    def _emit_load(self, phase: str, partition: int, leader_epoch: int, **more: Any) -> None:
        try:
            self.history.emit(
                "coordinator_load",
                impl="coordinator",
                broker_id=self.broker_id,
                phase=phase,
                offsets_partition=partition,
                leader_epoch=leader_epoch,
                **more,
            )
        except Exception:
            log.exception("cannot record a coordinator_load event")

    def maybe_served(self, group_id: str, api: str, response: Any) -> None:
        """Replicated mode: emit ``group_served`` for the first answer without error to a request of
        ``group_id`` since its partition's load ended (once per group per load)."""
        if self.store is None or not group_id or group_id in self._served:
            return
        error = getattr(response, "error", None)
        if error is None:
            parts = getattr(response, "partitions", None)
            if not parts:
                return
            error = max((abs(int(p.error)) for p in parts), default=0)
        if int(error) != 0:
            return
        classic = self._partitioned()
        partition = classic.partition_for(group_id)
        if partition is None or classic.partition_status(partition) != "owned":
            return
        self._served.add(group_id)
        generation = getattr(response, "generation_id", None)
        if not isinstance(generation, int) or generation < 0:
            group = classic.group(group_id)
            generation = group.generation_id if group is not None else -1
        log.info(
            "group=%s generation=%d offsets_partition=%d served (%s)", group_id, generation, partition, api
        )
        try:
            self.history.emit(
                "group_served",
                impl="coordinator",
                broker_id=self.broker_id,
                group=group_id,
                offsets_partition=partition,
                api=api,
                generation=generation,
            )
        except Exception:
            log.exception("cannot record a group_served event")
