"""A real Apache ZooKeeper server, started from the jars inside the pyspark wheel.

Contract
--------
``ZooKeeperServer(...).start()`` writes a ``zoo.cfg`` and a log4j2 config into a work directory
(a fresh temporary one unless given), picks a free loopback port, starts
``org.apache.zookeeper.server.quorum.QuorumPeerMain`` as a registered child process
(:mod:`harness.procs`) and returns once the server answers ``ruok`` with ``imok``. On failure it
stops the process and raises :class:`harness.kernel.errors.Unreachable` with the cause and the tail of
ZooKeeper's log. ``stop()`` stops the process and removes a temporary work directory; it is
idempotent and also runs on ``with`` exit. A :class:`~harness.cluster.service.Service` (through
:class:`~harness.cluster.service.ProcessService`): ``ready()`` is the ``ruok`` + ``srvr`` probe.

``mntr()`` returns the server's ``mntr`` counters, numbers parsed (``zk_packets_received`` etc.).
Minimum session timeout is 2 x ``tick_time_ms`` (ZooKeeper's rule), so tests use short ticks.
"""

from __future__ import annotations

import contextlib
import logging
import os
import shutil
import socket
import tempfile
from collections.abc import Sequence
from pathlib import Path

from harness.cluster.java import check_java, zookeeper_classpath, zookeeper_version
from harness.cluster.service import ProcessService, address, on_free_port
from harness.kernel import jvm
from harness.procs import free_port

log = logging.getLogger("harness.zookeeper")
#: ``mntr`` counters that only grow during a process's life, carried over a restart (``restart_zk``).
_CARRIED = "zk_packets_"

_LOG4J2 = """\
status = error
appender.out.type = Console
appender.out.name = out
appender.out.layout.type = PatternLayout
appender.out.layout.pattern = %d{HH:mm:ss.SSS} %-5p [%t] %c{1}: %m%n
rootLogger.level = {level}
rootLogger.appenderRef.out.ref = out
"""


def work_directory(given: Path | None, prefix: str) -> Path:
    """``given`` (created if missing), else a fresh temporary directory named ``prefix...``."""
    if given:
        given.mkdir(parents=True, exist_ok=True)
        return given
    return Path(tempfile.mkdtemp(prefix=prefix))


def four_letter(host: str, port: int, command: str, timeout: float = 5.0) -> str:
    """Send a ZooKeeper four-letter command (``ruok``, ``mntr``, ``srvr`` ...) and return the reply."""
    with socket.create_connection((host, port), timeout=timeout) as s:
        s.sendall(command.encode())
        s.shutdown(socket.SHUT_WR)
        chunks = []
        while True:
            data = s.recv(65536)
            if not data:
                break
            chunks.append(data)
    return b"".join(chunks).decode(errors="replace")


def parse_mntr(text: str) -> dict[str, int | float | str]:
    """Parse ``mntr`` output (``key<TAB>value`` lines) into a dict; numeric values become numbers."""
    out: dict[str, int | float | str] = {}
    for line in text.splitlines():
        if "\t" not in line:
            continue
        key, value = line.split("\t", 1)
        value = value.strip()
        try:
            out[key] = int(value)
        except ValueError:
            try:
                out[key] = float(value)
            except ValueError:
                out[key] = value
    return out


#: Ticks a follower has to connect and sync to a leader, and a leader may stay silent (ensembles only).
QUORUM_INIT_LIMIT, QUORUM_SYNC_LIMIT = 20, 5


def server_argv(
    java: str, jars: Sequence[object], heap_mb: int, log4j: Path, name: str, cfg: Path
) -> list[str]:
    """The command line of one ZooKeeper server process (standalone or an ensemble's peer); its JVM
    options are :mod:`harness.kernel.jvm`'s ``zookeeper`` kind."""
    return [
        java,
        *jvm.options("zookeeper", heap_mb=heap_mb, log4j=log4j, name=name),
        "-cp",
        os.pathsep.join(str(j) for j in jars),
        "org.apache.zookeeper.server.quorum.QuorumPeerMain",
        str(cfg),
    ]


