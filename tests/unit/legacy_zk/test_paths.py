"""ZooKeeper layout and payload codecs of 0.8 (spec 1.4)."""

from __future__ import annotations

import json

import pytest

from legacy_zk import paths


def test_paths_follow_the_0_8_layout() -> None:
    assert paths.id_path("g", "g_c") == "/consumers/g/ids/g_c"
    assert paths.owner_path("g", "t", 3) == "/consumers/g/owners/t/3"
    assert paths.offset_path("g", "t", 3) == "/consumers/g/offsets/t/3"
    assert paths.topic_path("t") == "/brokers/topics/t"
    assert paths.parent("/consumers/g/owners/t/3") == "/consumers/g/owners/t"


def test_registration_is_byte_identical_to_0_8() -> None:
    data = paths.encode_registration({"t": 2}, 1418326578421)
    assert data == b'{"version":1,"subscription":{"t":2},"pattern":"static","timestamp":"1418326578421"}'
    reg = paths.decode_registration("/p", data)
    assert reg.subscription == {"t": 2} and reg.pattern == "static" and reg.timestamp_ms == 1418326578421


@pytest.mark.parametrize(
    "payload",
    [
        b"",
        b"not json",
        b"[1,2]",
        b'{"subscription":{"t":1}}',
        b'{"pattern":"static"}',
        b'{"pattern":"odd","subscription":{"t":1}}',
        b'{"pattern":"static","subscription":{"t":0}}',
        b'{"pattern":"static","subscription":{"t":"1"}}',
        b'{"pattern":"white_list","subscription":{"a":1,"b":1}}',
        b"\xff\xfe",
    ],
)
def test_malformed_registrations_raise_a_named_error(payload: bytes) -> None:
    with pytest.raises(paths.MalformedZnode, match="/consumers/g/ids/x"):
        paths.decode_registration("/consumers/g/ids/x", payload)


def test_wildcard_registration_resolves_against_the_topic_list() -> None:
    white = paths.decode_registration(
        "/p", b'{"version":1,"subscription":{"a.*, b1":1},"pattern":"white_list"}'
    )
    assert white.topics(["a1", "a2", "b1", "b2", "__consumer_offsets"]) == {"a1": 1, "a2": 1, "b1": 1}
    black = paths.Registration({"a.*": 2}, paths.BLACK_LIST)
    assert black.topics(["a1", "b1", "__consumer_offsets"]) == {"b1": 2}
    assert black.topics(["__consumer_offsets"], exclude_internal=False) == {"__consumer_offsets": 2}


def test_topic_znode_partitions_sorted_numerically() -> None:
    data = paths.encode_topic({10: [0], 2: [0], 0: [1, 2]})
    assert json.loads(data) == {"version": 1, "partitions": {"0": [1, 2], "2": [0], "10": [0]}}
    assert paths.decode_topic_partitions("/t", b'{"version":1,"partitions":{"10":[0],"2":[0],"0":[0]}}') == [
        0,
        2,
        10,
    ]
    with pytest.raises(paths.MalformedZnode):
        paths.decode_topic_partitions("/t", b'{"version":1}')
    with pytest.raises(paths.MalformedZnode):
        paths.decode_topic_partitions("/t", b'{"partitions":{"x":[0]}}')


def test_broker_registrations_v1_and_endpoints() -> None:
    assert paths.decode_broker("/b", paths.encode_broker("h1", 9092, 1)) == ("h1", 9092)
    v2 = b'{"version":2,"host":null,"port":-1,"endpoints":["PLAINTEXT://10.0.0.1:9093"]}'
    assert paths.decode_broker("/b", v2) == ("10.0.0.1", 9093)
    with pytest.raises(paths.MalformedZnode):
        paths.decode_broker("/b", b"{}")


def test_offsets_are_decimal_strings() -> None:
    assert paths.encode_offset(42) == b"42"
    assert paths.decode_offset("/o", b"42") == 42
    with pytest.raises(paths.MalformedZnode):
        paths.decode_offset("/o", b"forty-two")
