"""Coordinator failover figures, pure part: per fault its failover time and parts, offsets lost,
deposed acceptances and double-coordinator time, the run's summary and its alert lines (no Spark;
:mod:`harness.analysis.failover` collects the inputs from the history).

Inputs are events as dicts with ``ts_ns`` and the fields of the event contract
(:mod:`harness.kernel.events`, "Failover fields"). Times in the results are seconds.

Definitions (t0 = the fault's ``complete``; for every coordinator fault F: the complete of a
``kill_coordinator`` / ``pause_coordinator`` / ``cut_coordinator`` on broker B, offsets partition p,
group g):

* **detection** = the first ``broker_change`` at or after t0 with B in ``dead``, minus t0 (Kafka 0.9:
  ``KafkaController.BrokerChangeListener`` fires when B's ephemeral ``/brokers/ids/B`` is gone, i.e.
  when its ZooKeeper session expired: the controller's detection);
* **election** = the first ``partition_state`` of (``__consumer_offsets``, p) written at or after the
  detection with a leader L that is neither B nor -1 (none), minus the detection
  (``onBrokerFailure`` -> ``OfflinePartitionLeaderSelector`` writes the new leader from the ISR);
* **loading** = L's first ``coordinator_load`` ``end`` of p at or after the election, minus the
  election (0.9 ``GroupCoordinator.handleGroupImmigration`` -> ``loadGroupsForPartition``; CatchUp);
* **rejoin** = L's first ``group_served`` of g at or after its load end, minus the load end;
* **failover** = group_served minus t0 (the sum). A missing step makes that part ``"never"`` (not 0,
  not dropped) and the parts after it None, and so is the failover, but for one case: nobody was
  elected (no detection or no election) and B itself served g again (it came back before the
  controller saw it gone): the failover is then the time to that ``group_served``. Every step is looked
  for before the next fault's t0 (the fault's span): a later fault's election is not this one's. A
  fault without a ``complete`` has no t0: every figure is ``"never"`` from detection on.
* **offsets lost**: per partition of the workload, the last commit of g acknowledged before t0 (the
  broker's ``commit`` events, else the coordinator members' commits with store kafka) against the
  group's ``offsets_snapshot`` read after the fault: the first one labelled ``after:<id>`` of the
  fault's end step (restart / resume / heal of B after F), else the first one at or after that end
  step's complete, else (no end step) the first one at or after t0. A partition whose snapshot
  offset is lower than the committed one, -1 or absent is lost. A snapshot with an ``error`` (no
  coordinator answered) or no snapshot: offsets lost is None (not measured) with the reason.
* **deposed acceptances**: a broker ``commit`` (partition (``__consumer_offsets``,
  ``offsets_partition``)) or ``produce_ack`` (partition (topic, partition)) with leader epoch e >= 0
  by broker b at ts such that a ``partition_state`` of that partition with leader_epoch > e *and a
  leader other than b* has an earlier ts: the broker acknowledged after being deposed. (A newer epoch
  naming b again is no deposition: the controller bumps the epoch when it only removes a dead
  follower from the ISR, 0.9 ``removeReplicaFromIsr``.) Counted per kind (commit / produce) and attributed to
  the fault in force (the last failover fault whose t0 is at or before ts; before the first fault:
  to none, counted in the unit's total only). Must be 0 with fencing.
* **double-coordinator time** of g: broker b acts as coordinator of p from its ``coordinator_load``
  end of p until its next ``unload`` of p or a ``kill_coordinator`` complete on b, not while it is
  paused (``pause_coordinator`` complete -> ``resume_coordinator`` complete on b). The seconds during
  which two or more brokers act at once, and the number of such episodes (maximal intervals); per
  fault, the part from its t0 to the next failover fault's t0.
* **fenced refusals**: ``fenced`` events counted by ``what`` and ``error`` (fencing at work).

Sources (apache/kafka 0.9.0.1, ``core/src/main/scala/kafka/``) for what each step is:

* detection: ``controller/ReplicaStateMachine.scala`` ``BrokerChangeListener`` (a child watch on
  ``/brokers/ids``) calls ``KafkaController.onBrokerFailure(deadBrokers)``: the controller learns of
  a dead broker only when its ephemeral registration is gone, i.e. when its ZooKeeper session expired
  (a paused or cut broker is detected no sooner);
* election: ``onBrokerFailure`` moves the dead leader's partitions offline and
  ``OfflinePartitionLeaderSelector`` picks a live ISR member, written to the partition's state znode
  with a bumped leader epoch (hence "leader other than B and not -1": an offline state is no election);
* loading: ``coordinator/GroupCoordinator.scala`` ``handleGroupImmigration`` ->
  ``GroupMetadataManager.loadGroupsForPartition`` (``loadingPartitions``: requests of its groups get
  COORDINATOR_LOAD_IN_PROGRESS until the load ends); ``handleGroupEmigration`` ->
  ``removeGroupsForPartition`` on resignation (the unload that ends "acting as coordinator");
* fencing: a leader's ISR write is conditional on its cached zkVersion (``cluster/Partition.scala``
  ``updateIsr``), a LeaderAndIsr with an older controller or leader epoch is refused
  (``server/ReplicaManager.scala`` ``becomeLeaderOrFollower``: StaleControllerEpoch / StaleLeaderEpoch),
  and an ``acks=-1`` append (offset commits: ``offsets.commit.required.acks``,
  ``config.offsetCommitRequiredAcks`` in ``GroupMetadataManager``) is acknowledged only once the ISR reached it
  (``Partition.checkEnoughReplicasReachOffset``). An acknowledgement carrying an epoch older than one
  already written is therefore what fencing exists to prevent: a deposed acceptance.

ZooKeeper-leader faults (``kill_zk_leader`` / ``pause_zk_leader``, both implementations): **ZooKeeper
election** = complete minus invoke (complete is "a new leader serves"); **sessions lost** = the
members whose ZooKeeper session expired (legacy_zk ``zk_state`` LOST) or, on the broker side (the
coordinator and the consumer protocol alike), the brokers a ``broker_change`` reported dead, from the fault's invoke to the end of its trigger window
(its settling); **session rebalances**: per legacy member that lost its session, whether its first
``rebalance_begin`` after the loss lies in the fault's trigger window (``in_window``) or after it.
"""

