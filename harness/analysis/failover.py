"""Coordinator failover figures: per fault on the coordinator or on the ZooKeeper leader,
how long the group went unserved and in which steps, what the new coordinator lost, and whether a
deposed broker still acknowledged anything. The definitions are stated once, in
:mod:`harness.analysis.failover_verdict` (the pure part that computes each figure); this module
collects their inputs from the history with Spark.

Contract
--------
* :func:`failover_units`: per unit with a failover fault (invoked, not skipped), its ``failover``
  entry: ``faults`` (one per fault, by invoke: :func:`.failover_verdict.coordinator_entry` or
  :func:`.failover_verdict.zk_entry`), ``double_coordinator`` (``seconds``, ``episodes``, over the
  offsets partitions of the unit's coordinator faults), ``fenced`` (``"<what>/<error>"`` -> count)
  and ``deposed_acceptances`` (unit totals per kind). Units without such a fault get no entry (an
  older run's metrics are unchanged). Call it once the units' ``triggers`` are filled: a fault's
  ``reprocessed`` is its trigger window's ``duplicates`` (:mod:`.records`, by last delivery) and its
  ``records_lost`` the unit's lost records (:func:`.records.lost_condition`) whose ``produced`` event
  falls in that window (:func:`.facts.to_phase`); both None when the fault is no trigger window.

Spark jobs: the nemesis steps (one collect; a run without failover faults stops there), the small
control events the figures read (broker_change, partition_state of ``__consumer_offsets``,
coordinator_load, group_served, offsets_snapshot, members' zk_state / heartbeat_error /
rebalance_begin) in one collect, and aggregates for the large ones: the last commit per partition
before each fault's t0, deposed acceptances per fault span, fenced counts, lost records per window.
"""

from __future__ import annotations

import json
from typing import Any

from pyspark.sql import Column, DataFrame, SparkSession
from pyspark.sql import functions as F

from harness.analysis import records
from harness.analysis.facts import Facts, per_phase, to_phase
from harness.analysis.failover_verdict import (
    ACTIONS,
    COORDINATOR_FAULTS,
    FAULTS,
    OFFSETS_TOPIC,
    ZK_FAULTS,
    Step,
    acting_intervals,
    clipped_s,
    coordinator_entry,
    double_episodes,
    end_step,
    failover_parts,
    fault_spans,
    offsets_lost,
    pick_snapshot,
    steps_of,
    zk_entry,
)
from harness.analysis.frames import NS, UNIT, Frames, UnitKey, collect, join, local_frame, role_col, unit_key
from harness.analysis.metrics_model import FailoverFault, UnitFailover
from harness.kernel.events import Kind, Role

#: Small control events the figures read (collected).
SMALL_KINDS = (
    Kind.BROKER_CHANGE,
    Kind.PARTITION_STATE,
    Kind.COORDINATOR_LOAD,
    Kind.GROUP_SERVED,
    Kind.OFFSETS_SNAPSHOT,
    Kind.ZK_STATE,
    Kind.HEARTBEAT_ERROR,
    Kind.REBALANCE_BEGIN,
)
TROUBLE_STATES = ("SUSPENDED", "LOST")


def _x(name: str) -> Column:
    """A field of the ``extra`` JSON."""
    return F.get_json_object(F.col("extra"), f"$.{name}")


def _event(r: dict[str, Any]) -> dict[str, Any]:
    """A collected row as the event dict: the ``extra`` fields under the typed (non-null) ones."""
    extra = json.loads(r.pop("extra") or "{}")
    return {**extra, **{k: v for k, v in r.items() if v is not None}}


def _trouble(e: dict[str, Any]) -> bool:
    """A member's session trouble, as :mod:`.health` counts it."""
    return e.get("role") == Role.MEMBER and (
        e["kind"] == Kind.HEARTBEAT_ERROR or (e["kind"] == Kind.ZK_STATE and e.get("state") in TROUBLE_STATES)
    )


