"""The life cycle every group member runs, whatever its kind (coordinator, legacy_zk) and its client: one
:meth:`MemberTemplate.run`, with hooks per client.

Contract
--------
* :meth:`MemberTemplate.run` is the life cycle, in this order:

  1. :meth:`~MemberTemplate.announce_ready` (the ``ready`` event: booted, about to connect; t0 of a join);
  2. :meth:`~MemberTemplate.construct` makes the client object (a consumer; for a member in another
     language, its child process), kept in ``consumer`` once it returned;
  3. :meth:`~MemberTemplate.announce_started` (the ``started`` event);
  4. :meth:`~MemberTemplate.subscribe`;
  5. :meth:`~MemberTemplate.poll_once` until :meth:`~MemberTemplate.stop` (or a hook) sets the stop flag;
     while the member is stalled (:meth:`~MemberTemplate.stall`), :meth:`~MemberTemplate.stall_wait`
     instead;
  6. the end (also after an exception from any step above, which ``run`` then re-raises):

     - nothing constructed: :meth:`~MemberTemplate.release`, then ``announce_stopped(clean=False)``;
     - a stop with ``clean=False``, or :meth:`~MemberTemplate.may_close` false: ``release``, then
       ``announce_stopped(clean=False, **unclean_fields())``;
     - otherwise the clean close: :meth:`~MemberTemplate.final_commit`, then :meth:`~MemberTemplate.close`
       (a dynamic member leaves the group), then ``release``, then ``announce_stopped(clean=True,
       close_ms=...)``: the milliseconds the final commit and the close took. When either raises,
       ``stopped`` still says ``clean=True`` with ``close_ms``, unless :attr:`~MemberTemplate.close_must_return`
       (then ``announce_stopped(clean=False)``);
  7. after a normal end, :meth:`~MemberTemplate.after_run` (e.g. raise the fatal error that ended it).

* :meth:`~MemberTemplate.stop` may be called from any thread (the CLI's signal handler): it sets the stop
  flag, then calls :meth:`~MemberTemplate.interrupt` on the stopping thread; ``run`` returns after the
  current poll; ``clean`` commits and closes, otherwise it just returns (used only when the process is
  about to die anyway). ``stopping`` says whether the stop flag is set.
* :meth:`~MemberTemplate.stall` may be called from any thread (the CLI's signal handler): ``stall(True)``
  makes ``run`` stop polling, as a slow record handler would, and call ``stall_wait`` between looks at the
  stop flag, until ``stall(False)``; the client's own background work (its heartbeat) goes on, so that
  its poll timer (``max.poll.interval.ms``) can make it leave the group. A stop during a stall ends the
  loop as ever (a clean stop commits and closes). A member whose client runs elsewhere (a child
  process) overrides ``stall`` to tell it.
* The template writes no event itself: the ``announce_*`` hooks do, through the kind's recorder, so that
  each kind keeps its own vocabulary (:mod:`harness.kernel.events`). A client that writes its own history
  (the legacy member, :mod:`harness.members.legacy_member`; a child process, :mod:`harness.members.child`)
  writes them at the steps they belong to, and its ``announce_*`` hooks write only what it did not.
"""

from __future__ import annotations

import threading
import time
from abc import ABC, abstractmethod
from typing import Any, ClassVar


class MemberTemplate(ABC):
    """One member's life cycle (see the module contract); subclasses implement the hooks."""

    #: ``stopped`` says ``clean=True`` only when the final commit and the close returned.
    close_must_return: ClassVar[bool] = False
    #: how long the default :meth:`stall_wait` waits on the stop flag
    stall_wait_s: ClassVar[float] = 0.05

    def __init__(self) -> None:
        #: the client object :meth:`construct` returned (None until it returned)
        self.consumer: Any = None
        self._stop = threading.Event()
        self._stalled = threading.Event()
        self._clean = True

    # -- the life cycle --------------------------------------------------------------------------
    def run(self) -> None:
        """Join and consume until :meth:`stop`; then close cleanly or just return (see the module contract)."""
        self.announce_ready()
        completed = False
        try:
            self.consumer = self.construct()
            self.announce_started()
            self.subscribe()
            while not self._stop.is_set():
                if self._stalled.is_set():
                    self.stall_wait()
                else:
                    self.poll_once()
            completed = True
        finally:
            self._end(completed)
        self.after_run()

    def _end(self, completed: bool) -> None:
        if self.consumer is None:
            self.release()
            self.announce_stopped(clean=False)
            return
        if not (self._clean and self.may_close(completed)):
            self.release()
            self.announce_stopped(clean=False, **self.unclean_fields())
            return
        t0 = time.monotonic()
        closed = False
        try:
            self.final_commit()
            self.close()
            closed = True
        finally:
            close_ms = (time.monotonic() - t0) * 1e3
            self.release()
            if closed or not self.close_must_return:
                self.announce_stopped(clean=True, close_ms=close_ms)
            else:
                self.announce_stopped(clean=False)

    @property
    def stopping(self) -> bool:
        """Whether the stop flag is set (:meth:`stop`, or a hook that ended the member)."""
        return self._stop.is_set()

    def stop(self, clean: bool = True) -> None:
        """Ask ``run`` to return after the current poll (any thread); ``clean`` commits and closes."""
        self._clean = clean
        self._stop.set()
        self.interrupt()

    @property
    def stalled(self) -> bool:
        """Whether the member is stalled (:meth:`stall`)."""
        return self._stalled.is_set()

    def stall(self, on: bool) -> None:
        """Stall the poll loop (``on``) or let it poll again (any thread; see the module contract)."""
        if on:
            self._stalled.set()
        else:
            self._stalled.clear()

    # -- hooks -----------------------------------------------------------------------------------
    @abstractmethod
    def announce_ready(self) -> None:
        """Write ``ready``."""

    @abstractmethod
    def construct(self) -> Any:
        """Make the client object (it connects now or on its first poll)."""

    @abstractmethod
    def announce_started(self) -> None:
        """Write ``started``."""

    @abstractmethod
    def subscribe(self) -> None:
        """Subscribe to the topic (and wait for what the first join needs)."""

    @abstractmethod
    def poll_once(self) -> None:
        """One poll: process what it returned, commit what is due."""

    @abstractmethod
    def final_commit(self) -> None:
        """A clean stop's commit, before :meth:`close`."""

    @abstractmethod
    def close(self) -> None:
        """Close the client (a dynamic member leaves the group)."""

    @abstractmethod
    def announce_stopped(self, clean: bool, **fields: Any) -> None:
        """Write ``stopped``."""

    def may_close(self, completed: bool) -> bool:
        """Whether a clean stop closes the client, ``completed`` saying whether the poll loop ended without
        an exception (default: always)."""
        return True

    def unclean_fields(self) -> dict[str, Any]:
        """More fields of an unclean ``stopped`` once the client was constructed (default: none)."""
        return {}

    def release(self) -> None:
        """What is left to free once the client is closed or given up (default: nothing)."""
        return None

    def interrupt(self) -> None:
        """End a step that is waiting (a poll, a start that blocks) early, once the stop flag is set; called
        on the stopping thread (default: nothing, the step returns by itself)."""
        return None

    def after_run(self) -> None:
        """After a normal end (default: nothing)."""
        return None

    def stall_wait(self) -> None:
        """One wait of a stalled poll loop, short, so that a stop or an unstall is seen soon (default: wait
        on the stop flag for :attr:`stall_wait_s`). A client whose background work runs only while the
        member's thread drives it (an event loop) keeps driving it here."""
        self._stop.wait(self.stall_wait_s)
