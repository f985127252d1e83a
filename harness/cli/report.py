"""``herdlab report RUN_DIR`` and ``herdlab compare BASELINE CURRENT``.

* ``report`` analyses a run's history with PySpark (local mode unless ``--spark-master``) and
  writes ``index.html``, ``summary.md``, ``metrics.json`` (and ``plots/``) into the run directory
  (the Spark JVM's own output into ``spark.log`` there), then prints the verdict, the summary table
  (its narrow columns, every one with ``--wide``), the alerts and the paths. ``--from-metrics``
  re-renders from an existing ``metrics.json`` without Spark. Exits 1 when the run is invalid:
  records lost, a tail not drained, a unit failed, or the run was interrupted.
* ``compare`` checks CURRENT against BASELINE (a baseline name of the store, run directories with
  ``metrics.json``, or the files themselves) by a Mann-Whitney U test of the repetitions (see
  :mod:`harness.report.compare`) and exits 0 on a pass, 1 on any regression, 3 when inconclusive
  (2 on usage errors); ``--junit FILE`` writes the comparison as JUnit XML for CI, ``--json`` prints
  it as JSON on stdout (nothing else on stdout).

Both are click commands named ``report`` and ``compare`` (registered by :mod:`harness.cli`).
"""

from __future__ import annotations

from collections import Counter
from pathlib import Path
from typing import TYPE_CHECKING

import click
from rich.table import Table

from harness.cli.jsonout import emit, stdout_to_stderr, verdict_summary
from harness.cli.output import OutputConsole
from harness.kernel.errors import ConfigError
from harness.report import load_metrics
from harness.report.baseline import exists, metrics_path, store_dir
from harness.run.session import analyse, is_valid, render

if TYPE_CHECKING:
    from harness.analysis.metrics_model import MetricsDocument
    from harness.report.compare import Comparison

console = OutputConsole()


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
@click.option(
    "--wide",
    is_flag=True,
    help="Every column of the summary tables, cells whole even past the terminal's edge (default: the "
    "narrow columns, fitted to the terminal's width, or to $COLUMNS, else 120, when not printing to one).",
)
def report(
    run_dir: Path, spark_master: str | None, from_metrics: bool, as_json: bool = False, wide: bool = False
) -> None:
    """Analyse RUN_DIR (a `herdlab run` output) and write its reports.

    Writes index.html (offline, plots embedded), summary.md and metrics.json into RUN_DIR (Spark's
    own output goes to RUN_DIR/spark.log) and prints the verdict and the summary table (its narrow
    columns; --wide for every one). Exits 1 if the run is invalid: records lost (skipped), a tail
    not drained, a unit failed, or the run was interrupted. With --json, stdout carries one
    JSON object: run_dir, verdict (valid: true, false or "unknown"; reasons; line) and paths
    (json, markdown, html, plots).
    """
    with stdout_to_stderr(as_json):
        metrics, paths = publish_metrics(
            run_dir, spark_master=spark_master, from_metrics=from_metrics, wide=wide
        )
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


def publish(
    run_dir: Path, spark_master: str | None = None, from_metrics: bool = False, wide: bool = False
) -> bool:
    """Analyse ``run_dir`` (or re-read its metrics.json), write its reports, print the verdict, the
    summary table (every column with ``wide``), the alerts and the report paths. Returns True when
    the run is invalid (records lost, a tail not drained, a unit failed, or the run was interrupted)."""
    metrics, _ = publish_metrics(run_dir, spark_master=spark_master, from_metrics=from_metrics, wide=wide)
    return not is_valid(metrics)


