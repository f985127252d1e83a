"""``herdlab report RUN_DIR`` and ``herdlab compare BASELINE CURRENT``.

* ``report`` analyses a run's history with PySpark (local mode unless ``--spark-master``) and
  writes ``index.html``, ``summary.md``, ``metrics.json`` (and ``plots/``) into the run directory,
  then prints the verdict, the summary table, the alerts and the paths. ``--from-metrics``
  re-renders from an existing ``metrics.json`` without Spark. Exits 1 when the run is invalid:
  records lost, a tail not drained, a unit failed, or the run was interrupted.
* ``compare`` checks CURRENT against BASELINE (run directories with ``metrics.json``, or the files
  themselves) and exits 1 on any regression (see :mod:`harness.report.compare`), each with its own
  message; ``--junit FILE`` writes the comparison as JUnit XML for CI.

Both are click commands named ``report`` and ``compare`` (registered by :mod:`harness.cli`).
"""

from __future__ import annotations

from collections import Counter
from pathlib import Path
from typing import Any

import click
from rich.console import Console
from rich.table import Table

console = Console()
if not console.is_terminal:
    console = Console(width=200)


@click.command("report")
@click.argument("run_dir", type=click.Path(file_okay=False, path_type=Path))
@click.option(
    "--spark-master",
    default=None,
    metavar="URL",
    help="Spark master to run the analysis on (default: local[2]), e.g. spark://host:7077; "
    "the executors must be able to read RUN_DIR (shared storage).",
)
@click.option(
    "--from-metrics",
    is_flag=True,
    help="Re-render from the run's metrics.json instead of analysing the history again.",
)
@click.option(
    "--json",
    "as_json",
    is_flag=True,
    help="Print the verdict and the report paths as JSON on stdout; everything else goes to stderr.",
)
def report(run_dir: Path, spark_master: str | None, from_metrics: bool, as_json: bool = False) -> None:
    """Analyse RUN_DIR (a `herdlab run` output) and write its reports.

    Writes index.html (offline, plots embedded), summary.md and metrics.json into RUN_DIR and
    prints the verdict and the summary table. Exits 1 if the run is invalid: records lost (skipped),
    a tail not drained, a unit failed, or the run was interrupted. With --json, stdout carries one
    JSON object: run_dir, verdict (valid: true, false or "unknown"; reasons; line) and paths
    (json, markdown, html, plots).
    """
    from harness.cli.jsonout import emit, stdout_to_stderr, verdict_summary
    from harness.run.session import is_valid

    with stdout_to_stderr(as_json):
        metrics, paths = publish_metrics(run_dir, spark_master=spark_master, from_metrics=from_metrics)
    if as_json:
        emit(
            {
                "run_dir": str(run_dir),
                "verdict": verdict_summary(metrics),
                "paths": {k: str(v) for k, v in paths.items()},
            }
        )
    if not is_valid(metrics):
        raise SystemExit(1)


def publish(run_dir: Path, spark_master: str | None = None, from_metrics: bool = False) -> bool:
    """Analyse ``run_dir`` (or re-read its metrics.json), write its reports, print the verdict, the
    summary table, the alerts and the report paths. Returns True when the run is invalid (records
    lost, a tail not drained, a unit failed, or the run was interrupted)."""
    from harness.run.session import is_valid

    metrics, _ = publish_metrics(run_dir, spark_master=spark_master, from_metrics=from_metrics)
    return not is_valid(metrics)


