"""Commits: accepted commits from non-owners or stale generations (split brain), and rejected commits.

Contract
--------
* :func:`commits`: one row per commit (unit, ts_ns, rejected, non_owner, stale), computed in the
  driver from the collected control events (:mod:`.control`) and the fold's ``owned`` intervals. The
  broker-side commit events where the unit has them (the coordinator), else the members' (legacy_zk
  writes offsets to ZooKeeper). An accepted commit of p at t is from a non-owner when its committer
  (the member, through its member id for broker-side events) is not the owner of p at t: the live
  claimant whose claim began last (the fold's ``owned`` intervals); a commit whose member id maps to
  no member counts as well. It is stale when it carries generation g >= 0 while the group's latest
  generation at t (broker group_state, else members' assigned) was larger; under the consumer protocol
  (the commit's member id had a ConsumerGroupHeartbeat exchange at or before t) g is the member epoch
  and it is stale when lower than that member's current epoch: the response ``epoch`` of its latest
  exchange without error at or before t. ``stale`` is null for a commit without a generation. ``non_owner`` and ``stale`` are null for a rejected commit.
* :func:`phase_values`: per phase (unit, tid, key, value) of the accepted commits:
  ``commits_non_owner``, ``commits_stale_generation`` and ``commits_with_generation`` (how many
  carried one: without any, stale generations are not applicable).
* :func:`unit_values`: per unit, ``commits_rejected``.
"""

from __future__ import annotations

from bisect import bisect_right
from itertools import accumulate
from typing import Any

from pyspark.sql import DataFrame
from pyspark.sql import functions as F

from harness.analysis.control import Control
from harness.analysis.facts import Facts, phase_ids
from harness.analysis.frames import INF, UNIT, UnitKey, role_col, unit_key
from harness.analysis.herd import CONSUMER_HEARTBEAT
from harness.kernel.events import Kind, Role

#: The per-phase values of the accepted commits.
PHASE_KEYS = ("commits_non_owner", "commits_stale_generation", "commits_with_generation")


def broker_commit_units(control: DataFrame) -> DataFrame:
    """(unit, ``bside`` True) of every unit with broker-side commit events: herdlab's broker's own, or a
    Kafka tap's decoded from the OffsetCommit responses of a third-party broker. A unit without them (its
    broker's counters alone carry role broker) reads its members' commits: the one rule for every family."""
    kinds = F.col("kind").isin(Kind.COMMIT, Kind.COMMIT_REJECTED)
    return (
        control.where(role_col(Role.BROKER) & kinds).select(*UNIT).distinct().withColumn("bside", F.lit(True))
    )


#: A judged commit: (unit, ts_ns, rejected, non_owner, stale).
Judged = tuple[UnitKey, int | None, bool, bool | None, bool | None]


def commits(facts: Facts, control: Control) -> list[Judged]:
    """Every commit of the run, judged (see the module contract), from the collected control events
    and the fold's ``owned`` intervals."""
    owned: dict[tuple[UnitKey, int], list[dict[str, Any]]] = {}
    for o in facts.rows("owned"):
        owned.setdefault((unit_key(o), o["p"]), []).append(o)
    out: list[Judged] = []
    for k, rows in control.rows().items():
        kinds = [e for e in rows if e["kind"] in (Kind.COMMIT, Kind.COMMIT_REJECTED)]
        bside = any(e["role"] == Role.BROKER for e in kinds)
        names: dict[str, list[str | None]] = {}
        for e in rows:
            if e["role"] == Role.MEMBER and e["member"] and e["source"] not in names.get(e["member"], []):
                names.setdefault(e["member"], []).append(e["source"])
        gens = sorted(
            (e["ts_ns"], e["generation"])
            for e in rows
            if e["generation"] is not None
            and e["generation"] >= 0
            and e["ts_ns"] is not None
            and (
                (e["role"] == Role.BROKER and e["kind"] == Kind.GROUP_STATE)
                or (e["role"] == Role.MEMBER and e["kind"] == Kind.ASSIGNED)
            )
        )
        gen_ts = [gts for gts, _ in gens]
        highest = list(accumulate((cg for _, cg in gens), max))
        member_epochs = _member_epochs(rows)
        for e in kinds:
            if (e["role"] == Role.BROKER) != bside or e["role"] not in (Role.BROKER, Role.MEMBER):
                continue
            for named in names.get(e["member"], []) or [None]:
                ts = e["ts_ns"]
                if e["kind"] == Kind.COMMIT_REJECTED:
                    out.append((k, ts, True, None, None))
                    continue
                committer = named if e["role"] == Role.BROKER else e["source"]
                owner = _owner(owned.get((k, e["partition"]), []), ts)
                g = e["generation"]
                stale = None
                current = _current_epoch(member_epochs.get(e["member"]), ts)
                if g is not None and g >= 0 and current is not None:
                    stale = g < current  # a member epoch (consumer protocol)
                elif g is not None and g >= 0:
                    # the latest generation at ts: the highest of those written at or before it
                    n = 0 if ts is None else bisect_right(gen_ts, ts)
                    stale = n > 0 and g < highest[n - 1]
                non_owner = owner is None or committer is None or owner != committer
                out.append((k, ts, False, non_owner, stale))
    return out


