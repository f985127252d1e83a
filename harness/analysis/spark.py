"""The one place herdlab makes a SparkSession.

Contract
--------
:func:`spark_session` returns the process's SparkSession, creating it on first use: local mode on
two cores (``local[2]``) unless ``master`` names a cluster (``spark://host:7077``, ``yarn``, ...),
the web UI and console progress bars off, UTC session time zone, Spark's own logging at ERROR,
the driver JVM's C2 compiler held back to hot code and its throughput garbage collector
(:mod:`harness.kernel.jvm`'s ``spark`` kind; ``HERDLAB_JVM_SPARK_OPTS`` replaces them), Spark's classes mapped from the class archive when one was
written (:mod:`harness.analysis.class_archive`), and adaptive query execution off: the jobs run many small
stages, where AQE's re-planning costs more than it saves. Given a log file (the analysis gives
``RUN_DIR/spark.log``), the driver JVM's stdout and stderr go there rather than to the terminal. The number of shuffle partitions of the record keys' shuffle (every delivery) is set per
analysis from the history's size (:func:`shuffle_partitions_for`), every other shuffle's to at most
the cores (:func:`harness.analysis.analyze.analyze`). Calling it again returns the same session
(Spark allows one per JVM); a different ``master`` than the running session's raises
:class:`~harness.kernel.errors.ConfigError` rather than silently using the wrong cluster.
:func:`stop_spark` stops it (tests and the bench use it).

Settings that only take effect when the JVM starts (``driver_memory``) are ignored once a session
runs.

Local mode and a cluster differ in three ways:

* **The driver's address** (:func:`driver_address`): 127.0.0.1 in local mode and for a master on
  loopback; any other master needs ``$SPARK_LOCAL_IP`` (this machine's address the executors reach),
  else a ConfigError, since herdlab sends traffic only to 127.0.0.0/8 unless told.
* **The executors' Python.** Only :func:`check_history`'s probe runs Python on executors (the
  analysis's own Python, the per-unit fold of :mod:`harness.analysis.facts` included, runs in the
  driver). PySpark sends the driver's ``pythonExec`` with the probe and the executors run it as a
  command. Local mode sets ``PYSPARK_PYTHON`` to this interpreter (its executors are this machine's).
  On a cluster herdlab sets nothing: ``$PYSPARK_PYTHON`` if the user set it, else
  ``spark.pyspark.python`` if configured, else ``python3`` from each worker's PATH; the workers need
  Python (the driver's minor version) with pyspark.
* **The history's path** must be readable by every executor: :func:`check_history` runs one task per
  executor core that opens it and fails with a one-line ConfigError when one cannot (a local path
  works on a cluster only when every worker sees the same filesystem at the same path). Local mode
  skips it. The first job on a cluster waits until every granted executor registered
  (``spark.scheduler.minRegisteredResourcesRatio=1``, at most 60 s).
"""

from __future__ import annotations

import ipaddress
import logging
import os
import re
import subprocess
import sys
import threading
from pathlib import Path
from typing import Any

from harness.analysis import class_archive
from harness.kernel import jvm
from harness.kernel.errors import ConfigError, EnvironmentProblem

log = logging.getLogger("harness.analysis.spark")

DEFAULT_MASTER = "local[2]"

#: Environment variables this module set itself (not the user), so a later cluster session drops them.
_SET_BY_US: set[str] = set()


def is_local(master: str | None) -> bool:
    """True for Spark's local mode (``local``, ``local[N]``, ...; None means :data:`DEFAULT_MASTER`)."""
    return (master or DEFAULT_MASTER).startswith("local")


def master_hosts(master: str) -> list[str]:
    """The hosts a master URL names (``spark://h1:7077,h2:7077`` -> ``["h1", "h2"]``; ``[]`` for
    masters without hosts such as ``yarn``)."""
    m = re.fullmatch(r"spark://(.+)", master)
    if not m:
        return []
    return [hp.rsplit(":", 1)[0].strip("[]") for hp in m.group(1).split(",") if hp]


def is_loopback(host: str) -> bool:
    """``host`` is 127.0.0.0/8 or ``localhost``."""
    if host == "localhost":
        return True
    try:
        return ipaddress.ip_address(host).is_loopback
    except ValueError:
        return False


