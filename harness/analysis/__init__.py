"""PySpark analysis of run histories: the one checker of design.md.

* :func:`analyze_run` (``harness.analysis.analyze``): a run directory in, the metrics dict out.
* :mod:`.definitions`: what every metric means (printed by the reports).
* :mod:`.jobs`: the Spark jobs; :mod:`.spark`: the session factory; :mod:`.load`: input checks;
  :mod:`.stats`: confidence intervals; :mod:`.synthetic`: synthetic histories for tests and the
  benchmark.

Importing this package does not import pyspark; :func:`analyze_run` does.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any


def analyze_run(run_dir: str | Path, spark_master: str | None = None) -> dict[str, Any]:
    """Analyse ``run_dir`` (see :mod:`harness.analysis.analyze`); returns the metrics dict."""
    from harness.analysis.analyze import analyze_run as _analyze_run

    return _analyze_run(run_dir, spark_master)


__all__ = ["analyze_run"]
