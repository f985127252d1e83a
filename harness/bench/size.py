"""``herdlab bench size``: one real run at size (the ``size`` scenario) and its start-up and health figures.

What it does: runs the built-in ``size`` scenario (500 legacy members on gevent hosts, 200 coordinator
members; one join, one leave, one crash; ``--set`` overrides any key) on the local backend exactly as
``herdlab run size`` does (:mod:`harness.run.session`), analyses it with the PySpark checker and writes
its reports, then prints per unit:

* wall time of the unit (from the first to the last sample that saw one of its processes: cluster start
  to stop);
* start-up (the checker's ``start_up`` entry, :mod:`harness.analysis.startup`): members ready, first
  and last ``ready`` after ``unit_start``, first ``stable`` after ``unit_start``;
* health (:mod:`harness.analysis.health`): heartbeat errors, broker session expiries and ZooKeeper
  SUSPENDED / LOST of untargeted members after the group first became stable (``session_failures``)
  and before it (``session_failures_startup``);
* per trigger: outcome and latency;
* the unit's peak resident memory and CPU time: every process under this one whose command line names
  the unit's directory (members, hosts, producer, ZooKeeper, broker: :func:`unit_of`), sampled every
  ``--sample-every`` seconds (the CPU of a process as last sampled; the harness's own is not in it).

Figures are measured on the machine at hand (say whether it was shared); nothing is asserted.
"""

from __future__ import annotations

import contextlib
import re
import threading
import time
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path

import click
from rich.console import Console
from rich.table import Table

from harness.procs import install_signal_handlers
from harness.run.session import SessionRequest, analyse, failed_units, prepare, render

__all__ = ["size"]


#: A unit's directory in a process's command line (members' and the producer's --history, the cluster's
#: workdir): ``.../units/<key>/...``.
_UNIT_IN_ARGV = re.compile(r"/units/(c\d+-[A-Za-z_]+-r\d+)/")


def unit_of(cmdline: Sequence[str]) -> str | None:
    """The unit key (``c0-legacy_zk-r0``) a process belongs to, from its command line; None for a
    process of no unit (the bench itself, the Spark analysis)."""
    m = _UNIT_IN_ARGV.search(" ".join(cmdline))
    return m.group(1) if m else None


@dataclass
class UnitFigures:
    """What the bench measured of one unit's processes (those whose command line names the unit)."""

    key: str
    first_s: float = 0.0  # monotonic time of the first sample that saw one of its processes
    last_s: float = 0.0  # ... and of the last
    peak_rss: int = 0
    peak_procs: int = 0
    cpu: dict[int, float] = field(default_factory=dict[int, float])  # pid -> latest CPU seconds seen

    @property
    def wall_s(self) -> float:
        """From the first to the last sample that saw the unit's processes (cluster start to stop)."""
        return self.last_s - self.first_s

    @property
    def cpu_s(self) -> float:
        """CPU seconds of the unit's processes, each as last sampled (up to one period of a process's
        last CPU is missed when it ends between samples)."""
        return sum(self.cpu.values())


@dataclass
class RigMeter:
    """Samples every process under this one, each attributed to its unit by :func:`unit_of`: the peak
    of their summed resident memory and their CPU time."""

    every: float
    units: dict[str, UnitFigures] = field(default_factory=dict[str, UnitFigures])
    _stop: threading.Event = field(default_factory=threading.Event)

    def sample(self) -> None:
        import psutil

        now = time.monotonic()
        rss: dict[str, int] = {}
        procs: dict[str, int] = {}
        for q in psutil.Process().children(recursive=True):
            with contextlib.suppress(psutil.Error):
                key = unit_of(q.cmdline())
                if key is None:
                    continue
                u = self.units.setdefault(key, UnitFigures(key, first_s=now))
                u.last_s = now
                rss[key] = rss.get(key, 0) + q.memory_info().rss
                procs[key] = procs.get(key, 0) + 1
                t = q.cpu_times()
                u.cpu[q.pid] = t.user + t.system + t.children_user + t.children_system
        for key, total in rss.items():
            u = self.units[key]
            u.peak_rss, u.peak_procs = max(u.peak_rss, total), max(u.peak_procs, procs[key])

    def sample_forever(self) -> None:
        while not self._stop.wait(self.every):
            self.sample()

    def finish(self) -> None:
        self._stop.set()


