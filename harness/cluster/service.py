# pyright: strict
"""``Service``: one life cycle for every cluster-side process and container (ducktape's model).

Contract
--------
* A :class:`Service` has a ``name`` (for logs and errors) and a ``log_path`` (where its log is, or
  will be once saved; None when it has none yet). ``start(timeout)`` starts it and returns ``self``
  once it serves, or stops what it started and raises :class:`~harness.kernel.errors.Unreachable`
  with the tail of its log. ``ready()`` says whether it serves now (a probe: never raises).
  ``stop()`` is idempotent and leaves nothing behind (no process, no container, no temporary
  directory); the log stays at ``log_path`` when that was given by the caller.
* Conforming today: :class:`~harness.cluster.zookeeper.ZooKeeperServer`,
  :class:`~harness.cluster.broker.BrokerProcess` (processes, both through :class:`ProcessService`),
  and the container services of :mod:`harness.cluster.container_services` (ZooKeeper, herdlab broker,
  Apache Kafka broker, member).
* The lifecycle code they share lives here once: :func:`await_ready` (poll a readiness probe, fail
  early when the service exits, fail with the log tail at the deadline), :func:`on_free_port`
  (retry a start whose free port was taken in between), :class:`ProcessService` (spawn a registered
  child with its log, wait for it, stop it with a grace period) and :class:`ServiceStack` (what a
  cluster holds: services stopped in reverse start order, every one even if one fails).
  :func:`address` is every service's ``host:port`` (``connect_string`` / ``bootstrap``).
"""

from __future__ import annotations

import contextlib
import time
from collections.abc import Callable, Iterator, Mapping, Sequence
from pathlib import Path
from typing import Protocol, TypeVar, runtime_checkable

from harness.kernel.errors import Unreachable
from harness.procs import ChildProcess, spawn

__all__ = ["ProcessService", "Service", "ServiceStack", "address", "await_ready", "on_free_port"]

T = TypeVar("T")
S = TypeVar("S", bound="Service")

#: Seconds between two readiness probes: polling a server's own readiness, not test synchronisation.
POLL_SECONDS = 0.05


def address(host: str, port: int | None, what: str) -> str:
    """``host:port`` of a started service; ``RuntimeError("<what> is not started")`` while ``port`` is
    unset (None or 0: a service's port is known once it started)."""
    if not port:
        raise RuntimeError(f"{what} is not started")
    return f"{host}:{port}"


@runtime_checkable
class Service(Protocol):
    """A process or container of a cluster, with one life cycle (see the module contract)."""

    @property
    def name(self) -> str:
        """Name for logs, errors and the process table."""
        ...

    @property
    def log_path(self) -> Path | None:
        """Where the service's log is (or is saved on stop); None when it has none yet."""
        ...

    def start(self, timeout: float = ...) -> Service:
        """Start and wait until it serves; ``self``. On failure nothing is left running."""
        ...

    def ready(self) -> bool:
        """Serves now (a probe; never raises)."""
        ...

    def stop(self) -> None:
        """Stop, leaving nothing behind; idempotent."""
        ...


def await_ready(
    what: str,
    probe: Callable[[], bool],
    exited: Callable[[], str | None],
    log_tail: Callable[[], str],
    timeout: float,
    exit_check_interval: float = 0.0,
) -> float:
    """Poll ``probe()`` until it holds; the seconds it took.

    ``exited()`` returns why the service cannot become ready any more (e.g. ``"exited with status
    1"``) or None while it can; it is asked at most every ``exit_check_interval`` seconds (asking a
    container engine costs more than the probe). An ``OSError`` from ``probe`` counts as not ready.
    Raises :class:`Unreachable` naming ``what`` with ``log_tail()`` when the service exited or
    ``timeout`` seconds passed; it does not stop the service (the caller does).
    """
    t0 = time.monotonic()
    deadline = t0 + timeout
    next_exit_check = t0
    while True:
        with contextlib.suppress(OSError):
            if probe():
                return time.monotonic() - t0
        now = time.monotonic()
        if now >= next_exit_check:
            why = exited()
            if why is not None:
                raise Unreachable(f"{what} {why} before it was ready; log tail:\n{log_tail()}")
            next_exit_check = now + exit_check_interval
        if now > deadline:
            raise Unreachable(f"{what} not ready after {timeout:.0f}s; log tail:\n{log_tail()}")
        time.sleep(POLL_SECONDS)


