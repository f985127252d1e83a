"""The durable group log: this broker's ``__consumer_offsets``, as an append-only file of JSON lines.

Contract
--------
* One record per line, encoded with :func:`coordinator.core.group.records.encode_record` (group metadata,
  one committed offset, or a consumer group's record). :meth:`GroupLog.append` writes whole lines with one ``write`` call per
  batch, so a killed broker leaves at most one torn line at the end, which :meth:`GroupLog.replay`
  drops (and cuts from the file).
* :meth:`GroupLog.replay` yields every record in the order it was written. A line that does not
  decode as a record (a bit flip, a hand edit, a line from an incompatible version) is skipped with
  a warning naming the file and line, and everything before and after it is still replayed, as
  Kafka 3.7's ``GroupMetadataManager.doLoadGroupsAndOffsets`` skips a record it cannot read
  ("Unknown message key ... Ignoring it"). :attr:`GroupLog.skipped` counts such lines.
* Compaction: a log whose records are mostly superseded is rewritten on open, keeping exactly what
  replay keeps (:func:`live_records`: last writer wins per key, tombstones delete a group's earlier
  records) in the original order. The rewrite goes to a temporary file that replaces the log
  atomically. A log with skipped lines is never compacted, so the damaged lines stay for a human.
* No fsync (like Kafka's defaults): a process crash loses nothing written, an OS crash may.
"""

from __future__ import annotations

import contextlib
import logging
import os
from collections.abc import Iterable, Iterator
from pathlib import Path

from coordinator.core.group.consumer_records import (
    TOMBSTONE_CURRENT,
    TOMBSTONE_GROUP,
    TOMBSTONE_MEMBER,
    TOMBSTONE_TARGET,
    TOMBSTONE_TARGET_EPOCH,
    ConsumerCurrentAssignmentRecord,
    ConsumerGroupEpochRecord,
    ConsumerMemberRecord,
    ConsumerTargetEpochRecord,
    ConsumerTargetMemberRecord,
    ConsumerTombstoneRecord,
)
from coordinator.core.group.records import (
    GroupMetadataRecord,
    GroupTombstoneRecord,
    OffsetCommitRecord,
    Record,
    decode_record,
    encode_record,
)

__all__ = ["GroupLog", "LOG_NAME", "live_records"]

log = logging.getLogger("coordinator")

LOG_NAME = "__consumer_offsets.jsonl"
_COMPACT_MIN_RECORDS = 10_000


def _key(record: Record) -> tuple[str, ...]:
    """The record's key, as Kafka's ``__consumer_offsets`` keys records: the last record of a key wins."""
    if isinstance(record, OffsetCommitRecord):
        return ("offset", record.group_id, record.topic, str(record.partition))
    if isinstance(record, GroupMetadataRecord | GroupTombstoneRecord):
        return ("group", record.group_id)
    if isinstance(record, ConsumerTombstoneRecord):
        return _CONSUMER_TOMBSTONE_KEYS[record.kind], record.group_id, record.member_id or ""
    member_id = getattr(record, "member_id", "")
    return record.TYPE, record.group_id, member_id if isinstance(member_id, str) else ""


#: The record type whose key a consumer-group tombstone of each kind deletes.
_CONSUMER_TOMBSTONE_KEYS = {
    TOMBSTONE_GROUP: ConsumerGroupEpochRecord.TYPE,
    TOMBSTONE_MEMBER: ConsumerMemberRecord.TYPE,
    TOMBSTONE_TARGET: ConsumerTargetMemberRecord.TYPE,
    TOMBSTONE_TARGET_EPOCH: ConsumerTargetEpochRecord.TYPE,
    TOMBSTONE_CURRENT: ConsumerCurrentAssignmentRecord.TYPE,
}


_CONSUMER_RECORDS = (
    ConsumerGroupEpochRecord,
    ConsumerMemberRecord,
    ConsumerTargetEpochRecord,
    ConsumerTargetMemberRecord,
    ConsumerCurrentAssignmentRecord,
)