def publish_metrics(
    run_dir: Path, spark_master: str | None = None, from_metrics: bool = False
) -> tuple[dict[str, Any], dict[str, Path]]:
    """What :func:`publish` does; returns the metrics and the report paths (keys of
    :func:`harness.report.render_report`)."""
    from harness.report.terminal import summary_table, verdict_panel
    from harness.run.session import analyse, render

    if from_metrics:
        metrics = analyse(run_dir, from_metrics=True)
    else:
        with console.status("analysing the history with Spark ..."):
            metrics = analyse(run_dir, spark_master=spark_master)
    paths = render(run_dir, metrics)
    console.print(verdict_panel(metrics))
    console.print(summary_table(metrics))
    for a in metrics.get("alerts") or []:
        style = "bold red" if a.startswith(("LOST", "NOT DRAINED")) else "yellow"
        console.print(f"[{style}]{a}[/{style}]", highlight=False)
    console.print(
        f"report: {paths['html']}\n        {paths['markdown']}\n        {paths['json']}", highlight=False
    )
    return metrics, paths


@click.command("compare")
@click.argument("baseline", type=click.Path(path_type=Path))
@click.argument("current", type=click.Path(path_type=Path))
@click.option(
    "--tolerance",
    "tolerances",
    multiple=True,
    metavar="FRACTION|METRIC=FRACTION",
    help="Allowed relative increase (default 0.1 = 10%); METRIC=FRACTION for one metric, e.g. latency_s=0.25. Repeatable.",
)
@click.option(
    "--abs-tolerance",
    type=float,
    default=None,
    help="Absolute slack on top of the relative tolerance (default: 0.05 s for times, 0 for counts).",
)
@click.option(
    "--stat",
    type=click.Choice(["p50", "p95", "p99", "max", "mean"]),
    default="p50",
    show_default=True,
    help="Which statistic over repetitions to compare (a mean with a never in its sample reads never).",
)
@click.option(
    "--junit", type=click.Path(dir_okay=False, path_type=Path), default=None, help="Write JUnit XML here."
)
@click.option("--all", "show_all", is_flag=True, help="List every compared metric, not only regressions.")
def compare(
    baseline: Path,
    current: Path,
    tolerances: tuple[str, ...],
    abs_tolerance: float | None,
    stat: str,
    junit: Path | None,
    show_all: bool,
) -> None:
    """Compare CURRENT against BASELINE; exit 1 on a regression.

    Each is a run directory holding metrics.json (write it with `herdlab report`) or a
    metrics.json file. Lower is better for every compared metric. Whatever the tolerance, these
    are regressions too: more repetitions that never settled, a failed or missing unit, fewer
    repetitions than the baseline, any lost record or undrained tail in CURRENT, and (with
    --stat mean) a mean that had to leave a never out.
    """
    from harness.report import load_metrics
    from harness.report.compare import compare as run_compare
    from harness.report.compare import junit_xml, parse_tolerances

    default, per = parse_tolerances(tolerances)
    result = run_compare(load_metrics(baseline), load_metrics(current), default, per, stat, abs_tolerance)
    rows = result.changes if show_all else result.regressions
    if rows:
        t = Table(title=f"{'comparison' if show_all else 'regressions'}: {current} against {baseline}")
        t.add_column("", justify="left")
        t.add_column("what moved", justify="left")
        for c in rows:
            t.add_row("[bold red]REGRESSION[/bold red]" if c.regressed else "ok", c.message)
        console.print(t)
    if junit is not None:
        console.print(f"JUnit XML: {junit_xml(result, junit)}", highlight=False)
    n, k = len(result.changes), len(result.regressions)
    if k:
        kinds = Counter(c.kind for c in result.regressions)
        what = ", ".join(f"{v} {KIND_LABELS.get(kind, kind)}" for kind, v in kinds.items())
        console.print(
            f"[bold red]{k} regression{'s' if k != 1 else ''}[/bold red] among {n} checks ({what})",
            highlight=False,
        )
        raise SystemExit(1)
    console.print(f"no regression among {n} checks ({stat}, tolerance {default:g})", highlight=False)


KIND_LABELS = {
    "stat": "statistics",
    "missing": "missing metrics",
    "never": "rising never counts",
    "lost": "units with lost records",
    "not_drained": "units not drained",
    "failed": "failed units",
    "missing_unit": "missing units",
    "repetitions": "fewer repetitions",
    "interrupted": "interrupted run",
}
