"""``herdlab baseline save|list|show|delete``: the baseline store of :mod:`harness.report.baseline`.

Every subcommand takes ``--store DIR`` (default ``$HERDLAB_BASELINES``, else ``reports/baselines``).
User errors (unknown name, a run directory without metrics.json, a name with a slash) are one-line
:class:`~harness.kernel.errors.ConfigError`s (exit 2).
"""

from __future__ import annotations

import json
from pathlib import Path

import click
from rich.table import Table

from harness.cli.output import OutputConsole
from harness.report.baseline import delete as delete_baseline
from harness.report.baseline import info, names, store_dir
from harness.report.baseline import save as save_baseline

console = OutputConsole()

_store = click.option(
    "--store",
    type=click.Path(file_okay=False, path_type=Path),
    default=None,
    help="The baseline store (default: $HERDLAB_BASELINES, else reports/baselines).",
)


@click.group("baseline")
def baseline() -> None:
    """Named baselines for `herdlab compare NAME RUN_DIR`."""


@baseline.command("save")
@click.argument("name")
@click.argument("run_dir", type=click.Path(path_type=Path))
@_store
@click.option("--force", is_flag=True, help="Replace a baseline of the same name.")
def save(name: str, run_dir: Path, store: Path | None, force: bool) -> None:
    """Save RUN_DIR's metrics.json and manifest.json as baseline NAME (not the history)."""
    d = save_baseline(name, run_dir, store, replace=force)
    console.print(f"baseline {name} saved in {d}", highlight=False)


@baseline.command("list")
@_store
def list_(store: Path | None) -> None:
    """List the baselines of the store."""
    found = names(store)
    if not found:
        console.print(f"no baseline in {store_dir(store)}", highlight=False)
        return
    t = Table(title=f"baselines in {store_dir(store)}")
    for col in ("name", "scenario", "run id", "repetitions", "git commit", "saved"):
        t.add_column(col, justify="left")
    for n in found:
        i = info(n, store)
        t.add_row(
            n,
            str(i.get("scenario") or ""),
            str(i.get("run_id") or ""),
            str(i.get("repetitions") or ""),
            str(i.get("git_commit") or "")[:12],
            str(i.get("saved") or ""),
        )
    console.print(t)


@baseline.command("show")
@click.argument("name")
@_store
def show(name: str, store: Path | None) -> None:
    """Print what baseline NAME holds (its baseline.json, path and files) as JSON."""
    click.echo(json.dumps(info(name, store), indent=1))


@baseline.command("delete")
@click.argument("name")
@_store
def delete(name: str, store: Path | None) -> None:
    """Delete baseline NAME from the store."""
    d = delete_baseline(name, store)
    console.print(f"baseline {name} deleted ({d})", highlight=False)
