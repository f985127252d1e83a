"""The clients' scenario keys: the client library, its assignors and Kafka properties, the broker axis."""

from __future__ import annotations

from pathlib import Path

import pytest

from harness.kernel.errors import ConfigError
from harness.run.launch import Endpoints, coordinator_argv, legacy_argv
from harness.scenario import expand, left_out, load_scenario
from harness.scenario.processing import fetch_and_poll_ms

COORDINATOR_ONLY = 'implementations=["coordinator"]'


def _load(*overrides: str):  # noqa: ANN202 - a Scenario
    return load_scenario("herd-small", list(overrides))


def _pairs(argv: list[str], flag: str) -> dict[str, str]:
    """The NAME=VALUE arguments that follow each ``flag`` in ``argv``."""
    return dict(argv[i + 1].split("=", 1) for i, a in enumerate(argv) if a == flag)


def test_a_coordinator_member_gets_the_typed_keys_the_assignor_and_the_table_as_kafka_properties() -> None:
    s = _load(
        COORDINATOR_ONLY,
        'group.coordinator.client="librdkafka"',
        'group.assignor="cooperative-sticky"',
        "group.coordinator.session_timeout_ms=7000",
        'group.coordinator.properties={"fetch.wait.max.ms"=50, "enable.auto.commit"=false}',
    )
    argv = coordinator_argv(s, "m0", Endpoints("", "127.0.0.1:9"), Path("h.jsonl"), "g", "t")
    assert argv[argv.index("--client") + 1] == "librdkafka"
    assert _pairs(argv, "-X") == {
        "session.timeout.ms": "7000",
        "heartbeat.interval.ms": "500",
        "max.poll.interval.ms": "30000",
        "auto.commit.interval.ms": "5000",
        # Kafka's 5-minute refresh, as librdkafka names it; its cache's age three times that
        "topic.metadata.refresh.interval.ms": "300000",
        "metadata.max.age.ms": "900000",
        "partition.assignment.strategy": "cooperative-sticky",
        "fetch.wait.max.ms": "50",
        "enable.auto.commit": "false",
    }


def test_legacy_properties_table_goes_over_the_typed_keys() -> None:
    s = _load('group.legacy_zk.properties={"rebalance.backoff.ms"=500}')
    argv = legacy_argv(s, "m0", Endpoints("127.0.0.1:1", "127.0.0.1:9"), Path("h.jsonl"), "g", "t")
    props = _pairs(argv, "-X")
    assert props["rebalance.backoff.ms"] == "500"  # the typed default is 2000
    assert props["rebalance.max.retries"] == "4"


@pytest.mark.parametrize(
    ("overrides", "expected"),
    [
        (
            (COORDINATOR_ONLY, 'group.coordinator.client="aiokafka"', 'group.assignor="cooperative-sticky"'),
            "group.assignor 'cooperative-sticky' is not an assignor of client 'aiokafka'",
        ),
        (
            (COORDINATOR_ONLY, 'group.coordinator.client="librdkafka"', 'group.assignor="sticky"'),
            "group.assignor 'sticky' is not an assignor of client 'librdkafka'",
        ),
        (('group.assignor="sticky"',), "legacy_zk has range and roundrobin"),
        (
            ('group.coordinator.properties={"no.such.thing"=1}',),
            "unknown kafka-python property 'no.such.thing'",
        ),
        (
            (
                COORDINATOR_ONLY,
                'group.coordinator.client="librdkafka"',
                'group.coordinator.properties={"x.y"=1}',
            ),
            "unknown librdkafka property 'x.y'",
        ),
        (
            (
                COORDINATOR_ONLY,
                'group.coordinator.client="aiokafka"',
                'group.coordinator.properties={"a.b"=1}',
            ),
            "unknown aiokafka property 'a.b'",
        ),
        (
            ('group.coordinator.properties={"session.timeout.ms"="soon"}',),
            "kafka-python property 'session.timeout.ms': bad value 'soon'",
        ),
        (('group.coordinator.properties={"group.id"="x"}',), "'group.id' is set by the harness"),
        (
            (
                "group.coordinator.session_timeout_ms=7000",
                'group.coordinator.properties={"session.timeout.ms"=8000}',
            ),
            "group.coordinator.session_timeout_ms and group.coordinator.properties.'session.timeout.ms' both given",
        ),
        (
            (
                COORDINATOR_ONLY,
                'group.coordinator.client="librdkafka"',
                "group.coordinator.session_timeout_ms=9000",
                "group.coordinator.max_poll_interval_ms=8000",
            ),
            "librdkafka properties refused: `max.poll.interval.ms`must be >= `session.timeout.ms`",
        ),
        (('group.legacy_zk.properties={"no.such"=1}',), "unknown legacy_zk property 'no.such'"),
        (('workload.properties={"linger.ms"="x"}',), "producer property 'linger.ms': bad value 'x'"),
        (('workload.properties={"bootstrap.servers"="x:1"}',), "'bootstrap.servers' is set by the harness"),
        (('cluster.broker="tansu"',), "cluster.broker = 'tansu' serves only the coordinator implementation"),
        ((COORDINATOR_ONLY, 'cluster.broker="tansu"', "cluster.brokers=2"), "cluster.brokers > 1 needs"),
        (
            (COORDINATOR_ONLY, 'cluster.broker="external"', 'timeline=[{action="restart_broker", at=1}]'),
            "timeline actions restart_broker need cluster.broker = 'herdlab'",
        ),
        (('cluster.broker="kafka"',), "cluster.broker"),
    ],
)
def test_bad_client_broker_and_property_settings_are_one_line_errors(
    overrides: tuple[str, ...], expected: str
) -> None:
    with pytest.raises(ConfigError) as e:
        _load(*overrides)
    assert expected in str(e.value)
    assert "\n" not in str(e.value)


