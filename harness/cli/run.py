"""``herdlab run`` and ``herdlab demo``: option parsing, live progress and printing.

The session itself (checks, scenario, units, analysis) is :mod:`harness.run.session`.
"""

from __future__ import annotations

import contextlib
import tempfile
import time
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import click
from rich.live import Live
from rich.text import Text

from harness.cli.completion import complete_scenario
from harness.cli.jsonout import emit, stdout_to_stderr, verdict_summary
from harness.cli.output import OutputConsole
from harness.cli.report import publish_metrics
from harness.cli.runs import update_latest
from harness.procs import install_signal_handlers
from harness.run.manifest import replay_scenario
from harness.run.session import SessionRequest, failed_units, is_valid, prepare

console = OutputConsole()


class ProgressView:
    """Live status: a redrawn line on a terminal, one line per phase change otherwise."""

    def __init__(self) -> None:
        self.last: dict[str, Any] = {}
        self.live: Live | None = (
            Live(console=console, refresh_per_second=4, transient=True) if console.is_terminal else None
        )
        self.last_line = 0.0

    def __call__(self, p: dict[str, Any]) -> None:
        changed = (p["unit"], p["phase"]) != (self.last.get("unit"), self.last.get("phase"))
        self.last = p
        line = (
            f"[{p['number']}/{p['of']}] {p['impl']} {p['case']} rep {p['repetition']}: {p['phase']}, "
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


#: ``--wide`` of the commands that print the summary tables (run, demo).
WIDE = click.option(
    "--wide",
    is_flag=True,
    help="Every column of the summary tables, cells whole even past the terminal's edge (default: the "
    "narrow columns, fitted to the terminal's width, or to $COLUMNS, else 120, when not printing to one).",
)


@click.command("run")
@click.argument("scenario", required=False, shell_complete=complete_scenario)
@click.option(
    "--replay",
    type=click.Path(file_okay=False, exists=True, path_type=Path),
    default=None,
    metavar="RUN_DIR",
    help="Run again the scenario of an earlier run as it ran (its random schedule's drawn timeline "
    "included, from RUN_DIR/manifest.json) instead of SCENARIO; --set still applies on top.",
)
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
    "--kafka-home",
    type=click.Path(file_okay=False, exists=True, path_type=Path),
    default=None,
    metavar="DIR",
    help="With cluster.broker = 'apache-kafka': an unpacked Apache Kafka distribution (default: "
    "$HERDLAB_KAFKA_HOME, else the version `herdlab kafka fetch` put in the cache).",
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
    "--json",
    "as_json",
    is_flag=True,
    help="At the end print the run directory, the verdict and each unit's outcome as JSON on stdout; "
    "progress and tables go to stderr.",
)
@click.option(
    "--junit",
    type=click.Path(dir_okay=False, path_type=Path),
    default=None,
    help="Write JUnit XML here: one test case per implementation, case and trigger (failure: it never "
    "settled in some repetition), and one per implementation and case for failed units and lost records.",
)
@WIDE
def run(
    scenario: str | None,
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
    as_json: bool = False,
    replay: Path | None = None,
    junit: Path | None = None,
    kafka_home: Path | None = None,
    wide: bool = False,
) -> None:
    """Run SCENARIO (a built-in name or a TOML file) against each implementation it names.

    Every case of its matrix, every repetition, both implementations, under the same faults. The
    history (JSON lines per process, merged into history.parquet) and manifest.json land in
    OUT/<scenario>/<run-id>/. Then the history is analysed with PySpark and index.html, summary.md
    and metrics.json are written there; a summary table ends the run. Exit status 1 when a unit
    failed or a produced record was never processed. Ctrl-C stops cleanly: what was recorded is
    kept, no process is left. OUT/<scenario>/latest links to the newest run directory. With --json,
    stdout carries one JSON object: run_id, run_dir, scenario, verdict (valid: true, false or
    "unknown", reasons, line; null with --no-report), units (each unit's outcome: unit, case, impl,
    repetition, failed) and exit_status. With --replay RUN_DIR instead of SCENARIO: the scenario that
    run ran, its random schedule's draws included, so the same steps hit the same members again.
    """
    if (scenario is None) == (replay is None):
        raise click.UsageError("give SCENARIO or --replay RUN_DIR (one of them)")
    with replay_file(replay) as replayed:
        execute(
            replayed or scenario or "",
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
            as_json=as_json,
            junit=junit,
            kafka_home=kafka_home,
            wide=wide,
        )


@contextlib.contextmanager
def replay_file(run_dir: Path | None) -> Iterator[str | None]:
    """With ``run_dir``: its manifest's ``replay_scenario`` written as a scenario TOML file in a temporary
    directory (removed afterwards), yielded as its path; without: None."""
    if run_dir is None:
        yield None
        return
    import tomli_w

    data = replay_scenario(run_dir)
    with tempfile.TemporaryDirectory(prefix="herdlab-replay-") as tmp:
        path = Path(tmp) / f"{data.get('name', 'replay')}.toml"
        path.write_text(tomli_w.dumps(_without_none(data)))
        yield str(path)