from __future__ import annotations

import json
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from harness.analysis.metrics_model import (
    DeposedAcceptances,
    DocumentSections,
    FailoverFault,
    FailoverImpl,
    Unit,
)
from harness.kernel.actions import COORDINATOR_FAULT_ACTIONS, ending

NS = 1_000_000_000
INF = 4_000_000_000_000_000_000
NEVER = "never"
OFFSETS_TOPIC = "__consumer_offsets"
#: Coordinator faults and the action that ends each (same broker), from the action registry.
COORDINATOR_FAULTS = {a: ending(a) for a in COORDINATOR_FAULT_ACTIONS}
#: ZooKeeper-leader faults and the action that ends each (the registry's).
ZK_FAULTS = {a: ending(a) for a in ("kill_zk_leader", "pause_zk_leader")}
FAULTS = {**COORDINATOR_FAULTS, **ZK_FAULTS}
#: Every nemesis action the failover figures read.
ACTIONS = (*FAULTS, *FAULTS.values())
DEPOSED_KINDS = ("commit", "produce")


@dataclass
class Step:
    """One nemesis action (its invoke, complete or skipped), times in ns."""

    action: str
    action_id: int
    invoke_ns: int
    complete_ns: int | None = None
    skipped: bool = False
    broker_id: int | None = None
    offsets_partition: int | None = None
    group: str | None = None

    @property
    def t0(self) -> int | None:
        """The fault's t0: its complete."""
        return self.complete_ns


def _int(v: Any) -> int | None:
    return None if v is None else int(v)


def steps_of(events: Iterable[dict[str, Any]]) -> list[Step]:
    """Nemesis ``invoke`` / ``complete`` / ``skipped`` events paired by ``action_id``, by invoke."""
    steps: dict[int, Step] = {}
    for e in sorted(events, key=lambda e: int(e["ts_ns"])):
        aid = _int(e.get("action_id"))
        if aid is None:
            continue
        kind = e.get("kind")
        if kind == "invoke":
            steps[aid] = Step(
                action=str(e.get("action")),
                action_id=aid,
                invoke_ns=int(e["ts_ns"]),
                broker_id=_int(e.get("broker_id")),
                offsets_partition=_int(e.get("offsets_partition")),
                group=e.get("group"),
            )
        elif aid in steps and kind == "complete":
            s = steps[aid]
            s.complete_ns = int(e["ts_ns"])
            s.broker_id = s.broker_id if s.broker_id is not None else _int(e.get("broker_id"))
            if s.offsets_partition is None:
                s.offsets_partition = _int(e.get("offsets_partition"))
            s.group = s.group or e.get("group")
        elif aid in steps and kind == "skipped":
            steps[aid].skipped = True
    return sorted(steps.values(), key=lambda s: (s.invoke_ns, s.action_id))


