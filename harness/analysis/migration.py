"""The migration proof: a group moved between member kinds (ZooKeeper-era ``legacy_zk`` members and
``coordinator`` members), partition by partition: what was committed where, where the new owners
resumed, and whether a record was lost, replayed beyond the uncommitted window or processed by both
kinds at once.

Contract
--------
* :func:`switch_steps`: the nemesis ``invoke`` events of the run's migration timeline (``migration``
  set) and of every step that starts members of a named kind (``member_kind`` set), collected (a
  handful per unit). One Spark job on the pinned control events; a run without a ``switch`` or
  ``rollback`` step stops there (:func:`migration_units` returns ``{}``).
* A *switch* is the group of nemesis steps with the same ``migration_step`` whose ``migration`` is
  ``switch`` or ``rollback``: to the ``member_kind`` its start steps carry (without one: ``coordinator`` for a
  switch, ``legacy_zk`` for a rollback), from the kind that action replaces (switch: legacy_zk -> coordinator,
  coordinator -> consumer; rollback: coordinator -> legacy_zk, consumer -> coordinator); its
  ``t_S`` is the group's first invoke and its ``mode`` the steps' ``mode`` when they carry one,
  else ``all_at_once`` when the group stopped its members in one step, ``rolling`` otherwise.
* A member's kind (:func:`member_kinds`): the ``impl`` its ``ready`` (else ``started``) event wrote
  (kept in ``extra`` when the unit's context overrode the column; ``consumer`` for a ``coordinator`` member
  whose ``started`` says ``group_protocol`` ``consumer``), else the ``member_kind`` of a step that started it,
  else the unit's implementation. So the kinds a switch moves between are ``legacy_zk`` -> ``coordinator``
  (the ZooKeeper switch) or ``coordinator`` -> ``consumer`` (the classic-to-consumer migration: the
  member's group protocol), and back for ``rollback``.
* :func:`migration_units`: per unit with a switch, ``{"switches": [...], "verdict": worst}``; per
  switch ``step``, ``action``, ``mode``, ``from``, ``to``, ``t_s``, ``verdict`` and one entry per
  partition 0..P-1 of the unit's topic (:func:`.migration_verdict.partition_entry` states each
  derived figure and the verdict). For switch S and partition p: ``taken_over_s``, the first
  ``assigned`` of p to a new-kind member after t_S; ``zookeeper_committed``, the offset of the last
  legacy ``commit`` with store zookeeper on p before taken-over; ``kafka_committed``, the last
  commit on p the broker accepted before taken-over (the broker-side ``commit`` events where the
  unit has them: herdlab's broker's, or a Kafka tap's of a third-party broker,
  :func:`.commits.broker_commit_units`; else member commits with store kafka); a commit without ``store`` was
  written to ZooKeeper by a legacy member and to the broker by a coordinator member;
  ``processed_last``, the largest offset of p an old-kind member processed before taken-over;
  ``resumed``, per new-kind member assigned p after t_S, the first offset it processed on p after
  that assignment, in time order (offset None when it processed none); ``reprocessed``, distinct
  offsets of p processed by a new-kind member from t_S on that an old-kind member processed too;
  ``lost``, the unit's lost offsets of p (:func:`.records.lost_condition`); ``overlap_episodes`` /
  ``overlap_s``, overlap episodes on p (:func:`.split_brain.overlap_islands`) between members of
  two kinds, each given to the switch in force when it began. Spark jobs on the history frames:
  the new owners' first assignments, then every per-partition figure in one job (long format),
  then the cross-kind overlaps; records are joined and aggregated in Spark, only per-partition
  results reach the driver. Times are seconds since the unit's origin.
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any

from pyspark.sql import Column, DataFrame, SparkSession
from pyspark.sql import functions as F

from harness.analysis import records
from harness.analysis.commits import broker_commit_units
from harness.analysis.frames import (
    INF,
    NS,
    UNIT,
    Frames,
    UnitKey,
    at_s,
    collect,
    join,
    local_frame,
    role_col,
    unit_key,
)
from harness.analysis.metrics_model import MigrationPartition, MigrationSwitch, UnitMigration
from harness.analysis.migration_verdict import partition_entry, worst
from harness.analysis.split_brain import overlap_islands
from harness.kernel.events import JOIN_ACTIONS, Kind, Role

LEGACY, COORDINATOR, CONSUMER = "legacy_zk", "coordinator", "consumer"
SWITCH_ACTIONS = ("switch", "rollback")
#: The store a commit event without ``store`` (an older history) was written to, by member kind.
DEFAULT_STORE = {LEGACY: "zookeeper", COORDINATOR: "kafka", CONSUMER: "kafka"}
#: (action, the kind its members start) -> the kind it replaces.
_REPLACED = {
    ("switch", COORDINATOR): LEGACY,
    ("switch", CONSUMER): COORDINATOR,
    ("rollback", LEGACY): COORDINATOR,
    ("rollback", COORDINATOR): CONSUMER,
}


def other(kind: str) -> str:
    """The other member kind."""
    return COORDINATOR if kind == LEGACY else LEGACY


def _x(name: str) -> Column:
    """A field of the ``extra`` JSON (fields not parsed by :data:`.frames.EXTRA_SCHEMA`)."""
    return F.get_json_object(F.col("extra"), f"$.{name}")


def switch_steps(frames: Frames) -> list[dict[str, Any]]:
    """Nemesis invokes with ``migration`` or ``member_kind`` set (see the module contract)."""
    c = frames.control
    rows = c.where(
        (F.col("kind") == Kind.INVOKE)
        & role_col(Role.NEMESIS)
        & (_x("migration").isNotNull() | _x("member_kind").isNotNull())
    ).select(
        *UNIT,
        "ts_ns",
        "action",
        "targets",
        _x("migration").alias("migration"),
        _x("migration_step").cast("int").alias("migration_step"),
        _x("member_kind").alias("member_kind"),
        _x("mode").alias("mode"),
    )
    return collect(rows)


def switches_of(steps: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """A unit's switches (see the module contract) from its ``steps``, by ``t_s`` (ns)."""
    groups: dict[int, list[dict[str, Any]]] = {}
    for s in steps:
        if s.get("migration") in SWITCH_ACTIONS and s.get("migration_step") is not None:
            groups.setdefault(int(s["migration_step"]), []).append(s)
    out = []
    for n, ss in groups.items():
        action = ss[0]["migration"]
        started = next((s["member_kind"] for s in ss if s.get("member_kind")), None)
        dst = started or (COORDINATOR if action == "switch" else LEGACY)
        src = _REPLACED.get((action, dst), other(dst))
        stops = [s for s in ss if s.get("action") == "stop_member"]
        mode = next((s["mode"] for s in ss if s.get("mode")), None) or (
            "all_at_once" if len(stops) <= 1 else "rolling"
        )
        out.append(
            {
                "step": n,
                "action": action,
                "mode": mode,
                "from": src,
                "to": dst,
                "t_ns": min(int(s["ts_ns"]) for s in ss),
            }
        )
    return sorted(out, key=lambda s: (s["t_ns"], s["step"]))


