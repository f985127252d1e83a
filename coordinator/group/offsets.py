# pyright: strict
"""Offsets of the classic group coordinator: commit validation, storage, fetch (Kafka's ``GroupMetadataManager``
``storeOffsets`` / ``getOffsets`` and ``GroupCoordinator.validateOffsetCommit``).

The :class:`~coordinator.group.machine.GroupCoordinator` runs ``handleCommitOffsets`` (loading, group creation,
liveness) and delegates here; these functions read and change one :class:`~coordinator.group.group.Group` and
append effects, nothing else. Offsets never expire (no ``offsets.retention.minutes``): there is no expiry here.
"""

from __future__ import annotations

import logging
from collections.abc import Callable, Iterable
from typing import Any

from coordinator.group.api import (
    EMIT_COMMIT,
    EMIT_COMMIT_REJECTED,
    Effect,
    Emit,
    GroupState,
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
from coordinator.group.errors import ErrorCode
from coordinator.group.group import Group, OffsetEntry
from coordinator.group.records import OffsetCommitRecord

__all__ = [
    "commit_fields",
    "fetch_offsets",
    "java_length",
    "reject_commit",
    "store_offsets",
    "validate_commit",
]

log = logging.getLogger("coordinator.group")

#: ``validateCurrentMember`` of the machine: FENCED_INSTANCE_ID / UNKNOWN_MEMBER_ID, or ``None`` if valid.
MemberCheck = Callable[[Group, str, "str | None"], "ErrorCode | None"]


def java_length(text: str) -> int:
    """Java ``String.length()``: UTF-16 code units (what ``offset.metadata.max.bytes`` is compared with)."""
    if text.isascii():
        return len(text)
    return len(text.encode("utf-16-le", "surrogatepass")) // 2


def validate_commit(group: Group, req: OffsetCommitRequest, check_member: MemberCheck) -> ErrorCode | None:
    """Kafka ``validateOffsetCommit`` (non-transactional): the error to answer, or ``None`` if the commit may
    proceed."""
    if group.state is GroupState.DEAD:
        return ErrorCode.COORDINATOR_NOT_AVAILABLE
    if req.generation_id < 0 and group.state is GroupState.EMPTY:
        return None
    if req.generation_id >= 0 or req.member_id != "" or req.group_instance_id is not None:
        error = check_member(group, req.member_id, req.group_instance_id)
        if error is not None:
            return error
        if req.generation_id != group.generation_id:
            return ErrorCode.ILLEGAL_GENERATION
        return None
    if group.state is not GroupState.EMPTY:
        return ErrorCode.UNKNOWN_MEMBER_ID  # only members may commit to a non-empty group
    return None


def store_offsets(
    group: Group,
    req: OffsetCommitRequest,
    now_ms: int,
    out: list[Effect],
    token: Any,
    *,
    max_bytes: int,
    emit: bool,
) -> None:
    """``storeOffsets``: keep every offset whose metadata fits ``max_bytes`` (Java length), persist one
    :class:`~coordinator.group.records.OffsetCommitRecord` each, then answer ``token`` (per-partition errors:
    OFFSET_METADATA_TOO_LARGE for the rest). ``emit`` adds ``commit`` / ``commit_rejected`` events."""
    group_id = group.group_id
    results: list[OffsetCommitPartitionResult] = []
    for p in req.offsets:
        metadata = p.metadata or ""
        if java_length(metadata) > max_bytes:
            error = ErrorCode.OFFSET_METADATA_TOO_LARGE
            if emit:
                out.append(Emit(EMIT_COMMIT_REJECTED, commit_fields(group_id, req, p, error)))
        else:
            error = ErrorCode.NONE
            group.offsets[(p.topic, p.partition)] = OffsetEntry(p.offset, p.leader_epoch, metadata, now_ms)
            out.append(
                Persist(
                    OffsetCommitRecord(
                        group_id, p.topic, p.partition, p.offset, p.leader_epoch, metadata, now_ms
                    )
                )
            )
            if emit:
                out.append(Emit(EMIT_COMMIT, commit_fields(group_id, req, p, None)))
        results.append(OffsetCommitPartitionResult(p.topic, p.partition, error))
    out.append(Respond(token, OffsetCommitResponse(results)))


def reject_commit(
    out: list[Effect],
    token: Any,
    req: OffsetCommitRequest,
    error: ErrorCode,
    group: Group | None,
    *,
    emit: bool,
) -> None:
    """Answer ``token`` with ``error`` for every partition of the commit (``emit``: one ``commit_rejected`` event
    each)."""
    if emit:
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


def fetch_offsets(group: Group | None, req: OffsetFetchRequest) -> OffsetFetchResponse:
    """``getOffsets`` of a loaded coordinator: ``partitions=None`` means all stored ones (sorted by topic,
    partition); unknown partitions, and every partition of an unknown or Dead group, come back as offset -1,
    error NONE."""
    if group is None or group.state is GroupState.DEAD:
        wanted: Iterable[tuple[str, int]] = req.partitions or ()
        return OffsetFetchResponse(ErrorCode.NONE, [OffsetFetchPartition(t, p, -1) for t, p in wanted])
    offsets = group.offsets
    keys = req.partitions if req.partitions is not None else sorted(offsets)
    partitions: list[OffsetFetchPartition] = []
    for topic, partition in keys:
        # Commits are applied synchronously, so nothing is ever pending: require_stable changes nothing.
        entry = offsets.get((topic, partition))
        if entry is None:
            partitions.append(OffsetFetchPartition(topic, partition, -1))
        else:
            partitions.append(
                OffsetFetchPartition(topic, partition, entry.offset, entry.leader_epoch, entry.metadata)
            )
    return OffsetFetchResponse(ErrorCode.NONE, partitions)