def test_client_assignor_and_broker_are_matrix_axes_checked_per_case() -> None:
    s = _load(
        COORDINATOR_ONLY,
        'matrix={"cluster.broker"=["herdlab","tansu"], "group.coordinator.client"=["kafka-python","librdkafka"]}',
        "group.members=4",
    )
    cases = expand(s)
    assert [(c.scenario.cluster.broker, c.scenario.group.coordinator.client) for c in cases] == [
        ("herdlab", "kafka-python"),
        ("herdlab", "librdkafka"),
        ("tansu", "kafka-python"),
        ("tansu", "librdkafka"),
    ]


def test_a_matrix_case_whose_client_lacks_the_assignor_is_left_out_with_its_reason() -> None:
    s = _load(
        COORDINATOR_ONLY,
        'matrix={"group.coordinator.client"=["kafka-python","aiokafka"], '
        '"group.assignor"=["range","cooperative-sticky"]}',
        "group.members=4",
    )
    # aiokafka has no cooperative-sticky assignor: three of the four pairs run
    assert [c.params for c in expand(s)] == [
        {"group.coordinator.client": "kafka-python", "group.assignor": "range"},
        {"group.coordinator.client": "kafka-python", "group.assignor": "cooperative-sticky"},
        {"group.coordinator.client": "aiokafka", "group.assignor": "range"},
    ]
    [out] = left_out(s)
    assert out.params == {"group.coordinator.client": "aiokafka", "group.assignor": "cooperative-sticky"}
    assert out.reason == (
        "group.assignor 'cooperative-sticky' is not an assignor of client 'aiokafka' (it has range, roundrobin, sticky)"
    )


def test_a_matrix_whose_every_case_is_left_out_is_an_error_saying_why() -> None:
    bad = _load(COORDINATOR_ONLY, 'matrix={"group.coordinator.client"=["aiokafka"]}')
    bad = bad.model_copy(update={"group": bad.group.model_copy(update={"assignor": "cooperative-sticky"})})
    with pytest.raises(
        ConfigError, match="every matrix case is left out .*not an assignor of client 'aiokafka'"
    ):
        expand(bad)


def test_outside_a_matrix_a_client_without_the_assignor_is_an_error() -> None:
    with pytest.raises(ConfigError, match="not an assignor of client 'aiokafka'"):
        _load(COORDINATOR_ONLY, 'group.coordinator.client="aiokafka"', 'group.assignor="cooperative-sticky"')
    assert left_out(_load(COORDINATOR_ONLY)) == []


def test_a_shorthands_property_in_the_table_survives_the_matrix_expansion() -> None:
    """A case is validated again from the scenario's data: only what was given goes into it, so the
    shorthands' defaults do not count as given and do not clash with the same property in the table."""
    s = _load(
        COORDINATOR_ONLY,
        'group.coordinator.properties={"max.poll.interval.ms"=40000, "metadata.max.age.ms"=1000}',
        "group.members=[3, 4]",
    )
    cases = expand(s)
    assert [c.params for c in cases] == [{"group.members": 3}, {"group.members": 4}]
    for c in cases:
        props = c.scenario.group.coordinator.member_properties(c.scenario.group.assignor)
        assert (props["max.poll.interval.ms"], props["metadata.max.age.ms"]) == ("40000", "1000")