def end_step(fault: Step, steps: list[Step]) -> Step | None:
    """The step that ends ``fault``: the first of its end action invoked after it (on the same
    broker when both name one)."""
    want = FAULTS.get(fault.action)
    for s in steps:
        if s.action != want or s.invoke_ns < fault.invoke_ns or s.skipped:
            continue
        if fault.broker_id is not None and s.broker_id is not None and s.broker_id != fault.broker_id:
            continue
        return s
    return None


def _s(a: int, b: int) -> float:
    return round((b - a) / NS, 6)


def _dead(e: dict[str, Any]) -> list[int]:
    d = e.get("dead")
    if isinstance(d, str):
        d = json.loads(d)
    return [int(x) for x in d or []]


def _first(evs: list[dict[str, Any]], after: int, pred: Any) -> dict[str, Any] | None:
    """The earliest of ``evs`` at or after ``after`` satisfying ``pred``."""
    hits = [e for e in evs if int(e["ts_ns"]) >= after and pred(e)]
    return min(hits, key=lambda e: int(e["ts_ns"])) if hits else None


PARTS = ("detection_s", "election_s", "loading_s", "rejoin_s")


def failover_parts(
    fault: Step,
    broker_changes: list[dict[str, Any]],
    partition_states: list[dict[str, Any]],
    loads: list[dict[str, Any]],
    served: list[dict[str, Any]],
    until: int = INF,
) -> dict[str, Any]:
    """detection / election / loading / rejoin / failover of a coordinator fault (see the module
    contract), and ``new_coordinator`` (L, None when no election was seen). Only events before ``until``
    (the next fault's t0: :func:`fault_spans`) belong to this fault. When no new leader was elected but B
    itself served the group again within the span (it restarted before the controller noticed it gone),
    ``failover_s`` is the time to that ``group_served`` and ``new_coordinator`` is B; the broken part reads
    ``never``."""
    b, p, g = fault.broker_id, fault.offsets_partition, fault.group
    out: dict[str, Any] = dict.fromkeys(PARTS)
    out.update(failover_s=NEVER, new_coordinator=None)
    if fault.t0 is None:
        out["detection_s"] = NEVER
        return out
    broker_changes, partition_states, loads, served = (
        [e for e in evs if int(e["ts_ns"]) < until]
        for evs in (broker_changes, partition_states, loads, served)
    )
    found: dict[str, Any] = {}

    def new_leader(e: dict[str, Any]) -> bool:
        return (
            e.get("topic") == OFFSETS_TOPIC
            and _int(e.get("partition")) == p
            and _int(e.get("leader")) not in (None, -1, b)
        )

    finders = (
        lambda at: _first(broker_changes, at, lambda e: b in _dead(e)),
        lambda at: _first(partition_states, at, new_leader),
        lambda at: _first(
            loads,
            at,
            lambda e: (
                _int(e.get("broker_id")) == found["leader"]
                and _int(e.get("offsets_partition")) == p
                and e.get("phase") == "end"
            ),
        ),
        lambda at: _first(
            served, at, lambda e: _int(e.get("broker_id")) == found["leader"] and e.get("group") == g
        ),
    )
    at = fault.t0
    for name, find in zip(PARTS, finders, strict=True):
        e = find(at)
        if e is None:
            out[name] = NEVER
            again = (
                None
                if "leader" in found
                else _first(served, fault.t0, lambda e: e.get("group") == g and _int(e.get("broker_id")) == b)
            )
            if again is not None:
                out["failover_s"] = _s(fault.t0, int(again["ts_ns"]))
                out["new_coordinator"] = _int(again.get("broker_id"))
            return out
        if name == "election_s":
            found["leader"] = out["new_coordinator"] = _int(e.get("leader"))
        out[name] = _s(at, int(e["ts_ns"]))
        at = int(e["ts_ns"])
    out["failover_s"] = _s(fault.t0, at)
    return out


