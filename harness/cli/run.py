"""``herdlab run`` and ``herdlab demo``: option parsing, live progress and printing.

The session itself (checks, scenario, units, analysis) is :mod:`harness.run.session`.
"""

from __future__ import annotations

import time
from pathlib import Path
from typing import Any

import click
from rich.console import Console
from rich.live import Live
from rich.text import Text

from harness.procs import install_signal_handlers
from harness.run.session import SessionRequest, failed_units, prepare

console = Console()
if not console.is_terminal:  # logs and CI: wide enough for the summary table
    console = Console(width=160)


class ProgressView:
    """Live status: a redrawn line on a terminal, one line per phase change otherwise."""

    def __init__(self, total_units: int) -> None:
        self.total = total_units
        self.done: set[str] = set()
        self.last: dict[str, Any] = {}
        self.live: Live | None = (
            Live(console=console, refresh_per_second=4, transient=True) if console.is_terminal else None
        )
        self.last_line = 0.0

    def __call__(self, p: dict[str, Any]) -> None:
        changed = (p["unit"], p["phase"]) != (self.last.get("unit"), self.last.get("phase"))
        if self.last and self.last.get("unit") != p["unit"]:
            self.done.add(self.last["unit"])
        self.last = p
        line = (
            f"[{len(self.done) + 1}/{self.total}] {p['impl']} {p['case']} rep {p['repetition']}: {p['phase']}, "
            f"members up {p['members_up']}, owned {p['owned']}/{p['partitions']}, produced {p['produced']}, lag {p['lag']}"
        )
        if self.live is not None:
            self.live.update(Text(line))
        elif changed or time.monotonic() - self.last_line > 10:
            console.print(line, highlight=False)
            self.last_line = time.monotonic()

    def __enter__(self) -> ProgressView:
        if self.live is not None:
            self.live.start()
        return self

    def __exit__(self, *exc: object) -> None:
        if self.live is not None:
            self.live.stop()


@click.command("run")
@click.argument("scenario")
@click.option(
    "--set",
    "overrides",
    multiple=True,
    metavar="KEY=VALUE",
    help="Override any scenario key, e.g. group.members=5.",
)
@click.option(
    "--backend",
    type=click.Choice(["local", "containers", "external"]),
    default="local",
    show_default=True,
    help="Where the cluster runs (containers: Docker, images from `herdlab images build`).",
)
@click.option(
    "--members-in-containers",
    is_flag=True,
    help="containers backend: run every member in a container too (crash = docker kill, pause = docker pause).",
)
@click.option(
    "--kafka-image",
    default=None,
    metavar="IMAGE",
    help="containers backend: also run the coordinator side against Apache Kafka in ZooKeeper mode from "
    "IMAGE (e.g. confluentinc/cp-kafka:7.6.1; needs an image registry): a third column, apache_kafka.",
)
@click.option(
    "--image-prefix",
    default=None,
    metavar="PREFIX",
    help="containers backend: use <PREFIX>zookeeper and <PREFIX>herdlab images (default herdlab/).",
)
@click.option(
    "--zookeeper",
    default=None,
    metavar="HOST:PORT",
    help="external backend: ZooKeeper (needed by legacy_zk).",
)
@click.option(
    "--bootstrap",
    default=None,
    metavar="HOST:PORT",
    help="external backend, or a scenario with cluster.broker = 'external': Kafka-compatible bootstrap.",
)
@click.option(
    "--out",
    type=click.Path(file_okay=False, path_type=Path),
    default=Path("reports"),
    show_default=True,
    help="Results go to OUT/<scenario>/<run-id>/.",
)
@click.option(
    "--spark-master",
    default=None,
    metavar="URL",
    help="Spark master for the analysis (default: local[2]), e.g. spark://host:7077.",
)
@click.option(
    "--no-report", is_flag=True, help="Skip the analysis and reports (render later with `herdlab report`)."
)
@click.option(
    "--junit",
    type=click.Path(dir_okay=False, path_type=Path),
    default=None,
    help="Write JUnit XML here: one test case per unit (failed unit, trigger never settled, lost records: failure).",
)
def run(
    scenario: str,
    overrides: tuple[str, ...],
    backend: str,
    zookeeper: str | None,
    bootstrap: str | None,
    out: Path,
    spark_master: str | None = None,
    no_report: bool = False,
    members_in_containers: bool = False,
    kafka_image: str | None = None,
    image_prefix: str | None = None,
    junit: Path | None = None,
) -> None:
    """Run SCENARIO (a built-in name or a TOML file) against each implementation it names.

    Every case of its matrix, every repetition, both implementations, under the same faults. The
    history (JSON lines per process, merged into history.parquet) and manifest.json land in
    OUT/<scenario>/<run-id>/. Then the history is analysed with PySpark and index.html, summary.md
    and metrics.json are written there; a summary table ends the run. Exit status 1 when a unit
    failed or a produced record was never processed. Ctrl-C stops cleanly: what was recorded is
    kept, no process is left.
    """
    execute(
        scenario,
        overrides,
        backend=backend,
        zookeeper=zookeeper,
        bootstrap=bootstrap,
        out=out,
        spark_master=spark_master,
        report=not no_report,
        members_in_containers=members_in_containers,
        kafka_image=kafka_image,
        image_prefix=image_prefix,
        junit=junit,
    )


