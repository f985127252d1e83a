"""OffsetCommit v2-9 and OffsetFetch v1-9: kio requests in, the group type holding the group, kio responses out.

v9 of both: a consumer group's member commits with its member epoch in ``generation_id_or_member_epoch`` (a classic
group's member with its generation, as before) and fetches with its member id and epoch, which the group type
checks (a consumer group: STALE_MEMBER_EPOCH, UNKNOWN_MEMBER_ID; a classic group ignores them).

OffsetCommit answers unknown topics / partitions UNKNOWN_TOPIC_OR_PARTITION itself (KafkaApis does, before the
coordinator); only the rest reaches the group type, or gets NOT_COORDINATOR when the routing says so (an empty
group id is valid for commits). OffsetFetch v0-1 have no top-level error: it is reported on every requested
partition (v1) or copied into every partition (v0-1).
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from coordinator.api_keys import ApiKey
from coordinator.context import RequestContext
from coordinator.core.group import api as g
from coordinator.core.group.errors import ErrorCode
from coordinator.groups.codec import kio_error
from coordinator.groups.routing import Routing
from coordinator.groups.types import GroupTypes
from coordinator.topics import TopicStore
from coordinator.wire import ZERO_TD, make, nested, response_class

__all__ = ["OffsetCommitApi", "OffsetFetchApi"]


class OffsetCommitApi:
    """The OffsetCommit handler."""

    def __init__(
        self, types: GroupTypes, routing: Routing, store: TopicStore, known_topic: Callable[[str], bool]
    ) -> None:
        self.types = types
        self.routing = routing
        self.store = store
        self.known_topic = known_topic

    def __call__(self, ctx: RequestContext, req: Any) -> Any:
        cls = response_class(ApiKey.OFFSET_COMMIT, ctx.api_version)
        topic_cls = nested(cls, "topics")
        part_cls = nested(topic_cls, "partitions")
        # Request order, with the shell's own answers for unknown topics / partitions.
        order: list[tuple[str, int]] = []
        errors: dict[tuple[str, int], ErrorCode] = {}
        offsets: list[g.OffsetCommitPartition] = []
        for t in req.topics:
            topic = self.store.get(t.name)
            for p in t.partitions:
                key = (t.name, p.partition_index)
                order.append(key)
                known = (topic is not None and topic.partition(p.partition_index) is not None) or (
                    topic is None and self.known_topic(t.name)
                )
                if not known:
                    errors[key] = ErrorCode.UNKNOWN_TOPIC_OR_PARTITION
                    continue
                offsets.append(
                    g.OffsetCommitPartition(
                        topic=t.name,
                        partition=p.partition_index,
                        offset=p.committed_offset,
                        metadata=p.committed_metadata,
                        leader_epoch=getattr(p, "committed_leader_epoch", -1),
                    )
                )

        def convert(r: g.OffsetCommitResponse | None) -> Any:
            results = dict(errors)
            if r is not None:
                for pr in r.partitions:
                    results[(pr.topic, pr.partition)] = pr.error
            by_topic: dict[str, list[Any]] = {}
            for name, part in order:
                by_topic.setdefault(name, []).append(
                    make(
                        part_cls,
                        partition_index=part,
                        error_code=kio_error(results.get((name, part), ErrorCode.NONE)),
                    )
                )
            return make(
                cls,
                throttle_time=ZERO_TD,
                topics=tuple(make(topic_cls, name=n, partitions=tuple(ps)) for n, ps in by_topic.items()),
            )

        if self.routing.not_coordinator(req.group_id):  # "" is a valid group id for commits
            # KafkaApis answers unknown topics first; only the rest reaches the coordinator's checks.
            for key in order:
                errors.setdefault(key, ErrorCode.NOT_COORDINATOR)
            return convert(None)
        if not offsets:
            return convert(None)
        mreq = g.OffsetCommitRequest(
            group_id=req.group_id,
            offsets=offsets,
            generation_id=req.generation_id_or_member_epoch,
            member_id=req.member_id,
            group_instance_id=getattr(req, "group_instance_id", None),
            api_version=ctx.api_version,
        )
        return self.types.for_group(req.group_id).offset_commit(mreq, convert)


class OffsetFetchApi:
    """The OffsetFetch handler (v8+: several groups per request)."""

    def __init__(self, types: GroupTypes, routing: Routing) -> None:
        self.types = types
        self.routing = routing

    def _fetch_group(
        self,
        group_id: str,
        topics: Any,
        require_stable: bool,
        member_id: str | None = None,
        member_epoch: int = -1,
    ) -> g.OffsetFetchResponse:
        if self.routing.not_coordinator(group_id):
            return g.OffsetFetchResponse(ErrorCode.NOT_COORDINATOR)
        parts = None if topics is None else [(t.name, p) for t in topics for p in t.partition_indexes]
        request = g.OffsetFetchRequest(
            group_id=group_id,
            partitions=parts,
            require_stable=require_stable,
            member_id=member_id,
            member_epoch=member_epoch,
        )
        return self.types.for_group(group_id).offset_fetch(request)

    @staticmethod
    def _fetch_topics(topic_cls: type, r: g.OffsetFetchResponse, copy_error: bool) -> tuple[Any, ...]:
        part_cls = nested(topic_cls, "partitions")
        by_topic: dict[str, list[Any]] = {}
        for p in r.partitions:
            error = p.error
            if copy_error and r.error != ErrorCode.NONE:
                error = r.error
            by_topic.setdefault(p.topic, []).append(
                make(
                    part_cls,
                    partition_index=p.partition,
                    committed_offset=p.offset,
                    committed_leader_epoch=p.leader_epoch,
                    metadata=p.metadata,
                    error_code=kio_error(error),
                )
            )
        return tuple(make(topic_cls, name=n, partitions=tuple(ps)) for n, ps in by_topic.items())

    def __call__(self, ctx: RequestContext, req: Any) -> Any:
        cls = response_class(ApiKey.OFFSET_FETCH, ctx.api_version)
        v = ctx.api_version
        require_stable = getattr(req, "require_stable", False)
        if v >= 8:
            group_cls = nested(cls, "groups")
            topic_cls = nested(group_cls, "topics")
            groups = []
            for rg in req.groups:
                r = self._fetch_group(
                    rg.group_id,
                    rg.topics,
                    require_stable,
                    getattr(rg, "member_id", None),
                    getattr(rg, "member_epoch", -1),
                )
                groups.append(
                    make(
                        group_cls,
                        group_id=rg.group_id,
                        topics=self._fetch_topics(topic_cls, r, False),
                        error_code=kio_error(r.error),
                    )
                )
            return make(cls, throttle_time=ZERO_TD, groups=tuple(groups))
        topic_cls = nested(cls, "topics")
        r = self._fetch_group(req.group_id, req.topics, require_stable)
        if v == 1 and r.error != ErrorCode.NONE and not r.partitions and req.topics:
            # v0-1 have no top-level error: report it on every requested partition.
            r = g.OffsetFetchResponse(
                r.error,
                [
                    g.OffsetFetchPartition(t.name, p, -1, error=r.error)
                    for t in req.topics
                    for p in t.partition_indexes
                ],
            )
        return make(
            cls,
            throttle_time=ZERO_TD,
            error_code=kio_error(r.error),
            topics=self._fetch_topics(topic_cls, r, v < 2),
        )
