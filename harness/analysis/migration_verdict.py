"""The migration proof's pure part: a partition's figures and verdict, the run's summary and its
alert lines (no Spark; :mod:`harness.analysis.migration` computes the inputs).

Verdicts, worst first: :data:`VERDICT_ORDER` (lost > overlap > not_taken_over > replay > clean). A
partition's: ``lost`` if lost > 0, else ``overlap`` if an overlap episode between members of two
kinds, else ``not_taken_over`` if no new-kind member got it, else ``replay`` if more offsets were
reprocessed than the uncommitted window, else ``clean``; a switch's and a unit's: the worst of theirs.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from typing import Any

from harness.analysis.metrics_model import DocumentSections, Migration, MigrationPartition, ResumedAt, Unit

#: Partition, switch and unit verdicts, worst first.
VERDICT_ORDER = ("lost", "overlap", "not_taken_over", "replay", "clean")


def worst(verdicts: Iterable[str]) -> str:
    """The worst of ``verdicts`` by :data:`VERDICT_ORDER` (``clean`` for none)."""
    found = set(verdicts)
    return next((v for v in VERDICT_ORDER if v in found), "clean")


def partition_entry(
    *,
    topic: str | None,
    partition: int,
    taken_over_s: float | None,
    zookeeper_committed: int | None,
    kafka_committed: int | None,
    processed_last: int | None,
    resumed: list[ResumedAt],
    reprocessed: int,
    lost: int,
    overlap_episodes: int,
    overlap_s: float,
) -> MigrationPartition:
    """One partition of a switch, with its derived figures:

    * ``committed`` = max of the ZooKeeper and the Kafka committed offsets (None when neither);
    * ``resumed_at`` = the first new owner's first offset (None when none processed on p);
    * ``window`` (the uncommitted window) = processed_last + 1 - committed (committed None:
      processed_last + 1; nothing processed: 0), never below 0;
    * ``verdict``: ``lost`` if lost > 0, else ``overlap`` if overlap_episodes > 0, else
      ``not_taken_over`` if no new-kind member got p, else ``replay`` if reprocessed > window,
      else ``clean``.
    """
    both = [v for v in (zookeeper_committed, kafka_committed) if v is not None]
    committed = max(both) if both else None
    window = 0 if processed_last is None else max(0, processed_last + 1 - (committed or 0))
    if lost > 0:
        verdict = "lost"
    elif overlap_episodes > 0:
        verdict = "overlap"
    elif taken_over_s is None:
        verdict = "not_taken_over"
    elif reprocessed > window:
        verdict = "replay"
    else:
        verdict = "clean"
    return {
        "topic": topic,
        "partition": partition,
        "taken_over_s": taken_over_s,
        "zookeeper_committed": zookeeper_committed,
        "kafka_committed": kafka_committed,
        "committed": committed,
        "processed_last": processed_last,
        "resumed": resumed,
        "resumed_at": resumed[0]["offset"] if resumed else None,
        "window": window,
        "reprocessed": reprocessed,
        "lost": lost,
        "overlap_episodes": overlap_episodes,
        "overlap_s": overlap_s,
        "verdict": verdict,
    }


def unit_name(u: Mapping[str, Any]) -> str:
    """The unit's name in ``metrics["migration"]["units"]``: ``legacy_zk migration rep 0``."""
    return f"{u['impl']} {u['case']} rep {u['repetition']}"


def expect_of(manifest: dict[str, Any]) -> str:
    """The scenario's ``[migration].expect`` (``clean`` when unset)."""
    return str(((manifest.get("scenario") or {}).get("migration") or {}).get("expect") or "clean")


def summary(units: Sequence[Unit], expect: str) -> Migration | None:
    """``metrics["migration"]`` (see the module contract); None when no unit has a switch."""
    verdicts = {unit_name(u): m["verdict"] for u in units if (m := u.get("migration"))}
    if not verdicts:
        return None
    return {
        "expect": expect,
        "verdict": worst(verdicts.values()),
        "units": verdicts,
        "as_expected": all(v == expect for v in verdicts.values()),
    }


def alert_lines(out: DocumentSections) -> list[str]:
    """The alert lines of the migration proof: lost records per unit (``LOST ...``, they fail the
    run as every loss does) and a verdict other than the expected one."""
    lines = []
    for u in out.get("units") or []:
        m = u.get("migration")
        if not m:
            continue
        lost = {}
        for s in m["switches"]:
            for p in s["partitions"]:
                if p["lost"]:
                    lost[p["partition"]] = p["lost"]
        if lost:
            where = ", ".join(f"p{p}: {n}" for p, n in sorted(lost.items()))
            lines.append(f"LOST records across the migration of {unit_name(u)} ({where})")
    mig = out.get("migration")
    if mig and not mig["as_expected"]:
        other_units = ", ".join(f"{n}: {v}" for n, v in mig["units"].items() if v != mig["expect"])
        lines.append(f"migration verdict {mig['verdict']}, expected {mig['expect']} ({other_units})")
    return lines
