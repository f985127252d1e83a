"""PySpark analysis of run histories: the one checker of docs/concepts.md.

* :func:`analyze_run` (``harness.analysis.analyze``): a run directory in, the metrics dict out.
* :mod:`.definitions`: what every metric means (printed by the reports).
* the Spark jobs, one module per metric family of :mod:`.definitions`, each with its part of the
  metrics document: :mod:`.latency` (trigger windows, latency, resumed, gaps), :mod:`.herd`,
  :mod:`.steady` (steady-state traffic), :mod:`.split_brain` (overlap episodes), :mod:`.records`
  (lost, not drained, duplicates), :mod:`.commits` (non-owner, stale, rejected), :mod:`.health`
  (session failures), :mod:`.cooperative` (partitions that never stopped); on the history as :mod:`.frames` splits it and the per-unit fold of
  :mod:`.facts`. :mod:`.units` assembles each unit's entry, :mod:`.series` the plot series,
  :mod:`.document` the metrics document (``herdlab-metrics/2``), :mod:`.analyze` drives them.
* :mod:`.spark`: the session factory; :mod:`.load`: input checks; :mod:`.aggregate`,
  :mod:`.stats`, :mod:`.verdict`: statistics over repetitions; :mod:`.coordinators`: the
  brokers side by side; :mod:`.synthetic`: synthetic
  histories for tests and the benchmark.

Importing this package does not import pyspark; :func:`analyze_run` does.
"""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from harness.analysis.metrics_model import MetricsDocument

from harness.analysis.analyze import analyze_run as _analyze_run


def analyze_run(run_dir: str | Path, spark_master: str | None = None) -> MetricsDocument:
    """Analyse ``run_dir`` (see :mod:`harness.analysis.analyze`); returns the metrics dict."""
    return _analyze_run(run_dir, spark_master)


__all__ = ["analyze_run"]
