"""``herdlab spark up``: a Spark standalone cluster on this machine, for ``--spark-master``;
``herdlab spark archive``: Spark's class archive for the driver JVM.

The master and workers are the pyspark wheel's own classes on 127.0.0.1
(:mod:`harness.cluster.spark_standalone`); the command prints the master URL and keeps the cluster
up until Ctrl-C or SIGTERM, then stops every process it started. The class archive is
:mod:`harness.analysis.class_archive`'s.
"""

from __future__ import annotations

import threading

import click
from rich.console import Console

from harness.analysis import class_archive
from harness.cluster.spark_standalone import SparkStandalone
from harness.kernel.errors import HerdlabError
from harness.procs import install_signal_handlers

console = Console()


@click.group()
def spark() -> None:
    """Spark for the analysis: a standalone cluster (--spark-master), the class archive."""


@spark.command("archive")
@click.option("--force", is_flag=True, help="Write it again even if this Java's and Spark's archive exists.")
def spark_archive(force: bool) -> None:
    """Write Spark's class archive for the analysis's driver JVM (about a minute, once).

    A cold JVM loads Spark's classes one by one; with the archive (Java's class data sharing) it
    maps them: Spark starts in about half the time and the analysis saves a few seconds. The
    archive lives in herdlab's cache ($HERDLAB_CACHE_DIR, else $XDG_CACHE_HOME/herdlab or
    ~/.cache/herdlab), one per Java and Spark; every analysis uses it when it exists
    (HERDLAB_SPARK_CLASS_ARCHIVE=off: never). ./herdlab writes it after installing.
    """
    install_signal_handlers()
    path = class_archive.archive_path()
    if path is not None and not force and class_archive.is_archive(path):
        console.print(f"Spark class archive: {path} (exists; --force writes it again)", highlight=False)
        return
    with console.status("writing Spark's class archive (a small analysis whose JVM saves its classes) ..."):
        try:
            built = class_archive.build(path)
        except HerdlabError as e:
            raise click.ClickException(str(e)) from None
    console.print(
        f"Spark class archive: {built.path} ({built.size / 2**20:,.0f} MiB, {built.seconds:.0f} s)",
        highlight=False,
    )


@spark.command("up")
@click.option("--workers", default=2, show_default=True, type=click.IntRange(1, 16), help="Worker processes.")
@click.option("--cores", default=1, show_default=True, type=click.IntRange(1), help="Cores per worker.")
@click.option("--memory", default="1g", show_default=True, help="Memory per worker (executors), e.g. 2g.")
@click.option(
    "--python",
    default=None,
    metavar="PATH",
    help="Python the workers run for PySpark (default: herdlab's own interpreter).",
)
@click.option(
    "--workdir",
    type=click.Path(file_okay=False),
    default=None,
    help="Keep logs and executor directories here (default: a temporary directory removed at exit).",
)
def spark_up(workers: int, cores: int, memory: str, python: str | None, workdir: str | None) -> None:
    """Start a Spark standalone master and WORKERS workers on loopback until Ctrl-C.

    Prints the master URL for `herdlab report RUN_DIR --spark-master URL` (or `herdlab run ...
    --spark-master URL`). The workers share this machine's filesystem, so a run directory's local
    path is readable by their executors.
    """
    install_signal_handlers()
    with console.status(f"starting a Spark master and {workers} worker(s) ..."):
        cluster = SparkStandalone(workers=workers, cores=cores, memory=memory, python=python, workdir=workdir)
        cluster.start()
    with cluster:
        console.print(f"spark master = {cluster.master_url}", highlight=False)
        console.print(f"logs: {cluster.workdir}", highlight=False)
        console.print(f"try:  herdlab report RUN_DIR --spark-master {cluster.master_url}", highlight=False)
        console.print("Press Ctrl-C to stop.")
        stop = threading.Event()
        while not stop.wait(1.0):
            if cluster.master is None or not cluster.master.alive():
                raise click.ClickException("the Spark master exited; shutting the cluster down")