def _fmt(x: float | None, unit: str = "s") -> str:
    return "-" if x is None else f"{x:.1f} {unit}"


@click.command("size")
@click.option(
    "--set",
    "overrides",
    multiple=True,
    metavar="KEY=VALUE",
    help="Override a key of the size scenario, e.g. group.legacy_zk.members=100 (repeatable).",
)
@click.option(
    "--out", type=click.Path(file_okay=False, path_type=Path), default=Path("reports"), show_default=True
)
@click.option("--spark-master", default=None, metavar="URL", help="Spark master for the analysis.")
@click.option(
    "--sample-every", default=1.0, show_default=True, help="Seconds between samples of the rig's memory."
)
def size(overrides: tuple[str, ...], out: Path, spark_master: str | None, sample_every: float) -> None:
    """Run the `size` scenario (500 legacy + 200 coordinator members), print start-up, health, wall
    time, peak RSS and CPU of the rig per unit (a benchmark: nothing asserted)."""
    console = Console(width=160)
    install_signal_handlers()
    session = prepare(SessionRequest(scenario="size", overrides=overrides, out=out))
    meter = RigMeter(every=sample_every)
    sampler = threading.Thread(target=meter.sample_forever, daemon=True, name="rig-meter")
    sampler.start()
    wall0 = time.monotonic()
    try:
        result = session.run()
    finally:
        meter.finish()
        sampler.join()
    run_wall = time.monotonic() - wall0
    console.print(f"run {result.run_id}: {result.events:,} events in {run_wall:.0f} s ({result.run_dir})")
    for u in failed_units(result):
        console.print(f"[red]unit {u['unit']} failed:[/red] {u['failed']}")
    t1 = time.monotonic()
    metrics = analyse(result.run_dir, spark_master)
    render(result.run_dir, metrics)
    console.print(f"analysed and reported in {time.monotonic() - t1:.0f} s: {result.run_dir / 'index.html'}")
    measured = meter.units
    t = Table(title="herdlab bench size (one run; a shared machine makes every time an upper bound)")
    for c in (
        "unit",
        "members",
        "unit wall",
        "ready (first..all)",
        "first stable",
        "session failures after stable",
        "at start-up",
        "peak RSS (procs)",
        "CPU",
    ):
        t.add_column(c, justify="right")
    triggers: list[tuple[str, str, str, str]] = []
    for u in metrics.get("units", []):
        key = f"c0-{u['impl']}-r{u['repetition']}"
        m = measured.get(key)
        su = u.get("start_up") or {}
        t.add_row(
            f"{u['impl']} r{u['repetition']}",
            str(su.get("members_ready", "-")),
            _fmt(m.wall_s if m else None),
            f"{_fmt(su.get('first_ready_s'))} .. {_fmt(su.get('all_ready_s'))}",
            _fmt(su.get("stable_s")),
            str(u.get("session_failures", "-")),
            str(u.get("session_failures_startup", "-")),
            f"{m.peak_rss / 2**20:,.0f} MiB ({m.peak_procs})" if m else "-",
            _fmt(m.cpu_s if m else None),
        )
        for tr in u.get("triggers", []):
            triggers.append(
                (
                    f"{u['impl']} r{u['repetition']}",
                    f"{tr.get('key')} {','.join(tr.get('targets') or [])}",
                    str(tr.get("outcome")),
                    _fmt(tr.get("latency_s")),
                )
            )
    console.print(t)
    tt = Table(title="triggers")
    for c in ("unit", "trigger", "outcome", "latency"):
        tt.add_column(c, justify="right")
    for row in triggers:
        tt.add_row(*row)
    console.print(tt)
