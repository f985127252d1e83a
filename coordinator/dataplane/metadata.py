"""Metadata v0-12 and DescribeCluster v1-2: the brokers, and the topics a :class:`PartitionBackend` describes.

Metadata looks topics up by name (v10+ also by topic id, where the backend knows ids); an empty topic list is
every topic at v0 only. Unknown topics are auto-created when the broker allows it and the request does (v4+
``allow_auto_topic_creation``). The brokers listed are the live ones when the answer is made (after an
auto-creation, if any), this broker at the address the client connected through; this broker is named
controller (every broker creates topics, so clients' admin requests may come here). DescribeCluster v0 trips a
kafka-python bug, so it is not advertised.
"""

from __future__ import annotations

import inspect
from collections.abc import Awaitable
from typing import Any

from kio.schema.errors import ErrorCode

from coordinator.api_keys import ApiKey
from coordinator.cluster import ClusterView
from coordinator.config import BrokerConfig
from coordinator.context import RequestContext
from coordinator.dataplane.backend import ZERO_UUID, PartitionBackend, TopicMeta, TopicRef
from coordinator.wire import ZERO_TD, make, nested, response_class

__all__ = ["NO_AUTH_OPS", "DescribeClusterApi", "MetadataApi"]

#: Authorized operations not asked for (Kafka's ``Int.MinValue``).
NO_AUTH_OPS = -(2**31)


class MetadataApi:
    """The Metadata handler over a partition backend."""

    def __init__(self, config: BrokerConfig, cluster: ClusterView, backend: PartitionBackend) -> None:
        self.config = config
        self.cluster = cluster
        self.backend = backend

    def __call__(self, ctx: RequestContext, req: Any) -> Any:
        wanted = req.topics
        if ctx.api_version == 0 and not wanted:
            wanted = None  # v0: an empty list means every topic
        refs = (
            None
            if wanted is None
            else [TopicRef(getattr(rt, "name", None), getattr(rt, "topic_id", None)) for rt in wanted]
        )
        allow_auto = self.config.auto_create_topics and getattr(req, "allow_auto_topic_creation", True)
        found = self.backend.describe_topics(refs, allow_auto)
        if inspect.isawaitable(found):
            return self._later(ctx, found)
        return self._answer(ctx, found)

    async def _later(self, ctx: RequestContext, found: Awaitable[list[TopicMeta]]) -> Any:
        return self._answer(ctx, await found)

    def _answer(self, ctx: RequestContext, topics: list[TopicMeta]) -> Any:
        cls = response_class(ApiKey.METADATA, ctx.api_version)
        broker_cls = nested(cls, "brokers")
        topic_cls = nested(cls, "topics")
        part_cls = nested(topic_cls, "partitions")
        brokers = tuple(
            make(broker_cls, node_id=n.node_id, host=n.host, port=n.port, rack=None)
            for n in self.cluster.nodes(ctx.advertised_host, ctx.advertised_port)
        )
        encoded = tuple(
            make(
                topic_cls,
                error_code=t.error,
                name=t.name if t.name is not None else ("" if ctx.api_version < 12 else None),
                topic_id=t.topic_id if t.topic_id is not None else ZERO_UUID,
                is_internal=t.is_internal,
                partitions=tuple(
                    make(
                        part_cls,
                        error_code=p.error,
                        partition_index=p.index,
                        leader_id=p.leader,
                        leader_epoch=p.leader_epoch,
                        replica_nodes=p.replicas,
                        isr_nodes=p.isr,
                        offline_replicas=p.offline,
                    )
                    for p in t.partitions
                ),
                topic_authorized_operations=NO_AUTH_OPS,
            )
            for t in topics
        )
        return make(
            cls,
            throttle_time=ZERO_TD,
            brokers=brokers,
            cluster_id=self.config.cluster_id,
            controller_id=self.config.broker_id,
            topics=encoded,
            cluster_authorized_operations=NO_AUTH_OPS,
            error_code=ErrorCode.none,
        )


class DescribeClusterApi:
    """The DescribeCluster handler: the live brokers, broker endpoints only."""

    def __init__(self, config: BrokerConfig, cluster: ClusterView) -> None:
        self.config = config
        self.cluster = cluster

    def __call__(self, ctx: RequestContext, req: Any) -> Any:
        cls = response_class(ApiKey.DESCRIBE_CLUSTER, ctx.api_version)
        broker_cls = nested(cls, "brokers")
        brokers = tuple(
            make(broker_cls, broker_id=n.node_id, host=n.host, port=n.port, rack=None, is_fenced=False)
            for n in self.cluster.nodes(ctx.advertised_host, ctx.advertised_port)
        )
        if getattr(req, "endpoint_type", 1) != 1:
            return make(
                cls,
                throttle_time=ZERO_TD,
                error_code=ErrorCode.unsupported_endpoint_type,
                error_message="only broker endpoints",
                cluster_id=self.config.cluster_id,
                brokers=(),
                endpoint_type=req.endpoint_type,
            )
        return make(
            cls,
            throttle_time=ZERO_TD,
            error_code=ErrorCode.none,
            error_message=None,
            cluster_id=self.config.cluster_id,
            controller_id=self.config.broker_id,
            brokers=brokers,
            endpoint_type=1,
        )
