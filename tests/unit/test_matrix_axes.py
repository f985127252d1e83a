"""Matrix axes: a joint axis (several dotted keys, one list of values per combination), an axis that does
not apply to a case (``cluster.kafka_version`` off Apache Kafka) run once, and the built-in ``reference``
scenario that uses both. Pure: scenario loading and expansion only."""

from __future__ import annotations

import pytest

from harness.kernel.errors import ConfigError
from harness.scenario import expand, load_scenario


def test_a_joint_axis_runs_only_the_listed_combinations() -> None:
    s = load_scenario(
        "coordinators",
        [
            "matrix={}",
            'matrix."group.coordinator.client,group.assignor"=[["kafka-python","range"],["librdkafka","cooperative-sticky"]]',
        ],
    )
    cases = expand(s)
    assert [c.params for c in cases] == [
        {"group.coordinator.client": "kafka-python", "group.assignor": "range"},
        {"group.coordinator.client": "librdkafka", "group.assignor": "cooperative-sticky"},
    ]
    assert [(c.scenario.group.coordinator.client, c.scenario.group.assignor) for c in cases] == [
        ("kafka-python", "range"),
        ("librdkafka", "cooperative-sticky"),
    ]


@pytest.mark.parametrize(
    ("value", "message"),
    [
        ('[["kafka-python"]]', "is not a list of 2 values, one per key"),
        ('["kafka-python"]', "is not a list of 2 values, one per key"),
    ],
)
def test_a_joint_axis_value_of_the_wrong_shape_is_a_one_line_error(value: str, message: str) -> None:
    with pytest.raises(ConfigError, match=message):
        load_scenario(
            "coordinators", ["matrix={}", f'matrix."group.coordinator.client,group.assignor"={value}']
        )


def test_a_single_key_axis_takes_no_list_values() -> None:
    with pytest.raises(ConfigError, match="is not a single value"):
        load_scenario("coordinators", ["matrix={}", 'matrix."group.assignor"=[["range"]]'])


def test_a_key_in_two_axes_is_refused() -> None:
    s = load_scenario(
        "coordinators",
        [
            "matrix={}",
            'matrix."group.assignor"=["range"]',
            'matrix."group.coordinator.client,group.assignor"=[["kafka-python","range"]]',
        ],
    )
    with pytest.raises(ConfigError, match="matrix.group.assignor repeats an axis"):
        expand(s)


def test_kafka_version_applies_only_to_apache_kafka_cases() -> None:
    s = load_scenario(
        "coordinators",
        [
            "matrix={}",
            'matrix."cluster.broker"=["herdlab","apache-kafka"]',
            'matrix."cluster.kafka_version"=["3.9","4"]',
        ],
    )
    # 2 brokers x 2 versions, but herdlab's broker has no version: 3 cases, herdlab's labelled without it
    assert [c.label for c in expand(s)] == [
        "cluster.broker=herdlab",
        "cluster.broker=apache-kafka,cluster.kafka_version=3.9",
        "cluster.broker=apache-kafka,cluster.kafka_version=4",
    ]


def test_the_reference_scenario_is_herdlab_beside_kafka_3_9_and_4_with_three_client_assignor_pairs() -> None:
    s = load_scenario("reference")
    assert s.implementations == ["coordinator"] and s.repetitions == 5 and s.group.members == 10
    cases = expand(s)
    got = {
        (
            c.scenario.cluster.broker,
            c.scenario.cluster.kafka_version if c.scenario.cluster.broker == "apache-kafka" else None,
            c.scenario.group.coordinator.client,
            c.scenario.group.assignor,
        )
        for c in cases
    }
    pairs = [("kafka-python", "range"), ("kafka-python", "cooperative-sticky"), ("librdkafka", "range")]
    brokers = [("herdlab", None), ("apache-kafka", "3.9"), ("apache-kafka", "4")]
    assert len(cases) == 9 and got == {(b, v, c, a) for b, v in brokers for c, a in pairs}
    assert [a.action for a in s.timeline] == ["join", "leave", "crash"]