@pytest.mark.parametrize(
    ("client", "refresh"),
    [("kafka-python", "metadata.max.age.ms"), ("aiokafka", "metadata.max.age.ms"),
     ("librdkafka", "topic.metadata.refresh.interval.ms")],
)  # fmt: skip
def test_a_member_refreshes_metadata_at_kafkas_five_minutes_unless_the_scenario_says(
    client: str, refresh: str
) -> None:
    s = _load(COORDINATOR_ONLY, f'group.coordinator.client="{client}"')
    assert s.group.coordinator.member_properties("range")[refresh] == "300000"
    s = _load(
        COORDINATOR_ONLY, f'group.coordinator.client="{client}"', "group.coordinator.metadata_max_age_ms=5000"
    )
    assert s.group.coordinator.member_properties("range")[refresh] == "5000"


def test_added_partitions_need_a_metadata_refresh_inside_their_window() -> None:
    """add_partitions at 1 s, the next step at 20 s: a 19 s window. Coordinator members at Kafka's 300 s
    refresh would not see the new partitions in it: refused, naming the key; 5 s is accepted, and so is a
    legacy_zk-only scenario (its members watch the topic's znode)."""
    steps = 'timeline=[{at="1s", action="add_partitions", to=6}, {at="20s", action="join"}]'
    with pytest.raises(ConfigError) as e:
        _load(COORDINATOR_ONLY, steps)
    assert "every 300 s (group.coordinator.metadata_max_age_ms), not within its 19 s window" in str(e.value)
    assert "\n" not in str(e.value)
    _load(COORDINATOR_ONLY, steps, "group.coordinator.metadata_max_age_ms=5000")
    _load('implementations=["legacy_zk"]', steps)
    # the last step's window is stable_timeout (120 s by default)
    with pytest.raises(ConfigError, match="not within its 120 s window"):
        _load(COORDINATOR_ONLY, 'timeline=[{at="1s", action="add_partitions", to=6}]')


def test_every_member_property_of_a_librdkafka_scenario_is_accepted_together() -> None:
    """librdkafka checks properties against each other: the member's whole set (max.poll.interval.ms 30 s
    with session.timeout.ms 6 s) is valid although max.poll.interval.ms alone, against librdkafka's 45 s
    default session timeout, is not."""
    from harness.scenario.properties import check_client_properties

    s = _load(COORDINATOR_ONLY, 'group.coordinator.client="librdkafka"')
    props = s.group.coordinator.member_properties(s.group.assignor)
    check_client_properties("librdkafka", props)
    with pytest.raises(ValueError, match="max.poll.interval.ms"):
        check_client_properties("librdkafka", {"max.poll.interval.ms": props["max.poll.interval.ms"]})


def test_fetch_max_wait_ms_reaches_each_client_by_its_own_name_and_unset_leaves_the_clients_default() -> None:
    names = {}
    for client in ("kafka-python", "librdkafka", "java", "kafka-go"):
        s = _load(
            COORDINATOR_ONLY,
            f'group.coordinator.client="{client}"',
            "group.coordinator.fetch_max_wait_ms=250",
        )
        props = s.group.coordinator.member_properties(s.group.assignor)
        names[client] = {k: v for k, v in props.items() if "wait" in k}
        unset = _load(COORDINATOR_ONLY, f'group.coordinator.client="{client}"')
        assert not [k for k in unset.group.coordinator.member_properties("range") if "wait" in k]
    # Kafka's dotted name for all but librdkafka, whose name it is renamed to; the Go member maps the
    # dotted name to its own option (MaxWait) from its table
    assert names == {
        "kafka-python": {"fetch.max.wait.ms": "250"},
        "librdkafka": {"fetch.wait.max.ms": "250"},
        "java": {"fetch.max.wait.ms": "250"},
        "kafka-go": {"fetch.max.wait.ms": "250"},
    }


def test_the_processing_gap_bound_takes_the_typed_fetch_wait() -> None:

    # kafka-go's own default fetch wait is 10 s; the typed key makes it 250 ms, plus the 200 ms poll window
    s = _load(
        COORDINATOR_ONLY, 'group.coordinator.client="kafka-go"', "group.coordinator.fetch_max_wait_ms=250"
    )
    assert fetch_and_poll_ms(s, "coordinator") == 250 + 200
    assert (
        fetch_and_poll_ms(_load(COORDINATOR_ONLY, 'group.coordinator.client="kafka-go"'), "coordinator")
        == 10_200
    )