def pick_snapshot(snapshots: list[dict[str, Any]], fault: Step, end: Step | None) -> dict[str, Any] | None:
    """The group's ``offsets_snapshot`` read after ``fault`` (see the module contract)."""
    snaps = sorted((s for s in snapshots if s.get("group") == fault.group), key=lambda s: int(s["ts_ns"]))
    if end is not None:
        labelled = next((s for s in snaps if s.get("label") == f"after:{end.action_id}"), None)
        if labelled is not None:
            return labelled
        if end.complete_ns is not None:
            return next((s for s in snaps if int(s["ts_ns"]) >= end.complete_ns), None)
    start = fault.t0 if fault.t0 is not None else fault.invoke_ns
    return next((s for s in snaps if int(s["ts_ns"]) >= start), None)


def offsets_lost(committed: dict[tuple[str, int], int], snapshot: dict[str, Any] | None) -> dict[str, Any]:
    """``{"count", "partitions", "snapshot", "note"}``: the committed partitions whose snapshot
    offset is lower, -1 or absent (see the module contract); count None when not measured."""
    if snapshot is None:
        return {
            "count": None,
            "partitions": [],
            "snapshot": None,
            "note": "no offsets snapshot after the fault",
        }
    if snapshot.get("error"):
        return {
            "count": None,
            "partitions": [],
            "snapshot": snapshot.get("label"),
            "note": f"no coordinator answered the snapshot: {snapshot['error']}",
        }
    got = snapshot.get("offsets") or {}
    if isinstance(got, str):
        got = json.loads(got)
    lost = []
    for (t, q), off in sorted(committed.items()):
        have = got.get(f"{t}/{q}")
        if have is None or int(have) < 0 or int(have) < off:
            lost.append(f"{t}/{q}")
    return {"count": len(lost), "partitions": lost, "snapshot": snapshot.get("label"), "note": None}


def acting_intervals(
    loads: list[dict[str, Any]], steps: list[Step], p: int, end_ns: int
) -> dict[int, list[tuple[int, int]]]:
    """Per broker, the intervals in which it acts as coordinator of offsets partition ``p`` (see the
    module contract), closed at ``end_ns`` (the unit's last event)."""
    evs: list[tuple[int, int, int, str]] = []  # (ts, order, broker, what)
    for e in loads:
        if _int(e.get("offsets_partition")) != p or e.get("phase") not in ("end", "unload"):
            continue
        evs.append((int(e["ts_ns"]), 1, int(e["broker_id"]), str(e["phase"])))
    for s in steps:
        if s.complete_ns is None or s.broker_id is None or s.skipped:
            continue
        what = {"kill_coordinator": "unload", "pause_coordinator": "pause", "resume_coordinator": "resume"}
        if s.action in what:
            evs.append((s.complete_ns, 0, s.broker_id, what[s.action]))
    state: dict[int, tuple[bool, bool, int | None]] = {}  # broker -> (loaded, paused, acting since)
    out: dict[int, list[tuple[int, int]]] = {}
    for ts, _, b, what in sorted(evs):
        loaded, paused, since = state.get(b, (False, False, None))
        if what == "end":
            loaded = True
        elif what == "unload":
            loaded = False
        elif what == "pause":
            paused = True
        elif what == "resume":
            paused = False
        acting = loaded and not paused
        if acting and since is None:
            since = ts
        elif not acting and since is not None:
            out.setdefault(b, []).append((since, ts))
            since = None
        state[b] = (loaded, paused, since)
    for b, (_, _, since) in state.items():
        if since is not None and since < end_ns:
            out.setdefault(b, []).append((since, end_ns))
    return out


def double_episodes(intervals: dict[int, list[tuple[int, int]]]) -> list[tuple[int, int]]:
    """Maximal intervals (ns) in which two or more brokers act at once."""
    edges = sorted(
        [(s, 1) for iv in intervals.values() for s, _ in iv]
        + [(e, -1) for iv in intervals.values() for _, e in iv],
        key=lambda x: (x[0], x[1]),  # ends before starts at one instant: touching is not overlapping
    )
    out: list[tuple[int, int]] = []
    n, since = 0, None
    for ts, d in edges:
        n += d
        if n >= 2 and since is None:
            since = ts
        elif n < 2 and since is not None:
            if ts > since:
                out.append((since, ts))
            since = None
    return out


