"""The librdkafka member's generation, read from librdkafka's serialised consumer group metadata
(``Consumer.consumer_group_metadata()``): the layout, and the refusals that keep a foreign or unknown
layout from being read as a generation."""

from __future__ import annotations

import sys

from harness.members.clients.librdkafka import generation_of


def _cgmd(generation: int, group: bytes, member: bytes, instance: bytes | None = None) -> bytes:
    """The bytes rd_kafka_consumer_group_metadata_write produces (built by hand from its layout)."""
    tail = b"\x01" if instance is None else b"\x00" + instance + b"\x00"
    return (
        b"CGMDv2:"
        + generation.to_bytes(4, sys.byteorder, signed=True)
        + group
        + b"\x00"
        + member
        + b"\x00"
        + tail
    )


def test_the_generation_of_this_members_metadata() -> None:
    assert generation_of(_cgmd(7, b"g", b"m-1"), "g", "m-1") == 7
    assert generation_of(_cgmd(300, b"g", b"m-1", b"static-0"), "g", "m-1") == 300


def test_unjoined_metadata_is_minus_one() -> None:
    # what confluent-kafka 2.16 returns before a join (observed): generation -1, empty member id
    assert generation_of(b"CGMDv2:\xff\xff\xff\xffg\x00\x00\x01", "g", "") == -1


def test_foreign_or_unknown_metadata_is_not_read() -> None:
    assert generation_of(_cgmd(7, b"other", b"m-1"), "g", "m-1") == -1  # another group
    assert generation_of(_cgmd(7, b"g", b"m-2"), "g", "m-1") == -1  # another member
    assert generation_of(b"CGMDv3:" + _cgmd(7, b"g", b"m-1")[7:], "g", "m-1") == -1  # another layout
    assert generation_of(b"CGMDv2:\x07", "g", "m-1") == -1  # truncated
    assert generation_of("CGMDv2:", "g", "m-1") == -1  # not bytes
