"""Apache Kafka 4 through the Kafka tap with librdkafka members on the consumer group protocol (KIP-848): the tap
decodes every ConsumerGroupHeartbeat exchange into one ``group_request`` event, so the checker counts Kafka's
joins (``change`` true) and its steady heartbeats (``change`` false) as it counts herdlab's broker.

Marked ``kafka`` (Apache Kafka's jars, fetched into herdlab's cache)."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
from confluent_kafka.admin import AdminClient
from confluent_kafka.cimpl import NewTopic

from harness.cluster.apache_kafka import ApacheKafkaCluster
from harness.cluster.kafka_dist import fetch
from tests.support.kip848_member import Kip848Members
from tests.support.waiting import wait_until

pytestmark = [pytest.mark.slow, pytest.mark.kafka]

PARTITIONS = 4
#: Kafka 4's consumer-group minimums (45 s session, 5 s heartbeat) lowered for a short run.
SETTINGS = {
    "group.consumer.min.heartbeat.interval.ms": "500",
    "group.consumer.heartbeat.interval.ms": "500",
    "group.consumer.min.session.timeout.ms": "3000",
    "group.consumer.session.timeout.ms": "6000",
}


def _heartbeats(path: Path) -> list[dict[str, Any]]:
    if not path.exists():
        return []
    events = [json.loads(line) for line in path.read_text().splitlines() if line.endswith("}")]
    return [e for e in events if e["kind"] == "group_request" and e["api"] == "ConsumerGroupHeartbeat"]


def test_the_tap_counts_kafka_4s_joins_as_changes_and_its_steady_heartbeats_apart(tmp_path: Path) -> None:
    fetch("4")
    cluster = ApacheKafkaCluster("4", settings=SETTINGS, workdir=tmp_path / "kafka", history_dir=tmp_path)
    tap = tmp_path / "tap.jsonl"
    with cluster:
        admin = AdminClient({"bootstrap.servers": cluster.bootstrap})
        for f in admin.create_topics([NewTopic("t", PARTITIONS, 1)]).values():
            f.result(30)
        members = Kip848Members(cluster.bootstrap, "g4", "t", tmp_path)
        try:
            for name in ("a", "b"):
                members.start(name)
            wait_until(
                lambda: members.owned_once(PARTITIONS, ["a", "b"]),
                timeout=60,
                what="the 2 members own the 4 partitions once",
            )
            ids = {n: members.member_id(n) for n in ("a", "b")}

            def steady_each() -> bool:
                hbs = _heartbeats(tap)
                return all(
                    sum(1 for e in hbs if e["member"] == m and e["change"] is False) >= 2
                    for m in ids.values()
                )

            wait_until(steady_each, timeout=30, what="two steady heartbeats of each member on the tap")
        finally:
            members.stop_all()
        wait_until(
            lambda: sum(1 for e in _heartbeats(tap) if e["member_epoch"] == -1) == 2,
            timeout=30,
            what="both leave heartbeats on the tap",
        )
    hbs = _heartbeats(tap)
    assert {e["group"] for e in hbs} == {"g4"} and {e["observed"] for e in hbs} == {"tap"}
    for member in ids.values():
        mine = [e for e in hbs if e["member"] == member]
        # by hand: an answer with an error is a change (Kafka answers NOT_COORDINATOR while it creates and
        # loads __consumer_offsets); the join (epoch 0) that Kafka accepts is given a new epoch: a change
        assert all(e["change"] is True for e in mine if "error" in e)
        join = next(e for e in mine if "error" not in e)
        assert (join["member_epoch"], join["change"]) == (0, True) and join["epoch"] > 0
        # a steady heartbeat: same epoch back, no owned partitions sent, no assignment: no change
        steady = [e for e in mine if e["change"] is False]
        assert steady and all(e["epoch"] == e["member_epoch"] > 0 and "error" not in e for e in steady)
        # the leave (epoch -1) is a change
        [leave] = [e for e in mine if e["member_epoch"] == -1]
        assert leave["change"] is True
