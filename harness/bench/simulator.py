"""``herdlab bench simulator``: the simulator's validation and its reach.

Contract
--------
:func:`validate` runs SCENARIO for real (``herdlab run``'s :func:`harness.run.runner.run_scenario`, local
backend: a real ZooKeeper and broker, member processes) and in the simulator
(:func:`harness.sim.session.simulate_scenario`, ``--sim-repetitions`` repetitions, each seeded by its
repetition: the model's random parts, such as the legacy members' wake-up spread, differ between them),
with the same overrides (``--members``, ``--repetitions``, ``--impl``, ``--set``; ``--delay`` for the
model), then compares each (implementation, N, trigger) with :func:`harness.sim.validate.compare`:
the herd counts (watches, ZooKeeper requests by op, conflicts, rebalance attempts and failed ones, broker
group requests by API) of every real repetition against those of the simulated ones (equal: each real
repetition's counts are those of one simulated repetition), and the median simulated latency against the
range of the real ones; a repetition with a trigger that did not settle is left out on either side, and
a line names it (:func:`harness.sim.validate.unsettled`). ``--real RUN_DIR`` compares with an existing
real run instead of running one; repeated, it pools the runs' repetitions into one real sample (and
prints each run's tallies alone too).
The same comparison is made of the protocol's own counts too, the clients' repeated joins
(:func:`harness.sim.validate.repeated_joins`) taken out of both sides (their number is the client's timing
on the machine at that moment; the model draws it): a row whose counts differ by them alone says
``protocol equal`` and the repeated joins' JoinGroups each side made, and the tallies count such rows.
It prints one table row per count that differs (or ``all equal``) and the latencies; nothing is asserted.
No Spark: the counts come straight from the histories.

:func:`reach` simulates SCENARIO at ``--members`` sizes (default 1000 and 10000) one unit at a time, with
``herdlab simulate``'s defaults, and prints, per unit, virtual time, events, wall time and the process's
peak RSS.
"""

from __future__ import annotations

import tempfile
import time
from collections.abc import Callable
from pathlib import Path
from typing import TYPE_CHECKING, Any

import click

from harness.cluster.java import check_java
from harness.kernel.errors import ConfigError
from harness.run.runner import RunOptions, run_scenario
from harness.scenario import load_scenario
from harness.sim.model import DEFAULT_PROFILE
from harness.sim.session import SimOptions, parse_delays, parse_designs, parse_sim_options, simulate_scenario
from harness.sim.validate import Comparison, compare, run_cases, run_counts, unsettled

if TYPE_CHECKING:
    from harness.sim.driver import UnitProgress

__all__ = ["format_comparison", "simulator", "tally"]


def _overrides(members: str, repetitions: int | None, impls: str, sets: tuple[str, ...]) -> list[str]:
    out = [
        f"group.members=[{members}]",
        f"implementations={[i for i in impls.split(',') if i]!r}".replace("'", '"'),
    ]
    if repetitions is not None:
        out.append(f"repetitions={repetitions}")
    return [*out, *sets]


#: A directory option that must exist (``--real``, ``--sim``).
_EXISTING_DIR = click.Path(exists=True, file_okay=False, path_type=Path)
_SIM_HELP = (
    "Compare with this existing simulated run directory (a validation's <out>/sim/<scenario>/<run>) instead "
    "of simulating again: to judge a saved simulation again, say after a change to the comparison; "
    "--sim-repetitions and --delay are then not used (the run's own manifest names its model)."
)


