"""The ``containers`` cluster backend: ZooKeeper, the broker (and optionally the members) in containers.

Contract
--------
* ``ContainersCluster(...).start()`` has the shape of :class:`~harness.cluster.local.LocalCluster`:
  it starts a ZooKeeper container (image ``<prefix>zookeeper``), then ``brokers`` broker containers
  (image ``<prefix>herdlab``, ``python -m harness.cluster.broker_main``) — or, with ``kafka_image``, Apache Kafka
  brokers in ZooKeeper mode — and returns when all are ready; ``stop()`` removes them (idempotent).
  ``zookeeper_connect``, ``bootstrap``, ``zk_mntr()``, ``stop_broker(i)``, ``start_broker(i)`` and
  ``describe()`` mean what they mean for the local backend.
* Every container is created with testcontainers-python, with the engine's init as PID 1 (signals
  reach our process as they do on the host), with **host networking** (servers bind free
  loopback ports picked at run time, so the loopback fault proxies work unchanged) and labels:
  ``herdlab.session`` (this process), ``herdlab.owner`` (host:pid), ``herdlab.run``, ``herdlab.unit``,
  ``herdlab.role``. Host directories are bind-mounted **at the same path** inside the container, so
  the paths on a command line (config, ready file, data, history) are the same inside and out, and our
  images run as the invoking user (files stay the user's).
* Readiness: ZooKeeper answers ``ruok`` with ``imok`` and ``srvr`` says it serves; our broker wrote
  its ready file and accepts TCP; Apache Kafka accepts TCP and registered ``/brokers/ids/<id>``.
  A container that exits first, or a timeout, raises :class:`~harness.kernel.errors.Unreachable` with the
  tail of its log, after removing what was started.
* Logs: ``docker logs`` of each container is saved when it is removed (ZooKeeper to
  ``<workdir>/zookeeper/zookeeper.log``, broker ``i`` to ``<workdir>/broker-<i>/broker.log``, a member
  to the log path the runner gave), so the unit directory looks as it does with the local backend.
* Nothing left behind, without a reaper container: a container is tracked from creation until it is
  removed (``force``, with its anonymous volumes). What is still tracked is removed at interpreter
  exit (``atexit``; SIGTERM/SIGHUP reach it through :func:`harness.procs.install_signal_handlers`,
  Ctrl-C through ``finally`` blocks). If the process is SIGKILLed, a reaper *process* (started with
  the first container, in its own session, holding only a pipe from us) sees the pipe close and
  removes every container labelled with this session. ``remove_leftovers()`` (``herdlab images
  clean``) removes containers whose owner process is gone.
* Faults on containers: :meth:`Box.kill` (``docker kill``: a crash), :meth:`Box.pause` /
  :meth:`Box.unpause` (``docker pause``: the cgroup freezer, the container's SIGSTOP).
  :class:`MemberContainer` is a member handle with :class:`~harness.procs.ChildProcess`'s interface
  (``signal``/``wait``/``stop``/``alive``): SIGKILL is ``docker kill``, SIGSTOP ``docker pause``,
  SIGCONT ``docker unpause``, any other signal ``docker kill --signal``.

The Docker SDK and testcontainers are imported lazily: the herdlab image (which runs members) has
neither.
"""

from __future__ import annotations

import atexit
import contextlib
import json
import logging
import os
import re
import secrets
import shutil
import signal
import socket
import subprocess
import sys
import tempfile
import threading
import time
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from harness.cluster.local import ComponentHealth
from harness.cluster.zookeeper import four_letter, parse_mntr, write_config
from harness.images import LABEL_SOURCE, ImageNames, docker_client, image_labels, image_names, source_digest
from harness.kernel.errors import ConfigError, EnvironmentProblem, Unreachable
from harness.procs import free_port

log = logging.getLogger("harness.containers")

#: This process's session: every container it starts carries it, the reaper removes by it.
SESSION = secrets.token_hex(6)
LABEL_APP = "herdlab"
LABEL_SESSION = "herdlab.session"
LABEL_OWNER = "herdlab.owner"
LABEL_RUN = "herdlab.run"
LABEL_UNIT = "herdlab.unit"
LABEL_ROLE = "herdlab.role"
#: The implementation label of units whose coordinator-side members run against Apache Kafka.
APACHE_KAFKA = "apache_kafka"
#: Where a herdlab image's Python is (PATH in the image); replaces the host's ``sys.executable``.
IMAGE_PYTHON = "python"


def _owner() -> str:
    return f"{socket.gethostname()}:{os.getpid()}"


def _sanitize(s: str) -> str:
    return re.sub(r"[^a-zA-Z0-9_.-]+", "-", s).strip("-.") or "x"


