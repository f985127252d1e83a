"""The per-service containers of the containers backend, each a :class:`~harness.cluster.service.Service`.

Contract
--------
* :class:`ZooKeeperContainer` (image ``<prefix>zookeeper``, configured as the local backend's
  ZooKeeper), :class:`BrokerContainer` (a herdlab broker, ``python -m harness.cluster.broker_main`` in
  the ``<prefix>herdlab`` image) and :class:`MemberContainer` (a member process) have the Service life cycle:
  ``start(timeout)`` -> ``self`` once ready, ``ready()``, ``stop()`` (remove the container, logs saved
  to ``log_path``; idempotent, nothing left) and ``name``. The brokers also have ``halt()``
  (``docker stop``: the container stays) and ``restart()`` (start the same container again: same
  port, same data).
* Readiness: ZooKeeper answers ``ruok`` with ``imok`` and ``srvr`` says it serves; our broker wrote
  its ready file and accepts TCP.
  A container that exits first, or a timeout, raises :class:`~harness.kernel.errors.Unreachable` with
  the tail of its log, after removing the container.
* :class:`MemberContainer` is a member handle with :class:`~harness.procs.ChildProcess`'s interface
  (``signal``/``wait``/``stop``/``alive``): SIGKILL is ``docker kill``, SIGSTOP ``docker pause``,
  SIGCONT ``docker unpause``, any other signal ``docker kill --signal``.
"""

from __future__ import annotations

import contextlib
import json
import logging
import shutil
import signal
import socket
import tempfile
import time
from collections.abc import Callable, Mapping, Sequence
from pathlib import Path

from harness.cluster.broker import BrokerProcess
from harness.cluster.engine import Box, box_exited, uid_gid
from harness.cluster.service import address, await_ready, on_free_port
from harness.cluster.zookeeper import four_letter, parse_mntr, write_config
from harness.kernel import jvm
from harness.procs import free_port

__all__ = [
    "IMAGE_PYTHON",
    "BrokerContainer",
    "MemberContainer",
    "ZOOKEEPER_JVM_OPTS",
    "ZooKeeperContainer",
    "zookeeper_env",
]

log = logging.getLogger("harness.containers")

#: Where a herdlab image's Python is (PATH in the image); replaces the host's ``sys.executable``.
IMAGE_PYTHON = "python"


#: The ZooKeeper image's environment variable that carries the server's JVM options, one a line (read by the
#: image's entry point, ``harness/images/herdlab-zookeeper``, which keeps no options of its own).
ZOOKEEPER_JVM_OPTS = "ZK_JVM_OPTS"


def zookeeper_env(
    conf_dir: Path, heap_mb: int, name: str, environ: Mapping[str, str] | None = None
) -> dict[str, str]:
    """The environment of a ZooKeeper container whose configuration directory is ``conf_dir`` (bind-mounted at
    the same path): :data:`ZOOKEEPER_JVM_OPTS`, the ``zookeeper`` kind's options of :mod:`harness.kernel.jvm`
    as the local backend passes them (``HERDLAB_JVM_ZOOKEEPER_OPTS`` in ``environ``, default ``os.environ``,
    replacing them), one a line."""
    flags = jvm.options(
        "zookeeper", environ, heap_mb=heap_mb, log4j=conf_dir / "log4j2.properties", name=name
    )
    return {ZOOKEEPER_JVM_OPTS: "\n".join(flags)}


def _accepts(host: str, port: int) -> bool:
    try:
        with socket.create_connection((host, port), timeout=1.0):
            return True
    except OSError:
        return False


def wait_ready(box: Box, what: str, ready: Callable[[], bool], timeout: float) -> float:
    """Wait until ``ready()`` holds, failing early when the container exits (the engine is asked at
    most twice a second: that costs more than the probe); the seconds it took."""
    return await_ready(
        f"{what} container {box.name}",
        ready,
        lambda: box_exited(box),
        lambda: box.logs(tail=20),
        timeout,
        0.5,
    )


