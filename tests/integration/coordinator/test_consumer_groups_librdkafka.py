"""Real librdkafka members (confluent-kafka, ``group.protocol=consumer``) in consumer groups on herdlab's broker
process: they form a group owning every partition once, a member joins, one leaves, one is killed (its session
expires), and commits with member epochs are read back. Ownership is folded from the members' own callbacks; the
broker's history says why members went. No sleeps: every wait is on what the processes wrote."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
from confluent_kafka import Producer
from kafka.admin import KafkaAdminClient, NewTopic
from kio.index import load_request_schema

from coordinator.wire import nested
from harness.cluster.broker import BrokerProcess
from tests.support.brokers import BrokerFactory
from tests.support.kio_wire import KioClient
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


def _topic(broker: BrokerProcess) -> None:
    admin = KafkaAdminClient(bootstrap_servers=broker.bootstrap)
    admin.create_topics([NewTopic("t", PARTITIONS, 1)])  # pyright: ignore[reportUnknownMemberType]
    admin.close()


def _broker_events(broker: BrokerProcess, kind: str) -> list[dict[str, Any]]:
    assert broker.history_path is not None
    lines = broker.history_path.read_text().splitlines()
    return [e for e in (json.loads(x) for x in lines if x.endswith("}")) if e["kind"] == kind]


def _removed(broker: BrokerProcess, member: str | None) -> list[str]:
    return [e["reason"] for e in _broker_events(broker, "member_removed") if e["member"] == member]


def test_members_form_join_leave_and_crash_and_every_partition_stays_owned_once(
    broker_factory: BrokerFactory, tmp_path: Path
) -> None:
    broker = broker_factory(extra_args=FAST)
    _topic(broker)
    members = Kip848Members(broker.bootstrap, "g", "t", tmp_path)
    try:
        for name in ("a", "b", "c"):
            members.start(name)
        wait_until(
            lambda: members.owned_once(PARTITIONS, ["a", "b", "c"]),
            timeout=60,
            what="3 members own the 6 partitions once",
        )
        members.start("d")  # a join: the 4th member is given partitions others give up first
        wait_until(
            lambda: members.owned_once(PARTITIONS, ["a", "b", "c", "d"]),
            timeout=60,
            what="4 members own the 6 partitions once",
        )
        c_id = members.member_id("c")
        members.stop("c")  # a clean leave (heartbeat with epoch -1)
        wait_until(
            lambda: members.owned_once(PARTITIONS, ["a", "b", "d"]),
            timeout=60,
            what="after c left, 3 members own the 6 partitions once",
        )
        assert _removed(broker, c_id) == ["leave"]
        b_id = members.member_id("b")
        members.kill("b")  # no leave: the broker expires its session (3 s)
        wait_until(
            lambda: members.owned_once(PARTITIONS, ["a", "d"]),
            timeout=60,
            what="after b was killed, 2 members own the 6 partitions once",
        )
        assert _removed(broker, b_id) == ["expired"]
    finally:
        members.stop_all()
    # every heartbeat exchange was one event of the consumer protocol, the joins changes
    hbs = [e for e in _broker_events(broker, "group_request") if e["api"] == "ConsumerGroupHeartbeat"]
    joins = [e for e in hbs if e["member_epoch"] == 0 and "error" not in e]
    assert len({e["member"] for e in joins}) == 4 and all(e["change"] for e in joins)
    assert any(e["change"] is False for e in hbs)


def _committed(broker: BrokerProcess) -> dict[int, int]:
    """The group's committed offsets, as an admin reads them (OffsetFetch v9 without member id)."""
    cls: Any = load_request_schema(9, 9)

    group_cls = nested(cls, "groups")
    host, _, port = broker.bootstrap.rpartition(":")
    with KioClient(host, int(port)) as k:
        r = k.call(9, 9, cls(groups=(group_cls(group_id="gc", topics=None),), require_stable=False))
    return {p.partition_index: p.committed_offset for t in r.groups[0].topics for p in t.partitions}


def test_commits_with_member_epochs_are_read_back(broker_factory: BrokerFactory, tmp_path: Path) -> None:
    broker = broker_factory(extra_args=FAST)
    _topic(broker)
    producer = Producer({"bootstrap.servers": broker.bootstrap})
    for p in range(PARTITIONS):
        for i in range(3):
            producer.produce("t", value=f"{p}-{i}".encode(), partition=p)
    assert producer.flush(30) == 0
    members = Kip848Members(broker.bootstrap, "gc", "t", tmp_path, "--commit")
    try:
        members.start("a")
        members.start("b")

        def last_commits() -> dict[int, int]:
            got: dict[int, int] = {}
            for n in ("a", "b"):
                for e in members.events(n):
                    if e["kind"] == "committed":
                        got[e["partition"]] = max(got.get(e["partition"], 0), e["offset"])
            return got

        # by hand: 3 records per partition, offsets 0..2, so each partition's last commit is 3
        wait_until(
            lambda: last_commits() == dict.fromkeys(range(PARTITIONS), 3),
            timeout=60,
            what="every partition's 3 records processed and committed",
        )
        assert _committed(broker) == dict.fromkeys(range(PARTITIONS), 3)
        assert not any(e["kind"] == "commit_failed" for n in ("a", "b") for e in members.events(n))
    finally:
        members.stop_all()
    # the broker accepted each commit at the committing member's epoch (its generation field)
    commits = [e for e in _broker_events(broker, "commit") if e["group"] == "gc"]
    held: dict[str, set[int]] = {}  # member -> the epochs the broker gave it
    for e in _broker_events(broker, "group_request"):
        if e.get("group") == "gc" and e["api"] == "ConsumerGroupHeartbeat" and "error" not in e:
            held.setdefault(e["member"], set()).add(e["epoch"])
    assert commits and all(e["generation"] in held.get(e["member"], set()) for e in commits), commits
