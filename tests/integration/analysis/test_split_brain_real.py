"""A real split-brain run: the checker's overlap episodes equal an independent reading of the raw history,
and in each implementation the member cut off from what it coordinates through has its partitions taken
over by the other member (and the legacy one keeps processing during the cut).

legacy_zk: a member cut off from ZooKeeper keeps fetching while its session expires and the other
member takes its partitions over (the ZooKeeper-era split brain). coordinator: the same ZooKeeper cut
is skipped (its members do not use ZooKeeper); a member cut off from the broker is expelled when its
session times out, and may still process records it had fetched. The reading below walks each
member's records and closes of each partition in time order with the unit's processing gap bound
from the manifest, as the definition says, and merges the pairwise intersections per partition.
"""

from __future__ import annotations

import json
from collections import defaultdict
from pathlib import Path
from typing import Any

import pytest

from harness.analysis import analyze_run
from harness.history.schema import read_parquet
from harness.run.runner import RunOptions, run_scenario
from harness.scenario import load_scenario
from tests.support.runs import FAST

pytestmark = [pytest.mark.slow, pytest.mark.long]

CLOSING = ("crash", "leave", "stop_member", "pause", "cut")


def intervals(events: list[dict[str, Any]], gap_ns: int) -> dict[int, list[tuple[str, int, int]]]:
    """Per partition, every member's processing intervals (member, start, end) read from ``events``."""
    records: dict[tuple[str, int], list[int]] = defaultdict(list)
    closes: dict[str, list[tuple[int, int | None]]] = defaultdict(list)  # member -> (ts, p or None = all)
    for e in events:
        if e["kind"] == "record" and e["role"] == "member":
            records[(e["source"], int(e["partition"]))].append(e["ts_ns"])
        elif e["kind"] == "revoked" and e["role"] == "member" and e.get("partition") is not None:
            closes[e["source"]].append((e["ts_ns"], int(e["partition"])))
        elif e["kind"] == "stopped" and e["role"] == "member":
            closes[e["source"]].append((e["ts_ns"], None))
        elif e["kind"] == "complete" and e.get("action") in CLOSING:
            for t in e.get("targets") or []:
                closes[t].append((e["ts_ns"], None))
    out: dict[int, list[tuple[str, int, int]]] = defaultdict(list)
    for (member, p), stamps in records.items():
        # a record at a close's instant comes before the close (0 sorts records first)
        walk = sorted([(t, 0) for t in stamps] + [(t, 1) for t, q in closes[member] if q in (None, p)])
        start = last = None
        for t, is_close in walk:
            if is_close:
                if start is not None and last is not None:
                    out[p].append((member, start, t if t - last <= gap_ns else last))
                start = last = None
            elif start is None or last is None:
                start = last = t
            elif t - last > gap_ns:
                out[p].append((member, start, last))
                start = last = t
            else:
                last = t
        if start is not None and last is not None:
            out[p].append((member, start, last))
    return out


def episodes(by_p: dict[int, list[tuple[str, int, int]]]) -> list[tuple[int, int, int]]:
    """Per partition, the maximal unions of two members' intersecting intervals: (p, start, end)."""
    out = []
    for p, ivs in by_p.items():
        pairs = sorted(
            (max(a[1], b[1]), min(a[2], b[2]))
            for i, a in enumerate(ivs)
            for b in ivs[i + 1 :]
            if a[0] != b[0] and max(a[1], b[1]) <= min(a[2], b[2])
        )
        cur: list[int] | None = None
        for s, e in pairs:
            if cur is not None and s <= cur[1]:
                cur[1] = max(cur[1], e)
                continue
            if cur is not None:
                out.append((p, cur[0], cur[1]))
            cur = [s, e]
        if cur is not None:
            out.append((p, cur[0], cur[1]))
    return sorted(out, key=lambda x: (x[1], x[0]))


