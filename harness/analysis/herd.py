"""Herd family: the change's own coordination traffic, counted exactly in each trigger window [t0, end).

Contract
--------
* :func:`counts`: per (unit, tid) of every trigger that was not skipped, ``{table: {key: n}}``
  with tables ``herd`` (watches, zk_requests, conflicts, failed_attempts, gave_up,
  rebalance_attempts, group_rebalances, broker_group_requests; owner_writes: the members'
  rebalance requests ``create`` / ``delete`` under ``/owners/``; registration_reads: their ``get`` of
  a registration ``/consumers/<group>/ids/<id>``; rebalancing_members: members with a
  ``rebalance_begin``; first_watch: the ts_ns of the first member ``watch``, absent without one; leader_syncs: the broker's
  SyncGroup ``group_request`` events that carry assignments, i.e. the leader's, one per round;
  target_assignments: the broker's ``target_assignment`` events (the consumer protocol's group epochs
  with a computed target); epochs_reached: the distinct response ``epoch`` values of the window's
  ConsumerGroupHeartbeat exchanges with ``change`` true and no ``error`` above the window's starting
  epoch, the highest response epoch of the unit's exchanges without error before t0, 0 without one;
  steady_heartbeats: the window's ConsumerGroupHeartbeat exchanges whose ``change`` is not true, which
  are steady traffic and in no other count),
  ``op`` (members' ZooKeeper requests of the rebalance by operation; offset writes are steady
  state), ``api`` (broker coordination requests by API, a ConsumerGroupHeartbeat only when its
  ``change`` is true; the workload's clients, producer and checker, are left out) and ``invoke``
  (members: live just before the invoke; partitions: P then; see :meth:`~harness.analysis.facts.Facts.at_invoke`).
* :func:`mntr_samples`: per unit, the ZooKeeper ``mntr`` samples (ts_ns, label, packets received).
* :func:`unit_values`: per unit, what was measured: ``has_broker`` (a broker counter report),
  ``has_mntr`` (an mntr sample), ``tapped`` (the Kafka tap's events), ``zk_tapped`` (the ZooKeeper tap's).
* Whose ZooKeeper events count (watches, zk_requests and its ``op`` table, owner_writes,
  registration_reads, conflicts, first_watch): the ZooKeeper tap's in a unit that ran with one, else the
  members' own (:func:`harness.kernel.events.zk_counter`); never both.

All of them read the collected control events (:mod:`.control`) and the fold's facts, in Python.
* :func:`herd_fields`: a trigger's herd figures in the metrics document. A skipped trigger has
  None for every count; broker counts are None for a unit without a broker; zk_packets is None
  without mntr samples at both window edges; coordination_requests = zk_requests +
  broker_group_requests (None for a coordinator unit without broker reports);
  rebalance_rounds (:func:`rebalance_rounds`); group_rebalances: the broker's ``rebalance_begin`` events,
  for a consumer unit its ``target_assignment`` events (None behind the Kafka tap). Besides (the legacy
  herd bench's figures): owner_writes, registration_reads, rebalancing_members,
  first_notification_s (t0 to the first watch; None without one), zk_packets_minus_idle (see
  :func:`packets_minus_idle`), members_at_invoke and partitions_at_invoke.
"""

from __future__ import annotations

import re
from bisect import bisect_left
from typing import Any

from harness.analysis.control import Control, UnitValues
from harness.analysis.facts import Facts
from harness.analysis.frames import UnitKey, dur_s, unit_key
from harness.kernel.events import OK_OUTCOMES, SKIPPED, WORKLOAD_CLIENTS, Kind, Role, zk_counter, zk_steady

#: Per (case, impl, repetition, tid): {table: {key: count}}.
HerdCounts = dict[tuple[Any, ...], dict[str, dict[str, int]]]
#: A registration znode of the 0.8 layout: ``/consumers/<group>/ids/<id>`` (Java regex).
REGISTRATION = "^/consumers/[^/]+/ids/[^/]+$"
#: The API whose leader requests (those carrying assignments) in a window are its rebalance rounds (spec 2.13).
SYNC_GROUP = "SyncGroup"
#: The ``source`` of the Kafka tap's events (:mod:`harness.cluster.kafka_tap`).
TAP = "tap"
#: The consumer protocol's implementation (KIP-848), its one group request, and the broker's event of a
#: group epoch whose target assignment it computed (herdlab's broker only: a tap cannot see it).
CONSUMER = "consumer"
CONSUMER_HEARTBEAT = "ConsumerGroupHeartbeat"
TARGET_ASSIGNMENT = "target_assignment"
#: Per unit: (ts_ns, label, zk_packets_received) of each mntr sample.
MntrSamples = dict[UnitKey, list[tuple[int, str, float | None]]]


