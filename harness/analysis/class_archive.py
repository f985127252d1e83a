"""Spark's classes as a class-data-sharing archive for the driver JVM (JDK 13+ dynamic AppCDS).

Contract
--------
A cold JVM reads, parses, verifies and links every class it loads, and the analysis loads some
twenty thousand from the pyspark distribution's jars, most of them while it plans its first jobs. A
*dynamic CDS archive* holds the classes a JVM loaded as that JVM left them (``-XX:ArchiveClassesAtExit``
writes it when the JVM exits); a JVM started with ``-XX:SharedArchiveFile`` maps them instead of
loading them, which shortens Spark's start and so every analysis (measured in
docs/validation/analysis-speed.md).

* :func:`archive_path`: where the archive for this Java and this Spark lives,
  ``<cache>/spark-classes-<key>.jsa`` with ``<cache>`` ``$HERDLAB_CACHE_DIR``, else
  ``$XDG_CACHE_HOME/herdlab``, else ``~/.cache/herdlab``. The key hashes what the archive depends on
  (:func:`archive_key`): the Java that ``spark-submit`` runs (its home and its module image's size
  and time) and Spark's jars (their directory, names, sizes and modification times: each virtual
  environment, and each reinstall into one, has its own). A change of either gives another path; the JVM also
  checks an archive against its own build and its class path and ignores one that does not match.
* :func:`use_options`: the driver JVM's options to map the archive; none when there is no valid
  archive (a ``SharedArchiveFile`` that does not exist turns off even the JDK's own archive) or when
  ``HERDLAB_SPARK_CLASS_ARCHIVE=off``. The JVM's CDS warnings are off: an archive it cannot use
  means classes loaded the usual way, not an error. A driver JVM that does not start with an
  archive (one damaged after it was written crashes the JVM) is started again without it, and
  when that works the file is removed (:func:`discard`; :func:`harness.analysis.spark.spark_session`).
  :func:`mapped` reads back from a JVM's options which archive it was given.
* :func:`dump_options`: the options that make the driver JVM write an archive when it exits.
* :func:`build`: write the archive: a small synthetic history (:mod:`.synthetic`) analysed by a child
  process (``python -m harness.analysis.bench ... --dump-class-archive``) whose JVM writes the archive
  as it exits (the child waits for it); a JVM must then map it (:func:`check`: a damaged archive
  crashes a JVM that maps it, so none is put in place unchecked) and it is renamed into place, so a
  reader never sees half an archive, and writers running at once each put a whole one in place.
  ``herdlab spark archive`` runs it; ``./herdlab`` runs it after installing: before the tests, and
  for any other command in the background once that command has ended (the script's header says how).

Nothing here changes what the analysis computes: only where the JVM gets its classes from.
"""

from __future__ import annotations

import hashlib
import json
import os
import shutil
import subprocess
import sys
import tempfile
import time
from dataclasses import dataclass
from pathlib import Path

from harness.analysis.synthetic import rate_for, write_synthetic_run
from harness.kernel.cache import cache_dir
from harness.kernel.errors import EnvironmentProblem
from harness.procs import spawn

#: The first four bytes of a dynamic CDS archive (HotSpot's ``CDS_DYNAMIC_ARCHIVE_MAGIC``, little-endian).
DYNAMIC_MAGIC = (0xF00BABA8).to_bytes(4, "little")

#: ``HERDLAB_SPARK_CLASS_ARCHIVE=off`` (or ``0``, ``no``): never map an archive (to measure without one).
SWITCH = "HERDLAB_SPARK_CLASS_ARCHIVE"

#: Events of the history :func:`build` analyses: enough to run every job the analysis has.
TRAINING_EVENTS = 100_000

#: The JVM's log tags of class data sharing, off (see the contract).
QUIET = ("-Xlog:cds=off", "-Xlog:cds+dynamic=off")


def java_home() -> Path | None:
    """The home of the Java that ``spark-submit`` runs: ``$JAVA_HOME``, else the ``java`` on PATH
    (symbolic links followed); None when there is none."""
    given = os.environ.get("JAVA_HOME")
    if given:
        return Path(given)
    found = shutil.which("java")
    return Path(found).resolve().parent.parent if found else None


def spark_home() -> Path:
    """The Spark distribution PySpark runs (``$SPARK_HOME``, else the pyspark package's own)."""
    from pyspark.find_spark_home import _find_spark_home  # pyright: ignore[reportPrivateUsage]

    return Path(_find_spark_home())


def archive_key(java: Path, spark: Path) -> str:
    """16 hex digits that change when the Java at ``java`` or the jars of ``spark`` (where they are,
    which, how large, when written) change. Pure but for reading the file system's sizes and times."""
    h = hashlib.sha256()
    h.update(str(java.resolve()).encode())
    modules = java / "lib" / "modules"
    if modules.exists():
        st = modules.stat()
        h.update(f"|{st.st_size}|{st.st_mtime_ns}".encode())
    h.update(f"|{spark.resolve()}".encode())  # the JVM checks the class path's jars by their paths
    jars = spark / "jars"
    for jar in sorted(jars.glob("*.jar")) if jars.is_dir() else []:
        # the JVM ignores an archive whose class path jars differ in size or modification time from
        # those it was written with: a reinstall of the same pyspark (new mtimes) needs a new one
        st = jar.stat()
        h.update(f"|{jar.name}:{st.st_size}:{st.st_mtime_ns}".encode())
    return h.hexdigest()[:16]


