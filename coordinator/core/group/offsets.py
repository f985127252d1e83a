# pyright: strict
"""Offsets of the classic group coordinator: commit validation, storage, fetch (Kafka's ``GroupMetadataManager``
``storeOffsets`` / ``getOffsets`` and ``GroupCoordinator.validateOffsetCommit``).

The :class:`~coordinator.core.group.machine.GroupCoordinator` runs ``handleCommitOffsets`` (loading, group creation,
liveness) and delegates here: :func:`store_offsets` in single-broker mode (written synchronously, visible at once),
:func:`prepare_offsets` then :func:`complete_offsets` in replicated mode (visible only once the append is
acknowledged, as 0.9 ``prepareStoreOffsets`` and 3.7 ``storeOffsets`` do); these functions read and change one :class:`~coordinator.core.group.group.Group` and
append effects, nothing else. Offsets never expire (no ``offsets.retention.minutes``): there is no expiry here.
"""

from __future__ import annotations

import logging
from collections.abc import Callable, Iterable
from dataclasses import dataclass
from typing import Any

from coordinator.core.group.api import (
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
from coordinator.core.group.errors import ErrorCode
from coordinator.core.group.group import Group, OffsetEntry
from coordinator.core.group.records import OffsetCommitRecord

__all__ = [
    "PreparedCommit",
    "commit_fields",
    "complete_offsets",
    "fetch_offsets",
    "java_length",
    "prepare_offsets",
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
    :class:`~coordinator.core.group.records.OffsetCommitRecord` each, then answer ``token`` (per-partition errors:
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


@dataclass(slots=True)
class PreparedCommit:
    """A commit of replicated mode between its append and the append's outcome (Kafka 3.7 ``storeOffsets``
    up to ``appendForGroup``): ``group`` as it was when the commit was accepted, the answer's ``token``, the
    request, the per-partition errors decided before the append (OFFSET_METADATA_TOO_LARGE) and the entries
    that the append carries."""

    group: Group
    token: Any
    req: OffsetCommitRequest
    pre_errors: dict[tuple[str, int], ErrorCode]
    entries: dict[tuple[str, int], OffsetEntry]


def prepare_offsets(
    group: Group,
    req: OffsetCommitRequest,
    now_ms: int,
    out: list[Effect],
    token: Any,
    write: int,
    *,
    max_bytes: int,
) -> PreparedCommit | None:
    """Replicated mode's first phase of ``storeOffsets``: one :class:`~coordinator.core.group.api.Persist` with
    ``write`` per offset whose metadata fits ``max_bytes``; nothing enters the cache and nothing is answered.
    Returns what :func:`complete_offsets` needs, or None (answered already) when no offset fits (Kafka answers
    OFFSET_METADATA_TOO_LARGE for all without appending)."""
    pre_errors: dict[tuple[str, int], ErrorCode] = {}
    entries: dict[tuple[str, int], OffsetEntry] = {}
    for p in req.offsets:
        metadata = p.metadata or ""
        key = (p.topic, p.partition)
        if java_length(metadata) > max_bytes:
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


def complete_offsets(
    commit: PreparedCommit,
    error: ErrorCode,
    target: dict[tuple[str, int], OffsetEntry] | None,
    out: list[Effect],
    *,
    emit: bool,
    extra: dict[str, Any],
) -> None:
    """The second phase (``putCacheCallback``): ``error`` is the mapped append outcome. NONE: the entries enter
    ``target`` (the offsets cache the machine chose, or None: none now) and each gets a ``commit`` event
    (``extra`` fields added); otherwise each gets ``commit_rejected`` with ``error``.
    Partitions refused before the append keep their own error. Then the answer."""
    req = commit.req
    group_id = commit.group.group_id
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
        # Only written commits are in the cache (replicated mode adds them when the append is acknowledged), and
        # there are no transactional ones: require_stable changes nothing.
        entry = offsets.get((topic, partition))
        if entry is None:
            partitions.append(OffsetFetchPartition(topic, partition, -1))
        else:
            partitions.append(
                OffsetFetchPartition(topic, partition, entry.offset, entry.leader_epoch, entry.metadata)
            )
    return OffsetFetchResponse(ErrorCode.NONE, partitions)
