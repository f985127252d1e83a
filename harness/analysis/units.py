"""The per-unit assembly: which units a run has, and each unit's entry of the metrics document.

Contract
--------
* :func:`unit_table`: every unit with events in the history or listed in the manifest (from the
  collected control events and the deliveries' per-source figures), keyed by
  (case, impl, repetition): events, partitions (unit_start's, else the case's), the first and last
  event and the origin (its ``stable`` event, else ``unit_start``, else its first event; all in ns),
  ``topic`` (unit_start's),
  duration_s (origin to the last event), unit_started, ``failed`` (from the manifest), members and
  params (from the case), ``client``, ``broker`` and ``assignor`` (:func:`columns`), and for a unit with
  events ``processing_gap_s`` (its case's in the manifest, else derived from the manifest's scenario). A unit of the manifest without events has ``events`` 0.
* :func:`assemble`: runs every metric family on the units with events and fills each unit's
  figures: ``triggers`` (per trigger window: :func:`.latency.window_fields`,
  :func:`.herd.herd_fields` and :func:`.split_brain.split_brain` of its window), ``startup`` and
  ``drain`` (split brain before the first trigger and after settling_end), completeness and
  duplicates (:mod:`.records`), ``commits_rejected``, session failures (:mod:`.health`),
  ``steady`` (:mod:`.steady`; its ``heartbeats_per_member_s`` also flat, where measured), the split-brain totals and ``overlaps`` (every episode with its
  members' records, :func:`.split_brain.episodes_by_unit`) and, for a unit whose members were switched
  between kinds, ``migration`` (:mod:`.migration`), and for a unit with a coordinator or
  ZooKeeper-leader fault, ``failover`` (:mod:`.failover`); the end-to-end latency of each unit and
  trigger window and its series (:mod:`.e2e`); then the series (:mod:`.series`).

Where each part runs: the unit table and every family whose input is the control events and the
fold's facts (herd counts and flags, mntr samples, steady traffic, session failures and start-up,
judged commits and their per-phase values, produce errors, the phases) run in the driver over the
control events :func:`.frames.prepare` collected (:mod:`.control`). Spark runs what reads the
deliveries, its independent queries at once (:func:`.frames.together`) in three rounds: the fold's
table, the consumption buckets and the record keys' cache; then what reads those (processing
intervals, trigger rows, end-to-end latency counts, completeness per unit, undisturbed partitions);
then what reads the processing intervals (the overlap episodes and per-phase values, duplicates per
phase, the migration proof).
"""

from __future__ import annotations

import logging
from typing import Any

from pyspark.sql import DataFrame, SparkSession

from harness.analysis import (
    commits,
    cooperative,
    e2e,
    failover,
    health,
    herd,
    latency,
    migration,
    records,
    series,
    split_brain,
    steady,
)
from harness.analysis.control import Control
from harness.analysis.facts import DRAIN, STARTUP, Facts
from harness.analysis.frames import NS, Frames, UnitKey, collect, together, unit_key
from harness.analysis.metrics_model import Series
from harness.kernel.errors import ConfigError
from harness.kernel.events import Kind, Role
from harness.scenario.loading import Case, case_scenario
from harness.scenario.model import Scenario, Workload
from harness.scenario.processing import processing_gap_s

log = logging.getLogger("harness.analysis")


