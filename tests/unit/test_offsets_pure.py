"""The pure core of ``herdlab offsets`` (harness.offsets.core) on hand-made offsets: the diff rows, the reset
plan CSV, the copy plan and the live-member refusal. Every expected value is worked out by hand in the test."""

from __future__ import annotations

from harness.offsets.core import (
    Activity,
    CopyStep,
    DiffRow,
    changed,
    copy_plan,
    diff_rows,
    export_csv,
    group_topics,
    live_member_refusal,
)


def test_diff_rows_cover_every_partition_with_lag_from_the_larger_offset_and_difference_broker_minus_zk() -> (
    None
):
    zk = {("orders", 0): 40, ("orders", 1): 75}
    kafka = {("orders", 0): 52, ("orders", 2): 10}
    log_end = {("orders", 0): 60, ("orders", 1): 80, ("orders", 2): 10, ("orders", 3): 7}
    rows = diff_rows(zk, kafka, log_end, {"orders": [0, 1, 2, 3]})

    assert rows == [
        DiffRow("orders", 0, 40, 52, 60),
        DiffRow("orders", 1, 75, None, 80),
        DiffRow("orders", 2, None, 10, 10),
        DiffRow("orders", 3, None, None, 7),
    ]
    # p0: both stores: lag 60 - max(40, 52) = 8, difference 52 - 40 = 12.
    assert (rows[0].lag, rows[0].difference) == (8, 12)
    # p1: only ZooKeeper: lag 80 - 75 = 5, no difference.
    assert (rows[1].lag, rows[1].difference) == (5, None)
    # p2: only the broker, caught up: lag 10 - 10 = 0.
    assert (rows[2].lag, rows[2].difference) == (0, None)
    # p3: no offset anywhere: neither lag nor difference.
    assert (rows[3].lag, rows[3].difference) == (None, None)
    assert rows[0].as_dict() == {
        "topic": "orders",
        "partition": 0,
        "zookeeper_offset": 40,
        "kafka_offset": 52,
        "log_end_offset": 60,
        "lag": 8,
        "difference": 12,
    }
    assert rows[3].as_dict()["zookeeper_offset"] is None


def test_a_broker_ahead_or_behind_zookeeper_gives_a_signed_difference_and_the_lag_of_the_more_advanced() -> (
    None
):
    # ZooKeeper ahead (e.g. the broker commit of a dual-commit consumer was refused): 30 - 45 = -15;
    # lag from the larger (ZooKeeper's) 45: 50 - 45 = 5.
    row = diff_rows({("t", 0): 45}, {("t", 0): 30}, {("t", 0): 50}, {"t": [0]})[0]
    assert (row.difference, row.lag, row.committed) == (-15, 5, 45)


def test_diff_topics_are_the_union_of_both_stores_or_the_ones_asked_for() -> None:
    zk = {("a", 0): 1, ("c", 0): 1}
    kafka = {("b", 1): 2, ("a", 0): 3}
    assert group_topics(zk, kafka) == ["a", "b", "c"]
    assert group_topics(zk, kafka, ("c", "a", "c")) == ["c", "a"]
    # Only topic b, and the broker knows 2 partitions of it: p0 has no offset, p1 has the broker's.
    rows = diff_rows(zk, kafka, {("b", 0): 5, ("b", 1): 9}, {"b": [0, 1]}, ("b",))
    assert rows == [DiffRow("b", 0, None, None, 5), DiffRow("b", 1, None, 2, 9)]


def test_an_offset_on_a_partition_the_broker_does_not_list_still_gets_a_row_without_log_end() -> None:
    # The topic is gone from the broker (no partitions, no log end), ZooKeeper still has p4's offset.
    rows = diff_rows({("gone", 4): 12}, {}, {}, {})
    assert rows == [DiffRow("gone", 4, 12, None, None)]
    assert rows[0].lag is None


def test_export_csv_is_kafkas_single_group_reset_plan_sorted_without_header() -> None:
    offsets = {("orders", 10): 3, ("clicks", 0): 100, ("orders", 2): 0}
    # ConsumerGroupCommand's CsvRecordNoGroup: topic,partition,offset, one \n-terminated line each; topics
    # and partitions sorted numerically (2 before 10).
    assert export_csv(offsets) == "clicks,0,100\norders,2,0\norders,10,3\n"
    assert export_csv({}) == ""


def test_export_csv_lines_parse_as_parseresetplan_reads_them() -> None:
    offsets = {("t.x-1", 0): 7, ("t.x-1", 1): 0}
    # parseResetPlan: split on \n (Java's split drops trailing empty strings), each line on ",", trimmed.
    lines = [line for line in export_csv(offsets).split("\n") if line]
    parsed = {(t.strip(), int(p)): int(o) for t, p, o in (line.split(",") for line in lines)}
    assert parsed == offsets


def test_copy_plan_lists_each_source_partition_with_current_target_and_the_writes_are_the_changes() -> None:
    source = {("t", 0): 10, ("t", 1): 20, ("u", 0): 5}
    target = {("t", 0): 10, ("t", 1): 15, ("t", 9): 99}
    plan = copy_plan(source, target)
    assert plan == [CopyStep("t", 0, 10, 10), CopyStep("t", 1, 20, 15), CopyStep("u", 0, 5, None)]
    assert [s.changes for s in plan] == [False, True, True]
    assert [s.new for s in plan] == [10, 20, 5]
    # t/9 exists only in the target: not part of the plan, so not written.
    assert changed(plan) == {("t", 1): 20, ("u", 0): 5}
    assert plan[2].as_dict() == {
        "topic": "u",
        "partition": 0,
        "from": 5,
        "current": None,
        "new": 5,
        "changes": True,
    }


def test_no_live_member_means_no_refusal() -> None:
    assert live_member_refusal("g", Activity()) is None
    assert live_member_refusal("g", Activity(zookeeper_ids=(), broker_state="Empty")) is None
    assert live_member_refusal("g", Activity(zookeeper_ids=(), broker_state="Dead")) is None


def test_a_consumer_registered_in_zookeeper_refuses_the_copy_naming_it() -> None:
    msg = live_member_refusal("g", Activity(zookeeper_ids=("g_host-2", "g_host-1"), broker_state="Dead"))
    assert msg is not None
    assert "\n" not in msg
    assert msg.startswith("group g has live members: 2 registered in ZooKeeper (g_host-1, g_host-2)")
    assert "--force" in msg
    many = live_member_refusal("g", Activity(zookeeper_ids=("a", "b", "c", "d", "e")))
    assert many is not None and "5 registered in ZooKeeper (a, b, c and 2 more)" in many


def test_broker_members_or_a_non_idle_state_refuse_the_copy() -> None:
    stable = live_member_refusal("g", Activity(zookeeper_ids=(), broker_state="Stable", broker_members=3))
    assert stable is not None and "3 in the broker (group state Stable)" in stable
    # A rebalance with no member listed yet is still a live group.
    rebalancing = live_member_refusal("g", Activity(broker_state="PreparingRebalance", broker_members=0))
    assert rebalancing is not None and "group state PreparingRebalance" in rebalancing
    both = live_member_refusal("g", Activity(zookeeper_ids=("z1",), broker_state="Stable", broker_members=1))
    assert both is not None and "1 registered in ZooKeeper (z1); 1 in the broker" in both
