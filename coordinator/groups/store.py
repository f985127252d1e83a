# pyright: strict
"""Where the group coordinator keeps its records: the seam between the runner and the two stores.

* **File store** (single-broker mode, the default): :class:`~coordinator.groups.log.GroupLog`, this broker's
  ``__consumer_offsets`` as a JSON-lines file, written synchronously; every write is acknowledged at once.
* **Topic store** (replicated mode): :class:`TopicGroupStore`, the records as entries of the replicated
  ``__consumer_offsets`` topic through a :class:`~coordinator.ports.ReplicatedLog`, as Kafka does: key = the
  group id (UTF-8), value = :func:`~coordinator.core.group.records.encode_record`; a group's records go to partition
  ``partitionFor(group)``; appends wait as ``offsets.commit.required.acks`` says, at most
  ``offsets.commit.timeout.ms`` (0.9 ``GroupMetadataManager.prepareStoreOffsets`` / ``storeGroup`` append with
  ``config.offsetCommitRequiredAcks`` and ``offsetCommitTimeoutMs``; 3.7 the same). Loading reads the entries
  below the high watermark (:meth:`TopicGroupStore.read`); an entry whose value does not decode is skipped with a
  warning, as :meth:`GroupLog.replay_lines` skips a damaged line and Kafka 3.7's ``doLoadGroupsAndOffsets`` an
  unknown record ("Ignoring it").
"""

from __future__ import annotations

import logging
from collections.abc import Iterator, Sequence
from functools import lru_cache

from coordinator.config import ReplicationConfig
from coordinator.core.group.records import Record, decode_record, encode_record
from coordinator.ports import OFFSETS_TOPIC, AppendResult, ReplicatedLog
from harness.kernel.javacompat import partition_for

__all__ = ["TopicGroupStore"]

log = logging.getLogger("coordinator")

_partition_for = lru_cache(maxsize=100_000)(partition_for)


class TopicGroupStore:
    """Group records in the replicated ``__consumer_offsets`` topic (see the module docstring)."""

    def __init__(
        self, replicated: ReplicatedLog, offsets_partitions: int, replication: ReplicationConfig
    ) -> None:
        self.log = replicated
        self.partitions = offsets_partitions
        self.required_acks = replication.offsets_commit_required_acks
        self.timeout_ms = replication.offsets_commit_timeout_ms
        #: Entries the last :meth:`read` skipped because their value does not decode.
        self.skipped = 0

    def partition_for(self, group_id: str) -> int:
        """``partitionFor(group_id)`` over ``offsets.topic.num.partitions``."""
        return _partition_for(group_id, self.partitions)

    async def append(self, partition: int, records: Sequence[Record]) -> AppendResult:
        """Append ``records`` (all of groups of ``partition``) as one batch and wait for the acknowledgement the
        configuration asks for; the outcome as :meth:`ReplicatedLog.append` gives it."""
        entries: list[tuple[bytes | None, bytes | None]] = [
            (r.group_id.encode(), encode_record(r)) for r in records
        ]
        return await self.log.append(OFFSETS_TOPIC, partition, entries, self.required_acks, self.timeout_ms)

    async def barrier(self, partition: int) -> AppendResult:
        """Append one empty entry (no key, no value) with acks -1 and wait for it: once acknowledged, the high
        watermark covers every entry the leader had when it appended it (see :mod:`coordinator.groups.runner`,
        loading). :meth:`read` skips it."""
        return await self.log.append(OFFSETS_TOPIC, partition, [(None, None)], -1, self.timeout_ms)

    def read(self, partition: int) -> Iterator[Record]:
        """Every decodable record of ``partition`` below its high watermark, in offset order (undecodable ones
        skipped with a warning and counted in :attr:`skipped`)."""
        self.skipped = 0
        for index, (key, value) in enumerate(self.log.read_committed(OFFSETS_TOPIC, partition)):
            if value is None:
                continue  # a null value (Kafka's tombstone of a key): our tombstones are records
            try:
                yield decode_record(value)
            except Exception as e:  # anything a damaged entry can make the decoder raise
                self.skipped += 1
                log.warning(
                    "%s-%d entry %d (key %r) skipped: not a record (%s: %s)",
                    OFFSETS_TOPIC,
                    partition,
                    index,
                    key,
                    type(e).__name__,
                    e,
                )
