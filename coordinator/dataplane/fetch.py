"""Fetch v4-12 over a :class:`PartitionBackend`, with long-polling.

No incremental fetch sessions: a request naming a session (v7+: id other than 0, or epoch other than 0 / -1)
is FETCH_SESSION_ID_NOT_FOUND / INVALID_FETCH_SESSION_EPOCH, and every answer has session id 0, which clients
treat as "sessionless". The response's ``max_bytes`` is spent in request order; once it is spent a partition's
offset is only checked. A fetch with fewer than ``min_bytes`` and no error waits up to ``max_wait`` (at most
:data:`MAX_FETCH_WAIT_MS`) for an append to a log it read, then answers what it finds.
"""

from __future__ import annotations

import asyncio
from collections.abc import Callable
from typing import Any

from kio.schema.errors import ErrorCode

from coordinator.api_keys import ApiKey
from coordinator.context import RequestContext
from coordinator.dataplane.backend import PartitionBackend
from coordinator.partition_log import PartitionLog
from coordinator.wire import ZERO_TD, make, milliseconds, nested, response_class

__all__ = ["MAX_FETCH_WAIT_MS", "FetchApi", "FetchWaiters"]

#: Longest Fetch long-poll honoured (a bad max_wait must not park a request for days).
MAX_FETCH_WAIT_MS = 30_000


class FetchWaiters:
    """Futures of long-polling fetches, keyed by the partition log they wait on."""

    def __init__(self) -> None:
        self._waiting: dict[int, tuple[PartitionLog, set[asyncio.Future[None]]]] = {}

    def listener_for(self, plog: PartitionLog) -> Callable[[], None]:
        """The callback to install as ``plog.listener``: wakes every fetch waiting on ``plog``."""
        key = id(plog)

        def wake() -> None:
            entry = self._waiting.pop(key, None)
            if entry is None:
                return
            for fut in entry[1]:
                if not fut.done():
                    fut.set_result(None)

        return wake

    def add(self, plog: PartitionLog, fut: asyncio.Future[None]) -> None:
        entry = self._waiting.setdefault(id(plog), (plog, set()))
        entry[1].add(fut)

    def discard(self, plog: PartitionLog, fut: asyncio.Future[None]) -> None:
        entry = self._waiting.get(id(plog))
        if entry is not None:
            entry[1].discard(fut)
            if not entry[1]:
                del self._waiting[id(plog)]


class FetchApi:
    """The Fetch handler: the response now, or an awaitable of it (a long-poll)."""

    def __init__(self, backend: PartitionBackend, waiters: FetchWaiters) -> None:
        self.backend = backend
        self.waiters = waiters

    def __call__(self, ctx: RequestContext, req: Any) -> Any:
        cls = response_class(ApiKey.FETCH, ctx.api_version)
        if ctx.api_version >= 7 and (req.session_id != 0 or req.session_epoch not in (0, -1)):
            error = (
                ErrorCode.fetch_session_id_not_found
                if req.session_id != 0
                else ErrorCode.invalid_fetch_session_epoch
            )
            return make(cls, throttle_time=ZERO_TD, error_code=error, session_id=0, responses=())
        wait_ms = min(max(milliseconds(req.max_wait), 0), MAX_FETCH_WAIT_MS)
        response, nbytes, any_error, logs = self._fetch_once(req, cls)
        if nbytes >= req.min_bytes or wait_ms == 0 or any_error or not logs:
            return response
        return self._fetch_later(req, cls, wait_ms, logs)

    async def _fetch_later(self, req: Any, cls: type, wait_ms: int, logs: list[PartitionLog]) -> Any:
        loop = asyncio.get_running_loop()
        deadline = loop.time() + wait_ms / 1000.0
        while True:
            fut: asyncio.Future[None] = loop.create_future()
            for plog in logs:
                self.waiters.add(plog, fut)
            try:
                await asyncio.wait((fut,), timeout=max(0.0, deadline - loop.time()))
            finally:
                for plog in logs:
                    self.waiters.discard(plog, fut)
            response, nbytes, any_error, logs = self._fetch_once(req, cls)
            if nbytes >= req.min_bytes or any_error or not logs or loop.time() >= deadline:
                return response

    def _fetch_once(self, req: Any, cls: type) -> tuple[Any, int, bool, list[PartitionLog]]:
        """One pass over the requested partitions: (response, bytes, any error, logs read)."""
        topic_cls = nested(cls, "responses")
        part_cls = nested(topic_cls, "partitions")
        budget = req.max_bytes if req.max_bytes > 0 else 0
        total = 0
        any_error = False
        logs: list[PartitionLog] = []
        read_committed = req.isolation_level == 1
        responses = []
        replica_id = getattr(req, "replica_id", -1)
        for rt in req.topics:
            parts = []
            for rp in rt.partitions:
                read = self.backend.read(
                    rt.topic,
                    rp.partition,
                    rp.fetch_offset,
                    min(rp.partition_max_bytes, budget) if budget > 0 else None,
                    replica_id,
                    getattr(rp, "current_leader_epoch", -1),
                )
                if read.log is not None:
                    logs.append(read.log)
                budget -= len(read.records)
                total += len(read.records)
                any_error = any_error or read.error is not ErrorCode.none
                parts.append(
                    make(
                        part_cls,
                        partition_index=rp.partition,
                        error_code=read.error,
                        high_watermark=read.high_watermark,
                        last_stable_offset=read.high_watermark,
                        log_start_offset=read.log_start_offset,
                        aborted_transactions=() if read_committed else None,
                        preferred_read_replica=-1,
                        records=read.records,
                    )
                )
            responses.append(make(topic_cls, topic=rt.topic, partitions=tuple(parts)))
        response = make(
            cls, throttle_time=ZERO_TD, error_code=ErrorCode.none, session_id=0, responses=tuple(responses)
        )
        return response, total, any_error, logs
