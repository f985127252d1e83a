"""Herd family: the change's own coordination traffic, counted exactly in each trigger window [t0, end).

Contract
--------
* :func:`counts`: per (unit, tid) of every trigger that was not skipped, ``{table: {key: n}}``
  with tables ``herd`` (watches, zk_requests, conflicts, failed_attempts, gave_up,
  rebalance_attempts, group_rebalances, broker_group_requests; owner_writes: the members'
  rebalance requests ``create`` / ``delete`` under ``/owners/``; registration_reads: their ``get`` of
  a registration ``/consumers/<group>/ids/<id>``; rebalancing_members: members with a
  ``rebalance_begin``; first_watch: the ts_ns of the first member ``watch``, absent without one; leader_syncs: the broker's
  SyncGroup ``group_request`` events that carry assignments, i.e. the leader's, one per round),
  ``op`` (members' ZooKeeper requests of the rebalance by operation; offset writes are steady
  state), ``api`` (broker coordination requests by API; the workload's clients, producer and
  checker, are left out) and ``invoke`` (members: live just before the invoke; partitions: P then;
  see :meth:`~harness.analysis.facts.Facts.at_invoke`).
* :func:`mntr_samples`: per unit, the ZooKeeper ``mntr`` samples (ts_ns, label, packets received).
* :func:`unit_values`: per unit, what was measured: ``has_broker`` (a broker counter report),
  ``has_mntr`` (an mntr sample), long format (unit, key, value).
* :func:`herd_fields`: a trigger's herd figures in the metrics document. A skipped trigger has
  None for every count; broker counts are None for a unit without a broker; zk_packets is None
  without mntr samples at both window edges; coordination_requests = zk_requests +
  broker_group_requests (None for a coordinator unit without broker reports);
  rebalance_rounds (:func:`rebalance_rounds`). Besides (the legacy
  herd bench's figures): owner_writes, registration_reads, rebalancing_members,
  first_notification_s (t0 to the first watch; None without one), zk_packets_minus_idle (see
  :func:`packets_minus_idle`), members_at_invoke and partitions_at_invoke.
"""

from __future__ import annotations

from typing import Any

from pyspark.sql import Column, DataFrame
from pyspark.sql import functions as F

from harness.analysis.facts import Facts
from harness.analysis.frames import UNIT, Frames, UnitKey, collect, dur_s, role_col, unit_key, zk_steady_col
from harness.kernel.events import OK_OUTCOMES, SKIPPED, WORKLOAD_CLIENTS, Kind, Role

#: Per (case, impl, repetition, tid): {table: {key: count}}.
HerdCounts = dict[tuple[Any, ...], dict[str, dict[str, int]]]
#: A registration znode of the 0.8 layout: ``/consumers/<group>/ids/<id>`` (Java regex).
REGISTRATION = "^/consumers/[^/]+/ids/[^/]+$"
#: The API whose leader requests (those carrying assignments) in a window are its rebalance rounds (spec 2.13).
SYNC_GROUP = "SyncGroup"
#: The ``source`` of the Kafka tap's events (:mod:`harness.cluster.kafka_tap`).
TAP = "tap"
#: Per unit: (ts_ns, label, zk_packets_received) of each mntr sample.
MntrSamples = dict[UnitKey, list[tuple[int, str, float | None]]]


