"""The PySpark jobs that turn one run's history into metrics (the one checker of design.md).

Every figure of a report comes from here, for both implementations, by the same code:

* **prepare**: read the Parquet history; split the two large kinds (``record``, ``produced``) from
  the *control* events (whose ``extra`` JSON is parsed once). Members are identified by ``source``
  (the harness's name) and every event by its ``role`` (:mod:`harness.kernel.events`).
* **facts** (:meth:`Jobs.facts`): per unit, the trigger windows, their outcomes (settled / never /
  no_effect / skipped), t0, the first reaction and t1, and the ownership intervals, from
  :func:`harness.kernel.windows.evaluate` applied to each unit's ownership events with
  ``applyInArrow``: the one definition the runner's live waits and the benches use too.
* **herd**: coordination traffic counted exactly in each window [t0, end): watch notifications,
  ZooKeeper requests of the rebalance (by operation; offset writes are steady state), broker
  coordination requests (one ``group_request`` event each, by API), conflicts, failed attempts.
* **split brain**: processing intervals (a member's records on a partition, closed by its revocation,
  stop, kill, pause or cut, reopened by its next record), overlap episodes (islands of overlap of
  two members' intervals), duplicates, commits from non-owners and stale generations.
* **completeness**: lost (acknowledged offsets skipped below a processed offset of the partition) and
  not drained (acknowledged offsets above the last processed one).

All times are integer nanoseconds (``ts_ns``) inside Spark and seconds in the results.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import pyarrow as pa
from pyspark.sql import Column, DataFrame, SparkSession, Window
from pyspark.sql import functions as F

from harness.kernel.events import (
    COORDINATION_APIS,
    OK_OUTCOMES,
    WORKLOAD_CLIENTS,
    ZK_STEADY_OPS,
    ZK_STEADY_PATH,
    Kind,
    Role,
)

UNIT = ["case", "impl", "repetition"]
INF = 4_000_000_000_000_000_000  # "no end" in ns (year 2096); below Long.MAX so sums do not overflow
NS = 1_000_000_000
GAP_BUCKET_NS = 100_000_000  # 100 ms buckets for consumption gaps (exact gaps between buckets)
RATE_BIN_BUCKETS = 2  # rate series bins = 2 gap buckets = 0.2 s
STARTUP, DRAIN = -1, -2  # phase ids: before the first trigger; after the settling phase

EXTRA_SCHEMA = (
    "action string, action_id long, targets array<string>, target string, `trigger` boolean, "
    "label string, counters map<string,double>, partitions string, requests map<string,double>, "
    "interval_s double, name string, from_state string, to_state string, broker_id long, api string, "
    "reason string, state string, client string, gave_up boolean"
)

#: The columns the per-unit fold reads (see :func:`harness.kernel.windows.evaluate`).
FOLD_KINDS = (
    Kind.READY,
    Kind.STARTED,
    Kind.STOPPED,
    Kind.ASSIGNED,
    Kind.REVOKED,
    Kind.REBALANCE_BEGIN,
    Kind.REBALANCE_END,
    Kind.WATCH,
    Kind.GROUP_STATE,
    Kind.INVOKE,
    Kind.COMPLETE,
    Kind.SKIPPED,
    Kind.UNIT_START,
    Kind.STABLE,
    Kind.SETTLING_END,
)
FACTS_SCHEMA = (
    "case string, impl string, repetition int, rtype string, tid int, action string, "
    "targets array<string>, outcome string, reason string, ident string, p int, start long, `end` long, "
    "since long, invoke long, t0 long, wend long, t_react long, t1 long, startup long, nparts int"
)


def _secs(col: Column) -> Column:
    return col.cast("double") / NS


@dataclass
class Frames:
    """The history split for the jobs (see :func:`prepare`)."""

    raw: DataFrame
    control: DataFrame  # every event but record / produced, extra parsed
    records: DataFrame  # case, impl, repetition, ts_ns, ident, partition, offset
    produced: DataFrame  # case, impl, repetition, ts_ns, partition, offset


def prepare(spark: SparkSession, history: str) -> Frames:
    """Read and normalise a history (see the module docstring)."""
    raw = spark.read.parquet(history).na.fill({"case": "", "impl": ""}).na.fill(0, ["repetition"])
    kind = F.col("kind")
    control = raw.where(~kind.isin(Kind.RECORD, Kind.PRODUCED) | kind.isNull())
    control = control.withColumn("x", F.from_json("extra", EXTRA_SCHEMA)).select("*", "x.*").drop("x")
    control = control.withColumn("ident", F.col("source"))
    records = raw.where(kind == Kind.RECORD).select(
        *UNIT, "ts_ns", F.col("source").alias("ident"), "partition", "offset"
    )
    produced = raw.where(kind == Kind.PRODUCED).select(*UNIT, "ts_ns", "partition", "offset")
    return Frames(raw=raw, control=pin(control), records=records, produced=produced)


def _role(r: str) -> Column:
    return F.coalesce(F.col("role") == r, F.lit(False))


def _fold_unit(window_ns: int) -> Any:
    """The per-unit function for ``applyInArrow``: a unit's fold events in, its facts out."""

    def run(table: pa.Table) -> pa.Table:
        from harness.kernel.windows import evaluate

        rows = table.to_pylist()
        unit = (rows[0]["case"], rows[0]["impl"], rows[0]["repetition"]) if rows else ("", "", 0)
        f = evaluate(rows, window_ns)
        out: list[dict[str, Any]] = []

        def row(rtype: str, **kw: Any) -> None:
            out.append({"case": unit[0], "impl": unit[1], "repetition": unit[2], "rtype": rtype, **kw})

        for t in f.triggers:
            row(
                "trigger",
                tid=t.tid,
                action=t.action,
                targets=t.targets,
                outcome=t.outcome,
                reason=t.reason,
                invoke=t.invoke_ns,
                t0=t.t0_ns,
                wend=t.end_ns,
                t_react=t.react_ns,
                t1=t.t1_ns,
                startup=t.startup_ns,
                nparts=t.partitions_at_t1,
            )
        for m, p, s, e in f.claims:
            row("claim", ident=m, p=p, start=s, end=e)
        for m, p, s, e, since in f.owned:
            row("owned", ident=m, p=p, start=s, end=e, since=since)
        for m, s, e in f.away:
            row("away", ident=m, start=s, end=e)
        for m, p, ts in f.closes:
            row("close", ident=m, p=p, start=ts)
        row("marks", start=f.stable_ns, end=f.settling_end_ns, wend=f.last_ns)
        return pa.Table.from_pylist(out, schema=FACTS_ARROW)

    return run


