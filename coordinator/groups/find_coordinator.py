"""FindCoordinator v0-4, answered from the :class:`~coordinator.cluster.ClusterView` (the group types do not model
it): group keys only (key type 0; others COORDINATOR_NOT_AVAILABLE), a coordinator that is not live is
COORDINATOR_NOT_AVAILABLE. v4 batches keys."""

from __future__ import annotations

from typing import Any

from kio.schema.errors import ErrorCode as KioError

from coordinator.api_keys import ApiKey
from coordinator.cluster import ClusterView
from coordinator.context import RequestContext
from coordinator.wire import ZERO_TD, make, nested, response_class

__all__ = ["FindCoordinatorApi"]


class FindCoordinatorApi:
    """The FindCoordinator handler."""

    def __init__(self, cluster: ClusterView) -> None:
        self.cluster = cluster

    def __call__(self, ctx: RequestContext, req: Any) -> Any:
        cls = response_class(ApiKey.FIND_COORDINATOR, ctx.api_version)
        if ctx.api_version >= 4:
            coord_cls = nested(cls, "coordinators")
            coords = []
            for key in req.coordinator_keys:
                error, node_id, host, port, message = self._coordinator_for(ctx, req.key_type, key)
                coords.append(
                    make(
                        coord_cls,
                        key=key,
                        node_id=node_id,
                        host=host,
                        port=port,
                        error_code=error,
                        error_message=message,
                    )
                )
            return make(cls, throttle_time=ZERO_TD, coordinators=tuple(coords))
        error, node_id, host, port, message = self._coordinator_for(ctx, getattr(req, "key_type", 0), req.key)
        return make(
            cls,
            throttle_time=ZERO_TD,
            error_code=error,
            error_message=message,
            node_id=node_id,
            host=host,
            port=port,
        )

    def _coordinator_for(
        self, ctx: RequestContext, key_type: int, key: str
    ) -> tuple[KioError, int, str, int, str | None]:
        if key_type != 0:
            return KioError.coordinator_not_available, -1, "", -1, "only group coordinators are served"
        node = self.cluster.node(self.cluster.coordinator_id(key), ctx.advertised_host, ctx.advertised_port)
        if node is None:
            return KioError.coordinator_not_available, -1, "", -1, "coordinator not live"
        return KioError.none, node.node_id, node.host, node.port, None
