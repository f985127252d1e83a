"""The broker's 0.8-layout znode payloads come from the one codec, :mod:`legacy_zk.paths`, byte for byte."""

from __future__ import annotations

import pytest

from coordinator.zookeeper.registration import topic_payload
from legacy_zk.paths import (
    MalformedZnode,
    decode_broker,
    decode_topic_partitions,
    decode_topic_replicas,
    encode_broker_v4,
)


def test_broker_registration_is_the_version_4_json_kafka_writes() -> None:
    expected = (
        b'{"listener_security_protocol_map":{"PLAINTEXT":"PLAINTEXT"},'
        b'"endpoints":["PLAINTEXT://127.0.0.1:9092"],"jmx_port":-1,"host":"127.0.0.1",'
        b'"timestamp":"1700000000123","port":9092,"version":4}'
    )
    data = encode_broker_v4("127.0.0.1", 9092, 1700000000123)
    assert data == expected
    assert decode_broker("/brokers/ids/0", data) == ("127.0.0.1", 9092)  # what a 0.8 consumer reads


def test_topic_payload_lists_this_broker_as_every_partitions_only_replica() -> None:
    data = topic_payload(3, 7)
    assert data == b'{"version":1,"partitions":{"0":[7],"1":[7],"2":[7]}}'
    assert decode_topic_partitions("/brokers/topics/t", data) == [0, 1, 2]
    assert decode_topic_replicas("/brokers/topics/t", data) == {0: [7], 1: [7], 2: [7]}


@pytest.mark.parametrize(
    "data", [b"not json", b"{}", b'{"partitions":[]}', b'{"partitions":{"x":[1]}}', b'{"partitions":{"0":5}}']
)
def test_an_unreadable_topic_znode_is_malformed(data: bytes) -> None:
    with pytest.raises(MalformedZnode, match="/brokers/topics/t"):
        decode_topic_replicas("/brokers/topics/t", data)