def format_comparison(rows: list[Comparison]) -> list[str]:
    """The validation table as lines: per (impl, N, trigger) the counts (real = simulated, or each
    difference: the values the real repetitions took against those the simulated ones took) and the
    latencies (the real range against the simulated median, over the repetitions that made a real
    repetition's herd when some did, and the range of all)."""
    lines = [
        f"{'impl':<10} {'N':>5} {'trigger':<16} {'counts':<60} "
        "latency real [min..max] vs simulated median [min..max]"
    ]
    for r in rows:
        if r.counts_equal and len({tuple(sorted(x.items())) for x in r.simulated_reps}) == 1:
            text = "all equal: " + ", ".join(f"{k}={v}" for k, v in r.simulated.items())
        elif r.counts_equal:
            shown: list[str] = []
            for x in r.real:
                one = ", ".join(f"{k}={v}" for k, v in x.items())
                if one not in shown:
                    shown.append(one)
            text = f"real among simulated ({len(r.alike)} of {len(r.simulated_reps)} alike): " + " | ".join(
                shown
            )
        else:
            keys = sorted({*(k for x in r.simulated_reps for k in x), *(k for x in r.real for k in x)})
            diffs = []
            for k in keys:
                reals = sorted({x.get(k, 0) for x in r.real})
                sims = sorted({x.get(k, 0) for x in r.simulated_reps})
                if reals != sims:
                    diffs.append(f"{k} real {'/'.join(map(str, reals))} sim {'/'.join(map(str, sims))}")
            text = "DIFFER: " + ("; ".join(diffs) or "same values, not in the same combination")
            if r.protocol_equal:  # the difference is the clients' repeated joins alone
                text = f"protocol equal, {_repeats_text(r)}; {text}"
            if r.alike:  # some real repetitions made a herd the simulation makes, others one it does not
                text = f"{len(r.alike)} of {len(r.simulated_reps)} simulated equal a real repetition; {text}"
        lat = (
            f"[{min(r.real_latency_s):.3f}..{max(r.real_latency_s):.3f}] s"
            if r.real_latency_s
            else "[none settled]"
        )
        sim_lat = "not settled"
        settled = [x for x in r.simulated_latencies_s if x is not None]
        if r.simulated_latency_s is not None:
            sim_lat = f"{r.simulated_latency_s:.3f} s"
            if len(settled) > 1:
                sim_lat += f" [{min(settled):.3f}..{max(settled):.3f}]"
        inside = {True: "inside", False: "OUTSIDE", None: "-"}[r.latency_inside]
        lines.append(f"{r.impl:<10} {r.members:>5} {r.trigger:<16} {text:<60} {lat} vs {sim_lat} ({inside})")
    return lines


def _repeat_joingroups(full: list[dict[str, int]], protocol: list[dict[str, int]] | None) -> str:
    """The repeated joins' JoinGroups per repetition (full less protocol counts), as ``a/b/c``."""
    ps = protocol if protocol is not None else full
    got = sorted(
        {f.get("api:JoinGroup", 0) - q.get("api:JoinGroup", 0) for f, q in zip(full, ps, strict=True)}
    )
    return "/".join(map(str, got))


def _repeats_text(r: Comparison) -> str:
    """``repeated joins' JoinGroups real 0/3 sim 0/1/2``."""
    return (
        f"repeated joins' JoinGroups real {_repeat_joingroups(r.real, r.real_protocol)} "
        f"sim {_repeat_joingroups(r.simulated_reps, r.simulated_protocol_reps)}"
    )


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
    "--sim-repetitions",
    type=click.IntRange(min=1),
    default=5,
    show_default=True,
    help="Simulated repetitions (each seeded by its repetition: the model's random parts differ).",
)
@click.option(
    "--profile",
    default="two-core-host",
    show_default=True,
    metavar="NAME",
    help="Delay profile (the one fitted to this project's 2-core machine, where the real runs are made).",
)
@click.option(
    "--delay", "delays", multiple=True, metavar="NAME=VALUE", help="Override a field of the delay model."
)
@click.option(
    "--real",
    "real_dirs",
    type=_EXISTING_DIR,
    multiple=True,
    help="Compare with this existing real run directory of the same scenario and options instead of "
    "running it again (say, to try a delay model against one real run). Repeat it to pool several real "
    "runs' repetitions into one real range (runs made at different hours: a shared machine's speed can "
    "differ between hours by more than between one run's repetitions); each run's tallies are printed too.",
)
@click.option("--sim", "sim_dir", type=_EXISTING_DIR, default=None, help=_SIM_HELP)
@click.option(
    "--out",
    type=click.Path(file_okay=False, path_type=Path),
    default=None,
    help="Where runs go [a temp dir].",
)
def validate_command(
    scenario: str,
    members: str,
    repetitions: int | None,
    impls: str,
    sets: tuple[str, ...],
    sim_repetitions: int,
    profile: str,
    delays: tuple[str, ...],
    real_dirs: tuple[Path, ...],
    sim_dir: Path | None,
    out: Path | None,
) -> None:
    """Real runs and simulations of the same cases: herd counts must be equal, latencies inside the range."""
    for line in validate(
        scenario,
        members,
        repetitions,
        impls,
        sets,
        out,
        sim_repetitions,
        delays,
        real_dirs,
        sim_dir,
        profile=profile,
    ):
        click.echo(line)


