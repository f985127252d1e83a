"""The container engine side of the containers backend: :class:`Box` (one container of ours), the
labels every container carries, and the session reaper.

Contract
--------
* Every container is created with testcontainers-python, with the engine's init as PID 1 (signals
  reach our process as they do on the host), with **host networking** (servers bind free
  loopback ports picked at run time, so the loopback fault proxies work unchanged) and labels:
  ``herdlab.session`` (this process), ``herdlab.owner`` (host:pid), ``herdlab.run``, ``herdlab.unit``,
  ``herdlab.role``. Host directories are bind-mounted **at the same path** inside the container.
* Nothing left behind, without a reaper container: a container is tracked from creation until it is
  removed (``force``, with its anonymous volumes). What is still tracked is removed at interpreter
  exit (``atexit``; SIGTERM/SIGHUP reach it through :func:`harness.procs.install_signal_handlers`,
  Ctrl-C through ``finally`` blocks). If the process is SIGKILLed, a reaper *process*
  (``python -m harness.cluster.engine --reap SESSION``, started with the first container, in its own
  session, holding only a pipe from us) sees the pipe close and removes every container labelled with
  this session. :func:`remove_leftovers` (``herdlab images clean``) removes containers whose owner
  process is gone.
* Faults on containers: :meth:`Box.kill` (``docker kill``: a crash), :meth:`Box.pause` /
  :meth:`Box.unpause` (``docker pause``: the cgroup freezer, the container's SIGSTOP).

The Docker SDK and testcontainers are imported lazily: the herdlab image (which runs members) has
neither.
"""

from __future__ import annotations

import atexit
import contextlib
import os
import re
import secrets
import signal
import socket
import subprocess
import sys
import threading
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

from harness.images import docker_client

__all__ = [
    "LABEL_APP",
    "LABEL_OWNER",
    "LABEL_ROLE",
    "LABEL_RUN",
    "LABEL_SESSION",
    "LABEL_UNIT",
    "SESSION",
    "Box",
    "box_exited",
    "our_containers",
    "remove_leftovers",
    "tracker",
    "uid_gid",
]

#: This process's session: every container it starts carries it, the reaper removes by it.
SESSION = secrets.token_hex(6)
LABEL_APP = "herdlab"
LABEL_SESSION = "herdlab.session"
LABEL_OWNER = "herdlab.owner"
LABEL_RUN = "herdlab.run"
LABEL_UNIT = "herdlab.unit"
LABEL_ROLE = "herdlab.role"


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
                [sys.executable, "-m", "harness.cluster.engine", "--reap", SESSION],
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


def our_containers(all_sessions: bool = True, label: str | None = None) -> list[Any]:
    """Containers herdlab started (any session, or only this process's), as Docker SDK objects;
    only those also carrying ``label`` (``key`` or ``key=value``) when given."""
    client = docker_client()
    labels = [LABEL_APP if all_sessions else f"{LABEL_SESSION}={SESSION}"] + ([label] if label else [])
    return list(client.containers.list(all=True, ignore_removed=True, filters={"label": labels}))


def remove_leftovers(everything: bool = False, label: str | None = None) -> list[str]:
    """Remove containers of herdlab runs whose owner process is gone (all of them with ``everything``).

    Returns the names removed. A container whose owner lives on another host is kept unless
    ``everything``. ``label`` (``key`` or ``key=value``) restricts both to containers carrying it.
    """
    import psutil

    removed = []
    host = socket.gethostname()
    for c in our_containers(label=label):
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
        # ``command`` as a list (no shell splitting): the Docker SDK takes one; testcontainers' hint says str.
        command: Any = self.command
        tc = DockerContainer(self.image, command=command, env=self.env, name=self.name).with_kwargs(**kwargs)
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


def uid_gid() -> str:
    """``uid:gid`` of this process: our images run as the invoking user (files stay the user's)."""
    return f"{os.getuid()}:{os.getgid()}"


def box_exited(box: Box) -> str | None:
    """For :func:`harness.cluster.service.await_ready`: why ``box`` can no longer become ready
    (``"is exited (exit code 1)"``), or None while it is created, running or restarting."""
    st = box.status()
    if st in ("running", "created", "restarting"):
        return None
    return f"is {st} (exit code {box.exit_code()})"


if __name__ == "__main__":
    if len(sys.argv) == 3 and sys.argv[1] == "--reap":
        sys.exit(_reap(sys.argv[2]))
    print("usage: python -m harness.cluster.engine --reap SESSION", file=sys.stderr)
    sys.exit(2)