def failover_units(
    spark: SparkSession,
    frames: Frames,
    facts: Facts,
    units: dict[UnitKey, dict[str, Any]],
    keys: DataFrame,
) -> dict[UnitKey, UnitFailover]:
    """Per unit with a failover fault, its ``failover`` entry (see the module contract); ``keys``
    are :func:`.records.record_keys`."""
    c = frames.control
    step_rows = collect(
        c.where(
            role_col(Role.NEMESIS)
            & F.col("kind").isin(Kind.INVOKE, Kind.COMPLETE, Kind.SKIPPED)
            & F.col("action").isin(*ACTIONS)
        ).select(*UNIT, "ts_ns", "kind", "action", "action_id", "broker_id", "group", "extra")
    )
    by_unit: dict[UnitKey, list[dict[str, Any]]] = {}
    for r in step_rows:
        by_unit.setdefault(unit_key(r), []).append(_event(r))
    steps = {k: steps_of(v) for k, v in by_unit.items() if k in units}
    faults = {k: [s for s in ss if s.action in FAULTS and not s.skipped] for k, ss in steps.items()}
    faults = {k: v for k, v in faults.items() if v}
    if not faults:
        return {}
    fu = F.broadcast(
        local_frame(spark, [list(k) for k in faults], "case string, impl string, repetition int")
    )

    small: dict[UnitKey, list[dict[str, Any]]] = {}
    for r in collect(
        c.join(fu, UNIT, "left_semi")
        .where(
            F.col("kind").isin(*SMALL_KINDS)
            & ((F.col("kind") != Kind.PARTITION_STATE) | (F.col("topic") == OFFSETS_TOPIC))
        )
        .select(
            *UNIT,
            "ts_ns",
            "kind",
            "role",
            "source",
            "broker_id",
            "topic",
            "partition",
            "group",
            "label",
            "error",
            "state",
            "extra",
        )
    ):
        small.setdefault(unit_key(r), []).append(_event(r))

    windows: dict[UnitKey, list[dict[str, Any]]] = {}
    for r in collect(
        facts.windows().join(fu, UNIT, "left_semi").select(*UNIT, "tid", "action", "invoke", "wend")
    ):
        windows.setdefault(unit_key(r), []).append(r)

    t0s = [(*k, f.action_id, f.t0, f.group) for k, fs in faults.items() for f in fs if f.t0 is not None]
    committed = (
        _committed(
            c,
            F.broadcast(
                local_frame(
                    spark, t0s, "case string, impl string, repetition int, aid long, t0 long, fgroup string"
                )
            ),
        )
        if t0s
        else {}
    )
    spans = F.broadcast(
        local_frame(
            spark,
            [(*k, aid, s, e) for k, fs in faults.items() for aid, s, e in fault_spans(fs)],
            "case string, impl string, repetition int, aid long, sstart long, send long",
        )
    )
    deposed = _deposed(c, fu, spans)
    fenced: dict[UnitKey, dict[str, int]] = {}
    for r in collect(
        c.join(fu, UNIT, "left_semi")
        .where(F.col("kind") == Kind.FENCED)
        .groupBy(*UNIT, _x("what").alias("what"), "error")
        .count()
    ):
        fenced.setdefault(unit_key(r), {})[f"{r['what']}/{r['error']}"] = int(r["count"])
    lost_w = _lost_per_window(keys, frames, facts, fu)

    out: dict[UnitKey, UnitFailover] = {}
    for k, fs in faults.items():
        out[k] = _unit_entry(
            units[k],
            fs,
            steps[k],
            small.get(k, []),
            windows.get(k, []),
            committed.get(k, {}),
            deposed.get(k, {}),
            fenced.get(k, {}),
            lost_w.get(k, {}),
        )
    return out