#: The kinds the herd counts read.
COUNTED = frozenset(
    (
        Kind.WATCH,
        Kind.ZK_REQUEST,
        Kind.CONFLICT,
        Kind.REBALANCE_END,
        Kind.REBALANCE_BEGIN,
        Kind.GROUP_REQUEST,
        TARGET_ASSIGNMENT,
    )
)
#: The counts of the ``herd`` table, in the order the metrics document's first version listed them.
HERD_KEYS = (
    "watches",
    "zk_requests",
    "conflicts",
    "failed_attempts",
    "gave_up",
    "rebalance_attempts",
    "group_rebalances",
    "broker_group_requests",
    "owner_writes",
    "registration_reads",
    "leader_syncs",
    "target_assignments",
    "steady_heartbeats",
)
_REGISTRATION = re.compile(REGISTRATION)


def steady_heartbeat(e: dict[str, Any]) -> bool:
    """Whether a broker event is a ConsumerGroupHeartbeat exchange that does not carry a change (steady
    traffic: :func:`harness.kernel.heartbeats.carries_change` said no, or the event has no ``change``)."""
    return e["kind"] == Kind.GROUP_REQUEST and e["api"] == CONSUMER_HEARTBEAT and e["change"] is not True


def _answered(e: dict[str, Any]) -> bool:
    """Whether an event is a ConsumerGroupHeartbeat exchange answered without error, with a response epoch."""
    return (
        e["kind"] == Kind.GROUP_REQUEST
        and e["api"] == CONSUMER_HEARTBEAT
        and e["error"] is None
        and e["epoch"] is not None
    )


def _epochs(events: list[dict[str, Any]]) -> tuple[list[int], list[int]]:
    """The ts_ns of a unit's ConsumerGroupHeartbeat exchanges without error (in time order) and the highest
    response epoch up to each."""
    ts: list[int] = []
    highest: list[int] = []
    for e in events:
        if _answered(e) and e["role"] == Role.BROKER:
            ts.append(e["ts_ns"])
            highest.append(max(int(e["epoch"]), highest[-1] if highest else int(e["epoch"])))
    return ts, highest


def _window_counts(
    events: list[dict[str, Any]], start_epoch: int = 0, zk_role: str = Role.MEMBER
) -> dict[str, dict[str, int]]:
    """The tables of one trigger window from its counted events (see the module contract);
    ``start_epoch``: the window's starting epoch (consumer protocol); ``zk_role``: whose ZooKeeper events
    (``zk_request``, ``watch``, ``conflict``) count (:func:`harness.kernel.events.zk_counter`)."""
    herd: dict[str, int] = dict.fromkeys(HERD_KEYS, 0)
    reached: set[int] = set()
    ops: dict[str, int] = {}
    apis: dict[str, int] = {}
    rebalancing: set[str] = set()
    first_watch: int | None = None
    for e in events:
        kind, member, broker = e["kind"], e["role"] == Role.MEMBER, e["role"] == Role.BROKER
        zk = e["role"] == zk_role
        n = 1 if e["count"] is None else int(e["count"])  # a simulated zk_request stands for `count`
        if zk and kind == Kind.WATCH:
            herd["watches"] += 1
            first_watch = e["ts_ns"] if first_watch is None else min(first_watch, e["ts_ns"])
        elif zk and kind == Kind.ZK_REQUEST and not zk_steady(e["op"], e["path"]):
            herd["zk_requests"] += n
            op, path = e["op"], e["path"] or ""
            ops[op or "?"] = ops.get(op or "?", 0) + n
            if op in ("create", "delete") and "/owners/" in path:
                herd["owner_writes"] += n
            if op == "get" and _REGISTRATION.search(path):
                herd["registration_reads"] += n
        elif zk and kind == Kind.CONFLICT:
            herd["conflicts"] += 1
        elif member and kind == Kind.REBALANCE_END:
            herd["failed_attempts"] += int(e["outcome"] is not None and e["outcome"] not in OK_OUTCOMES)
            herd["gave_up"] += int(bool(e["gave_up"]))
        elif kind == Kind.REBALANCE_BEGIN and (member or broker):
            if member:
                herd["rebalance_attempts"] += 1
                if e["source"] is not None:
                    rebalancing.add(e["source"])
            else:
                herd["group_rebalances"] += 1
        elif broker and kind == TARGET_ASSIGNMENT:
            herd["target_assignments"] += 1
        elif broker and steady_heartbeat(e):
            herd["steady_heartbeats"] += 1
        elif broker and kind == Kind.GROUP_REQUEST:
            herd["broker_group_requests"] += 1
            api = e["api"]
            apis[api or "?"] = apis.get(api or "?", 0) + 1
            if api == SYNC_GROUP and (e["assignments"] or 0) > 0:
                herd["leader_syncs"] += 1
            if _answered(e) and int(e["epoch"]) > start_epoch:
                reached.add(int(e["epoch"]))
    herd["rebalancing_members"] = len(rebalancing)
    herd["epochs_reached"] = len(reached)
    if first_watch is not None:
        herd["first_watch"] = first_watch
    return {"herd": herd, "op": ops, "api": apis}