def archive_path(java: Path | None = None) -> Path | None:
    """Where the archive of ``java`` (default :func:`java_home`) and this Spark lives (None without a
    Java)."""
    java = java if java is not None else java_home()
    if java is None:
        return None
    return cache_dir() / f"spark-classes-{archive_key(java, spark_home())}.jsa"


def is_archive(path: Path) -> bool:
    """``path`` is a file that starts like a dynamic CDS archive."""
    try:
        with path.open("rb") as f:
            return f.read(4) == DYNAMIC_MAGIC
    except OSError:
        return False


def switched_off() -> bool:
    """The user turned archives off (:data:`SWITCH`)."""
    return os.environ.get(SWITCH, "").strip().lower() in {"off", "0", "no", "false"}


def use_options(path: Path | None = None) -> list[str]:
    """The driver JVM's options to map the archive at ``path`` (default :func:`archive_path`), or
    none (see the contract)."""
    if switched_off():
        return []
    path = path if path is not None else archive_path()
    if path is None or not is_archive(path):
        return []
    return [f"-XX:SharedArchiveFile={path}", *QUIET]


def discard(options: list[str]) -> None:
    """Remove the archive that ``options`` (:func:`use_options`'s) map: a JVM could not start with
    it. It is a cache: :func:`build` writes it again."""
    path = mapped(" ".join(options))
    if path:
        Path(path).unlink(missing_ok=True)


def mapped(java_options: str | None) -> str | None:
    """The archive a JVM was told to map, from its options (``spark.driver.extraJavaOptions``), or
    None. (Given, that is: a JVM ignores one that does not match it; :func:`build` checked that it does.)"""
    for opt in (java_options or "").split():
        if opt.startswith("-XX:SharedArchiveFile="):
            return opt.split("=", 1)[1]
    return None


def dump_options(path: Path) -> list[str]:
    """The driver JVM's options to write an archive of its classes to ``path`` when it exits."""
    return [f"-XX:ArchiveClassesAtExit={path}", *QUIET]


def check(path: Path, java: Path, class_path: str, timeout: float = 60.0) -> str:
    """Why the archive at ``path`` cannot be used by ``java`` with ``class_path`` ('' when it can):
    a JVM that must map it (``-Xshare:on``) starts and exits. A JVM refuses a mismatched archive
    with an error, and a damaged one (cut short) crashes it: neither may be put in place, since a
    JVM that maps a damaged archive crashes too."""
    argv = [
        str(java / "bin" / "java"),
        "-Xshare:on",
        f"-XX:SharedArchiveFile={path}",
        "-cp",
        class_path,
        "-version",
    ]
    with tempfile.TemporaryDirectory(prefix="herdlab-class-archive-check-") as tmp:  # a crash's report
        argv.insert(1, f"-XX:ErrorFile={tmp}/hs_err_%p.log")
        try:
            done = subprocess.run(argv, capture_output=True, text=True, timeout=timeout, check=False, cwd=tmp)
        except (OSError, subprocess.TimeoutExpired) as e:
            return f"{argv[0]}: {e}"
    if done.returncode != 0:
        lines = [
            ln for ln in (done.stderr + done.stdout).splitlines() if ln.strip() and not ln.startswith("#")
        ]
        return f"a JVM that maps it exited with {done.returncode}" + (f": {lines[0][:200]}" if lines else "")
    return ""


@dataclass(frozen=True)
class Built:
    """What :func:`build` made: the archive, its size in bytes, and the seconds it took."""

    path: Path
    size: int
    seconds: float


def build(path: Path | None = None, *, timeout: float = 600.0) -> Built:
    """Write the archive to ``path`` (default :func:`archive_path`; see the contract). Raises
    :class:`~harness.kernel.errors.EnvironmentProblem` when there is no Java or the child fails."""
    java = java_home()
    if java is None:
        raise EnvironmentProblem("no Java found (JAVA_HOME or java on PATH): Spark needs Java 17+")
    path = path if path is not None else archive_path(java)
    assert path is not None
    path.parent.mkdir(parents=True, exist_ok=True)
    t0 = time.monotonic()
    with tempfile.TemporaryDirectory(prefix="herdlab-class-archive-") as tmp:
        run = write_synthetic_run(Path(tmp), rate=rate_for(TRAINING_EVENTS, 18, 60.0), run_id="training")
        part = path.with_name(f"{path.name}.{os.getpid()}.part")
        log_path = Path(tmp) / "child.log"
        argv = [
            sys.executable,
            "-m",
            "harness.analysis.bench",
            str(run.run_dir),
            str(Path(tmp) / "bench.json"),
            "--dump-class-archive",
            str(part),
        ]
        child = spawn(argv, name="class-archive", log_path=log_path)
        try:
            code = child.wait(timeout)
        finally:
            child.stop()
        try:
            if code != 0 or not is_archive(part):
                tail = (
                    log_path.read_text(errors="replace").strip().splitlines()[-1:]
                    if log_path.exists()
                    else []
                )
                raise EnvironmentProblem(
                    f"writing Spark's class archive failed (exit {code}"
                    + (f": {tail[0][:200]}" if tail else "")
                    + ")"
                )
            class_path = json.loads((Path(tmp) / "bench.json").read_text())["class_path"]
            why = check(part, java, class_path)
            if why:
                raise EnvironmentProblem(f"Spark's class archive came out unusable ({why})")
            os.replace(part, path)
        finally:
            part.unlink(missing_ok=True)
    return Built(path=path, size=path.stat().st_size, seconds=time.monotonic() - t0)
