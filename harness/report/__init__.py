"""Reports of a run: ``index.html`` (offline, plots embedded), ``summary.md``, ``metrics.json``.

:func:`render_report` writes them into the run directory from the dict
:func:`harness.analysis.analyze_run` returns; :mod:`.compare` checks a run against a baseline;
:mod:`.terminal` has the summary table printed at the end of ``herdlab run`` and ``herdlab report``.
"""

from __future__ import annotations

import json
import os
from pathlib import Path
from typing import cast

from harness.analysis.metrics_model import MetricsDocument
from harness.kernel.errors import ConfigError
from harness.report.hdr import write_hlogs
from harness.report.simulation import annotate

METRICS_JSON = "metrics.json"
SUMMARY_MD = "summary.md"
INDEX_HTML = "index.html"
PLOTS_DIR = "plots"


def _write(path: Path, text: str | bytes) -> None:
    """Write atomically (a reader never sees half a report)."""
    tmp = path.with_name(path.name + ".tmp")
    if isinstance(text, bytes):
        tmp.write_bytes(text)
    else:
        tmp.write_text(text, encoding="utf-8")
    os.replace(tmp, path)


def render_report(run_dir: str | Path, metrics: MetricsDocument) -> dict[str, Path]:
    """Write ``metrics.json``, ``summary.md``, ``index.html``, ``plots/*.png`` and ``hdr/*.hlog``
    (:mod:`.hdr`) into ``run_dir``.

    Returns the paths: keys ``json``, ``markdown``, ``html`` and ``plots`` (the directory).
    Rendering computes nothing: every number comes from ``metrics``.
    """
    import matplotlib

    matplotlib.use("Agg")
    # deferred: start-up: matplotlib loads only when reports are rendered
    from harness.report.html import render_html
    from harness.report.markdown import render_markdown
    from harness.report.plots import all_plots

    d = Path(run_dir)
    if not d.is_dir():
        raise ConfigError(f"{d} is not a directory")
    annotate(d, metrics)  # a simulated run says so (metrics.json, summary.md, index.html, the terminal)
    plots = all_plots(metrics)
    pdir = d / PLOTS_DIR
    pdir.mkdir(exist_ok=True)
    for old in pdir.glob("*.png"):
        old.unlink()
    for p in plots:
        _write(pdir / f"{p.name}.png", p.png)
    paths = {"json": d / METRICS_JSON, "markdown": d / SUMMARY_MD, "html": d / INDEX_HTML, "plots": pdir}
    _write(paths["json"], json.dumps(metrics, indent=1, sort_keys=False, default=str) + "\n")
    _write(paths["markdown"], render_markdown(metrics, plots, PLOTS_DIR))
    _write(paths["html"], render_html(metrics, plots, SUMMARY_MD))
    write_hlogs(d, metrics)  # the end-to-end latency's HdrHistogram logs, hdr/*.hlog
    return paths


def load_metrics(path: str | Path) -> MetricsDocument:
    """``metrics.json`` from a run directory or a file; one-line errors."""
    p = Path(path)
    if p.is_dir():
        p = p / METRICS_JSON
        if not p.exists():
            raise ConfigError(f"no {METRICS_JSON} in {p.parent}: run `herdlab report {p.parent}` first")
    if not p.exists():
        raise ConfigError(f"{p} does not exist")
    try:
        data = json.loads(p.read_text(encoding="utf-8"))
    except (OSError, ValueError) as e:
        raise ConfigError(f"{p} is not valid JSON ({str(e).splitlines()[0]})") from None
    if not isinstance(data, dict) or not str(data.get("format", "")).startswith("herdlab-metrics/"):
        raise ConfigError(f"{p} is not a herdlab metrics file (no herdlab-metrics format tag)")
    return cast(MetricsDocument, data)  # read as the model; only its format tag is checked here


__all__ = ["render_report", "load_metrics"]
