"""The broker's data plane against unmodified kafka-python clients, in a real broker process."""

from __future__ import annotations

import time

import pytest
from kafka import KafkaConsumer, KafkaProducer
from kafka.admin import KafkaAdminClient, NewPartitions, NewTopic
from kafka.protocol.consumer import FetchRequest
from kafka.protocol.metadata import MetadataRequest
from kafka.structs import TopicPartition

from coordinator.rawclient import RawClient
from harness.cluster.broker import BrokerProcess
from harness.history.writer import read_events
from tests.support.waiting import wait_until


def _admin(broker: BrokerProcess) -> KafkaAdminClient:
    return KafkaAdminClient(bootstrap_servers=broker.bootstrap, request_timeout_ms=10000)


def _consume(broker: BrokerProcess, tps: list[TopicPartition], n: int, timeout: float = 20.0) -> list:
    consumer = KafkaConsumer(
        bootstrap_servers=broker.bootstrap, auto_offset_reset="earliest", enable_auto_commit=False
    )
    try:
        consumer.assign(tps)
        got: list = []
        deadline = time.monotonic() + timeout
        while len(got) < n and time.monotonic() < deadline:
            for records in consumer.poll(timeout_ms=500).values():
                got.extend(records)
        return got
    finally:
        consumer.close()


@pytest.mark.parametrize("acks", ["all", 1])
def test_producer_consumer_round_trip_with_exact_offsets(broker: BrokerProcess, acks: object) -> None:
    admin = _admin(broker)
    admin.create_topics([NewTopic("rt", 3, 1)])
    admin.close()
    producer = KafkaProducer(bootstrap_servers=broker.bootstrap, acks=acks, linger_ms=5)
    sent = {}
    futures = [
        (i, producer.send("rt", key=b"k%d" % i, value=b"v%d" % i, partition=i % 3)) for i in range(300)
    ]
    producer.flush()
    for i, f in futures:
        md = f.get(timeout=10)
        sent[(md.partition, md.offset)] = b"v%d" % i
    producer.close()
    # Offsets per partition are exactly 0..99, in send order.
    for p in range(3):
        offsets = sorted(o for (pp, o) in sent if pp == p)
        assert offsets == list(range(100))
        assert [sent[(p, o)] for o in offsets] == [b"v%d" % (3 * o + p) for o in range(100)]
    tps = [TopicPartition("rt", p) for p in range(3)]
    got = _consume(broker, tps, 300)
    assert {(r.partition, r.offset): r.value for r in got} == sent
    assert len(got) == 300  # nothing twice
    consumer = KafkaConsumer(bootstrap_servers=broker.bootstrap)
    assert consumer.end_offsets(tps) == {tp: 100 for tp in tps}
    assert consumer.beginning_offsets(tps) == {tp: 0 for tp in tps}
    consumer.close()


def test_acks_zero_records_are_stored(broker: BrokerProcess) -> None:
    producer = KafkaProducer(bootstrap_servers=broker.bootstrap, acks=0, enable_idempotence=False)
    for i in range(50):
        producer.send("fire-and-forget", value=b"%d" % i)
    producer.flush()
    producer.close()
    got = _consume(broker, [TopicPartition("fire-and-forget", 0)], 50)
    assert [(r.offset, r.value) for r in got] == [(i, b"%d" % i) for i in range(50)]


def test_create_partitions_is_seen_by_clients(broker: BrokerProcess) -> None:
    admin = _admin(broker)
    admin.create_topics([NewTopic("grow", 2, 1)])
    admin.create_partitions({"grow": NewPartitions(total_count=5)})
    admin.close()
    consumer = KafkaConsumer(bootstrap_servers=broker.bootstrap)
    try:
        assert wait_until(
            lambda: consumer.partitions_for_topic("grow") == {0, 1, 2, 3, 4}, 10, what="5 partitions"
        )
    finally:
        consumer.close()


