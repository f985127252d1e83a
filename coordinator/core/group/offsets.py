# pyright: strict
"""Committed offsets of every group type: their state, commit and fetch (Kafka 4's ``OffsetMetadataManager``;
the storage of 3.7's ``GroupMetadataManager.storeOffsets`` / ``getOffsets``).

:class:`OffsetManager` holds the committed offsets of each group id, apart from any group machine, so that a
second group type uses the same offsets (as Kafka's consumer groups share the classic groups' offsets). What
depends on the kind of group is asked of the group through :class:`OffsetGroup` (Kafka's
``Group.validateOffsetCommit`` / ``validateOffsetFetch``): the group type answers for its own groups. Finding or
creating the group a request names, and what a valid commit means to the group's members (a classic commit counts
as liveness), stay the group type's.

A commit is validated (:meth:`OffsetManager.accept_commit`), then written in one of two ways:
:meth:`~OffsetManager.store` (single-broker mode: written synchronously, visible at once) or
:meth:`~OffsetManager.prepare` then :meth:`~OffsetManager.complete` (replicated mode: visible only once the append
is acknowledged, as 0.9 ``prepareStoreOffsets`` and 3.7 ``storeOffsets`` do). The manager appends effects to the
list it is given and never creates or changes a group. Offsets never expire (no ``offsets.retention.minutes``):
there is no expiry here; a group's offsets go only with the group (:meth:`~OffsetManager.delete_group`).
"""

from __future__ import annotations

import logging
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from typing import Any, Protocol

from coordinator.core.group.api import (
    EMIT_COMMIT,
    EMIT_COMMIT_REJECTED,
    Effect,
    Emit,
    OffsetCommitPartition,
    OffsetCommitPartitionResult,
    OffsetCommitRequest,
    OffsetCommitResponse,
    OffsetFetchPartition,
    OffsetFetchRequest,
    OffsetFetchResponse,
    Persist,
    Respond,
)
from coordinator.core.group.errors import ErrorCode
from coordinator.core.group.records import OffsetCommitRecord

__all__ = [
    "OffsetEntry",
    "OffsetGroup",
    "OffsetManager",
    "PreparedCommit",
    "commit_fields",
    "java_length",
]

log = logging.getLogger("coordinator.group")

#: A topic partition: ``(topic, partition)``.
TopicPartition = tuple[str, int]


@dataclass(slots=True)
class OffsetEntry:
    """A committed offset as held in memory."""

    offset: int
    leader_epoch: int
    metadata: str
    commit_timestamp_ms: int


class OffsetGroup(Protocol):
    """What the offsets ask of the group a request names; each group type answers for its groups."""

    @property
    def group_id(self) -> str: ...

    @property
    def generation_id(self) -> int:
        """The group's generation (a consumer group: its epoch), for the log lines of refused commits."""
        ...

    def validate_offset_commit(self, req: OffsetCommitRequest) -> ErrorCode | None:
        """The error a commit of ``req`` gets from this group (member, generation and state checks), or ``None``
        if it may be written."""
        ...

    def validate_offset_fetch(self, req: OffsetFetchRequest) -> ErrorCode | None:
        """The error a fetch of ``req`` gets from this group, or ``None``. GROUP_ID_NOT_FOUND means the group is
        as good as absent: every partition comes back as offset -1, error NONE (Kafka's ``failAllPartitions``)."""
        ...


def java_length(text: str) -> int:
    """Java ``String.length()``: UTF-16 code units (what ``offset.metadata.max.bytes`` is compared with)."""
    if text.isascii():
        return len(text)
    return len(text.encode("utf-16-le", "surrogatepass")) // 2


@dataclass(slots=True)
class PreparedCommit:
    """A commit of replicated mode between its append and the append's outcome (Kafka 3.7 ``storeOffsets``
    up to ``appendForGroup``): ``group`` as it was when the commit was accepted, the answer's ``token``, the
    request, the per-partition errors decided before the append (OFFSET_METADATA_TOO_LARGE) and the entries
    that the append carries."""

    group: OffsetGroup
    token: Any
    req: OffsetCommitRequest
    pre_errors: dict[TopicPartition, ErrorCode]
    entries: dict[TopicPartition, OffsetEntry]