def execute(
    scenario: str,
    overrides: tuple[str, ...] | list[str] = (),
    backend: str = "local",
    zookeeper: str | None = None,
    bootstrap: str | None = None,
    out: Path = Path("reports"),
    spark_master: str | None = None,
    report: bool = True,
    members_in_containers: bool = False,
    kafka_image: str | None = None,
    image_prefix: str | None = None,
    junit: Path | None = None,
) -> Path:
    """Run a scenario with live progress, then analyse and report it (see ``herdlab run``)."""
    from harness.cli.report import publish

    install_signal_handlers()
    session = prepare(
        SessionRequest(
            scenario=scenario,
            overrides=tuple(overrides),
            backend=backend,
            zookeeper=zookeeper,
            bootstrap=bootstrap,
            out=out,
            members_in_containers=members_in_containers,
            kafka_image=kafka_image,
            image_prefix=image_prefix,
        )
    )
    view = ProgressView(session.total_units)
    try:
        with view:
            result = session.run(progress=view)
    except KeyboardInterrupt:
        if view.last.get("run_dir"):
            console.print(f"interrupted; what was recorded is in {view.last['run_dir']}")
        raise
    console.print(f"run {result.run_id}: {result.events} events in {result.run_dir}")
    failed = failed_units(result)
    for u in failed:
        console.print(f"[red]unit {u['unit']} failed:[/red] {u['failed']}")
    invalid = False
    if report:
        invalid = publish(result.run_dir, spark_master=spark_master)
    else:
        console.print(f"no report: render it with `herdlab report {result.run_dir}`")
    if junit is not None:
        from harness.report.junit import write_run_junit

        console.print(f"JUnit XML: {write_run_junit(junit, result.run_dir, result.units)}", highlight=False)
    if failed or invalid:
        raise SystemExit(1)
    return result.run_dir


@click.command("demo")
@click.option(
    "--spark-master", default=None, metavar="URL", help="Spark master for the analysis (default: local[2])."
)
@click.option(
    "--out", type=click.Path(file_okay=False, path_type=Path), default=Path("reports"), show_default=True
)
def demo(spark_master: str | None, out: Path) -> None:
    """The main job: the `herd-small` scenario on the embedded local cluster, then its report.

    Real ZooKeeper and a herdlab broker as child processes; 4 and 8 members of each implementation
    face one join, one leave and one crash; the history is analysed with PySpark and the report
    (index.html, summary.md, metrics.json) lands in OUT/herd-small/<run-id>/. A few minutes.
    """
    execute("herd-small", (), out=out, spark_master=spark_master)
