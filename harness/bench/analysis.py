"""``herdlab bench analysis``: time, Spark jobs and peak memory of the PySpark analysis, against a bare session.

For each size a synthetic ``herd``-shaped run (:mod:`harness.analysis.synthetic`: 3 cases x 2
implementations x 3 repetitions, below :data:`SMALL_SHAPE_BELOW` one case and one repetition; the
producer rate scaled to reach the size; default about 10^4, 10^6 and 10^7 events) is written to a temporary directory; each real run directory given with
``--history`` (default: the main job's history kept as test data, :data:`MAIN_JOB_HISTORY`) is read
as it is. Each is analysed in a child process of its own (a fresh JVM: ``python -m
harness.analysis.bench``), and then, in the same run, a bare Spark session is timed (``--bare``: the
same JVM settings and class archive, one trivial job, stop). Reported per history: generation time,
Spark start, analysis time, time per million events, the Spark jobs (stages, tasks) the analysis ran,
the seconds in which at least one job ran and those in which the driver ran alone (planning, Python),
the child's wall time, the bare session's and their ratio (the analysis's fixed cost in units of
Spark's own), and the peak resident memory of the child and its JVM together (sampled every 0.2 s);
with ``--families`` (default) a table per history of the jobs, tasks and seconds of each metric
family (the jobs' descriptions, :func:`harness.analysis.frames.together`). With ``--repeat N`` each size's
history is analysed N times, each time by a fresh child, and the table shows the median analysis
time with its range (a shared machine's speed varies between hours: one run says little);
the other columns are the median run's. Below the table, whether the (median) time
is linear in events (:func:`linearity`): the ratio of the time per event at the largest size to
that at the smallest (at most :data:`LINEAR_RATIO`: no worse than linear) and the straight line
through the smallest and largest sizes (fixed seconds + seconds per million events) with each
other size's distance from it, and whether the children's JVMs mapped Spark's class archive
(:mod:`harness.analysis.class_archive`; Spark starts in about half the time with it). Figures are
measured on the machine at hand; nothing is asserted.
"""

from __future__ import annotations

import contextlib
import json
import sys
import tempfile
import threading
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import click
from rich.console import Console
from rich.table import Table

from harness.analysis.synthetic import rate_for, write_synthetic_run
from harness.kernel.errors import ConfigError, HerdlabError
from harness.procs import spawn

#: Time per event at the largest size over that at the smallest: at most this is "linear".
LINEAR_RATIO = 1.1


def linearity(points: list[tuple[int, float]]) -> list[str]:
    """Lines saying whether ``points`` ((events, seconds), two sizes or more) grow linearly: the
    ratio of seconds per event at the largest size to the smallest, and the line through both."""
    pts = sorted(points)
    if len(pts) < 2 or pts[0][0] == pts[-1][0]:
        return []
    (n0, t0), (n1, t1) = pts[0], pts[-1]
    ratio = (t1 / n1) / (t0 / n0)
    verdict = "linear (no worse)" if ratio <= LINEAR_RATIO else "worse than linear"
    slope = (t1 - t0) / (n1 - n0)
    fixed = t0 - slope * n0
    out = [
        f"time per event at {n1:,} / at {n0:,}: {ratio:.2f} -> {verdict} (limit {LINEAR_RATIO})",
        f"line through both: {fixed:.1f} s + {slope * 1e6:.2f} s per million events",
    ]
    for n, t in pts[1:-1]:
        line = fixed + slope * n
        out.append(f"  {n:,} events: {t:.1f} s measured, {line:.1f} s on the line ({(t - line) / line:+.0%})")
    return out


