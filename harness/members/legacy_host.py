"""Several legacy_zk members in one process (a host), each run by the member template's life cycle
(:class:`harness.members.legacy_member.LegacyMember`): on threads, or many on one gevent hub.

Contract
--------
:func:`run_members` runs every member's life cycle at once, waits until each one's start returned (or
failed: the first failure is raised once every start ended, after the others were stopped), calls
``on_started`` with the consumers, then blocks until SIGINT / SIGTERM (or ``stop`` is set), then stops them
all and returns the process exit status (0). Stopping: every member is *quiesced* first (stops re-arming
watches and starting rebalances), so that tearing the group down does not cause its own herd of
rebalances (~N^2/2 notifications otherwise); then each member's life cycle closes it: on threads one
member after the other (each close waited for before the next stop), on gevent all at once (given 60 s).
On SIGUSR1 every member quiesces: a harness sends it to every process of a group before stopping them.

Handlers:

* ``threading`` (kazoo's default): each member has its own threads and may fetch records with
  kafka-python. Use it for a member a fault will hit (alone in its process, so SIGSTOP/SIGKILL hit
  exactly that member) and for every member that consumes data.
* ``gevent`` (``SequentialGeventHandler``): many sessions in one process are cheap (the threading handler
  does not scale to a thousand sessions in one process). kafka-python is thread-based and does not mix
  with a gevent hub without monkey patching, so gevent-hosted members are **coordination-only**
  (``herdlab.fetch=false``): they register, watch, rebalance, claim and commit exactly as the others,
  without a record fetcher.
"""

from __future__ import annotations

import logging
import signal
import threading
from collections.abc import Callable, Sequence
from typing import Any

from harness.kernel.errors import HerdlabError
from harness.kernel.history import History
from harness.members.legacy_member import LegacyMember, OnAssignment
from legacy_zk.config import ConsumerConfig
from legacy_zk.member import LegacyZkMember

log = logging.getLogger("legacy_zk")

OnStarted = Callable[[list[LegacyZkMember]], None]


class _Hosted:
    """One member of the host and how its life cycle ended (``error``: what its ``run`` raised)."""

    def __init__(self, member: LegacyMember) -> None:
        self.member = member
        self.error: BaseException | None = None
        self.ended = False

    def run(self) -> None:
        try:
            self.member.run()
        except BaseException as e:  # noqa: BLE001 - reported by the host
            self.error = e
            if self.member.running:  # a start that failed is raised by the host; a failed close is logged
                consumer = self.member.consumer
                log.error("closing %s failed", consumer.id if consumer else "", exc_info=e)
        finally:
            self.ended = True

    @property
    def started(self) -> bool:
        """The member's start returned, or its life cycle ended."""
        return self.member.running or self.ended


def run_members(
    configs: Sequence[ConsumerConfig],
    history: History,
    handler: str = "threading",
    on_assignment: OnAssignment | None = None,
    on_started: OnStarted | None = None,
    stop: threading.Event | None = None,
) -> int:
    """Run ``configs`` as members until a signal (see the module contract)."""
    hosted = [
        _Hosted(LegacyMember(c, history, handler=handler, on_assignment=on_assignment)) for c in configs
    ]
    if handler == "gevent":
        if any(c.fetch for c in configs):
            raise HerdlabError("gevent-hosted members are coordination-only: run them with --no-fetch")
        return _run_gevent(hosted, on_started)
    return _run_threads(hosted, on_started, stop or threading.Event())


def _started(hosted: list[_Hosted], on_started: OnStarted | None) -> None:
    """Raise the first failed start; else tell ``on_started`` of the consumers."""
    failed = [h.error for h in hosted if h.error is not None and not h.member.running]
    if failed:
        raise failed[0]
    if on_started is not None:
        on_started([h.member.consumer for h in hosted if h.member.consumer is not None])


def _quiesce(hosted: list[_Hosted]) -> None:
    for h in hosted:
        h.member.quiesce()


def _run_threads(hosted: list[_Hosted], on_started: OnStarted | None, stop: threading.Event) -> int:
    quiesce = threading.Event()
    previous: dict[int, Any] = {}
    if threading.current_thread() is threading.main_thread():
        for sig in (signal.SIGTERM, signal.SIGINT):
            previous[sig] = signal.signal(sig, lambda *_: stop.set())
        previous[signal.SIGUSR1] = signal.signal(signal.SIGUSR1, lambda *_: quiesce.set())
    threads = [threading.Thread(target=h.run, name="legacy-member", daemon=True) for h in hosted]
    try:
        for t in threads:
            t.start()
        while not all(h.started for h in hosted) and not stop.wait(0.2):
            pass
        _started(hosted, on_started)
        while not stop.wait(0.2):
            if quiesce.is_set():
                quiesce.clear()
                _quiesce(hosted)
        return 0
    finally:
        _quiesce(hosted)
        for h, t in zip(hosted, threads, strict=True):
            h.member.stop()
            if t.ident is not None:
                t.join()
        for sig, previous_handler in previous.items():
            signal.signal(sig, previous_handler)


def _run_gevent(hosted: list[_Hosted], on_started: OnStarted | None) -> int:
    import gevent
    import gevent.event

    stop = gevent.event.Event()
    handlers = [
        gevent.signal_handler(signal.SIGTERM, stop.set),
        gevent.signal_handler(signal.SIGINT, stop.set),
        gevent.signal_handler(signal.SIGUSR1, lambda: _quiesce(hosted)),
    ]
    jobs = [gevent.spawn(h.run) for h in hosted]
    try:
        while not stop.is_set() and not all(h.started for h in hosted):
            stop.wait(0.2)
        if not stop.is_set():
            _started(hosted, on_started)
            stop.wait()
        return 0
    finally:
        _quiesce(hosted)
        stoppers = [gevent.spawn(h.member.stop) for h in hosted]
        gevent.joinall([*stoppers, *jobs], timeout=60)
        for signal_handler in handlers:
            signal_handler.cancel()