def driver_address(master: str) -> str:
    """The address the driver binds and advertises to a cluster's executors.

    A master on loopback: ``127.0.0.1`` (herdlab sends traffic only to 127.0.0.0/8 and what it
    started). Any other master: ``$SPARK_LOCAL_IP``, which the user sets to this machine's address
    that the cluster reaches; without it a :class:`ConfigError` says so.
    """
    hosts = master_hosts(master)
    if hosts and all(is_loopback(h) for h in hosts):
        return "127.0.0.1"
    given = os.environ.get("SPARK_LOCAL_IP")
    if not given:
        raise ConfigError(
            f"Spark master {master} is not on this machine's loopback: set SPARK_LOCAL_IP to this "
            "machine's address that the cluster's executors can reach (the driver binds and advertises it)"
        )
    return given


def spark_session(
    master: str | None = None,
    *,
    driver_memory: str | None = None,
    shuffle_partitions: int = 4,
    app_name: str = "herdlab-analysis",
    dump_class_archive: Path | None = None,
    log_file: Path | None = None,
) -> Any:
    """The SparkSession for herdlab's analysis (see the module contract). The driver JVM maps
    Spark's class archive when one was built (:func:`.class_archive.use_options`); with
    ``dump_class_archive`` it writes one there as it exits instead (:func:`shutdown_jvm`). With
    ``log_file``, a JVM started here writes its stdout and stderr (Spark's start-up lines and its own
    log) to that file, appended, instead of the terminal (:func:`_launch_jvm`); a session already
    running keeps writing where it did."""

    try:
        from pyspark.sql import SparkSession
    except ImportError as e:  # pragma: no cover - pyspark is a dependency
        raise EnvironmentProblem(f"pyspark is not importable: {e}") from None

    active = SparkSession.getActiveSession()
    if active is not None:
        running = active.sparkContext.master
        if master is not None and master != running:
            raise ConfigError(
                f"a Spark session on {running} is already running in this process; cannot switch to {master}"
            )
        return active
    master = master or DEFAULT_MASTER
    local = is_local(master)
    settings: dict[str, str] = {
        "spark.master": master,
        "spark.app.name": app_name,
        "spark.ui.enabled": "false",
        "spark.ui.showConsoleProgress": "false",
        "spark.sql.shuffle.partitions": str(shuffle_partitions),
        "spark.sql.session.timeZone": "UTC",
        "spark.sql.adaptive.enabled": "false",
        # cached tables (the hashed deliveries, the record keys, the migration proof's records) are
        # kept uncompressed: choosing and applying an encoding per column costs a large part of caching
        # them (herdlab bench analysis shows it), and they are read a few times at most
        "spark.sql.inMemoryColumnarStorage.compressed": "false",
    }
    archive = (
        class_archive.dump_options(dump_class_archive)
        if dump_class_archive is not None
        else class_archive.use_options()
    )
    settings["spark.driver.extraJavaOptions"] = _driver_java_options(archive)
    if local:
        # Local mode talks only to itself: keep the driver on loopback (herdlab sends no traffic
        # beyond 127.0.0.0/8), and its Python workers run this interpreter.
        if "PYSPARK_PYTHON" not in os.environ:
            os.environ["PYSPARK_PYTHON"] = sys.executable
            _SET_BY_US.add("PYSPARK_PYTHON")
        host = "127.0.0.1"
    else:
        # A cluster: executors run the Python their workers have (PYSPARK_PYTHON only when the user
        # set it, not when an earlier local session of this process did), and the first job waits
        # until every executor the cluster grants has registered, so that check_history's probe
        # reaches all of them.
        if "PYSPARK_PYTHON" in _SET_BY_US:
            os.environ.pop("PYSPARK_PYTHON", None)
            _SET_BY_US.discard("PYSPARK_PYTHON")
        host = driver_address(master)
        settings["spark.scheduler.minRegisteredResourcesRatio"] = "1.0"
        settings["spark.scheduler.maxRegisteredResourcesWaitingTime"] = "60s"
    os.environ.setdefault("SPARK_LOCAL_IP", host)  # the JVM's other listeners bind there too
    settings["spark.driver.host"] = host
    settings["spark.driver.bindAddress"] = host
    if driver_memory:
        settings["spark.driver.memory"] = driver_memory

    def start(java_options: str) -> Any:
        conf: dict[str, Any] = {**settings, "spark.driver.extraJavaOptions": java_options}
        if log_file is not None:
            _launch_jvm(conf, log_file)
        return SparkSession.builder.config(map=conf).getOrCreate()

    try:
        session = start(settings["spark.driver.extraJavaOptions"])
    except Exception as e:  # the JVM did not start: Java missing, bad master URL, ...
        where = f" (its output: {log_file})" if log_file is not None else ""
        first = (str(e).splitlines() or [type(e).__name__])[0]
        failed = EnvironmentProblem(f"could not start Spark ({master}): {first}{where}")
        if not archive or dump_class_archive is not None or "JAVA_GATEWAY_EXITED" not in str(e):
            raise failed from None
        # The driver JVM died at start with the class archive given: one damaged after it was written
        # crashes the JVM that maps it. Started again without it; only when that works was the archive
        # the cause, and the file (a cache, `herdlab spark archive` writes it again) is removed.
        try:
            session = start(_driver_java_options())
        except Exception:
            raise failed from None
        log.warning(
            "Spark did not start with the class archive %s, but without it: removed it",
            class_archive.mapped(" ".join(archive)),
        )
        class_archive.discard(archive)
    session.sparkContext.setLogLevel("ERROR")
    if not local:
        _executor_python(session.sparkContext)
    log.info("Spark %s on %s", session.version, session.sparkContext.master)
    return session