def unit_table(frames: Frames, control: Control, manifest: dict[str, Any]) -> dict[UnitKey, dict[str, Any]]:
    """The run's units and what is known of them before the metric families run."""
    cases = list(manifest.get("cases") or [])
    case_by_label = {c.get("label"): c for c in cases}
    rows = control.rows()
    bounds: dict[UnitKey, dict[str, Any]] = {}
    for k, events in rows.items():
        ts = [e["ts_ns"] for e in events if e["ts_ns"] is not None]
        bounds[k] = {"t_first": min(ts, default=None), "t_last": max(ts, default=None), "events": len(events)}
    # the deliveries' bounds from frames.sources (which filling the deliveries' cache computed), not a
    # third pass over the history
    for r in frames.source_rows:
        if r["uid"] not in frames.units_by_id:  # a unit none of whose sources is named (cannot be)
            continue
        b = bounds.setdefault(frames.units_by_id[r["uid"]], {"t_first": None, "t_last": None, "events": 0})
        b["t_first"] = min((t for t in (b["t_first"], r["t_first"]) if t is not None), default=None)
        b["t_last"] = max((t for t in (b["t_last"], r["t_last"]) if t is not None), default=None)
        b["events"] += r["events"]
    marks = {k: _marks(events) for k, events in rows.items()}
    units: dict[UnitKey, dict[str, Any]] = {}
    for k, b in bounds.items():
        m = marks.get(k, {})
        p0 = None
        if m.get("p") is not None:
            try:
                p0 = int(m["p"])
            except ValueError:
                p0 = None
        if p0 is None:
            p0 = int((case_by_label.get(k[0]) or {}).get("partitions") or 0)
        origin = m.get("t_stable") or m.get("t_start") or b["t_first"]
        units[k] = {
            "case": k[0],
            "impl": k[1],
            "repetition": k[2],
            "events": b["events"],
            "partitions": p0,
            "t_first": b["t_first"],
            "t_last": b["t_last"],
            "origin": origin,
            "duration_s": round((b["t_last"] - origin) / 1e9, 3),
            "unit_started": m.get("t_start") is not None,
            "topic": m.get("topic"),
        }
    manifest_units = {
        (u.get("case"), u.get("impl"), int(u.get("repetition") or 0)): u for u in manifest.get("units") or []
    }
    for k, mu in manifest_units.items():
        if k not in units:
            units[k] = {"case": k[0], "impl": k[1], "repetition": k[2], "events": 0, "partitions": None}
        if mu.get("failed"):
            units[k]["failed"] = mu["failed"]
        if mu.get("broker_config"):
            units[k]["broker_config"] = mu["broker_config"]
    libraries = {
        k: min(libs) for k, events in rows.items() if (libs := [e["library"] for e in events if _library(e)])
    }
    for k, u in units.items():
        case = case_by_label.get(k[0]) or {}
        u["members"] = case.get("members")
        u["params"] = case.get("params") or {}
        if u["events"]:
            u["processing_gap_s"] = _processing_gap_s(case, k[1], manifest.get("scenario") or {})
        version = (u.get("broker_config") or {}).get("version")
        u.update(columns(k[1], libraries.get(k), u["params"], manifest.get("scenario") or {}, version))
    return units


def _marks(rows: list[dict[str, Any]]) -> dict[str, Any]:
    """A unit's marks from its control events: ``t_start`` (the first ``unit_start``), ``t_stable``
    (the first ``stable``), ``p`` and ``topic`` (the first ``unit_start`` that has them)."""
    starts = [e for e in rows if e["kind"] == Kind.UNIT_START]
    stables = [e["ts_ns"] for e in rows if e["kind"] == Kind.STABLE and e["ts_ns"] is not None]
    return {
        "t_start": min((e["ts_ns"] for e in starts if e["ts_ns"] is not None), default=None),
        "t_stable": min(stables, default=None),
        "p": next((e["partitions"] for e in starts if e["partitions"] is not None), None),
        "topic": next((e["topic"] for e in starts if e["topic"] is not None), None),
    }


def _library(e: dict[str, Any]) -> bool:
    """Whether a control event names its member's client library."""
    return e["role"] == Role.MEMBER and e["library"] is not None


def _processing_gap_s(case: dict[str, Any], impl: str, scenario: dict[str, Any]) -> float:
    """The unit's processing gap bound: its case's ``processing_gap_s`` in the manifest, else derived
    (:func:`harness.scenario.processing.processing_gap_s`) from the manifest's scenario with the case's
    parameters, as a run writing no bound had run it. A scenario this version no longer reads (an older
    run's keys) gives the bound of the scenario defaults at its workload's rate, with a warning."""
    gaps = case.get("processing_gap_s") or {}
    if impl in gaps:
        return float(gaps[impl])
    try:
        s = case_scenario(scenario, case.get("params") or {})
    except ConfigError as e:
        rate = (scenario.get("workload") or {}).get("rate")
        s = Scenario(
            name="manifest",
            workload=Workload(rate=rate) if isinstance(rate, int | float) and rate > 0 else Workload(),
        )
        log.warning(
            "case %s: %s; its processing gap bound is the defaults' at %g records/s",
            case.get("label"),
            e,
            s.workload.rate,
        )
    partitions = int(case.get("partitions") or 0) or Case(s, {}).partitions
    return processing_gap_s(s, impl, partitions)


