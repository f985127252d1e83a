"""``herdlab simulate``: a scenario in the simulator, then the same analysis and report as ``herdlab run``.

The units run in :mod:`harness.sim` (virtual time, the stated delay model); the run directory, the
analysis and the reports are ``run``'s, and the reports say at the top that it is a simulation.
``OUT/<scenario>/latest`` links to the newest run directory, simulated or not (:mod:`harness.cli.runs`).
"""

from __future__ import annotations

import time
from pathlib import Path
from typing import Any

import click

from harness.cli.completion import complete_scenario
from harness.cli.output import OutputConsole
from harness.cli.report import publish
from harness.cli.runs import update_latest
from harness.kernel.errors import ConfigError
from harness.scenario import load_scenario
from harness.sim.driver import UnitProgress
from harness.sim.model import DEFAULT_PROFILE
from harness.sim.session import (
    SimOptions,
    parse_delays,
    parse_designs,
    parse_sim_options,
    simulate_scenario,
)

console = OutputConsole()


@click.command("simulate")
@click.argument("scenario", shell_complete=complete_scenario)
@click.option("--set", "overrides", multiple=True, metavar="KEY=VALUE", help="Override any scenario key.")
@click.option(
    "--members-scale",
    default=None,
    metavar="N[,N...]",
    help="Group sizes to simulate (the same as --set group.members=[N,...]), e.g. 1000,10000.",
)
@click.option(
    "--design",
    "designs",
    default=None,
    metavar="NAME[,NAME...]",
    help="Designs to simulate instead of the scenario's implementations: legacy_zk, coordinator, consumer "
    "(KIP-848's consumer group protocol), e.g. legacy_zk,coordinator,consumer for all three.",
)
@click.option(
    "--profile",
    default=None,
    metavar="NAME",
    help="Delay profile: host-per-member (the default: every member on a machine of its own) or "
    "two-core-host (fitted to real runs of up to 100 members sharing one 2-core machine).",
)
@click.option(
    "--delay",
    "delays",
    multiple=True,
    metavar="NAME=VALUE",
    help="Override a field of the profile's delay model (seconds), e.g. zk_service_s=0.0002. Repeatable.",
)
@click.option(
    "--seed",
    type=int,
    default=None,
    help="Seed of the delay model's random source (its drawn waits and jitter).",
)
@click.option(
    "--option",
    "sim_options",
    multiple=True,
    metavar="NAME=VALUE",
    help="Simulator option: aggregate_from=N (legacy zk_request events aggregated from N members; default "
    "200); fluid_from=N (from N legacy members ZooKeeper is the fluid server, bursts of reads processor-shared; "
    "default 1000); wait_settled_from=N (from N members a timeline step waits, past its time, until the "
    "previous trigger settled: sizes where a change outlasts the scenario's spacing; default 1000); "
    "wait_settled=1 or 0 (every step waits, or none). Repeatable.",
)
@click.option(
    "--out",
    type=click.Path(file_okay=False, path_type=Path),
    default=Path("reports"),
    show_default=True,
    help="Results go to OUT/<scenario>/<run-id>/.",
)
@click.option("--spark-master", default=None, metavar="URL", help="Spark master for the analysis.")
@click.option("--no-report", is_flag=True, help="Skip the analysis and reports.")
@click.option(
    "--wide",
    is_flag=True,
    help="Every column of the summary tables, cells whole even past the terminal's edge (default: the "
    "narrow columns, fitted to the terminal's width, or to $COLUMNS, else 120, when not printing to one).",
)
def simulate(
    scenario: str,
    overrides: tuple[str, ...],
    members_scale: str | None,
    designs: str | None,
    profile: str | None,
    delays: tuple[str, ...],
    seed: int | None,
    sim_options: tuple[str, ...],
    out: Path,
    spark_master: str | None,
    no_report: bool,
    wide: bool = False,
) -> None:
    """Simulate SCENARIO (a built-in name or a TOML file): the same pure cores in virtual time.

    The same scenario files, matrix, plans and faults as `herdlab run`; each unit runs the real
    rebalance code of each implementation against simulated servers, with every delay taken from a
    stated model (see docs/simulator.md: a named profile, --profile; override fields with
    --delay). Actions the simulator
    does not model (pause, stall, cut, expire, broker, ZooKeeper and coordinator faults, partition growth,
    migrations) are recorded as skipped, "not simulated". The run directory, analysis and reports are
    run's; every report says at the top that it is a simulation and states the model.
    """
    execute(
        scenario,
        overrides,
        members_scale,
        delays,
        seed,
        sim_options,
        out,
        spark_master,
        not no_report,
        profile=profile,
        wide=wide,
        designs=designs,
    )


def execute(
    scenario: str,
    overrides: tuple[str, ...] = (),
    members_scale: str | None = None,
    delays: tuple[str, ...] = (),
    seed: int | None = None,
    sim_options: tuple[str, ...] = (),
    out: Path = Path("reports"),
    spark_master: str | None = None,
    report: bool = True,
    profile: str | None = None,
    wide: bool = False,
    designs: str | None = None,
) -> Path:
    """Simulate, then analyse and report (see ``herdlab simulate``); returns the run directory."""

    sets = list(overrides)
    if members_scale:
        try:
            sizes = [int(x) for x in members_scale.split(",") if x.strip()]
        except ValueError:
            raise ConfigError(f"--members-scale expects N[,N...], got {members_scale!r}") from None
        sets.append(f"group.members=[{','.join(str(n) for n in sizes)}]")
    chosen = parse_designs(designs)
    s = load_scenario(scenario, sets)
    model = parse_delays(delays, seed, profile or DEFAULT_PROFILE)
    last: list[Any] = [0.0, None]  # when progress was last printed, and for which (unit, phase)

    def progress(p: UnitProgress, i: int, n: int) -> None:
        """A line every 5 s of wall time, and at each new phase of a unit."""
        now = time.monotonic()
        if now - last[0] < 5 and (p.unit, p.phase) == last[1]:
            return
        last[0], last[1] = now, (p.unit, p.phase)
        console.print(
            f"[{i + 1}/{n}] {p.unit}: {p.phase}, virtual {p.virtual_s:.1f} s, {p.events} events, "
            f"wall {p.wall_s:.1f} s",
            highlight=False,
        )

    console.print(f"simulating {s.name}: {model.describe()}", highlight=False)
    result = simulate_scenario(
        s,
        SimOptions(
            out=out,
            delays=model,
            options=parse_sim_options(sim_options),
            progress=progress,
            designs=chosen,
        ),
    )
    for u in result.units:
        console.print(
            f"unit {u['unit']}: virtual {u.get('virtual_s')} s, {u.get('events')} events, wall {u.get('wall_s')} s, "
            f"peak RSS {u.get('peak_rss_mb')} MB"
            + (f" [red]failed: {u['failed']}[/red]" if u.get("failed") else ""),
            highlight=False,
        )
    console.print(f"simulation {result.run_id}: {result.events} events in {result.run_dir}")

    update_latest(result.run_dir)
    invalid = False
    if report:
        invalid = publish(result.run_dir, spark_master=spark_master, wide=wide)
    if invalid or any(u.get("failed") for u in result.units):
        raise SystemExit(1)
    return result.run_dir
