"""A member written in another language (a JVM or Go process) as a child process: the subprocess adapter of
the member template (:mod:`harness.members.template`), for both member kinds.

The child runs the client (Kafka's Java consumer, kafka-go, franz-go for the coordinator kind; Kafka
0.8.2.2's own ZooKeeper consumer for the legacy_zk kind) and prints what happens as JSON lines; the adapter
is the member process the runner starts (``python -m harness.members ...``), so that the runner, the
nemesis and the history see one member whatever language it is written in.

Contract
--------
* Starting: :meth:`ChildMember.construct` starts ``spec.argv`` (with ``spec.env`` over the adapter's
  environment) in the adapter's own process group (no new session), stdout a pipe the adapter reads,
  stderr the adapter's (the member's log), stdin a pipe the adapter holds open for commands. The
  command line carries everything the member needs (addresses, group, topic, name, properties, and
  ``--hold-until FILE`` when the member is held: the child does the hold itself, as
  :mod:`harness.members.release` says, so that its runtime has started before it is released).
* What a child prints: on stdout one JSON object per line, each flushed at once, nothing else (its logs
  go to stderr). Each object has ``kind`` and the fields of that kind in the member kind's vocabulary
  (:meth:`EventSink.accepts`); the child prints no ``ts_ns``, ``source``, ``role`` or header
  fields: the sink adds them, so that every event has exactly the fields, in the same order, as the
  Python members' (:mod:`harness.kernel.events`). An event is stamped when the adapter reads its line
  (the lines are read as they come). A line that is not such an object ends the member with a
  :class:`ChildProtocolError` (the child is a defect then, and is killed).

  - coordinator kind (:class:`CoordinatorSink`, which also calls its ``on_change`` after an ``assigned``
    or ``revoked`` line, as a Python member does): the calls of
    :class:`~harness.members.recorder.MemberRecorder`, one line each, in the order the client reports
    them: ``ready`` (booted, about to connect), ``started`` (the client exists; extra fields such as
    ``effective``), ``joined`` (``generation``, ``member``: a completed join, before its assignment),
    ``assigned`` (``partitions``: one line per assignment callback), ``revoked`` (``partitions``,
    ``lost``), ``record`` (``partition``, ``offset``, ``value``: the record's value as text, or null),
    ``commit`` (``partition``, ``offset``, ``error``: Kafka's error name or null when accepted, ``code``),
    ``heartbeat_error`` (``error``, ``code``), ``stopped`` (``clean``, and ``close_ms`` for a clean stop).
    The child commits by :class:`~harness.members.recorder.CommitPolicy`'s rules itself
    (:mod:`harness.scenario.properties`: its client's auto-commit off).
  - legacy_zk kind (:class:`LegacySink`): the events of a legacy member (``ready``, ``started``,
    ``registered``, ``rebalance_begin``, ``zk_request`` ...: any kind written as a lower-case name, as
    the Python legacy member's own vocabulary is open), each with ``member`` (its consumer id, kept
    from the last line that named it) and its own fields; the sink adds ``source``, ``impl`` and
    ``group`` where :mod:`legacy_zk.member` writes them.

* Signals, as the runner and the nemesis use them on a member process:

  - a clean stop (SIGTERM or SIGINT to the adapter only: :meth:`~ChildMember.stop` ``clean=True``): the
    adapter sends the child SIGTERM (:meth:`~ChildMember.final_commit`) and reads its lines until it
    closes stdout (:meth:`~ChildMember.close`). On SIGTERM a child commits what its policy says, closes
    its client (a dynamic member leaves the group), prints ``stopped`` and exits 0;
  - ``stop(clean=False)``: the adapter SIGKILLs the child (:meth:`~ChildMember.release`);
  - a kill, a pause and a resume (SIGKILL, SIGSTOP, SIGCONT sent to the member's process group): they reach
    the child directly, as it is in that group;
  - another signal meant for the child (the legacy hosts' SIGUSR1: stop re-arming watches): the command
    that runs the adapter installs a handler calling :meth:`~ChildMember.forward`;
  - a stall and its end (:data:`~harness.kernel.actions.STALL_SIGNAL` /
    :data:`~harness.kernel.actions.UNSTALL_SIGNAL` to a coordinator member's adapter only): the command
    calls :meth:`~ChildMember.stall`, which tells the child by a command (below), never by a signal;
  - the adapter gone (its stdin pipe at end of file): the child exits at once, no commit, no leave.

* Commands, on the child's stdin, one JSON object per line (``cmd`` names it), flushed at once:

  - ``{"cmd": "stall"}`` (:meth:`~ChildMember.stall` ``True``, which the member's command calls on the
    nemesis's stall signal): the child stops polling (its processing is stuck, as a slow record handler
    would be) while its client's own background work (heartbeat thread, goroutines) goes on, so that its
    poll timer, where the client has one, makes it leave the group;
  - ``{"cmd": "unstall"}``: it polls again (rejoining the group if it was made to leave);
  - a stop (SIGTERM) during a stall ends the stall and stops cleanly; an unknown command is one line on
    stderr and is otherwise ignored; end of file still means the adapter is gone.

  The adapter goes on reading the child's lines during a stall (the child's own poll loop is what
  stalls); a command sent before the child was started is sent once it is.

* The end: a child that closes its stdout before it was asked to stop (a crash, a fatal client error)
  ends the member: ``stopped`` (``clean=False``) unless the child printed one, then
  :class:`ChildExited` when its exit status is not 0. When the child printed no ``stopped`` the adapter
  writes the template's. A child that ends a clean stop with a non-zero status (or by a signal) without
  printing its ``stopped`` (for a host: not every member's) did not stop cleanly: :meth:`~ChildMember.close`
  raises :class:`ChildExited` (:attr:`~ChildMember.close_must_return`), so that the member's ``stopped``
  says ``clean=False``, and the member ends with that error.
* A child that printed no line at all and exited with status 0 (a held child stopped before its
  release, which exits at once: :mod:`harness.members.release`) never began: the adapter writes no
  event for it, whether the stop came through the adapter or reached the child first.
"""

