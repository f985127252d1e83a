"""The column-by-column Parquet writer (:func:`harness.history.schema.to_parquet`): every event kind
round-trips, free nested fields survive exactly, and the Arrow path equals the per-event one."""

from __future__ import annotations

import json
import random
from pathlib import Path
from typing import Any

import pyarrow as pa
import pyarrow.parquet as pq

from harness.history.schema import (
    COLUMNS,
    SCHEMA,
    file_table,
    file_tables,
    read_parquet,
    rows_to_table,
    to_parquet,
)
from harness.history.writer import HistoryWriter, read_events
from harness.kernel.events import Kind, Role

CTX = {"run_id": "r1", "scenario": "herd", "case": "members=3", "impl": "legacy_zk", "repetition": 2}

# One event of every kind with its fields (kernel/events.py): (kind, role, fields).
EVENTS: list[tuple[Kind, str, dict[str, Any]]] = [
    (Kind.READY, Role.MEMBER, {"impl": "legacy_zk", "library": "kazoo"}),
    (Kind.STARTED, Role.MEMBER, {"group": "g", "member": "m1-id"}),
    (Kind.REGISTERED, Role.MEMBER, {"group": "g", "path": "/consumers/g/ids/m1", "session": "0x1"}),
    (Kind.REBALANCE_BEGIN, Role.MEMBER, {"group": "g", "attempt": 1}),
    (Kind.REBALANCE_END, Role.MEMBER, {"group": "g", "attempt": 1, "outcome": "ok", "gave_up": False}),
    (Kind.ASSIGNED, Role.MEMBER, {"group": "g", "generation": 4, "topic": "t", "partition": 2}),
    (Kind.REVOKED, Role.MEMBER, {"group": "g", "generation": 4, "topic": "t", "partition": 2}),
    (Kind.RECORD, Role.MEMBER, {"topic": "t", "partition": 2, "offset": 17, "seq": 18}),
    (Kind.COMMIT, Role.MEMBER, {"topic": "t", "partition": 2, "offset": 18, "store": "zookeeper"}),
    (Kind.COMMIT_REJECTED, Role.MEMBER, {"partition": 2, "store": "kafka", "error": "ILLEGAL_GENERATION"}),
    (
        Kind.OFFSET_FETCH,
        Role.MEMBER,
        {"partition": 1, "storage": "zookeeper", "dual": True, "zookeeper_offset": -1, "kafka_offset": None},
    ),
    (Kind.WATCH, Role.MEMBER, {"path": "/consumers/g/ids", "event": "CHILD"}),
    (
        Kind.ZK_REQUEST,
        Role.MEMBER,
        {"op": "get", "path": "/consumers/g/ids/*", "count": 9, "duration_ms": 0.5},
    ),
    (Kind.ZK_STATE, Role.MEMBER, {"state": "SUSPENDED"}),
    (Kind.CONFLICT, Role.MEMBER, {"path": "/consumers/g/owners/t/2"}),
    (Kind.ZK_RETRY, Role.MEMBER, {"op": "create", "path": "/x", "error": "ConnectionLoss"}),
    (Kind.TAKEOVER_REREAD, Role.MEMBER, {"group": "g"}),
    (Kind.HEARTBEAT_ERROR, Role.MEMBER, {"error": "REBALANCE_IN_PROGRESS"}),
    (Kind.STOPPED, Role.MEMBER, {"reason": "signal"}),
    (Kind.GROUP_STATE, Role.BROKER, {"group": "g", "generation": 5, "from_state": "Stable", "to_state": "X"}),
    (Kind.GROUP_REQUEST, Role.BROKER, {"api": "SyncGroup", "assignments": 3, "client": "m1"}),
    (Kind.MEMBER_ADDED, Role.BROKER, {"group": "g", "member": "m1-id", "epoch": 1}),
    (Kind.MEMBER_REMOVED, Role.BROKER, {"group": "g", "member": "m1-id", "epoch": 2, "reason": "expired"}),
    (Kind.TARGET_ASSIGNMENT, Role.BROKER, {"group": "g", "epoch": 3, "members": 2, "partitions_moved": 1}),
    (Kind.MEMBER_EPOCH, Role.BROKER, {"group": "g", "member": "m1-id", "epoch": 3, "previous_epoch": 2}),
    (
        Kind.GROUP_CONVERTED,
        Role.BROKER,
        {
            "group": "g",
            "from_type": "classic",
            "to_type": "consumer",
            "epoch": 4,
            "members": 2,
            "reason": "r",
        },
    ),
    (
        Kind.BROKER_REQUEST,
        Role.BROKER,
        {"interval_s": 1.0, "requests": {"Heartbeat": 3, "Fetch": 12}, "broker_id": 1},
    ),
    (Kind.CONTROLLER, Role.BROKER, {"phase": "elected", "controller_epoch": 2}),
    (Kind.BROKER_CHANGE, Role.BROKER, {"live": [1, 2], "dead": [3], "added": []}),
    (
        Kind.PARTITION_STATE,
        Role.BROKER,
        {"topic": "__consumer_offsets", "partition": 0, "leader": 2, "isr": [2], "reason": "offline"},
    ),
    (Kind.LEADERSHIP, Role.BROKER, {"topic": "t", "partition": 0, "leader": 2, "leader_epoch": 1}),
    (Kind.ISR_CHANGE, Role.BROKER, {"topic": "t", "partition": 0, "isr": [1, 2], "ok": False}),
    (Kind.COORDINATOR_LOAD, Role.BROKER, {"phase": "end", "groups": 1, "duration_ms": 12.5}),
    (Kind.GROUP_SERVED, Role.BROKER, {"group": "g", "offsets_partition": 7, "api": "JoinGroup"}),
    (Kind.PRODUCE_ACK, Role.BROKER, {"topic": "t", "partition": 1, "base_offset": 40, "count": 2}),
    (Kind.FENCED, Role.BROKER, {"what": "commit", "error": "NOT_COORDINATOR", "group": "g"}),
    (Kind.PRODUCED, Role.PRODUCER, {"topic": "t", "partition": 1, "offset": 41, "seq": 42}),
    (Kind.PRODUCE_ERROR, Role.PRODUCER, {"error": "timeout", "seq": 43}),
    (
        Kind.INVOKE,
        Role.NEMESIS,
        {"action": "crash", "action_id": 3, "targets": ["m1", "m2"], "trigger": True, "effective": {"m1": 1}},
    ),
    (Kind.COMPLETE, Role.NEMESIS, {"action": "crash", "action_id": 3, "targets": ["m1"]}),
    (Kind.SKIPPED, Role.NEMESIS, {"action": "cut", "action_id": 4, "reason": "not applicable"}),
    (Kind.UNIT_START, Role.HARNESS, {"topic": "t", "group": "g", "partitions": 3, "members": ["m1", "m2"]}),
    (Kind.STABLE, Role.HARNESS, {}),
    (Kind.SETTLING_END, Role.HARNESS, {}),
    (Kind.DRAINED, Role.HARNESS, {"complete": True}),
    (Kind.ZK_MNTR, Role.HARNESS, {"label": "invoke:3", "counters": {"zk_packets_received": 120.0}}),
    (Kind.OFFSETS_SNAPSHOT, Role.HARNESS, {"group": "g", "offsets": {"0": 4, "1": None}}),
    (
        Kind.ZK_SESSION,
        Role.ZOOKEEPER,
        {
            "phase": "connect",
            "session": "0x1",
            "password": "00ff",
            "timeout_ms": 6000,
            "member": "g_c1",
            "reconnect": True,
        },
    ),
]
# What the ZooKeeper tap writes of the members' kinds (role zookeeper, same kinds): they round-trip too.
TAP_EVENTS: list[tuple[Kind, str, dict[str, Any]]] = [
    (
        Kind.ZK_REQUEST,
        Role.ZOOKEEPER,
        {
            "op": "multi",
            "path": "/consumers/g/offsets/t/0",
            "err": "BadVersion",
            "session": "0x1",
            "member": "g_c1",
            "xid": 7,
            "subops": [["op13", "/consumers/g/owners/t/0"], ["set", "/consumers/g/offsets/t/0"]],
            "observed": "tap",
        },
    ),
    (
        Kind.WATCH,
        Role.ZOOKEEPER,
        {"path": "/consumers/g/ids", "type": "CHILD", "session": "0x1", "member": "g_c1"},
    ),
    (Kind.CONFLICT, Role.ZOOKEEPER, {"path": "/consumers/g/owners/t/2", "session": "0x1", "member": "g_c1"}),
]
TYPED = set(COLUMNS) - {"extra"}


