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

from harness.run.runner import planned_cases
from harness.scenario import builtin_names, expand, load_scenario
from harness.scenario.loading import builtin_text
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
@click.argument("name")
def show(name: str) -> None:
    """Print the TOML of scenario NAME, a built-in name or a TOML file (copy a built-in to make your own).

    A file is validated first, so what is printed is a scenario ``run`` accepts."""
    if name in builtin_names() and not Path(name).exists():
        click.echo(builtin_text(name), nl=False)
        return
    load_scenario(name)  # a file that does not validate, or an unknown name: the one-line error
    click.echo(Path(name).read_text(encoding="utf-8"), nl=False)


@scenarios.command("check")
@click.argument("scenario")
@click.option("--set", "overrides", multiple=True, metavar="KEY=VALUE", help="Override any scenario key.")
def check(scenario: str, overrides: tuple[str, ...]) -> None:
    """Validate SCENARIO (a built-in name or a TOML file), plan each of its matrix cases as ``run`` would
    (timeline spacing, members to act on, a switch or rollback with members to replace) and print them."""
    s = load_scenario(scenario, overrides)
    for case in planned_cases(s):
        click.echo(f"{s.name}: {case.label}: {case.members} members, {case.partitions} partitions")
