"""Session failures: harness health, not a protocol metric.

Contract
--------
* :func:`unit_values`: per unit, long format (unit, key, value): ``session_failures`` (heartbeat
  errors the member's client reported, the broker expiring the member's session (``member_removed``
  with reason ``expired``), and ZooKeeper SUSPENDED / LOST states of members that no nemesis action
  targeted, from the
  unit's ``stable`` until settling_end) and ``session_failures_startup`` (the same before
  ``stable``: start-up starvation). Units without any have no rows. Trouble inside the trigger
  window of a coordinator or ZooKeeper-leader fault (:func:`.failover.fault_windows`, from its
  invoke) is not counted: those faults target no member but hit every member's session; it is the
  fault's effect, reported in its row (``units[i].failover``).
* :func:`health_fields`: the unit's two counts in the metrics document (0 when absent).
* With them, the start-up figures of :mod:`.startup` (members ready, when, first stable): the unit's
  ``start_up`` entry, computed in the same job.
"""

from __future__ import annotations

from typing import Any

from pyspark.sql import DataFrame
from pyspark.sql import functions as F

from harness.analysis import startup
from harness.analysis.facts import Facts
from harness.analysis.failover import fault_windows
from harness.analysis.frames import UNIT, Frames, join, long_values, role_col
from harness.kernel.events import Kind, Role

NAMES = ("session_failures", "session_failures_startup")
#: herdlab's broker's event when a member leaves the group, and the reason of a session expiry.
MEMBER_REMOVED, EXPIRED = "member_removed", "expired"


def unit_values(facts: Facts, frames: Frames) -> DataFrame:
    """Session failures of untargeted members per unit (see the module contract)."""
    c = frames.control
    cm = c.join(F.broadcast(facts.steady_marks()), UNIT, "left")
    kind = F.col("kind")
    targeted = (
        c.where(kind == Kind.INVOKE)
        .select(*UNIT, F.explode("targets").alias("source"))
        .distinct()
        .withColumn("targeted", F.lit(True))
    )
    # the coordinator expiring a member's session (herdlab's broker says which member id; the member's
    # own events map the id to its name): the one account every client gets, whether or not its library
    # reports failed heartbeats (kafka-python has no callback for them)
    ids = (
        c.where(role_col(Role.MEMBER) & F.col("member").isNotNull() & (F.col("member") != ""))
        .select(*UNIT, "member", F.col("source").alias("named"))
        .distinct()
    )
    expired = (
        cm.where(role_col(Role.BROKER) & (kind == MEMBER_REMOVED) & (F.col("reason") == EXPIRED))
        .join(ids, [*UNIT, "member"])
        .withColumn("source", F.col("named"))
        .drop("named")
    )
    own = cm.where(
        role_col(Role.MEMBER)
        & (
            (kind == Kind.HEARTBEAT_ERROR)
            | ((kind == Kind.ZK_STATE) & F.col("state").isin("SUSPENDED", "LOST"))
        )
    )
    trouble = (
        own.unionByName(expired)
        .where(F.col("ts_ns") < F.col("send"))
        .join(F.broadcast(targeted), [*UNIT, "source"], "left_anti")
    )
    windows = F.broadcast(fault_windows(facts))
    inside = (F.col("ts_ns") >= F.col("r_wstart")) & (F.col("ts_ns") < F.col("r_wend"))
    trouble = (
        join(trouble, windows, UNIT, inside, "left_anti")
        .groupBy(*UNIT)
        .agg(
            F.sum(F.when(F.col("ts_ns") >= F.col("stable"), 1).otherwise(0)).alias("session_failures"),
            F.sum(F.when(F.col("ts_ns") < F.col("stable"), 1).otherwise(0)).alias("session_failures_startup"),
        )
    )
    return long_values(trouble, UNIT, list(NAMES)).unionByName(startup.unit_values(frames))


def health_fields(pu: dict[str, float]) -> dict[str, Any]:
    """``session_failures`` and ``session_failures_startup`` of a unit from its values ``pu``, its
    ``start_up`` entry (:func:`harness.analysis.startup.start_up_field`) and ``startup_stable_s`` (its
    ``stable_s``, the compared whole-unit metric; None without one)."""
    entry = startup.start_up_field(pu)
    return {
        **{name: int(pu.get(name) or 0) for name in NAMES},
        "start_up": entry,
        "startup_stable_s": entry.get("stable_s") if entry else None,
    }
