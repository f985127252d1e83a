"""Produce v3-9 over a :class:`PartitionBackend`.

One magic-2 batch per partition, validated as Kafka's ``LogValidator`` does (see
:func:`coordinator.records.validate_produce`): an inconsistent or empty offset range, a control batch, several
batches, a base offset other than 0 are INVALID_RECORD, framing or CRC damage CORRUPT_MESSAGE, and nothing of
that partition is appended; acks other than 0, 1, -1 are INVALID_REQUIRED_ACKS. Transactional producers are not
supported (their batches are stored like any other). A produce with acks=0 that fails for any partition closes
the connection (Kafka's ``KafkaApis.handleProduceRequest``: the producer has no response to learn from, so it
sees the close and refreshes its metadata); one that succeeds has no response.
"""

from __future__ import annotations

import asyncio
import inspect
from collections.abc import Awaitable
from typing import Any

from kio.schema.errors import ErrorCode

from coordinator.api_keys import ApiKey
from coordinator.context import RequestContext
from coordinator.dataplane.backend import PartitionBackend, Produced
from coordinator.wire import ZERO_TD, CloseConnection, make, milliseconds, nested, response_class

__all__ = ["ProduceApi"]

_Outcome = Produced | Awaitable[Produced]


class ProduceApi:
    """The Produce handler: the response now, an awaitable of it (a partition waits for its replicas), or None
    (acks=0)."""

    def __init__(self, backend: PartitionBackend) -> None:
        self.backend = backend

    def __call__(self, ctx: RequestContext, req: Any) -> Any:
        acks = req.acks
        timeout_ms = milliseconds(req.timeout)
        outcomes: list[tuple[str, list[tuple[int, _Outcome]]]] = []
        for td in req.topic_data:
            parts: list[tuple[int, _Outcome]] = []
            for pd in td.partition_data:
                outcome: _Outcome
                if acks not in (0, 1, -1):
                    outcome = Produced(ErrorCode.invalid_required_acks, -1, -1)
                else:
                    outcome = self.backend.produce(td.name, pd.index, pd.records, acks, timeout_ms)
                parts.append((pd.index, outcome))
            outcomes.append((td.name, parts))
        if acks == 0:
            failed = [
                f"{name}-{index}: {o.error.name}"
                for name, parts in outcomes
                for index, o in parts
                if isinstance(o, Produced) and o.error is not ErrorCode.none
            ]
            if failed:
                # KafkaApis.handleProduceRequest: no response to carry the error, so close the connection.
                raise CloseConnection(f"produce_error: acks=0 produce failed ({', '.join(failed)})")
            return None
        waiting = [o for _n, parts in outcomes for _i, o in parts if inspect.isawaitable(o)]
        if not waiting:
            return self._answer(ctx, outcomes, {})
        return self._later(ctx, outcomes, waiting)

    async def _later(
        self, ctx: RequestContext, outcomes: list[tuple[str, list[tuple[int, _Outcome]]]], waiting: list[Any]
    ) -> Any:
        done = await asyncio.gather(*waiting)
        return self._answer(ctx, outcomes, {id(w): d for w, d in zip(waiting, done, strict=True)})

    @staticmethod
    def _answer(
        ctx: RequestContext, outcomes: list[tuple[str, list[tuple[int, _Outcome]]]], done: dict[int, Produced]
    ) -> Any:
        cls = response_class(ApiKey.PRODUCE, ctx.api_version)
        topic_cls = nested(cls, "responses")
        part_cls = nested(topic_cls, "partition_responses")
        responses = []
        for name, parts in outcomes:
            out = []
            for index, outcome in parts:
                p = outcome if isinstance(outcome, Produced) else done[id(outcome)]
                out.append(
                    make(
                        part_cls,
                        index=index,
                        error_code=p.error,
                        base_offset=p.base_offset,
                        log_append_time=None,
                        log_start_offset=p.log_start_offset,
                        record_errors=(),
                        error_message=None,
                    )
                )
            responses.append(make(topic_cls, name=name, partition_responses=tuple(out)))
        return make(cls, responses=tuple(responses), throttle_time=ZERO_TD)
