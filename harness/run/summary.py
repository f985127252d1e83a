"""A short summary of a run, computed in plain Python from its history.

This is the interim answer of ``herdlab run`` until the PySpark analysis lands; it uses the
definitions of design.md, simplified:

* per unit: records produced, processed (distinct (partition, offset)), **lost** (produced but never
  processed), **duplicates** (processed more than once), commits rejected;
* per trigger (a nemesis action with ``trigger`` set): **settle latency** t1 - t0, where t1 is the
  first time from which every partition has exactly one live, unsuspended owner with no ownership
  change for the settle window (a joining member must have started first); ``None`` if it never
  settled before the next trigger or the end of the unit;
* herd per trigger, counted over [t0, t1] (or to the next trigger): watch notifications, ZooKeeper
  requests, ownership conflicts, failed rebalance attempts, rebalances begun, broker requests, and
  ZooKeeper packets received (``mntr`` sampled by the nemesis before the action and at the next
  sample).
"""

from __future__ import annotations

from collections import Counter, defaultdict
from collections.abc import Iterable, Mapping
from typing import Any

from harness.run.ownership import Ownership


def _unit_key(e: Mapping[str, Any]) -> tuple[str, str, int]:
    return (str(e.get("case")), str(e.get("impl")), int(e.get("repetition") or 0))


def summarize(events: Iterable[Mapping[str, Any]], settle_window_s: float) -> list[dict[str, Any]]:
    """One row per unit with its triggers (see the module docstring)."""
    by_unit: dict[tuple[str, str, int], list[Mapping[str, Any]]] = defaultdict(list)
    for e in events:
        by_unit[_unit_key(e)].append(e)
    rows = []
    for key, evs in sorted(by_unit.items()):
        evs.sort(key=lambda e: e.get("ts_ns", 0))
        rows.append(_summarize_unit(key, evs, settle_window_s))
    return rows


def _summarize_unit(
    key: tuple[str, str, int], evs: list[Mapping[str, Any]], window_s: float
) -> dict[str, Any]:
    case, impl, rep = key
    start = next((e for e in evs if e.get("kind") == "unit_start"), {})
    produced = {(e["partition"], e["offset"]) for e in evs if e.get("kind") == "produced"}
    processed_count = Counter((e["partition"], e["offset"]) for e in evs if e.get("kind") == "record")
    triggers = [e for e in evs if e.get("kind") == "nemesis" and e.get("trigger")]
    window_ns = int(window_s * 1e9)
    rows = []
    for i, t in enumerate(triggers):
        t0 = int(t["ts_ns"])
        t_next = int(triggers[i + 1]["ts_ns"]) if i + 1 < len(triggers) else int(evs[-1]["ts_ns"])
        t1 = _settle_time(evs, t, t_next, window_ns, int(start.get("partitions") or 0))
        end = t1 if t1 is not None else t_next
        window = [e for e in evs if t0 <= int(e.get("ts_ns", 0)) <= end]
        kinds = Counter(e.get("kind") for e in window)
        broker_requests = sum(int(e.get("total") or 0) for e in window if e.get("kind") == "broker_request")
        rows.append(
            {
                "action": t.get("action"),
                "targets": t.get("targets"),
                "t0_s": (t0 - int(start.get("ts_ns", t0))) / 1e9,
                "latency_s": (t1 - t0) / 1e9 if t1 is not None else None,
                "watches": kinds["watch"],
                "zk_requests": kinds["zk_request"],
                "zk_packets": _zk_packets(evs, t),
                "conflicts": kinds["conflict"],
                "failed_attempts": sum(
                    1
                    for e in window
                    if e.get("kind") == "rebalance_end" and e.get("outcome") not in (None, "ok")
                ),
                "rebalances": kinds["rebalance_begin"],
                "broker_requests": broker_requests,
            }
        )
    # Session trouble of members no fault targeted: with a healthy harness this is zero.
    # Counted until the group settled after the timeline, so the teardown does not count.
    targeted = {t for e in evs if e.get("kind") == "nemesis" for t in (e.get("targets") or [])}
    end_ns = next(
        (
            int(e["ts_ns"])
            for e in evs
            if e.get("kind") == "zk_mntr" and e.get("label") in ("settled", "unsettled")
        ),
        None,
    )
    stable_ns = next((int(e["ts_ns"]) for e in evs if e.get("kind") == "stable"), None)
    troubled = [
        e
        for e in evs
        if (end_ns is None or int(e.get("ts_ns", 0)) <= end_ns)
        and e.get("source") not in targeted
        and e.get("source", "").startswith(("m", "j"))
        and (
            e.get("kind") == "heartbeat_error"
            or (e.get("kind") == "zk_state" and str(e.get("state")) in ("SUSPENDED", "LOST"))
        )
    ]
    return {
        "case": case,
        # before the group first became stable (members starting) / after it (the run proper)
        "session_failures_startup": sum(
            1 for e in troubled if stable_ns is None or int(e["ts_ns"]) < stable_ns
        ),
        "session_failures": sum(
            1 for e in troubled if stable_ns is not None and int(e["ts_ns"]) >= stable_ns
        ),
        "impl": impl,
        "repetition": rep,
        "produced": len(produced),
        "processed": sum(1 for k in processed_count if k in produced),
        "lost": len(produced - set(processed_count)),
        "duplicates": sum(1 for c in processed_count.values() if c > 1),
        "commits_rejected": sum(1 for e in evs if e.get("kind") == "commit_rejected"),
        "triggers": rows,
    }


def _settle_time(
    evs: list[Mapping[str, Any]], trigger: Mapping[str, Any], t_next: int, window_ns: int, partitions: int
) -> int | None:
    t0 = int(trigger["ts_ns"])
    own = Ownership(partitions)
    i = 0
    while i < len(evs) and int(evs[i].get("ts_ns", 0)) <= t0:
        own.apply(evs[i])
        i += 1
    joining = (
        set(trigger.get("targets") or []) if trigger.get("action") in ("join", "start_member") else set()
    )

    def candidate(ts: int) -> int | None:
        return ts if own.owned_once() and not (joining - own.live) else None

    cand = candidate(t0)
    for e in evs[i:]:
        ts = int(e.get("ts_ns", 0))
        if cand is not None and ts - cand >= window_ns:
            return cand
        if ts > t_next:
            return None
        before = (own.last_change_ns, len(own.live))
        own.apply(e)
        if (own.last_change_ns, len(own.live)) != before:
            cand = candidate(ts)
    return cand if cand is not None and int(evs[-1].get("ts_ns", 0)) - cand >= window_ns else None


def _zk_packets(evs: list[Mapping[str, Any]], trigger: Mapping[str, Any]) -> int | None:
    """zk_packets_received between the sample taken just before the trigger and the next sample."""
    samples = [e for e in evs if e.get("kind") == "zk_mntr"]
    label = f"before:{trigger.get('action')}"
    for j, s in enumerate(samples):
        if s.get("label") == label and int(s["ts_ns"]) >= int(trigger["ts_ns"]) and j + 1 < len(samples):
            a = (s.get("counters") or {}).get("zk_packets_received")
            b = (samples[j + 1].get("counters") or {}).get("zk_packets_received")
            if a is not None and b is not None:
                return int(b) - int(a)
    return None