def member_kinds(
    frames: Frames, steps: dict[UnitKey, list[dict[str, Any]]], units: Iterable[UnitKey]
) -> dict[UnitKey, dict[str, str]]:
    """Per unit, each member's kind (see the module contract): one small Spark job."""
    wanted = set(units)
    c = frames.control
    rows = collect(
        c.where(F.col("kind").isin(Kind.READY, Kind.STARTED) & role_col(Role.MEMBER))
        .select(
            *UNIT, "ident", "kind", "ts_ns", _x("impl").alias("own_impl"), _x("group_protocol").alias("gp")
        )
        .where(F.col("own_impl").isNotNull())
    )
    # a coordinator member whose start said it runs the consumer group protocol is of kind consumer
    consumer = {
        (unit_key(r), r["ident"]) for r in rows if r["own_impl"] == COORDINATOR and r["gp"] == CONSUMER
    }
    out: dict[UnitKey, dict[str, str]] = {k: {} for k in wanted}
    for k in wanted:  # the steps that started members of a named kind, in time order
        for s in sorted(steps.get(k, []), key=lambda s: s["ts_ns"]):
            if s.get("member_kind") and s.get("action") in JOIN_ACTIONS:
                for t in s.get("targets") or []:
                    out[k][t] = s["member_kind"]
    # what the member itself wrote wins: started first, then ready over it
    for r in sorted(rows, key=lambda r: (r["kind"] == Kind.READY, r["ts_ns"])):
        k = unit_key(r)
        if k in wanted:
            out[k][r["ident"]] = CONSUMER if (k, r["ident"]) in consumer else r["own_impl"]
    return out


