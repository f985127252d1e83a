"""ListOffsets v1-7 over a :class:`PartitionBackend`.

Timestamp -1 is the latest offset (the high watermark), -2 the earliest, -3 the record with the largest
timestamp, any other timestamp >= 0 the first batch whose max timestamp is >= it (batch granularity); other
negative timestamps are INVALID_REQUEST. A consumer finds only records below the high watermark (unreplicated
logs: the log end, so nothing is cut there); none found is timestamp and offset -1.
"""

from __future__ import annotations

from typing import Any

from kio.schema.errors import ErrorCode

from coordinator.api_keys import ApiKey
from coordinator.context import RequestContext
from coordinator.dataplane.backend import PartitionBackend
from coordinator.partition_log import PartitionLog
from coordinator.wire import ZERO_TD, make, nested, response_class

__all__ = ["ListOffsetsApi", "lookup"]

LATEST, EARLIEST, MAX_TIMESTAMP = -1, -2, -3


def lookup(plog: PartitionLog, timestamp: int) -> tuple[ErrorCode, int, int]:
    """(error, timestamp, offset) that ListOffsets answers for ``timestamp`` in ``plog`` (see the module
    docstring)."""
    ts, offset = -1, -1
    if timestamp == LATEST:
        return ErrorCode.none, -1, plog.hw
    if timestamp == EARLIEST:
        return ErrorCode.none, -1, plog.log_start_offset
    if timestamp < 0 and timestamp != MAX_TIMESTAMP:
        return ErrorCode.invalid_request, -1, -1
    found = plog.max_timestamp() if timestamp == MAX_TIMESTAMP else plog.offset_for_timestamp(timestamp)
    if found is not None:
        ts, offset = found
    if offset >= plog.hw:
        ts, offset = -1, -1  # only committed records are found
    return ErrorCode.none, ts, offset


class ListOffsetsApi:
    """The ListOffsets handler."""

    def __init__(self, backend: PartitionBackend) -> None:
        self.backend = backend

    def __call__(self, ctx: RequestContext, req: Any) -> Any:
        cls = response_class(ApiKey.LIST_OFFSETS, ctx.api_version)
        topic_cls = nested(cls, "topics")
        part_cls = nested(topic_cls, "partitions")
        topics = []
        for rt in req.topics:
            parts = []
            for rp in rt.partitions:
                error, plog = self.backend.offsets_log(
                    rt.name, rp.partition_index, getattr(rp, "current_leader_epoch", -1)
                )
                ts, offset = -1, -1
                if error is ErrorCode.none and plog is not None:
                    error, ts, offset = lookup(plog, rp.timestamp)
                parts.append(
                    make(
                        part_cls,
                        partition_index=rp.partition_index,
                        error_code=error,
                        timestamp=ts,
                        offset=offset,
                        leader_epoch=0 if plog is not None else -1,
                    )
                )
            topics.append(make(topic_cls, name=rt.name, partitions=tuple(parts)))
        return make(cls, throttle_time=ZERO_TD, topics=tuple(topics))
