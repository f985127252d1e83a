"""ClusterView in replicated mode: the coordinator of a group is the leader of its offsets partition."""

from __future__ import annotations

from coordinator.cluster import ClusterView, Node, PartitionInfo


def test_the_coordinator_is_the_leader_of_the_groups_offsets_partition() -> None:
    view = ClusterView(broker_id=1, offsets_partitions=50, replicated=True)
    view.set_peers({2: Node(2, "127.0.0.1", 9093)})
    # Spec 2.2 vectors: "my-group" -> partition 12, "Hello" -> 0.
    view.set_partition_info("__consumer_offsets", 12, PartitionInfo(2, 3, (2, 1), (2, 1)))
    view.set_partition_info("__consumer_offsets", 0, PartitionInfo(1, 0, (1, 2), (1,)))
    assert view.coordinator_id("my-group") == 2 and not view.is_coordinator("my-group")
    assert view.coordinator_id("Hello") == 1 and view.is_coordinator("Hello")
    # a partition with no state yet, and one with leader -1: no coordinator
    assert view.coordinator_id("Java Exercises.") is None  # partition 43
    view.set_partition_info("__consumer_offsets", 12, PartitionInfo(-1, 4, (2, 1), (2,)))
    assert view.coordinator_id("my-group") is None and not view.is_coordinator("my-group")


def test_an_unknown_offsets_topic_asks_for_it_once() -> None:
    view = ClusterView(broker_id=0, replicated=True)
    calls: list[int] = []
    view.on_missing_offsets_topic = lambda: calls.append(1)
    assert view.coordinator_id("g") is None
    assert view.coordinator_id("h") is None and not view.is_coordinator("g")
    assert calls == [1]


def test_partition_infos_read_back_per_topic() -> None:
    view = ClusterView(broker_id=0, replicated=True)
    a0 = PartitionInfo(0, 0, (0, 1), (0, 1))
    a1 = PartitionInfo(1, 2, (1, 0), (1,))
    view.set_partition_info("a", 0, a0)
    view.set_partition_info("a", 1, a1)
    view.set_partition_info("b", 0, a0)
    assert view.partition_info("a", 1) == a1 and view.partition_info("a", 2) is None
    assert view.partition_info("c", 0) is None
    assert view.topic_partitions("a") == {0: a0, 1: a1} and view.topic_partitions("c") is None
    assert view.topic_names() == ["a", "b"]


def test_without_replication_partition_states_do_not_move_coordinators() -> None:
    view = ClusterView(broker_id=0, offsets_partitions=50)
    view.set_peers({1: Node(1, "127.0.0.1", 9093)})
    view.set_partition_info("__consumer_offsets", 43, PartitionInfo(0, 0, (0,), (0,)))
    assert view.coordinator_id("Java Exercises.") == 1  # 43 mod 2 live brokers, as before


def test_no_coordinator_is_no_node() -> None:
    view = ClusterView(broker_id=0, replicated=True)
    assert view.node(view.coordinator_id("g"), "127.0.0.1", 9092) is None