def median_run(runs: list[tuple[Any, ...]]) -> tuple[Any, ...]:
    """The run (a tuple whose first item is its analysis time) with the median time: of an even
    number of runs the lower middle one, so that every figure shown is one run's, not a mean."""
    ordered = sorted(runs, key=lambda r: r[0])
    return ordered[(len(ordered) - 1) // 2]


def _tree_rss(pid: int) -> int:
    import psutil

    try:
        p = psutil.Process(pid)
        procs = [p, *p.children(recursive=True)]
    except psutil.Error:
        return 0
    total = 0
    for q in procs:
        with contextlib.suppress(psutil.Error):
            total += q.memory_info().rss
    return total


class _PeakSampler(threading.Thread):
    def __init__(self, pid: int, every: float = 0.2) -> None:
        super().__init__(daemon=True)
        self.pid, self.every, self.peak = pid, every, 0
        self._stop_flag = threading.Event()

    def run(self) -> None:
        while not self._stop_flag.is_set():
            self.peak = max(self.peak, _tree_rss(self.pid))
            self._stop_flag.wait(self.every)

    def stop(self) -> int:
        self._stop_flag.set()
        self.join()
        return self.peak


#: The main job's history (``herdlab demo``'s scenario), kept as test data by the analysis's
#: regression fixture: the bench's default real history.
MAIN_JOB_HISTORY = Path(__file__).resolve().parents[2] / "tests" / "data" / "regression" / "herd-small"


#: Below this many events the synthetic run is one case of 10 members, one repetition (2 units): the
#: full shape's control events alone (18 units of membership changes) are about 8 * 10^4.
SMALL_SHAPE_BELOW = 100_000


def synthetic_shape(size: int) -> dict[str, Any]:
    """The :func:`~harness.analysis.synthetic.write_synthetic_run` arguments for about ``size`` events:
    the ``herd`` shape (3 cases x 3 repetitions x 2 implementations), or below
    :data:`SMALL_SHAPE_BELOW` one case of 10 members, one repetition; the rate scaled to the size."""
    if size < SMALL_SHAPE_BELOW:
        return {"members": (10,), "repetitions": 1, "rate": rate_for(size, 2, 60.0)}
    return {"rate": rate_for(size, 18, 60.0)}


@dataclass
class Measured:
    """One analysis child's figures (``bench.json``) with its wall time and peak memory."""

    label: str
    events: int
    gen_s: float | None
    result: dict[str, Any]
    wall: float
    peak: int
    bare: float | None = None
    runs: list[float] = field(default_factory=list)


def _child_argv(
    run_dir: Path, out: Path, driver_memory: str, spark_master: str | None, *extra: str
) -> list[str]:
    """The command line of a bench child (:mod:`harness.analysis.bench`) writing ``out``."""
    argv = [sys.executable, "-m", "harness.analysis.bench", str(run_dir), str(out), *extra]
    argv += ["--driver-memory", driver_memory]
    return argv + (["--spark-master", spark_master] if spark_master else [])


def _child(
    argv: list[str], name: str, out: Path, log: Path, timeout: float
) -> tuple[dict[str, Any], float, int]:
    """Run one bench child (``argv``) to completion: its OUT_JSON, its wall time and peak RSS."""
    out.unlink(missing_ok=True)
    child = spawn(argv, name=name, log_path=log)
    sampler = _PeakSampler(child.pid)
    sampler.start()
    t1 = time.monotonic()
    try:
        code = child.wait(timeout)
    finally:
        wall = time.monotonic() - t1
        peak = sampler.stop()
        child.stop()
    if code != 0 or not out.exists():
        raise HerdlabError(f"{name} failed (exit {code}); see {log}")
    return json.loads(out.read_text()), wall, peak


@click.command("analysis")
@click.option(
    "--events",
    "sizes",
    multiple=True,
    type=int,
    default=(10_000, 1_000_000, 10_000_000),
    show_default=True,
    help="Sizes of the synthetic histories to measure (repeatable).",
)
@click.option(
    "--history",
    "histories",
    multiple=True,
    type=click.Path(file_okay=False, exists=True, path_type=Path),
    help="A real run directory (with history.parquet) to measure too (repeatable; default: the main job's "
    "history kept as test data).",
)
@click.option("--no-history", is_flag=True, help="Measure only the synthetic histories.")
@click.option(
    "--families/--no-families",
    default=True,
    show_default=True,
    help="Print each history's Spark jobs per family.",
)
@click.option("--spark-master", default=None, metavar="URL", help="Spark master (default local[2]).")
@click.option("--driver-memory", default="4g", show_default=True, help="spark.driver.memory of the child.")
@click.option(
    "--keep",
    type=click.Path(file_okay=False, path_type=Path),
    default=None,
    help="Keep the synthetic runs (and child logs) here instead of a temporary directory.",
)
@click.option(
    "--timeout", default=3600.0, show_default=True, help="Give up on one history after this many seconds."
)
@click.option(
    "--repeat",
    default=1,
    show_default=True,
    type=click.IntRange(min=1),
    help="Analyse each history this many times (a fresh child each); the table shows the median and range.",
)
def analysis(
    sizes: tuple[int, ...],
    histories: tuple[Path, ...],
    no_history: bool,
    families: bool,
    spark_master: str | None,
    driver_memory: str,
    keep: Path | None,
    timeout: float,
    repeat: int,
) -> None:
    """Analyse synthetic histories of each size and real runs: time, Spark jobs, memory, and the ratio
    to a bare Spark session (growth should be linear)."""
    console = Console(width=200)  # the table is wide: not folded into 80 columns in a log
    rows: list[Measured] = []
    archives: set[str | None] = set()
    real = [] if no_history else list(histories) or ([MAIN_JOB_HISTORY] if MAIN_JOB_HISTORY.is_dir() else [])
    for h in real:
        if not (h / "history.parquet").exists():
            raise ConfigError(f"--history {h}: no history.parquet there")
    with tempfile.TemporaryDirectory(prefix="herdlab-bench-analysis-") as tmp:
        root = keep or Path(tmp)
        targets: list[tuple[str, Path, float | None]] = []
        for size in sizes:
            t0 = time.monotonic()
            run = write_synthetic_run(root / f"e{size}", **synthetic_shape(size), run_id=f"bench-{size}")
            gen_s = time.monotonic() - t0
            console.print(f"{run.events:,} events written in {gen_s:.1f} s", highlight=False)
            targets.append((f"{run.events:,}", run.run_dir, gen_s))
        for h in real:
            targets.append((h.name, h, None))
        for n, (label, run_dir, gen_s) in enumerate(targets):
            logs = root / "logs" / f"{n}-{run_dir.name}"
            logs.mkdir(parents=True, exist_ok=True)
            argv = _child_argv(run_dir, logs / "bench.json", driver_memory, spark_master)
            console.print(f"{label}: analysing ...", highlight=False)
            runs = []
            for i in range(repeat):
                r, wall, peak = _child(
                    argv, f"bench-analysis {label}", logs / "bench.json", logs / "bench.log", timeout
                )
                runs.append((r["analysis_s"], r, wall, peak))
                archives.add(r.get("class_archive"))
                if repeat > 1:
                    console.print(
                        f"  run {i + 1} of {repeat}: analysis {r['analysis_s']:.1f} s", highlight=False
                    )
            _, r, wall, peak = median_run(runs)
            m = Measured(label, int(r["events"]), gen_s, r, wall, peak, runs=[x[0] for x in runs])
            _, m.bare, _ = _child(
                _child_argv(run_dir, logs / "bare.json", driver_memory, spark_master, "--bare"),
                f"bench-bare-session {label}",
                logs / "bare.json",
                logs / "bare.log",
                timeout,
            )
            console.print(
                f"  analysis {r['analysis_s']:.1f} s, child {wall:.1f} s, bare session {m.bare:.1f} s",
                highlight=False,
            )
            rows.append(m)
    console.print(_table(rows, spark_master, driver_memory, repeat))
    if repeat > 1:
        for m in rows:
            console.print(
                f"{m.label}: analysis {m.result['analysis_s']:.1f} s, median of {repeat} runs "
                f"(range {min(m.runs):.1f}-{max(m.runs):.1f} s)",
                highlight=False,
            )
    for line in linearity([(m.events, m.result["analysis_s"]) for m in rows if m.gen_s is not None]):
        console.print(line, highlight=False)
    if families:
        for m in rows:
            console.print(_family_table(m))
    console.print(archive_line(archives), highlight=False)


def _table(rows: list[Measured], spark_master: str | None, driver_memory: str, repeat: int) -> Table:
    t = Table(title=f"PySpark analysis ({spark_master or 'local[2]'}, driver memory {driver_memory})")
    for c in (
        "history",
        "events",
        "generate",
        "Spark start",
        "analysis" + (f" (median of {repeat}, range)" if repeat > 1 else ""),
        "per M events",
        "jobs (stages, tasks)",
        "jobs running / driver alone",
        "child wall",
        "bare session",
        "child / bare",
        "peak RSS (child + JVM)",
    ):
        t.add_column(c, justify="right")
    for m in rows:
        r = m.result
        ana = r["analysis_s"]
        t.add_row(
            "synthetic" if m.gen_s is not None else m.label,
            f"{m.events:,}",
            "-" if m.gen_s is None else f"{m.gen_s:.1f} s",
            f"{r['session_s']:.1f} s",
            f"{ana:.1f} s" + (f" ({min(m.runs):.1f}-{max(m.runs):.1f})" if repeat > 1 else ""),
            f"{ana / (m.events / 1e6):.2f} s" if m.events else "-",
            f"{r['jobs']} ({r['stages']}, {r['tasks']})",
            f"{r['busy_s']:.1f} s / {max(0.0, ana - r['busy_s']):.1f} s",
            f"{m.wall:.1f} s",
            f"{m.bare:.1f} s" if m.bare else "-",
            f"{m.wall / m.bare:.1f}x" if m.bare else "-",
            f"{m.peak / 2**20:,.0f} MiB",
        )
    return t


def _family_table(m: Measured) -> Table:
    """The Spark jobs of one history's analysis per family (job description), busiest first."""
    t = Table(title=f"Spark jobs per family: {m.label} ({m.events:,} events)")
    for c in ("family", "jobs", "stages", "tasks", "task time", "jobs running"):
        t.add_column(c, justify="right" if c != "family" else "left")
    fams = m.result.get("families") or {}
    for name, f in sorted(fams.items(), key=lambda kv: -kv[1]["busy_s"]):
        t.add_row(
            name,
            str(f["jobs"]),
            str(f["stages"]),
            str(f["tasks"]),
            f"{f['task_s']:.1f} s",
            f"{f['busy_s']:.1f} s",
        )
    return t


def archive_line(archives: set[str | None]) -> str:
    """Whether the children's JVMs mapped Spark's class archive (their ``class_archive`` values)."""
    used = sorted(a for a in archives if a)
    if not used:
        return "Spark class archive: none (herdlab spark archive writes it; Spark starts slower without)"
    if None in archives:
        return f"Spark class archive: used by some runs only ({', '.join(used)})"
    return f"Spark class archive: used ({', '.join(used)})"