def _committed(
    c: DataFrame, fdf: DataFrame
) -> dict[UnitKey, dict[int, dict[str, dict[tuple[str, int], int]]]]:
    """Per unit, fault (action id) and source (``broker`` | ``member``): the last committed offset
    per (topic, partition) before the fault's t0 (broker commits of the fault's group; members'
    commits with store kafka)."""
    is_broker = role_col(Role.BROKER)
    member_store = F.coalesce(
        _x("store"), F.when(F.coalesce(_x("impl"), F.col("impl")) == "coordinator", F.lit("kafka"))
    )
    cm = c.where(
        (F.col("kind") == Kind.COMMIT) & (is_broker | (role_col(Role.MEMBER) & (member_store == "kafka")))
    ).select(
        *UNIT,
        "ts_ns",
        "group",
        "topic",
        "partition",
        "offset",
        F.when(is_broker, F.lit("broker")).otherwise(F.lit("member")).alias("src"),
    )
    rows = collect(
        join(
            cm,
            fdf,
            UNIT,
            (F.col("ts_ns") < F.col("r_t0"))
            & (
                (F.col("src") == "member")
                | (F.col("group") == F.col("r_fgroup"))
                | F.col("r_fgroup").isNull()
            ),
        )
        .groupBy(*UNIT, F.col("r_aid").alias("aid"), "src", "topic", "partition")
        .agg(F.max_by("offset", "ts_ns").alias("offset"))
    )
    out: dict[UnitKey, dict[int, dict[str, dict[tuple[str, int], int]]]] = {}
    for r in rows:
        d = out.setdefault(unit_key(r), {}).setdefault(int(r["aid"]), {}).setdefault(r["src"], {})
        d[(str(r["topic"]), int(r["partition"]))] = int(r["offset"])
    return out


def _deposed(
    c: DataFrame, fu: DataFrame, spans: DataFrame
) -> dict[UnitKey, dict[int | None, dict[str, int]]]:
    """Per unit and fault span (action id; None before the first fault): deposed acceptances per
    kind (see :mod:`.failover_verdict`)."""
    cu = c.join(fu, UNIT, "left_semi").where(role_col(Role.BROKER))
    ps = cu.where(F.col("kind") == Kind.PARTITION_STATE).select(
        *UNIT,
        "topic",
        "partition",
        _x("leader_epoch").cast("long").alias("le"),
        _x("leader").cast("long").alias("leader"),
        "ts_ns",
    )
    acks = (
        cu.where(F.col("kind").isin(Kind.COMMIT, Kind.PRODUCE_ACK))
        .select(
            *UNIT,
            "ts_ns",
            F.when(F.col("kind") == Kind.COMMIT, F.lit("commit")).otherwise(F.lit("produce")).alias("what"),
            F.when(F.col("kind") == Kind.COMMIT, F.lit(OFFSETS_TOPIC))
            .otherwise(F.col("topic"))
            .alias("topic"),
            F.when(F.col("kind") == Kind.COMMIT, _x("offsets_partition").cast("int"))
            .otherwise(F.col("partition"))
            .alias("partition"),
            _x("leader_epoch").cast("long").alias("e"),
            _x("broker_id").cast("long").alias("b"),
        )
        .where(F.col("e") >= 0)
    )
    # deposed: a newer epoch naming another leader (a newer epoch naming b again only dropped a follower)
    dep = join(
        acks,
        F.broadcast(ps),
        [*UNIT, "topic", "partition"],
        (F.col("r_le") > F.col("e"))
        & (F.col("r_ts_ns") < F.col("ts_ns"))
        & (F.col("r_leader") != F.col("b")),
        "left_semi",
    )
    rows = collect(
        join(
            dep,
            spans,
            UNIT,
            (F.col("ts_ns") >= F.col("r_sstart")) & (F.col("ts_ns") < F.col("r_send")),
            "left",
        )
        .groupBy(*UNIT, F.col("r_aid").alias("aid"), "what")
        .count()
    )
    out: dict[UnitKey, dict[int | None, dict[str, int]]] = {}
    for r in rows:
        aid = None if r["aid"] is None else int(r["aid"])
        out.setdefault(unit_key(r), {}).setdefault(aid, {})[r["what"]] = int(r["count"])
    return out


def _lost_per_window(
    keys: DataFrame, frames: Frames, facts: Facts, fu: DataFrame
) -> dict[UnitKey, dict[int, int]]:
    """Per unit and trigger window (tid): lost records by the window of their ``produced`` event."""
    lost = (
        keys.join(fu, UNIT, "left_semi").where(records.lost_condition()).select(*UNIT, "partition", "offset")
    )
    prod = frames.produced.groupBy(*UNIT, "partition", "offset").agg(F.min("ts_ns").alias("pts"))
    rows = collect(
        per_phase(
            to_phase(lost.join(prod, [*UNIT, "partition", "offset"]), facts.phases(), "pts"),
            "lost",
            F.count("*"),
        )
    )
    out: dict[UnitKey, dict[int, int]] = {}
    for r in rows:
        out.setdefault(unit_key(r), {})[int(r["tid"])] = int(r["value"])
    return out


