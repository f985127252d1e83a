"""Commits: accepted commits from non-owners or stale generations (split brain), and rejected commits.

Contract
--------
* :func:`commits`: one row per commit (unit, ts_ns, rejected, non_owner, stale), pinned. The
  broker-side commit events where the unit has them (the coordinator), else the members' (legacy_zk
  writes offsets to ZooKeeper). An accepted commit of p at t is from a non-owner when its committer
  (the member, through its member id for broker-side events) is not the owner of p at t: the live
  claimant whose claim began last (the fold's ``owned`` intervals); a commit whose member id maps to
  no member counts as well. It is stale when it carries generation g >= 0 while the group's latest
  generation at t (broker group_state, else members' assigned) was larger; ``stale`` is null for a
  commit without a generation. ``non_owner`` and ``stale`` are null for a rejected commit.
* :func:`phase_values`: per phase (unit, tid, key, value) of the accepted commits:
  ``commits_non_owner``, ``commits_stale_generation`` and ``commits_with_generation`` (how many
  carried one: without any, stale generations are not applicable).
* :func:`unit_values`: per unit, ``commits_rejected``.
"""

from __future__ import annotations

from pyspark.sql import DataFrame
from pyspark.sql import functions as F

from harness.analysis.facts import Facts, per_phase, to_phase
from harness.analysis.frames import UNIT, Frames, join, long_values, pin, role_col
from harness.kernel.events import Kind, Role


def broker_commit_units(control: DataFrame) -> DataFrame:
    """(unit, ``bside`` True) of every unit with broker-side commit events: herdlab's broker's own, or a
    Kafka tap's decoded from the OffsetCommit responses of a third-party broker. A unit without them (its
    broker's counters alone carry role broker) reads its members' commits: the one rule for every family."""
    kinds = F.col("kind").isin(Kind.COMMIT, Kind.COMMIT_REJECTED)
    return (
        control.where(role_col(Role.BROKER) & kinds).select(*UNIT).distinct().withColumn("bside", F.lit(True))
    )


def commits(facts: Facts, frames: Frames) -> DataFrame:
    """Every commit of the run, judged (see the module contract)."""
    c = frames.control
    kinds = F.col("kind").isin(Kind.COMMIT, Kind.COMMIT_REJECTED)
    broker, member = role_col(Role.BROKER), role_col(Role.MEMBER)
    bside = broker_commit_units(c)
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
        facts.intervals("owned"),
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
    return pin(
        rejected.unionByName(
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


def phase_values(commits: DataFrame, phases: DataFrame) -> DataFrame:
    """Accepted commits from non-owners and stale generations per phase (see the module contract)."""
    accepted = to_phase(commits.where(~F.col("rejected")), phases, "ts_ns")
    return (
        per_phase(accepted, "commits_non_owner", F.sum(F.when(F.col("non_owner"), 1).otherwise(0)))
        .unionByName(
            per_phase(accepted, "commits_stale_generation", F.sum(F.when(F.col("stale"), 1).otherwise(0)))
        )
        .unionByName(per_phase(accepted, "commits_with_generation", F.count("stale")))
    )


def unit_values(commits: DataFrame) -> DataFrame:
    """Rejected commits per unit, long format (unit, ``commits_rejected``, count)."""
    rejected = commits.where(F.col("rejected")).groupBy(*UNIT).agg(F.count("*").alias("commits_rejected"))
    return long_values(rejected, UNIT, ["commits_rejected"])
