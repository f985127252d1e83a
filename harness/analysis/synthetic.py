"""Synthetic run directories with known answers: for the analysis benchmark and round-trip tests.

Contract
--------
:func:`write_synthetic_run` writes ``<root>/<scenario>/<run_id>/history.parquet`` (the schema of
:mod:`harness.history.schema`) and ``manifest.json`` for ``cases x implementations x repetitions``
units shaped like the ``herd`` scenario, in the history contract of :mod:`harness.kernel.events`
(every event has a ``role``; nemesis actions are ``invoke`` / ``complete`` pairs sharing an
``action_id``; the markers ``unit_start``, ``stable``, ``settling_end``, ``drained`` and the
``zk_mntr`` samples have role ``harness``). Per unit: N members over N partitions (range
assignment; ``assigned`` / ``revoked`` one event per partition, legacy too), a producer at
``rate`` records/s, and three triggers after the group is stable: join, leave and crash at 5, 25
and 45 s of the timeline (scaled by ``duration_s / 60``); ``settling_end`` ``duration_s`` after
``stable``; then the drain (the producer's tail is processed), ``drained`` and the members' stops.

The generator knows every answer it builds in. :attr:`SyntheticRun.expected` maps (case label,
implementation, repetition) to the figures of that unit under the metric names of
``metrics["units"]`` (see :mod:`harness.analysis.synthetic_unit` for what each trigger writes):

* unit: ``produced``, ``processed``, ``lost``, ``not_drained``, ``duplicates``,
  ``overlap_episodes``, ``overlap_s``, ``commits_non_owner`` (0), ``commits_stale_generation``
  (0; None for legacy_zk, whose commits carry no generation) and ``steady`` (``window_s``,
  ``zk_commits_per_s``, ``broker_per_s``);
* per trigger: ``action``, ``outcome``, ``startup_s``, ``latency_s``, ``detection_s``,
  ``convergence_s``, the herd counts (``watches``, ``zk_requests``, ``zk_requests_by_op``,
  ``zk_packets``, ``broker_group_requests``, ``broker_requests_by_api``,
  ``coordination_requests``, ``conflicts``, ``failed_attempts``, ``rebalance_attempts``,
  ``group_rebalances``) and its split brain (``overlap_episodes``, ``overlap_s``, ``duplicates``).

Knobs with known effects: ``lose`` records below the top of their partition are never processed
(lost); the last ``undrained`` records produced are never processed (not drained); ``zombie_s > 0``
makes an old owner replay records after its revocation (one overlap episode of ``zombie_s`` per
trigger that moved a partition from a member that stays); ``settle_last=False`` ends the settling
phase before the crash can settle (outcome ``never``).

Records and produced events (the bulk) are built with numpy, one unit at a time, so memory stays
bounded by the largest unit.
"""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np
import pyarrow.parquet as pq

from harness.analysis.synthetic_unit import (
    JOIN_STARTUP_S,
    NS,
    UnitOptions,
    build_unit,
    detection_s,
    latency_s,
)
from harness.history.schema import SCHEMA

BASE_NS = 1_800_000_000_000_000_000

__all__ = [
    "JOIN_STARTUP_S",
    "SyntheticRun",
    "detection_s",
    "latency_s",
    "rate_for",
    "write_synthetic_run",
]


@dataclass
class SyntheticRun:
    """What :func:`write_synthetic_run` wrote and the answers it built in."""

    run_dir: Path
    events: int
    units: int
    expected: dict[tuple[str, str, int], dict[str, Any]] = field(default_factory=dict)


def rate_for(events: int, units: int, duration_s: float) -> float:
    """The producer rate that makes a run of ``units`` units about ``events`` events."""
    return max(1.0, events / (2.0 * units * (duration_s + 1.0)))


def write_synthetic_run(
    root: str | Path,
    *,
    members: tuple[int, ...] = (10, 25, 50),
    implementations: tuple[str, ...] = ("legacy_zk", "coordinator"),
    repetitions: int = 3,
    rate: float = 200.0,
    duration_s: float = 60.0,
    redeliver_s: float = 0.05,
    lose: int = 0,
    undrained: int = 0,
    zombie_s: float = 0.0,
    settle_last: bool = True,
    scenario: str = "herd",
    run_id: str = "synthetic",
    settle_window_s: float = 3.0,
    seed: int = 1,
) -> SyntheticRun:
    """Write a synthetic run (see the module contract). Raises ValueError when the parameters
    cannot produce the built-in answers (fewer than 3 members, windows too short to settle)."""
    unknown = sorted(set(implementations) - {"legacy_zk", "coordinator"})
    if unknown:
        raise ValueError(f"unknown implementation(s) {', '.join(unknown)}: use legacy_zk, coordinator")
    d = Path(root) / scenario / run_id
    d.mkdir(parents=True, exist_ok=True)
    rng = np.random.default_rng(seed)
    out = SyntheticRun(run_dir=d, events=0, units=0)
    cases = [
        {"index": i, "label": f"members={n}", "params": {"group.members": n}, "members": n, "partitions": n}
        for i, n in enumerate(members)
    ]
    opts = UnitOptions(
        rate=rate,
        duration_s=duration_s,
        redeliver_s=redeliver_s,
        lose=lose,
        undrained=undrained,
        zombie_s=zombie_s,
        settle_last=settle_last,
        settle_window_s=settle_window_s,
    )
    units = []
    start = BASE_NS
    with pq.ParquetWriter(d / "history.parquet", SCHEMA, compression="zstd") as writer:
        for case in cases:
            for rep in range(repetitions):
                for impl in implementations:
                    ctx = {
                        "run_id": run_id,
                        "scenario": scenario,
                        "case": case["label"],
                        "impl": impl,
                        "repetition": rep,
                    }
                    table, expected = build_unit(ctx, case["members"], start, opts, rng)
                    writer.write_table(table)
                    out.events += table.num_rows
                    out.units += 1
                    out.expected[(case["label"], impl, rep)] = expected
                    units.append(
                        {
                            "unit": f"c{case['index']}-{impl}-r{rep}",
                            **{k: ctx[k] for k in ("case", "impl", "repetition")},
                        }
                    )
                    start += int((duration_s + 20) * NS)
    manifest = {
        "run_id": run_id,
        "scenario": {
            "name": scenario,
            "description": "synthetic history (harness.analysis.synthetic)",
            "implementations": list(implementations),
            "repetitions": repetitions,
            "settle_window": settle_window_s,
        },
        "cases": cases,
        "repetitions": repetitions,
        "backend": "synthetic",
        "interrupted": False,
        "units": units,
    }
    (d / "manifest.json").write_text(json.dumps(manifest, indent=2) + "\n")
    return out