def counts(facts: Facts, control: Control) -> HerdCounts:
    """Per trigger window [t0, end) of every trigger that was not skipped, its exact counts (see the
    module contract): the unit's counted events (the workload's clients left out) in the window."""
    counted: dict[UnitKey, tuple[list[int], list[dict[str, Any]]]] = {}
    epochs: dict[UnitKey, tuple[list[int], list[int]]] = {}
    zk_roles: dict[UnitKey, str] = {}
    for k, rows in control.rows().items():
        evs = sorted(
            (
                e
                for e in rows
                if e["kind"] in COUNTED and e["client"] not in WORKLOAD_CLIENTS and e["ts_ns"] is not None
            ),
            key=lambda e: e["ts_ns"],
        )
        counted[k] = ([e["ts_ns"] for e in evs], evs)
        epochs[k] = _epochs(evs)
        zk_roles[k] = zk_counter(e["role"] for e in rows)
    out: HerdCounts = {}
    for t in facts.rows("trigger"):
        if t["outcome"] == SKIPPED or t["outcome"] is None:
            continue
        k = unit_key(t)
        entry: dict[str, dict[str, int]] = {}
        ts, evs = counted.get(k, ([], []))
        if t["t0"] is not None and t["wend"] is not None:
            inside = evs[bisect_left(ts, t["t0"]) : bisect_left(ts, t["wend"])]
            if inside:
                ets, highest = epochs.get(k, ([], []))
                before = bisect_left(ets, t["t0"])  # exchanges strictly before t0
                entry = _window_counts(inside, highest[before - 1] if before else 0, zk_roles[k])
        entry["invoke"] = {"members": int(t["live_invoke"]), "partitions": int(t["nparts_invoke"])}
        out[(*k, t["tid"])] = entry
    return out


def mntr_samples(control: Control) -> MntrSamples:
    """ZooKeeper mntr samples per unit: (ts_ns, label, zk_packets_received), in history order."""
    out: MntrSamples = {}
    for k, rows in control.rows().items():
        for e in rows:
            if e["kind"] == Kind.ZK_MNTR:
                packets = (e["counters"] or {}).get("zk_packets_received")
                out.setdefault(k, []).append((e["ts_ns"], e["label"] or "", packets))
    return out


def unit_values(control: Control) -> UnitValues:
    """Per unit: ``has_broker``, ``has_mntr``, ``tapped`` (its broker figures come from the Kafka tap
    in front of a third-party broker, which sees requests but not the broker's own group events) and
    ``zk_tapped`` (its ZooKeeper figures come from the ZooKeeper tap); 1.0 where the unit has them, else 0.0."""
    out: UnitValues = {}
    for k, rows in control.rows().items():
        broker = [e for e in rows if e["role"] == Role.BROKER]
        out[k] = {
            "has_broker": float(any(e["kind"] == Kind.BROKER_REQUEST for e in broker)),
            "has_mntr": float(any(e["kind"] == Kind.ZK_MNTR for e in rows)),
            "tapped": float(any(e["source"] == TAP for e in broker)),
            "zk_tapped": float(zk_counter(e["role"] for e in rows) == Role.ZOOKEEPER),
        }
    return out


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
    then the assign round); for a consumer unit the distinct new epochs members reached in it
    (``epochs_reached``: the consumer protocol has no SyncGroup). None for legacy_zk, without broker
    reports, or for a skipped trigger."""
    if impl == "legacy_zk" or not has_broker or not measured:
        return None
    return hc.get("epochs_reached" if impl == CONSUMER else "leader_syncs", 0)


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
        "group_rebalances": hc.get("target_assignments" if impl == CONSUMER else "group_rebalances", 0)
        if has_broker and not tapped and measured
        else None,
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
