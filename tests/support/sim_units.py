"""One simulated unit through the simulator's own driver (:class:`harness.sim.driver.SimUnitRunner`, the
runner's settle rule and markers) and its herd counts through :func:`harness.sim.validate.unit_counts`
(the checker's trigger windows): what the simulator tests share, so none of them drives a group its own way.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from harness.run.runner import Unit, planned_cases
from harness.scenario.model import Scenario
from harness.sim.driver import SimUnitRunner
from harness.sim.model import MACHINE_PROFILE, DelayModel, load_profile
from harness.sim.validate import TriggerCounts, read_unit, unit_counts

EPOCH_NS = 10**18  # a fixed epoch: two simulations of the same unit write identical histories
#: The model's drawn lateness off (a joiner ready at the invoke, steps at ``stable + at``, heartbeats on
#: time, a LeaveGroup at the revoke, the producer started with the unit): what tests that work timings
#: out by hand assume (``machine_model(**ON_TIME, ...)``).
ON_TIME: dict[str, float] = {
    "member_release_poll_s": 0.0,
    "member_boot_s": 0.0,
    "member_boot_per_member_s": 0.0,
    "runner_step_late_s": 0.0,
    "runner_step_late_per_member_s": 0.0,
    "kafka_heartbeat_late_s": 0.0,
    "kafka_heartbeat_late_per_member_s": 0.0,
    "kafka_main_check_late_s": 0.0,
    "kafka_main_check_late_per_member_s": 0.0,
    "kafka_rejoin_late_s": 0.0,
    "kafka_rejoin_late_per_member_s": 0.0,
    "kafka_close_leave_s": 0.0,
    "producer_start_spread_s": 0.0,
}


def machine_model(**changes: Any) -> DelayModel:
    """The profile fitted to the 2-core machine (the model the tests' expectations were worked out on)
    with ``changes``; ``seed`` among them seeds it."""
    seed = int(changes.pop("seed", 0))
    return load_profile(MACHINE_PROFILE, changes, seed=seed)


def simulate_unit(
    scenario: Scenario, impl: str, unit_dir: Path, delays: DelayModel | None = None
) -> dict[str, Any]:
    """Simulate the first case of ``scenario`` for ``impl`` (repetition 0) into ``unit_dir``; the outcome."""
    case = planned_cases(scenario)[0]
    unit = Unit(0, case, impl, 0, unit_dir)
    outcome = SimUnitRunner(scenario, unit, delays or machine_model(), epoch_ns=EPOCH_NS).run()
    assert not outcome.get("failed"), outcome
    return outcome


def unit_events(unit_dir: Path) -> list[dict[str, Any]]:
    """The unit's events in time order."""
    return sorted(read_unit(unit_dir), key=lambda e: int(e["ts_ns"]))


def trigger_counts(unit_dir: Path, scenario: Scenario, broker: bool = True) -> list[TriggerCounts]:
    """The unit's herd counts per trigger (the checker's windows)."""
    return unit_counts(read_unit(unit_dir), scenario.settle_window, broker)


def api_counts(tc: TriggerCounts) -> dict[str, int]:
    """A trigger's broker group requests by API (zero counts left out)."""
    return {k: v for k, v in sorted(tc.group_requests.items()) if v}


def protocol_api_counts(tc: TriggerCounts) -> dict[str, int]:
    """:func:`api_counts` of the protocol's own requests: the client's repeated joins taken out
    (:meth:`~harness.sim.validate.TriggerCounts.protocol_counts`)."""
    return {k.removeprefix("api:"): v for k, v in tc.protocol_counts().items() if k.startswith("api:")}


def history_text(unit_dir: Path) -> str:
    """The unit's history as written (for determinism checks)."""
    return "".join(p.read_text() for p in sorted((unit_dir / "events").glob("*.jsonl")))


__all__ = ["ON_TIME", "api_counts", "history_text", "simulate_unit", "trigger_counts", "unit_events"]
