"""Launch a herdlab broker (``python -m harness.cluster.broker_main``) as a registered child process.

Contract
--------
* ``BrokerProcess(...).start(timeout)`` spawns the broker through :func:`harness.procs.spawn` on
  127.0.0.1, on the requested port or on port 0 (the broker picks a free port and reports it in a
  ready file, so there is never a race for a port), and returns once the ready file exists and the
  port accepts connections. If the process dies or the timeout passes first it is stopped and
  :class:`harness.kernel.errors.Unreachable` is raised with the tail of its log.
* ``bootstrap`` is ``"127.0.0.1:PORT"``. ``stop()`` (SIGTERM, then SIGKILL) and ``kill()``
  (SIGKILL: a crash; returns once the process is gone) are idempotent; ``pause()`` / ``resume()``
  (SIGSTOP / SIGCONT) return once the process is seen stopped / running (``frozen()``); ``restart()`` starts it again on the *same* port with the same
  data directory, history file and options. Also a context manager.
* Without ``log_path`` the broker log goes to a temporary directory that is removed by ``stop()``
  (the ready file lives there too). ``data_dir`` and ``history_path`` are never removed.
* A :class:`~harness.cluster.service.Service` (through :class:`~harness.cluster.service.ProcessService`):
  ``name`` is ``broker-<id>``, ``ready()`` is "the ready file names the port and it accepts".
"""

from __future__ import annotations

import json
import os
import shutil
import signal
import socket
import sys
import tempfile
import time
from collections.abc import Sequence
from pathlib import Path

from harness.cluster.service import ProcessService, address

__all__ = ["BrokerProcess"]


class BrokerProcess(ProcessService):
    """One broker child process (see the module docstring)."""

    def __init__(
        self,
        broker_id: int = 0,
        zookeeper: str | None = None,
        data_dir: str | os.PathLike[str] | None = None,
        history_path: str | os.PathLike[str] | None = None,
        log_path: str | os.PathLike[str] | None = None,
        extra_args: Sequence[str] = (),
        port: int = 0,
        host: str = "127.0.0.1",
        env: dict[str, str] | None = None,
    ) -> None:
        self.broker_id = broker_id
        self.zookeeper = zookeeper
        self.data_dir = Path(data_dir) if data_dir is not None else None
        self.history_path = Path(history_path) if history_path is not None else None
        self._given_log = Path(log_path) if log_path is not None else None
        self.extra_args = tuple(extra_args)
        self.host = host
        self.port = port
        self.env = env
        self.name = f"broker-{broker_id}"
        self.process = None
        self._tmp: Path | None = None

    # ------------------------------------------------------------------ addresses

    @property
    def bootstrap(self) -> str:
        """``host:port`` for ``bootstrap_servers``."""
        return address(self.host, self.port, f"broker {self.broker_id}")

    @property
    def log_path(self) -> Path:
        if self._given_log is not None:
            return self._given_log
        return self._workdir() / f"broker-{self.broker_id}.log"

    def _workdir(self) -> Path:
        if self._tmp is None:
            self._tmp = Path(tempfile.mkdtemp(prefix=f"herdlab-broker-{self.broker_id}-"))
        return self._tmp

    def argv(self, ready_file: Path) -> list[str]:
        """The command line of the broker process."""
        argv = [
            sys.executable,
            "-m",
            "harness.cluster.broker_main",
            "--host",
            self.host,
            "--port",
            str(self.port),
            "--broker-id",
            str(self.broker_id),
            "--ready-file",
            str(ready_file),
        ]
        if self.zookeeper:
            argv += ["--zookeeper", self.zookeeper]
        if self.data_dir is not None:
            argv += ["--data-dir", str(self.data_dir)]
        if self.history_path is not None:
            argv += ["--history", str(self.history_path)]
        return argv + list(self.extra_args)

    # ------------------------------------------------------------------ life cycle

    def start(self, timeout: float = 30.0) -> BrokerProcess:
        """Spawn the broker and wait until it serves; returns ``self``."""
        if self.process is not None and self.process.alive():
            return self
        self._ready_file().unlink(missing_ok=True)
        self._spawn_ready(self.argv(self._ready_file()), f"broker {self.broker_id}", timeout, env=self.env)
        return self

    def _ready_file(self) -> Path:
        return self._workdir() / f"ready-{self.broker_id}.json"

    def ready(self) -> bool:
        """Serves now: the ready file names the port (taken as :attr:`port`) and the port accepts."""
        if self.process is None:
            return False
        ready = self._ready_file()
        if not ready.exists():
            return False
        try:
            info = json.loads(ready.read_text())
        except (json.JSONDecodeError, OSError):
            return False  # being replaced right now
        self.port = int(info["port"])
        return self._accepts()

    def _accepts(self) -> bool:
        try:
            with socket.create_connection((self.host, self.port), timeout=1.0):
                return True
        except OSError:
            return False

    def signal(self, sig: int) -> None:
        """Send ``sig`` to the broker (e.g. SIGSTOP / SIGCONT to pause it)."""
        if self.process is not None:
            self.process.signal(sig)

    def frozen(self) -> bool:
        """Whether the broker process is stopped (SIGSTOP) now."""
        import psutil

        if self.process is None or not self.process.alive():
            return False
        try:
            return psutil.Process(self.process.pid).status() == psutil.STATUS_STOPPED
        except psutil.NoSuchProcess:
            return False

    def pause(self, timeout: float = 10.0) -> None:
        """SIGSTOP the broker (a zombie: it keeps its sockets, answers nothing); returns once it is seen
        stopped, RuntimeError after ``timeout``."""
        self.signal(signal.SIGSTOP)
        self._await_frozen(True, timeout)

    def resume(self, timeout: float = 10.0) -> None:
        """SIGCONT the broker; returns once it is seen running, RuntimeError after ``timeout``."""
        self.signal(signal.SIGCONT)
        self._await_frozen(False, timeout)

    def _await_frozen(self, frozen: bool, timeout: float) -> None:
        deadline = time.monotonic() + timeout
        while self.frozen() != frozen:
            if time.monotonic() > deadline:
                raise RuntimeError(
                    f"broker {self.broker_id} not {'stopped' if frozen else 'running'} after {timeout:g}s"
                )
            time.sleep(0.02)  # polling the process state (a condition with a deadline, not a delay)

    def stop(self, grace: float = 5.0) -> None:
        """SIGTERM (clean shutdown), SIGKILL after ``grace`` seconds; removes a temporary work dir."""
        self.stop_process(grace)
        self._cleanup()

    def kill(self) -> None:
        """SIGKILL the broker (a crash: no clean shutdown)."""
        if self.process is not None:
            self.process.signal(signal.SIGKILL)
            self.process.wait(5.0)
            self.process.stop(0.0)

    def restart(self, timeout: float = 30.0) -> BrokerProcess:
        """Start again on the same port and data directory (stopping it first if it runs)."""
        if self.process is not None and self.process.alive():
            self.process.stop()
        return self.start(timeout)

    def _cleanup(self) -> None:
        if self._tmp is not None:
            shutil.rmtree(self._tmp, ignore_errors=True)
            self._tmp = None

    def __enter__(self) -> BrokerProcess:
        return self.start()

    def __exit__(self, *exc: object) -> None:
        self.stop()

    def __repr__(self) -> str:
        return f"<BrokerProcess id={self.broker_id} port={self.port} alive={self.alive()}>"
