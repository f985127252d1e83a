"""Synthetic run directories with known answers: for the analysis benchmark and round-trip tests.

Contract
--------
:func:`write_synthetic_run` writes ``<root>/<scenario>/<run_id>/history.parquet`` (the schema of
:mod:`harness.history.schema`) and ``manifest.json`` for ``cases x implementations x repetitions``
units shaped like the ``herd`` scenario: N members over N partitions, a producer at ``rate``
records/s, and three triggers after the group is stable (join, leave, crash at 5, 25 and 45 s of a
60 s timeline, scaled by ``duration_s``). The generator knows every answer it builds in:

* each trigger settles exactly ``latency_s(impl, action, n)`` seconds after t0 (every member
  revokes everything at t0 + detection, the new range assignment lands at t1); records produced
  meanwhile are processed right after t1 (the stop-the-world gap);
* after each trigger the new owners re-process the records produced in the ``redeliver_s`` before
  t0 (duplicates, never overlapping in time with the old owner);
* ``lose`` records per unit are never processed (default 0);
* legacy_zk units carry the herd of a 0.8 rebalance (N watches, ~1.5 N^2 ZooKeeper requests, a few
  conflicts and failed attempts per trigger); coordinator units carry broker request reports every
  second, group states and broker-side commits.

The returned :class:`SyntheticRun` holds the expected figures. Records and produced events (the
bulk) are built with numpy, one unit at a time, so memory stays bounded by the largest unit.
"""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np
import pyarrow as pa
import pyarrow.parquet as pq

from harness.history.schema import SCHEMA, rows_to_table

NS = 1_000_000_000
BASE_NS = 1_800_000_000_000_000_000
ZK_OPS = ("getChildren", "getData", "exists", "create", "delete", "setData")


def detection_s(impl: str, action: str) -> float:
    """Seconds from t0 to the first reaction the generator writes."""
    return {"join": 0.6, "leave": 0.05, "crash": 6.0}[action] + (0.0 if impl == "coordinator" else 0.02)


def latency_s(impl: str, action: str, n: int) -> float:
    """Seconds from t0 to settled for a trigger of ``action`` in a group of ``n`` members."""
    conv = 0.5 if impl == "coordinator" else 0.05 * n
    return round(detection_s(impl, action) + conv, 6)


@dataclass
class SyntheticRun:
    """What :func:`write_synthetic_run` wrote and the answers it built in."""

    run_dir: Path
    events: int
    units: int
    expected: dict[tuple[str, str, int], dict[str, Any]] = field(default_factory=dict)


def rate_for(events: int, units: int, duration_s: float) -> float:
    """The producer rate that makes a run of ``units`` units about ``events`` events."""
    return max(1.0, events / (2.0 * units * (duration_s + 1.0)))


def write_synthetic_run(
    root: str | Path,
    *,
    members: tuple[int, ...] = (10, 25, 50),
    implementations: tuple[str, ...] = ("legacy_zk", "coordinator"),
    repetitions: int = 3,
    rate: float = 200.0,
    duration_s: float = 60.0,
    redeliver_s: float = 0.05,
    lose: int = 0,
    scenario: str = "herd",
    run_id: str = "synthetic",
    settle_window_s: float = 3.0,
    seed: int = 1,
) -> SyntheticRun:
    """Write a synthetic run (see the module contract)."""
    d = Path(root) / scenario / run_id
    d.mkdir(parents=True, exist_ok=True)
    rng = np.random.default_rng(seed)
    out = SyntheticRun(run_dir=d, events=0, units=0)
    writer = pq.ParquetWriter(d / "history.parquet", SCHEMA, compression="zstd")
    cases = [
        {"index": i, "label": f"members={n}", "params": {"group.members": n}, "members": n, "partitions": n}
        for i, n in enumerate(members)
    ]
    units = []
    try:
        start = BASE_NS
        for case in cases:
            for rep in range(repetitions):
                for impl in implementations:
                    ctx = {
                        "run_id": run_id,
                        "scenario": scenario,
                        "case": case["label"],
                        "impl": impl,
                        "repetition": rep,
                    }
                    table, expected = _unit(
                        ctx, case["members"], start, rate, duration_s, redeliver_s, lose, rng
                    )
                    writer.write_table(table)
                    out.events += table.num_rows
                    out.units += 1
                    out.expected[(case["label"], impl, rep)] = expected
                    units.append(
                        {
                            "unit": f"c{case['index']}-{impl}-r{rep}",
                            **{k: ctx[k] for k in ("case", "impl", "repetition")},
                        }
                    )
                    start += int((duration_s + 20) * NS)
    finally:
        writer.close()
    manifest = {
        "run_id": run_id,
        "scenario": {
            "name": scenario,
            "description": "synthetic history (harness.analysis.synthetic)",
            "implementations": list(implementations),
            "repetitions": repetitions,
            "settle_window": settle_window_s,
        },
        "cases": cases,
        "repetitions": repetitions,
        "backend": "synthetic",
        "interrupted": False,
        "units": units,
    }
    (d / "manifest.json").write_text(json.dumps(manifest, indent=2) + "\n")
    return out