def _launch_jvm(conf: dict[str, Any], log_file: Path) -> None:
    """Start the driver JVM (PySpark's gateway) as ``SparkSession.builder.config(map=conf).getOrCreate()``
    would, the same ``conf`` on its command line, but with its stdout and stderr appended to ``log_file``:
    Spark's and the JVM's start-up lines ("Setting default log level", "WARN NativeCodeLoader", the
    JVM's warnings) and Spark's log go there, not to the terminal. Nothing when this process's JVM
    already runs. The session built next finds this JVM and uses it."""
    from pyspark import SparkConf, SparkContext
    from pyspark.java_gateway import launch_gateway

    if SparkContext._gateway is not None:  # pyright: ignore[reportPrivateUsage]
        return
    log_file.parent.mkdir(parents=True, exist_ok=True)
    with log_file.open("ab") as out:  # the JVM keeps its own copy of the descriptor
        gateway = launch_gateway(
            SparkConf().setAll(list(conf.items())),
            popen_kwargs={"stdout": out, "stderr": subprocess.STDOUT},
        )
    SparkContext._ensure_initialized(gateway=gateway)  # pyright: ignore[reportPrivateUsage]


def _executor_python(sc: Any) -> None:
    """The interpreter the executors run: ``$PYSPARK_PYTHON`` if the user set it, else
    ``spark.pyspark.python`` if configured (spark-defaults.conf, ``--conf``), else ``python3``,
    which each executor finds on its worker's PATH. PySpark sends this name with every Python
    function; it reads only ``$PYSPARK_PYTHON`` itself, hence the conf is applied here."""
    if "PYSPARK_PYTHON" not in os.environ:
        configured = sc.getConf().get("spark.pyspark.python", None)
        if configured:
            sc.pythonExec = configured
    log.info("Spark executors run Python %r", sc.pythonExec)


def _probe(path: str) -> Any:
    """The function each probe task runs on an executor (built here so that cloudpickle ships it by
    value: it needs nothing from herdlab on the executor)."""

    def run(_: Any) -> Any:
        import socket
        import sys

        try:
            with open(path, "rb") as f:
                readable = f.read(4) == b"PAR1"
            why = "" if readable else "not a Parquet file there"
        except OSError as e:
            readable, why = False, f"{type(e).__name__}: {e.strerror or e}"
        return {
            "host": socket.gethostname(),
            "python": sys.executable,
            "version": f"{sys.version_info[0]}.{sys.version_info[1]}",
            "readable": readable,
            "why": why,
        }

    return run


#: Seconds the probe may take before herdlab gives up on the cluster (no executor ever started,
#: e.g. workers without the free cores or memory an executor asks for).
PROBE_TIMEOUT_S = 180.0

#: Lines of a failed probe's error that say why the executors could not run Python.
_CAUSES = ("Cannot run program", "PYTHON_VERSION_MISMATCH", "different version", "No module named", "error=")


def _cause(text: str) -> str:
    """The line of a Spark job error that says why (see :data:`_CAUSES`), else its first line."""
    lines = [ln.strip() for ln in text.splitlines() if ln.strip()]
    for ln in lines:
        if any(c in ln for c in _CAUSES):
            return ln[:300]
    return lines[0][:300] if lines else "no detail"


