"""``herdlab spark up``: a Spark standalone cluster on this machine, for ``--spark-master``.

The master and workers are the pyspark wheel's own classes on 127.0.0.1
(:mod:`harness.cluster.spark_standalone`); the command prints the master URL and keeps the cluster
up until Ctrl-C or SIGTERM, then stops every process it started.
"""

from __future__ import annotations

import threading

import click
from rich.console import Console

from harness.cluster.spark_standalone import SparkStandalone
from harness.procs import install_signal_handlers

console = Console()


@click.group()
def spark() -> None:
    """Run a Spark standalone cluster for the analysis (--spark-master)."""


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
