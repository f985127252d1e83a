"""The third design, ``consumer`` (KIP-848's consumer group protocol), in scenarios and runs: the
``[group.consumer]`` settings and their defaults, every refusal at scenario check as one line, the brokers
that cannot serve it, and how a consumer unit is planned and started (coordinator-kind members on the
consumer's client with ``group.protocol=consumer``, the broker's ``group.consumer.*`` settings). Expected
values are worked out by hand in the tests."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from harness.kernel.errors import ConfigError
from harness.run.clients import case_clients
from harness.run.interpreter import detection_s
from harness.run.launch import Endpoints, MemberService, coordinator_argv
from harness.run.plan import make_plan
from harness.run.rig import UnitRig
from harness.run.runner import unit_members, unit_partitions
from harness.scenario import expand, load_scenario
from harness.scenario.brokers import herdlab_consumer_args, kafka_broker_settings
from harness.scenario.model import DEFAULT_IMPLEMENTATIONS, IMPLEMENTATIONS, ConsumerSettings, Scenario
from harness.scenario.properties import speaks_consumer, without_classic_only
from tests.support.rigs import local_rig_spec


def _scenario(**keys: Any) -> Scenario:
    return Scenario.model_validate({"name": "t", "implementations": ["consumer"], **keys})


def _consumer(**keys: Any) -> Scenario:
    return _scenario(group={"consumer": keys})


def _one_line(overrides: list[str]) -> str:
    """The one-line error of loading designs-small with ``overrides``."""
    with pytest.raises(ConfigError) as info:
        load_scenario("designs-small", overrides)
    message = str(info.value)
    assert "\n" not in message
    return message


# -- the model -----------------------------------------------------------------------------------------


def test_consumer_is_an_implementation_but_not_a_default_one() -> None:
    assert IMPLEMENTATIONS == ("legacy_zk", "coordinator", "consumer")
    # existing scenarios keep their two columns and run time
    assert Scenario(name="t").implementations == list(DEFAULT_IMPLEMENTATIONS) == ["legacy_zk", "coordinator"]
    assert load_scenario("herd").implementations == ["legacy_zk", "coordinator"]


def test_the_consumer_settings_defaults() -> None:
    c = ConsumerSettings()
    assert (c.client, c.client_version, c.assignor, c.properties) == ("librdkafka", None, None, {})
    assert (c.heartbeat_interval_ms, c.session_timeout_ms) == (500, 6000)
    assert (c.max_poll_interval_ms, c.auto_commit_interval_ms, c.fetch_max_wait_ms) == (30000, 5000, None)
    assert (c.static_membership, c.members, c.members_per_host) == (False, None, 0)
    # the typed shorthands, then the protocol; no session timeout, heartbeat interval or assignor
    assert c.member_properties() == {
        "max.poll.interval.ms": "30000",
        "auto.commit.interval.ms": "5000",
        "group.protocol": "consumer",
    }
    # heartbeat 500 < Kafka's minimum 5000 and session 6000 < 45000: both minimums lowered to the values
    assert c.broker_settings() == {
        "group.consumer.heartbeat.interval.ms": "500",
        "group.consumer.min.heartbeat.interval.ms": "500",
        "group.consumer.session.timeout.ms": "6000",
        "group.consumer.min.session.timeout.ms": "6000",
    }


def test_a_minimum_stays_kafkas_when_the_value_is_above_it() -> None:
    c = ConsumerSettings(heartbeat_interval_ms=8000, session_timeout_ms=50000)
    # 8000 > 5000 and 50000 > 45000: Kafka's minimums stay
    assert c.broker_settings()["group.consumer.min.heartbeat.interval.ms"] == "5000"
    assert c.broker_settings()["group.consumer.min.session.timeout.ms"] == "45000"


def test_the_assignor_and_the_fetch_wait_as_each_client_names_them() -> None:
    rd = _consumer(assignor="range", fetch_max_wait_ms=100).group.consumer.member_properties()
    assert rd["group.remote.assignor"] == "range" and rd["fetch.wait.max.ms"] == "100"
    assert "fetch.max.wait.ms" not in rd
    java = _consumer(client="java", assignor="uniform").group.consumer
    assert java.member_properties()["group.remote.assignor"] == "uniform"
    assert java.effective_version == "4"  # the consumer protocol's java line unless set
    assert _consumer(client="java", client_version="3.9").group.consumer.effective_version == "3.9"
    # franz-go: its server-side switch, and the balancer that asks for the assignor
    franz = _consumer(client="franz-go", fetch_max_wait_ms=100).group.consumer.member_properties()
    assert (franz["ServerSideBalancer"], franz["Balancers"], franz["fetch.max.wait.ms"]) == (
        "true",
        "cooperative-sticky",
        "100",
    )
    assert "group.protocol" not in franz
    ranged = _consumer(client="franz-go", assignor="range").group.consumer.member_properties()
    assert ranged["Balancers"] == "range"


def test_a_client_that_does_not_speak_the_protocol_is_one_line_naming_those_that_do() -> None:
    for client in ("kafka-python", "aiokafka", "kafka-go"):
        message = _one_line([f'group.consumer.client="{client}"'])
        assert (
            f"client {client!r} does not speak the consumer group protocol (KIP-848): "
            "group.consumer.client is one of librdkafka, java, franz-go"
        ) in message


#: A value of the right kind for each refused name (the refusal comes before the value is checked).
VALUES = {
    "partition.assignment.strategy": "range",
    "group.protocol.type": "consumer",
    "SessionTimeout": "1s",
    "HeartbeatInterval": "1s",
    "Balancers": "range",
}


@pytest.mark.parametrize(
    ("client", "name", "why"),
    [
        ("librdkafka", "session.timeout.ms", "the broker's group.consumer.* settings govern it"),
        ("librdkafka", "heartbeat.interval.ms", "the broker's group.consumer.* settings govern it"),
        ("librdkafka", "partition.assignment.strategy", "the broker assigns: group.consumer.assignor"),
        ("librdkafka", "group.protocol.type", "librdkafka refuses it there"),
        ("java", "session.timeout.ms", "the broker's group.consumer.* settings govern it"),
        ("java", "heartbeat.interval.ms", "the broker's group.consumer.* settings govern it"),
        ("java", "partition.assignment.strategy", "the broker assigns: group.consumer.assignor"),
        ("franz-go", "SessionTimeout", "the broker's group.consumer.* settings govern it"),
        ("franz-go", "HeartbeatInterval", "the broker's group.consumer.* settings govern it"),
        ("franz-go", "Balancers", "the broker assigns: group.consumer.assignor"),
        ("franz-go", "session.timeout.ms", "the broker's group.consumer.* settings govern it"),
    ],
)
def test_a_property_the_protocol_refuses_is_one_line_at_check(client: str, name: str, why: str) -> None:
    value = VALUES.get(name, "6000")
    message = _one_line(
        [f'group.consumer.client="{client}"', f'group.consumer.properties={{"{name}"="{value}"}}']
    )
    assert f"{client} property {name!r} cannot be set under the consumer group protocol ({why}" in message


@pytest.mark.parametrize("name", ["group.protocol", "group.remote.assignor", "ServerSideBalancer"])
def test_what_the_harness_sets_is_refused_in_the_table(name: str) -> None:
    message = _one_line([f'group.consumer.properties={{"{name}"="x"}}'])
    assert f"property {name!r} is set by the harness for consumer units" in message


def test_a_bad_value_is_the_clients_own_refusal() -> None:
    message = _one_line(['group.consumer.properties={"fetch.wait.max.ms"="soon"}'])
    assert "librdkafka property 'fetch.wait.max.ms': bad value 'soon'" in message


def test_the_properties_are_checked_only_where_consumer_units_run() -> None:
    # a table consumer units would refuse is no error in a scenario that runs none
    s = Scenario.model_validate(
        {"name": "t", "group": {"consumer": {"properties": {"session.timeout.ms": 6000}}}}
    )
    assert s.implementations == ["legacy_zk", "coordinator"]


def test_the_broker_settings_are_bounded_and_ordered() -> None:
    assert "below session_timeout_ms" in _one_line(
        ["group.consumer.heartbeat_interval_ms=6000", "group.consumer.session_timeout_ms=6000"]
    )
    # Kafka's maximums (15000, 60000) are the keys' bounds
    assert "group.consumer.heartbeat_interval_ms" in _one_line(["group.consumer.heartbeat_interval_ms=15001"])
    assert "group.consumer.session_timeout_ms" in _one_line(["group.consumer.session_timeout_ms=60001"])


@pytest.mark.parametrize(
    ("overrides", "named"),
    [
        (['cluster.broker="tansu"'], "(not 'tansu')"),
        (['cluster.broker="apache-kafka"'], "(not 'apache-kafka' 3.9)"),
        (['cluster.broker="apache-kafka"', 'cluster.kafka_version="3.9.2"'], "(not 'apache-kafka' 3.9.2)"),
    ],
)
def test_a_broker_that_cannot_serve_the_protocol_is_one_line(overrides: list[str], named: str) -> None:
    message = _one_line(['implementations=["coordinator", "consumer"]', *overrides])
    assert (
        "implementation 'consumer' (KIP-848's consumer group protocol) needs a broker that serves it: "
        f"herdlab's, 'apache-kafka' with kafka_version 4, or 'external' {named}"
    ) in message


def test_herdlab_kafka_4_and_external_brokers_are_taken() -> None:
    # herdlab's broker is the default one (a run fails at the members' join until it serves the protocol)
    assert load_scenario("designs-small").cluster.broker == "herdlab"
    for overrides in (
        ['cluster.broker="apache-kafka"', "cluster.kafka_version=4"],
        ['cluster.broker="external"'],
    ):
        s = load_scenario("designs-small", ['implementations=["coordinator", "consumer"]', *overrides])
        assert s.implementations == ["coordinator", "consumer"]


def test_members_of_the_consumer_units() -> None:
    s = load_scenario("designs-small", ["group.consumer.members=5", 'topic.partitions="members"'])
    (case,) = expand(s)
    # [group.consumer] members for its units, group.members (3) for the others; partitions = "members" follow
    assert [unit_members(case, i) for i in IMPLEMENTATIONS] == [3, 3, 5]
    assert [unit_partitions(case, i) for i in IMPLEMENTATIONS] == [3, 3, 5]
    assert "group.consumer.members cannot be combined" in _one_line(
        ["group.consumer.members=5", "group.members=[3, 4]"]
    )


def test_the_builtin_designs_run_three_designs_at_10_and_50_members() -> None:
    s = load_scenario("designs")
    assert s.implementations == ["legacy_zk", "coordinator", "consumer"] and s.repetitions == 1
    assert [c.scenario.group.members for c in expand(s)] == [10, 50]
    assert [(a.at, a.action) for a in s.timeline] == [(5.0, "join"), (25.0, "leave"), (45.0, "crash")]


# -- planning and starting a consumer unit -------------------------------------------------------------


def test_a_consumer_unit_is_planned_as_any_unit_and_its_members_are_the_units_kind() -> None:
    (case,) = expand(load_scenario("designs-small"))
    plan = make_plan(case.scenario, unit_members(case, "consumer"))
    # the same plan for every design: m0..m2, a joiner j0, then a leave and a crash of present members
    assert plan == make_plan(case.scenario, unit_members(case, "coordinator"))
    assert plan.initial == ["m0", "m1", "m2"] and plan.joiners == ["j0"]
    assert [st.kind for st in plan.steps] == ["join", "leave", "crash"]
    assert set(plan.final_kinds.values()) == {None}  # the unit's implementation


def test_a_consumer_members_command_is_a_coordinator_member_on_the_consumer_protocol() -> None:
    s = load_scenario(
        "designs-small", ['group.consumer.assignor="range"', "group.consumer.static_membership=true"]
    )
    argv = coordinator_argv(s, "m0", Endpoints("", "127.0.0.1:9"), Path("h.jsonl"), "g", "t", "consumer")
    assert argv[argv.index("-m") + 1 : argv.index("-m") + 3] == ["harness.members", "coordinator"]
    assert argv[argv.index("--client") + 1] == "librdkafka" and "--client-version" not in argv
    props = [argv[i + 1] for i, a in enumerate(argv) if a == "-X"]
    assert props == [
        "max.poll.interval.ms=30000",
        "auto.commit.interval.ms=5000",
        "group.protocol=consumer",
        "group.remote.assignor=range",
    ]
    assert argv[argv.index("--group-instance-id") + 1] == "m0"
    # the coordinator unit of the same scenario keeps the classic properties
    classic = coordinator_argv(s, "m0", Endpoints("", "127.0.0.1:9"), Path("h.jsonl"), "g", "t")
    assert "-X" in classic and "group.protocol=consumer" not in classic
    assert "partition.assignment.strategy=range" in classic and "--group-instance-id" not in classic
    java = load_scenario("designs-small", ['group.consumer.client="java"'])
    jargv = coordinator_argv(java, "m0", Endpoints("", "b:1"), Path("h.jsonl"), "g", "t", "consumer")
    assert (jargv[jargv.index("--client") + 1], jargv[jargv.index("--client-version") + 1]) == ("java", "4")


def test_the_rig_starts_a_consumer_units_members_and_its_broker_with_the_consumer_settings(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    (case,) = expand(load_scenario("designs-small", ["group.consumer.session_timeout_ms=3000"]))
    plan = make_plan(case.scenario, unit_members(case, "consumer"))
    rig = UnitRig(
        local_rig_spec(case.scenario, "consumer", plan, unit_partitions(case, "consumer"), tmp_path)
    )
    specs: list[Any] = []

    class Stop(Exception):
        pass

    def make_cluster(spec: Any) -> Any:
        specs.append(spec)
        raise Stop

    monkeypatch.setattr("harness.run.rig.make_cluster", make_cluster)
    with pytest.raises(Stop):
        rig.start()
    args = list(specs[0].broker_args)
    assert args[args.index("--consumer-heartbeat-interval-ms") + 1] == "500"
    assert args[args.index("--consumer-min-heartbeat-interval-ms") + 1] == "500"
    assert args[args.index("--consumer-session-timeout-ms") + 1] == "3000"
    assert args[args.index("--consumer-min-session-timeout-ms") + 1] == "3000"
    assert specs[0].broker_settings == {}  # herdlab's broker takes options, not a configuration

    class Cluster:
        zookeeper_connect, bootstrap = "127.0.0.1:2181", "127.0.0.1:9092"

        def member_launcher(self, _mounts: object) -> None:
            return None

    rig.cluster = Cluster()  # type: ignore[assignment]
    monkeypatch.setattr(MemberService, "start", lambda self, timeout=None: self)
    rig.start_member("m0")
    m0 = rig.members["m0"]
    assert isinstance(m0, MemberService) and m0.name == "consumer:m0" and rig.kinds["m0"] == "consumer"
    assert "group.protocol=consumer" in m0.argv and m0.argv[m0.argv.index("-m") + 2] == "coordinator"
    # a coordinator unit of the same case starts its broker without them
    coordinator = UnitRig(
        local_rig_spec(case.scenario, "coordinator", plan, unit_partitions(case, "coordinator"), tmp_path)
    )
    with pytest.raises(Stop):
        coordinator.start()
    assert not [a for a in specs[1].broker_args if a.startswith("--consumer-")]


def test_apache_kafka_4_gets_the_group_consumer_settings_of_consumer_units_only() -> None:
    s = load_scenario(
        "designs-small",
        [
            'implementations=["coordinator", "consumer"]',
            'cluster.broker="apache-kafka"',
            "cluster.kafka_version=4",
        ],
    )
    consumer = kafka_broker_settings(s, "consumer")
    assert consumer["group.consumer.session.timeout.ms"] == "6000"
    assert consumer["group.consumer.min.heartbeat.interval.ms"] == "500"
    assert kafka_broker_settings(s, "coordinator") == kafka_broker_settings(s)
    assert not [k for k in kafka_broker_settings(s) if k.startswith("group.consumer.")]
    assert herdlab_consumer_args(s) == (
        "--consumer-heartbeat-interval-ms",
        "500",
        "--consumer-min-heartbeat-interval-ms",
        "500",
        "--consumer-session-timeout-ms",
        "6000",
        "--consumer-min-session-timeout-ms",
        "6000",
    )


def test_a_consumer_units_detection_time_is_the_brokers_session_timeout() -> None:
    (case,) = expand(
        load_scenario(
            "designs-small",
            ["group.consumer.session_timeout_ms=9000", "group.coordinator.session_timeout_ms=6000"],
        )
    )
    plan = make_plan(case.scenario, 3)
    # consumer: 9000 ms; coordinator 6000 ms; legacy_zk its ZooKeeper session, 6000 ms by default
    assert detection_s(case.scenario, "consumer", plan) == 9.0
    assert detection_s(case.scenario, "coordinator", plan) == 6.0
    assert detection_s(case.scenario, "legacy_zk", plan) == 6.0


def test_the_clients_a_run_needs_include_the_consumer_units() -> None:
    cases = expand(
        load_scenario(
            "designs-small", ['group.consumer.client="java"', 'group.coordinator.client="librdkafka"']
        )
    )
    assert case_clients(cases) == [("librdkafka", None), ("java", "4")]
    # the same pair once
    same = expand(load_scenario("designs-small", ['group.coordinator.client="librdkafka"']))
    assert case_clients(same) == [("librdkafka", None)]


def test_a_member_on_the_consumer_protocol_leaves_out_the_typed_names_its_client_refuses() -> None:
    typed = {
        "session.timeout.ms": "6000",
        "heartbeat.interval.ms": "500",
        "partition.assignment.strategy": "range",
    }
    assert speaks_consumer("librdkafka", {"group.protocol": "consumer"})
    assert speaks_consumer("franz-go", {"ServerSideBalancer": "true"})
    assert not speaks_consumer("librdkafka", {})
    assert without_classic_only(dict(typed), "librdkafka", {"group.protocol": "consumer"}) == {}
    assert without_classic_only(dict(typed), "franz-go", {"ServerSideBalancer": "true"}) == {}
    assert without_classic_only(dict(typed), "librdkafka", {}) == typed  # the classic protocol keeps them


def test_the_member_command_takes_the_consumer_protocol_for_the_clients_that_speak_it() -> None:
    from click.testing import CliRunner

    from harness.members.coordinator_cli import coordinator

    base = ["--bootstrap", "127.0.0.1:9", "--group", "g", "--topic", "t"]
    refused = CliRunner().invoke(
        coordinator, [*base, "--client", "kafka-python", "--group-protocol", "consumer"]
    )
    assert refused.exit_code == 2
    assert "client 'kafka-python' does not speak the consumer group protocol" in refused.output
    alone = CliRunner().invoke(coordinator, [*base, "--remote-assignor", "range"])
    assert alone.exit_code == 2 and "goes with --group-protocol consumer" in alone.output


def test_a_coordinator_unit_migrating_to_the_consumer_protocol_gets_the_group_consumer_settings_too() -> None:
    s = load_scenario("migration-consumer")
    assert s.implementations == ["coordinator"] and s.has_protocol_migration
    # by hand: [group.consumer]'s defaults (heartbeat 500 ms, session 6000 ms), as a consumer unit's broker
    settings = kafka_broker_settings(s, "coordinator")
    assert (
        settings["group.consumer.heartbeat.interval.ms"],
        settings["group.consumer.session.timeout.ms"],
    ) == (
        "500",
        "6000",
    )
    assert not load_scenario("herd-small").has_protocol_migration
