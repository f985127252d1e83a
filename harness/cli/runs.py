"""``herdlab runs list`` and the ``latest`` link of a scenario's runs.

Contract
--------
* A run directory is ``OUT/<scenario>/<run-id>/`` holding ``manifest.json`` whose ``run_id`` is
  ``<run-id>`` (what ``run`` and ``simulate`` write); anything else under OUT (a ``latest`` link,
  a baseline store, stray files) is not a run.
* :func:`update_latest` points ``OUT/<scenario>/latest`` at a run directory: a relative symlink
  (``latest -> <run-id>``) made under a temporary name and renamed over the old one, so a reader
  always finds a whole link, the old or the new. ``run`` and ``simulate`` call it once the run's
  history and manifest are written (before the analysis: the newest run is ``latest`` even when its
  analysis fails); a run stopped by Ctrl-C leaves the link as it was.
* :func:`list_runs` returns one dict per run directory, newest first (by ``started``, then run
  id): ``run_id``, ``scenario``, ``started``, ``finished``, ``units`` (the manifest's count),
  ``failed_units``, ``interrupted``, ``simulated``, ``verdict`` (``metrics.json``'s
  ``verdict.valid``: true, false or "unknown"; None when the run has not been analysed) and ``path``.
  A results directory that does not exist yet holds no run: the list is empty (``--json`` prints
  ``[]``); a path that exists and is not a directory is a user error.
"""

from __future__ import annotations

import json
import os
import secrets
from pathlib import Path
from typing import Any

import click
from rich.table import Table

from harness.cli.output import OutputConsole
from harness.kernel.errors import ConfigError

LATEST = "latest"
MANIFEST = "manifest.json"
METRICS = "metrics.json"


def update_latest(run_dir: Path) -> Path:
    """Point ``run_dir.parent / "latest"`` at ``run_dir`` atomically (see the contract); the link's path."""
    link = run_dir.parent / LATEST
    tmp = run_dir.parent / f".{LATEST}.{os.getpid()}.{secrets.token_hex(3)}"
    os.symlink(run_dir.name, tmp, target_is_directory=True)
    try:
        os.replace(tmp, link)
    except OSError:
        tmp.unlink(missing_ok=True)
        raise
    return link


def _read_json(path: Path) -> dict[str, Any] | None:
    try:
        data = json.loads(path.read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return None
    return data if isinstance(data, dict) else None


def run_entry(run_dir: Path) -> dict[str, Any] | None:
    """The listing entry of ``run_dir`` (see the contract), None when it is not a run directory."""
    man = _read_json(run_dir / MANIFEST)
    if man is None or man.get("run_id") != run_dir.name:
        return None
    scenario = man.get("scenario")
    units = man.get("units") or []
    metrics = _read_json(run_dir / METRICS)
    verdict = ((metrics or {}).get("verdict") or {}).get("valid")
    return {
        "run_id": man.get("run_id"),
        "scenario": scenario.get("name") if isinstance(scenario, dict) else run_dir.parent.name,
        "started": man.get("started"),
        "finished": man.get("finished"),
        "units": len(units),
        "failed_units": sum(1 for u in units if isinstance(u, dict) and u.get("failed")),
        "interrupted": bool(man.get("interrupted")),
        "simulated": bool(man.get("simulated")),
        "verdict": verdict,
        "path": str(run_dir),
    }


def list_runs(out: Path) -> list[dict[str, Any]]:
    """Every run directory under ``out``, newest first (see the contract)."""
    if not out.exists():
        return []
    if not out.is_dir():
        raise ConfigError(f"{out} is not a directory")
    entries = []
    for scenario_dir in sorted(p for p in out.iterdir() if p.is_dir() and not p.is_symlink()):
        for run_dir in sorted(p for p in scenario_dir.iterdir() if p.is_dir() and not p.is_symlink()):
            e = run_entry(run_dir)
            if e is not None:
                entries.append(e)
    entries.sort(key=lambda e: (str(e["started"] or ""), str(e["run_id"])), reverse=True)
    return entries


def verdict_text(v: Any) -> str:
    """A listing's verdict cell: valid, INVALID, unknown, or "not analysed"."""
    if v is None:
        return "not analysed"
    return {True: "valid", False: "INVALID"}.get(v, str(v)) if isinstance(v, bool) else str(v)


@click.group("runs")
def runs() -> None:
    """The runs recorded under a results directory."""


@runs.command("list")
@click.option(
    "--out",
    type=click.Path(file_okay=False, path_type=Path),
    default=Path("reports"),
    show_default=True,
    help="The results directory (`run --out`).",
)
@click.option("--json", "as_json", is_flag=True, help="Print the list as JSON on stdout (for scripts).")
def list_command(out: Path, as_json: bool) -> None:
    """List the runs under OUT, newest first: run id, scenario, started, units, verdict, simulated."""
    entries = list_runs(out)
    if as_json:
        click.echo(json.dumps(entries, indent=1))
        return
    if not entries:
        click.echo(f"no run under {out}")
        return
    t = Table(title=f"runs under {out}")
    for col in ("run id", "scenario", "started", "units", "verdict", "simulated"):
        t.add_column(col)
    for e in entries:
        units = f"{e['units']}" + (f" ({e['failed_units']} failed)" if e["failed_units"] else "")
        t.add_row(
            e["run_id"],
            e["scenario"],
            str(e["started"] or "?"),
            units,
            verdict_text(e["verdict"]) + (" (interrupted)" if e["interrupted"] else ""),
            "yes" if e["simulated"] else "no",
        )
    OutputConsole().print(t)
