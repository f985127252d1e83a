# pyright: strict
"""The effect runner: the asyncio shell that runs the pure :class:`~coordinator.group.machine.GroupCoordinator`.

The kio adapters (:mod:`coordinator.groups`) turn requests into machine calls; this module runs those calls and
applies the effects the machine returns. It knows nothing of the wire.

Contract
--------
* :meth:`GroupRunner.call` runs one machine request (tagged by a :class:`Token` that carries the adapter's
  conversion of the machine's response) and applies the returned effects in order:

  - :class:`~coordinator.group.api.Respond` for the call's own token during the same call gives the converted
    response directly (Heartbeat, most errors); otherwise ``call`` returns a future that a later Respond
    completes (a parked JoinGroup or SyncGroup);
  - ``SetTimer`` / ``CancelTimer`` keep one asyncio timer per key; a timer fires
    ``on_timer(now_ms, key)`` with ``now_ms >= deadline``. Re-arming a timer to a later deadline
    (every heartbeat) only records the new deadline: the armed handle re-arms itself when it fires
    early, so a heartbeat costs no timer-heap work;
  - ``Persist`` records go to the :class:`~coordinator.group_log.GroupLog` (if any), written before
    any later Respond of the same effect list is delivered;
  - ``Emit`` events go to the history with ``impl="coordinator"`` and the broker id; group state
    transitions also get one INFO log line naming group, generation and members.

* **Failures are loud, never a wedge.** Every machine call (a request or a timer) runs through
  :meth:`GroupRunner.run`: if the machine raises, if applying an effect fails (a group-log write, a
  timer), or if afterwards a group is in PreparingRebalance without an armed join timer, the runner
  logs the error with its traceback, counts it (``group_failure`` in the broker's ``rejected``
  counters), and resets the group (:meth:`~coordinator.group.machine.GroupCoordinator.reset_group`):
  every parked JoinGroup / SyncGroup of it is answered (UNKNOWN_MEMBER_ID, or UNKNOWN_SERVER_ERROR
  when its answer was lost in the failure), its timers go, and it continues Empty with its offsets,
  so members simply join again. The request that hit the failure is answered UNKNOWN_SERVER_ERROR
  (by the server, on :class:`GroupFailure`). A response that cannot be converted fails only that
  request; an event that cannot be written to the history is logged.
* Time is wall-clock milliseconds (record timestamps are meaningful across restarts).
* Loading: :meth:`GroupRunner.load` replays the group log into the machine between
  ``begin_loading`` and ``finish_loading``, yielding to the event loop between chunks, so requests
  arriving meanwhile are answered by the machine (COORDINATOR_LOAD_IN_PROGRESS).
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import time
from collections import Counter
from collections.abc import Callable, Iterable, Sequence
from typing import Any

from coordinator.group import api as g
from coordinator.group.machine import GroupCoordinator
from coordinator.group.records import Record
from coordinator.group_log import GroupLog
from harness.kernel.history import History

__all__ = ["GroupFailure", "GroupRunner", "Token", "now_ms"]

log = logging.getLogger("coordinator")

_LOAD_CHUNK = 2000


def now_ms() -> int:
    """Wall-clock time in milliseconds (the runner's default clock)."""
    return time.time_ns() // 1_000_000


class GroupFailure(RuntimeError):
    """A machine call or the application of its effects failed for a group; the group was reset."""


class Token:
    """Tags one request in the machine; carries where its answer goes.

    ``convert`` turns the machine's response into what the caller answers (a kio response); it runs when the
    machine responds, during the call or later."""

    __slots__ = ("convert", "error", "fut", "response")

    def __init__(self, convert: Callable[[Any], Any]) -> None:
        self.convert = convert
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
        machine: GroupCoordinator,
        history: History,
        group_log: GroupLog | None = None,
        *,
        broker_id: int = 0,
        clock: Callable[[], int] = now_ms,
        rejected: Counter[str] | None = None,
    ) -> None:
        self.machine = machine
        self.history = history
        self.group_log = group_log
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
        why = self.machine.wedged(group_id)
        if why is not None:
            return why
        group = self.machine.group(group_id)
        if (
            group is not None
            and group.state is g.GroupState.PREPARING_REBALANCE
            and group.join_key not in self._timers
        ):
            return "PreparingRebalance without an armed join timer"
        return None

    def _fail(self, group_ids: Sequence[str], what: str, error: BaseException) -> None:
        self.rejected["group_failure"] += 1
        log.error("group(s) %s: %s failed; resetting: %s", list(group_ids), what, error, exc_info=error)
        for group_id in group_ids:
            for key in [k for k in self._timers if len(k) > 1 and k[1] == group_id]:
                self._timers.pop(key).handle.cancel()
            try:
                effects = self.machine.reset_group(self.clock(), group_id, f"{what} failed: {error}")
            except Exception:
                log.critical("group=%s cannot be reset; dropping it from memory", group_id, exc_info=True)
                self.machine.drop_group(group_id)
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
                    pending.append(effect.record)
                case g.Emit():
                    try:
                        self._emit(effect)
                    except Exception:
                        log.exception("cannot record group event %s", effect.kind)
        if pending:
            self._persist(pending)

    def _persist(self, records: list[Record]) -> None:
        if self.group_log is not None:
            self.group_log.append(records)

    @staticmethod
    def _respond(token: Any, response: Any) -> None:
        if not isinstance(token, Token):
            return
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
        self.history.emit(effect.kind, impl="coordinator", broker_id=self.broker_id, **fields)
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

    def _member_ids(self, group: Any) -> list[str]:
        if not isinstance(group, str):
            return []
        try:
            described = self.machine.describe_groups(self.clock(), g.DescribeGroupsRequest([group]))
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
        for t in self._timers.values():
            t.handle.cancel()
        self._timers.clear()

    @property
    def timer_count(self) -> int:
        return len(self._timers)

    # ------------------------------------------------------------------ loading

    async def load(self) -> tuple[int, int]:
        """Replay the group log into the machine; ``(records loaded, records skipped)``.

        A line that does not decode (see :class:`~coordinator.group_log.GroupLog`) or a record the machine
        rejects is skipped with a warning naming its line; everything else is loaded. If reading the log
        itself fails, the error propagates, and the groups loaded until then are served (Kafka's
        ``loadGroupsAndOffsets`` logs the error and owns the partition all the same): loading always ends.
        """
        self.loading = True
        self.apply(self.machine.begin_loading())
        count = skipped = 0
        try:
            if self.group_log is not None:
                for lineno, record in self.group_log.replay_lines():
                    try:
                        self.machine.load(record)
                    except Exception as e:
                        skipped += 1
                        log.warning(
                            "group log %s line %d skipped: %s (%s: %s)",
                            self.group_log.path,
                            lineno,
                            record,
                            type(e).__name__,
                            e,
                        )
                        continue
                    count += 1
                    if count % _LOAD_CHUNK == 0:
                        await asyncio.sleep(0)
                skipped += self.group_log.skipped
        finally:
            self.apply(self.machine.finish_loading(self.clock()))
            self.loading = False
        return count, skipped
