"""``herdlab bench analysis``: time and peak memory of the PySpark analysis at 1, 3, 10 M events.

For each size a synthetic ``herd``-shaped run (:mod:`harness.analysis.synthetic`: 3 cases x 2
implementations x 3 repetitions, the producer rate scaled to reach the size) is written to a
temporary directory, then analysed in a child process of its own (a fresh JVM per size:
``python -m harness.analysis.bench``). Reported per size: generation time, Spark start, analysis
time, time per million events, the Spark jobs and stages the analysis ran, and the peak resident
memory of the child and its JVM together (sampled every 0.2 s). With ``--repeat N`` each size's
history is analysed N times, each time by a fresh child, and the table shows the median analysis
time with its range (this machine's speed varies by a third between hours: one run says little);
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
from pathlib import Path
from typing import Any

import click
from rich.console import Console
from rich.table import Table

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


@click.command("analysis")
@click.option(
    "--events",
    "sizes",
    multiple=True,
    type=int,
    default=(1_000_000, 3_000_000, 10_000_000),
    show_default=True,
    help="History sizes to measure (repeatable).",
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
    "--timeout", default=3600.0, show_default=True, help="Give up on one size after this many seconds."
)
@click.option(
    "--repeat",
    default=1,
    show_default=True,
    type=click.IntRange(min=1),
    help="Analyse each size this many times (a fresh child each); the table shows the median and range.",
)
def analysis(
    sizes: tuple[int, ...],
    spark_master: str | None,
    driver_memory: str,
    keep: Path | None,
    timeout: float,
    repeat: int,
) -> None:
    """Aggregate synthetic histories of each size: time and peak memory (growth should be linear)."""
    from harness.analysis.synthetic import rate_for, write_synthetic_run
    from harness.kernel.errors import HerdlabError

    console = Console()
    rows = []
    archives: set[str | None] = set()
    with tempfile.TemporaryDirectory(prefix="herdlab-bench-analysis-") as tmp:
        root = keep or Path(tmp)
        for size in sizes:
            t0 = time.monotonic()
            run = write_synthetic_run(
                root / f"e{size}", rate=rate_for(size, 18, 60.0), run_id=f"bench-{size}"
            )
            gen_s = time.monotonic() - t0
            out = run.run_dir / "bench.json"
            argv = [
                sys.executable,
                "-m",
                "harness.analysis.bench",
                str(run.run_dir),
                str(out),
                "--driver-memory",
                driver_memory,
            ]
            if spark_master:
                argv += ["--spark-master", spark_master]
            console.print(f"{run.events:,} events written in {gen_s:.1f} s; analysing ...", highlight=False)
            runs = []
            for i in range(repeat):
                out.unlink(missing_ok=True)
                child = spawn(argv, name=f"bench-analysis-{size}", log_path=run.run_dir / "bench.log")
                sampler = _PeakSampler(child.pid)
                sampler.start()
                t1 = time.monotonic()
                code = child.wait(timeout)
                wall = time.monotonic() - t1
                peak = sampler.stop()
                child.stop()
                if code != 0 or not out.exists():
                    raise HerdlabError(
                        f"analysis of {size} events failed (exit {code}); see {run.run_dir / 'bench.log'}"
                    )
                r = json.loads(out.read_text())
                runs.append((r["analysis_s"], r["session_s"], r.get("jobs"), r.get("stages"), wall, peak))
                archives.add(r.get("class_archive"))
                if repeat > 1:
                    console.print(
                        f"  run {i + 1} of {repeat}: analysis {r['analysis_s']:.1f} s", highlight=False
                    )
            lo, hi = min(x[0] for x in runs), max(x[0] for x in runs)
            ana, sess, jobs, stages, wall, peak = median_run(runs)
            rows.append((run.events, gen_s, sess, ana, (lo, hi), jobs, stages, wall, peak))
    t = Table(
        title=f"PySpark analysis of synthetic histories ({spark_master or 'local[2]'}, driver memory {driver_memory})"
    )
    for c in (
        "events",
        "generate",
        "Spark start",
        "analysis" + (f" (median of {repeat}, range)" if repeat > 1 else ""),
        "analysis per M events",
        "Spark jobs (stages)",
        "child wall",
        "peak RSS (child + JVM)",
    ):
        t.add_column(c, justify="right")
    for events, gen_s, sess, ana, (lo, hi), jobs, stages, wall, peak in rows:
        t.add_row(
            f"{events:,}",
            f"{gen_s:.1f} s",
            f"{sess:.1f} s",
            f"{ana:.1f} s" + (f" ({lo:.1f}-{hi:.1f})" if repeat > 1 else ""),
            f"{ana / (events / 1e6):.2f} s",
            f"{jobs} ({stages})",
            f"{wall:.1f} s",
            f"{peak / 2**20:,.0f} MiB",
        )
    console.print(t)
    if repeat > 1:
        for events, _, _, ana, (lo, hi), *_ in rows:
            console.print(
                f"{events:,} events: analysis {ana:.1f} s, median of {repeat} runs (range {lo:.1f}-{hi:.1f} s)",
                highlight=False,
            )
    for line in linearity([(r[0], r[3]) for r in rows]):
        console.print(line, highlight=False)
    console.print(archive_line(archives), highlight=False)


def archive_line(archives: set[str | None]) -> str:
    """Whether the children's JVMs mapped Spark's class archive (their ``class_archive`` values)."""
    used = sorted(a for a in archives if a)
    if not used:
        return "Spark class archive: none (herdlab spark archive writes it; Spark starts slower without)"
    if None in archives:
        return f"Spark class archive: used by some runs only ({', '.join(used)})"
    return f"Spark class archive: used ({', '.join(used)})"
