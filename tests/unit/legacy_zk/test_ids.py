"""Consumer ids and thread ids as Kafka 0.8 formats and orders them."""

from __future__ import annotations

import re
import uuid

import pytest

from legacy_zk.ids import ThreadId, TopicPartition, java_string_key, make_consumer_id, thread_ids


def test_generated_consumer_id_has_the_0_8_format() -> None:
    cid = make_consumer_id("g1")
    assert re.fullmatch(r"g1_[^_]+-\d{13}-[0-9a-f]{8}", cid), cid


def test_consumer_id_parts_come_from_host_millis_and_uuid_msb() -> None:
    u = uuid.UUID("5b1a0c7e-1234-4abc-8def-0123456789ab")
    assert (
        make_consumer_id("g1", hostname="host1", now_ms=1418326578421, uuid=u)
        == "g1_host1-1418326578421-5b1a0c7e"
    )


def test_uuid_hex_drops_leading_zeros_like_long_to_hex_string() -> None:
    u = uuid.UUID("0b1a0c7e-1234-4abc-8def-0123456789ab")
    # Long.toHexString(0x0b1a0c7e12344abc) = "b1a0c7e12344abc" -> substring(0, 8) = "b1a0c7e1"
    assert make_consumer_id("g", hostname="h", now_ms=1, uuid=u) == "g_h-1-b1a0c7e1"


def test_configured_consumer_id_replaces_the_generated_part() -> None:
    assert make_consumer_id("g1", consumer_id="fixed") == "g1_fixed"


def test_thread_ids_sort_as_strings_so_10_comes_before_2() -> None:
    tids = thread_ids("c", 11)
    assert [str(t) for t in tids][:4] == ["c-0", "c-1", "c-10", "c-2"]
    assert sorted([ThreadId("c", 2), ThreadId("c", 10), ThreadId("c", 1)]) == [
        ThreadId("c", 1),
        ThreadId("c", 10),
        ThreadId("c", 2),
    ]


def test_thread_id_order_is_java_string_order_across_consumers() -> None:
    # java: Collections.sort([g_c-1, g_c-10, g_c-2, g_b-0]) -> [g_b-0, g_c-1, g_c-10, g_c-2]
    got = sorted([ThreadId("g_c", 1), ThreadId("g_c", 10), ThreadId("g_c", 2), ThreadId("g_b", 0)])
    assert [str(t) for t in got] == ["g_b-0", "g_c-1", "g_c-10", "g_c-2"]


def test_java_string_order_differs_from_python_for_supplementary_characters() -> None:
    bmp_high, supplementary = "\uffff", "\U00010000"
    assert bmp_high < supplementary  # Python: code points
    assert java_string_key(supplementary) < java_string_key(bmp_high)  # Java: UTF-16 units (D800 < FFFF)


def test_thread_id_round_trips_through_its_string() -> None:
    t = ThreadId("g_host-1418326578421-5b1a0c7e", 3)
    assert ThreadId.parse(str(t)) == t
    with pytest.raises(ValueError):
        ThreadId.parse("no-number-")


def test_topic_partition_prints_like_topic_and_partition() -> None:
    assert str(TopicPartition("t", 7)) == "[t,7]"