def clipped_s(episodes: list[tuple[int, int]], start: int, end: int) -> float:
    """Seconds of ``episodes`` inside [start, end)."""
    return round(sum(max(0, min(e, end) - max(s, start)) for s, e in episodes) / NS, 6)


def fault_spans(faults: list[Step]) -> list[tuple[int, int, int]]:
    """(action_id, start, end) per fault: from its t0 (else invoke) to the next fault's, by time."""
    starts = sorted(((f.t0 if f.t0 is not None else f.invoke_ns), f.action_id) for f in faults)
    return [(aid, s, starts[i + 1][0] if i + 1 < len(starts) else INF) for i, (s, aid) in enumerate(starts)]


def _deposed(counts: Mapping[str, int]) -> DeposedAcceptances:
    """The :data:`DEPOSED_KINDS` counts of ``counts`` (0 when absent)."""
    return {"commit": int(counts.get("commit", 0)), "produce": int(counts.get("produce", 0))}


def coordinator_entry(
    fault: Step,
    *,
    origin: int,
    parts: dict[str, Any],
    lost: dict[str, Any],
    records_lost: int | None,
    reprocessed: int | None,
    deposed: dict[str, int],
    double_s: float,
    session_failures: int,
) -> FailoverFault:
    """One coordinator fault's entry of ``units[i].failover.faults``."""
    return {
        "action": fault.action,
        "action_id": fault.action_id,
        "kind": "coordinator",
        "broker_id": fault.broker_id,
        "offsets_partition": fault.offsets_partition,
        "group": fault.group,
        "t0_s": None if fault.t0 is None else round((fault.t0 - origin) / NS, 6),
        "detection_s": parts["detection_s"],
        "election_s": parts["election_s"],
        "loading_s": parts["loading_s"],
        "rejoin_s": parts["rejoin_s"],
        "failover_s": parts["failover_s"],
        "new_coordinator": parts.get("new_coordinator"),
        "offsets_lost": lost["count"],
        "offsets_lost_partitions": lost["partitions"],
        "offsets_snapshot": lost["snapshot"],
        "offsets_note": lost["note"],
        "records_lost": records_lost,
        "reprocessed": reprocessed,
        "deposed_acceptances": _deposed(deposed),
        "double_coordinator_s": double_s,
        "session_failures": session_failures,
    }


def zk_entry(
    fault: Step,
    *,
    origin: int,
    window_end: int | None,
    impl: str,
    lost_sessions: list[dict[str, Any]],
    broker_changes: list[dict[str, Any]],
    rebalances: list[dict[str, Any]],
    records_lost: int | None,
    reprocessed: int | None,
    deposed: dict[str, int],
    double_s: float,
    session_failures: int,
) -> FailoverFault:
    """One ZooKeeper-leader fault's entry (see the module contract): ``lost_sessions`` are members'
    ``zk_state`` LOST events, ``rebalances`` members' ``rebalance_begin`` events."""
    end = INF if window_end is None else window_end
    lo = fault.invoke_ns
    lost_at: dict[str, int] = {}
    for e in sorted(lost_sessions, key=lambda e: int(e["ts_ns"])):
        if lo <= int(e["ts_ns"]) < end:
            lost_at.setdefault(str(e["source"]), int(e["ts_ns"]))
    who = sorted(lost_at)
    if impl != "legacy_zk":  # the broker side (classic or consumer protocol): its brokers' sessions
        dead = {b for e in broker_changes if lo <= int(e["ts_ns"]) < end for b in _dead(e)}
        who = sorted(set(who) | {f"broker-{b}" for b in dead})
    in_w = after_w = 0
    for m, ts in lost_at.items():
        nxt = min(
            (int(e["ts_ns"]) for e in rebalances if e["source"] == m and int(e["ts_ns"]) >= ts), default=None
        )
        if nxt is None:
            continue
        if nxt < end:
            in_w += 1
        else:
            after_w += 1
    return {
        "action": fault.action,
        "action_id": fault.action_id,
        "kind": "zookeeper",
        "t0_s": None if fault.t0 is None else round((fault.t0 - origin) / NS, 6),
        "zk_election_s": NEVER if fault.t0 is None else _s(fault.invoke_ns, fault.t0),
        "sessions_lost": who,
        "session_rebalances": {"in_window": in_w, "after_window": after_w},
        "records_lost": records_lost,
        "reprocessed": reprocessed,
        "deposed_acceptances": _deposed(deposed),
        "double_coordinator_s": double_s,
        "session_failures": session_failures,
    }


