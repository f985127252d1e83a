"""What a request handler knows about the connection a request came from."""

from __future__ import annotations

from dataclasses import dataclass

__all__ = ["RequestContext"]


@dataclass(slots=True)
class RequestContext:
    """Per-request facts a handler may use.

    ``advertised_host`` / ``advertised_port`` is the address the client connected through (see
    :class:`coordinator.config.BrokerConfig`): handlers put it in Metadata, FindCoordinator and
    DescribeCluster so the client keeps using that path. ``client_host`` is the peer address
    (``/127.0.0.1`` style, as Kafka reports it in DescribeGroups).
    """

    api_key: int
    api_version: int
    correlation_id: int
    client_id: str | None
    client_host: str
    advertised_host: str
    advertised_port: int