def herd(facts: Facts, frames: Frames) -> DataFrame:
    """Per trigger window [t0, end): exact counts, long format (unit, tid, table, key, value)."""
    c = frames.control
    t = facts.windows().where(F.col("outcome") != "skipped").select(*UNIT, "tid", "t0", "wend")
    ev = c.where(
        F.col("kind").isin(
            Kind.WATCH,
            Kind.ZK_REQUEST,
            Kind.CONFLICT,
            Kind.REBALANCE_END,
            Kind.REBALANCE_BEGIN,
            Kind.GROUP_REQUEST,
        )
    ).select(
        *UNIT,
        "ts_ns",
        "kind",
        "op",
        "path",
        "outcome",
        "api",
        "role",
        "client",
        "gave_up",
        "source",
        "generation",
        "assignments",
        F.coalesce(F.col("count"), F.lit(1)).cast("long").alias("count"),
    )
    ev = ev.where(~F.coalesce(F.col("client").isin(*WORKLOAD_CLIENTS), F.lit(False)))
    j = ev.join(F.broadcast(t), UNIT).where(
        (F.col("ts_ns") >= F.col("t0")) & (F.col("ts_ns") < F.col("wend"))
    )
    member, broker, kind = role_col(Role.MEMBER), role_col(Role.BROKER), F.col("kind")
    rebalance_zk = member & (kind == Kind.ZK_REQUEST) & ~zk_steady_col()

    def n(cond: Column) -> Column:
        return F.sum(F.when(cond, 1).otherwise(0)).cast("long")

    def requests(cond: Column) -> Column:
        """ZooKeeper requests: a simulated ``zk_request`` stands for ``count`` of them (events.py)."""
        return F.sum(F.when(cond, F.col("count")).otherwise(0)).cast("long")

    counted = j.groupBy(*UNIT, "tid").agg(
        n(member & (kind == Kind.WATCH)).alias("watches"),
        requests(rebalance_zk).alias("zk_requests"),
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
        requests(
            rebalance_zk & F.col("op").isin("create", "delete") & F.col("path").contains("/owners/")
        ).alias("owner_writes"),
        requests(rebalance_zk & (F.col("op") == "get") & F.col("path").rlike(REGISTRATION)).alias(
            "registration_reads"
        ),
        F.count_distinct(F.when(member & (kind == Kind.REBALANCE_BEGIN), F.col("source")))
        .cast("long")
        .alias("rebalancing_members"),
        F.min(F.when(member & (kind == Kind.WATCH), F.col("ts_ns"))).cast("long").alias("first_watch"),
        n(
            broker
            & (kind == Kind.GROUP_REQUEST)
            & (F.col("api") == SYNC_GROUP)
            & (F.coalesce(F.col("assignments"), F.lit(0)) > 0)
        ).alias("leader_syncs"),
    )
    m = F.create_map(*[x for col in counted.columns[4:] for x in (F.lit(col), F.col(col))])
    wide = counted.select(
        *UNIT, "tid", F.lit("herd").alias("table"), F.explode(m).alias("key", "value")
    ).where(F.col("value").isNotNull())
    at = facts.at_invoke().join(t.select(*UNIT, "tid"), [*UNIT, "tid"])
    invoke = at.select(
        *UNIT,
        "tid",
        F.lit("invoke").alias("table"),
        F.explode(
            F.create_map(
                F.lit("members"),
                F.col("members").cast("long"),
                F.lit("partitions"),
                F.col("partitions").cast("long"),
            )
        ).alias("key", "value"),
    )
    ops = (
        j.where(rebalance_zk)
        .groupBy(*UNIT, "tid", F.coalesce("op", F.lit("?")).alias("key"))
        .agg(F.sum("count").cast("long").alias("value"))
        .select(*UNIT, "tid", F.lit("op").alias("table"), "key", "value")
    )
    apis = (
        j.where(broker & (kind == Kind.GROUP_REQUEST))
        .groupBy(*UNIT, "tid", F.coalesce("api", F.lit("?")).alias("key"))
        .agg(F.count("*").alias("value"))
        .select(*UNIT, "tid", F.lit("api").alias("table"), "key", "value")
    )
    return wide.unionByName(ops).unionByName(apis).unionByName(invoke)


def counts(facts: Facts, frames: Frames) -> HerdCounts:
    """The herd counts of every measured trigger window (collected; see the module contract)."""
    out: HerdCounts = {}
    for r in collect(herd(facts, frames)):
        out.setdefault((*unit_key(r), r["tid"]), {}).setdefault(r["table"], {})[r["key"]] = int(r["value"])
    return out


def mntr_samples(frames: Frames) -> MntrSamples:
    """ZooKeeper mntr samples per unit: (ts_ns, label, zk_packets_received), in collected order."""
    rows = frames.control.where(F.col("kind") == Kind.ZK_MNTR).select(
        *UNIT, "ts_ns", "label", F.col("counters")["zk_packets_received"].alias("packets")
    )
    out: MntrSamples = {}
    for r in collect(rows):
        out.setdefault(unit_key(r), []).append((r["ts_ns"], r["label"] or "", r["packets"]))
    return out


def unit_values(frames: Frames) -> DataFrame:
    """Per unit, long format: ``has_broker``, ``has_mntr`` and ``tapped`` (its broker figures come from
    the Kafka tap in front of a third-party broker, which sees requests but not the broker's own group
    events); 1.0 where the unit has them."""
    c, kind = frames.control, F.col("kind")

    def flag(cond: Column) -> Column:
        return F.max(F.when(cond, 1).otherwise(0)).cast("double")

    flags = c.groupBy(*UNIT).agg(
        flag(role_col(Role.BROKER) & (kind == Kind.BROKER_REQUEST)).alias("has_broker"),
        flag(kind == Kind.ZK_MNTR).alias("has_mntr"),
        flag(role_col(Role.BROKER) & (F.col("source") == TAP)).alias("tapped"),
    )
    cols = ("has_broker", "has_mntr", "tapped")
    m = F.create_map(*[x for col in cols for x in (F.lit(col), F.col(col))])
    return flags.select(*UNIT, F.explode(m).alias("key", "value"))


