# pyright: strict
"""The member's explicit states, their allowed transitions, and the outcome of one rebalance attempt.

Contract
--------
Two state machines describe one :class:`legacy_zk.member.LegacyZkMember`, kept apart because they
change on different threads:

* :class:`Lifecycle` (any thread: ``start``, ``quiesce``, ``close``, kazoo's connection thread
  reads it)::

      NEW --start--> STARTING --connected--> RUNNING --quiesce--> QUIESCED
       |                |  \\--unreachable--> FAILED                  |
       |                |                      |                     |
       |                +------quiesce-------> QUIESCED              |
       |                +--------------close----+----------+---------+--> CLOSING --> STOPPING --> CLOSED
       +--close (never started)------------------------------------------------------------------> CLOSED

  ``RUNNING``/``STARTING``: watches are re-armed and rebalances run. ``QUIESCED``: notifications are
  ignored and no rebalance starts (a group about to be torn down makes no teardown herd).
  ``CLOSING``: shutting down (every wait ends, the rebalance lock is awaited). ``STOPPING``: the
  kazoo session is being closed (a reconnect wait ends at once). ``FAILED``: ZooKeeper did not
  answer at start; the session was stopped.

* :class:`RebalanceState` (only under the member's rebalance lock)::

      IDLE / SETTLED / GAVE_UP --begin--> REBALANCING --ok, no_brokers--> SETTLED
      REBALANCING --failed--> BACKING_OFF --next attempt--> REBALANCING
      BACKING_OFF --(after the last attempt's backoff)--> GAVE_UP
      REBALANCING, BACKING_OFF --shutdown--> STOPPED
      REBALANCING --aborted (a BaseException that is no attempt outcome: a killed greenlet)--> IDLE

  A failed attempt always backs off (0.8 slept after the last one too) before the member retries
  or gives up; ``STOPPED`` is final (only a closing member reaches it).

:class:`StateMachine` checks every transition against its table: an illegal transition is a bug
and raises :class:`IllegalTransition`. :meth:`StateMachine.advance` is the compare-and-set form
for a transition another thread may have pre-empted (``start`` finding the member already closed).

:class:`AttemptOutcome` is the result of one attempt; its ``value`` is the exact string the history's
``rebalance_end`` event carries (``ok``, ``no_brokers``, ``conflict``, ``error``, ``shutdown``).

Pure: no ZooKeeper, no clock, no logging.
"""

from __future__ import annotations

import threading
from collections.abc import Mapping
from enum import Enum
from typing import Generic, TypeVar


class IllegalTransition(RuntimeError):
    """A transition the table does not allow: a bug in the caller, never a runtime condition."""


class Lifecycle(Enum):
    """Where a member is in its life (see the module docstring for the diagram)."""

    NEW = "new"
    STARTING = "starting"
    RUNNING = "running"
    FAILED = "failed"
    QUIESCED = "quiesced"
    CLOSING = "closing"
    STOPPING = "stopping"
    CLOSED = "closed"


LIFECYCLE_TRANSITIONS: Mapping[Lifecycle, frozenset[Lifecycle]] = {
    Lifecycle.NEW: frozenset({Lifecycle.STARTING, Lifecycle.CLOSED}),
    Lifecycle.STARTING: frozenset(
        {Lifecycle.RUNNING, Lifecycle.FAILED, Lifecycle.QUIESCED, Lifecycle.CLOSING}
    ),
    Lifecycle.RUNNING: frozenset({Lifecycle.QUIESCED, Lifecycle.CLOSING}),
    Lifecycle.FAILED: frozenset({Lifecycle.CLOSING}),
    Lifecycle.QUIESCED: frozenset({Lifecycle.CLOSING}),
    Lifecycle.CLOSING: frozenset({Lifecycle.STOPPING, Lifecycle.CLOSED}),
    Lifecycle.STOPPING: frozenset({Lifecycle.CLOSED}),
    Lifecycle.CLOSED: frozenset(),
}

