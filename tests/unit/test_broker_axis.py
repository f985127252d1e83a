"""``cluster.broker`` as a run option: the one-line errors before anything starts (no cluster is started)."""

from __future__ import annotations

from pathlib import Path

import pytest

from harness.cluster.base import ClusterSpec, make_cluster
from harness.kernel.errors import ConfigError
from harness.run.session import SessionRequest, prepare

EXTERNAL = ('implementations=["coordinator"]', 'cluster.broker="external"')


def test_a_scenario_with_broker_external_and_no_bootstrap_is_a_one_line_error(tmp_path: Path) -> None:
    with pytest.raises(ConfigError) as e:
        prepare(SessionRequest("herd-small", EXTERNAL, out=tmp_path / "r"))
    assert str(e.value) == (
        "cluster.broker = 'external' needs --bootstrap HOST:PORT of the Kafka-compatible cluster"
    )
    assert not (tmp_path / "r").exists()  # nothing written


def test_a_matrix_case_with_broker_external_needs_bootstrap_too(tmp_path: Path) -> None:
    matrix = 'matrix={"cluster.broker"=["herdlab","external"]}'
    with pytest.raises(ConfigError, match="needs --bootstrap"):
        prepare(SessionRequest("herd-small", ('implementations=["coordinator"]', matrix), out=tmp_path))


def test_bootstrap_with_the_local_backend_still_needs_an_external_broker(tmp_path: Path) -> None:
    with pytest.raises(ConfigError, match="--zookeeper and --bootstrap need --backend external"):
        prepare(SessionRequest("herd-small", bootstrap="127.0.0.1:9", out=tmp_path))


def test_broker_external_on_the_containers_backend_is_refused(tmp_path: Path) -> None:
    with pytest.raises(ConfigError, match="needs --backend local or external"):
        prepare(SessionRequest("herd-small", EXTERNAL, backend="containers", out=tmp_path))


def test_the_external_broker_needs_an_address_whatever_the_backend() -> None:
    with pytest.raises(ConfigError, match="needs --bootstrap"):
        make_cluster(ClusterSpec(backend="local", broker="external"))


@pytest.mark.parametrize("broker", ["tansu", "apache-kafka"])
def test_broker_side_network_faults_need_herdlabs_broker(broker: str) -> None:
    # members reach a third-party broker at the address it advertises (its tap), not through their proxies
    from harness.scenario import load_scenario

    for action in (
        '{at="2s",action="cut",target="broker",duration="2s"}',
        '{at="2s",action="latency",target="broker",duration="2s",latency=50}',
    ):
        with pytest.raises(ConfigError, match="with target = 'broker' need cluster.broker = 'herdlab'"):
            load_scenario(
                "herd-small",
                ['implementations=["coordinator"]', f'cluster.broker="{broker}"', f"timeline=[{action}]"],
            )


def test_apache_kafka_with_members_in_containers_is_refused_in_one_line() -> None:
    with pytest.raises(ConfigError, match="runs its members on the host: drop --members-in-containers"):
        make_cluster(ClusterSpec(backend="containers", broker="apache-kafka", members_in_containers=True))


def test_kafka_image_and_kafka_home_need_an_apache_kafka_case(tmp_path: Path) -> None:
    with pytest.raises(ConfigError, match="--kafka-home is for the local backend"):
        prepare(
            SessionRequest(
                "herd-small",
                ('implementations=["coordinator"]', 'cluster.broker="apache-kafka"'),
                backend="containers",
                kafka_home=tmp_path,
                out=tmp_path / "r",
            )
        )
