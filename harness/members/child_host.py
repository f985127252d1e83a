"""Several coordinator members in one child process (a host): the subprocess adapter of
:mod:`harness.members.child` for a program that runs many members, each its own client on its own
thread (Kafka's Java consumer: one ``KafkaConsumer`` per thread in one JVM), so that a group of ten is
not ten JVMs on two cores.

Contract
--------
* The child prints the lines of :mod:`harness.members.child`'s contract, each with ``m``: the slot of the
  member it is about (the member's position in the host's command line). :class:`HostSink` routes each
  line to that member's own sink (a :class:`~harness.members.child.CoordinatorSink` over its own
  :class:`~harness.members.recorder.MemberRecorder`), ``m`` removed; a line without a valid slot is a
  :class:`~harness.members.child.ChildProtocolError`.
* Every hosted member writes under its own name (:class:`SourcedHistory`: its events' ``source``) into the
  host's one history, as the legacy hosts' members do (:mod:`harness.members.legacy_host`).
* :class:`ChildHost` is a :class:`~harness.members.child.ChildMember` with that sink: one process, one
  life cycle: a clean stop (SIGTERM) stops every member (each commits, closes and prints its
  ``stopped``); the end of the child writes an unclean ``stopped`` for each member that printed none, as
  does a clean stop after which the child exits non-zero (the adapter's ``stopped`` of a clean stop that
  the child ended with status 0 says ``clean=True``).
  Stopping, killing, pausing or stalling one hosted member alone is not offered: the runner keeps every
  member a step targets in its own process (:func:`harness.run.launch.host_groups`).
* What sharing a process costs in fidelity: each member keeps its own connections, coordinator state and
  heartbeat thread, so its requests and its protocol are those of a member alone; the members share the
  JVM's collector pauses (all of them freeze at once), its CPU and start-up, and its fate (one crash or
  out-of-memory ends all of them).
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from harness.history.writer import History
from harness.members.child import ChildMember, ChildProtocolError, ChildSpec, EventSink

__all__ = ["ChildHost", "HostSink", "SourcedHistory"]


class SourcedHistory:
    """``history`` whose events carry ``source`` (a hosted member's name) unless they name their own;
    closing it leaves the shared history open."""

    def __init__(self, history: History, source: str) -> None:
        self.history = history
        self.source = source

    def emit(self, kind: str, **fields: Any) -> None:
        fields.setdefault("source", self.source)
        self.history.emit(kind, **fields)

    def close(self) -> None:
        return None


class HostSink:
    """Routes a host's lines to its members' sinks by slot (see the module contract)."""

    def __init__(self, sinks: Sequence[EventSink]) -> None:
        if not sinks:
            raise ValueError("a host needs at least one member")
        self.sinks = list(sinks)
        self._stopped: set[int] = set()

    def accepts(self, kind: str) -> bool:
        return self.sinks[0].accepts(kind)

    def apply(self, kind: str, fields: dict[str, Any]) -> None:
        slot = fields.pop("m", None)
        if not isinstance(slot, int) or isinstance(slot, bool) or not 0 <= slot < len(self.sinks):
            raise ChildProtocolError(f"the host printed a {kind!r} line for no member of it (m={slot!r})")
        self.sinks[slot].apply(kind, fields)
        if kind == "stopped":
            self._stopped.add(slot)

    def unstopped(self) -> bool:
        """Whether some member has printed no ``stopped``."""
        return len(self._stopped) < len(self.sinks)

    def stopped(self, clean: bool, **fields: Any) -> None:
        """The adapter's ``stopped`` for every member that printed none."""
        for slot, sink in enumerate(self.sinks):
            if slot not in self._stopped:
                self._stopped.add(slot)
                sink.stopped(clean, **fields)


class ChildHost(ChildMember):
    """Several members run by one child process (see the module contract)."""

    def __init__(self, spec: ChildSpec, sinks: Sequence[EventSink], poll_timeout_s: float = 0.5) -> None:
        self.host_sink = HostSink(sinks)
        super().__init__(spec, self.host_sink, poll_timeout_s)

    def unstopped(self) -> bool:
        """Whether some member of the host has not printed its ``stopped``."""
        return self.host_sink.unstopped()
