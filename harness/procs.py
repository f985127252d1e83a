"""Process hygiene: every child process herdlab starts is registered and stopped.

Contract
--------
* :func:`spawn` starts a child in its **own process group** (``start_new_session``), registers it in
  the process-wide :data:`registry`, and (on Linux) asks the kernel to SIGKILL it if the spawning
  process dies without cleaning up (``PR_SET_PDEATHSIG``), so even a SIGKILL of the harness leaves
  nothing behind. The death signal is tied to the *thread* that forked: spawn from the main thread or
  from a thread that lives as long as the child.
* :meth:`ChildProcess.stop` sends SIGTERM to the whole process group, waits ``grace`` seconds, then
  SIGKILLs the group and reaps the child. It is idempotent.
* :meth:`ProcessRegistry.stop_all` stops every registered child, newest first. It runs at interpreter
  exit (``atexit``) and, once :func:`install_signal_handlers` was called, on SIGTERM / SIGHUP (which
  are turned into :class:`SystemExit`) — SIGINT raises ``KeyboardInterrupt`` as usual, and the
  ``finally`` blocks and ``atexit`` stop the children.
"""

from __future__ import annotations

import atexit
import contextlib
import ctypes
import logging
import os
import signal
import subprocess
import sys
import threading
import time
from collections.abc import Mapping, Sequence
from pathlib import Path

log = logging.getLogger("herdlab.procs")

_PR_SET_PDEATHSIG = 1


def _child_setup() -> None:  # runs in the child between fork and exec
    if sys.platform.startswith("linux"):
        try:
            libc = ctypes.CDLL(None, use_errno=True)
            libc.prctl(_PR_SET_PDEATHSIG, signal.SIGKILL, 0, 0, 0)
        except OSError:
            pass


class ChildProcess:
    """A child started by :func:`spawn`. ``name`` is for logs and error messages."""

    def __init__(self, popen: subprocess.Popen[bytes], name: str, log_path: Path | None) -> None:
        self.popen = popen
        self.name = name
        self.log_path = log_path
        self._stopped = False

    @property
    def pid(self) -> int:
        return self.popen.pid

    def alive(self) -> bool:
        """True while the process has not exited (a stopped-by-SIGSTOP process is alive)."""
        return self.popen.poll() is None

    @property
    def returncode(self) -> int | None:
        return self.popen.poll()

    def signal(self, sig: int, group: bool = True) -> None:
        """Send ``sig`` to the child (and its process group when ``group``); no error if it is gone."""
        with contextlib.suppress(ProcessLookupError, PermissionError):
            if group:
                os.killpg(self.popen.pid, sig)
            else:
                os.kill(self.popen.pid, sig)

    def wait(self, timeout: float | None = None) -> int | None:
        """Wait up to ``timeout`` seconds for exit; the exit code, or None if still running."""
        try:
            return self.popen.wait(timeout)
        except subprocess.TimeoutExpired:
            return None

    def log_tail(self, lines: int = 30) -> str:
        """The last ``lines`` lines of the child's log file ('' when it has none)."""
        if not self.log_path or not self.log_path.exists():
            return ""
        with open(self.log_path, "rb") as f:
            f.seek(0, os.SEEK_END)
            size = f.tell()
            f.seek(max(0, size - 64 * 1024))
            data = f.read().decode(errors="replace")
        return "\n".join(data.splitlines()[-lines:])

    def stop(self, grace: float = 5.0) -> None:
        """SIGTERM the process group, SIGKILL it after ``grace`` seconds, reap. Idempotent."""
        if self._stopped:
            return
        if self.alive():
            self.signal(signal.SIGCONT)  # a paused child cannot act on SIGTERM
            self.signal(signal.SIGTERM)
            if self.wait(grace) is None:
                log.warning("%s (pid %d) ignored SIGTERM for %.1fs; killing it", self.name, self.pid, grace)
        # Kill the whole group even if the leader exited: it may have left children behind.
        self.signal(signal.SIGKILL)
        self.wait(5.0)
        self._stopped = True
        registry.forget(self)

    def __repr__(self) -> str:
        return f"<ChildProcess {self.name} pid={self.pid} alive={self.alive()}>"


class ProcessRegistry:
    """The set of live children of this process."""

    def __init__(self) -> None:
        self._children: list[ChildProcess] = []
        self._lock = threading.Lock()

    def add(self, child: ChildProcess) -> None:
        with self._lock:
            self._children.append(child)

    def forget(self, child: ChildProcess) -> None:
        with self._lock:
            if child in self._children:
                self._children.remove(child)

    def children(self) -> list[ChildProcess]:
        with self._lock:
            return list(self._children)

    def stop_all(self, grace: float = 5.0) -> None:
        """Stop every registered child, newest first (members before brokers before ZooKeeper).

        SIGTERM goes to all of them first, so the total wait is about one ``grace``, not one per child.
        """
        children = list(reversed(self.children()))
        for c in children:
            if c.alive():
                c.signal(signal.SIGCONT)
                c.signal(signal.SIGTERM)
        deadline = time.monotonic() + grace
        for c in children:
            c.wait(max(0.0, deadline - time.monotonic()))
            c.stop(grace=0.0)


registry = ProcessRegistry()
atexit.register(registry.stop_all)


def spawn(
    argv: Sequence[str],
    name: str,
    log_path: str | os.PathLike[str] | None = None,
    env: Mapping[str, str] | None = None,
    cwd: str | os.PathLike[str] | None = None,
    stdin: int | None = subprocess.DEVNULL,
) -> ChildProcess:
    """Start ``argv`` as a registered child in its own process group.

    stdout and stderr go to ``log_path`` (appended; parents created) or to /dev/null.
    ``env`` entries are added to the current environment.
    """
    full_env = dict(os.environ)
    if env:
        full_env.update(env)
    lp = Path(log_path) if log_path else None
    if lp:
        lp.parent.mkdir(parents=True, exist_ok=True)
        out_f = open(lp, "ab")  # noqa: SIM115 - handed to the child, closed below
    else:
        out_f = open(os.devnull, "wb")  # noqa: SIM115
    try:
        popen = subprocess.Popen(
            list(argv),
            stdin=stdin,
            stdout=out_f,
            stderr=subprocess.STDOUT,
            env=full_env,
            cwd=cwd,
            start_new_session=True,
            preexec_fn=_child_setup,
        )
    finally:
        out_f.close()
    child = ChildProcess(popen, name, lp)
    registry.add(child)
    log.info("started %s (pid %d)", name, popen.pid)
    return child


def install_signal_handlers() -> None:
    """Make SIGTERM and SIGHUP raise SystemExit in the main thread, so cleanup code runs.

    SIGINT keeps Python's default (KeyboardInterrupt). Call once from the main thread of a harness
    process. A second SIGTERM while stopping is ignored rather than interrupting the cleanup.
    """

    def handler(signum: int, _frame: object) -> None:
        signal.signal(signal.SIGTERM, signal.SIG_IGN)
        signal.signal(signal.SIGHUP, signal.SIG_IGN)
        raise SystemExit(128 + signum)

    signal.signal(signal.SIGTERM, handler)
    signal.signal(signal.SIGHUP, handler)


def free_port(host: str = "127.0.0.1") -> int:
    """A TCP port that was free on ``host`` a moment ago (for servers that cannot bind port 0)."""
    import socket

    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as s:
        s.bind((host, 0))
        return s.getsockname()[1]
