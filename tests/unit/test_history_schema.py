"""JSON-lines histories merge into one typed Parquet file without losing a field."""

from __future__ import annotations

import json
from pathlib import Path

import pyarrow.parquet as pq

from harness.history.schema import COLUMNS, read_parquet, to_parquet
from harness.history.writer import HistoryWriter
from harness.run.manifest import write_manifest


def test_to_parquet_merges_files_sorted_by_time_with_context_and_extras(tmp_path: Path) -> None:
    a, b = tmp_path / "a.jsonl", tmp_path / "b.jsonl"
    with HistoryWriter(a, "m1") as w:
        w.emit("assigned", group="g", member="m1", generation=3, topic="t", partition=0)
        w.emit("record", topic="t", partition=0, offset=7, seq=41, custom_field={"x": 1})
    with HistoryWriter(b, "broker-0") as w:
        w.emit(
            "group_state",
            group="g",
            generation=4,
            from_state="PreparingRebalance",
            to_state="CompletingRebalance",
        )
        w.emit("record", partition="not-a-number")
    out = tmp_path / "run" / "history.parquet"
    n = to_parquet([(a, {"impl": "legacy_zk", "repetition": 0}), (b, {"impl": "coordinator"})], out)
    assert n == 4
    table = pq.read_table(out)
    assert table.column_names == COLUMNS
    ts = table.column("ts_ns").to_pylist()
    assert ts == sorted(ts)
    events = read_parquet(out)
    rec = next(e for e in events if e["kind"] == "record" and e["source"] == "m1")
    assert (rec["partition"], rec["offset"], rec["seq"], rec["impl"]) == (0, 7, 41, "legacy_zk")
    assert rec["custom_field"] == {"x": 1}
    state = next(e for e in events if e["kind"] == "group_state")
    assert state["from_state"] == "PreparingRebalance" and state["impl"] == "coordinator"
    bad = next(e for e in events if e["kind"] == "record" and e["source"] == "broker-0")
    assert bad["partition"] == "not-a-number"  # kept in extra, not dropped


def test_to_parquet_skips_missing_files_and_writes_an_empty_history(tmp_path: Path) -> None:
    out = tmp_path / "h.parquet"
    assert to_parquet([(tmp_path / "never-started.jsonl", {})], out) == 0
    assert pq.read_table(out).num_rows == 0


def test_manifest_names_versions_commit_and_machine(tmp_path: Path) -> None:
    m = write_manifest(tmp_path / "manifest.json", scenario={"name": "herd"}, repetition=2, seed=7)
    on_disk = json.loads((tmp_path / "manifest.json").read_text())
    assert on_disk["scenario"] == {"name": "herd"} and on_disk["seed"] == 7
    for dist in ("herdlab", "kafka-python", "kazoo", "zookeeper"):
        assert on_disk["versions"][dist], dist
    assert on_disk["machine"]["cpus"] >= 1 and on_disk["machine"]["java"]
    assert m["git_commit"] is None or len(m["git_commit"]) >= 40


def test_an_events_own_value_overridden_by_the_context_is_kept_in_extra(tmp_path: Path) -> None:
    """A coordinator member in a legacy_zk unit (a migration): the unit's impl in the column (and in
    the Python view), the member's own in ``extra``; an equal value is not repeated there."""
    a = tmp_path / "c0.jsonl"
    with HistoryWriter(a, "c0") as w:
        w.emit("ready", impl="coordinator")
        w.emit("ready", impl="legacy_zk")
    out = tmp_path / "h.parquet"
    to_parquet([(a, {"impl": "legacy_zk", "repetition": 0})], out)
    rows = pq.read_table(out).to_pylist()
    assert [(r["impl"], r["extra"]) for r in rows] == [
        ("legacy_zk", '{"impl":"coordinator"}'),
        ("legacy_zk", None),
    ]
    assert [e["impl"] for e in read_parquet(out)] == ["legacy_zk", "legacy_zk"]
