"""CreateTopics v2-7 and CreatePartitions v0-3 over a :class:`PartitionBackend` (which decides what can be
created: see :mod:`coordinator.dataplane.local` and :mod:`coordinator.dataplane.replicated`)."""

from __future__ import annotations

import inspect
from collections.abc import Awaitable
from typing import Any

from kio.schema.errors import ErrorCode

from coordinator.api_keys import ApiKey
from coordinator.context import RequestContext
from coordinator.dataplane.backend import CreatedTopic, PartitionBackend
from coordinator.wire import ZERO_TD, make, nested, response_class

__all__ = ["CreatePartitionsApi", "CreateTopicsApi"]


class CreateTopicsApi:
    """The CreateTopics handler: one answer per requested topic, in order; configs are not reported."""

    def __init__(self, backend: PartitionBackend) -> None:
        self.backend = backend

    def __call__(self, ctx: RequestContext, req: Any) -> Any:
        created = self.backend.create_topics(req.topics, req.validate_only)
        if inspect.isawaitable(created):
            return self._later(ctx, created)
        return self._answer(ctx, created)

    async def _later(self, ctx: RequestContext, created: Awaitable[list[CreatedTopic]]) -> Any:
        return self._answer(ctx, await created)

    @staticmethod
    def _answer(ctx: RequestContext, created: list[CreatedTopic]) -> Any:
        cls = response_class(ApiKey.CREATE_TOPICS, ctx.api_version)
        topic_cls = nested(cls, "topics")
        topics = tuple(
            make(
                topic_cls,
                name=c.name,
                error_code=c.error,
                error_message=c.message,
                topic_id=c.topic_id,
                num_partitions=c.num_partitions,
                replication_factor=c.replication_factor,
                configs=() if c.error is ErrorCode.none else None,
            )
            for c in created
        )
        return make(cls, throttle_time=ZERO_TD, topics=topics)


class CreatePartitionsApi:
    """The CreatePartitions handler: one result per requested topic, in order."""

    def __init__(self, backend: PartitionBackend) -> None:
        self.backend = backend

    def __call__(self, ctx: RequestContext, req: Any) -> Any:
        cls = response_class(ApiKey.CREATE_PARTITIONS, ctx.api_version)
        result_cls = nested(cls, "results")
        results = tuple(
            make(result_cls, name=name, error_code=error, error_message=message)
            for name, error, message in self.backend.create_partitions(req.topics, req.validate_only)
        )
        return make(cls, throttle_time=ZERO_TD, results=results)
