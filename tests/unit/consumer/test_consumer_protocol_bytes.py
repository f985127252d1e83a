"""The embedded consumer protocol's bytes (Kafka ``ConsumerProtocol``): subscriptions and assignments of each
version, against bytes written out by hand from the schemas (int16 version, then the body)."""

from __future__ import annotations

import pytest

from coordinator.core.consumer.protocol import (
    ConsumerProtocolError,
    Subscription,
    decode_assignment,
    decode_subscription,
    encode_assignment,
    encode_subscription,
)

# version 0 | topics: 1 entry, "t" | user data null
SUB_V0 = bytes.fromhex("000000000001000174ffffffff")
# version 3 | topics ["t"] | user data null | owned: 1 topic "t" with [1] | generation 4 | rack "r"
SUB_V3 = bytes.fromhex("000300000001000174ffffffff00000001000174000000010000000100000004000172")
# version 1 | assigned: 1 topic "t" with [0, 2] | user data null
ASSIGN_V1 = bytes.fromhex("000100000001000174000000020000000000000002ffffffff")


def test_subscriptions_of_version_0_and_3() -> None:
    assert decode_subscription(SUB_V0) == Subscription(0, ("t",))
    assert decode_subscription(SUB_V3) == Subscription(3, ("t",), None, {"t": frozenset({1})}, 4, "r")
    assert encode_subscription(["t"], version=0) == SUB_V0
    assert (
        encode_subscription(["t"], version=3, owned={"t": frozenset({1})}, generation_id=4, rack_id="r")
        == SUB_V3
    )


def test_a_version_above_the_highest_is_read_with_the_highest_schema() -> None:
    newer = b"\x00\x07" + SUB_V3[2:] + b"\x00\x00"  # a later version's extra field at the end is ignored
    assert decode_subscription(newer).rack_id == "r"


def test_assignments_are_written_in_the_subscriptions_version() -> None:
    assert encode_assignment({"t": frozenset({2, 0})}, 1) == ASSIGN_V1
    assert decode_assignment(ASSIGN_V1) == ({"t": frozenset({0, 2})}, None)
    assert encode_assignment({"t": frozenset({2, 0})}, 9)[:2] == b"\x00\x03"


@pytest.mark.parametrize("data", [b"", b"\x00", b"\xff\xff" + SUB_V0[2:], SUB_V0[:-3]])
def test_bytes_that_do_not_parse_are_refused(data: bytes) -> None:
    with pytest.raises(ConsumerProtocolError):
        decode_subscription(data)