def test_fetch_long_polls_instead_of_spinning_and_wakes_on_new_data(broker: BrokerProcess) -> None:
    producer = KafkaProducer(bootstrap_servers=broker.bootstrap)
    producer.send("lp", b"first").get(timeout=10)
    consumer = KafkaConsumer(
        bootstrap_servers=broker.bootstrap,
        auto_offset_reset="earliest",
        fetch_max_wait_ms=3000,
        enable_auto_commit=False,
    )
    consumer.assign([TopicPartition("lp", 0)])
    try:
        assert wait_until(lambda: consumer.poll(timeout_ms=200), 10, what="first record")
        consumer.poll(timeout_ms=500)  # now parked in a long poll
        t0 = time.monotonic()
        producer.send("lp", b"second").get(timeout=10)
        got = wait_until(lambda: consumer.poll(timeout_ms=100), 10, what="second record")
        assert time.monotonic() - t0 < 1.5, "the long poll was not woken by the new record"
        assert [r.value for rs in got.values() for r in rs] == [b"second"]
        # Idle for 2 s: with a 3 s max wait a consumer sends about one Fetch per 3 s, not hundreds.
        assert consumer.poll(timeout_ms=2000) == {}
    finally:
        consumer.close()
        producer.close()
    fetches = _count_requests(broker, "Fetch")
    assert fetches < 40, f"{fetches} fetches: the consumer is spinning"


def _count_requests(broker: BrokerProcess, api: str) -> int:
    broker.stop()  # flushes the last counters
    events = read_events(broker.history_path)
    return sum(e["requests"].get(api, 0) for e in events if e["kind"] == "broker_request")


def test_out_of_range_offset_resets_to_the_end(broker: BrokerProcess) -> None:
    producer = KafkaProducer(bootstrap_servers=broker.bootstrap)
    for i in range(5):
        producer.send("oor", b"%d" % i)
    producer.flush()
    producer.close()
    tp = TopicPartition("oor", 0)
    consumer = KafkaConsumer(
        bootstrap_servers=broker.bootstrap, auto_offset_reset="latest", enable_auto_commit=False
    )
    try:
        consumer.assign([tp])
        consumer.seek(tp, 1000)

        def reset_to_end() -> bool:
            consumer.poll(timeout_ms=200)
            return consumer.position(tp) == 5

        assert wait_until(reset_to_end, 10, what="OFFSET_OUT_OF_RANGE -> reset to latest")
    finally:
        consumer.close()


def test_metadata_advertises_the_loopback_address_the_client_came_from(broker: BrokerProcess) -> None:
    with RawClient("127.0.0.1", broker.port, source_ip="127.0.0.23") as raw:
        r = raw.call(MetadataRequest(topics=None), 1)
    assert [(b.node_id, b.host, b.port) for b in r.brokers] == [(0, "127.0.0.23", broker.port)]
    with RawClient("127.0.0.1", broker.port) as raw:
        raw.send_bytes(b"PROXY TCP4 127.0.0.9 127.0.0.44 5555 6666\r\n")
        r = raw.call(MetadataRequest(topics=None), 1)
    assert [(b.host, b.port) for b in r.brokers] == [("127.0.0.44", 6666)]


def test_a_parked_fetch_does_not_delay_other_connections(broker: BrokerProcess) -> None:
    producer = KafkaProducer(bootstrap_servers=broker.bootstrap)
    producer.send("park", b"x").get(timeout=10)
    producer.close()
    part = FetchRequest.FetchTopic.FetchPartition(partition=0, fetch_offset=1, partition_max_bytes=1 << 20)
    fetch = FetchRequest(
        max_wait_ms=3000,
        min_bytes=1,
        max_bytes=1 << 20,
        topics=[FetchRequest.FetchTopic(topic="park", partitions=[part])],
    )
    with RawClient("127.0.0.1", broker.port) as a, RawClient("127.0.0.1", broker.port) as b:
        t0 = time.monotonic()
        a.send(fetch, 12)
        b.call(MetadataRequest(topics=None), 1)
        assert time.monotonic() - t0 < 1.0
        # Same connection: the Metadata behind the Fetch is answered after it (in order), and the
        # Fetch itself returns at its max wait.
        metadata = MetadataRequest(topics=None)
        a.send(metadata, 1)
        first = a.receive(fetch, 12)
        waited = time.monotonic() - t0
        assert first.responses[0].partitions[0].error_code == 0
        assert 2.5 < waited < 6.0
        assert a.receive(metadata, 1).brokers
