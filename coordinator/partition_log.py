"""One partition's log: record batches with offsets, in memory and optionally in a file.

Contract
--------
* Offsets run from :attr:`PartitionLog.log_start_offset` (0; nothing is ever deleted) to
  :attr:`PartitionLog.end_offset` (the next offset to assign, the log end offset, LEO).
* :attr:`PartitionLog.hw` is the high watermark, consumers read below it. Unreplicated (the default,
  :attr:`high_watermark` None) it is the end offset: everything appended is committed. A replicated log
  keeps it as a separate value the replica manager sets with :meth:`set_high_watermark`; it is
  never above the end offset (a truncation lowers it with the end).
* :meth:`PartitionLog.append` takes batches already validated by :func:`coordinator.records.split_batches`,
  gives each the next offsets by rewriting its base offset, stores the bytes and returns the base
  offset of the first. A batch of an idempotent producer (producer id >= 0, sequence >= 0) that was
  already appended (same producer, epoch and sequence range; the last 5 batches per producer are
  remembered, as in Kafka) is not stored twice: the offset it got the first time is returned.
  Sequence gaps are accepted (Kafka would answer OUT_OF_ORDER_SEQUENCE_NUMBER).
* With a ``path`` the log is also a Kafka-format segment file (record batches back to back, exactly
  as Kafka's ``*.log`` files). Every append is written to the OS with one ``write`` before
  :meth:`append` returns, so a killed broker loses nothing it acknowledged (an OS crash may: there
  is no fsync, as in Kafka's default). Opening an existing file replays it and cuts a torn tail.
* :meth:`read` returns whole batches starting with the one that holds ``offset``; the first batch is
  returned even if it is larger than ``max_bytes`` (KIP-74), so a consumer always makes progress.
* :meth:`append_replica` is a follower's append (0.9 ``Log.append(assignOffsets = false)``): batches fetched
  from the leader keep the leader's offsets and must continue the local log exactly (first base offset ==
  end offset, each batch contiguous with the previous); otherwise :class:`NonContiguous` and nothing is stored.
* :meth:`truncate_to` drops every batch at or above an offset, in memory and in the file (0.9
  ``Log.truncateTo``, used when a follower's leader changes and at start-up from the HW checkpoint). A batch
  straddling the offset is dropped whole (replicas hold the leader's batches unchanged and high watermarks
  fall on batch ends, so this happens only with a damaged checkpoint); the new end offset is returned.
* ``listener`` (if set) is called after every append that stored something and whenever the high watermark
  moves; the broker uses it to wake long-polling fetches. Nothing else here does IO but the segment file.
"""

from __future__ import annotations

import bisect
import os
from collections import OrderedDict, deque
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

from coordinator.records import BatchInfo, batch_infos, rebase

__all__ = ["NonContiguous", "OffsetOutOfRange", "PartitionLog", "SEGMENT_NAME"]

#: The one segment file of a partition directory (Kafka names segments after their base offset).
SEGMENT_NAME = "00000000000000000000.log"
_PRODUCER_BATCH_MEMORY = 5  # Kafka's ProducerStateEntry.NumBatchesToRetain
_MAX_PRODUCERS = 10_000


class OffsetOutOfRange(ValueError):
    """The requested offset lies outside ``[log_start_offset, end_offset]``."""


class NonContiguous(ValueError):
    """A follower append whose batches do not continue the local log at its end offset."""


@dataclass(slots=True)
class _ProducerState:
    epoch: int
    # (first sequence, last sequence, base offset) of the last few batches.
    recent: deque[tuple[int, int, int]]