# ------------------------------------------------------------------------------------------ components


class ZooKeeperContainer:
    """Apache ZooKeeper in the ``zookeeper`` image, configured as the local backend configures it.

    ``workdir`` holds ``zoo.cfg``, ``log4j2.properties``, ``data/`` and (after removal)
    ``zookeeper.log``; a temporary directory, removed by :meth:`stop`, when None. A
    :class:`~harness.cluster.service.Service`.
    """

    def __init__(
        self,
        image: str,
        tick_time_ms: int = 2000,
        workdir: Path | None = None,
        labels: Mapping[str, str] | None = None,
        heap_mb: int = 512,
        max_session_timeout_ms: int | None = 120_000,
        name: str = "zookeeper",
    ) -> None:
        self.image = image
        self.tick_time_ms = tick_time_ms
        self._given_workdir = workdir
        self.workdir: Path | None = None
        self.labels = dict(labels or {})
        self.heap_mb = heap_mb
        self.max_session_timeout_ms = max_session_timeout_ms
        self.name = name
        self.host = "127.0.0.1"
        self.port: int | None = None
        self.box: Box | None = None
        self.ready_seconds: float | None = None

    @property
    def connect_string(self) -> str:
        return address(self.host, self.port, "ZooKeeper")

    def _write_config(self) -> None:
        assert self.workdir is not None and self.port is not None
        write_config(self.workdir, self.host, self.port, self.tick_time_ms, self.max_session_timeout_ms)

    @property
    def log_path(self) -> Path | None:
        """``<workdir>/zookeeper.log``, written when the container is removed."""
        return self.workdir / "zookeeper.log" if self.workdir is not None else None

    def _serving(self) -> bool:
        assert self.port is not None
        return four_letter(self.host, self.port, "ruok", timeout=1.0).strip() == "imok" and (
            "not currently serving" not in four_letter(self.host, self.port, "srvr", timeout=1.0)
        )

    def start(self, timeout: float = 60.0) -> ZooKeeperContainer:
        """Start the container and wait until ZooKeeper serves (see the module contract)."""
        if self._given_workdir is not None:
            self.workdir = self._given_workdir
            self.workdir.mkdir(parents=True, exist_ok=True)
        else:
            self.workdir = Path(tempfile.mkdtemp(prefix="herdlab-zk-"))
        workdir = self.workdir

        def attempt() -> ZooKeeperContainer:
            self.port = free_port(self.host)
            self._write_config()
            self.box = Box(
                self.image,
                role="zookeeper",
                name=self.name,
                command=[str(workdir)],
                env=zookeeper_env(workdir, self.heap_mb, self.name),
                labels=self.labels,
                mounts=[workdir],
                user=uid_gid(),
                log_path=workdir / "zookeeper.log",
            )
            try:
                self.box.start()
                self.ready_seconds = wait_ready(self.box, "ZooKeeper", self._serving, timeout)
            except BaseException:
                self.box.remove()
                raise
            log.info("ZooKeeper container ready on %s in %.2fs", self.connect_string, self.ready_seconds)
            return self

        # A port picked free can be taken before ZooKeeper binds it.
        return on_free_port(attempt, clash=("Address already in use",))

    def ready(self) -> bool:
        """ZooKeeper serves now (``ruok`` and ``srvr``)."""
        return self.is_serving()

    def mntr(self) -> dict[str, int | float | str]:
        assert self.port is not None
        return parse_mntr(four_letter(self.host, self.port, "mntr"))

    def is_serving(self) -> bool:
        """True if ZooKeeper answers ``ruok`` and serves requests now."""
        try:
            return self.port is not None and self._serving()
        except OSError:
            return False

    def stop(self) -> None:
        """Remove the container (logs saved) and a temporary work directory. Idempotent."""
        if self.box is not None:
            self.box.remove()
        if self.workdir is not None and self._given_workdir is None:
            shutil.rmtree(self.workdir, ignore_errors=True)
            self.workdir = None


