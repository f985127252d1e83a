"""A kafka-python 3.0.12 bug, pinned: a leader's metadata-triggered rejoin that completes between two
``poll()`` calls is lost.

This is what made ``test_observability`` flaky (its docstring walks through the client code, file by
file). The consumer that led the group and saw its topic's partitions change sends JoinGroup from
inside ``poll()``; if ``poll()`` returns before the join completes and the IO thread then completes it
(JoinGroup and SyncGroup both succeed), kafka-python never applies the result: its state stays
REBALANCING, heartbeats stay disabled and the new assignment is never taken, so the broker expires
the silent member while the client keeps fetching the partitions of the previous generation.

The test drives that order deterministically with ``poll(timeout_ms=0)``, a common way to call
``poll()``. When a kafka-python release fixes the bug, this test fails: then the workarounds that
give a consumer its topic's metadata before its first poll (``test_observability``,
``harness/members/clients/kafka_python.py``) can go.
"""

from __future__ import annotations

from kafka import KafkaConsumer, KafkaProducer
from kafka.admin import KafkaAdminClient, NewPartitions, NewTopic
from kafka.structs import TopicPartition

from harness.history.writer import read_events
from tests.support.brokers import BrokerFactory
from tests.support.waiting import wait_until

GROUP = "g-rejoin"
TOPIC = "rejoin"


def test_kafka_python_loses_a_leader_rejoin_that_completes_between_polls(
    broker_factory: BrokerFactory,
) -> None:
    broker = broker_factory(
        extra_args=["--group-initial-rebalance-delay-ms", "0", "--group-min-session-timeout-ms", "1000"]
    )
    admin = KafkaAdminClient(bootstrap_servers=broker.bootstrap)
    admin.create_topics([NewTopic(TOPIC, 1, 1)])
    consumer = KafkaConsumer(
        TOPIC,
        bootstrap_servers=broker.bootstrap,
        group_id=GROUP,
        auto_offset_reset="earliest",
        enable_auto_commit=False,
        session_timeout_ms=1000,
        heartbeat_interval_ms=100,
        metadata_max_age_ms=200,
    )
    producer = KafkaProducer(bootstrap_servers=broker.bootstrap)
    try:

        def group_events(kind: str) -> list[dict]:
            return [
                e for e in read_events(broker.history_path) if e["kind"] == kind and e.get("group") == GROUP
            ]

        # Generation 1: the consumer joins alone, with its topic's metadata, and owns partition 0. The
        # long poll sees the join through (a join completed between polls would be sent again: bug 2
        # in test_observability's docstring) and returns with the first record.
        producer.send(TOPIC, b"before", partition=0).get(timeout=10)
        assert consumer.partitions_for_topic(TOPIC) == {0}
        got: list[bytes] = []

        def consumed(value: bytes, timeout_ms: int) -> bool:
            got.extend(r.value for rs in consumer.poll(timeout_ms).values() for r in rs)
            return value in got

        wait_until(lambda: consumed(b"before", 10_000), 15, what="generation 1 to deliver the first record")
        assert consumer.assignment() == {TopicPartition(TOPIC, 0)}
        assert [e["generation"] for e in group_events("group_state") if e["to_state"] == "Stable"] == [1]

        # A second partition; the consumer's background metadata refresh (every 200 ms) sees it.
        admin.create_partitions({TOPIC: NewPartitions(total_count=2)})
        wait_until(lambda: consumer.partitions_for_topic(TOPIC) == {0, 1}, 10, what="the new partition")

        # The leader's rejoin starts in this poll, which returns at once with the JoinGroup in flight.
        assert consumer.poll(timeout_ms=0) == {}
        # With no poll running, the client's IO thread completes JoinGroup and SyncGroup: generation 2.
        wait_until(
            lambda: (
                [e["generation"] for e in group_events("group_state") if e["to_state"] == "Stable"] == [1, 2]
            ),
            10,
            what="generation 2 to complete on the broker",
        )

        # From here on the consumer polls as usual, yet it never takes generation 2 up: it sends no
        # heartbeat, so the broker expires it (session 1 s).
        wait_until(
            lambda: (
                consumer.poll(100) is not None
                and [e["reason"] for e in group_events("member_removed")] == ["expired"]
            ),
            15,
            what="the broker to expire the consumer (if it never does, kafka-python no longer loses the "
            "rejoin: drop the workarounds named in this module's docstring)",
        )
        assert consumer.assignment() == {TopicPartition(TOPIC, 0)}  # still generation 1's, not {0, 1}

        # Out of the group, it still fetches partition 0: what a new member would own as well.
        producer.send(TOPIC, b"after-expiry", partition=0).get(timeout=10)
        wait_until(
            lambda: consumed(b"after-expiry", 100), 10, what="the expired consumer to fetch the new record"
        )
        states = [(e["generation"], e["to_state"]) for e in group_events("group_state")]
        assert states[-1] == (3, "Empty"), states  # the expiry left the group empty
    finally:
        producer.close()
        consumer.close()
        admin.close()
