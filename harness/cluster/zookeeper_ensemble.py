"""A ZooKeeper ensemble of ``n`` real servers (``QuorumPeerMain``) on loopback: the legacy side's
coordination service with a leader that can fail.

Contract
--------
``ZooKeeperEnsemble(n=3, tick_time_ms=...).start()`` writes one ``zoo.cfg`` per server (its own
``dataDir`` with ``myid``, the same ``server.N=127.0.0.1:<quorum port>:<election port>`` lines, its own
client port; every port picked free at run time), starts the ``n`` processes through
:mod:`harness.procs` and returns once every server answers ``ruok`` with ``imok``, serves (``srvr``)
and exactly one reports ``Mode: leader``. Otherwise it stops every process and raises
:class:`~harness.kernel.errors.Unreachable` with each server's log tail. ``stop()`` stops every
server, removes a temporary work directory, is idempotent and runs on ``with`` exit. It is a
:class:`~harness.cluster.service.Service` like :class:`~harness.cluster.zookeeper.ZooKeeperServer`.

* ``connect_string`` lists every server (kazoo, the legacy members and the brokers take the list and
  move to another server when theirs fails; a session survives as long as a quorum elects a leader
  within its timeout).
* ``leader()``: index (0-based; ``myid`` is index + 1) of the one running, unpaused server whose
  ``srvr`` says ``Mode: leader``, None while there is not exactly one. ``wait_leader(timeout, not_in)``
  waits for one (an election after a leader loss).
* Faults: ``kill_server(i)`` (SIGKILL: a crash), ``stop_server(i)`` (SIGTERM), ``start_server(i)``
  (the same ports, configuration and data; returns once it serves again, i.e. rejoined the quorum),
  ``pause(i)`` / ``resume(i)`` (SIGSTOP / SIGCONT of that server's process, returns once the process is
  seen stopped / running). A paused server keeps its TCP connections open but answers nothing: its
  followers give it up after ``syncLimit`` ticks (:data:`~harness.cluster.zookeeper.QUORUM_SYNC_LIMIT`,
  ZooKeeper's ``Learner`` read timeout) and elect a new leader; a killed leader's connections close at
  once, so the election starts immediately. Either way every follower drops all its client
  connections while it has no leader (ZooKeeper's ``Learner.shutdown`` closes them): every client of
  the ensemble sees a disconnect, not only the leader's.
* ``mntr()``: one dict for the herd, comparable with a single server's (see its docstring).

Shared with the containers backend: :class:`EnsembleCore` is everything above that does not depend on
where a server runs (ports and ``server.N`` lines, readiness, ``leader()``, ``wait_leader()``, the
summed ``mntr``, the down / paused bookkeeping) and :class:`FourLetterPeer` a server's ``srvr`` /
``ruok`` probes; :class:`ZooKeeperEnsemble` adds processes, and
:class:`~harness.cluster.container_ensemble.ZooKeeperEnsembleContainers` containers.

Decisions and sources: the configuration is ZooKeeper's admin guide "Running Replicated ZooKeeper"
(``server.N`` lines, ``myid`` in ``dataDir``, ``initLimit`` / ``syncLimit``); the leader is what the
``srvr`` four-letter word reports (``Mode: leader | follower``), as ZooKeeper's own tests check it.
"""

from __future__ import annotations

import contextlib
import logging
import os
import shutil
import signal
import time
from pathlib import Path
from typing import Any, Generic, Self, TypeVar

from harness.cluster.java import check_java, zookeeper_classpath, zookeeper_version
from harness.cluster.service import POLL_SECONDS, ProcessService, await_ready, on_free_port
from harness.cluster.zookeeper import four_letter, parse_mntr, server_argv, work_directory, write_config
from harness.kernel.errors import Unreachable
from harness.procs import free_port, spawn

log = logging.getLogger("harness.zookeeper")

#: ``mntr`` keys that are the replicated data tree's size (the same on every server): the leader's value.
REPLICATED = ("zk_znode_count", "zk_ephemerals_count", "zk_approximate_data_size", "zk_watch_count")
#: ``mntr`` counters that only grow during a server's life: carried over its restarts (see ``mntr``).
CARRIED_PREFIX = "zk_packets_"


