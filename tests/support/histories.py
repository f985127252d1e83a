"""Hand-made histories: events written the way members, the broker, the producer and the nemesis
write them, at times given in integer milliseconds (so every expected figure is exact).

:class:`UnitHistory` builds one unit's events; :func:`write_run` writes a run directory
(``history.parquet`` through the harness's own schema code, and ``manifest.json``).
"""

from __future__ import annotations

import json
from collections.abc import Iterable
from pathlib import Path
from typing import Any

import pyarrow as pa
import pyarrow.parquet as pq

from harness.history.schema import SCHEMA, rows_to_table

T0_NS = 1_800_000_000_000_000_000  # an arbitrary wall-clock origin
MS = 1_000_000


def ns(ms: int) -> int:
    return T0_NS + ms * MS


def role_of(source: str, kind: str) -> str:
    """The role a writer of ``source`` sets (harness.kernel.events)."""
    if source == "nemesis":
        return (
            "harness" if kind in ("unit_start", "stable", "settling_end", "drained", "zk_mntr") else "nemesis"
        )
    if source == "producer":
        return "producer"
    if source.startswith("broker") or source == "tap":  # the Kafka tap writes as the broker it stands for
        return "broker"
    return "member"


class UnitHistory:
    """Events of one unit (case, impl, repetition); ``topic`` is the unit's topic."""

    def __init__(
        self,
        case: str,
        impl: str = "coordinator",
        repetition: int = 0,
        partitions: int = 1,
        gap_s: float | None = None,
    ) -> None:
        """``gap_s``: the case's processing gap bound in the manifest (None: none written, so the
        analysis derives it from the manifest's scenario)."""
        self.case, self.impl, self.repetition, self.partitions = case, impl, repetition, partitions
        self.gap_s = gap_s
        self.topic = f"t-{case}"
        self.events: list[dict[str, Any]] = []
        self._action_id = 0

    def at(self, ms: int, kind: str, source: str, **fields: Any) -> UnitHistory:
        self.events.append(
            {"ts_ns": ns(ms), "source": source, "role": role_of(source, kind), "kind": kind, **fields}
        )
        return self

    # harness markers
    def unit_start(self, ms: int, members: list[str]) -> UnitHistory:
        return self.at(
            ms,
            "unit_start",
            "nemesis",
            topic=self.topic,
            group="g",
            partitions=self.partitions,
            members=members,
        )

    def stable(self, ms: int) -> UnitHistory:
        return self.at(ms, "stable", "nemesis")

    def settling_end(self, ms: int) -> UnitHistory:
        return self.at(ms, "settling_end", "nemesis")

    def mntr(self, ms: int, label: str, packets: int) -> UnitHistory:
        return self.at(
            ms,
            "zk_mntr",
            "nemesis",
            label=label,
            counters={"zk_packets_received": packets, "zk_packets_sent": packets},
        )

    # nemesis: invoke / complete / skipped pairs
    def action(
        self,
        invoke_ms: int,
        action: str,
        targets: list[str],
        complete_ms: int | None = None,
        trigger: bool = True,
        skipped: str | None = None,
        **kw: Any,
    ) -> UnitHistory:
        """An action's invoke and its complete (at ``complete_ms``, default the invoke) or skipped."""
        self._action_id += 1
        pair = {"action": action, "action_id": self._action_id, "targets": targets, "trigger": trigger, **kw}
        self.at(invoke_ms, "invoke", "nemesis", **pair)
        if skipped is not None:
            return self.at(invoke_ms, "skipped", "nemesis", reason=skipped, **pair)
        return self.at(invoke_ms if complete_ms is None else complete_ms, "complete", "nemesis", **pair)

    # members
    def ready(self, ms: int, name: str) -> UnitHistory:
        return self.at(ms, "ready", name)

    def started(self, ms: int, name: str, **kw: Any) -> UnitHistory:
        return self.at(ms, "started", name, **kw)

    def joined(
        self, ms: int, name: str, *parts: int, generation: int | None = None, member: str | None = None
    ) -> UnitHistory:
        """A completed rebalance: ``assigned`` per partition, then ``rebalance_end`` ok."""
        self.assigned(ms, name, *parts, generation=generation, member=member)
        return self.at(ms, "rebalance_end", name, outcome="ok", generation=generation, member=member)

    def stopped(self, ms: int, name: str) -> UnitHistory:
        return self.at(ms, "stopped", name, clean=True)

    def assigned(
        self, ms: int, name: str, *parts: int, generation: int | None = None, member: str | None = None
    ) -> UnitHistory:
        """One event per partition (both member kinds write them so)."""
        for p in parts:
            self.at(ms, "assigned", name, topic=self.topic, partition=p, generation=generation, member=member)
        return self

    def revoked(
        self, ms: int, name: str, *parts: int, generation: int | None = None, member: str | None = None
    ) -> UnitHistory:
        for p in parts:
            self.at(ms, "revoked", name, topic=self.topic, partition=p, generation=generation, member=member)
        return self

    def records(self, name: str, p: int, offsets: Iterable[int], from_ms: int, step_ms: int) -> UnitHistory:
        for i, o in enumerate(offsets):
            self.at(from_ms + i * step_ms, "record", name, topic=self.topic, partition=p, offset=o, seq=o)
        return self

    def produced(self, p: int, offsets: Iterable[int], from_ms: int, step_ms: int) -> UnitHistory:
        for i, o in enumerate(offsets):
            self.at(
                from_ms + i * step_ms, "produced", "producer", topic=self.topic, partition=p, offset=o, seq=o
            )
        return self

    def context(self, run_id: str, scenario: str) -> dict[str, Any]:
        """The run-level columns of this unit's events (as the runner gives them to the merge)."""
        return {
            "run_id": run_id,
            "scenario": scenario,
            "case": self.case,
            "impl": self.impl,
            "repetition": self.repetition,
        }

    def rows(self, run_id: str, scenario: str) -> list[dict[str, Any]]:
        """The events with the unit's run-level columns (the context winning over the event's)."""
        ctx = self.context(run_id, scenario)
        return [{**e, **ctx} for e in self.events]