def write_config(
    workdir: Path,
    host: str,
    port: int,
    tick_time_ms: int,
    max_session_timeout_ms: int | None,
    log_level: str = "INFO",
    quorum: Sequence[str] = (),
    myid: int | None = None,
) -> tuple[Path, Path]:
    """Write ``zoo.cfg`` (data in ``workdir/data``) and ``log4j2.properties`` into ``workdir``.

    The one configuration of every herdlab ZooKeeper, local or in a container: 4lw allowed, admin
    server off, no per-client connection limit. Returns both paths. ``quorum`` (the ``server.N=...``
    lines of an ensemble, :mod:`harness.cluster.zookeeper_ensemble`) adds them with ``initLimit`` /
    ``syncLimit`` and writes ``myid`` into the data directory; empty (the default) is a standalone server.
    """
    data_dir = workdir / "data"
    data_dir.mkdir(parents=True, exist_ok=True)
    cfg = [
        f"tickTime={tick_time_ms}",
        f"dataDir={data_dir}",
        f"clientPort={port}",
        f"clientPortAddress={host}",
        "4lw.commands.whitelist=*",
        "admin.enableServer=false",
        "maxClientCnxns=0",
    ]
    if max_session_timeout_ms:
        cfg.append(f"maxSessionTimeout={max_session_timeout_ms}")
    if quorum:
        # ZooKeeper's admin guide: initLimit / syncLimit in ticks (a follower's time to connect and sync
        # to the leader / to answer it); a follower drops a leader silent for syncLimit ticks.
        cfg += [f"initLimit={QUORUM_INIT_LIMIT}", f"syncLimit={QUORUM_SYNC_LIMIT}", *quorum]
        (data_dir / "myid").write_text(f"{myid}\n")
    cfg_path = workdir / "zoo.cfg"
    cfg_path.write_text("\n".join(cfg) + "\n")
    log4j = workdir / "log4j2.properties"
    log4j.write_text(_LOG4J2.replace("{level}", log_level))
    return cfg_path, log4j


