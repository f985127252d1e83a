"""``zookeeper.servers = 3`` on the containers backend, without an engine: the cluster spec makes a
containers cluster that will run an ensemble; one server stays one container."""

from __future__ import annotations

import pytest

from harness.cluster.base import ClusterSpec, make_cluster
from harness.cluster.containers import ContainersCluster


def test_three_zookeeper_servers_make_a_containers_cluster_with_an_ensemble_and_one_stays_one() -> None:
    three = make_cluster(ClusterSpec(backend="containers", zookeeper_servers=3))
    one = make_cluster(ClusterSpec(backend="containers"))
    assert isinstance(three, ContainersCluster) and isinstance(one, ContainersCluster)
    assert (three.zookeeper_servers, one.zookeeper_servers) == (3, 1)
    # the ensemble exists once started; before that neither cluster has one
    assert three.zookeeper_ensemble is None and one.zookeeper_ensemble is None


def test_no_zookeeper_server_is_refused() -> None:
    with pytest.raises(ValueError, match="at least 1"):
        ContainersCluster(zookeeper_servers=0)