def _unit_entry(
    u: dict[str, Any],
    faults: list[Step],
    steps: list[Step],
    evs: list[dict[str, Any]],
    windows: list[dict[str, Any]],
    committed: dict[int, dict[str, dict[tuple[str, int], int]]],
    deposed: dict[int | None, dict[str, int]],
    fenced: dict[str, int],
    lost_w: dict[int, int],
) -> UnitFailover:
    """The unit's ``failover`` entry from its collected inputs (pure Python)."""
    origin, end_ns = int(u["origin"]), int(u["t_last"])

    def of(kind: str) -> list[dict[str, Any]]:
        return [e for e in evs if e["kind"] == kind]

    changes, states, loads = of(Kind.BROKER_CHANGE), of(Kind.PARTITION_STATE), of(Kind.COORDINATOR_LOAD)
    served, snaps = of(Kind.GROUP_SERVED), of(Kind.OFFSETS_SNAPSHOT)
    lost_sessions = [
        e for e in of(Kind.ZK_STATE) if e.get("role") == Role.MEMBER and e.get("state") == "LOST"
    ]
    rebalances = [e for e in of(Kind.REBALANCE_BEGIN) if e.get("role") == Role.MEMBER]
    trouble = [e for e in evs if _trouble(e)]
    # double-coordinator episodes over the offsets partitions of the unit's coordinator faults
    parts = sorted(
        {
            f.offsets_partition
            for f in faults
            if f.action in COORDINATOR_FAULTS and f.offsets_partition is not None
        }
    )
    episodes = [ep for p in parts for ep in double_episodes(acting_intervals(loads, steps, p, end_ns))]
    spans = {aid: (s, e) for aid, s, e in fault_spans(faults)}
    trig = {t["index"]: t for t in u.get("triggers") or []}

    entries: list[FailoverFault] = []
    for f in faults:
        win = next((w for w in windows if w["action"] == f.action and w["invoke"] == f.invoke_ns), None)
        t = None if win is None else trig.get(int(win["tid"]))
        records_lost = None if win is None else lost_w.get(int(win["tid"]), 0)
        reprocessed = None if t is None else int(t.get("duplicates") or 0)
        s, e = spans[f.action_id]
        common = {
            "origin": origin,
            "records_lost": records_lost,
            "reprocessed": reprocessed,
            "deposed": deposed.get(f.action_id, {}),
            "double_s": clipped_s(episodes, s, e),
            "session_failures": 0
            if win is None
            else sum(1 for x in trouble if win["invoke"] <= int(x["ts_ns"]) < win["wend"]),
        }
        if f.action in ZK_FAULTS:
            entries.append(
                zk_entry(
                    f,
                    window_end=None if win is None else int(win["wend"]),
                    impl=u["impl"],
                    lost_sessions=lost_sessions,
                    broker_changes=changes,
                    rebalances=rebalances,
                    **common,
                )
            )
            continue
        src = committed.get(f.action_id, {})
        last = src.get("broker") or src.get("member") or {}
        entries.append(
            coordinator_entry(
                f,
                parts=failover_parts(f, changes, states, loads, served, until=e),
                lost=offsets_lost(last, pick_snapshot(snaps, f, end_step(f, steps))),
                **common,
            )
        )
    totals: dict[str, int] = {}
    for d in deposed.values():
        for kind, n in d.items():
            totals[kind] = totals.get(kind, 0) + n
    return {
        "faults": entries,
        "double_coordinator": {
            "seconds": round(sum(b - a for a, b in episodes) / NS, 6),
            "episodes": len(episodes),
        },
        "fenced": dict(sorted(fenced.items())),
        "deposed_acceptances": {"commit": totals.get("commit", 0), "produce": totals.get("produce", 0)},
    }
