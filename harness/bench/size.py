"""``herdlab bench size``: one real run at size (the ``size`` scenario) and its start-up and health figures.

What it does: runs the built-in ``size`` scenario (500 legacy members on gevent hosts, 200 coordinator
members; one join, one leave, one crash; ``--set`` overrides any key) on the local backend exactly as
``herdlab run size`` does (:mod:`harness.run.session`), analyses it with the PySpark checker and writes
its reports, then prints per unit:

* wall time of the unit (from its first progress report to the next unit's; the cluster start is in it);
* start-up (the checker's ``start_up`` entry, :mod:`harness.analysis.startup`): members ready, first
  and last ``ready`` after ``unit_start``, first ``stable`` after ``unit_start``;
* health (:mod:`harness.analysis.health`): heartbeat errors, broker session expiries and ZooKeeper
  SUSPENDED / LOST of untargeted members after the group first became stable (``session_failures``)
  and before it (``session_failures_startup``);
* per trigger: outcome and latency;
* the rig's peak resident memory (every process under this one, the cluster's included, sampled
  every ``--sample-every`` seconds) and its CPU time (this process and its reaped children: every
  member, producer, proxy and cluster process of the unit, which are reaped before the next unit).

Figures are measured on the machine at hand (say whether it was shared); nothing is asserted.
"""

from __future__ import annotations

import contextlib
import resource
import threading
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import click
from rich.console import Console
from rich.table import Table

__all__ = ["size"]


def _cpu_s() -> float:
    """CPU seconds (user + system) of this process and of every child it reaped so far."""
    own = resource.getrusage(resource.RUSAGE_SELF)
    kids = resource.getrusage(resource.RUSAGE_CHILDREN)
    return own.ru_utime + own.ru_stime + kids.ru_utime + kids.ru_stime


def _tree_rss() -> tuple[int, int]:
    """(resident bytes, processes) of this process and every descendant now."""
    import psutil

    me = psutil.Process()
    total, n = 0, 0
    for q in [me, *me.children(recursive=True)]:
        with contextlib.suppress(psutil.Error):
            total += q.memory_info().rss
            n += 1
    return total, n


@dataclass
class UnitFigures:
    """What the bench measured of one unit while it ran."""

    key: str
    t0: float
    cpu0: float
    wall_s: float = 0.0
    cpu_s: float = 0.0
    peak_rss: int = 0
    peak_procs: int = 0


@dataclass
class RigMeter:
    """Attributes the rig's peak memory and CPU to the unit running (told by the progress callback)."""

    every: float
    units: list[UnitFigures] = field(default_factory=list[UnitFigures])
    _lock: threading.Lock = field(default_factory=threading.Lock)
    _stop: threading.Event = field(default_factory=threading.Event)

    def progress(self, p: dict[str, Any]) -> None:
        key = str(p.get("unit"))
        with self._lock:
            if not self.units or self.units[-1].key != key:
                self._close_last()
                self.units.append(UnitFigures(key, time.monotonic(), _cpu_s()))

    def _close_last(self) -> None:
        if self.units:
            last = self.units[-1]
            last.wall_s = time.monotonic() - last.t0
            last.cpu_s = _cpu_s() - last.cpu0

    def sample_forever(self) -> None:
        while not self._stop.wait(self.every):
            rss, n = _tree_rss()
            with self._lock:
                if self.units:
                    u = self.units[-1]
                    u.peak_rss, u.peak_procs = max(u.peak_rss, rss), max(u.peak_procs, n)

    def finish(self) -> None:
        self._stop.set()
        with self._lock:
            self._close_last()


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
    from harness.procs import install_signal_handlers
    from harness.run.session import SessionRequest, analyse, failed_units, prepare, render

    console = Console()
    install_signal_handlers()
    session = prepare(SessionRequest(scenario="size", overrides=overrides, out=out))
    meter = RigMeter(every=sample_every)
    sampler = threading.Thread(target=meter.sample_forever, daemon=True, name="rig-meter")
    sampler.start()
    wall0 = time.monotonic()
    try:
        result = session.run(progress=meter.progress)
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
    measured = {m.key: m for m in meter.units}
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
