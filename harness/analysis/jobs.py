"""The PySpark jobs that turn one run's history into metrics (the one checker of design.md).

Every figure of a report comes from here, for both implementations, by the same code. The
definitions (what "settled", "overlap", "non-owner commit" ... mean) are in
:mod:`harness.analysis.definitions`; this module implements them:

* **prepare**: read the Parquet history; split the two large kinds (``record``, ``produced``) from
  the rest (the *control* events, whose ``extra`` JSON is parsed once); resolve member identities
  (``source``, or the ``name`` of a member's ``started`` event); turn legacy members' list-valued
  ``assigned`` / ``revoked`` events (``partitions: [[topic, p], ...]``) into one row per partition.
* **intervals**: claims (assigned -> revoked / stopped / crash, per member and partition), liveness
  (started -> stopped / crash) and suspension (pause / cut -> resume / heal / crash), built with
  window functions over each key's events in time order (at one instant, closes before opens).
* **settle**: the ownership state at every change point and trigger (a range join of those points
  with the intervals), then per trigger the first point that is owned once, has its joiners live and
  stays quiet for the settle window before the next trigger.
* **latency parts**, **resume**, **consumption gaps**, **herd counts**, **split brain** (processing
  intervals, overlaps, duplicates, non-owner and stale-generation commits) and **completeness**.

All times are integer nanoseconds (``ts_ns``) inside Spark and seconds in the results.
:class:`Jobs` caches the small intermediate tables; the large ones are read from Parquet with column
pruning as often as needed (cheaper than caching them on a small machine).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from pyspark.sql import Column, DataFrame, SparkSession, Window
from pyspark.sql import functions as F

from harness.analysis.definitions import GROUP_APIS, OK_OUTCOMES, REACTION_KINDS

UNIT = ["case", "impl", "repetition"]
INF = 4_000_000_000_000_000_000  # "no end" in ns (year 2096); below Long.MAX so sums do not overflow
NS = 1_000_000_000
GAP_BUCKET_NS = 100_000_000  # 100 ms buckets for consumption gaps (exact gaps between buckets)
RATE_BIN_BUCKETS = 2  # rate series bins = 2 gap buckets = 0.2 s

EXTRA_SCHEMA = (
    "action string, targets array<string>, target string, `trigger` boolean, label string, "
    "counters map<string,double>, partitions string, requests map<string,double>, total double, "
    "interval_s double, name string, from_state string, to_state string, "
    "broker_id long, lost string"
)

MEMBER_DROP_ACTIONS = ("crash",)
SUSPEND_ACTIONS = ("pause", "cut")
UNSUSPEND_ACTIONS = ("resume", "heal")
JOIN_ACTIONS = ("join", "start_member")


def _secs(col: Column) -> Column:
    return col.cast("double") / NS


@dataclass
class Frames:
    """The history split for the jobs (see :func:`prepare`)."""

    raw: DataFrame
    control: DataFrame  # every event but record / produced, extra parsed, with `ident` and flags
    records: DataFrame  # case, impl, repetition, ts_ns, ident, partition, offset
    produced: DataFrame  # case, impl, repetition, ts_ns, partition, offset
    aliases: dict[tuple[str, str, int, str], str]


def prepare(spark: SparkSession, history: str) -> Frames:
    """Read and normalise a history (see the module docstring)."""
    raw = spark.read.parquet(history).na.fill({"case": "", "impl": ""}).na.fill(0, ["repetition"])
    kind = F.col("kind")
    control = raw.where(~kind.isin("record", "produced") | kind.isNull())
    control = control.withColumn("x", F.from_json("extra", EXTRA_SCHEMA)).select("*", "x.*").drop("x")
    is_broker = (
        F.coalesce(F.col("source").startswith("broker"), F.lit(False)) | F.col("broker_id").isNotNull()
    )
    is_producer = (F.col("source") == "producer") | (F.coalesce(F.col("role"), F.lit("")) == "producer")
    is_member = (
        F.col("source").isNotNull() & ~is_broker & ~is_producer & ~F.col("source").isin("nemesis", "harness")
    )
    control = (
        control.withColumn("is_broker", is_broker)
        .withColumn("is_member", F.coalesce(is_member, F.lit(False)))
        .withColumn("is_nemesis", F.coalesce(F.col("source") == "nemesis", F.lit(False)))
    )
    # Member identity: the harness's name. A member whose started event names itself differently
    # from its source (a protocol-level id as source) is renamed everywhere.
    alias_rows = (
        control.where(
            F.col("is_member")
            & (kind == "started")
            & F.col("name").isNotNull()
            & (F.col("name") != F.col("source"))
        )
        .select(*UNIT, "source", "name")
        .distinct()
        .collect()
    )
    aliases = {(r["case"], r["impl"], r["repetition"], r["source"]): r["name"] for r in alias_rows}
    records = raw.where(kind == "record").select(
        *UNIT, "ts_ns", F.col("source").alias("ident"), "partition", "offset"
    )
    if aliases:
        amap = spark.createDataFrame(
            [(*k, v) for k, v in aliases.items()],
            "case string, impl string, repetition int, source string, alias string",
        )
        control = (
            control.join(F.broadcast(amap), [*UNIT, "source"], "left")
            .withColumn(
                "ident", F.when(F.col("is_member"), F.coalesce("alias", "source")).otherwise(F.col("source"))
            )
            .drop("alias")
        )
        records = (
            records.join(F.broadcast(amap.withColumnRenamed("source", "ident")), [*UNIT, "ident"], "left")
            .withColumn("ident", F.coalesce("alias", "ident"))
            .drop("alias")
        )
    else:
        control = control.withColumn("ident", F.col("source"))
    plist = F.coalesce(
        F.transform(F.from_json("partitions", "array<array<string>>"), lambda x: x[1].cast("int")),
        F.from_json("partitions", "array<int>"),
    )
    control = control.withColumn(
        "plist",
        F.when(F.col("partition").isNotNull(), F.array(F.col("partition"))).otherwise(
            F.when(F.col("partitions").startswith("["), plist)
        ),
    )
    produced = raw.where(kind == "produced").select(*UNIT, "ts_ns", "partition", "offset")
    return Frames(raw=raw, control=pin(control), records=records, produced=produced, aliases=aliases)


def intervals(ev: DataFrame, keys: list[str]) -> DataFrame:
    """Intervals from open / close events: ``ev`` has ``keys``, ``ts_ns`` and boolean ``is_open``.

    An interval starts at an open event not preceded by another open (repeated opens continue it)
    and ends at the next close (``INF`` if none). At one instant closes sort before opens, so a
    close and a re-open at the same time give a new interval. Returns ``keys, start, end``.
    """
    w = Window.partitionBy(*keys).orderBy("ts_ns", "is_open")
    wf = w.rowsBetween(1, Window.unboundedFollowing)
    ev = ev.withColumn("prev_open", F.lag("is_open").over(w)).withColumn(
        "next_close", F.min(F.when(~F.col("is_open"), F.col("ts_ns"))).over(wf)
    )
    return ev.where(F.col("is_open") & ~F.coalesce(F.col("prev_open"), F.lit(False))).select(
        *keys, F.col("ts_ns").alias("start"), F.coalesce(F.col("next_close"), F.lit(INF)).alias("end")
    )


class Jobs:
    """All jobs of one run; attributes are DataFrames, built lazily in dependency order."""

    def __init__(self, spark: SparkSession, frames: Frames, units: DataFrame, window_s: float) -> None:
        """``units``: case, impl, repetition, t_first, t_last, p0 (one row per unit)."""
        self.spark = spark
        self.f = frames
        self.units = units.cache()
        self.window_ns = int(round(window_s * NS))
        c = frames.control
        self.nemesis = c.where(F.col("is_nemesis") & (F.col("kind") == "nemesis")).cache()
        self._build_triggers()
        self._build_ownership()

    # -- triggers and phases -------------------------------------------------------------------
    def _build_triggers(self) -> None:
        w = Window.partitionBy(*UNIT).orderBy("t0")
        t = (
            self.nemesis.where(F.coalesce(F.col("trigger"), F.lit(False)))
            .select(*UNIT, F.col("ts_ns").alias("t0"), "action", "targets")
            .withColumn("tid", F.row_number().over(w) - 1)
            .withColumn("t_next_trigger", F.lead("t0").over(w))
            .withColumn("targets", F.coalesce("targets", F.array().cast("array<string>")))
        )
        t = t.join(self.units.select(*UNIT, "t_last"), UNIT).withColumn(
            "t_limit", F.coalesce("t_next_trigger", "t_last")
        )
        self.triggers = pin(t)
        first = t.groupBy(*UNIT).agg(F.min("t0").alias("first_t0"))
        startup = self.units.join(first, UNIT, "left").select(
            *UNIT,
            F.lit(-1).alias("tid"),
            F.lit(-INF).cast("long").alias("pstart"),
            F.coalesce("first_t0", F.lit(INF)).alias("pend"),
        )
        self.phases = pin(
            startup.unionByName(
                t.select(
                    *UNIT,
                    "tid",
                    F.col("t0").alias("pstart"),
                    F.coalesce("t_next_trigger", F.lit(INF)).alias("pend"),
                )
            )
        )

    # -- ownership intervals -------------------------------------------------------------------
    def broker_units(self) -> DataFrame:
        """Units whose broker reported request counts (others: broker counts not measured)."""
        c = self.f.control
        return c.where(F.col("is_broker") & (F.col("kind") == "broker_request")).select(*UNIT).distinct()

    def _build_ownership(self) -> None:
        c = self.f.control
        member = F.col("is_member")
        own = c.where(member & F.col("kind").isin("assigned", "revoked") & F.col("plist").isNotNull()).select(
            *UNIT,
            "ident",
            "ts_ns",
            "kind",
            F.explode("plist").alias("p"),
        )
        self.own_events = own.where(F.col("p").isNotNull()).cache()
        starts = c.where(member & (F.col("kind") == "started")).select(*UNIT, "ident", "ts_ns")
        stops = c.where(member & (F.col("kind") == "stopped")).select(*UNIT, "ident", "ts_ns")
        crashes = self.nemesis.where(F.col("action").isin(*MEMBER_DROP_ACTIONS)).select(
            *UNIT, F.explode("targets").alias("ident"), "ts_ns"
        )
        drops = stops.unionByName(crashes)
        self.drops = drops.cache()
        pairs = self.own_events.select(*UNIT, "ident", "p").distinct()
        claim_ev = self.own_events.select(
            *UNIT, "ident", "p", "ts_ns", (F.col("kind") == "assigned").alias("is_open")
        ).unionByName(
            drops.join(pairs, [*UNIT, "ident"]).select(
                *UNIT, "ident", "p", "ts_ns", F.lit(False).alias("is_open")
            )
        )
        self.claims = pin(intervals(claim_ev, [*UNIT, "ident", "p"]))
        live_ev = starts.withColumn("is_open", F.lit(True)).unionByName(
            drops.withColumn("is_open", F.lit(False))
        )
        self.live = pin(intervals(live_ev, [*UNIT, "ident"]))
        susp = self.nemesis.where(F.col("action").isin(*SUSPEND_ACTIONS, *UNSUSPEND_ACTIONS)).select(
            *UNIT,
            F.explode("targets").alias("ident"),
            "ts_ns",
            F.col("action").isin(*SUSPEND_ACTIONS).alias("is_open"),
        )
        self.suspend_events = susp.cache()
        self.suspended = pin(
            intervals(
                self.suspend_events.unionByName(drops.withColumn("is_open", F.lit(False))), [*UNIT, "ident"]
            )
        )
        # partition count over time: p0 from the start, then add_partitions actions
        grow = self.nemesis.where(
            (F.col("action") == "add_partitions") & F.col("partitions").isNotNull()
        ).select(*UNIT, F.col("ts_ns").alias("pc_ts"), F.col("partitions").cast("int").alias("nparts"))
        self.pcount = (
            self.units.select(
                *UNIT, F.lit(-INF).cast("long").alias("pc_ts"), F.col("p0").cast("int").alias("nparts")
            )
            .unionByName(grow.where(F.col("nparts").isNotNull()))
            .cache()
        )

    # -- settle ---------------------------------------------------------------------------------
    def change_points(self) -> DataFrame:
        """(unit, ts_ns, is_cp, next_cp): change points and trigger instants, with the next change."""
        cps = (
            self.own_events.select(*UNIT, "ts_ns")
            .unionByName(
                self.f.control.where(F.col("is_member") & F.col("kind").isin("started", "stopped")).select(
                    *UNIT, "ts_ns"
                )
            )
            .unionByName(
                self.nemesis.where(
                    F.col("action").isin(
                        *MEMBER_DROP_ACTIONS, *SUSPEND_ACTIONS, *UNSUSPEND_ACTIONS, "add_partitions"
                    )
                ).select(*UNIT, "ts_ns")
            )
            .withColumn("is_cp", F.lit(True))
        )
        pts = cps.unionByName(
            self.triggers.select(*UNIT, F.col("t0").alias("ts_ns"), F.lit(False).alias("is_cp"))
        )
        pts = pts.groupBy(*UNIT, "ts_ns").agg(F.max("is_cp").alias("is_cp"))
        w = Window.partitionBy(*UNIT).orderBy("ts_ns").rowsBetween(1, Window.unboundedFollowing)
        return pts.withColumn("next_cp", F.min(F.when(F.col("is_cp"), F.col("ts_ns"))).over(w))

    def ownership_state(self, points: DataFrame) -> DataFrame:
        """For each (unit, ts_ns) of ``points``: P (partition count) and ``owned_once``."""
        e = points.select(*UNIT, "ts_ns")
        at = (F.col("r_start") <= F.col("ts_ns")) & (F.col("ts_ns") < F.col("r_end"))
        eff = join(e, self.claims, UNIT, at).select(
            *UNIT, "ts_ns", F.col("r_ident").alias("ident"), F.col("r_p").alias("p")
        )
        eff = join(eff, self.live, [*UNIT, "ident"], at, "left_semi")
        eff = join(eff, self.suspended, [*UNIT, "ident"], at, "left_anti")
        p_at = (
            join(e, self.pcount, UNIT, F.col("r_pc_ts") <= F.col("ts_ns"))
            .groupBy(*UNIT, "ts_ns")
            .agg(F.max_by("r_nparts", "r_pc_ts").alias("nparts"))
        )
        counts = eff.groupBy(*UNIT, "ts_ns", "p").agg(F.count("*").alias("n")).join(p_at, [*UNIT, "ts_ns"])
        agg = counts.groupBy(*UNIT, "ts_ns").agg(
            F.sum(F.when((F.col("p") < F.col("nparts")) & (F.col("n") == 1), 1).otherwise(0)).alias("ok"),
            F.sum(
                F.when((F.col("n") > 1) | (F.col("p") >= F.col("nparts")) | (F.col("p") < 0), 1).otherwise(0)
            ).alias("bad"),
        )
        st = p_at.join(agg, [*UNIT, "ts_ns"], "left")
        return st.withColumn(
            "owned_once",
            (F.col("nparts") > 0)
            & (F.coalesce("ok", F.lit(0)) == F.col("nparts"))
            & (F.coalesce("bad", F.lit(0)) == 0),
        )

    def settle(self) -> DataFrame:
        """Per trigger (all trigger columns) plus t1 (null when it never settled) and P1, P at t1."""
        pts = self.change_points()
        state = self.ownership_state(pts).join(pts, [*UNIT, "ts_ns"])
        w = F.lit(self.window_ns)
        t = self.triggers.select(*UNIT, "tid", "action", "t0", "t_limit")
        cand = join(
            t,
            state,
            UNIT,
            (F.col("r_ts_ns") >= F.col("t0"))
            & (F.col("r_ts_ns") + w <= F.col("t_limit"))
            & F.col("r_owned_once")
            & (F.coalesce(F.col("r_next_cp"), F.lit(INF)) - F.col("r_ts_ns") >= w),
        ).select(*UNIT, "tid", F.col("r_ts_ns").alias("ts_ns"), F.col("r_nparts").alias("nparts"))
        joiners = self.triggers.where(F.col("action").isin(*JOIN_ACTIONS)).select(
            *UNIT, "tid", F.explode("targets").alias("ident")
        )
        cj = cand.join(joiners, [*UNIT, "tid"], "left")
        at = (F.col("r_start") <= F.col("ts_ns")) & (F.col("ts_ns") < F.col("r_end"))
        cj = join(cj, self.live, [*UNIT, "ident"], at, "left")
        ok = cj.groupBy(*UNIT, "tid", "ts_ns", "nparts").agg(
            (F.count("ident") == F.count("r_start")).alias("joiners_live")
        )
        t1 = (
            ok.where("joiners_live")
            .groupBy(*UNIT, "tid")
            .agg(F.min_by(F.struct("ts_ns", "nparts"), "ts_ns").alias("s"))
        )
        t1 = t1.select(*UNIT, "tid", F.col("s.ts_ns").alias("t1"), F.col("s.nparts").alias("P1"))
        return pin(self.triggers.join(t1, [*UNIT, "tid"], "left"))

    # -- latency parts, resume, gaps ------------------------------------------------------------
    def detection(self, settled: DataFrame) -> DataFrame:
        """Per trigger: t_react, the first reaction in [t0, t1 or t_limit]."""
        c = self.f.control
        r = c.where(
            (F.col("is_member") & F.col("kind").isin(*REACTION_KINDS))
            | (F.col("is_broker") & (F.col("kind") == "group_state"))
        ).select(*UNIT, F.col("ts_ns").alias("rts"), F.col("ident").alias("rident"))
        t = settled.select(*UNIT, "tid", "t0", "targets", F.coalesce("t1", "t_limit").alias("rend"))
        j = join(
            t,
            r,
            UNIT,
            (F.col("r_rts") >= F.col("t0"))
            & (F.col("r_rts") <= F.col("rend"))
            & ~F.array_contains(F.col("targets"), F.col("r_rident")),
        )
        return j.groupBy(*UNIT, "tid").agg(F.min("r_rts").alias("t_react"))

    def resumed(self, settled: DataFrame) -> DataFrame:
        """Per settled trigger: t_resumed, when every partition < P1 had a record at or after t1."""
        t = settled.where(F.col("t1").isNotNull()).select(*UNIT, "tid", "t1", "t_limit", "P1")
        rec = self.f.records.select(*UNIT, "ts_ns", "partition")
        j = rec.join(F.broadcast(t), UNIT).where(
            (F.col("ts_ns") >= F.col("t1"))
            & (F.col("ts_ns") < F.col("t_limit"))
            & (F.col("partition") < F.col("P1"))
        )
        first = j.groupBy(*UNIT, "tid", "partition", "P1").agg(F.min("ts_ns").alias("first"))
        agg = first.groupBy(*UNIT, "tid", "P1").agg(
            F.count("*").alias("np"), F.max("first").alias("last_first")
        )
        return agg.select(
            *UNIT, "tid", F.when(F.col("np") == F.col("P1"), F.col("last_first")).alias("t_resumed")
        )

    def buckets(self) -> DataFrame:
        """Records per 100 ms bucket per unit: n, first and last ts (the base of gaps and rates)."""
        rec = self.f.records.select(*UNIT, "ts_ns")
        return pin(
            rec.groupBy(*UNIT, F.floor(F.col("ts_ns") / GAP_BUCKET_NS).alias("bucket")).agg(
                F.count("*").alias("n"), F.min("ts_ns").alias("first"), F.max("ts_ns").alias("last")
            )
        )

    def gaps(self, buckets: DataFrame) -> DataFrame:
        """Pauses in consumption per unit (between consecutive non-empty buckets): gstart, gend."""
        w = Window.partitionBy(*UNIT).orderBy("bucket")
        return (
            buckets.withColumn("gstart", F.lag("last").over(w))
            .where(F.col("gstart").isNotNull())
            .select(*UNIT, "gstart", F.col("first").alias("gend"))
        )

    def trigger_gaps(self, gaps: DataFrame, settled: DataFrame, resumed: DataFrame) -> DataFrame:
        """Per trigger: the longest gap overlapping [t0, resumed] (or [t0, t_limit])."""
        t = settled.join(resumed, [*UNIT, "tid"], "left").select(
            *UNIT, "tid", "t0", F.coalesce("t_resumed", "t_limit").alias("gwin_end")
        )
        j = gaps.join(F.broadcast(t), UNIT).where(
            (F.col("gend") > F.col("t0")) & (F.col("gstart") < F.col("gwin_end"))
        )
        return (
            j.groupBy(*UNIT, "tid")
            .agg(F.max_by(F.struct("gstart", "gend"), F.col("gend") - F.col("gstart")).alias("g"))
            .select(*UNIT, "tid", F.col("g.gstart").alias("gap_start"), F.col("g.gend").alias("gap_end"))
        )

    # -- herd --------------------------------------------------------------------------------------
    def herd(self, settled: DataFrame) -> tuple[DataFrame, DataFrame, DataFrame, DataFrame, DataFrame]:
        """Per trigger herd counts over [t0, t1 or t_limit].

        Returns (counts, zk ops: key/value, broker APIs: key/value, broker totals, zk packets), each
        keyed by unit and ``tid``; triggers without events are absent (zero, or not measured).
        """
        c = self.f.control
        t = settled.select(*UNIT, "tid", "t0", "action", F.coalesce("t1", "t_limit").alias("hend"))
        ev = c.where(
            F.col("kind").isin("watch", "zk_request", "conflict", "rebalance_end", "rebalance_begin")
        ).select(*UNIT, "ts_ns", "kind", "op", "outcome", "is_member", "is_broker")
        j = ev.join(F.broadcast(t), UNIT).where(
            (F.col("ts_ns") >= F.col("t0")) & (F.col("ts_ns") <= F.col("hend"))
        )
        m = F.col("is_member")

        def n(cond: Column) -> Column:
            return F.sum(F.when(cond, 1).otherwise(0)).cast("double")

        counts = j.groupBy(*UNIT, "tid").agg(
            n(m & (F.col("kind") == "watch")).alias("watches"),
            n(m & (F.col("kind") == "zk_request")).alias("zk_requests"),
            n(m & (F.col("kind") == "conflict")).alias("conflicts"),
            n(
                m
                & (F.col("kind") == "rebalance_end")
                & F.col("outcome").isNotNull()
                & ~F.col("outcome").isin(*OK_OUTCOMES)
            ).alias("failed_attempts"),
            n(m & (F.col("kind") == "rebalance_begin")).alias("rebalance_attempts"),
            n(F.col("is_broker") & (F.col("kind") == "rebalance_begin")).alias("group_rebalances"),
        )
        ops = (
            j.where(m & (F.col("kind") == "zk_request"))
            .groupBy(*UNIT, "tid", F.coalesce("op", F.lit("?")).alias("key"))
            .agg(F.count("*").cast("double").alias("value"))
        )
        # broker request reports: attribute each interval's counts by overlap with the window
        br = c.where(
            F.col("is_broker") & (F.col("kind") == "broker_request") & F.col("requests").isNotNull()
        ).select(
            *UNIT,
            "ts_ns",
            (F.coalesce("interval_s", F.lit(0.0)) * NS).cast("long").alias("ivl"),
            F.explode("requests").alias("key", "n"),
        )
        bj = br.join(F.broadcast(t), UNIT)
        lo = F.greatest(F.col("ts_ns") - F.col("ivl"), F.col("t0"))
        hi = F.least(F.col("ts_ns"), F.col("hend"))
        share = F.when(
            F.col("ivl") > 0, F.greatest(hi - lo, F.lit(0)).cast("double") / F.col("ivl")
        ).otherwise(
            F.when((F.col("ts_ns") >= F.col("t0")) & (F.col("ts_ns") <= F.col("hend")), 1.0).otherwise(0.0)
        )
        apis = (
            bj.withColumn("v", F.col("n") * share)
            .groupBy(*UNIT, "tid", "key")
            .agg(F.sum("v").alias("value"))
            .where(F.col("value") > 0)
        )
        btot = apis.groupBy(*UNIT, "tid").agg(
            F.sum("value").alias("broker_requests"),
            F.sum(F.when(F.col("key").isin(*GROUP_APIS), F.col("value")).otherwise(0.0)).alias(
                "broker_group_requests"
            ),
        )
        # mntr: packets between the sample right after t0 and the next sample
        sm = c.where(F.col("is_nemesis") & (F.col("kind") == "zk_mntr")).select(
            *UNIT, F.col("ts_ns").alias("sts"), "label", F.col("counters")["zk_packets_received"].alias("pk")
        )
        ws = Window.partitionBy(*UNIT).orderBy("sts")
        sm = sm.withColumn("next_pk", F.lead("pk").over(ws))
        sj = sm.join(F.broadcast(t), UNIT).where(
            (F.col("sts") >= F.col("t0")) & (F.col("label") == F.concat(F.lit("before:"), F.col("action")))
        )
        packets = sj.groupBy(*UNIT, "tid").agg(
            F.min_by(F.col("next_pk") - F.col("pk"), "sts").alias("zk_packets")
        )
        return counts, ops, apis, btot, packets

    # -- split brain ---------------------------------------------------------------------------------
    def segments(self) -> DataFrame:
        """Processing intervals: (unit, ident, p, seg) -> start, end, n (see definitions)."""
        pairs = self.own_events.select(*UNIT, "ident", "p").distinct()
        marks = self.own_events.where(F.col("kind") == "assigned").select(*UNIT, "ident", "p", "ts_ns")
        susp = self.suspend_events.where("is_open").select(*UNIT, "ident", "ts_ns")
        marks = marks.unionByName(susp.join(pairs, [*UNIT, "ident"]).select(*UNIT, "ident", "p", "ts_ns"))
        marks = marks.withColumn("mark", F.lit(1))
        rec = self.f.records.select(
            *UNIT, "ident", F.col("partition").alias("p"), "ts_ns", F.lit(0).alias("mark")
        )
        u = rec.unionByName(marks)
        w = (
            Window.partitionBy(*UNIT, "ident", "p")
            .orderBy("ts_ns", F.col("mark").desc())
            .rowsBetween(Window.unboundedPreceding, Window.currentRow)
        )
        u = u.withColumn("seg", F.sum("mark").over(w))
        return pin(
            u.where(F.col("mark") == 0)
            .groupBy(*UNIT, "ident", "p", "seg")
            .agg(F.min("ts_ns").alias("start"), F.max("ts_ns").alias("end"), F.count("*").alias("n"))
        )

    def overlaps(self, segs: DataFrame) -> tuple[DataFrame, DataFrame]:
        """Overlapping processing intervals of different members on one partition.

        Returns (pairs: unit, p, a, b, ostart, oend) and (islands: unit, p, istart, iend), the union
        of the pairs' overlaps per partition.
        """
        a = segs.select(*UNIT, "p", "ident", "start", "end")
        pairs = join(
            a,
            a,
            [*UNIT, "p"],
            (F.col("ident") < F.col("r_ident"))
            & (F.col("start") <= F.col("r_end"))
            & (F.col("r_start") <= F.col("end")),
        ).select(
            *UNIT,
            "p",
            F.col("ident").alias("a"),
            F.col("r_ident").alias("b"),
            F.greatest("start", "r_start").alias("ostart"),
            F.least("end", "r_end").alias("oend"),
        )
        pairs = pin(pairs)
        w = Window.partitionBy(*UNIT, "p").orderBy("ostart", "oend")
        prev_end = F.max("oend").over(w.rowsBetween(Window.unboundedPreceding, -1))
        isl = pairs.withColumn(
            "new", F.when(prev_end.isNull() | (F.col("ostart") > prev_end), 1).otherwise(0)
        )
        isl = isl.withColumn(
            "island", F.sum("new").over(w.rowsBetween(Window.unboundedPreceding, Window.currentRow))
        )
        islands = pin(
            isl.groupBy(*UNIT, "p", "island").agg(
                F.min("ostart").alias("istart"), F.max("oend").alias("iend")
            )
        )
        return pairs, islands

    def record_keys(self) -> DataFrame:
        """Per (unit, partition, offset) produced or processed, in one shuffle of both kinds:
        ``n`` deliveries, ``produced`` (0/1), ``last`` delivery ts, ``cross`` (members differ)."""
        rec = self.f.records.select(*UNIT, "partition", "offset", "ts_ns", "ident", F.lit(0).alias("is_prod"))
        prod = self.f.produced.select(
            *UNIT,
            "partition",
            "offset",
            F.lit(None).cast("long").alias("ts_ns"),
            F.lit(None).cast("string").alias("ident"),
            F.lit(1).alias("is_prod"),
        )
        return (
            rec.unionByName(prod)
            .groupBy(*UNIT, "partition", "offset")
            .agg(
                F.sum(1 - F.col("is_prod")).alias("n"),
                F.max("is_prod").alias("produced"),
                F.max("ts_ns").alias("last"),
                F.coalesce(F.min("ident") != F.max("ident"), F.lit(False)).alias("cross"),
            )
        )

    def commits(self) -> DataFrame:
        """Accepted commits with ``non_owner`` and ``stale`` (null when the commit has no generation)."""
        c = self.f.control
        kinds = F.col("kind").isin("commit", "commit_rejected")
        broker_units = (
            c.where(F.col("is_broker") & kinds).select(*UNIT).distinct().withColumn("bside", F.lit(True))
        )
        cm = c.where(kinds & (F.col("is_broker") | F.col("is_member"))).join(
            F.broadcast(broker_units), UNIT, "left"
        )
        cm = cm.where(F.col("is_broker") == F.coalesce("bside", F.lit(False)))
        ids = (
            c.where(F.col("is_member") & F.col("member").isNotNull() & (F.col("member") != ""))
            .select(*UNIT, "member", F.col("ident").alias("mident"))
            .distinct()
        )
        cm = cm.join(F.broadcast(ids), [*UNIT, "member"], "left").withColumn(
            "committer", F.when(F.col("is_broker"), F.col("mident")).otherwise(F.col("ident"))
        )
        cm = cm.select(
            *UNIT, "ts_ns", "kind", "committer", F.col("partition").alias("p"), "generation"
        ).withColumn("cid", F.monotonically_increasing_id())
        acc = cm.where(F.col("kind") == "commit")
        # the owner at ts: the live claimant whose claim began last
        live_claims = join(
            self.claims,
            self.live,
            [*UNIT, "ident"],
            (F.col("r_start") < F.col("end")) & (F.col("start") < F.col("r_end")),
        ).select(
            *UNIT,
            "ident",
            "p",
            F.col("start").alias("cstart"),
            F.greatest("start", "r_start").alias("vstart"),
            F.least("end", "r_end").alias("vend"),
        )
        own = join(
            acc.select("cid", *UNIT, "p", "ts_ns"),
            live_claims,
            [*UNIT, "p"],
            (F.col("r_vstart") <= F.col("ts_ns")) & (F.col("ts_ns") < F.col("r_vend")),
            "left",
        )
        owner = own.groupBy("cid").agg(F.max_by("r_ident", "r_cstart").alias("owner"))
        # the group's generation at ts
        gens = c.where(
            F.col("generation").isNotNull()
            & (F.col("generation") >= 0)
            & (
                (F.col("is_broker") & (F.col("kind") == "group_state"))
                | (F.col("is_member") & (F.col("kind") == "assigned"))
            )
        ).select(*UNIT, F.col("ts_ns").alias("gts"), F.col("generation").alias("g"))
        gen = (
            join(
                acc.where(F.col("generation") >= 0).select("cid", *UNIT, "ts_ns"),
                gens,
                UNIT,
                F.col("r_gts") <= F.col("ts_ns"),
            )
            .groupBy("cid")
            .agg(F.max("r_g").alias("current"))
        )
        out = acc.join(owner, "cid", "left").join(gen, "cid", "left")
        return (
            cm.where(F.col("kind") == "commit_rejected")
            .select(
                *UNIT,
                "ts_ns",
                F.lit(True).alias("rejected"),
                F.lit(None).cast("boolean").alias("non_owner"),
                F.lit(None).cast("boolean").alias("stale"),
            )
            .unionByName(
                out.select(
                    *UNIT,
                    "ts_ns",
                    F.lit(False).alias("rejected"),
                    (
                        F.col("owner").isNull()
                        | F.col("committer").isNull()
                        | (F.col("owner") != F.col("committer"))
                    ).alias("non_owner"),
                    F.when(
                        F.col("generation").isNotNull() & (F.col("generation") >= 0),
                        F.coalesce(F.col("generation") < F.col("current"), F.lit(False)),
                    ).alias("stale"),
                )
            )
        )


def to_phase(df: DataFrame, phases: DataFrame, ts: str) -> DataFrame:
    """Attach ``tid`` of the phase (trigger window, or -1 = startup) that contains ``df[ts]``."""
    j = join(
        df,
        F.broadcast(phases),
        UNIT,
        (F.col(ts) >= F.col("r_pstart")) & (F.col(ts) < F.col("r_pend")),
        "left",
    )
    return j.withColumn("tid", F.coalesce(F.col("r_tid"), F.lit(-1))).drop("r_tid", "r_pstart", "r_pend")


def pin(df: DataFrame) -> DataFrame:
    """Materialise a (small) intermediate table now and cut its lineage.

    Later queries then plan against a short plan instead of re-analysing the whole chain, which
    is most of the cost of many small Spark queries.
    """
    return df.localCheckpoint(eager=True)


def join(
    left: DataFrame, right: DataFrame, keys: list[str], cond: Column | None = None, how: str = "inner"
) -> DataFrame:
    """Join on equal ``keys`` plus ``cond``, with every right column renamed ``r_<name>``.

    Unique names avoid Spark's ambiguous self-join references; ``cond`` refers to right columns
    as ``r_<name>``. The right copies of the keys are dropped (inner, left and semi/anti joins).
    """
    r = right.select(*(F.col(c).alias(f"r_{c}") for c in right.columns))
    on = F.lit(True)
    for k in keys:
        on = on & (F.col(k) == F.col(f"r_{k}"))
    if cond is not None:
        on = on & cond
    j = left.join(r, on, how)
    if how in ("left_semi", "left_anti", "semi", "anti"):
        return j
    return j.drop(*(f"r_{k}" for k in keys))


def collect(df: DataFrame) -> list[dict[str, Any]]:
    """Rows of a (small) DataFrame as dicts."""
    return [r.asDict(recursive=True) for r in df.collect()]
