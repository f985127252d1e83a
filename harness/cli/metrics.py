"""``herdlab metrics ...``: the metrics.json contract.

* ``herdlab metrics schema`` prints the JSON Schema of ``metrics.json``
  (:mod:`harness.analysis.metrics_schema`);
* ``herdlab metrics check PATH`` validates a run directory's ``metrics.json`` (or the file) against
  it: exit 0 when it conforms, else one line per error on stderr and exit 1.
"""

from __future__ import annotations

import json
from pathlib import Path

import click

from harness.analysis.metrics_schema import metrics_schema, validate_metrics
from harness.report import load_metrics


@click.group("metrics")
def metrics() -> None:
    """The metrics.json contract: its JSON Schema, and a check of a file against it."""


@metrics.command("schema")
def schema() -> None:
    """Print the JSON Schema (draft 2020-12) of metrics.json."""
    click.echo(json.dumps(metrics_schema(), indent=1))


@metrics.command("check")
@click.argument("path", type=click.Path(path_type=Path))
def check(path: Path) -> None:
    """Check PATH (a run directory or a metrics.json) against the schema; exit 1 if it does not conform."""
    errors = validate_metrics(load_metrics(path))
    for e in errors:
        click.echo(f"{path}: {e}", err=True)
    if errors:
        raise SystemExit(1)
    click.echo(f"{path}: conforms to the metrics.json schema")
