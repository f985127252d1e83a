"""Running a migration scenario end to end for a test, as ``herdlab run`` does: the run on a local cluster
of its own (:func:`run_scenario`), the PySpark checker and the report."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from harness.history.schema import read_parquet
from harness.history.writer import read_events
from harness.run.runner import RunOptions, run_scenario
from harness.run.session import analyse, render
from harness.scenario import load_scenario


def run_migration(
    scenario: str | Path, out: Path, overrides: tuple[str, ...] = ()
) -> tuple[list[dict[str, Any]], dict[str, Any], dict[str, list[dict[str, Any]]]]:
    """Run ``scenario`` (a built-in name or a TOML file, with ``--set`` ``overrides``; one unit) into ``out``,
    analyse and report it.
    Returns its history (``history.parquet`` as dicts), its metrics document with ``summary_md`` (the
    summary's text) added, and each member's own JSON-lines history by name (``m*``, ``c*``, ``k*``, ``r*``: the
    ``impl`` a member wrote is only there, the merged history carries the unit's)."""
    result = run_scenario(load_scenario(str(scenario), overrides), RunOptions(out=out))
    assert len(result.units) == 1
    assert "failed" not in result.units[0], result.units[0].get("failed")
    metrics = analyse(result.run_dir)
    paths = render(result.run_dir, metrics)
    (events_dir,) = (result.run_dir / "units").glob("*/events")
    members = {
        p.stem: read_events(p)
        for p in sorted(events_dir.glob("*.jsonl"))
        if p.stem[0] in "mcrk" and p.stem[1:].isdigit()
    }
    metrics = {**metrics, "summary_md": paths["markdown"].read_text()}
    return read_parquet(result.run_dir / "history.parquet"), metrics, members
