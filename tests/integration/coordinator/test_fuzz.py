"""Bad input: random and mutated frames, bad sizes, truncation. The broker keeps serving and loses nothing."""

from __future__ import annotations

import asyncio
import random
import socket
import struct
import threading
import time
from collections import Counter

import pytest
from kafka import KafkaConsumer, KafkaProducer
from kafka.protocol.admin import CreateTopicsRequest, DescribeGroupsRequest, ListGroupsRequest
from kafka.protocol.consumer import (
    FetchRequest,
    HeartbeatRequest,
    JoinGroupRequest,
    LeaveGroupRequest,
    ListOffsetsRequest,
    OffsetCommitRequest,
    OffsetFetchRequest,
    SyncGroupRequest,
)
from kafka.protocol.metadata import MetadataRequest
from kafka.protocol.metadata.api_versions import ApiVersionsRequest
from kafka.protocol.metadata.find_coordinator import FindCoordinatorRequest
from kafka.protocol.producer import InitProducerIdRequest, ProduceRequest
from kafka.structs import OffsetAndMetadata, TopicPartition

from coordinator.rawclient import RawClient
from coordinator.server import SERVED_VERSIONS
from harness.cluster.broker import BrokerProcess
from harness.history.writer import read_events
from tests.support.batches import batch
from tests.support.brokers import BrokerFactory

FRAMES = 12_000
FAST_GROUPS = ["--group-initial-rebalance-delay-ms", "0", "--group-min-session-timeout-ms", "100"]


def _requests() -> list[object]:
    """One plausible request of every served API (fields for all versions; each version uses its own)."""
    fetch_part = FetchRequest.FetchTopic.FetchPartition(
        partition=0, fetch_offset=0, partition_max_bytes=1 << 16
    )
    produce_part = ProduceRequest.TopicProduceData.PartitionProduceData(index=0, records=batch([b"fuzz"] * 3))
    commit_part = OffsetCommitRequest.OffsetCommitRequestTopic.OffsetCommitRequestPartition(
        partition_index=0, committed_offset=1, committed_metadata=""
    )
    return [
        ApiVersionsRequest(client_software_name="fuzz", client_software_version="1"),
        MetadataRequest(topics=[MetadataRequest.MetadataRequestTopic(name="fuzz-t")]),
        CreateTopicsRequest(
            topics=[
                CreateTopicsRequest.CreatableTopic(
                    name="fuzz-c", num_partitions=2, replication_factor=1, assignments=[]
                )
            ],
            timeout_ms=100,
        ),
        ProduceRequest(
            acks=1,
            timeout_ms=100,
            topic_data=[ProduceRequest.TopicProduceData(name="fuzz-t", partition_data=[produce_part])],
        ),
        FetchRequest(
            max_wait_ms=50,
            min_bytes=1,
            topics=[FetchRequest.FetchTopic(topic="fuzz-t", partitions=[fetch_part])],
        ),
        ListOffsetsRequest(
            replica_id=-1,
            topics=[
                ListOffsetsRequest.ListOffsetsTopic(
                    name="fuzz-t",
                    partitions=[ListOffsetsRequest.ListOffsetsTopic.ListOffsetsPartition(timestamp=-1)],
                )
            ],
        ),
        InitProducerIdRequest(transactional_id=None, transaction_timeout_ms=100),
        FindCoordinatorRequest(key="fuzz-g", key_type=0, coordinator_keys=["fuzz-g"]),
        JoinGroupRequest(
            group_id="fuzz-g",
            session_timeout_ms=200,
            rebalance_timeout_ms=200,
            member_id="",
            protocol_type="consumer",
            protocols=[JoinGroupRequest.JoinGroupRequestProtocol(name="range", metadata=b"m")],
        ),
        SyncGroupRequest(group_id="fuzz-g", generation_id=1, member_id="m", assignments=[]),
        HeartbeatRequest(group_id="fuzz-g", generation_id=1, member_id="m"),
        LeaveGroupRequest(
            group_id="fuzz-g", member_id="m", members=[LeaveGroupRequest.MemberIdentity(member_id="m")]
        ),
        OffsetCommitRequest(
            group_id="fuzz-g",
            generation_id_or_member_epoch=-1,
            member_id="",
            topics=[OffsetCommitRequest.OffsetCommitRequestTopic(name="fuzz-t", partitions=[commit_part])],
        ),
        OffsetFetchRequest(group_id="fuzz-g", topics=None),
        DescribeGroupsRequest(groups=["fuzz-g"]),
        ListGroupsRequest(),
    ]