def publish_metrics(
    run_dir: Path, spark_master: str | None = None, from_metrics: bool = False, wide: bool = False
) -> tuple[MetricsDocument, dict[str, Path]]:
    """What :func:`publish` does; returns the metrics and the report paths (keys of
    :func:`harness.report.render_report`)."""
    # deferred: start-up: the terminal report (report tables) loads only when a run is reported
    from harness.report.terminal import terminal_report

    if from_metrics:
        metrics = analyse(run_dir, from_metrics=True)
    else:
        with console.status("analysing the history with Spark ..."):
            metrics = analyse(run_dir, spark_master=spark_master)
    paths = render(run_dir, metrics)
    console.print(terminal_report(metrics, wide=wide), crop=False)  # --wide may be wider than the terminal
    for a in metrics.get("alerts") or []:
        style = "bold red" if a.startswith(("LOST", "NOT DRAINED")) else "yellow"
        console.print(f"[{style}]{a}[/{style}]", highlight=False)
    console.print(
        f"report: {paths['html']}\n        {paths['markdown']}\n        {paths['json']}", highlight=False
    )
    return metrics, paths


@click.command("compare")
@click.argument("baseline")
@click.argument("current", type=click.Path(path_type=Path))
@click.option(
    "--tolerance",
    "tolerances",
    multiple=True,
    metavar="FRACTION|METRIC=FRACTION",
    help="Allowed relative change of the median (default 0.1 = 10%); METRIC=FRACTION for one metric, e.g. latency_s=0.25. Repeatable.",
)
@click.option(
    "--abs-tolerance",
    type=float,
    default=None,
    help="Absolute slack on top of the relative tolerance (default: 0.05 s for times, 0 for counts).",
)
@click.option(
    "--alpha",
    type=float,
    default=0.05,
    show_default=True,
    help="Significance level of the two-sided Mann-Whitney U test of the repetitions.",
)
@click.option(
    "--min-repetitions",
    type=int,
    default=5,
    show_default=True,
    help="Fewer repetitions than this on either side make a metric inconclusive (exit 3), never a pass.",
)
@click.option(
    "--stat",
    type=click.Choice(["p50", "p95", "p99", "max", "mean"]),
    default=None,
    help="Instead of the test: compare this one statistic over repetitions (the check older herdlab "
    "versions made; a mean with a never in its sample reads never). Below --min-repetitions a pass is "
    "still inconclusive.",
)
@click.option(
    "--store",
    type=click.Path(file_okay=False, path_type=Path),
    default=None,
    help="Baseline store for BASELINE given as a name (default: $HERDLAB_BASELINES, else reports/baselines).",
)
@click.option(
    "--junit", type=click.Path(dir_okay=False, path_type=Path), default=None, help="Write JUnit XML here."
)
@click.option(
    "--json", "as_json", is_flag=True, help="Print the verdict and every check as JSON on stdout (only that)."
)
@click.option(
    "--all", "show_all", is_flag=True, help="List every check, not only regressions and improvements."
)
@click.option(
    "--inconclusive-ok",
    is_flag=True,
    help="Exit 0 instead of 3 when the comparison is inconclusive (a regression still exits 1).",
)
def compare(
    baseline: str,
    current: Path,
    tolerances: tuple[str, ...],
    abs_tolerance: float | None,
    alpha: float,
    min_repetitions: int,
    stat: str | None,
    store: Path | None,
    junit: Path | None,
    as_json: bool,
    show_all: bool,
    inconclusive_ok: bool,
) -> None:
    """Compare CURRENT against BASELINE; exit 0 pass, 1 regression, 3 inconclusive (0 with
    --inconclusive-ok).

    BASELINE is a baseline name (`herdlab baseline save`), a run directory holding metrics.json
    (write it with `herdlab report`) or a metrics.json file; CURRENT a run directory or a
    metrics.json file. Per implementation, case, trigger and metric (lower is better for every
    compared one) the repetitions are compared by a two-sided Mann-Whitney U test: a regression
    when p < --alpha and the median rose beyond the tolerance, an improvement when p < --alpha and
    it fell beyond it; fewer than --min-repetitions on either side is inconclusive. A repetition
    that never settled counts as +infinity. Whatever the statistics, these are regressions too:
    more repetitions that never settled, a failed or missing unit, fewer repetitions than the
    baseline, any lost record or undrained tail in CURRENT. An inconclusive comparison says what to
    run next: how many repetitions, and about how long that takes.
    """
    import json

    # deferred: start-up: the comparison (xml) loads only for `herdlab compare`
    from harness.report.compare import INCONCLUSIVE, junit_xml, next_step, parse_tolerances, to_json
    from harness.report.compare import compare as run_compare

    default, per = parse_tolerances(tolerances)
    base_doc, cur_doc = _load_baseline(baseline, store), load_metrics(current)
    result = run_compare(
        base_doc,
        cur_doc,
        default,
        per,
        stat,
        abs_tolerance,
        alpha=alpha,
        min_repetitions=min_repetitions,
    )
    exit_code = 0 if inconclusive_ok and result.verdict == INCONCLUSIVE else result.exit_code
    advice = next_step(result, base_doc, cur_doc)
    out = OutputConsole(stderr=True) if as_json else console
    if as_json:
        click.echo(json.dumps({**to_json(result), "exit_code": exit_code, "next_step": advice}, indent=1))
    else:
        rows = result.changes if show_all else [c for c in result.changes if c.verdict in SHOWN]
        if rows:
            t = Table(title=f"{'comparison' if show_all else 'findings'}: {current} against {baseline}")
            t.add_column("", justify="left")
            t.add_column("what moved", justify="left")
            for c in rows:
                t.add_row(VERDICT_LABELS.get(c.verdict, c.verdict), c.message)
            console.print(t)
    if junit is not None:
        out.print(f"JUnit XML: {junit_xml(result, junit)}", highlight=False)
    if not as_json:
        _print_verdict(result, stat, default)
    if advice is not None:
        click.echo(advice, err=as_json)  # one line, unwrapped: it holds a command to copy
    if exit_code:
        raise SystemExit(exit_code)


