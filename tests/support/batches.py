"""Kafka record batches built and read back by kafka-python (an independent codec), for the broker's tests."""

from __future__ import annotations

from kafka.record.memory_records import MemoryRecords, MemoryRecordsBuilder


def batch(
    values: list[bytes], *, producer_id: int = -1, epoch: int = -1, seq: int = -1, ts: int = 1000
) -> bytes:
    """One v2 record batch (kafka-python's builder, uncompressed) holding ``values`` with null keys and
    timestamps ``ts, ts + 1, ...``; ``producer_id``/``epoch``/``seq`` set the idempotence fields."""
    b = MemoryRecordsBuilder(
        magic=2,
        compression_type=0,
        batch_size=1 << 20,
        producer_id=producer_id,
        producer_epoch=epoch,
        base_sequence=seq,
    )
    for i, v in enumerate(values):
        b.append(ts + i, None, v)
    b.close()
    return bytes(b.buffer())


def read_back(data: bytes) -> list[tuple[int, bytes]]:
    """(offset, value) of every record, decoded by kafka-python (which checks CRCs)."""
    out = []
    records = MemoryRecords(data)
    while records.has_next():
        b = records.next_batch()
        assert b.validate_crc()
        out.extend((r.offset, r.value) for r in b)
    return out