from __future__ import annotations

import json
import logging
import os
import queue
import signal
import subprocess
import threading
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import IO, Any, Protocol

from harness.history.writer import History
from harness.members.interface import MemberFatal, OnChange
from harness.members.recorder import MemberRecorder
from harness.members.template import MemberTemplate

log = logging.getLogger("harness.member.child")


class ChildProtocolError(RuntimeError):
    """The child printed a line that is not an event of its kind (the message quotes it)."""


class ChildExited(MemberFatal):
    """The child ended by itself with a non-zero exit status (the message names it)."""


@dataclass(frozen=True)
class ChildSpec:
    """How to start a child: its command line and the environment variables set over the adapter's."""

    argv: Sequence[str]
    env: Mapping[str, str] = field(default_factory=dict[str, str])


class EventSink(Protocol):
    """Turns a child's lines into the history events of its member kind (see the module contract)."""

    def accepts(self, kind: str) -> bool:
        """Whether a child of this member kind may print ``kind``."""
        ...

    def apply(self, kind: str, fields: dict[str, Any]) -> None:
        """Write the event(s) of one line (``kind`` accepted; ``fields`` the rest of the line)."""
        ...

    def stopped(self, clean: bool, **fields: Any) -> None:
        """Write the adapter's own ``stopped`` (the child printed none)."""
        ...