class BrokerContainer:
    """A herdlab broker (``python -m harness.cluster.broker_main``) in the ``herdlab`` image.

    The port is picked free on the host and passed as ``--port`` (so :meth:`restart` after
    :meth:`halt` starts the *same* container on the same port); the broker's ready file lives in
    the bind-mounted ``workdir``. ``data_dir`` and ``history_path`` are bind-mounted too. A
    :class:`~harness.cluster.service.Service`: :meth:`stop` removes the container (log saved to
    ``<workdir>/broker.log``).
    """

    def __init__(
        self,
        image: str,
        broker_id: int,
        zookeeper: str | None,
        workdir: Path,
        history_path: Path | None = None,
        extra_args: Sequence[str] = (),
        labels: Mapping[str, str] | None = None,
        name: str = "broker",
    ) -> None:
        self.image = image
        self.broker_id = broker_id
        self.zookeeper = zookeeper
        self.workdir = workdir
        self.data_dir = workdir / "data"
        self.history_path = history_path
        self.extra_args = tuple(extra_args)
        self.labels = dict(labels or {})
        self.name = name
        self.host = "127.0.0.1"
        self.port = 0
        self.box: Box | None = None

    @property
    def bootstrap(self) -> str:
        return address(self.host, self.port, f"broker {self.broker_id}")

    @property
    def ready_file(self) -> Path:
        return self.workdir / f"ready-{self.broker_id}.json"

    def argv(self) -> list[str]:
        """The broker's command line in the container (that of the local backend, the image's Python)."""
        spec = BrokerProcess(
            broker_id=self.broker_id,
            zookeeper=self.zookeeper,
            data_dir=self.data_dir,
            history_path=self.history_path,
            log_path=self.workdir / "broker.log",
            extra_args=self.extra_args,
            port=self.port,
            host=self.host,
        )
        return [IMAGE_PYTHON, *spec.argv(self.ready_file)[1:]]

    @property
    def log_path(self) -> Path:
        """``<workdir>/broker.log``, written when the container is removed."""
        return self.workdir / "broker.log"

    def ready(self) -> bool:
        """The broker wrote its ready file for :attr:`port` and the port accepts."""
        if not self.port or not self.ready_file.exists():
            return False
        try:
            info = json.loads(self.ready_file.read_text())
        except (json.JSONDecodeError, OSError):
            return False
        return int(info.get("port", 0)) == self.port and _accepts(self.host, self.port)

    def start(self, timeout: float = 60.0) -> BrokerContainer:
        """Create the container on a free port and wait until it serves; returns ``self``."""
        self.workdir.mkdir(parents=True, exist_ok=True)
        mounts = [self.workdir]
        if self.history_path is not None:
            mounts.append(self.history_path.parent)

        def attempt() -> BrokerContainer:
            self.port = free_port(self.host)
            self.ready_file.unlink(missing_ok=True)
            self.box = Box(
                self.image,
                role="broker",
                name=self.name,
                command=self.argv(),
                labels=self.labels,
                mounts=mounts,
                user=uid_gid(),
                log_path=self.log_path,
            )
            try:
                self.box.start()
                wait_ready(self.box, f"broker {self.broker_id}", self.ready, timeout)
            except BaseException:
                self.box.remove()
                raise
            return self

        return on_free_port(attempt)

    def halt(self, grace: float = 5.0) -> None:
        """``docker stop`` (SIGTERM: the broker shuts down cleanly); :meth:`restart` brings it back."""
        if self.box is not None:
            self.box.stop(grace)

    def restart(self, timeout: float = 60.0) -> None:
        """Start the halted container again: same port, data directory and history file."""
        assert self.box is not None
        self.box.stop()
        self.ready_file.unlink(missing_ok=True)
        self.box.restart()
        wait_ready(self.box, f"broker {self.broker_id}", self.ready, timeout)

    def alive(self) -> bool:
        return self.box is not None and self.box.alive()

    def stop(self, grace: float = 5.0) -> None:
        """``docker stop`` with ``grace``, then remove the container (log saved). Idempotent."""
        if self.box is not None:
            try:
                self.box.stop(grace)
            finally:
                self.box.remove()


