# pyright: strict
"""A Spark standalone cluster (master and workers) from the pyspark wheel's own classes, on loopback.

Contract
--------
* :class:`SparkStandalone` starts one :class:`SparkMaster` and ``workers`` :class:`SparkWorker` s as
  registered child processes (:mod:`harness.procs`), every one a
  :class:`~harness.cluster.service.Service`: ``java -cp "<pyspark>/jars/*"
  org.apache.spark.deploy.master.Master`` / ``...worker.Worker``, bound to 127.0.0.1 on free ports
  (RPC and web UI; the master's REST submission server is off). ``start()`` returns once the master
  is ALIVE and lists every worker ALIVE (its ``/json`` endpoint); ``master_url`` is then
  ``spark://127.0.0.1:PORT``. ``stop()`` stops the workers (and so their executors and Python
  workers, which run in each worker's process group), then the master, and removes a temporary work
  directory; it is idempotent and runs on ``with`` exit.
* What a pip-installed pyspark needs to run these daemons: ``SPARK_HOME`` (the pyspark package: it has
  ``jars/``), ``SPARK_SCALA_VERSION`` (the launcher that builds each executor's command line looks
  for a source build's directories without it; normally set by ``bin/load-spark-env.sh``),
  ``SPARK_LOCAL_IP=127.0.0.1`` (web UIs and RPC on loopback), a work directory per worker (executor
  logs and application files).
* The executors' Python: PySpark's driver sends its ``pythonExec`` (``PYSPARK_PYTHON``, else
  ``python3``) to the executors, which run it as a command; the worker's own ``PYSPARK_PYTHON`` is
  not consulted (pyspark ``core/context.py``; Spark's ``BasePythonRunner.pythonExec``). A worker here
  is *configured with* ``python`` (default: this interpreter) by putting a ``python3`` that execs it
  first on the worker's ``PATH``, so a driver that leaves ``PYSPARK_PYTHON`` unset (herdlab on a
  cluster, :mod:`harness.analysis.spark`) gets the worker's Python.
* ``worker_prefix`` (a command prefix for the workers, e.g. ``unshare`` into another mount namespace)
  lets a worker see another filesystem than the driver; tests use it.
"""

from __future__ import annotations

import json
import os
import re
import shutil
import sys
import tempfile
import urllib.request
from collections.abc import Sequence
from pathlib import Path
from typing import Any, cast

from harness.cluster.java import check_java, pyspark_jars_dir
from harness.cluster.service import ProcessService, ServiceStack, address, await_ready, on_free_port
from harness.kernel import jvm
from harness.kernel.errors import EnvironmentProblem, Unreachable
from harness.procs import free_port, spawn

HOST = "127.0.0.1"
#: Log text of a daemon whose port was taken between picking it free and binding it.
CLASH = ("Address already in use", "Failed to bind")


def scala_version(jars: Path) -> str:
    """The Scala binary version of the Spark jars in ``jars`` (``spark-core_2.13-4.3.0.jar`` -> 2.13)."""
    for p in jars.glob("spark-core_*.jar"):
        m = re.match(r"spark-core_(\d+\.\d+)-", p.name)
        if m:
            return m.group(1)
    raise EnvironmentProblem(f"no spark-core_<scala>-<version>.jar in {jars}: not a Spark distribution")


def daemon_env(jars: Path) -> dict[str, str]:
    """The environment every standalone daemon needs (see the module contract)."""
    return {
        "SPARK_HOME": str(jars.parent),
        "SPARK_SCALA_VERSION": scala_version(jars),
        "SPARK_LOCAL_IP": HOST,
    }


def daemon_argv(java: str, jars: Path, main: str, name: str, args: Sequence[str]) -> list[str]:
    """The command line of one standalone daemon (``main`` is its class); its JVM options are
    :mod:`harness.kernel.jvm`'s ``spark_daemon`` kind (the heap included)."""
    return [
        java,
        *jvm.options("spark_daemon", name=name),
        "-cp",
        f"{jars}/*",
        main,
        *args,
    ]