# ---------------------------------------------------------------------------------------------- tracking


class _Tracker:
    """The containers of this process not yet removed, and the reaper process that outlives us."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._boxes: list[Box] = []
        self._reaper: subprocess.Popen[bytes] | None = None

    def add(self, box: Box) -> None:
        with self._lock:
            self._boxes.append(box)

    def forget(self, box: Box) -> None:
        with self._lock:
            if box in self._boxes:
                self._boxes.remove(box)

    def boxes(self) -> list[Box]:
        with self._lock:
            return list(self._boxes)

    def ensure_reaper(self) -> None:
        """Start the reaper unless it runs (before the first container is created: a creation cut
        short by Ctrl-C leaves a container we never saw, which the reaper's sweep still removes)."""
        with self._lock:
            if self._reaper is not None and self._reaper.poll() is None:
                return
            # Its own session (a Ctrl-C to our process group does not reach it) and no death signal:
            # it must outlive a SIGKILL of this process. It only holds the read end of a pipe.
            self._reaper = subprocess.Popen(
                [sys.executable, "-m", "harness.cluster.containers", "--reap", SESSION],
                stdin=subprocess.PIPE,
                stdout=subprocess.DEVNULL,
                stderr=subprocess.DEVNULL,
                start_new_session=True,
                env={**os.environ, "PYTHONPATH": os.pathsep.join(p for p in sys.path if p)},
            )

    def remove_all(self) -> None:
        """Remove every tracked container (newest first), then release the reaper, which sweeps the
        session's label (containers whose creation was interrupted) and exits. Idempotent."""
        for box in reversed(self.boxes()):
            with contextlib.suppress(Exception):
                box.remove()
        with self._lock:
            reaper, self._reaper = self._reaper, None
        if reaper is not None:
            with contextlib.suppress(OSError):
                assert reaper.stdin is not None
                reaper.stdin.close()  # EOF: the reaper sweeps this session (nothing left) and exits
            try:
                reaper.wait(30)
            except subprocess.TimeoutExpired:
                reaper.kill()
                reaper.wait(5)


tracker = _Tracker()
atexit.register(tracker.remove_all)


def _reap(session: str) -> int:
    """The reaper process: wait for EOF on stdin (our owner is gone), then remove its containers."""
    for sig in (signal.SIGINT, signal.SIGHUP):
        signal.signal(sig, signal.SIG_IGN)
    with contextlib.suppress(OSError):
        while sys.stdin.buffer.read(65536):
            pass
    import docker

    client = docker.from_env(timeout=60)
    for c in client.containers.list(
        all=True, ignore_removed=True, filters={"label": f"{LABEL_SESSION}={session}"}
    ):
        with contextlib.suppress(Exception):
            c.remove(force=True, v=True)
    return 0


def our_containers(all_sessions: bool = True) -> list[Any]:
    """Containers herdlab started (any session, or only this process's), as Docker SDK objects."""
    client = docker_client()
    label = LABEL_APP if all_sessions else f"{LABEL_SESSION}={SESSION}"
    return list(client.containers.list(all=True, ignore_removed=True, filters={"label": label}))


def remove_leftovers(everything: bool = False) -> list[str]:
    """Remove containers of herdlab runs whose owner process is gone (all of them with ``everything``).

    Returns the names removed. A container whose owner lives on another host is kept unless
    ``everything``.
    """
    import psutil

    removed = []
    host = socket.gethostname()
    for c in our_containers():
        owner = c.labels.get(LABEL_OWNER, "")
        o_host, _, o_pid = owner.rpartition(":")
        alive = o_host == host and o_pid.isdigit() and psutil.pid_exists(int(o_pid))
        if everything or (o_host == host and not alive):
            with contextlib.suppress(Exception):
                c.remove(force=True, v=True)
                removed.append(c.name)
    return removed


# ------------------------------------------------------------------------------------------------ a box


class Box:
    """One container of ours: created with testcontainers (host network, labels), tracked until removed.

    ``mounts``: host directories bind-mounted read-write at the same path (created first, so the
    engine does not create them as root). ``user``: ``uid:gid`` to run as (None: the image's user).
    ``log_path``: where ``docker logs`` goes when the container is removed.
    """

    def __init__(
        self,
        image: str,
        role: str,
        name: str,
        command: Sequence[str] | None = None,
        env: Mapping[str, str] | None = None,
        labels: Mapping[str, str] | None = None,
        mounts: Sequence[Path] = (),
        user: str | None = None,
        log_path: Path | None = None,
    ) -> None:
        self.image = image
        self.role = role
        self.name = _sanitize(f"herdlab-{name}-{SESSION}")
        self.command = list(command) if command is not None else None
        self.env = dict(env or {})
        self.labels = {
            LABEL_APP: "1",
            **{k: str(v) for k, v in (labels or {}).items()},
            LABEL_SESSION: SESSION,
            LABEL_OWNER: _owner(),
            LABEL_ROLE: role,
        }
        self.mounts = list(mounts)
        self.user = user
        self.log_path = log_path
        self.container: Any = None
        self._tc: Any = None
        self._removed = False

    def start(self) -> Box:
        """Create and start the container (the image must be present: nothing is pulled here)."""
        os.environ.setdefault("TESTCONTAINERS_RYUK_DISABLED", "true")
        from testcontainers.core.config import testcontainers_config
        from testcontainers.core.container import DockerContainer

        testcontainers_config.ryuk_disabled = True  # its image cannot be pulled; we clean up ourselves
        tracker.ensure_reaper()
        # init: the engine's docker-init (tini) is PID 1 and forwards signals, so our process has the
        # default dispositions it has on the host: a SIGTERM that arrives while a member is still
        # importing ends it, instead of being ignored as signals without a handler are by a PID 1.
        kwargs: dict[str, Any] = {"network": "host", "labels": self.labels, "init": True}
        if self.user:
            kwargs["user"] = self.user
        # Host networking through the SDK's ``network`` (not testcontainers' Network objects); giving it
        # also keeps testcontainers from attaching a network of its own choosing.
        tc = DockerContainer(self.image, command=self.command, env=self.env, name=self.name).with_kwargs(
            **kwargs
        )
        for m in self.mounts:
            m.mkdir(parents=True, exist_ok=True)
            tc.with_volume_mapping(str(m), str(m), "rw")
        self._tc = tc
        try:
            tc.start()
        finally:
            # Tracked from creation on, even if start failed half-way.
            self.container = getattr(tc, "_container", None)
            if self.container is not None:
                tracker.add(self)
        return self

    # -- state ----------------------------------------------------------------------------------
    def status(self) -> str:
        """``created`` / ``running`` / ``paused`` / ``exited`` / ``dead`` / ``removed``."""
        if self.container is None or self._removed:
            return "removed"
        try:
            self.container.reload()
        except Exception:
            return "removed"
        return str(self.container.status)

    def alive(self) -> bool:
        """Running or paused (a paused container is alive, as a SIGSTOPped process is)."""
        return self.status() in ("running", "paused", "restarting")

    def exit_code(self) -> int | None:
        if self.container is None or self.alive():
            return None
        return int((self.container.attrs.get("State") or {}).get("ExitCode", -1))

    def wait(self, timeout: float | None = None) -> int | None:
        """Wait up to ``timeout`` seconds for the container to exit; its exit code or None."""
        if self.container is None or self._removed:
            return None
        if timeout is not None and timeout < 0.05:
            return self.exit_code()
        try:
            return int(self.container.wait(timeout=timeout)["StatusCode"])
        except Exception:  # requests' ReadTimeout / ConnectionError: still running
            return None

    def logs(self, tail: int | str = "all") -> str:
        if self.container is None:
            return ""
        try:
            return self.container.logs(stdout=True, stderr=True, tail=tail).decode(errors="replace")
        except Exception:
            return ""

    # -- faults ---------------------------------------------------------------------------------
    def kill(self, sig: str | int = "SIGKILL") -> None:
        """``docker kill --signal SIG`` (no error if the container is not running)."""
        if self.container is not None and not self._removed:
            with contextlib.suppress(Exception):
                self.container.kill(signal=sig)

    def pause(self) -> None:
        """``docker pause``: freeze every process of the container (cgroup freezer)."""
        if self.status() == "running":
            self.container.pause()

    def unpause(self) -> None:
        if self.status() == "paused":
            self.container.unpause()

    def stop(self, grace: float = 5.0) -> None:
        """``docker stop``: SIGTERM, SIGKILL after ``grace`` seconds; the container stays (restartable)."""
        self.unpause()
        if self.status() == "running":
            with contextlib.suppress(Exception):
                self.container.stop(timeout=max(0, int(round(grace))))

    def restart(self) -> None:
        """Start the same (stopped) container again: same command, same writable layer, logs appended."""
        self.container.start()

    def save_logs(self) -> None:
        if self.log_path is not None and self.container is not None and not self._removed:
            self.log_path.parent.mkdir(parents=True, exist_ok=True)
            self.log_path.write_text(self.logs())

    def remove(self) -> None:
        """Save the logs, remove the container with its anonymous volumes. Idempotent."""
        if self._removed:
            return
        try:
            self.save_logs()
        finally:
            if self.container is not None:
                try:
                    self.container.remove(force=True, v=True)
                except Exception as e:
                    if "No such container" not in str(e) and "is already in progress" not in str(e):
                        raise
            self._removed = True
            tracker.forget(self)
            if self._tc is not None:
                with contextlib.suppress(Exception):
                    self._tc.get_docker_client().client.close()

    def __repr__(self) -> str:
        return f"<Box {self.name} {self.image}>"


def _uid_gid() -> str:
    return f"{os.getuid()}:{os.getgid()}"


def _accepts(host: str, port: int) -> bool:
    try:
        with socket.create_connection((host, port), timeout=1.0):
            return True
    except OSError:
        return False


def _wait_ready(box: Box, what: str, ready: Callable[[], bool], timeout: float) -> float:
    """Poll ``ready()`` until it holds; fail early if the container exits. Returns seconds taken."""
    t0 = time.monotonic()
    deadline = t0 + timeout
    next_status = t0
    while True:
        with contextlib.suppress(OSError):
            if ready():
                return time.monotonic() - t0
        now = time.monotonic()
        if now >= next_status:  # asking the engine costs more than the probe: twice a second
            st = box.status()
            if st not in ("running", "created", "restarting"):
                raise Unreachable(
                    f"{what} container {box.name} is {st} (exit code {box.exit_code()}) before it was ready; "
                    f"log tail:\n{box.logs(tail=20)}"
                )
            next_status = now + 0.5
        if now > deadline:
            raise Unreachable(
                f"{what} container {box.name} not ready after {timeout:.0f}s; log tail:\n{box.logs(tail=20)}"
            )
        time.sleep(0.05)  # polling the server's own readiness, not test synchronisation


# ------------------------------------------------------------------------------------------ components


class ZooKeeperContainer:
    """Apache ZooKeeper in the ``zookeeper`` image, configured as the local backend configures it.

    ``workdir`` holds ``zoo.cfg``, ``log4j2.properties``, ``data/`` and (after removal)
    ``zookeeper.log``; a temporary directory, removed by :meth:`stop`, when None.
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
        if self.port is None:
            raise RuntimeError("ZooKeeper is not started")
        return f"{self.host}:{self.port}"

    def _write_config(self) -> None:
        assert self.workdir is not None and self.port is not None
        write_config(self.workdir, self.host, self.port, self.tick_time_ms, self.max_session_timeout_ms)

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
        last: Unreachable | None = None
        for _ in range(3):  # a port picked free can be taken before ZooKeeper binds it
            self.port = free_port(self.host)
            self._write_config()
            self.box = Box(
                self.image,
                role="zookeeper",
                name=self.name,
                command=[str(self.workdir)],
                env={"ZK_HEAP_MB": str(self.heap_mb)},
                labels=self.labels,
                mounts=[self.workdir],
                user=_uid_gid(),
                log_path=self.workdir / "zookeeper.log",
            )
            try:
                self.box.start()
                self.ready_seconds = _wait_ready(self.box, "ZooKeeper", self._serving, timeout)
                log.info("ZooKeeper container ready on %s in %.2fs", self.connect_string, self.ready_seconds)
                return self
            except Unreachable as e:
                last = e
                self.box.remove()
                if "Address already in use" not in str(e):
                    break
        assert last is not None
        raise last

    def mntr(self) -> dict[str, int | float | str]:
        assert self.port is not None
        return parse_mntr(four_letter(self.host, self.port, "mntr"))

    def is_serving(self) -> bool:
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

    The port is picked free on the host and passed as ``--port`` (so :meth:`start` after
    :meth:`stop` restarts the *same* container on the same port); the broker's ready file lives in
    the bind-mounted ``workdir``. ``data_dir`` and ``history_path`` are bind-mounted too.
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
        if not self.port:
            raise RuntimeError(f"broker {self.broker_id} is not started")
        return f"{self.host}:{self.port}"

    @property
    def ready_file(self) -> Path:
        return self.workdir / f"ready-{self.broker_id}.json"

    def argv(self) -> list[str]:
        """The broker's command line in the container (that of the local backend, the image's Python)."""
        from harness.cluster.broker import BrokerProcess

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

    def _ready(self) -> bool:
        if not self.ready_file.exists():
            return False
        try:
            info = json.loads(self.ready_file.read_text())
        except json.JSONDecodeError:
            return False
        return int(info.get("port", 0)) == self.port and _accepts(self.host, self.port)

    def start(self, timeout: float = 60.0) -> BrokerContainer:
        """Create the container on a free port and wait until it serves; returns ``self``."""
        self.workdir.mkdir(parents=True, exist_ok=True)
        mounts = [self.workdir]
        if self.history_path is not None:
            mounts.append(self.history_path.parent)
        last: Unreachable | None = None
        for _ in range(3):
            self.port = free_port(self.host)
            self.ready_file.unlink(missing_ok=True)
            self.box = Box(
                self.image,
                role="broker",
                name=self.name,
                command=self.argv(),
                labels=self.labels,
                mounts=mounts,
                user=_uid_gid(),
                log_path=self.workdir / "broker.log",
            )
            try:
                self.box.start()
                _wait_ready(self.box, f"broker {self.broker_id}", self._ready, timeout)
                return self
            except Unreachable as e:
                last = e
                self.box.remove()
                if "in use" not in str(e):
                    break
        assert last is not None
        raise last

    def stop(self, grace: float = 5.0) -> None:
        """``docker stop`` (SIGTERM: the broker shuts down cleanly); :meth:`restart` brings it back."""
        if self.box is not None:
            self.box.stop(grace)

    def restart(self, timeout: float = 60.0) -> None:
        """Start the stopped container again: same port, data directory and history file."""
        assert self.box is not None
        self.box.stop()
        self.ready_file.unlink(missing_ok=True)
        self.box.restart()
        _wait_ready(self.box, f"broker {self.broker_id}", self._ready, timeout)

    def alive(self) -> bool:
        return self.box is not None and self.box.alive()

    def remove(self) -> None:
        if self.box is not None:
            self.box.remove()


#: herdlab broker options the runner passes, and the Apache Kafka settings they stand for.
_KAFKA_FLAGS = {
    "--group-initial-rebalance-delay-ms": "group.initial.rebalance.delay.ms",
    "--group-min-session-timeout-ms": "group.min.session.timeout.ms",
    "--group-max-session-timeout-ms": "group.max.session.timeout.ms",
    "--group-max-size": "group.max.size",
}


def kafka_env(broker_id: int, port: int, zookeeper: str, broker_args: Sequence[str] = ()) -> dict[str, str]:
    """Environment of a Confluent Platform ``cp-kafka`` 7.x container in ZooKeeper mode.

    One broker on ``127.0.0.1:port`` (host network; listeners and advertised listeners are the same
    loopback address), registered in ``zookeeper``, with internal topics at replication factor 1,
    and the herdlab broker options of ``broker_args`` translated to Kafka settings (``KAFKA_`` + the
    setting upper-cased, dots as underscores: cp-kafka's convention). An option without a known
    equivalent is a :class:`ConfigError`.
    """
    env = {
        "KAFKA_BROKER_ID": str(broker_id),
        "KAFKA_ZOOKEEPER_CONNECT": zookeeper,
        "KAFKA_LISTENERS": f"PLAINTEXT://127.0.0.1:{port}",
        "KAFKA_ADVERTISED_LISTENERS": f"PLAINTEXT://127.0.0.1:{port}",
        "KAFKA_OFFSETS_TOPIC_REPLICATION_FACTOR": "1",
        "KAFKA_TRANSACTION_STATE_LOG_REPLICATION_FACTOR": "1",
        "KAFKA_TRANSACTION_STATE_LOG_MIN_ISR": "1",
        "KAFKA_HEAP_OPTS": "-Xmx512m -Xms256m",
    }
    args = list(broker_args)
    i = 0
    while i < len(args):
        flag = args[i]
        if flag == "--no-auto-create-topics":
            env["KAFKA_AUTO_CREATE_TOPICS_ENABLE"] = "false"
            i += 1
        elif flag in _KAFKA_FLAGS and i + 1 < len(args):
            env["KAFKA_" + _KAFKA_FLAGS[flag].upper().replace(".", "_")] = args[i + 1]
            i += 2
        else:
            raise ConfigError(f"the broker option {flag} has no Apache Kafka equivalent known to herdlab")
    return env


class KafkaContainer:
    """An Apache Kafka broker in ZooKeeper mode from ``image`` (e.g. ``confluentinc/cp-kafka:7.6.1``).

    Configured through the environment (:func:`kafka_env`); its data stays in the container (a
    restart is ``docker stop`` + ``docker start`` of the same container, which keeps it).
    """

    def __init__(
        self,
        image: str,
        broker_id: int,
        zookeeper: str,
        workdir: Path,
        broker_args: Sequence[str] = (),
        labels: Mapping[str, str] | None = None,
        name: str = "kafka",
    ) -> None:
        self.image = image
        self.broker_id = broker_id
        self.zookeeper = zookeeper
        self.workdir = workdir
        self.broker_args = tuple(broker_args)
        self.labels = dict(labels or {})
        self.name = name
        self.host = "127.0.0.1"
        self.port = 0
        self.box: Box | None = None
        self.env: dict[str, str] = {}

    @property
    def bootstrap(self) -> str:
        if not self.port:
            raise RuntimeError(f"Kafka broker {self.broker_id} is not started")
        return f"{self.host}:{self.port}"

    def _registered(self) -> bool:
        if not _accepts(self.host, self.port):
            return False
        from kazoo.client import KazooClient

        zk = KazooClient(hosts=self.zookeeper, timeout=5)
        try:
            zk.start(timeout=5)
            return zk.exists(f"/brokers/ids/{self.broker_id}") is not None
        except Exception:
            return False
        finally:
            zk.stop()
            zk.close()

    def start(self, timeout: float = 120.0) -> KafkaContainer:
        """Create the container and wait until the broker accepts and is registered in ZooKeeper."""
        self.workdir.mkdir(parents=True, exist_ok=True)
        self.port = free_port(self.host)
        self.env = kafka_env(self.broker_id, self.port, self.zookeeper, self.broker_args)
        self.box = Box(
            self.image,
            role="kafka",
            name=self.name,
            env=self.env,
            labels=self.labels,
            log_path=self.workdir / "broker.log",
        )
        self.box.start()
        _wait_ready(self.box, f"Kafka broker {self.broker_id}", self._registered, timeout)
        return self

    def stop(self, grace: float = 10.0) -> None:
        if self.box is not None:
            self.box.stop(grace)

    def restart(self, timeout: float = 120.0) -> None:
        assert self.box is not None
        self.box.stop()
        self.box.restart()
        _wait_ready(self.box, f"Kafka broker {self.broker_id}", self._registered, timeout)

    def alive(self) -> bool:
        return self.box is not None and self.box.alive()

    def remove(self) -> None:
        if self.box is not None:
            self.box.remove()


# ----------------------------------------------------------------------------------------------- members


class MemberContainer:
    """A member process in a container, with :class:`harness.procs.ChildProcess`'s interface.

    Signals map to the engine (see the module contract). ``stop()`` is ``docker stop`` with
    ``grace``, then removal (logs saved to ``log_path``); it is idempotent.
    """

    def __init__(self, box: Box, name: str) -> None:
        self.box = box
        self.name = name
        self.log_path = box.log_path

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
        if sig == signal.SIGSTOP:
            with contextlib.suppress(Exception):
                self.box.pause()
        elif sig == signal.SIGCONT:
            with contextlib.suppress(Exception):
                self.box.unpause()
        else:
            status = self.box.status()
            if status == "paused" and sig == signal.SIGKILL:
                self.box.kill("SIGKILL")  # the engine may refuse to kill a frozen container ...
                if self.box.status() == "paused":
                    self.box.unpause()  # ... then thaw it and kill it at once
                    self.box.kill("SIGKILL")
            elif status == "running":
                self.box.kill(signal.Signals(sig).name)

    def wait(self, timeout: float | None = None) -> int | None:
        return self.box.wait(timeout)

    def log_tail(self, lines: int = 30) -> str:
        return "\n".join(self.box.logs(tail=lines).splitlines()[-lines:])

    def stop(self, grace: float = 5.0) -> None:
        self.box.stop(grace)
        self.box.remove()

    def __repr__(self) -> str:
        return f"<MemberContainer {self.name} {self.box.name}>"


# ------------------------------------------------------------------------------------------------ cluster


@dataclass
class ContainersOptions:
    """Options of the containers backend (``herdlab run --backend containers ...``).

    ``images``: the ZooKeeper and herdlab images (default: :func:`harness.images.image_names`).
    ``members_in_containers``: run each member in the herdlab image too. ``kafka_image``: also run the
    coordinator side against Apache Kafka in ZooKeeper mode (a third implementation column,
    ``apache_kafka``); the image must speak cp-kafka's ``KAFKA_*`` environment convention.
    """

    images: ImageNames = field(default_factory=image_names)
    members_in_containers: bool = False
    kafka_image: str | None = None


def _require_image(client: Any, ref: str) -> dict[str, str]:
    """The labels of our image ``ref``; a one-line error saying how to build it when it is missing
    (our images are never pulled: they exist in no registry)."""
    labels = image_labels(client, ref)
    if labels is None:
        raise EnvironmentProblem(
            f"image {ref} not found in the Docker engine: build it with "
            "`herdlab images build --offline` (no registry needed) or `herdlab images build`"
        )
    return labels


def preflight(options: ContainersOptions) -> None:
    """Fail early, with one line, when the engine is unreachable or an image is missing (before a
    run creates its directory); the Apache Kafka image may be pulled later, when its unit starts."""
    client = docker_client()
    try:
        for ref in (options.images.zookeeper, options.images.herdlab):
            _require_image(client, ref)
    finally:
        client.close()


Launcher = Callable[[list[str], str, Path], MemberContainer]
_warned: set[str] = set()


class ContainersCluster:
    """ZooKeeper and brokers in containers on the host network (see the module contract).

    ``labels`` are added to every container (the runner sets ``herdlab.run`` and ``herdlab.unit``).
    ``kafka_image``: run Apache Kafka brokers from that image instead of herdlab brokers.
    """

    def __init__(
        self,
        brokers: int = 1,
        tick_time_ms: int = 500,
        workdir: str | os.PathLike[str] | None = None,
        broker_args: tuple[str, ...] = (),
        history_dir: str | os.PathLike[str] | None = None,
        images: ImageNames | None = None,
        kafka_image: str | None = None,
        labels: Mapping[str, str] | None = None,
        members_in_containers: bool = False,
    ) -> None:
        self.members_in_containers = members_in_containers
        self._given_workdir = Path(workdir).resolve() if workdir else None
        self.workdir: Path | None = None
        self.history_dir = Path(history_dir).resolve() if history_dir else None
        self.n_brokers = brokers
        self.tick_time_ms = tick_time_ms
        self.broker_args = tuple(broker_args)
        self.images = images or image_names()
        self.kafka_image = kafka_image
        self.labels = dict(labels or {})
        self.zookeeper: ZooKeeperContainer | None = None
        self.brokers: list[BrokerContainer | KafkaContainer] = []
        self.members: list[MemberContainer] = []
        self._client: Any = None

    # -- images ---------------------------------------------------------------------------------
    def _check_images(self, need_herdlab: bool) -> None:
        client = self._client
        wanted = [self.images.zookeeper] + ([self.images.herdlab] if need_herdlab else [])
        for ref in wanted:
            labels = _require_image(client, ref)
            stale = labels.get(LABEL_SOURCE) not in (None, source_digest())
            if ref == self.images.herdlab and stale and ref not in _warned:
                _warned.add(ref)
                log.warning(
                    "image %s was built from other herdlab sources than this checkout's; "
                    "rebuild it with `herdlab images build`",
                    ref,
                )
        if self.kafka_image and image_labels(client, self.kafka_image) is None:
            log.warning("pulling %s (needs an image registry)", self.kafka_image)
            try:
                client.images.pull(self.kafka_image)
            except Exception as e:
                raise EnvironmentProblem(
                    f"image {self.kafka_image} is not in the Docker engine and could not be pulled "
                    f"({str(e).splitlines()[0][:200]}): the Apache Kafka column needs an image registry"
                ) from None

    # -- life cycle -----------------------------------------------------------------------------
    def start(self, members_in_containers: bool | None = None) -> ContainersCluster:
        """Start ZooKeeper, then the brokers; on any failure remove what was started and re-raise.

        ``members_in_containers`` (default: the constructor's) also checks the herdlab image for members.
        """
        if members_in_containers is not None:
            self.members_in_containers = members_in_containers
        members_in_containers = self.members_in_containers
        self._client = docker_client()
        try:
            ours = self.n_brokers > 0 and not self.kafka_image
            self._check_images(need_herdlab=ours or members_in_containers)
            if self._given_workdir is not None:
                self.workdir = self._given_workdir
                self.workdir.mkdir(parents=True, exist_ok=True)
            else:
                self.workdir = Path(tempfile.mkdtemp(prefix="herdlab-containers-"))
            unit = self.labels.get(LABEL_UNIT, "cluster")
            self.zookeeper = ZooKeeperContainer(
                self.images.zookeeper,
                tick_time_ms=self.tick_time_ms,
                workdir=self.workdir / "zookeeper",
                labels=self.labels,
                name=f"{unit}-zookeeper",
            ).start()
            for i in range(self.n_brokers):
                b: BrokerContainer | KafkaContainer
                if self.kafka_image:
                    b = KafkaContainer(
                        self.kafka_image,
                        broker_id=i,
                        zookeeper=self.zookeeper.connect_string,
                        workdir=self.workdir / f"broker-{i}",
                        broker_args=self.broker_args,
                        labels=self.labels,
                        name=f"{unit}-kafka-{i}",
                    )
                else:
                    b = BrokerContainer(
                        self.images.herdlab,
                        broker_id=i,
                        zookeeper=self.zookeeper.connect_string,
                        workdir=self.workdir / f"broker-{i}",
                        history_path=self.history_dir / f"broker-{i}.jsonl" if self.history_dir else None,
                        extra_args=self.broker_args,
                        labels=self.labels,
                        name=f"{unit}-broker-{i}",
                    )
                self.brokers.append(b)
                b.start()
        except BaseException:
            self.stop()
            raise
        return self

    @property
    def zookeeper_connect(self) -> str:
        return self.zookeeper.connect_string if self.zookeeper else ""

    @property
    def bootstrap(self) -> str:
        """Comma-separated ``host:port`` of the brokers ('' when there are none)."""
        return ",".join(b.bootstrap for b in self.brokers if b.port)

    def zk_mntr(self) -> dict[str, Any] | None:
        """ZooKeeper's ``mntr`` counters now (None if it does not answer)."""
        try:
            return self.zookeeper.mntr() if self.zookeeper else None
        except (OSError, RuntimeError, AssertionError):
            return None

    def stop_broker(self, index: int = 0) -> None:
        """``docker stop`` broker ``index`` (a clean shutdown); :meth:`start_broker` brings it back."""
        self.brokers[index].stop()

    def start_broker(self, index: int = 0) -> None:
        """Start broker ``index``'s container again: same port, same data."""
        self.brokers[index].restart()

    def start_member(
        self, argv: Sequence[str], name: str, log_path: Path, mounts: Sequence[Path] = ()
    ) -> MemberContainer:
        """Run ``argv`` (``[python, -m, harness, member, ...]``; ``argv[0]``, the host's Python, is
        replaced by the image's) in a herdlab container with ``mounts`` bind-mounted (the history)."""
        unit = self.labels.get(LABEL_UNIT, "cluster")
        box = Box(
            self.images.herdlab,
            role="member",
            name=f"{unit}-{name}",
            command=[IMAGE_PYTHON, *list(argv)[1:]],
            env={k: v for k, v in os.environ.items() if k == "HERDLAB_LOG_LEVEL"},
            labels={**self.labels, "herdlab.member": name},
            mounts=[Path(m).resolve() for m in mounts],
            user=_uid_gid(),
            log_path=log_path,
        )
        box.start()
        m = MemberContainer(box, name)
        self.members.append(m)
        return m

    def member_launcher(self, mounts: Sequence[Path]) -> Launcher | None:
        """A launcher for :func:`harness.run.launch.start_member`: members in containers when the
        cluster was made with ``members_in_containers``, else None (local processes)."""
        if not self.members_in_containers:
            return None

        def launch(argv: list[str], name: str, log_path: Path) -> MemberContainer:
            return self.start_member(argv, name, log_path, mounts)

        return launch

    def stop(self) -> None:
        """Remove members, brokers and ZooKeeper (logs saved); idempotent."""
        for m in reversed(self.members):
            with contextlib.suppress(Exception):
                m.stop(grace=1.0)
        self.members.clear()
        for b in reversed(self.brokers):
            try:
                b.stop()
            finally:
                b.remove()
        self.brokers.clear()
        if self.zookeeper is not None:
            self.zookeeper.stop()
            self.zookeeper = None
        if self.workdir is not None and self._given_workdir is None:
            shutil.rmtree(self.workdir, ignore_errors=True)
        self.workdir = None
        if self._client is not None:
            with contextlib.suppress(Exception):
                self._client.close()
            self._client = None

    def describe(self) -> list[ComponentHealth]:
        """Addresses and health of every component, checked now."""
        out = []
        if self.zookeeper is not None and self.zookeeper.port is not None:
            zk = self.zookeeper
            box = zk.box
            out.append(
                ComponentHealth(
                    "zookeeper",
                    zk.connect_string,
                    None,
                    zk.is_serving(),
                    f"container {box.name if box else '-'} ({self.images.zookeeper})",
                )
            )
        for i, b in enumerate(self.brokers):
            out.append(
                ComponentHealth(
                    f"broker-{i}",
                    b.bootstrap if b.port else "-",
                    None,
                    b.alive(),
                    f"container {b.box.name if b.box else '-'} ({b.box.image if b.box else '-'})",
                )
            )
        return out

    def __enter__(self) -> ContainersCluster:
        return self.start()

    def __exit__(self, *exc: object) -> None:
        self.stop()


if __name__ == "__main__":
    if len(sys.argv) == 3 and sys.argv[1] == "--reap":
        sys.exit(_reap(sys.argv[2]))
    print("usage: python -m harness.cluster.containers --reap SESSION", file=sys.stderr)
    sys.exit(2)