class FourLetterPeer:
    """One server of an ensemble as its clients see it: addresses and the four-letter probes.

    Subclasses say how the server runs (``alive()``: its process or container exists, paused or not).
    """

    index: int
    name: str
    host: str = "127.0.0.1"
    client_port: int = 0
    quorum_port: int = 0
    election_port: int = 0

    @property
    def address(self) -> str:
        return f"{self.host}:{self.client_port}"

    def alive(self) -> bool:
        raise NotImplementedError

    def srvr(self) -> str:
        return four_letter(self.host, self.client_port, "srvr", timeout=1.0)

    def ready(self) -> bool:
        """Serves now: ``ruok`` says ``imok`` and ``srvr`` says it serves requests."""
        try:
            return four_letter(self.host, self.client_port, "ruok", timeout=1.0).strip() == "imok" and (
                "not currently serving" not in self.srvr()
            )
        except OSError:
            return False

    def mode(self) -> str | None:
        """``leader``, ``follower`` ... from ``srvr``; None when it does not answer or does not serve."""
        try:
            for line in self.srvr().splitlines():
                if line.startswith("Mode:"):
                    return line.split(":", 1)[1].strip()
        except OSError:
            pass
        return None


class _Peer(FourLetterPeer, ProcessService):
    """One server of the ensemble: a process with its own work directory and ports."""

    def __init__(self, index: int, workdir: Path, name: str) -> None:
        self.index = index
        self.workdir = workdir
        self.name = name
        self.host = "127.0.0.1"
        self.client_port = 0
        self.quorum_port = 0
        self.election_port = 0
        self.process = None
        self.argv: list[str] = []

    @property
    def log_path(self) -> Path | None:
        return self.workdir / "zookeeper.log"

    def alive(self) -> bool:
        return ProcessService.alive(self)

    def ready(self) -> bool:
        return FourLetterPeer.ready(self)

    def launch(self) -> None:
        """Spawn the server (does not wait)."""
        self.process = spawn(self.argv, name=f"{self.name}:{self.client_port}", log_path=self.log_path)

    def exited(self) -> str | None:
        p = self.process
        return None if p is not None and p.alive() else f"{self.name} exited"


P = TypeVar("P", bound=FourLetterPeer)