def _unit(
    ctx: dict[str, Any],
    n: int,
    start: int,
    rate: float,
    duration_s: float,
    redeliver_s: float,
    lose: int,
    rng: np.random.Generator,
) -> tuple[pa.Table, dict[str, Any]]:
    impl = ctx["impl"]
    legacy = impl == "legacy_zk"
    p_count = n
    topic = "herd"
    ev: list[dict[str, Any]] = []

    def at(t: float, kind: str, source: str, **f: Any) -> None:
        ev.append({"ts_ns": start + int(round(t * NS)), "source": source, "kind": kind, **f})

    def assign_events(t: float, members: list[str], gen: int) -> dict[int, str]:
        owners = {p: members[p * len(members) // p_count] for p in range(p_count)}
        for m in members:
            parts = [p for p, o in owners.items() if o == m]
            if legacy:
                at(t, "assigned", m, partitions=[[topic, p] for p in parts])
            else:
                for p in parts:
                    at(t, "assigned", m, topic=topic, partition=p, generation=gen, member=f"{m}-id")
        return owners

    def revoke_events(t: float, owners: dict[int, str], members: list[str], gen: int) -> None:
        for m in members:
            parts = [p for p, o in owners.items() if o == m]
            if not parts:
                continue
            if legacy:
                at(t, "revoked", m, partitions=[[topic, p] for p in parts])
            else:
                for p in parts:
                    at(t, "revoked", m, topic=topic, partition=p, generation=gen, member=f"{m}-id")

    live = [f"m{i}" for i in range(n)]
    at(0.0, "unit_start", "nemesis", topic=topic, group="g", partitions=p_count, members=list(live))
    for m in live:
        at(0.1, "started", m, name=m)
    gen = 1
    owners = assign_events(0.5, live, gen)
    stable = 1.0
    at(stable, "stable", "nemesis")
    packets = 1000
    at(stable, "zk_mntr", "nemesis", label="stable", counters={"zk_packets_received": packets})
    scale = duration_s / 60.0
    plan = [
        ("join", 5.0 * scale, ["j0"]),
        ("leave", 25.0 * scale, [live[1 % n]]),
        ("crash", 45.0 * scale, [live[2 % n]]),
    ]
    epochs = [(0.5, dict(owners))]  # (from t, owners)
    windows = []  # (t0, t1) stop-the-world per trigger
    expected_triggers = []
    for action, rel, targets in plan:
        t0 = stable + rel
        det = detection_s(impl, action)
        t1 = t0 + latency_s(impl, action, n)
        at(t0, "nemesis", "nemesis", action=action, targets=targets, trigger=True, target=None, value=None)
        at(
            t0 + 0.01,
            "zk_mntr",
            "nemesis",
            label=f"before:{action}",
            counters={"zk_packets_received": packets},
        )
        old = list(live)
        if action == "join":
            at(t0 + 0.5, "started", targets[0], name=targets[0])
            live = live + targets
        elif action == "leave":
            revoke_events(t0 + 0.02, owners, targets, gen)
            at(t0 + 0.04, "stopped", targets[0], clean=True)
            live = [m for m in live if m not in targets]
        else:
            live = [m for m in live if m not in targets]
        stay = [m for m in old if m in live]
        # the reaction: every remaining member revokes what it owns
        revoke_events(t0 + det, owners, stay, gen)
        for m in stay:
            at(t0 + det, "rebalance_begin", m, attempt=0)
        herd = {"watches": 0, "zk_requests": 0, "conflicts": 0, "failed_attempts": 0}
        if legacy:
            for m in stay:
                at(t0 + det, "watch", m, path="/consumers/g/ids", type="CHILD")
            herd["watches"] = len(stay)
            req = int(1.5 * len(live) ** 2)
            ts = np.linspace(t0 + det, t1 - 0.002, req)
            for i, t in enumerate(ts):
                at(
                    float(t),
                    "zk_request",
                    live[i % len(live)],
                    op=ZK_OPS[i % len(ZK_OPS)],
                    path="/consumers/g",
                )
            herd["zk_requests"] = req
            conflicts = max(1, len(live) // 5)
            for i in range(conflicts):
                m = live[i % len(live)]
                at(t0 + det + 0.001, "conflict", m, topic=topic, partition=i % p_count)
                at(t0 + det + 0.002, "rebalance_end", m, outcome="conflict", attempt=0)
            herd["conflicts"] = herd["failed_attempts"] = conflicts
            packets += req + 3
        else:
            at(
                t0 + det,
                "group_state",
                "broker-0",
                group="g",
                broker_id=0,
                from_state="Stable",
                to_state="PreparingRebalance",
                generation=gen,
            )
            at(t0 + det, "rebalance_begin", "broker-0", group="g", broker_id=0, generation=gen)
            at(
                t1 - 0.05,
                "group_state",
                "broker-0",
                group="g",
                broker_id=0,
                from_state="PreparingRebalance",
                to_state="CompletingRebalance",
                generation=gen + 1,
            )
            at(
                t1 - 0.01,
                "group_state",
                "broker-0",
                group="g",
                broker_id=0,
                from_state="CompletingRebalance",
                to_state="Stable",
                generation=gen + 1,
            )
            packets += 5
        gen += 1
        owners = assign_events(t1, live, gen)
        for m in live:
            at(t1, "rebalance_end", m, outcome="ok", attempt=0)
        epochs.append((t1, dict(owners)))
        windows.append((t0, t1))
        expected_triggers.append(
            {"action": action, "latency_s": latency_s(impl, action, n), "detection_s": det, **herd}
        )
    end = stable + duration_s
    at(end, "zk_mntr", "nemesis", label="settled", counters={"zk_packets_received": packets})
    for m in live:
        at(end + 0.5, "stopped", m, clean=True)
    if not legacy:  # broker request reports every second, and broker-side commits
        for s in range(1, int(end) + 1):
            reqs = {"Fetch": 10 * len(live), "Heartbeat": 2 * len(live), "Produce": int(rate)}
            at(
                float(s),
                "broker_request",
                "broker-0",
                broker_id=0,
                interval_s=1.0,
                requests=reqs,
                total=sum(reqs.values()),
            )
        for e_from, e_owners in epochs:
            for p, m in e_owners.items():
                at(
                    e_from + 0.3,
                    "commit",
                    "broker-0",
                    group="g",
                    broker_id=0,
                    member=f"{m}-id",
                    generation=1 + epochs.index((e_from, e_owners)),
                    topic=topic,
                    partition=p,
                    offset=0,
                )
    control = rows_to_table([{**ctx, **e} for e in ev])

    # the bulk: produced records and their processing
    total = int(rate * (end - stable + 0.5))
    i = np.arange(total, dtype=np.int64)
    p_ts = stable + 0.2 + i / rate  # seconds since unit start
    part = (i % p_count).astype(np.int32)
    off = (i // p_count).astype(np.int64)
    proc = p_ts + 0.002
    for t0, t1 in windows:
        inside = (proc >= t0) & (proc < t1)
        proc = np.where(inside, t1 + 0.001 + (proc - t0) * 1e-3, proc)
    owner_idx = np.searchsorted(np.array([e[0] for e in epochs]), proc, side="right") - 1
    names, owner_ids = _owner_matrix(epochs, p_count)
    who = owner_ids[owner_idx, part]
    keep = np.ones(total, dtype=bool)
    if lose:
        keep[rng.choice(total, size=min(lose, total), replace=False)] = False
    # redelivery: records produced in the redeliver_s before each t0 go again to the new owner at t1
    dup_idx = []
    dup_ts = []
    for k, (t0, t1) in enumerate(windows):
        sel = np.nonzero((p_ts >= t0 - redeliver_s) & (p_ts < t0) & keep)[0]
        dup_idx.append(sel)
        dup_ts.append(np.full(sel.size, t1 + 0.0005) + np.arange(sel.size) * 1e-6)
        dup_idx[-1] = (sel, owner_ids[k + 1, part[sel]])
    rec_idx = np.concatenate([np.nonzero(keep)[0], *[s for s, _ in dup_idx]])
    rec_ts = np.concatenate([proc[keep], *dup_ts])
    rec_who = np.concatenate([who[keep], *[w for _, w in dup_idx]])
    dups = int(sum(s.size for s, _ in dup_idx))
    bulk_prod = _bulk(
        ctx, start, p_ts, part, off, "produced", ["producer"], np.zeros(total, dtype=np.int32), topic
    )
    bulk_rec = _bulk(ctx, start, rec_ts, part[rec_idx], off[rec_idx], "record", names, rec_who, topic)
    table = pa.concat_tables([control, bulk_prod, bulk_rec])
    expected = {
        "members": n,
        "produced": total,
        "lost": int(total - keep.sum()),
        "duplicates": dups,
        "triggers": expected_triggers,
    }
    return table, expected


def _owner_matrix(epochs: list[tuple[float, dict[int, str]]], p_count: int) -> tuple[list[str], np.ndarray]:
    """Member names, and [epoch, partition] -> index of the owner's name."""
    names = sorted({o for _, owners in epochs for o in owners.values()})
    index = {n: i for i, n in enumerate(names)}
    m = np.empty((len(epochs), p_count), dtype=np.int32)
    for k, (_, owners) in enumerate(epochs):
        for p in range(p_count):
            m[k, p] = index[owners[p]]
    return names, m


def _bulk(
    ctx: dict[str, Any],
    start: int,
    ts_s: np.ndarray,
    part: np.ndarray,
    off: np.ndarray,
    kind: str,
    names: list[str],
    source: np.ndarray,
    topic: str,
) -> pa.Table:
    n = len(ts_s)
    ts = (start + np.round(ts_s * NS)).astype(np.int64)

    def const(v: Any, typ: pa.DataType) -> pa.Array:
        return pa.DictionaryArray.from_arrays(pa.array(np.zeros(n, dtype=np.int32)), pa.array([v], typ)).cast(
            typ
        )

    cols = {
        "ts_ns": pa.array(ts),
        "run_id": const(ctx["run_id"], pa.string()),
        "scenario": const(ctx["scenario"], pa.string()),
        "case": const(ctx["case"], pa.string()),
        "impl": const(ctx["impl"], pa.string()),
        "repetition": const(ctx["repetition"], pa.int32()),
        "source": pa.DictionaryArray.from_arrays(pa.array(source.astype(np.int32)), pa.array(names)).cast(
            pa.string()
        ),
        "kind": const(kind, pa.string()),
        "topic": const(topic, pa.string()),
        "partition": pa.array(part.astype(np.int32)),
        "offset": pa.array(off),
        "seq": pa.array(off),
    }
    arrays = [cols[f.name] if f.name in cols else pa.nulls(n, f.type) for f in SCHEMA]
    return pa.Table.from_arrays(arrays, schema=SCHEMA)
