"""The wire codec: request decoding errors, the bounds guard in front of kio, response encoding."""

from __future__ import annotations

import io
import struct

import pytest
from kafka.protocol.consumer import HeartbeatRequest, HeartbeatResponse
from kafka.protocol.metadata import MetadataRequest
from kio.index import load_response_schema
from kio.schema.errors import ErrorCode

from coordinator.server import SERVED_VERSIONS
from coordinator.wire import (
    ZERO_TD,
    FrameTooLarge,
    MalformedRequest,
    UnknownApi,
    VersionNotServed,
    _writers,
    check_frame_size,
    decode_request,
    encode_response,
    error_response,
)


def frame(request: object, version: int) -> bytes:
    request.API_VERSION = version
    request.with_header(correlation_id=42, client_id="c")
    return bytes(request.encode(header=True))


def test_decode_a_request() -> None:
    req = decode_request(
        frame(HeartbeatRequest(group_id="g", generation_id=3, member_id="m"), 4), SERVED_VERSIONS
    )
    assert (req.api_key, req.api_version, req.correlation_id, req.client_id) == (12, 4, 42, "c")
    assert (req.body.group_id, req.body.generation_id, req.body.member_id) == ("g", 3, "m")


def test_frame_size_bounds() -> None:
    check_frame_size(8, 100)
    check_frame_size(100, 100)
    for size in (-1, 0, 7, 101, 2**31 - 1):
        with pytest.raises(FrameTooLarge):
            check_frame_size(size, 100)


def test_unknown_api_and_unserved_versions() -> None:
    with pytest.raises(UnknownApi) as e:
        decode_request(struct.pack(">hhi", 999, 0, 7) + b"\x00\x00", SERVED_VERSIONS)
    assert not isinstance(e.value, VersionNotServed) and e.value.correlation_id == 7
    with pytest.raises(VersionNotServed):
        decode_request(frame(HeartbeatRequest(group_id="g", generation_id=1, member_id="m"), 4), {12: (0, 3)})


@pytest.mark.parametrize("cut", [9, 12, 20, -1])
def test_truncated_bodies_are_malformed(cut: int) -> None:
    data = frame(MetadataRequest(topics=[MetadataRequest.MetadataRequestTopic(name="topic")]), 1)
    with pytest.raises(MalformedRequest):
        decode_request(data[:cut], SERVED_VERSIONS)


@pytest.mark.parametrize("count", [2**31 - 1, 2**24, 1000])
def test_an_absurd_array_count_is_refused_before_kio_allocates_it(count: int) -> None:
    # kio's native reader pre-allocates the claimed count: 2**31-1 would abort the process.
    data = bytearray(frame(MetadataRequest(topics=[]), 1))
    struct.pack_into(">i", data, len(data) - 4, count)
    with pytest.raises(MalformedRequest, match="array of"):
        decode_request(bytes(data), SERVED_VERSIONS)
    # Flexible (compact) arrays too: Metadata v9 uses a varint count.
    flex = bytearray(frame(MetadataRequest(topics=[], allow_auto_topic_creation=True), 9))
    head = flex[: flex.index(b"\x01", 11)]  # header, then the compact topics array (1 = empty)
    varint = bytearray()
    n = count + 1
    while n >= 0x80:
        varint.append((n & 0x7F) | 0x80)
        n >>= 7
    varint.append(n)
    with pytest.raises(MalformedRequest):
        decode_request(bytes(head + varint + b"\x00" * 8), SERVED_VERSIONS)


def test_a_null_non_nullable_array_is_malformed() -> None:
    from kafka.protocol.consumer import ListOffsetsRequest

    data = bytearray(frame(ListOffsetsRequest(replica_id=-1, topics=[]), 1))
    struct.pack_into(">i", data, len(data) - 4, -1)
    with pytest.raises(MalformedRequest, match="null array"):
        decode_request(bytes(data), SERVED_VERSIONS)


@pytest.mark.parametrize("version", range(5))
@pytest.mark.parametrize(
    "error", [ErrorCode.none, ErrorCode.rebalance_in_progress, ErrorCode.unknown_member_id]
)
def test_heartbeat_fast_path_writes_what_kio_writes(version: int, error: ErrorCode) -> None:
    cls = load_response_schema(12, version)
    response = cls(error_code=error) if version == 0 else cls(throttle_time=ZERO_TD, error_code=error)
    write_header, write_body = _writers(cls)
    buf = io.BytesIO()
    write_header(buf, cls.__header_schema__(correlation_id=9))
    write_body(buf, response)
    generic = len(buf.getvalue()).to_bytes(4, "big") + buf.getvalue()
    assert encode_response(9, response) == generic
    decoded = HeartbeatResponse.decode(generic[4:], version=version, header=True)
    assert (decoded.header.correlation_id, decoded.error_code) == (9, int(error))


def test_error_response_only_where_the_response_has_a_top_level_error() -> None:
    hb = error_response(12, 3, ErrorCode.unsupported_version)
    assert hb is not None and hb.error_code == ErrorCode.unsupported_version
    assert error_response(0, 3, ErrorCode.unsupported_version) is None  # Produce has none
    encode_response(1, error_response(11, 7, ErrorCode.unsupported_version))  # a full zero response encodes
