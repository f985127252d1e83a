"""A legacy_zk run behind the unit's ZooKeeper tap (``cluster.zookeeper_tap``): what the tap counts on the
wire per member equals what the Python members report of their own ZooKeeper requests (and of their watch
notifications and owner-znode conflicts), so the tap counts both columns of the comparison with the
original the same way."""

from __future__ import annotations

import threading
from collections import Counter
from pathlib import Path
from typing import Any

import pytest

from harness.history.schema import read_parquet
from harness.run.runner import run_scenario
from harness.scenario import load_scenario
from tests.support.runs import FAST, SharedCluster

#: Tap ops with no Python-member counterpart: the Java client's SetWatches after a reconnect. kazoo never
#: sends one (it re-arms no watch on a reconnect), so a Python member's run has none: asserted below.
TAP_ONLY_OPS = ("set_watches",)


@pytest.mark.slow
def test_the_taps_requests_per_member_and_op_equal_the_members_own(
    tmp_path: Path, shared_cluster: SharedCluster
) -> None:
    timeline = 'timeline=[{at="1s",action="join"}]'
    s = load_scenario(
        "herd",
        [
            *FAST,
            'implementations=["legacy_zk"]',
            "group.members=3",
            "topic.partitions=4",
            timeline,
            "cluster.zookeeper_tap=true",
        ],
    )
    result = run_scenario(s, shared_cluster.options(tmp_path))
    [unit] = result.units
    assert "failed" not in unit, unit.get("failed")
    assert unit["settled_at_end"]
    events = read_parquet(result.run_dir / "history.parquet")
    assert not [t for t in threading.enumerate() if t.name == "zookeeper-tap"], "the tap closed with the unit"

    members = [e for e in events if e["role"] == "member"]
    tap = [e for e in events if e["role"] == "zookeeper"]
    assert tap and {e["source"] for e in tap} == {"zk-tap"}
    # no request was reissued after a connection loss (the member counts both sends, the tap one answer)
    assert not [e for e in members if e["kind"] == "zk_retry"]
    source_of = {e["member"]: e["source"] for e in members if e.get("member")}
    assert len(source_of) == 4  # 3 initial members and the joiner

    # a session's member: the consumer id the tap names on any of its events (from its registering create);
    # its requests before that create are its member's too
    member_of: dict[str, str] = {}
    for e in tap:
        if e.get("member"):
            assert member_of.setdefault(e["session"], e["member"]) == e["member"]
    requests = [e for e in tap if e["kind"] == "zk_request"]
    assert not [e for e in requests if e["op"] in TAP_ONLY_OPS]
    assert {e["session"] for e in requests} <= set(member_of), "every session the tap saw registered"

    def by_member(rows: list[dict[str, Any]], name: Any) -> Counter[tuple[str, str, str]]:
        return Counter((name(e), e["op"], e["path"]) for e in rows)

    tapped = by_member(requests, lambda e: source_of[member_of[e["session"]]])
    own = by_member([e for e in members if e["kind"] == "zk_request"], lambda e: e["source"])
    assert tapped == own
    per_op = Counter((m, op) for (m, op, _), n in tapped.items() for _ in range(n))
    assert {op for _, op in per_op} >= {"create", "get", "get_children", "exists", "delete"}
    assert len({m for m, _ in per_op}) == 4

    # watch notifications, until the settling phase ends: every one the tap passed, the member wrote (a
    # member replays watches itself after a new session, via != "notification": none on the wire). In the
    # teardown each member still gets the CHILD of another's leaving, which a stopping member does not write.
    end = next(e["ts_ns"] for e in events if e["kind"] == "settling_end")
    wire = Counter(
        (source_of[member_of[e["session"]]], e["path"], e["type"])
        for e in tap
        if e["kind"] == "watch" and e["ts_ns"] < end
    )
    written = Counter(
        (e["source"], e["path"], e["type"])
        for e in members
        if e["kind"] == "watch" and e["ts_ns"] < end and e.get("via") == "notification"
    )
    assert wire and wire == written
    # owner-znode conflicts: the same per member (a member's NodeExists on a topic's directory under
    # owners/, two members creating it at once, is no conflict on either side; one on its own owner znode
    # after a connection loss is one only on the wire: there was no loss here, no zk_retry)
    assert Counter(source_of[e["member"]] for e in tap if e["kind"] == "conflict") == Counter(
        e["source"] for e in members if e["kind"] == "conflict"
    )