def _check_same_cases(run_dir: Path, members: str, impls: str, option: str = "--real") -> dict[str, Any]:
    """``--real``'s (or ``--sim``'s) run must have the cases and implementations asked for (one-line error
    otherwise); its manifest."""
    import json

    path = run_dir / "manifest.json"
    try:
        manifest: dict[str, Any] = json.loads(path.read_text())
    except (OSError, ValueError) as e:
        raise ConfigError(f"{option} {run_dir}: no readable manifest.json ({e})") from None
    have = sorted(int(c.get("members") or 0) for c in manifest.get("cases") or [])
    want = sorted(int(m) for m in members.split(",") if m.strip())
    if have != want:
        raise ConfigError(f"{option} {run_dir}: its cases have {have} members, --members asks for {want}")
    units = (
        {d.name.split("-")[1] for d in (run_dir / "units").iterdir()}
        if (run_dir / "units").is_dir()
        else set()
    )
    missing = [i for i in impls.split(",") if i and i not in units]
    if missing:
        raise ConfigError(f"{option} {run_dir}: no units of {', '.join(missing)}")
    return manifest


def _check_sim_dir(sim_dir: Path, scenario: str, members: str, impls: str) -> dict[str, Any]:
    """``--sim``'s run must be a finished simulation of this scenario with the cases asked for (one-line
    error otherwise); its manifest."""

    manifest = _check_same_cases(sim_dir, members, impls, "--sim")
    if not manifest.get("simulated"):
        raise ConfigError(f"--sim {sim_dir}: not a simulated run (its manifest says so)")
    name = (manifest.get("scenario") or {}).get("name")
    if name != scenario:
        raise ConfigError(f"--sim {sim_dir}: a simulation of {name!r}, not of {scenario!r}")
    if manifest.get("interrupted") or not manifest.get("finished"):
        raise ConfigError(f"--sim {sim_dir}: the simulation did not finish")
    return manifest


def validate(
    scenario: str,
    members: str = "10",
    repetitions: int | None = None,
    impls: str = "legacy_zk",
    sets: tuple[str, ...] = (),
    out: Path | None = None,
    sim_repetitions: int = 5,
    delays: tuple[str, ...] = (),
    real_dirs: tuple[Path, ...] = (),
    sim_dir: Path | None = None,
    profile: str = "two-core-host",
) -> list[str]:
    """Run (unless ``real_dirs`` are given), simulate ``sim_repetitions`` times (unless ``sim_dir`` is
    given) and compare (module contract); the lines printed."""

    s = load_scenario(scenario, _overrides(members, repetitions, impls, sets))
    sim_manifest: dict[str, Any] = {}
    if sim_dir is not None:  # before any real run: a wrong directory fails at once
        if delays:
            raise ConfigError("--delay is not used with --sim: the saved simulation's model is its own")
        sim_manifest = _check_sim_dir(sim_dir, s.name, members, impls)
    model = parse_delays(delays, profile=profile)
    base = Path(out or tempfile.mkdtemp(prefix="herdlab-simval-"))
    dirs = list(real_dirs)
    if not dirs:
        check_java()
        t0 = time.monotonic()
        dirs = [run_scenario(s, RunOptions(out=base / "real", progress=real_progress())).run_dir]
        real_what = f"real run {dirs[0]} ({time.monotonic() - t0:.0f} s wall)"
    else:
        for d in dirs:
            _check_same_cases(d, members, impls)
        real_what = ("real run " if len(dirs) == 1 else "real runs ") + ", ".join(map(str, dirs))
        real_what += " (given" + (", repetitions pooled)" if len(dirs) > 1 else ")")
    if sim_dir is None:
        t1 = time.monotonic()
        sim_run = simulate_scenario(
            s.model_copy(update={"repetitions": sim_repetitions}),
            SimOptions(out=base / "sim", delays=model, progress=sim_progress()),
        ).run_dir
        sim_what = f"simulation {sim_run} ({sim_repetitions} repetitions, {time.monotonic() - t1:.1f} s wall)"
        model_what = model.describe()
    else:
        sim_run = sim_dir
        sim_what = f"simulation {sim_dir} (given, {sim_manifest.get('repetitions', '?')} repetitions)"
        model_what = str(sim_manifest.get("delay_model_text") or "(not in its manifest)")
    # every unit read and counted once; the pooled rows and each run's own come from the same counts
    real = [run_counts(d, s.settle_window) for d in dirs]
    simulated, cases = run_counts(sim_run, s.settle_window), run_cases(dirs[0])
    rows = compare(real, simulated, cases)
    lines = [
        f"{real_what}, {sim_what}",
        f"model: {model_what}",
        *format_comparison(rows),
        tally(rows),
    ]
    if len(dirs) > 1:
        lines += [
            f"{d} alone: {tally(compare([r], simulated, cases))}" for d, r in zip(dirs, real, strict=True)
        ]
    for d, counts in [*zip(dirs, real, strict=True), (sim_run, simulated)]:
        lines += [
            f"left out: {d}/units/{u}: a trigger that did not settle, its window not its change's alone"
            for u in unsettled(d, counts)
        ]
    return lines