def master_state(webui_port: int, timeout: float = 2.0) -> dict[str, Any]:
    """The master's ``/json`` document (status, workers with their state, applications)."""
    url = f"http://{HOST}:{webui_port}/json/"
    with urllib.request.urlopen(url, timeout=timeout) as r:  # noqa: S310 - loopback http only
        return cast(dict[str, Any], json.loads(r.read()))


class SparkMaster(ProcessService):
    """The standalone master on 127.0.0.1 (see the module contract); ready when ALIVE."""

    def __init__(self, workdir: Path, name: str = "spark-master") -> None:
        self.workdir = workdir
        self.name = name
        self.process = None
        self.port: int | None = None
        self.webui_port: int | None = None

    @property
    def log_path(self) -> Path:
        return self.workdir / f"{self.name}.log"

    @property
    def url(self) -> str:
        """``spark://127.0.0.1:PORT``."""
        return f"spark://{address(HOST, self.port, 'Spark master')}"

    def state(self) -> dict[str, Any]:
        """The master's ``/json`` document (raises ``OSError`` when it does not answer)."""
        if not self.webui_port:
            raise OSError("Spark master is not started")
        return master_state(self.webui_port)

    def start(self, timeout: float = 120.0) -> SparkMaster:
        """Start the master and wait until it is ALIVE; returns ``self``."""
        java = check_java()
        jars = pyspark_jars_dir()

        def attempt() -> None:
            self.port, self.webui_port = free_port(HOST), free_port(HOST)
            args = ["--host", HOST, "--port", str(self.port), "--webui-port", str(self.webui_port)]
            argv = daemon_argv(java, jars, "org.apache.spark.deploy.master.Master", self.name, args)
            self._spawn_ready(argv, f"Spark master on {HOST}:{self.port}", timeout, env=daemon_env(jars))

        on_free_port(attempt, clash=CLASH)
        return self

    def ready(self) -> bool:
        try:
            return self.state().get("status") == "ALIVE"
        except (OSError, ValueError):
            return False

    def stop(self) -> None:
        self.stop_process()


class SparkWorker(ProcessService):
    """One standalone worker of ``master`` with ``cores`` and ``memory``; ready when the master lists
    it ALIVE. Its executors run ``python3`` from its ``PATH``: ``python`` (see the module contract)."""

    def __init__(
        self,
        master: SparkMaster,
        workdir: Path,
        name: str,
        cores: int = 1,
        memory: str = "1g",
        python: str | None = None,
        prefix: Sequence[str] = (),
    ) -> None:
        self.master = master
        self.workdir = workdir
        self.name = name
        self.cores = cores
        self.memory = memory
        self.python = python or sys.executable
        self.prefix = list(prefix)
        self.process = None
        self.port: int | None = None

    @property
    def log_path(self) -> Path:
        return self.workdir / f"{self.name}.log"

    def _python_dir(self) -> Path:
        """A directory holding ``python3`` that execs :attr:`python` (a script, not a symlink: a
        symlinked venv interpreter would lose its venv)."""
        d = self.workdir / "bin"
        d.mkdir(parents=True, exist_ok=True)
        exe = d / "python3"
        exe.write_text(f'#!/bin/sh\nexec "{self.python}" "$@"\n')
        exe.chmod(0o755)
        return d

    def launch(self) -> None:
        """Spawn the worker on a free port without waiting (:meth:`await_ready` waits)."""
        java = check_java()
        jars = pyspark_jars_dir()
        env = daemon_env(jars)
        env["PATH"] = f"{self._python_dir()}{os.pathsep}{os.environ.get('PATH', '')}"
        env["PYSPARK_PYTHON"] = self.python
        work = self.workdir / "work"
        work.mkdir(parents=True, exist_ok=True)
        self.port = free_port(HOST)
        args = [self.master.url, "--host", HOST, "--port", str(self.port), "--webui-port", "0"]
        args += ["--cores", str(self.cores), "--memory", self.memory, "--work-dir", str(work)]
        argv = daemon_argv(java, jars, "org.apache.spark.deploy.worker.Worker", self.name, args)
        self.process = spawn(self.prefix + argv, name=self.name, log_path=self.log_path, env=env)

    def await_ready(self, timeout: float) -> float:
        """Wait until the master lists this worker ALIVE; the seconds it took. On failure the worker
        is stopped and :class:`~harness.kernel.errors.Unreachable` raised with its log tail."""
        child = self.process
        if child is None:
            raise RuntimeError(f"{self.name} was not launched")

        def exited() -> str | None:
            return None if child.alive() else f"exited with status {child.returncode}"

        what = f"Spark worker on {HOST}:{self.port}"
        try:
            return await_ready(what, self.ready, exited, lambda: child.log_tail(20), timeout)
        except Unreachable:
            child.stop()
            raise

    def start(self, timeout: float = 120.0) -> SparkWorker:
        """Start the worker and wait until the master lists it ALIVE; returns ``self``."""

        def attempt() -> None:
            self.launch()
            self.await_ready(timeout)

        on_free_port(attempt, clash=CLASH)
        return self

    def ready(self) -> bool:
        if not self.port:
            return False
        try:
            workers = cast(list[dict[str, Any]], self.master.state().get("workers") or [])
        except (OSError, ValueError):
            return False
        return any(w.get("port") == self.port and w.get("state") == "ALIVE" for w in workers)

    def stop(self) -> None:
        self.stop_process()


