"""The run session without its terminal: what ``prepare`` refuses, loads and counts (nothing is run)."""

from __future__ import annotations

from pathlib import Path

import pytest

from harness.kernel.errors import ConfigError
from harness.run.runner import RunResult
from harness.run.session import SessionRequest, failed_units, prepare


@pytest.mark.parametrize(
    ("req", "message"),
    [
        (
            SessionRequest("herd-small", zookeeper="127.0.0.1:2181"),
            "--zookeeper and --bootstrap need --backend external",
        ),
        (
            SessionRequest("herd-small", backend="containers", bootstrap="127.0.0.1:9092"),
            "--zookeeper and --bootstrap need --backend external",
        ),
        (
            SessionRequest("herd-small", kafka_image="confluentinc/cp-kafka:7.6.1"),
            "--members-in-containers, --kafka-image and --image-prefix need --backend containers",
        ),
        (
            SessionRequest("herd-small", backend="external", members_in_containers=True),
            "--members-in-containers, --kafka-image and --image-prefix need --backend containers",
        ),
    ],
)
def test_backend_options_for_another_backend_are_refused_in_one_line(
    tmp_path: Path, req: SessionRequest, message: str
) -> None:
    out = tmp_path / "reports"
    with pytest.raises(ConfigError) as e:
        prepare(SessionRequest(**{**req.__dict__, "out": out}))
    assert str(e.value) == message
    assert not out.exists()


def test_a_bad_override_is_the_scenario_loaders_one_line_error(tmp_path: Path) -> None:
    with pytest.raises(ConfigError, match="group.members") as e:
        prepare(SessionRequest("herd-small", ("group.members=many",), out=tmp_path / "r"))
    assert "\n" not in str(e.value)
    assert not (tmp_path / "r").exists()


def test_units_are_cases_times_repetitions_times_columns(tmp_path: Path) -> None:
    # herd-small: group.members = [4, 8] (two cases), both implementations; 3 repetitions
    s = prepare(SessionRequest("herd-small", ("repetitions=3",), out=tmp_path))
    assert s.total_units == 2 * 3 * 2
    assert (s.options.backend, s.options.out, s.options.progress) == ("local", tmp_path, None)
    # Apache Kafka is a broker value, not a column: --kafka-image only names its image
    s = prepare(
        SessionRequest(
            "herd-small",
            ("repetitions=3", "cluster.broker=apache-kafka", 'implementations=["coordinator"]'),
            backend="containers",
            kafka_image="apache/kafka:3.9.1",
            image_prefix="x/",
        )
    )
    assert s.total_units == 2 * 3 * 1
    assert s.options.containers.kafka_image == "apache/kafka:3.9.1"
    assert s.options.containers.images.zookeeper.startswith("x/zookeeper:")
    # ... and means nothing without an apache-kafka case
    with pytest.raises(
        ConfigError, match="--kafka-image needs a scenario with cluster.broker = 'apache-kafka'"
    ):
        prepare(SessionRequest("herd-small", backend="containers", kafka_image="apache/kafka:3.9.1"))


def test_failed_units_are_those_with_a_failure_message(tmp_path: Path) -> None:
    r = RunResult(tmp_path, "r1", units=[{"unit": "a"}, {"unit": "b", "failed": "boom"}, {"unit": "c"}])
    assert failed_units(r) == [{"unit": "b", "failed": "boom"}]