def columns(
    impl: str,
    library: str | None,
    params: dict[str, Any],
    scenario: dict[str, Any],
    broker_version: str | None = None,
) -> dict[str, str]:
    """A unit's report column: ``client`` (the members' ``library``, else the scenario's
    ``group.coordinator.client`` of the case, else of the scenario; for legacy_zk the case's or scenario's
    ``group.legacy_zk.client`` when it is not herdlab's own member, else ""), ``broker`` (the
    case's ``cluster.broker``, else the scenario's, else "herdlab"; Apache Kafka with its version: the
    ``broker_version`` the unit ran, else the case's or scenario's ``cluster.kafka_version``, else 3.9,
    e.g. ``apache-kafka 3.9.2``) and ``assignor`` (the case's ``group.assignor``, else the scenario's,
    else "range"). A consumer unit's client and assignor are ``group.consumer``'s (default librdkafka;
    its server-side assignor, default uniform, the broker's)."""
    group = scenario.get("group") or {}
    client = ""
    assignor = params.get("group.assignor") or group.get("assignor") or "range"
    if impl == "consumer":
        consumer = group.get("consumer") or {}
        client = library or params.get("group.consumer.client") or consumer.get("client") or "librdkafka"
        assignor = params.get("group.consumer.assignor") or consumer.get("assignor") or "uniform"
    elif impl == "legacy_zk":
        legacy = params.get("group.legacy_zk.client") or (group.get("legacy_zk") or {}).get("client")
        client = "" if legacy in (None, "python") else legacy
    else:
        client = (
            library
            or params.get("group.coordinator.client")
            or (group.get("coordinator") or {}).get("client")
            or "kafka-python"
        )
    cluster = scenario.get("cluster") or {}
    broker = params.get("cluster.broker") or cluster.get("broker") or "herdlab"
    if broker == "apache-kafka":
        version = (
            broker_version or params.get("cluster.kafka_version") or cluster.get("kafka_version") or "3.9"
        )
        broker = f"{broker} {version}"
    return {"client": str(client), "broker": str(broker), "assignor": str(assignor)}


def _unit_values(df: DataFrame) -> dict[UnitKey, dict[str, float]]:
    out: dict[UnitKey, dict[str, float]] = {}
    for r in collect(df):
        out.setdefault(unit_key(r), {})[r["key"]] = r["value"]
    return out


def _phase_values(df: DataFrame) -> dict[tuple[Any, ...], dict[str, float]]:
    out: dict[tuple[Any, ...], dict[str, float]] = {}
    for r in collect(df):
        out.setdefault((*unit_key(r), r["tid"]), {})[r["key"]] = r["value"]
    return out


def _merged(a: dict[Any, dict[str, float]], b: dict[Any, dict[str, float]]) -> dict[Any, dict[str, float]]:
    """Two families' values per key (unit or phase) in one dict (their value names differ)."""
    out = {k: dict(v) for k, v in a.items()}
    for k, v in b.items():
        out.setdefault(k, {}).update(v)
    return out