# ----------------------------------------------------------------------------------------------- members


#: How long a member container's pause or unpause is retried before it is an error (seconds).
FREEZE_TIMEOUT_S = 10.0


class MemberContainer:
    """A member process in a container, with :class:`harness.procs.ChildProcess`'s interface.

    Signals map to the engine (see the module contract). A :class:`~harness.cluster.service.Service`:
    ``start()`` creates and starts the (not yet started) ``box``, ``ready()`` is "the container
    runs", ``stop()`` is ``docker stop`` with ``grace``, then removal (logs saved to ``log_path``);
    it is idempotent.
    """

    def __init__(self, box: Box, name: str) -> None:
        self.box = box
        self.name = name
        self.log_path = box.log_path

    def start(self, timeout: float = 60.0) -> MemberContainer:
        """Create and start the container; ``self`` once it runs (a member has no readiness of its own:
        its history says when it joined). A container that exits at once is not an error here: the
        runner reads its exit code as it reads a process's."""
        if self.box.container is None:
            try:
                self.box.start()
            except BaseException:
                self.box.remove()
                raise
        return self

    def ready(self) -> bool:
        """The container runs (or is paused)."""
        return self.box.alive()

    @property
    def pid(self) -> int:
        """The container's main process id on the host (0 once it exited)."""
        try:
            return int((self.box.container.attrs.get("State") or {}).get("Pid") or 0)
        except Exception:
            return 0

    def alive(self) -> bool:
        return self.box.alive()

    @property
    def returncode(self) -> int | None:
        return self.box.exit_code()

    def signal(self, sig: int, group: bool = True) -> None:
        """SIGKILL: ``docker kill``; SIGSTOP: ``docker pause``; SIGCONT: ``docker unpause``; else
        ``docker kill --signal``. No error when the container is gone. ``group`` is accepted for
        interface compatibility (a member container holds one process)."""
        if sig in (signal.SIGSTOP, signal.SIGCONT):
            self._freeze(sig == signal.SIGSTOP)
        else:
            status = self.box.status()
            if status == "paused" and sig == signal.SIGKILL:
                self.box.kill("SIGKILL")  # the engine may refuse to kill a frozen container ...
                if self.box.status() == "paused":
                    self.box.unpause()  # ... then thaw it and kill it at once
                    self.box.kill("SIGKILL")
            elif status == "running":
                self.box.kill(signal.Signals(sig).name)

    def _freeze(self, frozen: bool, timeout: float = FREEZE_TIMEOUT_S) -> None:
        """``docker pause`` / ``unpause`` until the engine reports the container paused / running: on a
        loaded machine a call can fail, or a status read time out (and read as ``removed``), so it is
        asked again until ``timeout``; RuntimeError when the container is still in the other state then.
        Nothing when it is gone or has exited."""
        want, call = ("paused", self.box.pause) if frozen else ("running", self.box.unpause)
        deadline = time.monotonic() + timeout
        while True:
            with contextlib.suppress(Exception):
                call()
            status = self.box.status()
            if status == want or status in ("exited", "dead"):
                return
            if time.monotonic() > deadline:
                if status == "removed":
                    return  # gone (or the engine never answered): no error, as for other signals
                raise RuntimeError(
                    f"container of {self.name} still {status} {timeout:g}s after docker {call.__name__}"
                )
            time.sleep(0.05)  # polling the engine's state (a condition with a deadline, not a delay)

    def wait(self, timeout: float | None = None) -> int | None:
        return self.box.wait(timeout)

    def log_tail(self, lines: int = 30) -> str:
        return "\n".join(self.box.logs(tail=lines).splitlines()[-lines:])

    def stop(self, grace: float = 5.0) -> None:
        self.box.stop(grace)
        self.box.remove()

    def __repr__(self) -> str:
        return f"<MemberContainer {self.name} {self.box.name}>"