def packets(samples: list[tuple[int, str, float | None]], invoke: int) -> int | None:
    """ZooKeeper packets received in a window: from the mntr sample taken just before this
    trigger's invoke to the sample at the window's far edge (the next trigger's, else settling_end)."""
    samples = sorted(samples)
    start = max((s for s in samples if s[1].startswith("invoke:") and s[0] <= invoke), default=None)
    end = next(
        (s for s in samples if s[0] > invoke and (s[1].startswith("invoke:") or s[1] == "settling_end")), None
    )
    if start is None or end is None or start[2] is None or end[2] is None:
        return None
    return int(end[2] - start[2])


def packets_minus_idle(samples: list[tuple[int, str, float | None]], invoke: int) -> int | None:
    """:func:`packets` minus the idle rate: (packets at the window's start sample ``invoke:<id>`` -
    packets at the sample ``idle:<id>`` of the same id) / the time between them, times the window's
    time between its edge samples, rounded. None without both edges, or without an earlier
    ``idle:<id>`` sample."""
    samples = sorted(samples)
    start = max((s for s in samples if s[1].startswith("invoke:") and s[0] <= invoke), default=None)
    raw = packets(samples, invoke)
    if start is None or raw is None:
        return None
    end = next(s for s in samples if s[0] > invoke and (s[1].startswith("invoke:") or s[1] == "settling_end"))
    idle_label = "idle:" + start[1].removeprefix("invoke:")
    idle = next((s for s in samples if s[1] == idle_label), None)
    if idle is None or idle[2] is None or start[2] is None or start[0] <= idle[0]:
        return None
    rate = (start[2] - idle[2]) / (start[0] - idle[0])  # packets per ns while nothing changed
    return round(raw - rate * (end[0] - start[0]))


def rebalance_rounds(hc: dict[str, int], impl: str, has_broker: bool, measured: bool) -> int | None:
    """A trigger window's rebalance rounds: the leader's SyncGroup requests in it (those carrying
    assignments; counted on the wire, so a broker that does not number its generations, as tansu 0.6 keeps
    generation 0, is counted alike) (eager: 1 per change; cooperative-sticky: 2 when partitions move, the revoke round
    then the assign round). None for legacy_zk, without broker reports, or for a skipped trigger."""
    if impl == "legacy_zk" or not has_broker or not measured:
        return None
    return hc.get("leader_syncs", 0)


def herd_fields(
    r: dict[str, Any],
    h: dict[str, dict[str, int]],
    samples: list[tuple[int, str, float | None]],
    impl: str,
    has_broker: bool,
    has_mntr: bool,
    tapped: bool = False,
) -> dict[str, Any]:
    """A trigger's herd figures from its window row ``r`` (outcome, invoke), its counts ``h`` (see
    :func:`counts`) and its unit's mntr ``samples``; ``tapped``: the broker figures come from a Kafka tap
    (then ``group_rebalances``, the broker's own events, is None: not measured, never 0)."""
    hc = h.get("herd", {})
    measured = r["outcome"] != SKIPPED
    zk = hc.get("zk_requests", 0) if measured else None
    bg = (hc.get("broker_group_requests", 0) if has_broker else None) if measured else None
    return {
        "watches": hc.get("watches", 0) if measured else None,
        "zk_requests": zk,
        "zk_packets": packets(samples, r["invoke"]) if has_mntr and measured else None,
        "broker_group_requests": bg,
        "coordination_requests": None
        if zk is None or (bg is None and impl != "legacy_zk")
        else zk + (bg or 0),
        "conflicts": hc.get("conflicts", 0) if measured else None,
        "failed_attempts": hc.get("failed_attempts", 0) if measured else None,
        "gave_up": hc.get("gave_up", 0) if measured else None,
        "rebalance_attempts": hc.get("rebalance_attempts", 0) if measured else None,
        # the broker's own rebalance events: None where nobody could count them (a third-party broker)
        "group_rebalances": hc.get("group_rebalances", 0) if has_broker and not tapped and measured else None,
        "rebalance_rounds": rebalance_rounds(hc, impl, has_broker, measured),
        "zk_requests_by_op": dict(sorted(h.get("op", {}).items())),
        "broker_requests_by_api": dict(sorted(h.get("api", {}).items())) if has_broker else {},
        "owner_writes": hc.get("owner_writes", 0) if measured else None,
        "registration_reads": hc.get("registration_reads", 0) if measured else None,
        "rebalancing_members": hc.get("rebalancing_members", 0) if measured else None,
        "first_notification_s": dur_s(r["t0"], hc.get("first_watch")) if measured else None,
        "zk_packets_minus_idle": packets_minus_idle(samples, r["invoke"]) if has_mntr and measured else None,
        "members_at_invoke": h.get("invoke", {}).get("members") if measured else None,
        "partitions_at_invoke": h.get("invoke", {}).get("partitions") if measured else None,
    }
