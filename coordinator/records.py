"""Kafka record batches (magic v2) as opaque bytes: split, validate, re-base.

The broker never decodes individual records. A Produce request carries one or more record batches
back to back; the broker checks each batch's framing and CRC, gives it an offset by rewriting the
batch's 8-byte ``baseOffset`` (which lies outside the CRC, so the CRC stays valid) and stores the
bytes as sent. Fetch serves the stored bytes unchanged.

Batch header layout (``DefaultRecordBatch`` in Kafka's clients, all big-endian)::

    0  baseOffset            int64   <- rewritten by the broker
    8  batchLength           int32   bytes after this field
    12 partitionLeaderEpoch  int32
    16 magic                 int8    must be 2
    17 crc                   uint32  CRC-32C of bytes 21..end
    21 attributes            int16
    23 lastOffsetDelta       int32   record count = lastOffsetDelta + 1
    27 baseTimestamp         int64
    35 maxTimestamp          int64
    43 producerId            int64
    51 producerEpoch         int16
    53 baseSequence          int32
    57 recordCount           int32
    61 records...

Everything here is pure (bytes in, values out) and raises :class:`InvalidRecords` for bad input.
"""

from __future__ import annotations

import struct
from dataclasses import dataclass

import crc32c as _crc32c

__all__ = [
    "BATCH_HEADER_SIZE",
    "BatchInfo",
    "InvalidRecords",
    "batch_infos",
    "rebase",
    "split_batches",
]

BATCH_HEADER_SIZE = 61
_LOG_OVERHEAD = 12  # baseOffset + batchLength
_HEADER = struct.Struct(">qiibIhiqqqhii")
_BASE_OFFSET = struct.Struct(">q")


class InvalidRecords(ValueError):
    """The bytes are not a valid sequence of v2 record batches (corrupt, truncated, old magic)."""

    def __init__(self, message: str, *, corrupt: bool = True) -> None:
        super().__init__(message)
        #: True for framing / CRC damage (CORRUPT_MESSAGE); False for a well-formed but unsupported
        #: batch such as an old message format (INVALID_RECORD).
        self.corrupt = corrupt


@dataclass(frozen=True, slots=True)
class BatchInfo:
    """The header fields of one batch the broker needs. ``size`` is the whole batch in bytes."""

    base_offset: int
    size: int
    last_offset_delta: int
    max_timestamp: int
    producer_id: int
    producer_epoch: int
    base_sequence: int
    record_count: int
    attributes: int

    @property
    def count(self) -> int:
        """Offsets this batch occupies (``lastOffsetDelta + 1``)."""
        return self.last_offset_delta + 1

    @property
    def is_control(self) -> bool:
        return bool(self.attributes & 0x20)


def _parse_header(data: bytes | memoryview, pos: int) -> tuple[BatchInfo, int]:
    """The batch header at ``pos`` and its magic byte (the caller checks there are 61 bytes)."""
    (
        base_offset,
        batch_length,
        _leader_epoch,
        magic,
        _crc,
        attributes,
        last_offset_delta,
        _base_ts,
        max_ts,
        producer_id,
        producer_epoch,
        base_sequence,
        record_count,
    ) = _HEADER.unpack_from(data, pos)
    return BatchInfo(
        base_offset=base_offset,
        size=batch_length + _LOG_OVERHEAD,
        last_offset_delta=last_offset_delta,
        max_timestamp=max_ts,
        producer_id=producer_id,
        producer_epoch=producer_epoch,
        base_sequence=base_sequence,
        record_count=record_count,
        attributes=attributes,
    ), magic


def split_batches(data: bytes, *, verify_crc: bool = True) -> list[tuple[BatchInfo, bytes]]:
    """Split a Produce payload into ``(info, batch_bytes)`` pairs, validating every batch.

    Checks: at least one batch; each header complete; ``batchLength`` within the data; magic 2;
    non-negative ``lastOffsetDelta`` and ``recordCount``; CRC-32C over bytes 21..end when
    ``verify_crc``. Raises :class:`InvalidRecords`; nothing is returned for a partly valid payload.
    """
    if not data:
        raise InvalidRecords("empty record set")
    out: list[tuple[BatchInfo, bytes]] = []
    pos = 0
    n = len(data)
    view = memoryview(data)
    while pos < n:
        if n - pos < BATCH_HEADER_SIZE:
            if n - pos >= 17 and data[pos + 16] != 2:
                raise InvalidRecords(f"record batch magic {data[pos + 16]} not supported", corrupt=False)
            raise InvalidRecords(f"truncated record batch header at byte {pos}")
        info, magic = _parse_header(view, pos)
        if magic != 2:
            raise InvalidRecords(f"record batch magic {magic} not supported (only v2)", corrupt=False)
        if info.size < BATCH_HEADER_SIZE or pos + info.size > n:
            raise InvalidRecords(f"record batch length {info.size} out of bounds at byte {pos}")
        if info.last_offset_delta < 0 or info.record_count < 0:
            raise InvalidRecords("negative record count in batch header")
        end = pos + info.size
        if verify_crc:
            (crc,) = struct.unpack_from(">I", data, pos + 17)
            if _crc32c.crc32c(view[pos + 21 : end]) != crc:
                raise InvalidRecords(f"record batch CRC mismatch at byte {pos}")
        out.append((info, bytes(view[pos:end])))
        pos = end
    return out


def rebase(batch: bytes, base_offset: int) -> bytes:
    """``batch`` with its ``baseOffset`` field set to ``base_offset`` (CRC unaffected)."""
    return _BASE_OFFSET.pack(base_offset) + batch[8:]


def batch_infos(data: bytes | memoryview) -> list[BatchInfo]:
    """Headers of stored (already validated) batches, e.g. when replaying a log file.

    Stops at the first incomplete batch (a torn tail after a crash); the caller compares the
    summed sizes with the data length to find where the valid prefix ends.
    """
    infos: list[BatchInfo] = []
    pos = 0
    n = len(data)
    while n - pos >= BATCH_HEADER_SIZE:
        info, magic = _parse_header(data, pos)
        if magic != 2 or info.size < BATCH_HEADER_SIZE or pos + info.size > n:
            break
        infos.append(info)
        pos += info.size
    return infos