class EnsembleCore(Generic[P]):
    """What an ensemble of ``n`` servers is wherever its servers run: the ports and ``server.N`` lines,
    readiness, the leader, the summed ``mntr`` and the down / paused sets (see the module contract).

    A subclass fills :attr:`peers` (:meth:`assign_ports` gives them their ports), starts and stops
    them, implements the faults (calling :meth:`_keep_counters` before a server stops answering and
    :meth:`_carry` before it starts again) and :meth:`_tail` (a server's log tail).
    """

    def __init__(self, n: int, tick_time_ms: int, name: str) -> None:
        if n < 1:
            raise ValueError("an ensemble has at least one server")
        self.n = n
        self.tick_time_ms = tick_time_ms
        self.name = name
        self.host = "127.0.0.1"
        self.ready_seconds: float | None = None
        self.peers: list[P] = []
        self.paused: set[int] = set()
        self.down: set[int] = set()
        # mntr carry-over: per server, the latest sample and the counters of earlier incarnations
        self._last: list[dict[str, Any]] = []
        self._base: list[dict[str, int]] = []
        self.version = "unknown"
        #: the work directory (None before start); removed at stop unless the caller gave it
        self.workdir: Path | None = None
        self._given_workdir: Path | None = None

    # -- life cycle shared by every kind of ensemble ------------------------------------------------
    def start(self, timeout: float = 90.0) -> Self:
        """Start every server and wait for a serving quorum with one leader (the subclass's)."""
        raise NotImplementedError

    def _stop_servers(self) -> None:
        """Stop every server (the subclass's); must be idempotent."""
        raise NotImplementedError

    def stop(self) -> None:
        """Stop every server, then remove a temporary work directory. Idempotent."""
        self._stop_servers()
        if self.workdir is not None and self._given_workdir is None:
            shutil.rmtree(self.workdir, ignore_errors=True)
            self.workdir = None

    def _log_ready(self, what: str) -> None:
        """The one INFO line of a started ensemble: ``what`` (e.g. "3 containers"), where, how fast, leader."""
        log.info(
            "ZooKeeper %s ensemble of %s ready on %s in %.2fs (leader: server %s)",
            self.version,
            what,
            self.connect_string,
            self.ready_seconds,
            self.leader(),
        )

    def __enter__(self) -> Self:
        if not self.peers:
            self.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self.stop()

    @property
    def connect_string(self) -> str:
        """``host:port,host:port,...`` of every server (kazoo / ``zookeeper.connect``)."""
        if not self.peers or not all(p.client_port for p in self.peers):
            raise RuntimeError("ZooKeeper ensemble is not started")
        return ",".join(p.address for p in self.peers)

    def assign_ports(self) -> list[str]:
        """Give every peer three distinct free ports (client, quorum, election); the ``server.N``
        lines of the ensemble's ``zoo.cfg`` (``myid`` N is index + 1)."""
        ports = _distinct_free_ports(self.host, 3 * len(self.peers))
        for i, p in enumerate(self.peers):
            p.client_port, p.quorum_port, p.election_port = ports[3 * i : 3 * i + 3]
        return [f"server.{p.index + 1}={p.host}:{p.quorum_port}:{p.election_port}" for p in self.peers]

    def _reset_counters(self) -> None:
        """A fresh start: no sample and nothing carried yet."""
        self._last = [{} for _ in self.peers]
        self._base = [{} for _ in self.peers]

    def ready(self) -> bool:
        """Every running, unpaused server serves and exactly one of them is the leader."""
        live = self._live()
        return bool(live) and all(self.peers[i].ready() for i in live) and self.leader() is not None

    def is_serving(self) -> bool:
        """True if the ensemble serves now (as :meth:`ready`; the single server's name for it)."""
        return self.ready()

    # -- observation ------------------------------------------------------------------------
    def leader(self) -> int | None:
        """Index of the one running, unpaused server reporting ``Mode: leader``; None otherwise."""
        leaders = [i for i in self._live() if self.peers[i].mode() == "leader"]
        return leaders[0] if len(leaders) == 1 else None

    def wait_leader(self, timeout: float, not_in: tuple[int, ...] = ()) -> int:
        """Wait until a server not in ``not_in`` is the one leader; its index. :class:`Unreachable`
        with the log tails after ``timeout`` seconds."""
        deadline = time.monotonic() + timeout
        while True:
            leader = self.leader()
            if leader is not None and leader not in not_in:
                return leader
            if time.monotonic() > deadline:
                raise Unreachable(
                    f"ZooKeeper ensemble {self.name}: no new leader after {timeout:.0f}s; log tails:\n"
                    f"{self._log_tails()}"
                )
            time.sleep(POLL_SECONDS)

    def mntr(self) -> dict[str, Any]:
        """The herd's view of the ensemble: one dict as a single server's ``mntr``, so window-edge
        samples stay comparable.

        Numeric values are summed over the servers (each client talks to one server, so the sum of
        ``zk_packets_received`` counts every client packet once, as a single server does); the
        ``zk_packets_*`` counters of a server that is down or paused keep their last sampled value, and
        a server whose counters restarted at 0 (its process restarted, or it rejoined a quorum under a
        new leader: ZooKeeper makes a new server instance per epoch) continues from its last sample, so
        the sums never go backwards (what a server counted between its last sample and the reset is
        lost: sample around a fault to keep that small).
        The data tree's size (:data:`REPLICATED`) is the leader's value (the largest when there is no
        leader), latencies the largest. Text values are the leader's. Plus ``servers`` (how many
        answered) and ``leader`` (index, or None). A server that does not answer adds only its carried
        counters.
        """
        samples: dict[int, dict[str, Any]] = {}
        for i in self._live():
            try:
                samples[i] = parse_mntr(
                    four_letter(self.host, self.peers[i].client_port, "mntr", timeout=2.0)
                )
            except OSError:
                continue
            self._note_reset(i, samples[i])
            self._last[i] = samples[i]
        leader = self.leader()
        out: dict[str, Any] = {}
        for i in range(len(self.peers)):
            m = samples.get(i) or {k: v for k, v in self._last[i].items() if k.startswith(CARRIED_PREFIX)}
            for k, v in m.items():
                if isinstance(v, str):
                    if i == leader or k not in out:
                        out[k] = v
                elif k in REPLICATED:
                    if i == leader or (leader not in samples and v > out.get(k, v - 1)):
                        out[k] = v
                elif "latency" in k:
                    out[k] = max(v, out.get(k, v))
                else:
                    out[k] = out.get(k, 0) + v
            for k, v in self._base[i].items():
                out[k] = out.get(k, 0) + v
        out["servers"] = len(samples)
        out["leader"] = leader
        return out

    # -- internals --------------------------------------------------------------------------
    def _live(self) -> list[int]:
        return [
            i for i, p in enumerate(self.peers) if p.alive() and i not in self.paused and i not in self.down
        ]

    def _log_tails(self) -> str:
        return "\n".join(f"--- {p.name} ({p.address}):\n{self._tail(p)}" for p in self.peers)

    def _keep_counters(self, index: int) -> None:
        """Sample server ``index`` once more before it stops answering (its counters are carried)."""
        if index in self._live():
            with contextlib.suppress(OSError):
                sample = parse_mntr(
                    four_letter(self.host, self.peers[index].client_port, "mntr", timeout=2.0)
                )
                self._note_reset(index, sample)
                self._last[index] = sample

    def _note_reset(self, index: int, sample: dict[str, Any]) -> None:
        """A server's counters restart at 0 whenever it (re)joins a quorum under a new leader
        (ZooKeeper creates a new server instance per epoch): a counter below its last sample means so,
        and the last sample is carried."""
        last = self._last[index]
        if any(
            k.startswith(CARRIED_PREFIX) and isinstance(v, int) and v < int(last.get(k, 0))
            for k, v in sample.items()
        ):
            self._carry(index)

    def _carry(self, index: int) -> None:
        """A server restarts with zeroed counters: keep what the previous incarnation counted."""
        base = self._base[index]
        for k, v in self._last[index].items():
            if k.startswith(CARRIED_PREFIX) and isinstance(v, int):
                base[k] = base.get(k, 0) + v
        self._last[index] = {}

    def _tail(self, p: P) -> str:
        raise NotImplementedError