def _run_probe(sc: Any, path: str) -> list[dict[str, Any]]:
    """Run the probe (one task per executor core) with :data:`PROBE_TIMEOUT_S`; the views."""
    n = max(1, sc.defaultParallelism)
    group = f"herdlab-probe-{os.getpid()}"
    result: dict[str, Any] = {}

    def job() -> None:
        sc.setJobGroup(group, "herdlab: can the executors read the history?", interruptOnCancel=True)
        try:
            result["views"] = sc.parallelize(range(n), n).map(_probe(path)).collect()
        except Exception as e:  # noqa: BLE001 - reported by the caller's thread
            result["error"] = e

    t = threading.Thread(target=job, name="herdlab-spark-probe", daemon=True)
    t.start()
    t.join(PROBE_TIMEOUT_S)
    if t.is_alive():
        sc.cancelJobGroup(group)
        raise EnvironmentProblem(
            f"no Spark executor of {sc.master} ran a task within {PROBE_TIMEOUT_S:.0f} s: do its workers "
            "have the free cores and the memory an executor asks for (spark.executor.memory, 1g by default)?"
        )
    if "error" in result:  # the executors could not run Python at all
        raise EnvironmentProblem(
            f"the Spark executors could not run Python {sc.pythonExec!r} ({_cause(str(result['error']))}): "
            f"the workers need Python {sys.version_info[0]}.{sys.version_info[1]} with pyspark "
            "as python3 on their PATH, or set PYSPARK_PYTHON (or spark.pyspark.python) to such an "
            "interpreter on the workers"
        )
    return result["views"]


def check_history(spark: Any, history: str | os.PathLike[str]) -> list[dict[str, Any]]:
    """Check that the cluster's executors can read ``history`` (a local path); their views, one per
    probe task (none in local mode, where the executors are the driver's JVM).

    One task per executor core (the cluster idle: each core takes one) opens the file, checks
    Parquet's magic bytes and reports its Python; the probe has :data:`PROBE_TIMEOUT_S`. Raises
    :class:`ConfigError` when an executor cannot read the file (a local path needs every worker to
    see the same filesystem at the same path) and :class:`EnvironmentProblem` when the executors
    cannot run Python or never start.
    """
    sc = spark.sparkContext
    if is_local(sc.master):
        return []
    path = os.path.abspath(os.fspath(history))
    views = _run_probe(sc, path)
    bad = [v for v in views if not v["readable"]]
    if bad:
        hosts = ", ".join(sorted({f"{v['host']} ({v['why']})" for v in bad}))
        raise ConfigError(
            f"the Spark executors on {hosts} cannot read the history {path}: on a cluster a local path "
            "works only when every worker sees the same filesystem at the same path (workers on this "
            "machine, or a shared mount); put the run directory on such a mount"
        )
    log.info("Spark executors read %s: %s", path, sorted({(v["host"], v["python"]) for v in views}))
    return views


def shuffle_partitions_for(rows: int, cores: int = 2) -> int:
    """Shuffle partitions for a history of ``rows`` events: 1 below a million (task overhead
    dominates), then one per ~2.5 million rows rounded up to a multiple of ``cores`` (no core idles
    in a stage's last wave), at least ``cores`` and at most 4 x ``cores``."""
    if rows < 1_000_000:
        return 1
    n = rows // 2_500_000 + 1
    return max(cores, min(4 * cores, -(-n // cores) * cores))


def _driver_java_options(extra: list[str] | None = None) -> str:
    """The driver JVM's options: :mod:`harness.kernel.jvm`'s ``spark`` kind, then ``extra`` (the class
    archive's)."""
    return " ".join([*jvm.options("spark"), *(extra or [])])


def shutdown_jvm(timeout: float = 300.0) -> int | None:
    """Stop the session and end this process's Spark JVM, waiting up to ``timeout`` seconds for it
    to exit (a JVM that writes a class archive writes it as it exits: :mod:`.class_archive`). The
    JVM's exit code; None when no JVM was started here or it did not exit in time. Spark cannot be
    used again in this process afterwards."""
    from pyspark import SparkContext

    gateway = SparkContext._gateway  # pyright: ignore[reportPrivateUsage]
    stop_spark()
    proc = getattr(gateway, "proc", None)
    if proc is None:
        return None
    if proc.stdin is not None:
        proc.stdin.close()  # PySpark's gateway server exits the JVM when its stdin ends
    try:
        return proc.wait(timeout)
    except subprocess.TimeoutExpired:
        return None


def stop_spark() -> None:
    """Stop the process's SparkSession if one runs (idempotent)."""
    from pyspark.sql import SparkSession

    active = SparkSession.getActiveSession()
    if active is not None:
        active.stop()