class CoordinatorSink:
    """The coordinator kind's lines as :class:`~harness.members.recorder.MemberRecorder` calls."""

    kinds = frozenset(
        {
            "ready",
            "started",
            "joined",
            "assigned",
            "revoked",
            "record",
            "commit",
            "heartbeat_error",
            "stopped",
        }
    )

    def __init__(self, rec: MemberRecorder, on_change: OnChange | None = None) -> None:
        self.rec = rec
        self.on_change = on_change

    def accepts(self, kind: str) -> bool:
        return kind in self.kinds

    def apply(self, kind: str, fields: dict[str, Any]) -> None:
        r = self.rec
        if kind == "ready":
            r.ready()
        elif kind == "started":
            r.started(**fields)
        elif kind == "joined":
            r.joined(int(fields["generation"]), str(fields["member"]))
        elif kind == "assigned":
            self._announce("assigned", r.assigned(int(p) for p in fields["partitions"]))
        elif kind == "revoked":
            lost = bool(fields.get("lost", False))
            self._announce(
                "lost" if lost else "revoked", r.revoked((int(p) for p in fields["partitions"]), lost=lost)
            )
        elif kind == "record":
            value = fields.get("value")
            r.record(
                int(fields["partition"]),
                int(fields["offset"]),
                None if value is None else str(value).encode(),
            )
        elif kind == "commit":
            r.commit_result(
                int(fields["partition"]),
                int(fields["offset"]),
                error=fields.get("error"),
                code=fields.get("code"),
            )
        elif kind == "heartbeat_error":
            r.heartbeat_error(str(fields["error"]), code=fields.get("code"))
        elif kind == "stopped":
            clean = bool(fields.pop("clean"))
            r.stopped(clean=clean, **fields)

    def stopped(self, clean: bool, **fields: Any) -> None:
        self.rec.stopped(clean=clean, **fields)

    def _announce(self, what: str, partitions: list[int]) -> None:
        if self.on_change is not None:
            self.on_change(what, partitions, self.rec.generation)


class LegacySink:
    """The legacy_zk kind's lines written as a legacy member writes its events (``source``, ``impl``,
    ``group``, ``member``, then the line's fields)."""

    def __init__(self, history: History, name: str, group: str) -> None:
        self.history = history
        self.name = name
        self.group = group
        self.member = ""

    def accepts(self, kind: str) -> bool:
        return kind.isidentifier() and kind.islower()

    def apply(self, kind: str, fields: dict[str, Any]) -> None:
        self.member = str(fields.pop("member", self.member))
        self.history.emit(
            kind,
            source=self.name or self.member,
            impl="legacy_zk",
            group=self.group,
            member=self.member,
            **fields,
        )

    def stopped(self, clean: bool, **fields: Any) -> None:
        self.apply("stopped", {"clean": clean, **fields})