def assemble(
    spark: SparkSession,
    frames: Frames,
    control: Control,
    units: dict[UnitKey, dict[str, Any]],
    window_s: float,
    series_out: Series,
) -> None:
    """Fill the figures of ``units`` (all with events) and the series (see the module contract)."""
    facts = Facts(frames, control, int(round(window_s * NS)))
    keys = records.record_keys(frames)  # cached by the first round's count
    # three rounds of independent jobs (see frames.together): what each round computes is pinned or
    # cached before the next reads it, so no two threads compute one table
    a = together(
        facts=facts.all,
        buckets=lambda: latency.buckets(frames),
        keys=keys.count,
    )
    buckets = a["buckets"]
    # the families over the control events and the fold's facts: plain Python over collected rows
    samples = herd.mntr_samples(control)
    herd_counts = herd.counts(facts, control)
    judged = commits.commits(facts, control)
    control_values = _merged(
        _merged(steady.unit_values(facts, control), health.unit_values(facts, control)),
        _merged(herd.unit_values(control), records.produce_errors(control)),
    )
    b = together(
        segs=lambda: split_brain.segments(facts, frames, split_brain.gap_table(frames, units)),
        trig_rows=lambda: latency.trigger_rows(facts, frames, buckets),
        e2e_counts=lambda: e2e.counts(facts, keys, frames),
        # what the third round's values do not need from this one, here: planned and computed while
        # this round's other jobs run (planned after them, it left a core idle for seconds)
        unit_first=lambda: _unit_values(records.unit_values(keys, frames)),
        undisturbed=lambda: _phase_values(cooperative.undisturbed(facts, frames)),
    )
    segs, trig_rows = b["segs"], b["trig_rows"]
    phases = facts.phases()

    islands = split_brain.overlap_islands(segs)
    c = together(
        phase=lambda: _phase_values(
            split_brain.phase_values(islands, phases).unionByName(records.phase_values(keys, phases))
        ),
        episodes=lambda: split_brain.episode_records(islands, segs, frames, phases),
        moved=lambda: migration.migration_units(spark, frames, units, keys, segs),
    )
    per_phase = c["phase"]
    episodes = split_brain.episodes_by_unit(c["episodes"], {k: u["origin"] for k, u in units.items()})
    per_unit, moved = (
        _merged(_merged(control_values, b["unit_first"]), commits.unit_values(judged)),
        c["moved"],
    )
    per_phase = _merged(_merged(per_phase, b["undisturbed"]), commits.phase_values(judged, facts))
    lost = records.lost_samples(keys, per_unit)

    by_unit: dict[UnitKey, list[dict[str, Any]]] = {}
    for r in trig_rows:
        by_unit.setdefault(unit_key(r), []).append(r)
    for k, u in units.items():
        origin = u["origin"]
        pu = per_unit.get(k, {})
        has_broker, has_mntr = bool(pu.get("has_broker")), bool(pu.get("has_mntr"))
        triggers = []
        for r in sorted(by_unit.get(k, []), key=lambda r: r["tid"]):
            tk = (*k, r["tid"])
            triggers.append(
                {
                    **latency.window_fields(r, origin),
                    **herd.herd_fields(
                        r,
                        herd_counts.get(tk, {}),
                        samples.get(k, []),
                        u["impl"],
                        has_broker,
                        has_mntr,
                        bool(pu.get("tapped")),
                    ),
                    **split_brain.split_brain(per_phase.get(tk, {})),
                    **cooperative.cooperative_fields(r["outcome"], per_phase.get(tk, {})),
                }
            )
        u["triggers"] = triggers
        u["startup"] = split_brain.split_brain(per_phase.get((*k, STARTUP), {}))
        u["drain"] = split_brain.split_brain(per_phase.get((*k, DRAIN), {}))
        u.update(records.records_fields(pu, lost.get(k, [])))
        u["commits_rejected"] = int(pu.get("commits_rejected") or 0)
        u.update(health.health_fields(pu))
        u["steady"] = steady.steady_fields(pu)
        if "heartbeats_per_member_s" in u["steady"]:  # the flat copy the aggregates read (consumer units)
            u["heartbeats_per_member_s"] = u["steady"]["heartbeats_per_member_s"]
        # unit totals of split brain: before the first trigger and in the trigger windows (the
        # drain and teardown are reported apart, in `drain`)
        u.update(
            split_brain.unit_totals(
                [u["startup"], *triggers],
                [per_phase.get((*k, tid), {}) for tid in [STARTUP, *[t["index"] for t in triggers]]],
            )
        )
        u["overlaps"] = episodes.get(k, [])
        if k in moved:
            u["migration"] = moved[k]
    if "e2e" not in series_out:
        series_out["e2e"] = []
    e2e.fill(b["e2e_counts"], units, series_out["e2e"])
    for k, entry in failover.failover_units(spark, frames, facts, units, keys).items():
        units[k]["failover"] = entry  # after the triggers: a fault's records figures are its window's
    series.fill_series(spark, facts, buckets, islands, units, series_out)
