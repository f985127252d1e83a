"""``herdlab scenarios``: list, show and check scenarios."""

from __future__ import annotations

import click
from rich.console import Console
from rich.table import Table

from harness.scenario import builtin_names, expand, load_scenario
from harness.scenario.loading import builtin_text


@click.group(invoke_without_command=True)
@click.pass_context
def scenarios(ctx: click.Context) -> None:
    """List the built-in scenarios (with no subcommand)."""
    if ctx.invoked_subcommand is not None:
        return
    t = Table(title="built-in scenarios")
    for col in ("name", "implementations", "cases", "repetitions", "description"):
        t.add_column(col)
    for name in builtin_names():
        s = load_scenario(name)
        t.add_row(name, ", ".join(s.implementations), str(len(expand(s))), str(s.repetitions), s.description)
    Console().print(t)


@scenarios.command("show")
@click.argument("name")
def show(name: str) -> None:
    """Print the TOML of built-in scenario NAME (copy it to make your own)."""
    if name not in builtin_names():
        load_scenario(name)  # raises the one-line error listing the built-ins
    click.echo(builtin_text(name), nl=False)


@scenarios.command("check")
@click.argument("scenario")
@click.option("--set", "overrides", multiple=True, metavar="KEY=VALUE", help="Override any scenario key.")
def check(scenario: str, overrides: tuple[str, ...]) -> None:
    """Validate SCENARIO (a built-in name or a TOML file), plan each of its matrix cases as ``run`` would
    (timeline spacing, members to act on, a switch or rollback with members to replace) and print them."""
    from harness.run.runner import planned_cases

    s = load_scenario(scenario, overrides)
    for case in planned_cases(s):
        click.echo(f"{s.name}: {case.label}: {case.members} members, {case.partitions} partitions")