def _member_epochs(rows: list[dict[str, Any]]) -> dict[str, tuple[list[int], list[int]]]:
    """Per member id: the ts_ns of its ConsumerGroupHeartbeat exchanges answered without error (broker
    ``group_request`` events with a response ``epoch``), in time order, and those epochs."""
    out: dict[str, tuple[list[int], list[int]]] = {}
    for e in sorted(
        (
            e
            for e in rows
            if e["role"] == Role.BROKER
            and e["kind"] == Kind.GROUP_REQUEST
            and e["api"] == CONSUMER_HEARTBEAT
            and e["error"] is None
            and e["epoch"] is not None
            and e["member"]
            and e["ts_ns"] is not None
        ),
        key=lambda e: e["ts_ns"],
    ):
        ts, epochs = out.setdefault(e["member"], ([], []))
        ts.append(e["ts_ns"])
        epochs.append(int(e["epoch"]))
    return out


def _current_epoch(exchanges: tuple[list[int], list[int]] | None, ts: int | None) -> int | None:
    """A member's current epoch at ``ts``: the response epoch of its latest exchange at or before ``ts``;
    None without one (the commit is then judged by the group's generation)."""
    if exchanges is None or ts is None:
        return None
    n = bisect_right(exchanges[0], ts)
    return exchanges[1][n - 1] if n else None


def _owner(intervals: list[dict[str, Any]], ts: int | None) -> str | None:
    """The owner of a partition at ``ts``: of its ``owned`` intervals holding ``ts``, the claim that
    began last; None when none holds it."""
    holding = [
        o
        for o in intervals
        if ts is not None
        and o["since"] is not None
        and o["start"] <= ts < (INF if o["end"] is None else o["end"])
    ]
    return max(holding, key=lambda o: o["since"])["ident"] if holding else None


def phase_values(judged: list[Judged], facts: Facts) -> dict[tuple[Any, ...], dict[str, float]]:
    """Accepted commits from non-owners and stale generations per phase (see the module contract)."""
    phases = facts.phase_rows()
    out: dict[tuple[Any, ...], dict[str, float]] = {}
    for k, ts, rejected, non_owner, stale in judged:
        if rejected:
            continue
        for tid in phase_ids(phases.get(k, []), ts):
            v = out.setdefault((*k, tid), dict.fromkeys(PHASE_KEYS, 0.0))
            v["commits_non_owner"] += bool(non_owner)
            v["commits_stale_generation"] += bool(stale)
            v["commits_with_generation"] += stale is not None
    return out


def unit_values(judged: list[Judged]) -> dict[UnitKey, dict[str, float]]:
    """Rejected commits per unit (``commits_rejected``; units without any have none)."""
    out: dict[UnitKey, dict[str, float]] = {}
    for k, _, rejected, _, _ in judged:
        if rejected:
            v = out.setdefault(k, {"commits_rejected": 0.0})
            v["commits_rejected"] += 1
    return out