def _arrow_schema() -> pa.Schema:
    i64, i32, s = pa.int64(), pa.int32(), pa.string()
    return pa.schema(
        [
            ("case", s),
            ("impl", s),
            ("repetition", i32),
            ("rtype", s),
            ("tid", i32),
            ("action", s),
            ("targets", pa.list_(s)),
            ("outcome", s),
            ("reason", s),
            ("ident", s),
            ("p", i32),
            ("start", i64),
            ("end", i64),
            ("since", i64),
            ("invoke", i64),
            ("t0", i64),
            ("wend", i64),
            ("t_react", i64),
            ("t1", i64),
            ("startup", i64),
            ("nparts", i32),
        ]
    )


FACTS_ARROW = _arrow_schema()


class Jobs:
    """All jobs of one run; attributes are DataFrames, built lazily in dependency order."""

    def __init__(self, spark: SparkSession, frames: Frames, window_s: float) -> None:
        self.spark = spark
        self.f = frames
        self.window_ns = int(round(window_s * NS))
        self._facts: DataFrame | None = None

    # -- the per-unit fold ---------------------------------------------------------------------
    def facts(self) -> DataFrame:
        """The fold's output for every unit (rtype: trigger, claim, owned, away, close, marks)."""
        if self._facts is None:
            c = self.f.control.where(F.col("kind").isin(*FOLD_KINDS)).select(
                *UNIT,
                "ts_ns",
                "role",
                "kind",
                "source",
                "partition",
                "outcome",
                "action",
                "action_id",
                "targets",
                "trigger",
                "partitions",
                "reason",
            )
            self._facts = pin(c.groupBy(*UNIT).applyInArrow(_fold_unit(self.window_ns), FACTS_SCHEMA))
        return self._facts

    def windows(self) -> DataFrame:
        """Per trigger: tid, action, targets, outcome, t0, wend (window end), t_react, t1, P1."""
        return (
            self.facts()
            .where(F.col("rtype") == "trigger")
            .select(
                *UNIT,
                "tid",
                "action",
                "targets",
                "outcome",
                "reason",
                "invoke",
                "t0",
                "wend",
                "t_react",
                "t1",
                "startup",
                F.col("nparts").alias("P1"),
            )
        )

    def phases(self) -> DataFrame:
        """Contiguous phases per unit: startup (-1), each trigger window (tid), drain (-2)."""
        w = self.windows()
        marks = (
            self.facts()
            .where(F.col("rtype") == "marks")
            .select(*UNIT, F.coalesce(F.col("end"), F.col("wend") + 1).alias("settling_end"))
        )
        first = w.groupBy(*UNIT).agg(F.min("t0").alias("first_t0"))
        m = marks.join(first, UNIT, "left")
        startup = m.select(
            *UNIT,
            F.lit(STARTUP).alias("tid"),
            F.lit(-INF).cast("long").alias("pstart"),
            F.coalesce("first_t0", "settling_end").alias("pend"),
        )
        drain = m.select(
            *UNIT,
            F.lit(DRAIN).alias("tid"),
            F.col("settling_end").alias("pstart"),
            F.lit(INF).cast("long").alias("pend"),
        )
        return pin(
            startup.unionByName(drain).unionByName(
                w.select(*UNIT, "tid", F.col("t0").alias("pstart"), F.col("wend").alias("pend"))
            )
        )

    def intervals(self, rtype: str) -> DataFrame:
        """claim / owned intervals (unit, ident, p, start, end) or away (unit, ident, start, end)."""
        cols = [*UNIT, "ident", "start", F.coalesce("end", F.lit(INF)).alias("end")]
        if rtype != "away":
            cols.insert(4, "p")
        if rtype == "owned":
            cols.append("since")
        return self.facts().where(F.col("rtype") == rtype).select(*cols)

    # -- resume and gaps ---------------------------------------------------------------------------
    def resumed(self) -> DataFrame:
        """Per settled trigger: t_resumed, when every partition < P1 had a record at or after t1."""
        t = self.windows().where(F.col("t1").isNotNull()).select(*UNIT, "tid", "t1", "wend", "P1")
        rec = self.f.records.select(*UNIT, "ts_ns", "partition")
        j = rec.join(F.broadcast(t), UNIT).where(
            (F.col("ts_ns") >= F.col("t1"))
            & (F.col("ts_ns") < F.col("wend"))
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

    def trigger_gaps(self, buckets: DataFrame, resumed: DataFrame) -> DataFrame:
        """Per trigger: the longest pause in consumption overlapping [t0, resumed] (or the window)."""
        w = Window.partitionBy(*UNIT).orderBy("bucket")
        gaps = (
            buckets.withColumn("gstart", F.lag("last").over(w))
            .where(F.col("gstart").isNotNull())
            .select(*UNIT, "gstart", F.col("first").alias("gend"))
        )
        t = (
            self.windows()
            .join(resumed, [*UNIT, "tid"], "left")
            .select(*UNIT, "tid", "t0", F.coalesce("t_resumed", "wend").alias("gwin_end"))
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
    def herd(self) -> DataFrame:
        """Per trigger window [t0, end): exact counts, long format (unit, tid, table, key, value).

        ``table`` is ``herd`` (watches, zk_requests, conflicts, failed_attempts, rebalance_attempts,
        group_rebalances, broker_group_requests), ``op`` (ZooKeeper requests of the rebalance by
        operation) or ``api`` (broker coordination requests by API).
        """
        c = self.f.control
        t = self.windows().where(F.col("outcome") != "skipped").select(*UNIT, "tid", "t0", "wend")
        ev = c.where(
            F.col("kind").isin(
                Kind.WATCH,
                Kind.ZK_REQUEST,
                Kind.CONFLICT,
                Kind.REBALANCE_END,
                Kind.REBALANCE_BEGIN,
                Kind.GROUP_REQUEST,
            )
        ).select(*UNIT, "ts_ns", "kind", "op", "path", "outcome", "api", "role", "client", "gave_up")
        ev = ev.where(~F.coalesce(F.col("client").isin(*WORKLOAD_CLIENTS), F.lit(False)))
        j = ev.join(F.broadcast(t), UNIT).where(
            (F.col("ts_ns") >= F.col("t0")) & (F.col("ts_ns") < F.col("wend"))
        )
        member, broker, kind = _role(Role.MEMBER), _role(Role.BROKER), F.col("kind")
        rebalance_zk = member & (kind == Kind.ZK_REQUEST) & ~zk_steady_col()

        def n(cond: Column) -> Column:
            return F.sum(F.when(cond, 1).otherwise(0)).cast("long")

        counts = j.groupBy(*UNIT, "tid").agg(
            n(member & (kind == Kind.WATCH)).alias("watches"),
            n(rebalance_zk).alias("zk_requests"),
            n(member & (kind == Kind.CONFLICT)).alias("conflicts"),
            n(
                member
                & (kind == Kind.REBALANCE_END)
                & F.col("outcome").isNotNull()
                & ~F.col("outcome").isin(*OK_OUTCOMES)
            ).alias("failed_attempts"),
            n(member & (kind == Kind.REBALANCE_END) & F.coalesce(F.col("gave_up"), F.lit(False))).alias(
                "gave_up"
            ),
            n(member & (kind == Kind.REBALANCE_BEGIN)).alias("rebalance_attempts"),
            n(broker & (kind == Kind.REBALANCE_BEGIN)).alias("group_rebalances"),
            n(broker & (kind == Kind.GROUP_REQUEST)).alias("broker_group_requests"),
        )
        m = F.create_map(*[x for col in counts.columns[4:] for x in (F.lit(col), F.col(col))])
        wide = counts.select(*UNIT, "tid", F.lit("herd").alias("table"), F.explode(m).alias("key", "value"))
        ops = (
            j.where(rebalance_zk)
            .groupBy(*UNIT, "tid", F.coalesce("op", F.lit("?")).alias("key"))
            .agg(F.count("*").alias("value"))
            .select(*UNIT, "tid", F.lit("op").alias("table"), "key", "value")
        )
        apis = (
            j.where(broker & (kind == Kind.GROUP_REQUEST))
            .groupBy(*UNIT, "tid", F.coalesce("api", F.lit("?")).alias("key"))
            .agg(F.count("*").alias("value"))
            .select(*UNIT, "tid", F.lit("api").alias("table"), "key", "value")
        )
        return wide.unionByName(ops).unionByName(apis)

    def unit_counters(self) -> DataFrame:
        """Per unit, long format (unit, key, value): steady-state traffic between ``stable`` and
        ``settling_end`` (``steady_window_ns``, ``zk_commits``, ``broker:<api>`` counts of the
        non-coordination APIs), harness health (``session_failures`` after stable and
        ``session_failures_startup`` before it, of members no nemesis action targeted), produce
        errors and what was measured (``has_broker``)."""
        c = self.f.control
        marks = (
            self.facts()
            .where(F.col("rtype") == "marks")
            .select(*UNIT, F.col("start").alias("stable"), F.coalesce("end", "wend").alias("send"))
        )
        cm = c.join(F.broadcast(marks), UNIT, "left")
        in_run = (F.col("ts_ns") >= F.col("stable")) & (F.col("ts_ns") < F.col("send"))
        member, broker, kind = _role(Role.MEMBER), _role(Role.BROKER), F.col("kind")
        targeted = (
            c.where(kind == Kind.INVOKE)
            .select(*UNIT, F.explode("targets").alias("source"))
            .distinct()
            .withColumn("targeted", F.lit(True))
        )
        trouble = (
            cm.where(
                member
                & (
                    (kind == Kind.HEARTBEAT_ERROR)
                    | ((kind == Kind.ZK_STATE) & F.col("state").isin("SUSPENDED", "LOST"))
                )
                & (F.col("ts_ns") < F.col("send"))
            )
            .join(F.broadcast(targeted), [*UNIT, "source"], "left_anti")
            .groupBy(*UNIT)
            .agg(
                F.sum(F.when(F.col("ts_ns") >= F.col("stable"), 1).otherwise(0)).alias("session_failures"),
                F.sum(F.when(F.col("ts_ns") < F.col("stable"), 1).otherwise(0)).alias(
                    "session_failures_startup"
                ),
            )
        )
        steady_broker = (
            cm.where(broker & (kind == Kind.BROKER_REQUEST) & in_run)
            .select(*UNIT, F.explode("requests").alias("api", "n"))
            .where(~F.col("api").isin(*COORDINATION_APIS))
            .groupBy(*UNIT, "api")
            .agg(F.sum("n").alias("value"))
            .select(
                *UNIT, F.concat(F.lit("broker:"), F.col("api")).alias("key"), F.col("value").cast("double")
            )
        )

        def flag(cond: Column) -> Column:
            return F.max(F.when(cond, 1).otherwise(0)).cast("double")

        simple = cm.groupBy(*UNIT).agg(
            F.sum(F.when(member & (kind == Kind.ZK_REQUEST) & zk_steady_col() & in_run, 1).otherwise(0))
            .cast("double")
            .alias("zk_commits"),
            F.sum(F.when(kind == Kind.PRODUCE_ERROR, 1).otherwise(0)).cast("double").alias("produce_errors"),
            flag(broker & (kind == Kind.BROKER_REQUEST)).alias("has_broker"),
            flag(kind == Kind.ZK_MNTR).alias("has_mntr"),
            (F.max("send") - F.max("stable")).cast("double").alias("steady_window_ns"),
        )
        m = F.create_map(*[x for col in simple.columns[3:] for x in (F.lit(col), F.col(col))])
        simple = simple.select(*UNIT, F.explode(m).alias("key", "value"))
        tm = F.create_map(
            *[
                x
                for col in ("session_failures", "session_failures_startup")
                for x in (F.lit(col), F.col(col).cast("double"))
            ]
        )
        return simple.unionByName(steady_broker).unionByName(
            trouble.select(*UNIT, F.explode(tm).alias("key", "value"))
        )

    def mntr(self) -> DataFrame:
        """ZooKeeper mntr samples: unit, ts_ns, label, packets (zk_packets_received)."""
        return self.f.control.where(F.col("kind") == Kind.ZK_MNTR).select(
            *UNIT, "ts_ns", "label", F.col("counters")["zk_packets_received"].alias("packets")
        )

    # -- split brain ---------------------------------------------------------------------------------
    def segments(self) -> DataFrame:
        """Processing intervals: (unit, ident, p, seg) -> start (first record), end (the close that
        ended it, else its last record), n (records)."""
        rec = self.f.records.select(*UNIT, "ident", F.col("partition").alias("p"), "ts_ns")
        pairs = rec.select(*UNIT, "ident", "p").distinct()
        closes = (
            self.facts()
            .where(F.col("rtype") == "close")
            .select(*UNIT, "ident", "p", F.col("start").alias("ts_ns"))
        )
        every = closes.where(F.col("p") < 0).drop("p").join(pairs, [*UNIT, "ident"])
        closes = closes.where(F.col("p") >= 0).unionByName(every.select(*UNIT, "ident", "p", "ts_ns"))
        u = rec.withColumn("mark", F.lit(0)).unionByName(closes.withColumn("mark", F.lit(1)))
        w = (
            Window.partitionBy(*UNIT, "ident", "p")
            .orderBy("ts_ns", "mark")
            .rowsBetween(Window.unboundedPreceding, Window.currentRow)
        )
        u = u.withColumn("seg", F.sum("mark").over(w))
        segs = (
            u.where(F.col("mark") == 0)
            .groupBy(*UNIT, "ident", "p", "seg")
            .agg(F.min("ts_ns").alias("start"), F.max("ts_ns").alias("last"), F.count("*").alias("n"))
        )
        ends = (
            u.where(F.col("mark") == 1)
            .groupBy(*UNIT, "ident", "p", (F.col("seg") - 1).alias("seg"))
            .agg(F.min("ts_ns").alias("close"))
        )
        return pin(
            segs.join(ends, [*UNIT, "ident", "p", "seg"], "left").select(
                *UNIT, "ident", "p", "seg", "start", F.coalesce("close", "last").alias("end"), "n"
            )
        )

    def overlap_islands(self, segs: DataFrame) -> DataFrame:
        """Overlap episodes per partition: maximal intervals in which processing intervals of two
        different members intersect (unit, p, istart, iend)."""
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
            F.greatest("start", "r_start").alias("ostart"),
            F.least("end", "r_end").alias("oend"),
        )
        w = Window.partitionBy(*UNIT, "p").orderBy("ostart", "oend")
        prev_end = F.max("oend").over(w.rowsBetween(Window.unboundedPreceding, -1))
        isl = pairs.withColumn(
            "new", F.when(prev_end.isNull() | (F.col("ostart") > prev_end), 1).otherwise(0)
        )
        isl = isl.withColumn(
            "island", F.sum("new").over(w.rowsBetween(Window.unboundedPreceding, Window.currentRow))
        )
        return pin(
            isl.groupBy(*UNIT, "p", "island").agg(
                F.min("ostart").alias("istart"), F.max("oend").alias("iend")
            )
        )

    def record_keys(self) -> DataFrame:
        """Per (unit, partition, offset) produced or processed: ``n`` deliveries, ``produced`` (0/1),
        ``last`` delivery ts, ``cross`` (members differ), and ``top``: the partition's highest
        processed offset (lost is below it, not drained above it)."""
        rec = self.f.records.select(*UNIT, "partition", "offset", "ts_ns", "ident", F.lit(0).alias("is_prod"))
        prod = self.f.produced.select(
            *UNIT,
            "partition",
            "offset",
            F.lit(None).cast("long").alias("ts_ns"),
            F.lit(None).cast("string").alias("ident"),
            F.lit(1).alias("is_prod"),
        )
        keys = (
            rec.unionByName(prod)
            .groupBy(*UNIT, "partition", "offset")
            .agg(
                F.sum(1 - F.col("is_prod")).alias("n"),
                F.max("is_prod").alias("produced"),
                F.max("ts_ns").alias("last"),
                F.coalesce(F.min("ident") != F.max("ident"), F.lit(False)).alias("cross"),
            )
        )
        top = Window.partitionBy(*UNIT, "partition")
        return keys.withColumn("top", F.max(F.when(F.col("n") > 0, F.col("offset"))).over(top))

    def commits(self) -> DataFrame:
        """Commits (unit, ts_ns, rejected, non_owner, stale): broker-side ones where the unit has
        them (the coordinator), else the members' (legacy_zk writes offsets to ZooKeeper). The owner
        of p at t is the live claimant whose claim began last (``owned`` intervals of the fold)."""
        c = self.f.control
        kinds = F.col("kind").isin(Kind.COMMIT, Kind.COMMIT_REJECTED)
        broker, member = _role(Role.BROKER), _role(Role.MEMBER)
        bside = c.where(broker & kinds).select(*UNIT).distinct().withColumn("bside", F.lit(True))
        cm = c.where(kinds & (broker | member)).join(F.broadcast(bside), UNIT, "left")
        cm = cm.where(broker == F.coalesce("bside", F.lit(False)))
        ids = (
            c.where(member & F.col("member").isNotNull() & (F.col("member") != ""))
            .select(*UNIT, "member", F.col("source").alias("mident"))
            .distinct()
        )
        cm = cm.join(F.broadcast(ids), [*UNIT, "member"], "left").withColumn(
            "committer", F.when(broker, F.col("mident")).otherwise(F.col("source"))
        )
        cm = cm.select(
            *UNIT, "ts_ns", "kind", "committer", F.col("partition").alias("p"), "generation"
        ).withColumn("cid", F.monotonically_increasing_id())
        acc = cm.where(F.col("kind") == Kind.COMMIT)
        own = join(
            acc.select("cid", *UNIT, "p", "ts_ns"),
            self.intervals("owned"),
            [*UNIT, "p"],
            (F.col("r_start") <= F.col("ts_ns")) & (F.col("ts_ns") < F.col("r_end")),
            "left",
        )
        owner = own.groupBy("cid").agg(F.max_by("r_ident", "r_since").alias("owner"))
        gens = c.where(
            F.col("generation").isNotNull()
            & (F.col("generation") >= 0)
            & ((broker & (F.col("kind") == Kind.GROUP_STATE)) | (member & (F.col("kind") == Kind.ASSIGNED)))
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
        rejected = cm.where(F.col("kind") == Kind.COMMIT_REJECTED).select(
            *UNIT,
            "ts_ns",
            F.lit(True).alias("rejected"),
            F.lit(None).cast("boolean").alias("non_owner"),
            F.lit(None).cast("boolean").alias("stale"),
        )
        return rejected.unionByName(
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


def zk_steady_col() -> Column:
    """:func:`harness.kernel.events.zk_steady` as a Spark column (the same constants)."""
    return F.coalesce(F.col("path").contains(ZK_STEADY_PATH) & F.col("op").isin(*ZK_STEADY_OPS), F.lit(False))


def to_phase(df: DataFrame, phases: DataFrame, ts: str) -> DataFrame:
    """Attach ``tid`` of the phase (trigger window, startup -1 or drain -2) that contains ``df[ts]``."""
    j = join(
        df,
        F.broadcast(phases),
        UNIT,
        (F.col(ts) >= F.col("r_pstart")) & (F.col(ts) < F.col("r_pend")),
        "left",
    )
    return j.withColumn("tid", F.coalesce(F.col("r_tid"), F.lit(STARTUP))).drop("r_tid", "r_pstart", "r_pend")


def pin(df: DataFrame) -> DataFrame:
    """Materialise a (small) intermediate table now and cut its lineage."""
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
