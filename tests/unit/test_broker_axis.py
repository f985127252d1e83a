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
