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

:func:`validate_produce` is what a Produce payload (one partition, from a client) must pass before anything
is appended, in Kafka 3.7.0's order: ``UnifiedLog.analyzeAndValidateRecords`` per batch (base offset 0,
then CRC), then ``LogValidator.getFirstBatchAndMaybeValidateNoMoreBatches`` (magic 2: exactly one batch) and
``LogValidator.validateBatch`` (offset range, record count, their agreement, no control batch, a sequence for
an idempotent producer).
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
    "decode_records",
    "encode_batch",
    "rebase",
    "split_batches",
    "validate_produce",
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


def split_batches(
    data: bytes, *, verify_crc: bool = True, from_client: bool = False
) -> list[tuple[BatchInfo, bytes]]:
    """Split record batches into ``(info, batch_bytes)`` pairs, checking the framing of every batch.

    Checks: at least one batch; each header complete; ``batchLength`` within the data; magic 2;
    with ``from_client`` a ``baseOffset`` of 0 (Kafka ``analyzeAndValidateRecords``: "The baseOffset of the
    record batch ... should be 0"); CRC-32C over bytes 21..end when ``verify_crc``. The counts are not checked
    here (see :func:`validate_produce`). Raises :class:`InvalidRecords`; nothing is returned for a partly
    valid payload.
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
        if from_client and info.base_offset != 0:
            raise InvalidRecords(
                f"the base offset of a client's batch must be 0, not {info.base_offset}", corrupt=False
            )
        end = pos + info.size
        if verify_crc:
            (crc,) = struct.unpack_from(">I", data, pos + 17)
            if _crc32c.crc32c(view[pos + 21 : end]) != crc:
                raise InvalidRecords(f"record batch CRC mismatch at byte {pos}")
        out.append((info, bytes(view[pos:end])))
        pos = end
    return out


def validate_produce(data: bytes) -> list[tuple[BatchInfo, bytes]]:
    """The one batch of a client's Produce payload for one partition, checked as Kafka 3.7.0 checks it (see the
    module docstring); raises :class:`InvalidRecords` (``corrupt`` for framing and CRC damage: CORRUPT_MESSAGE;
    otherwise INVALID_RECORD). The broker assigns offsets itself, so a batch must describe its own offset range
    consistently: ``lastOffsetDelta + 1 == recordCount > 0``."""
    batches = split_batches(data, from_client=True)
    if len(batches) > 1:
        # LogValidator.getFirstBatchAndMaybeValidateNoMoreBatches: magic >= 2 means one batch per partition.
        raise InvalidRecords(f"{len(batches)} record batches for one partition: v2 allows one", corrupt=False)
    info = batches[0][0]
    # LogValidator.validateBatch (origin CLIENT, magic 2), in its order.
    count_from_offsets = info.last_offset_delta + 1
    if count_from_offsets <= 0:
        raise InvalidRecords(f"invalid offset range: lastOffsetDelta {info.last_offset_delta}", corrupt=False)
    if info.record_count <= 0:
        raise InvalidRecords(f"invalid record count {info.record_count}", corrupt=False)
    if count_from_offsets != info.record_count:
        raise InvalidRecords(
            f"inconsistent batch: offset range of {count_from_offsets} for {info.record_count} records",
            corrupt=False,
        )
    if info.is_control:
        raise InvalidRecords("clients may not write control batches", corrupt=False)
    if info.producer_id >= 0 and info.base_sequence < 0:
        raise InvalidRecords(
            f"invalid sequence {info.base_sequence} for producer id {info.producer_id}", corrupt=False
        )
    return batches


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


# ---------------------------------------------------------------------------------------------- building


def _varint(value: int) -> bytes:
    """Kafka's zig-zag varint (``ByteUtils.writeVarint`` / ``writeVarlong``)."""
    zz = (value << 1) ^ (value >> 63)
    out = bytearray()
    while zz & ~0x7F:
        out.append((zz & 0x7F) | 0x80)
        zz >>= 7
    out.append(zz)
    return bytes(out)


def _read_varint(data: bytes | memoryview, pos: int) -> tuple[int, int]:
    shift = 0
    zz = 0
    while True:
        if pos >= len(data):
            raise InvalidRecords("truncated varint in a record")
        byte = data[pos]
        pos += 1
        zz |= (byte & 0x7F) << shift
        if not byte & 0x80:
            break
        shift += 7
        if shift > 63:
            raise InvalidRecords("varint longer than 10 bytes")
    return (zz >> 1) ^ -(zz & 1), pos


def encode_batch(entries: list[tuple[bytes | None, bytes | None]], timestamp_ms: int) -> bytes:
    """One uncompressed v2 record batch of ``entries`` (key, value), base offset 0, every record at
    ``timestamp_ms``, no producer id, no headers: what the broker itself appends (group metadata and offsets,
    Kafka's ``GroupMetadataManager`` builds the same shape). ``entries`` must not be empty."""
    if not entries:
        raise ValueError("a record batch needs at least one record")
    body = bytearray()
    for delta, (key, value) in enumerate(entries):
        rec = bytearray(b"\x00")  # attributes
        rec += _varint(0)  # timestamp delta
        rec += _varint(delta)
        rec += _varint(-1) if key is None else _varint(len(key)) + key
        rec += _varint(-1) if value is None else _varint(len(value)) + value
        rec += _varint(0)  # headers
        body += _varint(len(rec)) + rec
    n = len(entries)
    after_crc = struct.pack(">hiqqqhii", 0, n - 1, timestamp_ms, timestamp_ms, -1, -1, -1, n) + bytes(body)
    crc = _crc32c.crc32c(after_crc)
    batch_length = 4 + 1 + 4 + len(after_crc)  # leader epoch, magic, crc, rest
    return struct.pack(">qiibI", 0, batch_length, -1, 2, crc) + after_crc


def decode_records(batch: bytes) -> list[tuple[bytes | None, bytes | None]]:
    """(key, value) of every record of one uncompressed v2 batch (headers skipped); compressed batches raise
    :class:`InvalidRecords` (the broker reads back only batches it built with :func:`encode_batch`)."""
    info, magic = _parse_header(batch, 0)
    if magic != 2:
        raise InvalidRecords(f"record batch magic {magic} not supported (only v2)", corrupt=False)
    if info.attributes & 0x07:
        raise InvalidRecords("compressed record batches are not decoded here", corrupt=False)
    view = memoryview(batch)
    pos = BATCH_HEADER_SIZE
    out: list[tuple[bytes | None, bytes | None]] = []
    for _ in range(info.record_count):
        length, pos = _read_varint(view, pos)
        end = pos + length
        if end > info.size:
            raise InvalidRecords("record extends past its batch")
        pos += 1  # attributes
        _, pos = _read_varint(view, pos)  # timestamp delta
        _, pos = _read_varint(view, pos)  # offset delta
        fields: list[bytes | None] = []
        for _field in range(2):
            size, pos = _read_varint(view, pos)
            if size < 0:
                fields.append(None)
            else:
                fields.append(bytes(view[pos : pos + size]))
                pos += size
        out.append((fields[0], fields[1]))
        pos = end
    return out
