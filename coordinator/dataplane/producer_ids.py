"""InitProducerId v0-4: idempotent producers only (transactional ids get TRANSACTIONAL_ID_AUTHORIZATION_FAILED);
producer ids are unique across restarts and brokers."""

from __future__ import annotations

import time
from typing import Any

from kio.schema.errors import ErrorCode

from coordinator.api_keys import ApiKey
from coordinator.config import BrokerConfig
from coordinator.context import RequestContext
from coordinator.wire import ZERO_TD, make, response_class

__all__ = ["InitProducerIdApi"]


class InitProducerIdApi:
    """The InitProducerId handler; a known producer (id and epoch given) gets its epoch bumped."""

    def __init__(self, config: BrokerConfig) -> None:
        self.config = config
        self._pid_time = 0

    def __call__(self, ctx: RequestContext, req: Any) -> Any:
        cls = response_class(ApiKey.INIT_PRODUCER_ID, ctx.api_version)
        if req.transactional_id is not None:
            return make(
                cls,
                throttle_time=ZERO_TD,
                error_code=ErrorCode.transactional_id_authorization_failed,
                producer_id=-1,
                producer_epoch=-1,
            )
        pid = getattr(req, "producer_id", -1)
        epoch = getattr(req, "producer_epoch", -1)
        if pid >= 0 and 0 <= epoch < 32766:
            return make(
                cls,
                throttle_time=ZERO_TD,
                error_code=ErrorCode.none,
                producer_id=pid,
                producer_epoch=epoch + 1,
            )
        return make(
            cls,
            throttle_time=ZERO_TD,
            error_code=ErrorCode.none,
            producer_id=self.next_producer_id(),
            producer_epoch=0,
        )

    def next_producer_id(self) -> int:
        """A producer id no earlier run and no other broker handed out.

        ``(microseconds since the epoch, strictly increasing) << 8 | broker_id & 0xff``: a
        restarted broker cannot reissue an id whose sequence numbers its logs remember (which
        would make a new producer's first batches look like duplicates and drop them).
        """
        self._pid_time = max(self._pid_time + 1, time.time_ns() // 1000)
        return (self._pid_time << 8) | (self.config.broker_id & 0xFF)