def real_progress() -> Callable[[dict[str, Any]], None]:
    """The real run's progress as lines on stderr, one when a unit enters a phase (the run takes
    minutes per unit, the whole validation half an hour): ``real [3/18] legacy_zk members=10 rep 2:
    settling``."""
    last: list[Any] = [None]

    def report(p: dict[str, Any]) -> None:
        if (p["unit"], p["phase"]) != last[0]:
            last[0] = (p["unit"], p["phase"])
            click.echo(
                f"real [{p['number']}/{p['of']}] {p['impl']} {p['case']} rep {p['repetition']}: {p['phase']}",
                err=True,
            )

    return report


def sim_progress() -> Callable[[UnitProgress, int, int], None]:
    """The simulation's progress as lines on stderr, one when a unit enters a phase."""
    last: list[Any] = [None]

    def report(p: UnitProgress, i: int, n: int) -> None:
        if (p.unit, p.phase) != last[0]:
            last[0] = (p.unit, p.phase)
            click.echo(f"simulated [{i + 1}/{n}] {p.unit}: {p.phase}", err=True)

    return report


def tally(rows: list[Comparison]) -> str:
    """The validation's four tallies in one line: triggers with equal counts, with equal protocol counts
    (:attr:`~harness.sim.validate.Comparison.protocol_equal`), with a simulated repetition equal to a real
    one, and with the simulated latency inside the real range."""
    n = len(rows)
    return (
        f"{sum(r.counts_equal for r in rows)}/{n} triggers with equal counts (every real repetition's "
        f"counts made by a simulated one); {sum(r.protocol_equal for r in rows)}/{n} with equal protocol "
        f"counts (the clients' repeated joins taken out of both sides); {sum(bool(r.alike) for r in rows)}/{n} "
        f"where a simulated repetition's counts equal a real repetition's; "
        f"{sum(bool(r.latency_inside) for r in rows)}/{n} simulated latencies inside the real range"
    )


@simulator.command("reach")
@click.option("--scenario", default="herd", show_default=True)
@click.option("--members", default="1000,10000", show_default=True, help="Group sizes, comma-separated.")
@click.option(
    "--impl",
    "impls",
    default="legacy_zk",
    show_default=True,
    help="Designs, comma-separated: legacy_zk, coordinator, consumer.",
)
@click.option("--set", "sets", multiple=True, metavar="KEY=VALUE", help="Scenario overrides.")
@click.option(
    "--profile",
    default=None,
    metavar="NAME",
    help="Delay profile [the simulator's default: host-per-member, every member on a machine of its own].",
)
@click.option("--delay", "delays", multiple=True, metavar="NAME=VALUE", help="Delay model overrides.")
@click.option(
    "--option",
    "sim_options",
    multiple=True,
    metavar="NAME=VALUE",
    help="Simulator options (see `herdlab simulate --help`; its defaults scale with the group).",
)
@click.option("--out", type=click.Path(file_okay=False, path_type=Path), default=None)
def reach_command(
    scenario: str,
    members: str,
    impls: str,
    sets: tuple[str, ...],
    profile: str | None,
    delays: tuple[str, ...],
    sim_options: tuple[str, ...],
    out: Path | None,
) -> None:
    """Simulate at size, one unit per N, with ``herdlab simulate``'s defaults (its profile, waits and
    options scale with the group): virtual time, events, wall time and peak RSS."""

    model = parse_delays(delays, profile=profile or DEFAULT_PROFILE)
    options = parse_sim_options(sim_options)
    click.echo(f"model: {model.describe()}; options: {options}")

    base = Path(out or tempfile.mkdtemp(prefix="herdlab-simreach-"))
    designs = parse_designs(
        impls
    )  # the simulator's designs (the consumer protocol's too), not the scenario's
    for n in [int(x) for x in members.split(",") if x]:
        s = load_scenario(scenario, [f"group.members=[{n}]", "repetitions=1", *sets])
        t0 = time.monotonic()
        result = simulate_scenario(s, SimOptions(out=base, delays=model, options=options, designs=designs))
        for u in result.units:
            click.echo(
                f"N={n} {u['unit']}: virtual {u.get('virtual_s')} s, {u.get('events')} events, "
                f"wall {u.get('wall_s')} s, peak RSS {u.get('peak_rss_mb')} MB"
                + (f", FAILED {u['failed']}" if u.get("failed") else "")
            )
        click.echo(f"N={n}: {time.monotonic() - t0:.1f} s wall in all; {result.run_dir}")