def test_the_cases_cover_every_kind_and_role() -> None:
    assert sorted(k for k, _, _ in EVENTS) == sorted(Kind)
    assert {r for _, r, _ in EVENTS + TAP_EVENTS} == set(Role)


def test_the_zookeeper_taps_events_round_trip_through_the_parquet_writer(tmp_path: Path) -> None:
    src = tmp_path / "zk-tap.jsonl"
    with HistoryWriter(src, "zk-tap", role=Role.ZOOKEEPER) as w:
        for kind, _, fields in TAP_EVENTS:
            w.emit(kind, **fields)
    out = tmp_path / "history.parquet"
    assert to_parquet([(src, CTX)], out) == len(TAP_EVENTS)
    back = read_parquet(out)
    for (kind, role, fields), event in zip(TAP_EVENTS, back, strict=True):
        expected = {**fields, **CTX, "source": "zk-tap", "role": str(role), "kind": str(kind)}
        assert {k: v for k, v in event.items() if k != "ts_ns"} == expected, kind


def test_every_kind_round_trips_through_the_parquet_writer(tmp_path: Path) -> None:
    src = tmp_path / "m1.jsonl"
    with HistoryWriter(src, "m1") as w:
        for kind, role, fields in EVENTS:
            w.emit(kind, **{"role": role, **fields})
    out = tmp_path / "history.parquet"
    assert to_parquet([(src, CTX)], out) == len(EVENTS)
    table = pq.read_table(out)
    rows = table.to_pylist()
    back = read_parquet(out)
    assert [r["kind"] for r in rows] == [str(k) for k, _, _ in EVENTS]  # one writer: times increase
    for (kind, role, fields), row, event in zip(EVENTS, rows, back, strict=True):
        # the context's columns win; every other field comes back with its value and JSON type
        assert {c: row[c] for c in CTX} == CTX, kind
        assert (row["source"], row["role"], row["kind"]) == ("m1", role, kind)
        own_impl = fields.get("impl")
        expected = {**fields, **CTX, "source": "m1", "role": str(role), "kind": str(kind)}
        assert {k: v for k, v in event.items() if k != "ts_ns"} == expected, kind
        free = {k: v for k, v in fields.items() if k not in TYPED}
        if own_impl is not None and own_impl != CTX["impl"]:
            free["impl"] = own_impl
        assert (json.loads(row["extra"]) if row["extra"] else {}) == free, kind
    by_kind = {r["kind"]: r for r in rows}
    # the bulk has no extra; the free nested fields are kept as written
    assert by_kind["record"]["extra"] is None and by_kind["produced"]["extra"] is None
    assert (by_kind["record"]["partition"], by_kind["record"]["offset"], by_kind["record"]["seq"]) == (
        2,
        17,
        18,
    )
    assert json.loads(by_kind["broker_request"]["extra"]) == {
        "interval_s": 1.0,
        "requests": {"Heartbeat": 3, "Fetch": 12},
        "broker_id": 1,
    }
    assert json.loads(by_kind["invoke"]["extra"])["effective"] == {"m1": 1}
    assert json.loads(by_kind["zk_mntr"]["extra"])["counters"] == {"zk_packets_received": 120.0}
    assert json.loads(by_kind["offsets_snapshot"]["extra"])["offsets"] == {"0": 4, "1": None}
    assert (by_kind["zk_request"]["count"], by_kind["zk_request"]["duration_ms"]) == (9, 0.5)