#: States in which watches are re-armed and watch events start rebalances.
ACTIVE: frozenset[Lifecycle] = frozenset({Lifecycle.STARTING, Lifecycle.RUNNING})
#: States in which the member is shutting down (0.8's ``isShuttingDown``).
SHUTTING_DOWN: frozenset[Lifecycle] = frozenset({Lifecycle.CLOSING, Lifecycle.STOPPING, Lifecycle.CLOSED})
#: States in which the kazoo session is being (or has been) stopped: reconnect waits end at once.
CLIENT_STOPPING: frozenset[Lifecycle] = frozenset({Lifecycle.FAILED, Lifecycle.STOPPING, Lifecycle.CLOSED})


class RebalanceState(Enum):
    """Where the member's synced rebalance stands (see the module docstring for the diagram)."""

    IDLE = "idle"
    REBALANCING = "rebalancing"
    BACKING_OFF = "backing_off"
    SETTLED = "settled"
    GAVE_UP = "gave_up"
    STOPPED = "stopped"


REBALANCE_TRANSITIONS: Mapping[RebalanceState, frozenset[RebalanceState]] = {
    RebalanceState.IDLE: frozenset({RebalanceState.REBALANCING}),
    RebalanceState.REBALANCING: frozenset(
        {
            RebalanceState.IDLE,
            RebalanceState.SETTLED,
            RebalanceState.BACKING_OFF,
            RebalanceState.STOPPED,
        }
    ),
    RebalanceState.BACKING_OFF: frozenset(
        {RebalanceState.REBALANCING, RebalanceState.GAVE_UP, RebalanceState.STOPPED}
    ),
    RebalanceState.SETTLED: frozenset({RebalanceState.REBALANCING}),
    RebalanceState.GAVE_UP: frozenset({RebalanceState.REBALANCING}),
    RebalanceState.STOPPED: frozenset(),
}


class AttemptOutcome(Enum):
    """The outcome of one rebalance attempt; ``value`` is the history's ``outcome`` string."""

    OK = "ok"
    NO_BROKERS = "no_brokers"  # no broker registered: nothing to own, counts as success (0.8)
    CONFLICT = "conflict"  # an owner znode was held by someone else (NodeExists)
    ERROR = "error"  # a ZooKeeper, assignor or payload error ended the attempt
    SHUTDOWN = "shutdown"  # the member is closing: neither success nor failure

    @property
    def succeeded(self) -> bool:
        """True for ``ok`` and ``no_brokers`` (the synced rebalance ends with success)."""
        return self in (AttemptOutcome.OK, AttemptOutcome.NO_BROKERS)

    @property
    def failed(self) -> bool:
        """True for ``conflict`` and ``error`` (counted as a failed attempt; backoff and retry)."""
        return self in (AttemptOutcome.CONFLICT, AttemptOutcome.ERROR)


S = TypeVar("S", bound=Enum)


class StateMachine(Generic[S]):
    """A current state and the table of allowed transitions; thread-safe (a plain lock, never held
    across a yield, so safe for threads and greenlets alike)."""

    def __init__(self, name: str, initial: S, table: Mapping[S, frozenset[S]]) -> None:
        missing = [s for s in type(initial) if s not in table]
        if missing:
            raise ValueError(f"{name}: transition table lacks {', '.join(str(s) for s in missing)}")
        self.name = name
        self._table = table
        self._state = initial
        self._lock = threading.Lock()

    @property
    def state(self) -> S:
        """The current state."""
        return self._state

    def allowed(self, frm: S, to: S) -> bool:
        """Whether the table allows ``frm -> to``."""
        return to in self._table[frm]

    def transition(self, to: S) -> S:
        """Move to ``to``; returns the state left. Raises :class:`IllegalTransition` if not allowed."""
        with self._lock:
            frm = self._state
            if to not in self._table[frm]:
                raise IllegalTransition(f"{self.name}: illegal transition {frm.name} -> {to.name}")
            self._state = to
            return frm

    def advance(self, frm: frozenset[S] | S, to: S) -> bool:
        """Move to ``to`` only if the current state is ``frm`` (or one of them); False otherwise.

        The move itself must be allowed by the table (else :class:`IllegalTransition`).
        """
        allowed_from = frm if isinstance(frm, frozenset) else frozenset({frm})
        with self._lock:
            cur = self._state
            if cur not in allowed_from:
                return False
            if to not in self._table[cur]:
                raise IllegalTransition(f"{self.name}: illegal transition {cur.name} -> {to.name}")
            self._state = to
            return True

    def __repr__(self) -> str:
        return f"<{self.name} {self._state.name}>"
