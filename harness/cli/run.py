"""``herdlab run``: run a scenario against both implementations, with live progress."""

from __future__ import annotations

import time
from pathlib import Path
from typing import Any

import click
from rich.console import Console
from rich.live import Live
from rich.table import Table
from rich.text import Text

from harness.cluster.containers import ContainersOptions
from harness.errors import ConfigError
from harness.history.schema import read_parquet
from harness.images import image_names
from harness.procs import install_signal_handlers
from harness.run.runner import RunOptions, run_scenario
from harness.run.summary import summarize
from harness.scenario import expand, load_scenario

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


def _fmt(v: Any, unit: str = "") -> str:
    if v is None:
        return "never"
    if isinstance(v, float):
        return f"{v:.2f}{unit}"
    return f"{v}{unit}"


def summary_table(rows: list[dict[str, Any]]) -> Table:
    t = Table(title="summary (plain Python over the history; PySpark analysis comes later)")
    for col in (
        "impl",
        "case",
        "rep",
        "trigger",
        "latency",
        "watches",
        "zk req",
        "zk pkts",
        "broker req",
        "conflicts",
        "failed",
        "lost",
        "dup",
    ):
        t.add_column(col, justify="right" if col not in ("impl", "case", "trigger") else "left")
    for r in rows:
        trig = r["triggers"] or [None]
        for i, tr in enumerate(trig):
            first = i == 0
            t.add_row(
                r["impl"] if first else "",
                r["case"] if first else "",
                str(r["repetition"]) if first else "",
                (f"{tr['action']} {','.join(tr['targets'] or [])}" if tr else "-"),
                _fmt(tr["latency_s"], "s") if tr else "-",
                _fmt(tr["watches"]) if tr else "-",
                _fmt(tr["zk_requests"]) if tr else "-",
                _fmt(tr["zk_packets"]) if tr and tr["zk_packets"] is not None else "-",
                _fmt(tr["broker_requests"]) if tr else "-",
                _fmt(tr["conflicts"]) if tr else "-",
                _fmt(tr["failed_attempts"]) if tr else "-",
                (f"[red]{r['lost']}[/red]" if r["lost"] else "0") if first else "",
                str(r["duplicates"]) if first else "",
            )
    return t


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
    "--bootstrap", default=None, metavar="HOST:PORT", help="external backend: Kafka-compatible bootstrap."
)
@click.option(
    "--out",
    type=click.Path(file_okay=False, path_type=Path),
    default=Path("reports"),
    show_default=True,
    help="Results go to OUT/<scenario>/<run-id>/.",
)
def run(
    scenario: str,
    overrides: tuple[str, ...],
    backend: str,
    zookeeper: str | None,
    bootstrap: str | None,
    out: Path,
    members_in_containers: bool = False,
    kafka_image: str | None = None,
    image_prefix: str | None = None,
) -> None:
    """Run SCENARIO (a built-in name or a TOML file) against each implementation it names.

    Every case of its matrix, every repetition, both implementations, under the same faults. The
    history (JSON lines per process, merged into history.parquet) and manifest.json land in
    OUT/<scenario>/<run-id>/. Ctrl-C stops cleanly: what was recorded is kept, no process is left.
    """
    install_signal_handlers()
    if backend != "containers" and (members_in_containers or kafka_image or image_prefix):
        raise ConfigError(
            "--members-in-containers, --kafka-image and --image-prefix need --backend containers"
        )
    containers = ContainersOptions(members_in_containers=members_in_containers, kafka_image=kafka_image)
    if image_prefix is not None:
        containers.images = image_names(image_prefix)
    s = load_scenario(scenario, overrides)
    columns = len(s.implementations) + (1 if kafka_image and "coordinator" in s.implementations else 0)
    total = len(expand(s)) * s.repetitions * columns
    view = ProgressView(total)
    try:
        with view:
            result = run_scenario(
                s,
                RunOptions(
                    backend=backend,
                    out=out,
                    zookeeper=zookeeper,
                    bootstrap=bootstrap,
                    progress=view,
                    containers=containers,
                ),
            )
    except KeyboardInterrupt:
        if view.last.get("run_dir"):
            console.print(f"interrupted; what was recorded is in {view.last['run_dir']}")
        raise
    rows = summarize(read_parquet(result.run_dir / "history.parquet"), s.settle_window)
    console.print(summary_table(rows))
    failed = [u for u in result.units if u.get("failed")]
    lost = sum(r["lost"] for r in rows)
    console.print(f"run {result.run_id}: {result.events} events in {result.run_dir}")
    troubled = sum(r["session_failures"] for r in rows)
    startup = sum(r["session_failures_startup"] for r in rows)
    if troubled or startup:
        console.print(
            f"[yellow]heartbeat/session failures of members no fault targeted: {troubled} after the group became "
            f"stable, {startup} while members were starting (CPU starvation?)[/yellow]"
        )
    for u in failed:
        console.print(f"[red]unit {u['unit']} failed:[/red] {u['failed']}")
    if lost:
        console.print(f"[bold red]LOST {lost} produced records that no member processed[/bold red]")
    if failed or lost:
        raise SystemExit(1)