def test_the_overlap_of_a_real_split_brain_run_is_what_its_raw_records_show(
    tmp_path: Path, spark: Any
) -> None:
    s = load_scenario(
        "split-brain",
        [
            *FAST,
            "group.members=2",
            "topic.partitions=2",
            "workload.rate=100",
            "drain=10s",
            'timeline=[{at="3s",action="cut",target="zookeeper",count=1,duration="8s"},'
            '{at="16s",action="cut",target="broker",count=1,duration="8s"}]',
        ],
    )
    result = run_scenario(s, RunOptions(out=tmp_path))
    assert not [u for u in result.units if u.get("failed")]
    metrics = analyze_run(result.run_dir)
    manifest = json.loads((result.run_dir / "manifest.json").read_text())
    (case,) = manifest["cases"]
    events = read_parquet(result.run_dir / "history.parquet")
    seen_overlap = False
    for u in metrics["units"]:
        gap_s = case["processing_gap_s"][u["impl"]]
        assert u["processing_gap_s"] == gap_s
        mine = [
            e
            for e in events
            if (e["case"], e["impl"], e["repetition"]) == (u["case"], u["impl"], u["repetition"])
        ]
        (stable,) = [e["ts_ns"] for e in mine if e["kind"] == "stable"]
        expected = episodes(intervals(mine, round(gap_s * 1e9)))
        got = [(e["p"], e["start_s"], e["end_s"]) for e in u["overlaps"]]
        want = [(p, round((a - stable) / 1e9, 6), round((b - stable) / 1e9, 6)) for p, a, b in expected]
        assert got == want, u["impl"]
        total = round(sum(b - a for _, a, b in expected) / 1e9, 6)
        in_phases = (
            u["startup"]["overlap_s"] + sum(t["overlap_s"] for t in u["triggers"]) + u["drain"]["overlap_s"]
        )
        assert round(in_phases, 6) == pytest.approx(total, abs=1e-5), u["impl"]
        seen_overlap = seen_overlap or bool(expected)
    # the legacy member cut off from ZooKeeper went on fetching the partitions the other one took over
    legacy = next(u for u in metrics["units"] if u["impl"] == "legacy_zk")
    assert legacy["triggers"][0]["overlap_episodes"] >= 1, legacy["triggers"][0]
    assert seen_overlap
    for u in result.units:
        mine = [
            e
            for e in events
            if (e["case"], e["impl"], e["repetition"]) == (u["case"], u["impl"], u["repetition"])
        ]
        produced = {(e["partition"], e["offset"]) for e in mine if e["kind"] == "produced"}
        processed = {(e["partition"], e["offset"]) for e in mine if e["kind"] == "record"}
        assert produced and produced <= processed, f"{u['impl']}: {len(produced - processed)} never processed"
        _assert_the_cut_off_members_partitions_were_taken_over(mine, u["impl"])
        assert u["settled_at_end"], u


def _assert_the_cut_off_members_partitions_were_taken_over(events: list[dict[str, Any]], impl: str) -> None:
    """The cut that hits ``impl``'s members (legacy_zk: from ZooKeeper; coordinator: from the broker; the
    other cut is skipped for the coordinator): every partition the victim owned before it was taken over
    by the other member during the cut; a legacy member cut off from ZooKeeper went on processing records
    during the cut (the 0.8 consumer keeps fetching: the split-brain ingredient)."""
    target = "zookeeper" if impl == "legacy_zk" else "broker"
    (cut,) = [
        e for e in events if e["kind"] == "invoke" and e.get("action") == "cut" and e["target"] == target
    ]
    heal = next(
        e for e in events if e["kind"] == "invoke" and e.get("action") == "heal" and e["ts_ns"] > cut["ts_ns"]
    )
    victim = cut["targets"][0]
    victim_parts = {
        e["partition"]
        for e in events
        if e["kind"] == "assigned" and e["source"] == victim and e["ts_ns"] < cut["ts_ns"]
    }
    taken = {
        e["partition"]
        for e in events
        if e["kind"] == "assigned" and e["source"] != victim and cut["ts_ns"] < e["ts_ns"] < heal["ts_ns"]
    }
    assert victim_parts and victim_parts <= taken, (impl, victim_parts, taken)
    if impl == "legacy_zk":
        during = [
            e
            for e in events
            if e["kind"] == "record" and e["source"] == victim and cut["ts_ns"] < e["ts_ns"] < heal["ts_ns"]
        ]
        assert during, "the cut-off legacy member processed nothing during the cut"
