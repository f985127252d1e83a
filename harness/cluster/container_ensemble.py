"""A ZooKeeper ensemble of ``n`` containers: the containers backend's ``zookeeper.servers = 3``.

Contract
--------
``ZooKeeperEnsembleContainers(image, n=3, tick_time_ms=...).start()`` is
:class:`~harness.cluster.zookeeper_ensemble.ZooKeeperEnsemble` with containers for processes: one
container per server from the ZooKeeper image (``herdlab-zookeeper CONF_DIR``), on the host network,
each with its own work directory ``<workdir>/zk-<i>`` (``zoo.cfg``, ``log4j2.properties``,
``data/myid``; bind-mounted at the same path) and its own client, quorum and election ports, all
picked free on 127.0.0.1 at run time. It returns once every server serves and exactly one reports
``Mode: leader``; otherwise it removes every container it created and raises
:class:`~harness.kernel.errors.Unreachable` with each server's log tail (a port taken between the pick
and the bind is retried with new ports). ``stop()`` removes every container (its ``docker logs`` saved
to ``<workdir>/zk-<i>/zookeeper.log``) and a temporary work directory; it is idempotent and runs on
``with`` exit. A :class:`~harness.cluster.service.Service`.

Everything the nemesis and the harness read is the local ensemble's (:class:`EnsembleCore`:
``connect_string`` listing every server, ``leader()``, ``wait_leader()``, ``mntr()`` summed over the
servers with counters carried over restarts, ``paused`` / ``down``); the faults are the engine's:

* ``kill_server(i)``: ``docker kill`` (SIGKILL to the container: a crash; the container stays);
  ``stop_server(i)``: ``docker stop`` (SIGTERM, then SIGKILL);
* ``start_server(i)``: ``docker start`` of the same container (same command, ports and bind-mounted
  data); returns the seconds until it serves again, i.e. rejoined the quorum;
* ``pause(i)`` / ``resume(i)``: ``docker pause`` / ``docker unpause`` (the cgroup freezer: the
  container's SIGSTOP); each returns once the engine reports the container paused / running.

So ``kill_zk_leader`` / ``pause_zk_leader`` (:mod:`harness.faults.actions`) act on it unchanged, through
:attr:`harness.cluster.containers.ContainersCluster.zookeeper_ensemble`.

Decisions: the configuration is the local ensemble's (one :func:`~harness.cluster.zookeeper.write_config`
for both; ZooKeeper's admin guide "Running Replicated ZooKeeper"); a container is "alive" when the engine
says running or paused (as a SIGSTOPped process is alive), and the engine is asked each time rather
than remembered, so a server that crashes on its own counts as down.
"""

from __future__ import annotations

import contextlib
import logging
import shutil
import time
from collections.abc import Mapping
from pathlib import Path

from harness.cluster.container_services import zookeeper_env
from harness.cluster.engine import Box, box_exited, uid_gid
from harness.cluster.service import POLL_SECONDS, await_ready, on_free_port
from harness.cluster.zookeeper import work_directory, write_config
from harness.cluster.zookeeper_ensemble import EnsembleCore, FourLetterPeer
from harness.images import LABEL_ZOOKEEPER_VERSION
from harness.kernel.errors import Unreachable

__all__ = ["ZooKeeperEnsembleContainers"]

log = logging.getLogger("harness.containers")

#: How often the engine is asked whether a container exited while waiting for readiness (asking the
#: engine costs more than a four-letter probe).
ENGINE_CHECK_SECONDS = 0.5


class _ContainerPeer(FourLetterPeer):
    """One server of the ensemble: a container with its own work directory and ports."""

    def __init__(self, index: int, workdir: Path, name: str) -> None:
        self.index = index
        self.workdir = workdir
        self.name = name
        self.host = "127.0.0.1"
        self.client_port = 0
        self.quorum_port = 0
        self.election_port = 0
        self.box: Box | None = None

    @property
    def log_path(self) -> Path:
        return self.workdir / "zookeeper.log"

    def alive(self) -> bool:
        """The engine reports the container running or paused."""
        return self.box is not None and self.box.alive()

    def exited(self) -> str | None:
        """Why the server can no longer become ready (for ``await_ready``), or None."""
        if self.box is None:
            return f"{self.name} has no container"
        why = box_exited(self.box)
        return None if why is None else f"{self.name} {why}"

    def status(self) -> str:
        return self.box.status() if self.box is not None else "removed"

    def remove(self) -> None:
        """Remove the container (logs saved to :attr:`log_path`). Idempotent."""
        if self.box is not None:
            self.box.remove()


