"""ApiKey: Kafka's ids and display names; every served API has a handler and a name."""

from __future__ import annotations

from coordinator.api_keys import ApiKey
from coordinator.config import BrokerConfig
from coordinator.server import API_NAMES, SERVED_VERSIONS, Broker


def test_ids_and_titles_are_kafkas() -> None:
    # ApiKeys.java: JOIN_GROUP(11, "JoinGroup"), INIT_PRODUCER_ID(22, "InitProducerId"), ...
    assert (ApiKey.JOIN_GROUP, ApiKey.JOIN_GROUP.title) == (11, "JoinGroup")
    assert (ApiKey.INIT_PRODUCER_ID, ApiKey.INIT_PRODUCER_ID.title) == (22, "InitProducerId")
    assert (ApiKey.API_VERSIONS, ApiKey.API_VERSIONS.title) == (18, "ApiVersions")
    assert (ApiKey.DELETE_GROUPS, ApiKey.DELETE_GROUPS.title) == (42, "DeleteGroups")
    assert (ApiKey.DESCRIBE_CLUSTER, ApiKey.DESCRIBE_CLUSTER.title) == (60, "DescribeCluster")


def test_every_served_api_has_a_handler_and_a_name() -> None:
    broker = Broker(BrokerConfig(port=0))
    assert set(broker.handlers) == set(SERVED_VERSIONS)
    assert all(API_NAMES.get(k) for k in SERVED_VERSIONS)