class ChildMember(MemberTemplate):
    """One member run by a child process (see the module contract); ``poll_timeout_s``: how long one poll
    waits for a line before the stop flag is looked at again."""

    #: a clean stop whose child ended badly (see :meth:`close`) is no clean stop
    close_must_return = True

    def __init__(self, spec: ChildSpec, sink: EventSink, poll_timeout_s: float = 0.5) -> None:
        super().__init__()
        self.spec = spec
        self.sink = sink
        self.poll_timeout_s = poll_timeout_s
        self._lines: queue.Queue[bytes | None] = queue.Queue()
        self._ended = False  # the child closed its stdout
        self._printed = False  # the child printed a line (it began)
        self._stopped_printed = False
        self._killed = False  # by the adapter (an unclean stop)
        self._child_stalled = False  # the last stall command asked for

    # -- the child's lines -----------------------------------------------------------------------
    def _read(self, out: IO[bytes]) -> None:
        for line in out:
            self._lines.put(line)
        self._lines.put(None)

    def _apply(self, line: bytes) -> None:
        try:
            event = json.loads(line)
        except ValueError:
            event = None
        kind = event.get("kind") if isinstance(event, dict) else None
        if not isinstance(event, dict) or not isinstance(kind, str) or not self.sink.accepts(kind):
            raise ChildProtocolError(f"the child printed {line[:200]!r}, not an event of its kind")
        fields: dict[str, Any] = {k: v for k, v in event.items() if k != "kind"}  # pyright: ignore[reportUnknownVariableType]
        self._printed = True
        self.sink.apply(kind, fields)
        self._stopped_printed |= kind == "stopped"

    def unstopped(self) -> bool:
        """Whether the child has not printed its ``stopped`` (a host: some member's)."""
        return not self._stopped_printed

    def _never_began(self) -> bool:
        """The child printed nothing and exited with status 0 (see the module contract)."""
        proc: subprocess.Popen[bytes] | None = self.consumer
        return proc is not None and not self._printed and proc.returncode == 0

    def _exited(self, proc: subprocess.Popen[bytes]) -> ChildExited:
        return ChildExited(f"the member's child {self.spec.argv[0]} exited with status {proc.returncode}")

    # -- the template's hooks --------------------------------------------------------------------
    def announce_ready(self) -> None:
        return None  # the child prints ready once its runtime has started

    def construct(self) -> Any:
        proc = subprocess.Popen(
            list(self.spec.argv),
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            env={**os.environ, **self.spec.env},
        )
        assert proc.stdout is not None
        threading.Thread(target=self._read, args=(proc.stdout,), name="child-stdout", daemon=True).start()
        return proc

    def announce_started(self) -> None:
        # the child prints started; a stall asked for before the child existed is sent now
        if self._child_stalled:
            self._command("stall")

    def subscribe(self) -> None:
        return None  # the child subscribes itself

    def poll_once(self) -> None:
        try:
            line = self._lines.get(timeout=self.poll_timeout_s)
        except queue.Empty:
            return
        if line is None:  # the child closed its stdout: it is ending
            self._ended = True
            self.consumer.wait()
            self._stop.set()
            return
        self._apply(line)

    def may_close(self, completed: bool) -> bool:
        return completed and not self._ended

    def final_commit(self) -> None:
        self.consumer.send_signal(signal.SIGTERM)  # the child commits and closes on it

    def close(self) -> None:
        """Read the child's last lines until it closes its stdout and wait for it; :class:`ChildExited`
        when it exited non-zero (or by a signal) without printing its ``stopped`` (see the module
        contract)."""
        while (line := self._lines.get()) is not None:
            self._apply(line)
        self._ended = True
        proc: subprocess.Popen[bytes] = self.consumer
        proc.wait()
        if proc.returncode != 0 and self.unstopped():
            raise self._exited(proc)

    def release(self) -> None:
        proc: subprocess.Popen[bytes] | None = self.consumer
        if proc is None:
            return
        if proc.poll() is None:
            proc.kill()
            self._killed = True
        proc.wait()
        if proc.stdin is not None:
            proc.stdin.close()

    def announce_stopped(self, clean: bool, **fields: Any) -> None:
        if self.unstopped() and not self._never_began():
            self.sink.stopped(clean, **fields)

    def after_run(self) -> None:
        proc: subprocess.Popen[bytes] | None = self.consumer
        if proc is not None and proc.returncode and not self._killed:
            raise self._exited(proc)

    # -- commands ----------------------------------------------------------------------------------
    @property
    def stalled(self) -> bool:
        """Whether the child was last told to stall."""
        return self._child_stalled

    def stall(self, on: bool) -> None:
        """Tell the child to stall (``on``) or to poll again: a command on its stdin (see the module
        contract). The adapter's own loop keeps reading the child's lines."""
        self._child_stalled = on
        self._command("stall" if on else "unstall")

    def _command(self, cmd: str) -> None:
        """Write one command line to the child's stdin (nothing when it is not started or gone)."""
        proc: subprocess.Popen[bytes] | None = self.consumer
        if proc is None or proc.stdin is None or proc.poll() is not None:
            return
        try:
            proc.stdin.write(json.dumps({"cmd": cmd}).encode() + b"\n")
            proc.stdin.flush()
        except (OSError, ValueError):  # the child closed its stdin or is gone; the adapter closed it
            log.warning("could not send %r to the member's child", cmd)

    def forward(self, sig: int) -> None:
        """Send ``sig`` to the child (nothing when it is gone)."""
        proc: subprocess.Popen[bytes] | None = self.consumer
        if proc is not None and proc.poll() is None:
            proc.send_signal(sig)
