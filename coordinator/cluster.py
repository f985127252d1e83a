"""Who is in the cluster and which broker coordinates which group. Pure; fed by :mod:`coordinator.zk`.

Contract
--------
* Without ZooKeeper the cluster is this broker alone: it coordinates every group.
* With ZooKeeper, :meth:`ClusterView.set_peers` receives the other live brokers (from
  ``/brokers/ids``). The coordinator of a group is the broker that leads offsets partition
  ``partition_for(group, offsets_partitions)`` (spec 2.2); offsets partition ``p`` is led by the
  ``p mod n``-th live broker in id order (Kafka spreads ``__consumer_offsets`` leaders the same way
  when every broker is alive). So every broker computes the same answer from the same view.
* Topics registered in ZooKeeper by other brokers are known by :meth:`ClusterView.remote_topic`
  (partition -> replicas, leader first), so Metadata can send clients to their leader.
* This broker's own address is not stored: it is whatever address the client connected through,
  passed in per request (``self_host`` / ``self_port``).
"""

from __future__ import annotations

from dataclasses import dataclass
from functools import lru_cache

from harness.kernel.javacompat import partition_for

__all__ = ["ClusterView", "Node"]

_partition_for = lru_cache(maxsize=100_000)(partition_for)


@dataclass(frozen=True, slots=True)
class Node:
    """A broker as Metadata lists it."""

    node_id: int
    host: str
    port: int


class ClusterView:
    """This broker plus the peers ZooKeeper reported."""

    def __init__(self, broker_id: int, offsets_partitions: int = 50) -> None:
        self.broker_id = broker_id
        self.offsets_partitions = offsets_partitions
        self._peers: dict[int, Node] = {}
        self._remote_topics: dict[str, dict[int, list[int]]] = {}

    def set_peers(self, peers: dict[int, Node]) -> None:
        """Replace the set of *other* live brokers (this broker's own id is ignored)."""
        self._peers = {i: n for i, n in peers.items() if i != self.broker_id}

    def set_remote_topics(self, topics: dict[str, dict[int, list[int]]]) -> None:
        """Replace the topics ZooKeeper knows: name -> partition -> replica ids (leader first)."""
        self._remote_topics = topics

    def remote_topic(self, name: str) -> dict[int, list[int]] | None:
        """Partition -> replicas of topic ``name`` as registered in ZooKeeper, or None."""
        return self._remote_topics.get(name)

    def remote_topic_names(self) -> list[str]:
        return sorted(self._remote_topics)

    @property
    def peers(self) -> dict[int, Node]:
        return dict(self._peers)

    def node_ids(self) -> list[int]:
        """Ids of every live broker, this one included, ascending."""
        return sorted({self.broker_id, *self._peers})

    def nodes(self, self_host: str, self_port: int) -> list[Node]:
        """Every live broker, this one at ``self_host:self_port``, in id order."""
        me = Node(self.broker_id, self_host, self_port)
        return sorted([me, *self._peers.values()], key=lambda n: n.node_id)

    def node(self, node_id: int, self_host: str, self_port: int) -> Node | None:
        """The broker ``node_id`` (this one at the given address), or None if it is not live."""
        if node_id == self.broker_id:
            return Node(node_id, self_host, self_port)
        return self._peers.get(node_id)

    def offsets_partition(self, group_id: str) -> int:
        """``partitionFor(group_id)`` over ``offsets_partitions`` (Java ``String.hashCode``)."""
        return _partition_for(group_id, self.offsets_partitions)

    def coordinator_id(self, group_id: str) -> int:
        """The id of the broker that coordinates ``group_id`` in the current view."""
        ids = self.node_ids()
        return ids[self.offsets_partition(group_id) % len(ids)]

    def is_coordinator(self, group_id: str) -> bool:
        if not self._peers:
            return True  # alone: every group is ours (the common case, no hashing)
        return self.coordinator_id(group_id) == self.broker_id