class SparkStandalone:
    """A master and ``workers`` workers on loopback (see the module contract).

    ``cores`` and ``memory`` are per worker; ``python`` is the workers' interpreter (default: this
    one); ``workdir`` (logs, executor work directories) is kept when given, else temporary.
    """

    def __init__(
        self,
        workers: int = 2,
        cores: int = 1,
        memory: str = "1g",
        python: str | None = None,
        workdir: str | os.PathLike[str] | None = None,
        worker_prefix: Sequence[str] = (),
    ) -> None:
        if workers < 1:
            raise ValueError("a Spark standalone cluster needs at least one worker")
        self.n_workers = workers
        self.cores = cores
        self.memory = memory
        self.python = python
        self._given_workdir = Path(workdir) if workdir else None
        self.workdir: Path | None = None
        self.worker_prefix = list(worker_prefix)
        self.master: SparkMaster | None = None
        self.workers: list[SparkWorker] = []
        self._stack = ServiceStack()

    @property
    def master_url(self) -> str:
        """``spark://127.0.0.1:PORT`` of the running master."""
        if self.master is None:
            raise RuntimeError("the Spark cluster is not started")
        return self.master.url

    def processes(self) -> list[int]:
        """Pids of the daemons started (running or not)."""
        services = [self.master, *self.workers] if self.master else []
        return [s.process.pid for s in services if s.process is not None]

    def start(self, timeout: float = 180.0) -> SparkStandalone:
        """Start the master, then the workers; returns ``self`` once every worker is ALIVE."""
        if self._given_workdir:
            self._given_workdir.mkdir(parents=True, exist_ok=True)
        self.workdir = self._given_workdir or Path(tempfile.mkdtemp(prefix="herdlab-spark-"))
        try:
            self.master = self._stack.push(SparkMaster(self.workdir))
            self.master.start(timeout)
            self.workers = [
                self._stack.push(
                    SparkWorker(
                        self.master,
                        self.workdir / f"worker-{i + 1}",
                        f"spark-worker-{i + 1}",
                        self.cores,
                        self.memory,
                        self.python,
                        self.worker_prefix,
                    )
                )
                for i in range(self.n_workers)
            ]
            on_free_port(lambda: self._start_workers(timeout), clash=CLASH)
        except BaseException:
            self.stop()
            raise
        return self

    def _start_workers(self, timeout: float) -> None:
        """Launch every worker (JVM start-up in parallel), then wait for each; on failure stop them all."""
        try:
            for w in self.workers:
                w.launch()
            for w in self.workers:
                w.await_ready(timeout)
        except BaseException:
            for w in self.workers:
                w.stop()
            raise

    def stop(self) -> None:
        """Stop every daemon (workers first) and remove a temporary work directory. Idempotent."""
        try:
            self._stack.stop_all()
        finally:
            if self.workdir is not None and self._given_workdir is None:
                shutil.rmtree(self.workdir, ignore_errors=True)
                self.workdir = None

    def __enter__(self) -> SparkStandalone:
        if self.master is None:
            return self.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self.stop()