def live_records(records: list[Record]) -> list[Record]:
    """What replay keeps: per key (:func:`_key`: a classic group, an offset, each record of a consumer group and
    of its members) the last record, minus everything a later tombstone deleted (a group tombstone deletes every
    key of its group, a consumer-group tombstone its one key; tombstones themselves are then redundant and
    dropped). Consumer groups' records come first, then the others, each in log order: a consumer group must
    exist before its offsets are replayed (otherwise they would make a classic group of the id; Kafka's replay
    replaces such a "simple" classic group when the consumer records follow)."""
    last: dict[tuple[str, ...], int] = {}
    keys_of_group: dict[str, set[tuple[str, ...]]] = {}
    for i, record in enumerate(records):
        if isinstance(record, GroupTombstoneRecord):
            for key in keys_of_group.pop(record.group_id, ()):
                last.pop(key, None)
            continue
        if isinstance(record, ConsumerTombstoneRecord):
            key = _key(record)
            last.pop(key, None)
            keys_of_group.get(record.group_id, set()).discard(key)
            continue
        key = _key(record)
        last[key] = i
        keys_of_group.setdefault(record.group_id, set()).add(key)
    kept = [records[i] for i in sorted(last.values())]
    consumer = [r for r in kept if isinstance(r, _CONSUMER_RECORDS)]
    if not consumer:
        return kept
    return consumer + [r for r in kept if not isinstance(r, _CONSUMER_RECORDS)]


class GroupLog:
    """Append-only JSON-lines file of group records (see the module docstring)."""

    def __init__(self, directory: str | os.PathLike[str]) -> None:
        self.path = Path(directory) / LOG_NAME
        self.path.parent.mkdir(parents=True, exist_ok=True)
        self._fd: int | None = None
        self.records_written = 0
        #: Lines the last :meth:`replay` skipped because they do not decode.
        self.skipped = 0

    def replay(self) -> Iterator[Record]:
        """Every record in write order (see :meth:`replay_lines`)."""
        for _, record in self.replay_lines():
            yield record

    def replay_lines(self) -> Iterator[tuple[int, Record]]:
        """``(line number, record)`` for every decodable record in write order; skips (with a warning)
        lines that do not decode and cuts a torn last line from the file.

        Must be called before the first :meth:`append`. Compacts the file first when worthwhile (then the
        line numbers are those of the compacted file).
        """
        self.skipped = 0
        if not self.path.exists():
            return
        data = self.path.read_bytes()
        end = data.rfind(b"\n") + 1
        if end != len(data):
            log.warning("group log %s: dropping a torn last record (%d bytes)", self.path, len(data) - end)
            with open(self.path, "r+b") as f:
                f.truncate(end)
            data = data[:end]
        numbered: list[tuple[int, Record]] = []
        for lineno, line in enumerate(data.splitlines(), 1):
            if not line.strip():
                continue
            try:
                numbered.append((lineno, decode_record(line)))
            except Exception as e:  # anything a damaged line can make the decoder raise
                self.skipped += 1
                log.warning(
                    "group log %s line %d skipped: not a record (%s: %s): %r",
                    self.path,
                    lineno,
                    type(e).__name__,
                    e,
                    line[:120],
                )
        if self.skipped == 0:
            records = self._maybe_compact([r for _, r in numbered])
            if len(records) != len(numbered):
                numbered = list(enumerate(records, 1))
        yield from numbered

    def _maybe_compact(self, records: list[Record]) -> list[Record]:
        if len(records) < _COMPACT_MIN_RECORDS:
            return records
        survivors = live_records(records)
        if len(survivors) * 2 > len(records):
            return records
        tmp = self.path.with_suffix(".tmp")
        with open(tmp, "wb") as f:
            f.write(b"".join(encode_record(r) + b"\n" for r in survivors))
        os.replace(tmp, self.path)
        log.info("group log %s compacted: %d -> %d records", self.path, len(records), len(survivors))
        return survivors

    def append(self, records: Iterable[Record]) -> None:
        """Write ``records`` (one ``write`` call); returns once the OS has them."""
        data = b"".join(encode_record(r) + b"\n" for r in records)
        if not data:
            return
        if self._fd is None:
            self._fd = os.open(self.path, os.O_WRONLY | os.O_CREAT | os.O_APPEND, 0o644)
        written = os.write(self._fd, data)
        while written < len(data):
            written += os.write(self._fd, data[written:])
        self.records_written += data.count(b"\n")

    def close(self) -> None:
        if self._fd is not None:
            with contextlib.suppress(OSError):
                os.close(self._fd)
            self._fd = None
