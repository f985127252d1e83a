"""The fake-clock driver of :mod:`tests.support.group_driver` itself, and the small value modules of the
group coordinator (errors, config, records).
"""

from __future__ import annotations

import pytest

from coordinator.core.group import (
    ErrorCode,
    GroupConfig,
    GroupMetadataRecord,
    GroupState,
    GroupTombstoneRecord,
    MemberRecord,
    OffsetCommitRecord,
    Record,
    decode_record,
    encode_record,
    record_from_dict,
)
from tests.support.group_driver import Driver, G

# ====================================================================================== driver and value tests


def test_driver_fires_timers_in_deadline_order_at_their_deadlines() -> None:
    d = Driver()
    mid, tok = d.join_new()
    assert d.state() is GroupState.PREPARING_REBALANCE
    assert d.timers[("join", G)] == 3000
    d.advance(2999)
    assert d.resp(tok) is None
    d.advance(1)
    assert d.resp(tok).error == ErrorCode.NONE
    assert d.now == 3000


def test_error_codes_match_spec_values() -> None:
    expected = {
        "UNKNOWN_SERVER_ERROR": -1,
        "NONE": 0,
        "UNKNOWN_TOPIC_OR_PARTITION": 3,
        "OFFSET_METADATA_TOO_LARGE": 12,
        "COORDINATOR_LOAD_IN_PROGRESS": 14,
        "COORDINATOR_NOT_AVAILABLE": 15,
        "NOT_COORDINATOR": 16,
        "ILLEGAL_GENERATION": 22,
        "INCONSISTENT_GROUP_PROTOCOL": 23,
        "INVALID_GROUP_ID": 24,
        "UNKNOWN_MEMBER_ID": 25,
        "INVALID_SESSION_TIMEOUT": 26,
        "REBALANCE_IN_PROGRESS": 27,
        "GROUP_ID_NOT_FOUND": 69,
        "NON_EMPTY_GROUP": 68,
        "MEMBER_ID_REQUIRED": 79,
        "GROUP_MAX_SIZE_REACHED": 81,
        "FENCED_INSTANCE_ID": 82,
        "UNSTABLE_OFFSET_COMMIT": 88,
    }
    for name, value in expected.items():
        assert ErrorCode[name] == value


def test_config_defaults_and_kafka_property_names() -> None:
    c = GroupConfig()
    assert (c.min_session_timeout_ms, c.max_session_timeout_ms) == (6000, 1_800_000)
    assert c.initial_rebalance_delay_ms == 3000
    assert c.max_size == 2**31 - 1
    assert c.offset_metadata_max_bytes == 4096
    assert c.new_member_join_timeout_ms == 300_000
    c2 = GroupConfig.from_properties({"group.max.size": "5", "group.initial.rebalance.delay.ms": 0, "x.y": 1})
    assert (c2.max_size, c2.initial_rebalance_delay_ms) == (5, 0)
    with pytest.raises(ValueError):
        GroupConfig(max_size=0)


@pytest.mark.parametrize(
    "record",
    [
        OffsetCommitRecord("g", "t", 3, 42, 7, "meta", 1234),
        GroupTombstoneRecord("g"),
        GroupMetadataRecord("g", 0, "consumer", None, None, 5, ()),
        GroupMetadataRecord(
            "g",
            3,
            "consumer",
            "range",
            "m1",
            99,
            (MemberRecord("m1", "i1", "c", "/h", 300000, 45000, b"\x00sub", b"\x01\xffasg"),),
        ),
    ],
)
def test_records_round_trip_through_dict_and_bytes(record: Record) -> None:
    assert record_from_dict(record.to_dict()) == record
    assert decode_record(encode_record(record)) == record
    assert b"\n" not in encode_record(record)


def test_unknown_record_type_is_rejected() -> None:
    with pytest.raises(ValueError):
        record_from_dict({"type": "nope"})


def test_emit_events_can_be_switched_off() -> None:
    d = Driver(emit_events=False)
    d.stable_group(2)
    assert d.events == []