class OffsetManager:
    """The committed offsets of every group id (see the module docstring).

    ``max_metadata_bytes`` is ``offset.metadata.max.bytes`` (compared with the Java length of the metadata);
    ``emit_events=False`` suppresses the ``commit`` / ``commit_rejected`` events. Invariant kept by the group
    types: offsets are held only for a group id whose group exists.
    """

    __slots__ = ("_emit", "_max_bytes", "_offsets")

    def __init__(self, *, max_metadata_bytes: int, emit_events: bool = True) -> None:
        self._max_bytes = max_metadata_bytes
        self._emit = emit_events
        self._offsets: dict[str, dict[TopicPartition, OffsetEntry]] = {}

    # ============================================================================================ state

    def count(self, group_id: str) -> int:
        """How many partitions ``group_id`` has an offset for."""
        return len(self._offsets.get(group_id, ()))

    def group_offsets(self, group_id: str) -> dict[TopicPartition, OffsetEntry]:
        """The live offsets of ``group_id`` (created empty): where an acknowledged two-phase commit lands."""
        return self._offsets.setdefault(group_id, {})

    def replay(self, record: OffsetCommitRecord) -> None:
        """Load one persisted commit (in log order: the last one of a partition wins)."""
        self.group_offsets(record.group_id)[(record.topic, record.partition)] = OffsetEntry(
            record.offset, record.leader_epoch, record.metadata, record.commit_timestamp_ms
        )

    def update(self, group_id: str, entries: Mapping[TopicPartition, OffsetEntry]) -> None:
        """Add ``entries`` to the offsets of ``group_id`` (replacing those of the same partitions)."""
        self.group_offsets(group_id).update(entries)

    def delete_group(self, group_id: str) -> None:
        """Forget every offset of ``group_id`` (its group is deleted, unloaded or dropped)."""
        self._offsets.pop(group_id, None)

    def clear(self) -> None:
        """Forget every offset (the whole coordinator reloads)."""
        self._offsets.clear()

    # ============================================================================================ commit

    def accept_commit(
        self, group: OffsetGroup, req: OffsetCommitRequest, token: Any, out: list[Effect]
    ) -> bool:
        """Kafka ``validateOffsetCommit``: ask ``group``; on an error answer ``token`` with it for every partition
        (:meth:`reject_commit`) and return False. True: the commit may be written."""
        error = group.validate_offset_commit(req)
        if error is None:
            return True
        self.reject_commit(out, token, req, error, group)
        return False

    def reject_commit(
        self,
        out: list[Effect],
        token: Any,
        req: OffsetCommitRequest,
        error: ErrorCode,
        group: OffsetGroup | None,
    ) -> None:
        """Answer ``token`` with ``error`` for every partition of the commit (one ``commit_rejected`` event
        each); ``group`` (None: no group) is named in the log line."""
        if self._emit:
            for p in req.offsets:
                out.append(Emit(EMIT_COMMIT_REJECTED, commit_fields(req.group_id, req, p, error)))
        if group is not None:
            log.debug(
                "group=%s generation=%d member=%s commit rejected: %s (sent generation %d)",
                group.group_id,
                group.generation_id,
                req.member_id,
                error.name,
                req.generation_id,
            )
        results = [OffsetCommitPartitionResult(p.topic, p.partition, error) for p in req.offsets]
        out.append(Respond(token, OffsetCommitResponse(results)))

    def store(self, req: OffsetCommitRequest, now_ms: int, out: list[Effect], token: Any) -> None:
        """``storeOffsets`` of single-broker mode, for an accepted commit: keep every offset whose metadata fits
        (Java length), persist one :class:`~coordinator.core.group.records.OffsetCommitRecord` each, then answer
        ``token`` (per-partition errors: OFFSET_METADATA_TOO_LARGE for the rest)."""
        group_id = req.group_id
        offsets = self.group_offsets(group_id)
        results: list[OffsetCommitPartitionResult] = []
        for p in req.offsets:
            metadata = p.metadata or ""
            if java_length(metadata) > self._max_bytes:
                error = ErrorCode.OFFSET_METADATA_TOO_LARGE
                if self._emit:
                    out.append(Emit(EMIT_COMMIT_REJECTED, commit_fields(group_id, req, p, error)))
            else:
                error = ErrorCode.NONE
                offsets[(p.topic, p.partition)] = OffsetEntry(p.offset, p.leader_epoch, metadata, now_ms)
                out.append(
                    Persist(
                        OffsetCommitRecord(
                            group_id, p.topic, p.partition, p.offset, p.leader_epoch, metadata, now_ms
                        )
                    )
                )
                if self._emit:
                    out.append(Emit(EMIT_COMMIT, commit_fields(group_id, req, p, None)))
            results.append(OffsetCommitPartitionResult(p.topic, p.partition, error))
        out.append(Respond(token, OffsetCommitResponse(results)))

    def prepare(
        self,
        group: OffsetGroup,
        req: OffsetCommitRequest,
        now_ms: int,
        out: list[Effect],
        token: Any,
        write: int,
    ) -> PreparedCommit | None:
        """Replicated mode's first phase of ``storeOffsets``, for an accepted commit: one
        :class:`~coordinator.core.group.api.Persist` with ``write`` per offset whose metadata fits; nothing becomes
        visible and nothing is answered. Returns what :meth:`complete` needs, or None (answered already) when no
        offset fits (Kafka answers OFFSET_METADATA_TOO_LARGE for all without appending)."""
        pre_errors: dict[TopicPartition, ErrorCode] = {}
        entries: dict[TopicPartition, OffsetEntry] = {}
        for p in req.offsets:
            metadata = p.metadata or ""
            key = (p.topic, p.partition)
            if java_length(metadata) > self._max_bytes:
                pre_errors[key] = ErrorCode.OFFSET_METADATA_TOO_LARGE
                entries.pop(key, None)
            else:
                pre_errors.pop(key, None)
                entries[key] = OffsetEntry(p.offset, p.leader_epoch, metadata, now_ms)
        if not entries:
            results = [
                OffsetCommitPartitionResult(p.topic, p.partition, pre_errors[(p.topic, p.partition)])
                for p in req.offsets
            ]
            out.append(Respond(token, OffsetCommitResponse(results)))
            return None
        for (topic, partition), e in entries.items():
            record = OffsetCommitRecord(
                group.group_id, topic, partition, e.offset, e.leader_epoch, e.metadata, now_ms
            )
            out.append(Persist(record, write))
        return PreparedCommit(group, token, req, pre_errors, entries)

    def complete(
        self,
        commit: PreparedCommit,
        error: ErrorCode,
        target: dict[TopicPartition, OffsetEntry] | None,
        out: list[Effect],
        *,
        extra: dict[str, Any],
    ) -> None:
        """The second phase (``putCacheCallback``): ``error`` is the mapped append outcome. NONE: the entries enter
        ``target`` (the offsets the group type chose: :meth:`group_offsets`, a cache of its own, or None: none now)
        and each gets a ``commit`` event (``extra`` fields added); otherwise each gets ``commit_rejected`` with
        ``error``. Partitions refused before the append keep their own error. Then the answer."""
        req = commit.req
        group_id = commit.group.group_id
        emit = self._emit
        for p in req.offsets:
            key = (p.topic, p.partition)
            if key in commit.pre_errors:
                if emit:
                    out.append(
                        Emit(EMIT_COMMIT_REJECTED, commit_fields(group_id, req, p, commit.pre_errors[key]))
                    )
                continue
            if error is ErrorCode.NONE:
                if target is not None:
                    target[key] = commit.entries[key]
                if emit:
                    out.append(Emit(EMIT_COMMIT, {**commit_fields(group_id, req, p, None), **extra}))
            elif emit:
                out.append(Emit(EMIT_COMMIT_REJECTED, {**commit_fields(group_id, req, p, error), **extra}))
        if error is not ErrorCode.NONE:
            log.info(
                "group=%s generation=%d member=%s offsets_partition=%s commit not written: %s",
                group_id,
                commit.group.generation_id,
                req.member_id,
                extra.get("offsets_partition"),
                error.name,
            )
        results = [
            OffsetCommitPartitionResult(
                p.topic, p.partition, commit.pre_errors.get((p.topic, p.partition), error)
            )
            for p in req.offsets
        ]
        out.append(Respond(commit.token, OffsetCommitResponse(results)))

    # ============================================================================================ fetch

    def fetch(self, group: OffsetGroup | None, req: OffsetFetchRequest) -> OffsetFetchResponse:
        """``fetchOffsets`` / ``fetchAllOffsets`` of a served group id (``group``: its group, None if there is
        none): ``partitions=None`` means all stored ones (sorted by topic, partition); unknown partitions, and
        every partition of an absent group (None, or one that answers GROUP_ID_NOT_FOUND), come back as offset
        -1, error NONE; another error of the group's is the answer's."""
        error = ErrorCode.GROUP_ID_NOT_FOUND if group is None else group.validate_offset_fetch(req)
        if error is ErrorCode.GROUP_ID_NOT_FOUND:
            wanted: Iterable[TopicPartition] = req.partitions or ()
            return OffsetFetchResponse(ErrorCode.NONE, [OffsetFetchPartition(t, p, -1) for t, p in wanted])
        if error is not None:
            return OffsetFetchResponse(error)
        offsets = self._offsets.get(req.group_id, {})
        keys = req.partitions if req.partitions is not None else sorted(offsets)
        partitions: list[OffsetFetchPartition] = []
        for topic, partition in keys:
            # Only written commits are held (replicated mode adds them when the append is acknowledged), and
            # there are no transactional ones: require_stable changes nothing.
            entry = offsets.get((topic, partition))
            if entry is None:
                partitions.append(OffsetFetchPartition(topic, partition, -1))
            else:
                partitions.append(
                    OffsetFetchPartition(topic, partition, entry.offset, entry.leader_epoch, entry.metadata)
                )
        return OffsetFetchResponse(ErrorCode.NONE, partitions)


def commit_fields(
    group_id: str, req: OffsetCommitRequest, p: OffsetCommitPartition, error: ErrorCode | None
) -> dict[str, Any]:
    """The history fields of a ``commit`` / ``commit_rejected`` event of partition ``p``."""
    fields: dict[str, Any] = {
        "group": group_id,
        "member": req.member_id,
        "generation": req.generation_id,
        "topic": p.topic,
        "partition": p.partition,
        "offset": p.offset,
    }
    if error is not None:
        fields["error"] = error.name
    return fields
