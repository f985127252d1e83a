"""Record batches and partition logs: validation, offset assignment, reads, files, idempotent retries."""

from __future__ import annotations

import struct
from pathlib import Path

import pytest

from coordinator.partition_log import SEGMENT_NAME, OffsetOutOfRange, PartitionLog
from coordinator.records import InvalidRecords, rebase, split_batches
from tests.support.batches import batch, read_back


def test_split_batches_reads_headers_and_counts() -> None:
    data = batch([b"a", b"b", b"c"]) + batch([b"d"])
    parts = split_batches(data)
    assert [info.count for info, _ in parts] == [3, 1]
    assert b"".join(raw for _, raw in parts) == data


@pytest.mark.parametrize(
    "mutate, corrupt",
    [
        (lambda d: d[:-1], True),  # truncated batch
        (lambda d: d[:30], True),  # truncated header
        (lambda d: d[:17] + bytes([d[17] ^ 0xFF]) + d[18:], True),  # CRC damaged
        (lambda d: d[:-3] + b"xyz", True),  # payload damaged
        (lambda d: d[:16] + b"\x01" + d[17:], False),  # old magic
        (lambda d: d[:8] + struct.pack(">i", 10) + d[12:], True),  # length too small
        (lambda d: b"", True),
    ],
)
def test_split_batches_rejects_bad_input(mutate, corrupt) -> None:
    with pytest.raises(InvalidRecords) as e:
        split_batches(mutate(batch([b"hello", b"world"])))
    assert e.value.corrupt is corrupt


def test_rebase_keeps_the_crc_valid() -> None:
    raw = batch([b"x", b"y"])
    moved = rebase(raw, 41)
    assert read_back(moved) == [(41, b"x"), (42, b"y")]


def test_append_assigns_consecutive_offsets_and_reads_whole_batches() -> None:
    log = PartitionLog()
    assert log.append(split_batches(batch([b"a", b"b"]))) == 0
    assert log.append(split_batches(batch([b"c"]) + batch([b"d", b"e"]))) == 2
    assert log.end_offset == 5
    assert read_back(log.read(0, 1 << 20)) == [(0, b"a"), (1, b"b"), (2, b"c"), (3, b"d"), (4, b"e")]
    # An offset inside a batch returns that whole batch (the client skips earlier records).
    assert read_back(log.read(4, 1 << 20)) == [(3, b"d"), (4, b"e")]
    assert log.read(5, 100) == b""
    with pytest.raises(OffsetOutOfRange):
        log.read(6, 100)
    with pytest.raises(OffsetOutOfRange):
        log.read(-1, 100)


def test_read_respects_max_bytes_but_returns_at_least_one_batch() -> None:
    log = PartitionLog()
    for i in range(3):
        log.append(split_batches(batch([bytes([i]) * 500])))
    one = len(log.read(0, 1))
    assert read_back(log.read(0, 1)) == [(0, b"\x00" * 500)]
    assert len(read_back(log.read(0, 2 * one))) == 2
    assert len(read_back(log.read(0, 10 * one))) == 3


def test_listener_is_called_after_append() -> None:
    log = PartitionLog()
    calls = []
    log.listener = lambda: calls.append(log.end_offset)
    log.append(split_batches(batch([b"a"])))
    assert calls == [1]


def test_idempotent_retry_is_not_stored_twice() -> None:
    log = PartitionLog()
    first = batch([b"a", b"b"], producer_id=7, epoch=0, seq=0)
    assert log.append(split_batches(first)) == 0
    assert log.append(split_batches(batch([b"c"], producer_id=7, epoch=0, seq=2))) == 2
    assert log.append(split_batches(first)) == 0  # the retry gets its original offset
    assert log.end_offset == 3
    # Same sequences from a new epoch (or another producer) are new data.
    assert log.append(split_batches(batch([b"a", b"b"], producer_id=7, epoch=1, seq=0))) == 3
    assert log.append(split_batches(batch([b"a", b"b"], producer_id=8, epoch=0, seq=0))) == 5
    assert log.end_offset == 7


def test_timestamp_lookups() -> None:
    log = PartitionLog()
    log.append(split_batches(batch([b"a", b"b"], ts=1000)))
    log.append(split_batches(batch([b"c"], ts=5000)))
    assert log.offset_for_timestamp(1001) == (1001, 0)
    assert log.offset_for_timestamp(4000) == (5000, 2)
    assert log.offset_for_timestamp(6000) is None
    assert log.max_timestamp() == (5000, 2)


def test_file_backed_log_survives_reopen_and_cuts_a_torn_tail(tmp_path: Path) -> None:
    path = tmp_path / "t-0" / SEGMENT_NAME
    log = PartitionLog(path)
    log.append(split_batches(batch([b"a", b"b"], producer_id=3, epoch=0, seq=0)))
    log.append(split_batches(batch([b"c"])))
    log.close()
    with open(path, "ab") as f:  # a crash in the middle of a write
        f.write(batch([b"torn"])[:20])
    again = PartitionLog(path)
    assert again.end_offset == 3
    assert read_back(again.read(0, 1 << 20)) == [(0, b"a"), (1, b"b"), (2, b"c")]
    assert path.stat().st_size == len(again.read(0, 1 << 20))
    # Producer state is rebuilt too: a retry after the restart is still recognised.
    assert again.append(split_batches(batch([b"a", b"b"], producer_id=3, epoch=0, seq=0))) == 0
    assert again.append(split_batches(batch([b"d"]))) == 3
    again.close()
    assert read_back(PartitionLog(path).read(0, 1 << 20))[-1] == (3, b"d")
