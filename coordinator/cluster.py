"""Who is in the cluster and which broker coordinates which group. Pure; fed by :mod:`coordinator.zookeeper.registration`.

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

Replicated mode (``replicated=True``; the ZooKeeper shell feeds it on the event loop thread):

* :meth:`ClusterView.set_partition_info` receives every partition state the shell reads from
  ``/brokers/topics/<t>/partitions/<p>/state`` (all topics, ``__consumer_offsets`` included) with the replica
  list of ``/brokers/topics/<t>`` as :class:`PartitionInfo`; :meth:`partition_info`,
  :meth:`topic_partitions` and :meth:`topic_names` read them back (Metadata's leaders and ISRs).
* The coordinator of a group is the *leader of its offsets partition* ``partitionFor(group)`` as the state
  znode says (0.9 ``GroupCoordinator.partitionFor`` + ``MetadataCache`` leader; FindCoordinator answers it):
  :meth:`coordinator_id` is None while that partition has no leader (leader -1 or no state yet). When the
  offsets topic itself is unknown, :meth:`coordinator_id` calls ``on_missing_offsets_topic`` (the shell's
  ``ensure_offsets_topic``, 0.9's ``createOffsetsTopic`` on the first ConsumerMetadata/FindCoordinator) once;
  ``offsets_topic_requested`` records that it did (the hook may clear it to be called again after a failure).
* :meth:`is_coordinator` keeps its meaning: :meth:`coordinator_id` is this broker.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from functools import lru_cache

from coordinator.ports import OFFSETS_TOPIC
from harness.kernel.javacompat import partition_for

__all__ = ["ClusterView", "Node", "PartitionInfo"]

_partition_for = lru_cache(maxsize=100_000)(partition_for)


@dataclass(frozen=True, slots=True)
class Node:
    """A broker as Metadata lists it."""

    node_id: int
    host: str
    port: int


@dataclass(frozen=True, slots=True)
class PartitionInfo:
    """A partition as its state znode and assignment say: ``leader`` (-1: none), ``leader_epoch``, the
    assigned ``replicas`` (preferred leader first) and the ``isr``."""

    leader: int
    leader_epoch: int
    replicas: tuple[int, ...]
    isr: tuple[int, ...]


class ClusterView:
    """This broker plus the peers ZooKeeper reported (and, replicated, every partition's leader and ISR)."""

    def __init__(self, broker_id: int, offsets_partitions: int = 50, *, replicated: bool = False) -> None:
        self.broker_id = broker_id
        self.offsets_partitions = offsets_partitions
        self.replicated = replicated
        self._peers: dict[int, Node] = {}
        self._remote_topics: dict[str, dict[int, list[int]]] = {}
        self._partitions: dict[str, dict[int, PartitionInfo]] = {}
        #: Replicated mode: called (once) by :meth:`coordinator_id` when the offsets topic is unknown.
        self.on_missing_offsets_topic: Callable[[], None] | None = None
        self.offsets_topic_requested = False

    def set_partition_info(self, topic: str, partition: int, info: PartitionInfo) -> None:
        """Record the state of ``topic``/``partition`` (replicated mode; the ZooKeeper shell calls it)."""
        self._partitions.setdefault(topic, {})[partition] = info

    def partition_info(self, topic: str, partition: int) -> PartitionInfo | None:
        """The last recorded state of ``topic``/``partition``, or None."""
        return self._partitions.get(topic, {}).get(partition)

    def topic_partitions(self, topic: str) -> dict[int, PartitionInfo] | None:
        """Partition -> state of every recorded partition of ``topic`` (a copy), or None when none is known."""
        parts = self._partitions.get(topic)
        return dict(parts) if parts else None

    def topic_names(self) -> list[str]:
        """The topics with at least one recorded partition state, sorted."""
        return sorted(t for t, parts in self._partitions.items() if parts)

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

    def node(self, node_id: int | None, self_host: str, self_port: int) -> Node | None:
        """The broker ``node_id`` (this one at the given address), or None if it is not live or ``node_id`` is
        None (no coordinator: FindCoordinator answers COORDINATOR_NOT_AVAILABLE)."""
        if node_id is None:
            return None
        if node_id == self.broker_id:
            return Node(node_id, self_host, self_port)
        return self._peers.get(node_id)

    def offsets_partition(self, group_id: str) -> int:
        """``partitionFor(group_id)`` over ``offsets_partitions`` (Java ``String.hashCode``)."""
        return _partition_for(group_id, self.offsets_partitions)

    def coordinator_id(self, group_id: str) -> int | None:
        """The id of the broker that coordinates ``group_id`` in the current view (replicated: the leader of its
        offsets partition, None while it has none). Never None without replication."""
        if self.replicated:
            parts = self._partitions.get(OFFSETS_TOPIC)
            if not parts:
                if not self.offsets_topic_requested and self.on_missing_offsets_topic is not None:
                    self.offsets_topic_requested = True
                    self.on_missing_offsets_topic()
                return None
            info = parts.get(self.offsets_partition(group_id))
            return info.leader if info is not None and info.leader >= 0 else None
        ids = self.node_ids()
        return ids[self.offsets_partition(group_id) % len(ids)]

    def is_coordinator(self, group_id: str) -> bool:
        if self.replicated:
            return self.coordinator_id(group_id) == self.broker_id
        if not self._peers:
            return True  # alone: every group is ours (the common case, no hashing)
        return self.coordinator_id(group_id) == self.broker_id
