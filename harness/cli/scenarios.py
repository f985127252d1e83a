"""``herdlab scenarios``: list, show, check scenarios and print their JSON Schema.

``herdlab scenarios --json`` prints the list as a JSON array on stdout, one object per built-in
scenario: ``name``, ``implementations``, ``cases`` (matrix cases), ``repetitions``, ``description``.
``herdlab scenarios schema`` prints the JSON Schema of scenario files
(:func:`harness.scenario.schema.scenario_schema`).
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import click
from rich.console import Console
from rich.table import Table

from harness.cli.completion import complete_scenario
from harness.run.clients import check_clients
from harness.run.estimate import UnitEstimate, run_estimate
from harness.run.runner import planned_cases
from harness.scenario import builtin_names, expand, left_out, load_scenario
from harness.scenario.loading import builtin_text
from harness.scenario.model import Scenario, duration_text
from harness.scenario.random_nemesis import resolve as resolve_random
from harness.scenario.schema import scenario_schema


def builtin_list() -> list[dict[str, Any]]:
    """The built-in scenarios as ``scenarios --json`` prints them (see the module docstring)."""
    out = []
    for name in builtin_names():
        s = load_scenario(name)
        out.append(
            {
                "name": name,
                "implementations": list(s.implementations),
                "cases": len(expand(s)),
                "repetitions": s.repetitions,
                "description": s.description,
            }
        )
    return out


@click.group(invoke_without_command=True)
@click.option("--json", "as_json", is_flag=True, help="Print the list as JSON on stdout (for scripts).")
@click.pass_context
def scenarios(ctx: click.Context, as_json: bool = False) -> None:
    """List the built-in scenarios (with no subcommand)."""
    if ctx.invoked_subcommand is not None:
        return
    rows = builtin_list()
    if as_json:
        click.echo(json.dumps(rows, indent=1))
        return
    t = Table(title="built-in scenarios")
    for col in ("name", "implementations", "cases", "repetitions", "description"):
        t.add_column(col)
    for r in rows:
        t.add_row(
            r["name"],
            ", ".join(r["implementations"]),
            str(r["cases"]),
            str(r["repetitions"]),
            r["description"],
        )
    Console().print(t)


@scenarios.command("schema")
def schema() -> None:
    """Print the JSON Schema (draft 2020-12) of scenario files.

    It covers keys, types, enums and bounds; rules that span keys are checked by
    `herdlab scenarios check`."""
    click.echo(json.dumps(scenario_schema(), indent=1))


@scenarios.command("show")
@click.argument("name", shell_complete=complete_scenario)
def show(name: str) -> None:
    """Print the TOML of scenario NAME, a built-in name or a TOML file (copy a built-in to make your own).

    A file is validated first, so what is printed is a scenario ``run`` accepts."""
    if name in builtin_names() and not Path(name).exists():
        click.echo(builtin_text(name), nl=False)
        return
    load_scenario(name)  # a file that does not validate, or an unknown name: the one-line error
    click.echo(Path(name).read_text(encoding="utf-8"), nl=False)


def timeline_lines(s: Scenario) -> list[str]:
    """The timeline as ``scenarios check`` prints it: one line per entry, numbered from 1 in the file's
    order, with the entry's keys other than ``at`` and ``action`` that differ from their defaults."""
    out = []
    for i, a in enumerate(s.timeline, start=1):
        keys = a.model_dump(mode="json", exclude_defaults=True, exclude={"at", "action"})
        extra = " ".join(
            f"{k}={v:g}" if isinstance(v, float) else f"{k}={json.dumps(v)}" for k, v in keys.items()
        )
        out.append(f"  {i}. at {a.at:g}s: {a.action}" + (f" {extra}" if extra else ""))
    return out or ["  (empty)"]


def _count(n: int, noun: str) -> str:
    return f"{n} {noun}" + ("" if n == 1 else "s")


def estimate_lines(units: list[UnitEstimate]) -> list[str]:
    """The estimate as ``scenarios check`` prints it: the run's total, then one unit's phases (the
    longest unit's), saying it is an estimate and what it leaves out."""
    total = sum(u.total for u in units)
    longest = max(units, key=lambda u: u.total)
    return [
        f"estimated duration: about {duration_text(total)} for {_count(len(units), 'unit')} "
        "(an estimate from the plan; the analysis after the units is not counted)",
        f"  longest unit ({longest.implementation}, {longest.case}): about {duration_text(longest.total)} = "
        f"start-up allowance {longest.startup:g}s + stable >= {longest.stable:g}s + timeline "
        f"{longest.timeline:g}s + settle {longest.settle:g}s + drain <= {longest.drain:g}s",
    ]


@scenarios.command("check")
@click.argument("scenario", shell_complete=complete_scenario)
@click.option("--set", "overrides", multiple=True, metavar="KEY=VALUE", help="Override any scenario key.")
def check(scenario: str, overrides: tuple[str, ...]) -> None:
    """Validate SCENARIO (a built-in name or a TOML file), plan each of its matrix cases as ``run`` would
    (timeline spacing, members to act on, a switch or rollback with members to replace) and print them,
    then the timeline, the number of units and an estimate of the run's duration."""
    s = load_scenario(scenario, overrides)
    cases = planned_cases(s)
    check_clients(cases)
    for case in cases:
        click.echo(f"{s.name}: {case.label}: {case.members} members, {case.partitions} partitions")
    for out in left_out(s):
        click.echo(f"{s.name}: {out.label}: left out: {out.reason}")
    resolved = resolve_random(s)[0]
    drawn = " (random schedules drawn)" if s.nemesis else ""
    click.echo(f"timeline{drawn}:")
    for line in timeline_lines(resolved):
        click.echo(line)
    units = run_estimate(s, cases)
    click.echo(
        f"units: {len(units)} = {_count(len(cases), 'case')} x "
        f"{_count(len(s.implementations), 'implementation')} x {_count(s.repetitions, 'repetition')}"
    )
    for line in estimate_lines(units):
        click.echo(line)