class ZooKeeperEnsemble(EnsembleCore[_Peer]):
    """``n`` ZooKeeper servers in one quorum on 127.0.0.1 (see the module docstring for the contract).

    Parameters as :class:`~harness.cluster.zookeeper.ZooKeeperServer`: ``tick_time_ms``, ``workdir``
    (kept after stop when given; server ``i`` uses ``workdir/zk-i``), ``heap_mb`` (per server),
    ``max_session_timeout_ms``, ``log_level``, ``name``.
    """

    def __init__(
        self,
        n: int = 3,
        tick_time_ms: int = 2000,
        workdir: str | os.PathLike[str] | None = None,
        heap_mb: int = 256,
        max_session_timeout_ms: int | None = 120_000,
        log_level: str = "INFO",
        name: str = "zookeeper",
    ) -> None:
        super().__init__(n, tick_time_ms, name)
        self._given_workdir = Path(workdir) if workdir else None
        self.heap_mb = heap_mb
        self.max_session_timeout_ms = max_session_timeout_ms
        self.log_level = log_level
        self.version = "unknown"

    # -- life cycle -------------------------------------------------------------------------
    @property
    def log_path(self) -> Path | None:
        """The work directory (each server logs to ``zk-<i>/zookeeper.log`` in it)."""
        return self.workdir

    def start(self, timeout: float = 90.0) -> ZooKeeperEnsemble:
        """Start every server and wait for a serving quorum with one leader; returns ``self``."""
        java = check_java()
        jars = zookeeper_classpath()
        self.version = zookeeper_version(jars)
        self.workdir = workdir = work_directory(self._given_workdir, "herdlab-zkens-")

        def attempt() -> None:
            self.peers = [_Peer(i, workdir / f"zk-{i}", f"{self.name}-{i}") for i in range(self.n)]
            quorum = self.assign_ports()
            for p in self.peers:
                cfg, log4j = write_config(
                    p.workdir,
                    p.host,
                    p.client_port,
                    self.tick_time_ms,
                    self.max_session_timeout_ms,
                    self.log_level,
                    quorum=quorum,
                    myid=p.index + 1,
                )
                p.argv = server_argv(java, jars, self.heap_mb, log4j, p.name, cfg)
            try:
                for p in self.peers:
                    p.launch()
                self.ready_seconds = await_ready(
                    f"ZooKeeper ensemble {self.name}", self.ready, self._exited, self._log_tails, timeout
                )
            except BaseException:
                self._stop_peers()
                raise

        try:
            on_free_port(attempt, 3, clash=("Address already in use",))
        except BaseException:
            self.stop()
            raise
        self._reset_counters()
        self._log_ready(str(self.n))
        return self

    def _stop_servers(self) -> None:
        self._stop_peers()

    # -- faults -----------------------------------------------------------------------------
    def kill_server(self, index: int) -> None:
        """SIGKILL server ``index`` (a crash) and reap it."""
        self._keep_counters(index)
        p = self.peers[index]
        if p.process is not None:
            p.process.signal(signal.SIGKILL)
            p.process.wait(10)
            p.process.stop()  # reaps and unregisters the dead process
        self.down.add(index)
        self.paused.discard(index)

    def stop_server(self, index: int) -> None:
        """Stop server ``index`` cleanly (SIGTERM, then SIGKILL)."""
        self._keep_counters(index)
        self.peers[index].stop_process()
        self.down.add(index)
        self.paused.discard(index)

    def start_server(self, index: int, timeout: float = 60.0) -> float:
        """Start a stopped server ``index`` again (same ports, data); the seconds until it serves."""
        p = self.peers[index]
        if p.alive():
            raise RuntimeError(f"{p.name} is running")
        self._carry(index)
        p.launch()
        self.down.discard(index)
        try:
            return await_ready(
                f"ZooKeeper {p.name} on {p.address}", p.ready, p.exited, lambda: self._tail(p), timeout
            )
        except Unreachable:
            self.kill_server(index)
            raise

    def pause(self, index: int, timeout: float = 10.0) -> None:
        """SIGSTOP server ``index``; returns once its process is seen stopped."""
        self._keep_counters(index)
        self._signal(index, signal.SIGSTOP, stopped=True, timeout=timeout)
        self.paused.add(index)

    def resume(self, index: int, timeout: float = 10.0) -> None:
        """SIGCONT server ``index``; returns once its process is seen running."""
        self._signal(index, signal.SIGCONT, stopped=False, timeout=timeout)
        self.paused.discard(index)

    def rss_bytes(self) -> int:
        """Resident memory of every server process, summed."""
        import psutil

        total = 0
        for p in self.peers:
            if p.process is not None and p.process.alive():
                total += psutil.Process(p.process.pid).memory_info().rss
        return total

    # -- internals --------------------------------------------------------------------------
    def _exited(self) -> str | None:
        gone = [p.exited() for p in self.peers if p.exited() is not None]
        return "; ".join(str(g) for g in gone) if gone else None

    def _tail(self, p: _Peer) -> str:
        return p.process.log_tail(15) if p.process is not None else ""

    def _stop_peers(self) -> None:
        first: BaseException | None = None
        for p in reversed(self.peers):
            try:
                p.stop_process()
            except BaseException as e:  # noqa: BLE001 - stop the others; re-raised below
                first = first or e
        self.paused.clear()
        if first is not None:
            raise first

    def _signal(self, index: int, sig: int, stopped: bool, timeout: float) -> None:
        import psutil

        p = self.peers[index]
        if p.process is None or not p.process.alive():
            raise RuntimeError(f"{p.name} is not running")
        p.process.signal(sig)
        deadline = time.monotonic() + timeout
        while True:
            try:
                if (psutil.Process(p.process.pid).status() == psutil.STATUS_STOPPED) == stopped:
                    return
            except psutil.NoSuchProcess:
                raise RuntimeError(f"{p.name} exited") from None
            if time.monotonic() > deadline:
                raise Unreachable(f"{p.name}: signal {sig} did not take effect within {timeout:.0f}s")
            time.sleep(POLL_SECONDS)


def _distinct_free_ports(host: str, count: int) -> list[int]:
    """``count`` distinct free ports (each picked free now; a clash later is retried by the caller)."""
    ports: list[int] = []
    while len(ports) < count:
        port = free_port(host)
        if port not in ports:
            ports.append(port)
    return ports