def _without_none(value: Any) -> Any:
    """``value`` with every None in its tables dropped (TOML has no null: an absent key is the default)."""
    if isinstance(value, dict):
        return {k: _without_none(v) for k, v in value.items() if v is not None}  # pyright: ignore[reportUnknownVariableType]
    if isinstance(value, list):
        return [_without_none(v) for v in value]  # pyright: ignore[reportUnknownVariableType]
    return value


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
    as_json: bool = False,
    junit: Path | None = None,
    kafka_home: Path | None = None,
    wide: bool = False,
) -> Path:
    """Run a scenario with live progress, then analyse and report it (see ``herdlab run``); with
    ``as_json`` everything printed goes to stderr and the run's JSON document to stdout at the end;
    with ``wide`` the summary tables show every column."""
    with stdout_to_stderr(as_json):
        outcome = _execute(
            scenario,
            overrides,
            backend=backend,
            zookeeper=zookeeper,
            bootstrap=bootstrap,
            out=out,
            spark_master=spark_master,
            report=report,
            members_in_containers=members_in_containers,
            kafka_image=kafka_image,
            image_prefix=image_prefix,
            junit=junit,
            kafka_home=kafka_home,
            wide=wide,
        )
    if as_json:
        emit(outcome.document())
    if outcome.exit_status:
        raise SystemExit(outcome.exit_status)
    return outcome.run_dir


@dataclass
class RunOutcome:
    """What ``run`` ends with: the run, its units' outcomes, its verdict (None: not analysed)."""

    run_id: str
    run_dir: Path
    scenario: str
    units: list[dict[str, Any]]
    verdict: dict[str, Any] | None
    exit_status: int

    def document(self) -> dict[str, Any]:
        """The ``run --json`` document (see ``herdlab run``)."""
        return {
            "run_id": self.run_id,
            "run_dir": str(self.run_dir),
            "scenario": self.scenario,
            "verdict": self.verdict,
            "units": [unit_outcome(u) for u in self.units],
            "exit_status": self.exit_status,
        }


def unit_outcome(u: dict[str, Any]) -> dict[str, Any]:
    """A unit's outcome in the ``run --json`` document: the runner's entry (unit key, case, impl,
    repetition, settled_at_end, drained, ...) with ``failed`` always present (None: it did not fail)."""
    return {**u, "failed": u.get("failed")}


def _execute(
    scenario: str,
    overrides: tuple[str, ...] | list[str],
    backend: str,
    zookeeper: str | None,
    bootstrap: str | None,
    out: Path,
    spark_master: str | None,
    report: bool,
    members_in_containers: bool,
    kafka_image: str | None,
    image_prefix: str | None,
    junit: Path | None = None,
    kafka_home: Path | None = None,
    wide: bool = False,
) -> RunOutcome:
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
            kafka_home=kafka_home,
        )
    )
    session.build_clients(lambda line: click.echo(line, err=True))  # stdout may be --json's document
    view = ProgressView()
    try:
        with view:
            result = session.run(progress=view)
    except KeyboardInterrupt:
        if view.last.get("run_dir"):
            console.print(f"interrupted; what was recorded is in {view.last['run_dir']}")
        raise
    console.print(f"run {result.run_id}: {result.events} events in {result.run_dir}")
    update_latest(result.run_dir)
    failed = failed_units(result)
    for u in failed:
        console.print(f"[red]unit {u['unit']} failed:[/red] {u['failed']}")
    invalid = False
    verdict = None
    if report:
        metrics, _ = publish_metrics(result.run_dir, spark_master=spark_master, wide=wide)
        invalid = not is_valid(metrics)
        verdict = verdict_summary(metrics)
    else:
        console.print(f"no report: render it with `herdlab report {result.run_dir}`")
    if junit is not None:
        # deferred: start-up: xml loads only for --junit
        from harness.report.junit import write_run_junit

        console.print(f"JUnit XML: {write_run_junit(junit, result.run_dir, result.units)}", highlight=False)
    return RunOutcome(
        run_id=result.run_id,
        run_dir=result.run_dir,
        scenario=session.scenario.name,
        units=list(result.units),
        verdict=verdict,
        exit_status=1 if failed or invalid else 0,
    )


@click.command("demo")
@click.option(
    "--spark-master", default=None, metavar="URL", help="Spark master for the analysis (default: local[2])."
)
@click.option(
    "--out", type=click.Path(file_okay=False, path_type=Path), default=Path("reports"), show_default=True
)
@WIDE
def demo(spark_master: str | None, out: Path, wide: bool) -> None:
    """The main job: the `herd-small` scenario on the embedded local cluster, then its report.

    Real ZooKeeper and a herdlab broker as child processes; 4 and 8 members of each implementation
    face one join, one leave and one crash; the history is analysed with PySpark and the report
    (index.html, summary.md, metrics.json) lands in OUT/herd-small/<run-id>/. A few minutes.
    """
    execute("herd-small", (), out=out, spark_master=spark_master, wide=wide)
