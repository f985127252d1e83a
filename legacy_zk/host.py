"""Running members in the foreground: one member on threads, or many on gevent in one process.

Contract
--------
:func:`run_members` starts every member (concurrently), then blocks until SIGINT / SIGTERM (or
``stop`` is set), then stops them all and returns the process exit status (0). On SIGUSR1 every
member *quiesces* (stops re-arming watches and starting rebalances): a harness sends it to every
process of a group before stopping them, so that tearing the group down does not cause its own
herd (notes/environment.md: ~N^2/2 notifications otherwise).

Handlers:

* ``threading`` (kazoo's default) — each member has its own threads and may fetch records with
  kafka-python. Use it for a member a fault will hit (alone in its process, so SIGSTOP/SIGKILL hit
  exactly that member) and for every member that consumes data.
* ``gevent`` (``SequentialGeventHandler``) — many sessions in one process are cheap (a greenlet per
  session where the threading handler needs threads per session, which do not scale to the sessions
  of a large group). kafka-python is thread-based and does not mix with a gevent hub without monkey
  patching, so gevent-hosted members are **coordination-only** (``herdlab.fetch=false``): they
  register, watch, rebalance, claim and commit exactly as the others, without a record fetcher.
  The herd benchmark at N=200 uses them, and says so in its output.
"""

from __future__ import annotations

import logging
import signal
import threading
from collections.abc import Callable, Sequence

from harness.kernel.errors import HerdlabError
from harness.kernel.history import History
from legacy_zk.config import ConsumerConfig
from legacy_zk.ids import TopicPartition
from legacy_zk.member import LegacyZkMember

log = logging.getLogger("legacy_zk")

AssignmentCallback = Callable[[LegacyZkMember, str, list[TopicPartition]], None]


def run_members(
    configs: Sequence[ConsumerConfig],
    history: History,
    handler: str = "threading",
    on_assignment: AssignmentCallback | None = None,
    on_started: Callable[[list[LegacyZkMember]], None] | None = None,
    stop: threading.Event | None = None,
) -> int:
    """Run ``configs`` as members until a signal (see the module docstring)."""
    if handler == "gevent":
        return _run_gevent(configs, history, on_assignment, on_started)
    return _run_threads(configs, history, on_assignment, on_started, stop or threading.Event())


def _run_threads(
    configs: Sequence[ConsumerConfig],
    history: History,
    on_assignment: AssignmentCallback | None,
    on_started: Callable[[list[LegacyZkMember]], None] | None,
    stop: threading.Event,
) -> int:
    members = [
        LegacyZkMember(c, history=history, handler="threading", on_assignment=on_assignment) for c in configs
    ]
    quiesce = threading.Event()
    previous = {}
    if threading.current_thread() is threading.main_thread():
        for sig in (signal.SIGTERM, signal.SIGINT):
            previous[sig] = signal.signal(sig, lambda *_: stop.set())
        previous[signal.SIGUSR1] = signal.signal(signal.SIGUSR1, lambda *_: quiesce.set())
    try:
        errors: list[BaseException] = []

        def start(m: LegacyZkMember) -> None:
            try:
                m.start()
            except BaseException as e:  # noqa: BLE001 - reported below
                errors.append(e)

        starters = [threading.Thread(target=start, args=(m,), daemon=True) for m in members]
        for t in starters:
            t.start()
        for t in starters:
            while t.is_alive() and not stop.is_set():
                t.join(0.2)
        if errors:
            raise errors[0]
        if on_started is not None:
            on_started(members)
        while not stop.wait(0.2):
            if quiesce.is_set():
                quiesce.clear()
                for m in members:
                    m.quiesce()
        return 0
    finally:
        for m in members:
            m.quiesce()
        for m in members:
            try:
                m.close()
            except Exception:  # noqa: BLE001 - keep closing the others
                log.exception("closing %s failed", m.id)
        for sig, h in previous.items():
            signal.signal(sig, h)


def _run_gevent(
    configs: Sequence[ConsumerConfig],
    history: History,
    on_assignment: AssignmentCallback | None,
    on_started: Callable[[list[LegacyZkMember]], None] | None,
) -> int:
    import gevent
    import gevent.event

    if any(c.fetch for c in configs):
        raise HerdlabError("gevent-hosted members are coordination-only: run them with --no-fetch")
    members = [
        LegacyZkMember(c, history=history, handler="gevent", on_assignment=on_assignment) for c in configs
    ]
    stop = gevent.event.Event()

    def quiesce_all() -> None:
        for m in members:
            m.quiesce()

    handlers = [
        gevent.signal_handler(signal.SIGTERM, stop.set),
        gevent.signal_handler(signal.SIGINT, stop.set),
        gevent.signal_handler(signal.SIGUSR1, quiesce_all),
    ]
    try:
        jobs = [gevent.spawn(m.start) for m in members]
        while not stop.is_set() and not all(j.ready() for j in jobs):
            gevent.joinall(jobs, timeout=0.2)
        failed = [j.exception for j in jobs if j.ready() and j.exception is not None]
        if failed:
            raise failed[0]
        if on_started is not None and not stop.is_set():
            on_started(members)
        stop.wait()
        return 0
    finally:
        quiesce_all()
        closers = [gevent.spawn(m.close) for m in members]
        gevent.joinall(closers, timeout=60)
        for h in handlers:
            h.cancel()