def on_free_port(attempt: Callable[[], T], attempts: int = 3, clash: Sequence[str] = ("in use",)) -> T:
    """Run ``attempt()`` (which picks a free port and starts on it) up to ``attempts`` times.

    A port picked free can be taken before the server binds it: an :class:`Unreachable` whose text
    contains one of ``clash`` is retried; any other error, or the last clash, is raised. ``attempt``
    must leave nothing running when it raises.
    """
    for i in range(attempts):
        try:
            return attempt()
        except Unreachable as e:
            if i == attempts - 1 or not any(c in str(e) for c in clash):
                raise
    raise AssertionError("unreachable: attempts must be >= 1")


class ProcessService:
    """The shared life cycle of a service that is one registered child process (:mod:`harness.procs`).

    A subclass sets ``name`` and ``log_path`` and calls :meth:`_spawn_ready` from its ``start``;
    :meth:`stop_process` stops the child (SIGTERM, SIGKILL after ``grace``) and is idempotent.
    """

    name: str
    process: ChildProcess | None = None

    @property
    def log_path(self) -> Path | None:
        raise NotImplementedError

    def ready(self) -> bool:
        raise NotImplementedError

    def alive(self) -> bool:
        """The child runs (a SIGSTOPped child is alive)."""
        return self.process is not None and self.process.alive()

    def _spawn_ready(
        self,
        argv: Sequence[str],
        what: str,
        timeout: float,
        env: Mapping[str, str] | None = None,
        process_name: str | None = None,
    ) -> float:
        """Spawn ``argv`` with its output appended to :attr:`log_path` and wait until :meth:`ready`;
        the seconds it took. On failure the child is stopped and :class:`Unreachable` raised."""
        child = spawn(argv, name=process_name or self.name, log_path=self.log_path, env=env)
        self.process = child

        def exited() -> str | None:
            return None if child.alive() else f"exited with status {child.returncode}"

        try:
            return await_ready(what, self.ready, exited, lambda: child.log_tail(20), timeout)
        except Unreachable:
            child.stop()
            raise

    def stop_process(self, grace: float = 5.0) -> None:
        """Stop the child: SIGTERM its group, SIGKILL after ``grace`` seconds. Idempotent."""
        if self.process is not None:
            self.process.stop(grace)


class ServiceStack:
    """The services a cluster started, in start order; :meth:`stop_all` stops them newest first.

    Every service is stopped even when one's ``stop`` raises; the first error is re-raised at the end.
    """

    def __init__(self) -> None:
        self._services: list[Service] = []

    def push(self, service: S) -> S:
        """Hold ``service`` (started or about to be: its ``stop`` must be safe either way); returns it."""
        self._services.append(service)
        return service

    def __iter__(self) -> Iterator[Service]:
        return iter(list(self._services))

    def __len__(self) -> int:
        return len(self._services)

    def stop_all(self, stop: Callable[[Service], None] | None = None) -> None:
        """Stop every held service, newest first (``stop(s)`` instead of ``s.stop()`` when given), and
        forget them. Idempotent."""
        services, self._services = self._services, []
        first: BaseException | None = None
        for s in reversed(services):
            try:
                (stop or type(s).stop)(s)
            except BaseException as e:  # noqa: BLE001 - keep stopping the rest; re-raised below
                first = first or e
        if first is not None:
            raise first