def _load_baseline(arg: str, store: Path | None) -> MetricsDocument:
    """BASELINE as a path when it exists, else as a baseline name of the store."""
    p = Path(arg)
    if p.exists() or "/" in arg or "\\" in arg:
        return load_metrics(p)
    if exists(arg, store):
        return load_metrics(metrics_path(arg, store))

    raise ConfigError(
        f"{arg!r} is neither a run directory, a metrics.json nor a baseline in {store_dir(store)} "
        "(see `herdlab baseline list`)"
    )


def _print_verdict(result: Comparison, stat: str | None, tolerance: float) -> None:
    """The closing line: the verdict, the counts and the test used."""
    n, k = len(result.changes), len(result.regressions)
    how = f"{result.test}, alpha {result.alpha:g}" if stat is None else result.test
    how += f", tolerance {tolerance:g}, at least {result.min_repetitions} repetitions"
    if k:
        kinds = Counter(c.kind for c in result.regressions)
        what = ", ".join(f"{v} {KIND_LABELS.get(kind, kind)}" for kind, v in kinds.items())
        console.print(
            f"[bold red]{k} regression{'s' if k != 1 else ''}[/bold red] among {n} checks ({what}); {how}",
            highlight=False,
        )
    elif result.inconclusive:
        console.print(
            f"[yellow]inconclusive[/yellow]: no regression among {n} checks, but "
            f"{len(result.inconclusive)} inconclusive (too few repetitions; --all lists them); {how}",
            highlight=False,
        )
    else:
        better = len(result.improvements)
        extra = f", {better} improved" if better else ""
        console.print(f"no regression among {n} checks{extra}; {how}", highlight=False)


#: Verdicts listed without --all (inconclusive checks are counted in the closing line).
SHOWN = ("regression", "improvement")
VERDICT_LABELS = {
    "regression": "[bold red]REGRESSION[/bold red]",
    "inconclusive": "[yellow]INCONCLUSIVE[/yellow]",
    "improvement": "[green]IMPROVED[/green]",
    "pass": "ok",
}
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
