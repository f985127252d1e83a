"""The data-plane APIs: topics, records, offsets of partitions, producer ids.

One module per API family, each over one :class:`~coordinator.dataplane.backend.PartitionBackend`:

* :mod:`~coordinator.dataplane.metadata` -- Metadata v0-12, DescribeCluster v1-2;
* :mod:`~coordinator.dataplane.topics` -- CreateTopics v2-7, CreatePartitions v0-3;
* :mod:`~coordinator.dataplane.produce` -- Produce v3-9;
* :mod:`~coordinator.dataplane.fetch` -- Fetch v4-12 (long-polls);
* :mod:`~coordinator.dataplane.list_offsets` -- ListOffsets v1-7;
* :mod:`~coordinator.dataplane.producer_ids` -- InitProducerId v0-4.

The backend is :class:`~coordinator.dataplane.local.LocalBackend` (one replica) or, with
``replication.enabled``, :class:`~coordinator.dataplane.replicated.ReplicatedBackend`; each module's docstring
says what its backend decides. Each handler takes the :class:`~coordinator.context.RequestContext` and the kio
request body and returns a kio response of the same version, an awaitable of one (Fetch long-polls, a Produce
waits for replicas, a topic is created through ZooKeeper), or None (Produce with acks=0 has no response).
Handlers validate everything before they change anything, so a bad request never leaves a half-applied change.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from coordinator.api_keys import ApiKey
from coordinator.cluster import ClusterView
from coordinator.config import BrokerConfig
from coordinator.context import RequestContext
from coordinator.dataplane.backend import PartitionBackend
from coordinator.dataplane.fetch import FetchApi, FetchWaiters
from coordinator.dataplane.list_offsets import ListOffsetsApi
from coordinator.dataplane.metadata import DescribeClusterApi, MetadataApi
from coordinator.dataplane.produce import ProduceApi
from coordinator.dataplane.producer_ids import InitProducerIdApi
from coordinator.dataplane.topics import CreatePartitionsApi, CreateTopicsApi
from coordinator.topics import TopicStore

__all__ = ["DATA_VERSIONS", "DataPlane"]

#: API key -> (min, max) served by :class:`DataPlane` (also what ApiVersions advertises).
DATA_VERSIONS: dict[int, tuple[int, int]] = {
    ApiKey.PRODUCE: (3, 9),
    ApiKey.FETCH: (4, 12),
    ApiKey.LIST_OFFSETS: (1, 7),
    ApiKey.METADATA: (0, 12),
    ApiKey.CREATE_TOPICS: (2, 7),
    ApiKey.INIT_PRODUCER_ID: (0, 4),
    ApiKey.CREATE_PARTITIONS: (0, 3),
    ApiKey.DESCRIBE_CLUSTER: (1, 2),
}


class DataPlane:
    """The data-plane handlers over one :class:`TopicStore` and one partition backend.

    Every partition log of the store, present and future, wakes the fetches long-polling on it."""

    def __init__(
        self, config: BrokerConfig, store: TopicStore, cluster: ClusterView, backend: PartitionBackend
    ) -> None:
        self.backend = backend
        self.waiters = FetchWaiters()
        waiters = self.waiters
        store.on_new_log = lambda _t, _i, plog: setattr(plog, "listener", waiters.listener_for(plog))
        for topic in store:
            for plog in topic.partitions:
                plog.listener = waiters.listener_for(plog)
        self._handlers: dict[int, Callable[[RequestContext, Any], Any]] = {
            ApiKey.PRODUCE: ProduceApi(backend),
            ApiKey.FETCH: FetchApi(backend, self.waiters),
            ApiKey.LIST_OFFSETS: ListOffsetsApi(backend),
            ApiKey.METADATA: MetadataApi(config, cluster, backend),
            ApiKey.CREATE_TOPICS: CreateTopicsApi(backend),
            ApiKey.INIT_PRODUCER_ID: InitProducerIdApi(config),
            ApiKey.CREATE_PARTITIONS: CreatePartitionsApi(backend),
            ApiKey.DESCRIBE_CLUSTER: DescribeClusterApi(config, cluster),
        }

    def handlers(self) -> dict[int, Callable[[RequestContext, Any], Any]]:
        """API key -> handler, for every key of :data:`DATA_VERSIONS`."""
        return dict(self._handlers)
