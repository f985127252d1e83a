"""A ``herdlab simulate`` session: every unit of a scenario in the simulator, then one run directory
written exactly as ``herdlab run`` writes it.

Contract
--------
:func:`simulate_scenario` plans the scenario's cases as ``run`` does (:func:`harness.run.runner.planned_cases`:
the same matrix, plans and checks), creates ``<out>/<scenario>/<run-id>/`` and runs every unit
(case x implementation x repetition, in ``run``'s order; the implementations are ``SimOptions.designs`` when
given, ``herdlab simulate --design``, recorded as the manifest's ``designs``) with :class:`harness.sim.driver.SimUnitRunner`,
each on its own virtual clock anchored at the wall-clock instant it starts. Then it merges the units'
JSON lines into ``history.parquet`` (:func:`harness.history.schema.to_parquet`, the same columns and
context) and writes ``manifest.json`` as ``run`` does plus ``simulated: true``, ``delay_model``
(:meth:`DelayModel.as_dict`), ``delay_model_text`` (:meth:`DelayModel.describe`) and per unit its
virtual duration, events, wall time and the process's peak RSS so far. The analysis and report that
follow are ``run``'s (:func:`harness.run.session.analyse` / :func:`render`).
"""

from __future__ import annotations

import dataclasses
import resource
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from harness.history.schema import to_parquet
from harness.kernel.errors import ConfigError
from harness.run.manifest import write_manifest
from harness.run.runner import RunResult, Unit, new_run_id, planned_cases
from harness.scenario.model import IMPLEMENTATIONS, Scenario
from harness.sim import consumer, coordinator
from harness.sim.driver import DESIGNS, WAIT_SETTLED_FROM, SimUnitRunner, UnitProgress, group_factory
from harness.sim.legacy import AGGREGATE_FROM, FLUID_FROM
from harness.sim.model import DEFAULT_PROFILE, DelayModel, load_profile

__all__ = [
    "SIM_OPTIONS",
    "SimOptions",
    "parse_delays",
    "parse_designs",
    "parse_sim_options",
    "peak_rss_mb",
    "simulate_scenario",
]

#: The simulator's options (``--option NAME=VALUE``): legacy ``zk_request`` events aggregated from
#: ``aggregate_from`` initial members (default 200); the fluid ZooKeeper server from ``fluid_from``
#: initial members (default 1000); ``wait_settled`` = 1: every timeline step waits, past its time, until
#: the previous trigger settled, 0: none does (the scenario's times, as ``run``); without it, steps wait
#: so from ``wait_settled_from`` initial members on (default 1000).
SIM_OPTIONS = ("aggregate_from", "fluid_from", "wait_settled", "wait_settled_from")


@dataclass
class SimOptions:
    """How to simulate: where results go, the delay model, the implementations' options, progress."""

    out: Path = Path("reports")
    delays: DelayModel = field(default_factory=lambda: load_profile(DEFAULT_PROFILE))
    options: dict[str, Any] = field(default_factory=dict[str, Any])
    progress: Callable[[UnitProgress, int, int], None] | None = None
    #: the designs to simulate instead of the scenario's ``implementations`` (None: the scenario's)
    designs: tuple[str, ...] | None = None


def peak_rss_mb() -> float:
    """This process's peak resident set so far, in MB (Linux reports ru_maxrss in KiB)."""
    return round(resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024, 1)


def parse_delays(
    items: tuple[str, ...] | list[str], seed: int | None = None, profile: str = DEFAULT_PROFILE
) -> DelayModel:
    """The :class:`~harness.sim.model.DelayModel` of ``profile`` with ``name=value`` overrides of its
    fields; one-line errors."""
    names = {f.name: f.type for f in dataclasses.fields(DelayModel) if f.name != "profile"}
    changes: dict[str, Any] = {}
    for item in items:
        name, eq, value = item.partition("=")
        name = name.strip()
        if not eq or name not in names:
            raise ConfigError(f"--delay expects NAME=VALUE with NAME one of {', '.join(names)}; got {item!r}")
        try:
            changes[name] = int(value) if names[name] in (int, "int") else float(value)
        except ValueError:
            raise ConfigError(f"--delay {name}: not a number: {value!r}") from None
        if changes[name] < 0:
            raise ConfigError(f"--delay {name}: must be >= 0, got {value}")
        if name == "zk_client_random_order" and changes[name] not in (0, 1):
            raise ConfigError(
                f"--delay {name}: must be 0 (first come first served) or 1 (random), got {value}"
            )
        if name == "kafka_sync_answer_priority" and changes[name] not in (0, 1):
            raise ConfigError(
                f"--delay {name}: must be 0 (first come first served) or 1 (served first), got {value}"
            )
    given = changes.pop("seed", 0)
    return load_profile(profile, changes, seed=int(given if seed is None else seed))