def _kinds_df(spark: SparkSession, kinds: dict[UnitKey, dict[str, str]]) -> DataFrame:
    rows = [(k[0], k[1], k[2], ident, kind) for k, m in kinds.items() for ident, kind in m.items()]
    return local_frame(spark, rows, "case string, impl string, repetition int, ident string, mkind string")


def _with_kind(df: DataFrame, kinds: DataFrame) -> DataFrame:
    """``df`` (unit, ident, ...) with ``mkind``: the member's kind, else the unit's implementation."""
    return df.join(F.broadcast(kinds), [*UNIT, "ident"], "left").withColumn(
        "mkind", F.coalesce(F.col("mkind"), F.col("impl"))
    )


def migration_units(
    spark: SparkSession,
    frames: Frames,
    units: dict[UnitKey, dict[str, Any]],
    keys: DataFrame,
    segs: DataFrame,
) -> dict[UnitKey, UnitMigration]:
    """Per unit with a switch, its ``migration`` entry (see the module contract); ``keys`` are
    :func:`.records.record_keys`, ``segs`` :func:`.split_brain.segments`."""
    by_unit: dict[UnitKey, list[dict[str, Any]]] = {}
    for s in switch_steps(frames):
        by_unit.setdefault(unit_key(s), []).append(s)
    sw = {k: switches_of(ss) for k, ss in by_unit.items() if k in units}
    sw = {k: v for k, v in sw.items() if v}
    if not sw:
        return {}
    kinds = _kinds_df(spark, member_kinds(frames, by_unit, sw))
    sw_df = F.broadcast(
        local_frame(
            spark,
            [
                (k[0], k[1], k[2], s["step"], s["t_ns"], s["from"], s["to"])
                for k, ss in sw.items()
                for s in ss
            ],
            "case string, impl string, repetition int, step int, t_s long, src string, dst string",
        )
    )
    c = frames.control
    rec = _with_kind(frames.records.join(sw_df.select(*UNIT).distinct(), UNIT, "left_semi"), kinds)

    # first assignment of p to each new-kind member after t_S; taken over = the earliest of them
    assigned = _with_kind(
        c.where((F.col("kind") == Kind.ASSIGNED) & role_col(Role.MEMBER)).select(
            *UNIT, "ident", F.col("partition").alias("p"), "ts_ns"
        ),
        kinds,
    )
    firsts = collect(
        join(assigned, sw_df, UNIT, (F.col("mkind") == F.col("r_dst")) & (F.col("ts_ns") > F.col("r_t_s")))
        .groupBy(*UNIT, F.col("r_step").alias("step"), "p", "ident")
        .agg(F.min("ts_ns").alias("fa"))
    )
    taken: dict[tuple[Any, ...], int] = {}
    for r in firsts:
        key = (*unit_key(r), r["step"], r["p"])
        taken[key] = min(taken.get(key, INF), r["fa"])
    parts = [
        (k[0], k[1], k[2], s["step"], p, taken.get((*k, s["step"], p)))
        for k, ss in sw.items()
        for s in ss
        for p in range(int(units[k].get("partitions") or 0))
    ]
    parts_df = F.broadcast(
        local_frame(spark, parts, "case string, impl string, repetition int, step int, p int, taken long")
        .join(sw_df, [*UNIT, "step"])
        .withColumn("until", F.coalesce(F.col("taken"), F.lit(INF).cast("long")))
    )

    # the last commit on p in each store before taken-over
    has_broker = broker_commit_units(c)
    cm = _with_kind(
        c.where(F.col("kind") == Kind.COMMIT).select(
            *UNIT,
            "ident",
            "role",
            F.col("partition").alias("p"),
            "offset",
            "ts_ns",
            _x("store").alias("store"),
        ),
        kinds,
    ).join(F.broadcast(has_broker), UNIT, "left")
    is_broker = role_col(Role.BROKER)
    member_store = F.coalesce(
        F.col("store"),
        F.when(F.col("mkind") == LEGACY, F.lit(DEFAULT_STORE[LEGACY])).otherwise(
            F.lit(DEFAULT_STORE[COORDINATOR])
        ),
    )
    cm = cm.select(
        *UNIT,
        "p",
        "offset",
        "ts_ns",
        F.when(is_broker, F.lit("kafka"))
        .when(role_col(Role.MEMBER) & (F.col("mkind") == LEGACY) & (member_store == "zookeeper"), "zookeeper")
        .when(role_col(Role.MEMBER) & ~F.coalesce("bside", F.lit(False)) & (member_store == "kafka"), "kafka")
        .alias("st"),
    ).where(F.col("st").isNotNull())
    committed = (
        join(cm, parts_df, [*UNIT, "p"], F.col("ts_ns") < F.col("r_until"))
        .groupBy(*UNIT, F.col("r_step").alias("step"), "p", F.col("st").alias("key"))
        .agg(F.max_by("offset", "ts_ns").alias("value"))
    )

    # the records of the units with a switch, read four times (the analysis clears the cache)
    rec_p = rec.select(*UNIT, "ident", "mkind", F.col("partition").alias("p"), "offset", "ts_ns").cache()
    # the largest offset processed by an old-kind member before taken-over
    last = (
        join(
            rec_p,
            parts_df,
            [*UNIT, "p"],
            (F.col("mkind") == F.col("r_src")) & (F.col("ts_ns") < F.col("r_until")),
        )
        .groupBy(*UNIT, F.col("r_step").alias("step"), "p")
        .agg(F.lit("processed_last").alias("key"), F.max("offset").alias("value"))
    )

    # where each new owner resumed: its first record on p after its first assignment after t_S
    fa_df = F.broadcast(
        local_frame(
            spark,
            [(r["case"], r["impl"], r["repetition"], r["step"], r["p"], r["ident"], r["fa"]) for r in firsts],
            "case string, impl string, repetition int, step int, p int, ident string, fa long",
        )
    )
    resumed = (
        join(rec_p, fa_df, [*UNIT, "p", "ident"], F.col("ts_ns") >= F.col("r_fa"))
        .groupBy(*UNIT, F.col("r_step").alias("step"), "p", "ident")
        .agg(F.min("ts_ns").alias("ts"), F.min_by("offset", "ts_ns").alias("value"))
        .withColumn("key", F.lit("resumed"))
    )

    # reprocessed: offsets processed by a new-kind member after t_S and by an old-kind member
    new = (
        join(rec_p, sw_df, UNIT, (F.col("mkind") == F.col("r_dst")) & (F.col("ts_ns") >= F.col("r_t_s")))
        .select(*UNIT, F.col("r_step").alias("step"), "p", "offset")
        .distinct()
    )
    old = (
        join(rec_p, sw_df, UNIT, F.col("mkind") == F.col("r_src"))
        .select(*UNIT, F.col("r_step").alias("step"), "p", "offset")
        .distinct()
    )
    again = (
        new.join(old, [*UNIT, "step", "p", "offset"], "left_semi")
        .groupBy(*UNIT, "step", "p")
        .agg(F.lit("reprocessed").alias("key"), F.count("*").alias("value"))
    )

    # lost: the unit's definition, per partition (every switch of the unit shares it)
    lost = (
        keys.join(sw_df.select(*UNIT).distinct(), UNIT, "left_semi")
        .where(records.lost_condition())
        .groupBy(*UNIT, F.col("partition").alias("p"))
        .agg(F.lit("lost").alias("key"), F.count("*").alias("value"))
        .withColumn("step", F.lit(None).cast("int"))
    )
    cols = [*UNIT, "step", "p", "key", "ident", "ts", "value"]

    def long(df: DataFrame) -> DataFrame:
        for c, t in (("ident", "string"), ("ts", "long")):
            if c not in df.columns:
                df = df.withColumn(c, F.lit(None).cast(t))
        return df.select(*cols).withColumn("value", F.col("value").cast("long"))

    values = collect(
        long(committed)
        .unionByName(long(last))
        .unionByName(long(resumed))
        .unionByName(long(again))
        .unionByName(long(lost))
    )  # one job: every per-partition figure

    # overlap episodes between members of two kinds
    segs_k = _with_kind(segs.join(sw_df.select(*UNIT).distinct(), UNIT, "left_semi"), kinds)
    islands = collect(overlap_islands(segs_k, differ="mkind"))

    return _assemble(sw, units, firsts, values, islands)