def test_a_coordinator_member_in_a_legacy_unit_keeps_its_own_impl_in_extra(tmp_path: Path) -> None:
    src = tmp_path / "c0.jsonl"
    with HistoryWriter(src, "c0", role=Role.MEMBER) as w:
        w.emit(Kind.RECORD, impl="coordinator", partition=0, offset=1)
        w.emit(Kind.RECORD, impl="legacy_zk", partition=0, offset=2)
    rows = file_table(src, CTX).to_pylist()
    assert [(r["impl"], r["offset"], r["extra"]) for r in rows] == [
        ("legacy_zk", 1, '{"impl":"coordinator"}'),
        ("legacy_zk", 2, None),
    ]


def test_blank_lines_a_torn_tail_and_a_broken_line_are_skipped_in_line_order(tmp_path: Path) -> None:
    src = tmp_path / "m.jsonl"
    src.write_text(
        '{"ts_ns":5,"kind":"record","partition":1,"offset":1}\n'
        "\n"
        '{"ts_ns":3,"kind":"invoke","targets":["m1"]}\n'
        "{not json\n"
        '{"ts_ns":4,"kind":"record","partition":1,"offset":2}\n'
        '{"ts_ns":6,"kind":"rec'
    )
    rows = file_table(src).to_pylist()
    assert [(r["ts_ns"], r["kind"], r["offset"], r["extra"]) for r in rows] == [
        (5, "record", 1, None),
        (3, "invoke", None, '{"targets":["m1"]}'),
        (4, "record", 2, None),
    ]
    out = tmp_path / "h.parquet"
    to_parquet([(src, {})], out)
    assert pq.read_table(out).column("ts_ns").to_pylist() == [3, 4, 5]