class ZooKeeperServer(ProcessService):
    """One standalone ZooKeeper server on 127.0.0.1 (see the module docstring for the contract).

    Parameters: ``tick_time_ms`` (ZooKeeper's tickTime; sessions may be as short as 2 ticks),
    ``workdir`` (kept after stop when given), ``port`` (default: a free one), ``heap_mb`` (JVM max
    heap), ``max_session_timeout_ms`` (default 120 s; ZooKeeper's own default of 20 ticks
    would silently cap the 0.8 consumer's 6 s sessions when ticks are short), ``log_level`` (log4j level of
    the server log, ``INFO`` by default), ``name`` (for logs and the process table).
    """

    def __init__(
        self,
        tick_time_ms: int = 2000,
        workdir: str | os.PathLike[str] | None = None,
        port: int | None = None,
        heap_mb: int = 512,
        max_session_timeout_ms: int | None = 120_000,
        log_level: str = "INFO",
        name: str = "zookeeper",
    ) -> None:
        self.tick_time_ms = tick_time_ms
        self._given_workdir = Path(workdir) if workdir else None
        self.workdir: Path | None = None
        self.requested_port = port
        self.port: int | None = None
        self.host = "127.0.0.1"
        self.heap_mb = heap_mb
        self.max_session_timeout_ms = max_session_timeout_ms
        self.log_level = log_level
        self.name = name
        self.process = None
        self.version = "unknown"
        self.ready_seconds: float | None = None

    # -- life cycle -------------------------------------------------------------------------
    @property
    def connect_string(self) -> str:
        """``host:port`` for kazoo / ``zookeeper.connect``."""
        return address(self.host, self.port, "ZooKeeper")

    @property
    def log_path(self) -> Path | None:
        """``<workdir>/zookeeper.log`` (None before start and after a temporary workdir is removed)."""
        return self.workdir / "zookeeper.log" if self.workdir is not None else None

    def start(self, timeout: float = 60.0) -> ZooKeeperServer:
        """Start the server and wait until it answers ``ruok``; returns ``self``."""
        java = check_java()
        jars = zookeeper_classpath()
        self.version = zookeeper_version(jars)
        self.workdir = work_directory(self._given_workdir, "herdlab-zk-")

        def attempt() -> None:
            self.port = self.requested_port or free_port(self.host)
            self._launch(java, jars, timeout)

        try:
            # A picked free port can be taken in between: retry then (a requested port: no retry).
            on_free_port(attempt, 1 if self.requested_port else 3, clash=("Address already in use",))
        except BaseException:
            self.stop()
            raise
        return self

    def _launch(self, java: str, jars: list, timeout: float) -> None:
        assert self.workdir is not None and self.port is not None
        cfg_path, log4j = write_config(
            self.workdir, self.host, self.port, self.tick_time_ms, self.max_session_timeout_ms, self.log_level
        )
        argv = server_argv(java, jars, self.heap_mb, log4j, self.name, cfg_path)
        self.ready_seconds = self._spawn_ready(
            argv, f"ZooKeeper on {self.host}:{self.port}", timeout, process_name=f"{self.name}:{self.port}"
        )
        log.info("ZooKeeper %s ready on %s in %.2fs", self.version, self.connect_string, self.ready_seconds)

    def ready(self) -> bool:
        """Serves now: ``ruok`` says ``imok`` (the port is bound) and ``srvr`` says it serves requests."""
        if self.port is None:
            return False
        try:
            return four_letter(self.host, self.port, "ruok", timeout=1.0).strip() == "imok" and (
                "not currently serving" not in four_letter(self.host, self.port, "srvr", timeout=1.0)
            )
        except OSError:
            return False

    def stop(self) -> None:
        """Stop the server (SIGTERM, then SIGKILL) and remove a temporary work directory."""
        self.stop_process()
        if self.workdir is not None and self._given_workdir is None:
            shutil.rmtree(self.workdir, ignore_errors=True)
            self.workdir = None

    def kill(self) -> None:
        """SIGKILL the server (a crash); the work directory stays until :meth:`stop`."""
        if self.process is not None:
            self.process.signal(9)
            self.process.wait(10)

    def stop_server(self, index: int = 0) -> None:
        """Stop the server process (SIGTERM, then SIGKILL) keeping its port and work directory, for
        :meth:`start_server` (``restart_zk``; ``index`` must be 0: one server)."""
        if index != 0:
            raise ValueError(f"a standalone ZooKeeper has server 0 only (not {index})")
        # the counters restart at 0 with the process: carry what it counted (as the ensemble does)
        with contextlib.suppress(OSError, RuntimeError):
            last = self.mntr()
            self._carried = {k: v for k, v in last.items() if k.startswith(_CARRIED) and isinstance(v, int)}
        self.stop_process()

    def start_server(self, index: int = 0, timeout: float = 60.0) -> float:
        """Start the stopped server again on the same port and data directory; the seconds until it
        serves (:class:`~harness.kernel.errors.Unreachable` when it does not within ``timeout``)."""
        if index != 0:
            raise ValueError(f"a standalone ZooKeeper has server 0 only (not {index})")
        if self.port is None or self.workdir is None:
            raise RuntimeError("ZooKeeper was never started")
        java, jars = check_java(), zookeeper_classpath()
        # while it was down, any process's outgoing connection may have been given its port as a local
        # port for a moment: a clash is retried
        on_free_port(lambda: self._launch(java, jars, timeout), 3, clash=("Address already in use",))
        assert self.ready_seconds is not None
        return self.ready_seconds

    def __enter__(self) -> ZooKeeperServer:
        if self.process is None:
            self.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self.stop()

    # -- observation ------------------------------------------------------------------------
    def four_letter(self, command: str, timeout: float = 5.0) -> str:
        """Raw reply to a four-letter command."""
        if self.port is None:
            raise RuntimeError("ZooKeeper is not started")
        return four_letter(self.host, self.port, command, timeout)

    def mntr(self) -> dict[str, int | float | str]:
        """The ``mntr`` counters with numeric values parsed; after a :meth:`stop_server` /
        :meth:`start_server` restart the packet counters include what earlier processes counted."""
        m = parse_mntr(self.four_letter("mntr"))
        for k, v in getattr(self, "_carried", {}).items():
            current = m.get(k)
            if isinstance(current, int):
                m[k] = current + v
        return m

    def is_serving(self) -> bool:
        """True if the server answers ``ruok`` now."""
        try:
            return self.four_letter("ruok", timeout=1.0).strip() == "imok"
        except (OSError, RuntimeError):
            return False

    def rss_bytes(self) -> int:
        """Resident memory of the server process."""
        import psutil

        if self.process is None or not self.process.alive():
            return 0
        return psutil.Process(self.process.pid).memory_info().rss