def write_run(
    root: Path,
    units: list[UnitHistory],
    settle_window_s: float = 1.0,
    scenario: str = "handmade",
    run_id: str = "run-1",
    manifest_units: list[dict[str, Any]] | None = None,
) -> Path:
    """A run directory with ``history.parquet`` and ``manifest.json`` for ``units``."""
    d = root / scenario / run_id
    d.mkdir(parents=True, exist_ok=True)
    # as the runner merges them: the unit's context wins the run-level columns, an event's own
    # differing value (a member's ``impl``) is kept in ``extra``
    tables = [rows_to_table(u.events, u.context(run_id, scenario)) for u in units if u.events]
    table = pa.concat_tables(tables) if tables else SCHEMA.empty_table()
    if table.num_rows:
        table = table.sort_by("ts_ns")
    pq.write_table(table, d / "history.parquet")
    cases: dict[str, dict[str, Any]] = {}
    for u in units:
        case = cases.setdefault(
            u.case,
            {"index": len(cases), "label": u.case, "params": {}, "members": 2, "partitions": u.partitions},
        )
        if u.gap_s is not None:
            case.setdefault("processing_gap_s", {})[u.impl] = u.gap_s
    manifest = {
        "run_id": run_id,
        "scenario": {
            "name": scenario,
            "settle_window": settle_window_s,
            "implementations": sorted({u.impl for u in units}),
        },
        "cases": list(cases.values()),
        "repetitions": max((u.repetition for u in units), default=0) + 1,
        "backend": "handmade",
        "interrupted": False,
        "units": manifest_units
        if manifest_units is not None
        else [
            {
                "unit": f"{u.case}-{u.impl}-r{u.repetition}",
                "case": u.case,
                "impl": u.impl,
                "repetition": u.repetition,
            }
            for u in units
        ],
    }
    (d / "manifest.json").write_text(json.dumps(manifest, indent=2))
    return d