class PartitionLog:
    """The batches of one partition. Not thread-safe: the broker uses it from its event loop."""

    def __init__(self, path: str | os.PathLike[str] | None = None) -> None:
        self.log_start_offset = 0
        self.end_offset = 0
        #: None: unreplicated, the high watermark is the end offset; else the replicated log's HW.
        self.high_watermark: int | None = None
        self.listener: Callable[[], None] | None = None
        self._bases: list[int] = []
        self._lasts: list[int] = []
        self._max_ts: list[int] = []
        self._batches: list[bytes] = []
        self._bytes = 0
        self._producers: OrderedDict[int, _ProducerState] = OrderedDict()
        self._fd: int | None = None
        self.path = Path(path) if path is not None else None
        if self.path is not None:
            self._open(self.path)

    # ------------------------------------------------------------------ persistence

    def _open(self, path: Path) -> None:
        path.parent.mkdir(parents=True, exist_ok=True)
        if path.exists():
            data = path.read_bytes()
            valid = 0
            for info in batch_infos(data):
                self._index(info, data[valid : valid + info.size])
                valid += info.size
            if valid != len(data):
                # A torn write from a crash: keep the valid prefix only.
                with open(path, "r+b") as f:
                    f.truncate(valid)
        self._fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_APPEND, 0o644)

    def close(self) -> None:
        """Close the segment file (the in-memory batches stay readable)."""
        if self._fd is not None:
            os.close(self._fd)
            self._fd = None

    # ------------------------------------------------------------------ writing

    def _index(self, info: BatchInfo, batch: bytes) -> None:
        base = info.base_offset
        last = base + info.last_offset_delta
        self._bases.append(base)
        self._lasts.append(last)
        self._max_ts.append(info.max_timestamp)
        self._batches.append(batch)
        self._bytes += len(batch)
        self.end_offset = last + 1
        if info.producer_id >= 0 and info.base_sequence >= 0:
            self._remember(info, base)

    def _remember(self, info: BatchInfo, base: int) -> None:
        state = self._producers.get(info.producer_id)
        if state is None or info.producer_epoch != state.epoch:
            state = _ProducerState(info.producer_epoch, deque(maxlen=_PRODUCER_BATCH_MEMORY))
            self._producers[info.producer_id] = state
            if len(self._producers) > _MAX_PRODUCERS:
                self._producers.popitem(last=False)
        else:
            self._producers.move_to_end(info.producer_id)
        state.recent.append((info.base_sequence, info.base_sequence + info.last_offset_delta, base))

    def _duplicate_of(self, info: BatchInfo) -> int | None:
        """The base offset a retried idempotent batch got the first time, else None."""
        if info.producer_id < 0 or info.base_sequence < 0:
            return None
        state = self._producers.get(info.producer_id)
        if state is None or state.epoch != info.producer_epoch:
            return None
        last_seq = info.base_sequence + info.last_offset_delta
        for first, last, base in state.recent:
            if first == info.base_sequence and last == last_seq:
                return base
        return None

    def append(self, batches: list[tuple[BatchInfo, bytes]]) -> int:
        """Store ``batches`` (validated, non-empty) at the next offsets; the first one's base offset."""
        first_base: int | None = None
        stored: list[bytes] = []
        for info, batch in batches:
            dup = self._duplicate_of(info)
            if dup is not None:
                if first_base is None:
                    first_base = dup
                continue
            base = self.end_offset
            rebased = rebase(batch, base)
            self._index(
                BatchInfo(
                    base_offset=base,
                    size=info.size,
                    last_offset_delta=info.last_offset_delta,
                    max_timestamp=info.max_timestamp,
                    producer_id=info.producer_id,
                    producer_epoch=info.producer_epoch,
                    base_sequence=info.base_sequence,
                    record_count=info.record_count,
                    attributes=info.attributes,
                ),
                rebased,
            )
            stored.append(rebased)
            if first_base is None:
                first_base = base
        if stored:
            self._write(stored)
        assert first_base is not None, "append() needs at least one batch"
        return first_base

    def _write(self, stored: list[bytes]) -> None:
        if self._fd is not None:
            data = stored[0] if len(stored) == 1 else b"".join(stored)
            written = os.write(self._fd, data)
            while written < len(data):  # regular files write whole; be safe anyway
                written += os.write(self._fd, data[written:])
        if self.listener is not None:
            self.listener()

    def append_replica(self, batches: list[tuple[BatchInfo, bytes]]) -> int:
        """Store batches fetched from the leader at their own offsets (see the module docstring); returns the
        new end offset. Raises :class:`NonContiguous` (storing nothing) unless they continue the log exactly."""
        expected = self.end_offset
        for info, _batch in batches:
            if info.base_offset != expected:
                raise NonContiguous(
                    f"replica batch at offset {info.base_offset}, expected {expected} (log end {self.end_offset})"
                )
            expected = info.base_offset + info.last_offset_delta + 1
        for info, batch in batches:
            self._index(info, batch)
        if batches:
            self._write([b for _i, b in batches])
        return self.end_offset

    def truncate_to(self, offset: int) -> int:
        """Drop every batch holding an offset >= ``offset`` (memory and file); returns the new end offset.
        The high watermark, if above, comes down with it. Producer deduplication is rebuilt from what stays."""
        if offset < 0:
            raise ValueError(f"cannot truncate to a negative offset {offset}")
        if offset >= self.end_offset:
            return self.end_offset
        keep = bisect.bisect_left(self._bases, offset)
        if keep > 0 and self._lasts[keep - 1] >= offset:
            keep -= 1  # a batch straddling the offset goes whole
        kept_bytes = sum(len(b) for b in self._batches[:keep])
        del self._bases[keep:], self._lasts[keep:], self._max_ts[keep:], self._batches[keep:]
        self._bytes = kept_bytes
        self.end_offset = self._lasts[-1] + 1 if self._lasts else self.log_start_offset
        self._producers.clear()
        for base, batch in zip(self._bases, self._batches, strict=True):
            info = batch_infos(batch)[0]
            if info.producer_id >= 0 and info.base_sequence >= 0:
                self._remember(info, base)
        if self.path is not None:
            os.truncate(self.path, kept_bytes)
        if self.high_watermark is not None and self.high_watermark > self.end_offset:
            self.high_watermark = self.end_offset
        return self.end_offset

    def boundary_at_or_below(self, offset: int) -> int:
        """The largest batch end (or the log start) that is <= ``offset``: where a truncation to ``offset``
        would leave the log, and a safe high watermark when ``offset`` comes from outside (a checkpoint)."""
        if offset >= self.end_offset:
            return self.end_offset
        i = bisect.bisect_left(self._bases, offset)
        if i < len(self._bases) and self._bases[i] == offset:
            return offset
        if i > 0 and self._lasts[i - 1] >= offset:
            i -= 1
        return self._bases[i] if i < len(self._bases) else self.end_offset

    # ------------------------------------------------------------------ high watermark

    @property
    def hw(self) -> int:
        """The high watermark: the end offset when unreplicated, else the value last set (never above the end)."""
        return self.end_offset if self.high_watermark is None else self.high_watermark

    def set_high_watermark(self, hw: int) -> None:
        """Make the log replicated with high watermark ``hw`` (0 <= hw <= end offset); wakes the listener when
        it moves."""
        if not 0 <= hw <= self.end_offset:
            raise ValueError(f"high watermark {hw} outside [0, {self.end_offset}]")
        if hw == self.high_watermark:
            return
        self.high_watermark = hw
        if self.listener is not None:
            self.listener()

    # ------------------------------------------------------------------ reading

    @property
    def size_bytes(self) -> int:
        """Bytes of batch data held."""
        return self._bytes

    def read(self, offset: int, max_bytes: int, limit: int | None = None) -> bytes:
        """Whole batches from the one holding ``offset``, up to ``max_bytes`` (at least one batch).

        ``limit`` (a consumer's: the high watermark) stops before the first batch starting at or above it;
        ``offset >= limit`` (within the log) or ``offset == end_offset`` gives ``b""``; outside
        ``[log_start_offset, end_offset]`` raises :class:`OffsetOutOfRange`.
        """
        if offset < self.log_start_offset or offset > self.end_offset:
            raise OffsetOutOfRange(f"offset {offset} not in [{self.log_start_offset}, {self.end_offset}]")
        if offset == self.end_offset or (limit is not None and offset >= limit):
            return b""
        i = bisect.bisect_right(self._bases, offset) - 1
        if i < 0:
            i = 0
        n = len(self._batches) if limit is None else bisect.bisect_left(self._bases, limit)
        first = self._batches[i]
        total = len(first)
        j = i + 1
        while j < n:
            size = len(self._batches[j])
            if total + size > max_bytes:
                break
            total += size
            j += 1
        if j == i + 1:
            return first
        return b"".join(self._batches[i:j])

    def offset_for_timestamp(self, timestamp: int) -> tuple[int, int] | None:
        """``(timestamp, offset)`` of the first batch whose max timestamp is >= ``timestamp``.

        Batch granularity: the base offset of that batch (Kafka finds the exact record). None if
        no batch qualifies (ListOffsets then answers offset -1).
        """
        for i, ts in enumerate(self._max_ts):
            if ts >= timestamp:
                return ts, self._bases[i]
        return None

    def max_timestamp(self) -> tuple[int, int] | None:
        """``(max timestamp, offset of the last record of that batch)``, or None when empty."""
        if not self._max_ts:
            return None
        best = max(range(len(self._max_ts)), key=self._max_ts.__getitem__)
        return self._max_ts[best], self._lasts[best]