def corpus() -> list[bytes]:
    """Valid request frames (without size prefix) of every served API at every served version."""
    frames = []
    for req in _requests():
        lo, hi = SERVED_VERSIONS[req.API_KEY]
        for v in range(lo, hi + 1):
            req.API_VERSION = v
            req.with_header(correlation_id=v, client_id="fuzz")
            frames.append(bytes(req.encode(header=True)))
    return frames


def mutate(rng: random.Random, frame: bytes) -> bytes:
    data = bytearray(frame)
    for _ in range(rng.randint(1, 4)):
        op = rng.randrange(7)
        pos = rng.randrange(len(data)) if data else 0
        if op == 0 and data:  # flip bits
            data[pos] ^= 1 << rng.randrange(8)
        elif op == 1 and data:  # extreme byte
            data[pos] = rng.choice((0x00, 0xFF, 0x7F, 0x80))
        elif op == 2:  # truncate
            del data[pos:]
        elif op == 3:  # insert junk
            data[pos:pos] = rng.randbytes(rng.randint(1, 16))
        elif op == 4 and len(data) > pos + 4:  # a huge or negative length / count
            data[pos : pos + 4] = struct.pack(">i", rng.choice((-1, -2, 2**31 - 1, 2**20, 1 << 24)))
        elif op == 5 and len(data) >= 4:  # another API key / version
            data[0:4] = struct.pack(">hh", rng.choice((rng.randrange(-5, 80), 3, 11)), rng.randrange(-2, 20))
        elif op == 6 and data:  # duplicate a chunk
            chunk = data[pos : pos + rng.randint(1, 32)]
            data[pos:pos] = chunk
    return bytes(data)


def fuzz_frames(seed: int, n: int) -> list[bytes]:
    rng = random.Random(seed)
    valid = corpus()
    out = []
    for _ in range(n):
        kind = rng.random()
        if kind < 0.15:
            body = rng.randbytes(rng.randint(0, 200))
        elif kind < 0.2:
            body = rng.choice(valid)  # some valid ones in between
        else:
            body = mutate(rng, rng.choice(valid))
        out.append(struct.pack(">i", len(body)) + body)
    # Framing attacks: sizes the broker must refuse without reading (or allocating) them.
    for size in (-1, -(2**31), 0, 3, 7, 2**31 - 1, 200 * 2**20):
        out.insert(rng.randrange(len(out)), struct.pack(">i", size) + b"\x00" * 16)
    return out


async def _send_all(port: int, frames: list[bytes], workers: int = 8) -> dict[str, int]:
    """Send every frame; a connection is reused until the broker closes it. Counts outcomes."""
    queue: asyncio.Queue[bytes] = asyncio.Queue()
    for f in frames:
        queue.put_nowait(f)
    outcome = {"answered": 0, "closed": 0, "no_answer": 0}

    async def worker() -> None:
        reader = writer = None
        while not queue.empty():
            frame = queue.get_nowait()
            if writer is None:
                reader, writer = await asyncio.open_connection("127.0.0.1", port)
            try:
                writer.write(frame)
                await writer.drain()
                head = await asyncio.wait_for(reader.readexactly(4), 0.3)
                await asyncio.wait_for(reader.readexactly(struct.unpack(">i", head)[0]), 2.0)
                outcome["answered"] += 1
                continue
            except (asyncio.IncompleteReadError, ConnectionError):
                outcome["closed"] += 1
            except TimeoutError:
                outcome["no_answer"] += 1  # parked, acks=0, or a frame still incomplete
            writer.close()
            reader = writer = None

    await asyncio.gather(*(worker() for _ in range(workers)))
    return outcome


def _precious_state(broker: BrokerProcess) -> None:
    producer = KafkaProducer(bootstrap_servers=broker.bootstrap, acks="all")
    for i in range(100):
        producer.send("precious-topic-xyz", key=b"%d" % i, value=b"value-%d" % i)
    producer.flush()
    producer.close()
    consumer = KafkaConsumer(
        bootstrap_servers=broker.bootstrap, group_id="precious-group-xyz", enable_auto_commit=False
    )
    consumer.commit({TopicPartition("precious-topic-xyz", 0): OffsetAndMetadata(77, "", -1)})
    consumer.close()