class ZooKeeperEnsembleContainers(EnsembleCore[_ContainerPeer]):
    """``n`` ZooKeeper servers in one quorum, one container each (see the module contract).

    ``image``: the ZooKeeper image. ``workdir``: kept after stop when given (server ``i`` uses
    ``workdir/zk-i``). ``labels``: added to every container. ``heap_mb`` (per server),
    ``max_session_timeout_ms``, ``log_level``, ``name`` as for the local ensemble.
    """

    def __init__(
        self,
        image: str,
        n: int = 3,
        tick_time_ms: int = 2000,
        workdir: Path | None = None,
        labels: Mapping[str, str] | None = None,
        heap_mb: int = 256,
        max_session_timeout_ms: int | None = 120_000,
        log_level: str = "INFO",
        name: str = "zookeeper",
    ) -> None:
        super().__init__(n, tick_time_ms, name)
        self.image = image
        self._given_workdir = workdir
        self.labels = dict(labels or {})
        self.heap_mb = heap_mb
        self.max_session_timeout_ms = max_session_timeout_ms
        self.log_level = log_level
        self.version = "unknown"

    # -- life cycle -------------------------------------------------------------------------------
    @property
    def log_path(self) -> Path | None:
        """The work directory (server ``i``'s log is saved to ``zk-<i>/zookeeper.log`` in it)."""
        return self.workdir

    def start(self, timeout: float = 90.0) -> ZooKeeperEnsembleContainers:
        """Start every server's container and wait for a serving quorum with one leader; ``self``."""
        self.workdir = workdir = work_directory(self._given_workdir, "herdlab-zkens-")

        def attempt() -> None:
            self.peers = [_ContainerPeer(i, workdir / f"zk-{i}", f"{self.name}-{i}") for i in range(self.n)]
            quorum = self.assign_ports()
            for p in self.peers:
                # a retried attempt starts from empty data: its quorum (ports) is a new one
                shutil.rmtree(p.workdir / "data", ignore_errors=True)
                write_config(
                    p.workdir,
                    p.host,
                    p.client_port,
                    self.tick_time_ms,
                    self.max_session_timeout_ms,
                    self.log_level,
                    quorum=quorum,
                    myid=p.index + 1,
                )
                p.box = Box(
                    self.image,
                    role="zookeeper",
                    name=p.name,
                    command=[str(p.workdir)],
                    env=zookeeper_env(p.workdir, self.heap_mb, p.name),
                    labels={**self.labels, "herdlab.zookeeper.server": str(p.index)},
                    mounts=[p.workdir],
                    user=uid_gid(),
                    log_path=p.log_path,
                )
            try:
                for p in self.peers:
                    assert p.box is not None
                    p.box.start()
                self.ready_seconds = await_ready(
                    f"ZooKeeper ensemble {self.name}",
                    self.ready,
                    self._exited,
                    self._log_tails,
                    timeout,
                    ENGINE_CHECK_SECONDS,
                )
            except BaseException:
                self._remove_peers()
                raise

        try:
            on_free_port(attempt, 3, clash=("Address already in use",))
        except BaseException:
            self.stop()
            raise
        self._reset_counters()
        self.version = self._image_version()
        self._log_ready(f"{self.n} containers")
        return self

    def _stop_servers(self) -> None:
        """Remove every server's container (logs saved)."""
        self._remove_peers()

    # -- faults -----------------------------------------------------------------------------------
    def kill_server(self, index: int) -> None:
        """``docker kill`` server ``index`` (SIGKILL: a crash); returns once the container exited."""
        self._keep_counters(index)
        box = self._box(index)
        if box.status() == "paused":
            box.kill("SIGKILL")  # the engine may refuse to kill a frozen container ...
            if box.status() == "paused":
                box.unpause()  # ... then thaw it and kill it at once
        box.kill("SIGKILL")
        box.wait(10)
        self.down.add(index)
        self.paused.discard(index)

    def stop_server(self, index: int, grace: float = 5.0) -> None:
        """``docker stop`` server ``index`` (SIGTERM, SIGKILL after ``grace`` seconds)."""
        self._keep_counters(index)
        self._box(index).stop(grace)
        self.down.add(index)
        self.paused.discard(index)

    def start_server(self, index: int, timeout: float = 60.0) -> float:
        """``docker start`` the stopped server ``index`` (same container: ports, configuration and
        data); the seconds until it serves again."""
        p = self.peers[index]
        box = self._box(index)
        if p.alive():
            raise RuntimeError(f"{p.name} is running")
        self._carry(index)
        box.restart()
        self.down.discard(index)
        try:
            return await_ready(
                f"ZooKeeper {p.name} on {p.address}",
                p.ready,
                p.exited,
                lambda: self._tail(p),
                timeout,
                ENGINE_CHECK_SECONDS,
            )
        except Unreachable:
            self.kill_server(index)
            raise

    def pause(self, index: int, timeout: float = 10.0) -> None:
        """``docker pause`` server ``index``; returns once the engine reports it paused."""
        self._keep_counters(index)
        self._box(index).pause()
        self._await_status(index, "paused", timeout)
        self.paused.add(index)

    def resume(self, index: int, timeout: float = 10.0) -> None:
        """``docker unpause`` server ``index``; returns once the engine reports it running."""
        self._box(index).unpause()
        self._await_status(index, "running", timeout)
        self.paused.discard(index)

    # -- observation ------------------------------------------------------------------------------
    def rss_bytes(self) -> int:
        """Resident memory of every server container's processes (seen from the host), summed."""
        import psutil

        total = 0
        for p in self.peers:
            pid = _container_pid(p.box)
            if not pid:
                continue
            with contextlib.suppress(psutil.NoSuchProcess):
                root = psutil.Process(pid)
                for proc in [root, *root.children(recursive=True)]:
                    with contextlib.suppress(psutil.NoSuchProcess):
                        total += proc.memory_info().rss
        return total

    # -- internals --------------------------------------------------------------------------------
    def _box(self, index: int) -> Box:
        box = self.peers[index].box
        if box is None:
            raise RuntimeError(f"{self.peers[index].name} has no container")
        return box

    def _tail(self, p: _ContainerPeer) -> str:
        return p.box.logs(tail=15) if p.box is not None else ""

    def _exited(self) -> str | None:
        gone = [why for p in self.peers if (why := p.exited()) is not None]
        return "; ".join(gone) if gone else None

    def _remove_peers(self) -> None:
        """Remove every container (each even if one fails; the first error re-raised)."""
        first: BaseException | None = None
        for p in reversed(self.peers):
            try:
                p.remove()
            except BaseException as e:  # noqa: BLE001 - remove the others; re-raised below
                first = first or e
        self.paused.clear()
        if first is not None:
            raise first

    def _await_status(self, index: int, status: str, timeout: float) -> None:
        p = self.peers[index]
        deadline = time.monotonic() + timeout
        while (now := p.status()) != status:
            if now in ("exited", "dead", "removed"):
                raise RuntimeError(f"{p.name} is {now}")
            if time.monotonic() > deadline:
                raise Unreachable(f"{p.name}: not {status} after {timeout:.0f}s (it is {now})")
            time.sleep(POLL_SECONDS)

    def _image_version(self) -> str:
        """The ZooKeeper version the image was built with (its label), ``unknown`` without one."""
        box = self.peers[0].box if self.peers else None
        try:
            labels = box.container.image.labels if box is not None and box.container is not None else {}
        except Exception:  # noqa: BLE001 - an engine error here only loses the version string
            labels = {}
        return str((labels or {}).get(LABEL_ZOOKEEPER_VERSION, "unknown"))


def _container_pid(box: Box | None) -> int:
    """The host pid of the container's first process (0 when it does not run)."""
    if box is None or box.container is None or not box.alive():
        return 0
    try:
        return int((box.container.attrs.get("State") or {}).get("Pid") or 0)
    except (TypeError, ValueError):
        return 0
