"""Kafka 4's online migration on herdlab's broker (single-broker mode), with real librdkafka members: a classic group
(``group.protocol=classic``, cooperative-sticky) is converted to a consumer group when a ``group.protocol=consumer``
member joins it, its classic members staying in the group, and back to a classic group when that member leaves;
every partition is owned once after each step (folded from the members' own callbacks) and the broker's history
names each conversion. No sleeps: every wait is on what the processes wrote."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from kafka.admin import KafkaAdminClient, NewTopic

from harness.cluster.broker import BrokerProcess
from tests.support.brokers import BrokerFactory
from tests.support.kip848_member import Kip848Members
from tests.support.waiting import wait_until

pytestmark = pytest.mark.slow

PARTITIONS = 6
#: the consumer protocol's timings lowered (Kafka 4's minimums are 5 s and 45 s)
FAST = [
    "--consumer-heartbeat-interval-ms",
    "300",
    "--consumer-min-heartbeat-interval-ms",
    "300",
    "--consumer-session-timeout-ms",
    "3000",
    "--consumer-min-session-timeout-ms",
    "1000",
]
CLASSIC = ("--protocol", "classic")


def _topic(broker: BrokerProcess) -> None:
    admin = KafkaAdminClient(bootstrap_servers=broker.bootstrap)
    admin.create_topics([NewTopic("t", PARTITIONS, 1)])  # pyright: ignore[reportUnknownMemberType]
    admin.close()


def _conversions(broker: BrokerProcess) -> list[tuple[str, str, str, int]]:
    assert broker.history_path is not None
    lines = broker.history_path.read_text().splitlines()
    events = [json.loads(x) for x in lines if x.endswith("}")]
    return [
        (e["group"], e["from_type"], e["to_type"], e["members"])
        for e in events
        if e["kind"] == "group_converted"
    ]


def test_a_classic_group_converts_when_a_consumer_member_joins_and_back_when_it_leaves(
    broker_factory: BrokerFactory, tmp_path: Path
) -> None:
    broker = broker_factory(extra_args=FAST)
    _topic(broker)
    members = Kip848Members(broker.bootstrap, "mig", "t", tmp_path)
    try:
        for name in ("a", "b", "c"):
            members.start(name, *CLASSIC)
        wait_until(
            lambda: members.owned_once(PARTITIONS, ["a", "b", "c"]),
            timeout=90,
            what="3 classic members own the 6 partitions once",
        )
        assert _conversions(broker) == []
        members.start("d")  # group.protocol=consumer: the first consumer-protocol member converts the group
        wait_until(
            lambda: members.owned_once(PARTITIONS, ["a", "b", "c", "d"]),
            timeout=90,
            what="3 classic members and 1 consumer-protocol member own the 6 partitions once",
        )
        # by hand: the 3 classic members were carried into the consumer group
        assert _conversions(broker) == [("mig", "classic", "consumer", 3)]
        members.stop("d")  # its leave (epoch -1) makes it the last consumer-protocol member gone
        wait_until(
            lambda: members.owned_once(PARTITIONS, ["a", "b", "c"]),
            timeout=90,
            what="after d left, the 3 classic members own the 6 partitions once",
        )
        assert _conversions(broker) == [
            ("mig", "classic", "consumer", 3),
            ("mig", "consumer", "classic", 3),
        ]
    finally:
        members.stop_all()


def test_with_the_migration_policy_disabled_a_consumer_member_cannot_join_a_classic_group(
    broker_factory: BrokerFactory, tmp_path: Path
) -> None:
    broker = broker_factory(extra_args=[*FAST, "--consumer-migration-policy", "disabled"])
    _topic(broker)
    members = Kip848Members(broker.bootstrap, "mig", "t", tmp_path)
    try:
        for name in ("a", "b"):
            members.start(name, *CLASSIC)
        wait_until(
            lambda: members.owned_once(PARTITIONS, ["a", "b"]),
            timeout=90,
            what="2 classic members own the 6 partitions once",
        )
        members.start("d")
        assert broker.history_path is not None
        history = broker.history_path

        def refused() -> bool:
            lines = history.read_text().splitlines()
            return any(
                e["kind"] == "group_request"
                and e.get("api") == "ConsumerGroupHeartbeat"
                and e.get("error") == "GROUP_ID_NOT_FOUND"
                for e in (json.loads(x) for x in lines if x.endswith("}"))
            )

        wait_until(refused, timeout=60, what="the consumer member's join refused GROUP_ID_NOT_FOUND")
        assert _conversions(broker) == [] and members.owned("d") == set()
        assert members.owned_once(PARTITIONS, ["a", "b"])
    finally:
        members.stop_all()
