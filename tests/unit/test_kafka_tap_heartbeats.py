"""The Kafka tap's ConsumerGroupHeartbeat exchanges: request and response frames built with kio's writers (no
sockets), matched by correlation id, written as one ``group_request`` event each with the broker's fields."""

from __future__ import annotations

import io
import struct
import uuid
from datetime import timedelta
from typing import Any

from kio.index import load_request_schema, load_response_schema
from kio.schema.consumer_group_heartbeat.v1.request import TopicPartitions
from kio.schema.errors import ErrorCode
from kio.serial import entity_writer
from kio.static.primitive import i32

from coordinator.wire import nested
from harness.cluster.kafka_tap import _CORRELATION, FrameSplitter, KafkaTap  # pyright: ignore[reportPrivateUsage]
from tests.support.kio_wire import request_frame
from tests.support.recording import RecordingHistory

T1 = uuid.UUID("00000000-0000-0000-0000-00000000000a")


def request(
    version: int, correlation_id: int, member: str, epoch: int, owned: Any = None, **more: Any
) -> bytes:
    body: dict[str, Any] = {
        "group_id": "cg",
        "member_id": member,
        "member_epoch": i32(epoch),
        "rebalance_timeout": timedelta(milliseconds=-1),
        "topic_partitions": owned,
        **more,
    }
    data = request_frame(68, version, correlation_id, load_request_schema(68, version)(**body), "rdkafka")
    return struct.pack(">i", len(data)) + data


def response(
    version: int, correlation_id: int, *, epoch: int, error: ErrorCode = ErrorCode.none, **more: Any
) -> bytes:
    cls = load_response_schema(68, version)
    buf = io.BytesIO()
    entity_writer(cls.__header_schema__)(buf, cls.__header_schema__(correlation_id=i32(correlation_id)))
    fields: dict[str, Any] = {
        "throttle_time": timedelta(0),
        "error_code": error,
        "member_epoch": i32(epoch),
        "heartbeat_interval": timedelta(milliseconds=5000),
        **more,
    }
    entity_writer(cls)(buf, cls(**fields))
    data = buf.getvalue()
    return struct.pack(">i", len(data)) + data


def assignment(version: int, *partitions: int) -> Any:
    cls = load_response_schema(68, version)
    a = nested(cls, "assignment")
    tp = nested(a, "topic_partitions")
    return a(topic_partitions=(tp(topic_id=T1, partitions=tuple(i32(p) for p in partitions)),))


class Wire:
    """One tapped connection: requests and responses fed to the tap as its pumps would."""

    def __init__(self) -> None:
        self.history = RecordingHistory()
        self.tap = KafkaTap(("127.0.0.1", 9), self.history, broker_id=3)
        self.pending: dict[int, Any] = {}
        self.requests = FrameSplitter(self.tap._wanted)
        self.responses = FrameSplitter(self.pending, _CORRELATION)

    def send(self, data: bytes, at: int = 1) -> None:
        self.tap._requests(self.requests.feed(data), self.pending, at)

    def answer(self, data: bytes, at: int = 2, chunk: int = 0) -> None:
        pieces = [data] if not chunk else [data[i : i + chunk] for i in range(0, len(data), chunk)]
        for piece in pieces:
            self.tap._responses(self.responses.feed(piece), self.pending, at)

    def events(self) -> list[dict[str, Any]]:
        return self.history.of("group_request")


def test_a_join_and_its_assignment_is_one_event_carrying_a_change() -> None:
    wire = Wire()
    wire.send(request(1, 41, "m-a", 0, owned=(), subscribed_topic_names=("t",)), at=100)
    assert wire.events() == []  # written when the answer is known
    wire.answer(response(1, 41, epoch=1, member_id="m-a", assignment=assignment(1, 0, 1)), at=250)
    [e] = wire.events()
    assert e == {
        "kind": "group_request",
        "ts_ns": 250,
        "impl": "consumer",
        "broker_id": 3,
        "observed": "tap",
        "api": "ConsumerGroupHeartbeat",
        "client": "rdkafka",
        "group": "cg",
        "member": "m-a",
        "member_epoch": 0,
        "epoch": 1,
        "change": True,
    }
    assert wire.tap.requests["ConsumerGroupHeartbeat"] == 1


def test_a_steady_heartbeat_carries_no_change_and_no_error() -> None:
    wire = Wire()
    wire.send(request(1, 7, "m-a", 5))
    wire.answer(response(1, 7, epoch=5, member_id="m-a"), chunk=3)  # the response split across reads
    [e] = wire.events()
    assert (e["member_epoch"], e["epoch"], e["change"], "error" in e) == (5, 5, False, False)


def test_a_fenced_member_is_a_change_with_kafkas_error_name() -> None:
    wire = Wire()
    wire.send(request(1, 8, "m-b", 3))
    wire.answer(response(1, 8, epoch=0, error=ErrorCode.fenced_member_epoch))
    [e] = wire.events()
    assert (e["epoch"], e["error"], e["change"]) == (0, "FENCED_MEMBER_EPOCH", True)


def test_a_v0_member_joining_without_an_id_is_named_by_the_answer() -> None:
    wire = Wire()
    wire.send(request(0, 9, "", 0, owned=(), subscribed_topic_names=("t",)))
    wire.answer(response(0, 9, epoch=1, member_id="given-1"))
    [e] = wire.events()
    assert (e["member"], e["member_epoch"], e["epoch"], e["change"]) == ("given-1", 0, 1, True)


def test_pipelined_exchanges_are_matched_by_correlation_id() -> None:
    wire = Wire()
    # an acknowledgement of owned partitions (a change) then a steady heartbeat, answered in order in one read
    owned = (frame_tp(0),)
    wire.send(request(1, 20, "m-a", 2, owned=owned) + request(1, 21, "m-a", 2))
    wire.answer(response(1, 20, epoch=2) + response(1, 21, epoch=2))
    assert [(e["member_epoch"], e["change"]) for e in wire.events()] == [(2, True), (2, False)]
    assert wire.pending == {}


def test_a_request_kio_cannot_read_is_written_at_once_without_a_change() -> None:
    wire = Wire()
    data = request(1, 30, "m-a", 5)
    body = data[4:-3]  # truncated
    wire.send(struct.pack(">i", len(body)) + body, at=5)
    [e] = wire.events()
    assert (e["api"], e["group"], e["member"], "change" in e, e["ts_ns"]) == (
        "ConsumerGroupHeartbeat",
        None,
        None,
        False,
        5,
    )


def frame_tp(partition: int) -> Any:
    return TopicPartitions(topic_id=T1, partitions=(i32(partition),))
