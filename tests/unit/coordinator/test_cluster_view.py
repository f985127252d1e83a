"""Which broker coordinates a group: the spec's partitionFor over the live brokers in id order."""

from __future__ import annotations

from coordinator.cluster import ClusterView, Node


def test_alone_a_broker_coordinates_every_group() -> None:
    view = ClusterView(broker_id=3)
    assert view.node_ids() == [3]
    assert all(view.is_coordinator(g) for g in ("a", "my-group", "", "x" * 300))
    assert view.nodes("127.0.0.9", 1234) == [Node(3, "127.0.0.9", 1234)]


def test_groups_spread_by_java_hash_over_live_brokers() -> None:
    view = ClusterView(broker_id=0, offsets_partitions=50)
    view.set_peers({1: Node(1, "127.0.0.1", 9093), 0: Node(0, "ignored", 1)})
    assert view.node_ids() == [0, 1]
    # Spec 2.2 vectors: "my-group" -> partition 12, "Java Exercises." -> 43, "Hello" -> 0.
    assert view.offsets_partition("my-group") == 12
    assert view.offsets_partition("Java Exercises.") == 43
    assert view.coordinator_id("my-group") == 0 and view.is_coordinator("my-group")
    assert view.coordinator_id("Java Exercises.") == 1 and not view.is_coordinator("Java Exercises.")
    assert view.node(1, "127.0.0.5", 1) == Node(1, "127.0.0.1", 9093)
    assert view.node(0, "127.0.0.5", 7) == Node(0, "127.0.0.5", 7)  # itself: the connection's address
    assert view.node(2, "h", 1) is None
    view.set_peers({})  # the peer died: everything comes back here
    assert view.is_coordinator("Java Exercises.")


def test_remote_topics() -> None:
    view = ClusterView(broker_id=0)
    view.set_remote_topics({"t": {0: [1], 1: [1]}})
    assert view.remote_topic("t") == {0: [1], 1: [1]} and view.remote_topic("u") is None
    assert view.remote_topic_names() == ["t"]