def test_the_arrow_path_equals_the_per_event_conversion_on_odd_values(tmp_path: Path) -> None:
    """Random files mixing plain events, free fields, values that do not fit their column, strings
    holding ``":`` and keys that merely end in a column's name: the same table either way."""
    rng = random.Random(7)
    odd: list[Any] = [None, 0, -5, 1.5, 3.0, "x", 'a":b', "", True, [1, "a"], {"k": 1, "ts_ns": 2}, "5"]
    keys = [*sorted(TYPED), "requests", "targets", "xkind"]
    ints = {"partition", "offset", "seq", "generation", "repetition", "count", "attempt"}
    for trial in range(150):
        lines = []
        for _ in range(rng.randint(0, 20)):
            e: dict[str, Any] = {"ts_ns": rng.randint(0, 50), "kind": rng.choice(["record", "invoke"])}
            for _ in range(rng.randint(0, 4)):
                k = rng.choice(keys)
                plain = rng.randint(0, 9) if k in ints else f"s{rng.randint(0, 3)}"
                e[k] = rng.choice(odd) if rng.random() < 0.3 else plain
            lines.append(json.dumps(e, separators=(",", ":")))
        src = tmp_path / f"f{trial}.jsonl"
        src.write_text("\n".join(lines) + "\n")
        ctx = rng.choice([{}, {"impl": "legacy_zk", "repetition": 0}, {"impl": "coordinator", "case": "c"}])
        assert file_table(src, ctx).equals(rows_to_table(read_events(src), ctx)), src.read_text()


def test_a_file_read_in_small_chunks_gives_the_same_table(tmp_path: Path) -> None:
    """Chunks of whole lines (a big simulated unit's file): the same rows in the same order, with a
    chunk the Arrow reader refuses (a value that does not fit its column), a blank line and a torn tail."""
    lines = []
    for i in range(60):
        e: dict[str, Any] = {"ts_ns": 100 - i, "kind": "record", "partition": i % 3, "offset": i}
        if i == 17:
            e["partition"] = "x"  # refused by the Arrow reader: that chunk goes line by line
        if i % 10 == 4:
            e["targets"] = ["m1"]  # a free field: extra
        lines.append(json.dumps(e, separators=(",", ":")))
    src = tmp_path / "big.jsonl"
    src.write_text("\n".join(lines[:30]) + "\n\n" + "\n".join(lines[30:]) + '\n{"ts_ns":1,"kind":"rec')
    whole = rows_to_table(read_events(src), CTX)
    for chunk in (64, 200, 1000, 10**6):
        parts = list(file_tables(src, CTX, chunk_bytes=chunk))
        assert pa.concat_tables(parts).equals(whole), chunk
    assert len(list(file_tables(src, CTX, chunk_bytes=200))) > 5


def test_a_history_longer_than_a_run_is_merged_from_sorted_runs_in_time_order(tmp_path: Path) -> None:
    """The bounded sort: rows in time order, ties in file order then line order, a missing time last,
    whatever the run and batch sizes (1 row: every row its own run; 3: runs cut inside a file; 100: one
    run, sorted in memory), and no spilled run left behind."""
    a = tmp_path / "a.jsonl"
    b = tmp_path / "b.jsonl"
    # file a, in line order: a1 at 5, a2 at 1, a3 at 3, a4 at 3, a5 with no time; file b: b1 at 3, b2 at 2, b3 at 5
    a.write_text(
        "\n".join(
            json.dumps({"ts_ns": t, "kind": "record", "member": m})
            if t is not None
            else json.dumps({"kind": "x", "member": m})
            for t, m in [(5, "a1"), (1, "a2"), (3, "a3"), (3, "a4"), (None, "a5")]
        )
        + "\n"
    )
    b.write_text(
        "".join(
            json.dumps({"ts_ns": t, "kind": "record", "member": m}) + "\n"
            for t, m in [(3, "b1"), (2, "b2"), (5, "b3")]
        )
    )
    # by hand: 1 a2; 2 b2; 3 a3, a4 (file a first, its lines in order), b1; 5 a1, b3; no time: a5
    expected = ["a2", "b2", "a3", "a4", "b1", "a1", "b3", "a5"]
    for run_rows, batch_rows in [(1, 1), (3, 2), (3, 100), (2, 1), (100, 100)]:
        out = tmp_path / f"h-{run_rows}-{batch_rows}.parquet"
        n = to_parquet(
            [(a, CTX), (tmp_path / "missing.jsonl", CTX), (b, CTX)],
            out,
            run_rows=run_rows,
            batch_rows=batch_rows,
        )
        assert n == 8
        table = pq.read_table(out)
        assert table.column("member").to_pylist() == expected, (run_rows, batch_rows)
        assert table.schema.equals(SCHEMA, check_metadata=False)
        assert table.column("run_id").to_pylist() == ["r1"] * 8
    assert sorted(p.name for p in tmp_path.iterdir() if p.name.startswith(".history-runs-")) == []
