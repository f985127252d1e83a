"""PartitionLog as a replica: follower appends keep the leader's offsets, truncation (memory and
file), the separate high watermark consumers read below, and the 0.9 high-watermark checkpoint file."""

from __future__ import annotations

from pathlib import Path

import pytest

from coordinator.partition_log import SEGMENT_NAME, NonContiguous, PartitionLog
from coordinator.records import decode_records, encode_batch, split_batches
from coordinator.replicas.checkpoint import read_checkpoint, write_checkpoint
from tests.support.batches import batch, read_back


def _leader_with(values: list[list[bytes]]) -> PartitionLog:
    leader = PartitionLog()
    for vs in values:
        leader.append(split_batches(batch(vs)))
    return leader


def test_follower_append_keeps_the_leaders_offsets_and_bytes(tmp_path: Path) -> None:
    leader = _leader_with([[b"a", b"b"], [b"c"], [b"d", b"e", b"f"]])  # offsets 0-1, 2, 3-5
    follower = PartitionLog(tmp_path / SEGMENT_NAME)
    fetched = split_batches(leader.read(0, 1 << 20))
    assert follower.append_replica(fetched[:2]) == 3
    assert follower.append_replica(fetched[2:]) == 6
    assert follower.read(0, 1 << 20) == leader.read(0, 1 << 20)
    assert (tmp_path / SEGMENT_NAME).read_bytes() == leader.read(0, 1 << 20)
    assert read_back(follower.read(3, 1 << 20)) == [(3, b"d"), (4, b"e"), (5, b"f")]


def test_follower_append_must_continue_the_log() -> None:
    leader = _leader_with([[b"a", b"b"], [b"c"]])
    follower = PartitionLog()
    batches = split_batches(leader.read(0, 1 << 20))
    with pytest.raises(NonContiguous):
        follower.append_replica(batches[1:])  # starts at 2, log ends at 0
    with pytest.raises(NonContiguous):
        follower.append_replica([batches[0], batches[0]])  # second one overlaps
    assert follower.end_offset == 0 and follower.read(0, 1 << 20) == b""


def test_truncate_drops_the_tail_in_memory_and_file_and_appends_continue(tmp_path: Path) -> None:
    path = tmp_path / SEGMENT_NAME
    log = PartitionLog(path)
    for vs in ([b"a", b"b"], [b"c"], [b"d", b"e"]):  # 0-1, 2, 3-4
        log.append(split_batches(batch(vs)))
    first_two = len(batch([b"a", b"b"])) + len(batch([b"c"]))
    assert log.truncate_to(3) == 3
    assert path.stat().st_size == first_two
    assert read_back(log.read(0, 1 << 20)) == [(0, b"a"), (1, b"b"), (2, b"c")]
    # a batch straddling the offset goes whole: offset 1 lies inside batch 0-1
    assert log.truncate_to(1) == 0
    assert path.stat().st_size == 0
    log.append(split_batches(batch([b"x"])))
    log.close()
    reopened = PartitionLog(path)
    assert read_back(reopened.read(0, 1 << 20)) == [(0, b"x")]
    reopened.close()


def test_truncate_forgets_truncated_idempotent_batches() -> None:
    log = PartitionLog()
    log.append(split_batches(batch([b"a"], producer_id=7, epoch=0, seq=0)))
    log.append(split_batches(batch([b"b"], producer_id=7, epoch=0, seq=1)))
    log.truncate_to(1)
    # seq 1 was truncated away: appending it again stores it (offset 1), seq 0 is still a duplicate (offset 0)
    assert log.append(split_batches(batch([b"b"], producer_id=7, epoch=0, seq=1))) == 1
    assert log.append(split_batches(batch([b"a"], producer_id=7, epoch=0, seq=0))) == 0
    assert log.end_offset == 2


def test_high_watermark_is_the_end_unless_set_and_limits_reads() -> None:
    log = _leader_with([[b"a", b"b"], [b"c"], [b"d"]])  # 0-1, 2, 3
    assert log.hw == 4
    woken: list[int] = []
    log.listener = lambda: woken.append(log.hw)
    log.set_high_watermark(2)
    log.set_high_watermark(2)  # unchanged: no wake-up
    assert woken == [2]
    assert read_back(log.read(0, 1 << 20, limit=log.hw)) == [(0, b"a"), (1, b"b")]
    assert log.read(2, 1 << 20, limit=log.hw) == b""
    assert read_back(log.read(2, 1 << 20)) == [(2, b"c"), (3, b"d")]  # a replica's read: up to the end
    with pytest.raises(ValueError):
        log.set_high_watermark(5)
    log.truncate_to(2)
    log.set_high_watermark(2)
    log.truncate_to(0)
    assert log.hw == 0


def test_checkpoint_round_trip_and_format(tmp_path: Path) -> None:
    path = tmp_path / "replication-offset-checkpoint"
    assert read_checkpoint(path) == {}
    write_checkpoint(path, {("t", 1): 42, ("__consumer_offsets", 7): 3})
    assert path.read_text() == "0\n2\n__consumer_offsets 7 3\nt 1 42\n"
    assert read_checkpoint(path) == {("t", 1): 42, ("__consumer_offsets", 7): 3}
    path.write_text("0\n2\nt 1 42\n")
    with pytest.raises(ValueError, match="malformed high-watermark checkpoint"):
        read_checkpoint(path)


def test_encode_batch_is_read_back_by_kafka_python_and_decode_records() -> None:
    entries: list[tuple[bytes | None, bytes | None]] = [(b"k1", b"v1"), (None, b"v2"), (b"k3", None)]
    data = encode_batch(entries, 1_700_000_000_000)
    ((info, _raw),) = split_batches(data, from_client=True)  # framing, CRC and base offset 0 check out
    assert info.record_count == 3 and info.last_offset_delta == 2
    assert read_back(data) == [(0, b"v1"), (1, b"v2"), (2, None)]
    assert decode_records(data) == entries
    with pytest.raises(ValueError):
        encode_batch([], 0)


def test_boundary_at_or_below_is_a_batch_end() -> None:
    log = _leader_with([[b"a", b"b"], [b"c"], [b"d", b"e"]])  # batches 0-1, 2, 3-4
    assert [log.boundary_at_or_below(i) for i in range(7)] == [0, 0, 2, 3, 3, 5, 5]


def test_core_follower_truncate_lowers_leo_and_hw() -> None:
    from coordinator.core.replication import Partition, PartitionState, ReplicationError

    core = Partition("t", 0, 2, now_ms=0, leo=5, hw=4)
    core.become_follower(PartitionState(1, 0, (1, 2), 1), 0, (1, 2), now_ms=0)  # truncates to HW 4
    assert (core.leo, core.hw) == (4, 4)
    assert core.follower_truncate(3) == 3 and core.hw == 3
    assert core.follower_truncate(10) == 3  # never lengthens
    leader = Partition("t", 0, 1, now_ms=0)
    leader.become_leader(PartitionState(1, 0, (1,), 1), 0, (1, 2), now_ms=0)
    with pytest.raises(ReplicationError):
        leader.follower_truncate(0)