def parse_sim_options(items: tuple[str, ...] | list[str]) -> dict[str, Any]:
    """``--option NAME=VALUE`` pairs (integers), NAME one of :data:`SIM_OPTIONS`; one-line errors."""
    out: dict[str, Any] = {}
    known = SIM_OPTIONS
    for item in items:
        name, eq, value = item.partition("=")
        if not eq or name.strip() not in known:
            raise ConfigError(
                f"--option expects NAME=VALUE with NAME one of {', '.join(known)}; got {item!r}"
            )
        try:
            out[name.strip()] = int(value)
        except ValueError:
            raise ConfigError(f"--option {name}: not an integer: {value!r}") from None
    return out


def effective_options(given: dict[str, Any]) -> dict[str, Any]:
    """Every simulator option with its value in this run (defaults filled in), for the manifest."""

    return {
        "aggregate_from": AGGREGATE_FROM,
        "fluid_from": FLUID_FROM,
        "wait_settled_from": WAIT_SETTLED_FROM,
        **given,
    }


def parse_designs(text: str | None) -> tuple[str, ...] | None:
    """``--design NAME[,NAME...]`` (names of :data:`~harness.sim.driver.DESIGNS`, each once); None when not
    given; one-line errors."""
    if text is None:
        return None
    names = tuple(n.strip() for n in text.split(",") if n.strip())
    unknown = [n for n in names if n not in DESIGNS]
    if not names or unknown or len(set(names)) != len(names):
        raise ConfigError(
            f"--design expects NAME[,NAME...], each once, of {', '.join(DESIGNS)}; got {text!r}"
        )
    return names


def _scenario_record(scenario: Scenario, designs: list[str]) -> dict[str, Any]:
    """The manifest's scenario: naming the designs simulated as its implementations where the scenario model
    knows them all (the analysis reads the scenario back with it), else as the scenario named them (the
    manifest's ``designs`` says what ran; the report lists every unit's design either way)."""
    out = scenario.model_dump(mode="json")
    if all(d in IMPLEMENTATIONS for d in designs):
        out["implementations"] = list(designs)
    return out


def simulate_scenario(scenario: Scenario, options: SimOptions) -> RunResult:
    """Simulate every unit of ``scenario`` (see the module contract) for its implementations, or for
    ``options.designs`` when given (the manifest's scenario then names those)."""
    cases = planned_cases(scenario)
    impls = list(options.designs or scenario.implementations)
    for impl in impls:
        group_factory(impl)  # a one-line error now, before anything is written
    for impl, check in (("coordinator", coordinator.unmodelled), ("consumer", consumer.unmodelled)):
        if impl not in impls:
            continue
        for case in cases:
            why = check(case.scenario)
            if why is not None:
                raise ConfigError(
                    f"{scenario.name}, case {case.label or 'default'}: {why} (run it with `herdlab run`, or "
                    "simulate legacy_zk alone: --set 'implementations=[\"legacy_zk\"]')"
                )
    run_id = new_run_id()
    run_dir = options.out / scenario.name / run_id
    run_dir.mkdir(parents=True, exist_ok=True)
    result = RunResult(run_dir=run_dir, run_id=run_id)
    units = [
        Unit(ci, case, impl, rep, run_dir / "units" / f"c{ci}-{impl}-r{rep}")
        for ci, case in enumerate(cases)
        for rep in range(scenario.repetitions)
        for impl in impls
    ]
    started = datetime.now(UTC).isoformat()
    wall0 = time.monotonic()
    try:
        for i, unit in enumerate(units):
            w0 = time.monotonic()

            def report(p: UnitProgress, i: int = i) -> None:
                if options.progress is not None:
                    options.progress(p, i, len(units))

            runner = SimUnitRunner(
                scenario, unit, options.delays, time.time_ns(), options=options.options, progress=report
            )
            outcome = runner.run()
            outcome.update(wall_s=round(time.monotonic() - w0, 2), peak_rss_mb=peak_rss_mb())
            result.units.append(outcome)
    except KeyboardInterrupt:
        result.interrupted = True
        raise
    finally:
        sources = [
            (p, {"run_id": run_id, "scenario": scenario.name, **u.context})
            for u in units
            for p in sorted((u.dir / "events").glob("*.jsonl"))
        ]
        result.events = to_parquet(sources, run_dir / "history.parquet")
        write_manifest(
            run_dir / "manifest.json",
            run_id=run_id,
            simulated=True,
            delay_model=options.delays.as_dict(),
            delay_model_text=options.delays.describe(),
            sim_options=effective_options(options.options),
            scenario=_scenario_record(scenario, impls),
            designs=impls,
            cases=[
                {
                    "index": i,
                    "label": c.label,
                    "params": c.params,
                    "members": c.members,
                    "partitions": c.partitions,
                    "processing_gap_s": c.processing_gaps,
                }
                for i, c in enumerate(cases)
            ],
            repetitions=scenario.repetitions,
            seed=scenario.seed,
            backend="simulator",
            started=started,
            finished=datetime.now(UTC).isoformat(),
            interrupted=result.interrupted,
            units=result.units,
            wall_s=round(time.monotonic() - wall0, 2),
            peak_rss_mb=peak_rss_mb(),
        )
    return result
