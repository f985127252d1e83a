"""``herdlab bench simulator``: the simulator's validation (issue 16 part 5) and its reach (part 6).

Contract
--------
:func:`validate` runs SCENARIO for real (``herdlab run``'s :func:`harness.run.runner.run_scenario`, local
backend: a real ZooKeeper and broker, member processes) and in the simulator
(:func:`harness.sim.session.simulate_scenario`, one repetition: with jitter 0 a simulation is
deterministic), with the same overrides (``--members``, ``--repetitions``, ``--impl``, ``--set``), then
compares each (implementation, N, trigger) with :func:`harness.sim.validate.compare_runs`: the herd counts
(watches, ZooKeeper requests by op, conflicts, rebalance attempts and failed ones, broker group requests by
API) of every real repetition against the simulated ones, and the simulated latency against the range
of the real ones. It prints one table row per count that differs (or ``all equal``) and the latencies;
nothing is asserted. No Spark: the counts come straight from the histories.

:func:`reach` simulates SCENARIO at ``--members`` sizes (default 1000 and 10000) one unit at a time and
prints, per unit, virtual time, events, wall time and the process's peak RSS.
"""

from __future__ import annotations

import tempfile
import time
from pathlib import Path

import click

from harness.sim.validate import Comparison

__all__ = ["format_comparison", "simulator"]


def _overrides(members: str, repetitions: int | None, impls: str, sets: tuple[str, ...]) -> list[str]:
    out = [
        f"group.members=[{members}]",
        f"implementations={[i for i in impls.split(',') if i]!r}".replace("'", '"'),
    ]
    if repetitions is not None:
        out.append(f"repetitions={repetitions}")
    return [*out, *sets]


def format_comparison(rows: list[Comparison]) -> list[str]:
    """The validation table as lines: per (impl, N, trigger) the counts (real = simulated, or each
    difference) and the latencies."""
    lines = [f"{'impl':<10} {'N':>5} {'trigger':<16} {'counts':<60} latency real [min..max] vs simulated"]
    for r in rows:
        if r.counts_equal:
            text = "all equal: " + ", ".join(f"{k}={v}" for k, v in r.simulated.items())
        else:
            keys = sorted({*r.simulated, *(k for x in r.real for k in x)})
            diffs = []
            for k in keys:
                reals = sorted({x.get(k, 0) for x in r.real})
                sim = r.simulated.get(k, 0)
                if reals != [sim]:
                    diffs.append(f"{k} real {'/'.join(map(str, reals))} sim {sim}")
            text = "DIFFER: " + "; ".join(diffs)
        lat = (
            f"[{min(r.real_latency_s):.3f}..{max(r.real_latency_s):.3f}] s"
            if r.real_latency_s
            else "[none settled]"
        )
        sim_lat = f"{r.simulated_latency_s:.3f} s" if r.simulated_latency_s is not None else "not settled"
        inside = {True: "inside", False: "OUTSIDE", None: "-"}[r.latency_inside]
        lines.append(f"{r.impl:<10} {r.members:>5} {r.trigger:<16} {text:<60} {lat} vs {sim_lat} ({inside})")
    return lines


@click.group("simulator")
def simulator() -> None:
    """The simulator against real runs (validate) and at size (reach)."""


@simulator.command("validate")
@click.option("--scenario", default="herd", show_default=True, help="Scenario (built-in name or TOML file).")
@click.option("--members", default="10,50,100", show_default=True, help="Group sizes, comma-separated.")
@click.option("--repetitions", type=int, default=None, help="Real repetitions [the scenario's].")
@click.option(
    "--impl", "impls", default="legacy_zk", show_default=True, help="Implementations, comma-separated."
)
@click.option("--set", "sets", multiple=True, metavar="KEY=VALUE", help="Any other scenario override.")
@click.option(
    "--out",
    type=click.Path(file_okay=False, path_type=Path),
    default=None,
    help="Where runs go [a temp dir].",
)
def validate_command(
    scenario: str, members: str, repetitions: int | None, impls: str, sets: tuple[str, ...], out: Path | None
) -> None:
    """Real runs and simulations of the same cases: herd counts must be equal, latencies inside the range."""
    for line in validate(scenario, members, repetitions, impls, sets, out):
        click.echo(line)


def validate(
    scenario: str,
    members: str = "10",
    repetitions: int | None = None,
    impls: str = "legacy_zk",
    sets: tuple[str, ...] = (),
    out: Path | None = None,
) -> list[str]:
    """Run, simulate and compare (module contract); the lines printed."""
    from harness.cluster.java import check_java
    from harness.run.runner import RunOptions, run_scenario
    from harness.scenario import load_scenario
    from harness.sim.session import SimOptions, simulate_scenario
    from harness.sim.validate import compare_runs

    check_java()
    base = Path(out or tempfile.mkdtemp(prefix="herdlab-simval-"))
    s = load_scenario(scenario, _overrides(members, repetitions, impls, sets))
    t0 = time.monotonic()
    real = run_scenario(s, RunOptions(out=base / "real"))
    real_s = time.monotonic() - t0
    t1 = time.monotonic()
    sim = simulate_scenario(s.model_copy(update={"repetitions": 1}), SimOptions(out=base / "sim"))
    sim_s = time.monotonic() - t1
    rows = compare_runs(real.run_dir, sim.run_dir, s.settle_window)
    lines = [
        f"real run {real.run_dir} ({real_s:.0f} s wall), simulation {sim.run_dir} ({sim_s:.1f} s wall)",
        *format_comparison(rows),
        f"{sum(r.counts_equal for r in rows)}/{len(rows)} triggers with equal counts; "
        f"{sum(bool(r.latency_inside) for r in rows)}/{len(rows)} simulated latencies inside the real range",
    ]
    return lines


@simulator.command("reach")
@click.option("--scenario", default="herd", show_default=True)
@click.option("--members", default="1000,10000", show_default=True, help="Group sizes, comma-separated.")
@click.option("--impl", "impls", default="legacy_zk", show_default=True)
@click.option("--set", "sets", multiple=True, metavar="KEY=VALUE")
@click.option(
    "--delay",
    "delays",
    multiple=True,
    default=("client_cores=0",),
    show_default=True,
    metavar="NAME=VALUE",
    help="Delay model overrides; by default every member has a core of its own (members on many hosts).",
)
@click.option("--out", type=click.Path(file_okay=False, path_type=Path), default=None)
def reach_command(
    scenario: str, members: str, impls: str, sets: tuple[str, ...], delays: tuple[str, ...], out: Path | None
) -> None:
    """Simulate at size, one unit per N: virtual time, events, wall time and peak RSS."""
    from harness.scenario import load_scenario
    from harness.sim.session import SimOptions, parse_delays, simulate_scenario

    model = parse_delays(delays)
    click.echo(f"model: {model.describe()}")

    base = Path(out or tempfile.mkdtemp(prefix="herdlab-simreach-"))
    for n in [int(x) for x in members.split(",") if x]:
        s = load_scenario(scenario, _overrides(str(n), 1, impls, sets))
        t0 = time.monotonic()
        result = simulate_scenario(s, SimOptions(out=base, delays=model))
        for u in result.units:
            click.echo(
                f"N={n} {u['unit']}: virtual {u.get('virtual_s')} s, {u.get('events')} events, "
                f"wall {u.get('wall_s')} s, peak RSS {u.get('peak_rss_mb')} MB"
                + (f", FAILED {u['failed']}" if u.get("failed") else "")
            )
        click.echo(f"N={n}: {time.monotonic() - t0:.1f} s wall in all; {result.run_dir}")