def _assemble(
    sw: dict[UnitKey, list[dict[str, Any]]],
    units: dict[UnitKey, dict[str, Any]],
    firsts: list[dict[str, Any]],
    values: list[dict[str, Any]],
    islands: list[dict[str, Any]],
) -> dict[UnitKey, UnitMigration]:
    """The entries from the collected per-partition results (pure Python): ``firsts`` (new owners'
    first assignments), ``values`` (long format: key zookeeper / kafka / processed_last / resumed /
    reprocessed / lost) and the cross-kind overlap ``islands``."""

    def sp(r: dict[str, Any]) -> tuple[Any, ...]:
        return (*unit_key(r), r["step"], r["p"])

    taken: dict[tuple[Any, ...], int] = {}
    for r in firsts:
        taken[sp(r)] = min(taken.get(sp(r), INF), r["fa"])
    commits: dict[tuple[Any, ...], dict[str, int]] = {}
    last_of: dict[tuple[Any, ...], int] = {}
    again_of: dict[tuple[Any, ...], int] = {}
    lost_of: dict[tuple[Any, ...], int] = {}
    first_fa = {(*sp(r), r["ident"]): r["fa"] for r in firsts}
    res: dict[tuple[Any, ...], list[tuple[int, int, str, int | None]]] = {}
    for r in values:
        key, v = r["key"], r["value"]
        if key in ("zookeeper", "kafka"):
            commits.setdefault(sp(r), {})[key] = int(v)
        elif key == "processed_last":
            last_of[sp(r)] = int(v)
        elif key == "reprocessed":
            again_of[sp(r)] = int(v)
        elif key == "lost":
            lost_of[(*unit_key(r), r["p"])] = int(v)
        elif key == "resumed":
            res.setdefault(sp(r), []).append((r["ts"], first_fa[(*sp(r), r["ident"])], r["ident"], v))
    for r in firsts:  # owners that processed nothing on p
        if not any(x[2] == r["ident"] for x in res.get(sp(r), [])):
            res.setdefault(sp(r), []).append((INF, r["fa"], r["ident"], None))
    episodes: dict[tuple[Any, ...], list[float]] = {}
    for r in islands:
        k = unit_key(r)
        ss = sw.get(k) or []
        if not ss:
            continue
        at = [s for s in ss if s["t_ns"] <= r["istart"]]
        s = at[-1] if at else ss[0]  # the switch in force when the episode began
        episodes.setdefault((*k, s["step"], r["p"]), []).append((r["iend"] - r["istart"]) / NS)

    out: dict[UnitKey, UnitMigration] = {}
    for k, ss in sw.items():
        u = units[k]
        origin = u["origin"]
        entries: list[MigrationSwitch] = []
        for s in ss:
            parts: list[MigrationPartition] = []
            for p in range(int(u.get("partitions") or 0)):
                key = (*k, s["step"], p)
                cm = commits.get(key, {})
                owners = sorted(res.get(key, []))
                ep = episodes.get(key, [])
                parts.append(
                    partition_entry(
                        topic=u.get("topic"),
                        partition=p,
                        taken_over_s=at_s(taken.get(key), origin),
                        zookeeper_committed=cm.get("zookeeper"),
                        kafka_committed=cm.get("kafka"),
                        processed_last=last_of.get(key),
                        resumed=[{"member": m, "offset": o} for _, _, m, o in owners],
                        reprocessed=again_of.get(key, 0),
                        lost=lost_of.get((*k, p), 0),
                        overlap_episodes=len(ep),
                        overlap_s=round(sum(ep), 6),
                    )
                )
            entries.append(
                {
                    "step": s["step"],
                    "action": s["action"],
                    "mode": s["mode"],
                    "from": s["from"],
                    "to": s["to"],
                    "t_s": at_s(s["t_ns"], origin),
                    "partitions": parts,
                    "verdict": worst(p["verdict"] for p in parts),
                }
            )
        out[k] = {"switches": entries, "verdict": worst(e["verdict"] for e in entries)}
    return out
