"""Topic store and durable group log: names, partitions, files found again, torn tails, compaction."""

from __future__ import annotations

import logging
from pathlib import Path

import pytest

from coordinator.core.group.records import (
    GroupMetadataRecord,
    GroupTombstoneRecord,
    MemberRecord,
    OffsetCommitRecord,
    encode_record,
)
from coordinator.groups.log import LOG_NAME, GroupLog, live_records
from coordinator.records import split_batches
from coordinator.topics import InvalidPartitions, InvalidTopic, TopicExists, TopicStore, validate_topic_name
from tests.support.batches import batch


@pytest.mark.parametrize("name", ["", ".", "..", "a b", "x" * 250, "ü", "a/b"])
def test_illegal_topic_names(name: str) -> None:
    with pytest.raises(InvalidTopic):
        validate_topic_name(name)


def test_legal_topic_names() -> None:
    for name in ("t", "a.b-c_D9", "x" * 249, "__consumer_offsets"):
        validate_topic_name(name)


def test_create_grow_and_errors() -> None:
    store = TopicStore()
    seen = []
    store.listeners.append(lambda t: seen.append((t.name, len(t.partitions))))
    t = store.create("t", 2)
    assert store.get("t") is t and store.by_id(t.topic_id) is t
    with pytest.raises(TopicExists):
        store.create("t", 1)
    with pytest.raises(InvalidPartitions):
        store.create("u", 0)
    store.add_partitions("t", 4)
    with pytest.raises(InvalidPartitions):
        store.add_partitions("t", 4)
    with pytest.raises(KeyError):
        store.add_partitions("nope", 2)
    assert store.create("v", 3, validate_only=True).name == "v" and store.get("v") is None
    assert seen == [("t", 2), ("t", 4)]


def test_topics_and_records_are_found_again(tmp_path: Path) -> None:
    store = TopicStore(tmp_path)
    t = store.create("orders", 3)
    t.partitions[1].append(split_batches(batch([b"a", b"b"])))
    store.add_partitions("orders", 4)
    store.close()
    again = TopicStore(tmp_path)
    t2 = again.get("orders")
    assert t2 is not None and t2.topic_id == t.topic_id
    assert len(t2.partitions) == 4
    assert [p.end_offset for p in t2.partitions] == [0, 2, 0, 0]
    again.close()


def _offset(group: str, partition: int, offset: int) -> OffsetCommitRecord:
    return OffsetCommitRecord(group, "t", partition, offset, -1, "", 1000 + offset)


def _group(group: str, generation: int) -> GroupMetadataRecord:
    member = MemberRecord("m-1", None, "c", "/127.0.0.1", 300000, 6000, b"sub", b"asg")
    return GroupMetadataRecord(group, generation, "consumer", "range", "m-1", 1000, (member,))


def test_group_log_replays_in_order_and_drops_a_torn_line(tmp_path: Path) -> None:
    log = GroupLog(tmp_path)
    records = [_group("g", 1), _offset("g", 0, 5), _offset("g", 0, 7), GroupTombstoneRecord("h")]
    log.append(records[:2])
    log.append(records[2:])
    log.close()
    with open(tmp_path / LOG_NAME, "ab") as f:
        f.write(b'{"type":"offset","group_id":"g"')  # killed mid-write
    again = GroupLog(tmp_path)
    assert list(again.replay()) == records
    assert (tmp_path / LOG_NAME).read_bytes().endswith(b"\n")
    again.append([_offset("g", 1, 1)])
    again.close()
    assert list(GroupLog(tmp_path).replay())[-1] == _offset("g", 1, 1)


@pytest.mark.parametrize(
    "garbage",
    [
        b"not json",
        b'{"type":"offset","group_id":"g","topic":',  # cut short
        b'{"type":"group","group_id":"g"}',  # a field missing
        b'{"type":"offset","group_id":"g","topic":"t","partition":"x","offset":1}',  # a bad value
        b"[1, 2]",
        b'{"type":"nope"}',
        b"\xff\xfe",
    ],
)
def test_group_log_skips_a_line_that_is_not_a_record_and_keeps_the_rest(
    tmp_path: Path, garbage: bytes, caplog: pytest.LogCaptureFixture
) -> None:
    before, after = _offset("g", 0, 5), _group("h", 2)
    (tmp_path / LOG_NAME).write_bytes(
        encode_record(before) + b"\n" + garbage + b"\n" + encode_record(after) + b"\n"
    )
    log = GroupLog(tmp_path)
    with caplog.at_level(logging.WARNING, logger="coordinator"):
        assert list(log.replay_lines()) == [(1, before), (3, after)]
    assert log.skipped == 1
    [warning] = [r.getMessage() for r in caplog.records if r.levelno == logging.WARNING]
    assert f"{tmp_path / LOG_NAME} line 2 skipped" in warning


def test_a_log_with_skipped_lines_is_not_compacted(tmp_path: Path) -> None:
    data = b"".join(encode_record(_offset("g", 0, i)) + b"\n" for i in range(12_000)) + b"garbage\n"
    (tmp_path / LOG_NAME).write_bytes(data)
    assert list(GroupLog(tmp_path).replay())[-1] == _offset("g", 0, 11_999)
    assert (tmp_path / LOG_NAME).read_bytes() == data  # the damaged line stays for a human to see


def test_live_records_keeps_last_writer_and_honours_tombstones() -> None:
    records = [
        _group("g", 1),
        _offset("g", 0, 1),
        _offset("h", 0, 1),
        _offset("g", 0, 2),
        _group("g", 2),
        GroupTombstoneRecord("h"),
        _offset("h", 1, 9),
    ]
    assert live_records(records) == [_offset("g", 0, 2), _group("g", 2), _offset("h", 1, 9)]


def test_group_log_compacts_a_mostly_superseded_log(tmp_path: Path) -> None:
    log = GroupLog(tmp_path)
    log.append([_offset("g", 0, i) for i in range(12_000)] + [_group("g", 3)])
    log.close()
    replayed = list(GroupLog(tmp_path).replay())
    assert replayed == [_offset("g", 0, 11_999), _group("g", 3)]
    assert len((tmp_path / LOG_NAME).read_bytes().splitlines()) == 2