def unit_name(u: Mapping[str, Any]) -> str:
    """``coordinator failover rep 0``."""
    return f"{u['impl']} {u['case']} rep {u['repetition']}"


def fault_name(f: FailoverFault) -> str:
    """``#3 kill_coordinator (broker 1)``: the fault's action id, action and target broker."""
    broker = f.get("broker_id")
    on = f" (broker {broker})" if broker is not None else ""
    return f"#{f['action_id']} {f['action']}{on}"


def summary(units: Sequence[Unit]) -> dict[str, FailoverImpl] | None:
    """``metrics["failover"]``: per implementation and fault action, over its units' faults: ``n``,
    ``never`` (coordinator faults whose group was never served again), ``failover_s`` (the finite
    values, in unit order), ``zk_election_s`` likewise, ``offsets_lost`` (sum of the measured
    ones), ``deposed_acceptances`` (sums per kind) and ``double_coordinator_s`` (sum); plus per
    implementation ``fenced`` (sums by what/error). None when no unit has a failover fault."""
    out: dict[str, FailoverImpl] = {}
    for u in units:
        fo = u.get("failover")
        if not fo:
            continue
        impl = out.setdefault(
            u["impl"], {"faults": {}, "fenced": {}, "double_coordinator": {"seconds": 0.0, "episodes": 0}}
        )
        for f in fo["faults"]:
            a = impl["faults"].setdefault(
                f["action"],
                {
                    "n": 0,
                    "never": 0,
                    "failover_s": [],
                    "zk_election_s": [],
                    "offsets_lost": 0,
                    "deposed_acceptances": _deposed({}),
                    "double_coordinator_s": 0.0,
                },
            )
            a["n"] += 1
            for key in ("failover_s", "zk_election_s"):
                v = f.get(key)
                if v == NEVER:
                    a["never"] += 1
                elif v is not None:
                    a[key].append(v)
            a["offsets_lost"] += int(f.get("offsets_lost") or 0)
            for k in DEPOSED_KINDS:
                a["deposed_acceptances"][k] += int((f.get("deposed_acceptances") or {}).get(k, 0))
            a["double_coordinator_s"] = round(
                a["double_coordinator_s"] + float(f.get("double_coordinator_s") or 0), 6
            )
        for key, n in (fo.get("fenced") or {}).items():
            impl["fenced"][key] = impl["fenced"].get(key, 0) + int(n)
        dc = fo.get("double_coordinator") or {}
        impl["double_coordinator"]["seconds"] = round(
            impl["double_coordinator"]["seconds"] + float(dc.get("seconds") or 0), 6
        )
        impl["double_coordinator"]["episodes"] += int(dc.get("episodes") or 0)
    return out or None


def alert_lines(out: DocumentSections) -> list[str]:
    """Per fault: offsets lost > 0, deposed acceptances > 0, double-coordinator time > 0, members
    whose rebalance after a session loss fell after the fault's window, and a coordinator fault whose
    group was never served again. Alerts, not reasons to invalidate the run
    (the run measured what happened)."""
    lines = []
    for u in out.get("units") or []:
        fo = u.get("failover")
        if not fo:
            continue
        name = unit_name(u)
        for f in fo["faults"]:
            what = f"{name}: fault {fault_name(f)}"
            lost = f.get("offsets_lost")
            if lost:
                where = ", ".join(f.get("offsets_lost_partitions") or [])
                lines.append(f"{what} lost {lost} committed offsets ({where})")
            dep = f.get("deposed_acceptances") or {}
            if any(dep.get(k) for k in DEPOSED_KINDS):
                lines.append(
                    f"{what}: a deposed leader or coordinator acknowledged {dep.get('commit', 0)} commits "
                    f"and {dep.get('produce', 0)} produce requests"
                )
            if f.get("double_coordinator_s"):
                secs = float(f["double_coordinator_s"])
                lines.append(f"{what}: two brokers acted as coordinator of the group for {secs:.3f} s")
            after = int((f.get("session_rebalances") or {}).get("after_window") or 0)
            if after:
                lines.append(
                    f"{what}: {after} members that lost their session began their rebalance after the "
                    "fault's window (not measured in it)"
                )
            if f.get("kind") == "coordinator" and f.get("failover_s") == NEVER:
                lines.append(f"{what}: the group was never served again (failover never)")
    return lines