def _check_precious_state(broker: BrokerProcess) -> None:
    tp = TopicPartition("precious-topic-xyz", 0)
    consumer = KafkaConsumer(
        bootstrap_servers=broker.bootstrap, group_id="precious-group-xyz", enable_auto_commit=False
    )
    assert consumer.committed(tp) == 77
    consumer.assign([tp])
    consumer.seek(tp, 0)
    got: list = []
    deadline = time.monotonic() + 15
    while len(got) < 100 and time.monotonic() < deadline:
        got.extend(r for rs in consumer.poll(timeout_ms=500).values() for r in rs)
    consumer.close()
    assert [(r.offset, r.value) for r in got[:100]] == [(i, b"value-%d" % i) for i in range(100)]


@pytest.mark.slow
def test_fuzz_frames_then_a_normal_client_still_works(broker_factory: BrokerFactory) -> None:
    broker = broker_factory(extra_args=FAST_GROUPS)
    _precious_state(broker)
    # A well-behaved client keeps talking on one connection during the whole fuzz run.
    stop = threading.Event()
    healthy: list[int] = []
    errors: list[BaseException] = []

    def bystander() -> None:
        try:
            with RawClient("127.0.0.1", broker.port) as raw:
                while not stop.is_set():
                    r = raw.call(MetadataRequest(topics=None), 1)
                    assert r.brokers[0].port == broker.port
                    healthy.append(len(r.topics))
                    stop.wait(0.05)
        except BaseException as e:  # reported below
            errors.append(e)

    t = threading.Thread(target=bystander, daemon=True)
    t.start()
    frames = fuzz_frames(seed=20240, n=FRAMES)
    try:
        outcome = asyncio.run(_send_all(broker.port, frames))
    finally:
        stop.set()
        t.join(10)
    assert not errors, f"the bystander client failed during the fuzz: {errors[0]!r}"
    assert len(healthy) > 10
    assert sum(outcome.values()) == len(frames) >= 10_000
    assert outcome["answered"] > 500 and outcome["closed"] > 500, outcome
    assert broker.alive()
    _check_precious_state(broker)
    # And a normal producer/consumer round trip works afterwards.
    producer = KafkaProducer(bootstrap_servers=broker.bootstrap)
    md = producer.send("after-fuzz", b"hello").get(timeout=10)
    producer.close()
    consumer = KafkaConsumer(bootstrap_servers=broker.bootstrap, auto_offset_reset="earliest")
    consumer.assign([TopicPartition("after-fuzz", md.partition)])
    records = []
    deadline = time.monotonic() + 10
    while not records and time.monotonic() < deadline:
        records = [r for rs in consumer.poll(timeout_ms=500).values() for r in rs]
    consumer.close()
    assert [(r.offset, r.value) for r in records] == [(md.offset, b"hello")]
    # The refusals are counted in the history, by reason.
    broker.stop()
    rejected: Counter[str] = Counter()
    for e in read_events(broker.history_path):
        if e["kind"] == "broker_request":
            rejected.update(e["rejected"])
    assert rejected["malformed"] > 100 and rejected["unknown_api"] > 100 and rejected["bad_frame_size"] >= 5


def test_oversized_and_truncated_frames_close_only_that_connection(broker_factory: BrokerFactory) -> None:
    broker = broker_factory(extra_args=["--max-request-bytes", "65536"])
    with RawClient("127.0.0.1", broker.port) as bystander:
        assert bystander.call(MetadataRequest(topics=None), 1).brokers
        # Declared size over the maximum: closed at once, nothing read or allocated.
        with RawClient("127.0.0.1", broker.port) as big:
            big.send_bytes(struct.pack(">i", 65537) + b"x" * 100)
            assert big.is_closed_by_peer()
        # Truncated frame, then the client goes away.
        s = socket.create_connection(("127.0.0.1", broker.port))
        s.sendall(struct.pack(">i", 1000) + b"\x00\x03\x00\x01")
        s.close()
        # A frame within the limit is fine.
        with RawClient("127.0.0.1", broker.port) as ok:
            topics = [MetadataRequest.MetadataRequestTopic(name="t" * 200)] * 100
            assert (
                len(ok.call(MetadataRequest(topics=topics, allow_auto_topic_creation=False), 4).topics) == 100
            )
        # An unknown API key closes the connection (as Kafka does).
        with RawClient("127.0.0.1", broker.port) as unknown:
            unknown.send_bytes(struct.pack(">ihhi", 10, 999, 0, 1) + b"\x00\x00")
            assert unknown.is_closed_by_peer()
        assert bystander.call(MetadataRequest(topics=None), 1).brokers
    assert broker.alive()
