# pyright: strict
"""Admin requests of the classic group coordinator: DescribeGroups, ListGroups, DeleteGroups (Kafka
``GroupCoordinator.handleDescribeGroup`` / ``handleListGroups`` / ``handleDeleteGroups``).

The :class:`~coordinator.core.group.machine.GroupCoordinator` delegates here with its group table and its ownership
check (loading, not owned); DeleteGroups also gets the offsets
(:class:`~coordinator.core.group.offsets.OffsetManager`), whose entries of a deleted group go with it, and the
machine's state transition (which emits the ``group_state`` event).
"""

from __future__ import annotations

import logging
from collections.abc import Callable, Mapping
from typing import Any

from coordinator.core.group.api import (
    TIMER_PENDING,
    CancelTimer,
    DeletedGroup,
    DeleteGroupsRequest,
    DeleteGroupsResponse,
    DescribedGroup,
    DescribedMember,
    DescribeGroupsRequest,
    DescribeGroupsResponse,
    Effect,
    GroupState,
    ListedGroup,
    ListGroupsRequest,
    ListGroupsResponse,
    Persist,
    Respond,
)
from coordinator.core.group.errors import ErrorCode
from coordinator.core.group.group import Group
from coordinator.core.group.offsets import OffsetManager
from coordinator.core.group.records import GroupTombstoneRecord

__all__ = ["Status", "Transition", "delete_groups", "describe_groups", "list_groups"]

log = logging.getLogger("coordinator.group")

#: The machine's ``_transition(group, state, now_ms, out)``.
Transition = Callable[[Group, GroupState, int, list[Effect]], None]
#: The machine's ``_status(group_id)``: COORDINATOR_LOAD_IN_PROGRESS / NOT_COORDINATOR, or None when served.
Status = Callable[[str], "ErrorCode | None"]


def describe_groups(
    groups: Mapping[str, Group], status: Status, req: DescribeGroupsRequest
) -> DescribeGroupsResponse:
    """Describe groups; an unknown group is ``Dead`` with no members and no error. Members carry metadata and
    assignment only in Stable (as Kafka's ``GroupMetadata.summary``). A group ``status`` refuses
    (COORDINATOR_LOAD_IN_PROGRESS, NOT_COORDINATOR) is described with that error only."""
    described: list[DescribedGroup] = []
    for group_id in req.groups:
        error = status(group_id)
        if error is not None:
            described.append(DescribedGroup(group_id, error, ""))
            continue
        group = groups.get(group_id)
        if group is None:
            described.append(DescribedGroup(group_id, ErrorCode.NONE, GroupState.DEAD.value))
            continue
        if group.state is GroupState.STABLE:
            protocol = group.protocol_name or ""
            members = [
                DescribedMember(
                    m.member_id,
                    m.group_instance_id,
                    m.client_id,
                    m.client_host,
                    m.metadata(protocol),
                    m.assignment,
                )
                for m in group.members.values()
            ]
        else:
            protocol = ""
            members = [
                DescribedMember(m.member_id, m.group_instance_id, m.client_id, m.client_host)
                for m in group.members.values()
            ]
        described.append(
            DescribedGroup(
                group_id, ErrorCode.NONE, group.state.value, group.protocol_type or "", protocol, members
            )
        )
    return DescribeGroupsResponse(described)


def list_groups(groups: Mapping[str, Group], loading: bool, req: ListGroupsRequest) -> ListGroupsResponse:
    """List groups (in creation order), optionally filtered by exact state names. While loading the error is
    COORDINATOR_LOAD_IN_PROGRESS but the groups known so far are still listed."""
    wanted = set(req.states_filter) if req.states_filter else None
    listed = [
        ListedGroup(g.group_id, g.protocol_type or "", g.state.value)
        for g in groups.values()
        if wanted is None or g.state.value in wanted
    ]
    error = ErrorCode.COORDINATOR_LOAD_IN_PROGRESS if loading else ErrorCode.NONE
    return ListGroupsResponse(error, listed)


def delete_groups(
    groups: dict[str, Group],
    offsets: OffsetManager,
    status: Status,
    now_ms: int,
    token: Any,
    req: DeleteGroupsRequest,
    transition: Transition,
) -> list[Effect]:
    """Delete Empty groups (``handleDeleteGroups``): Empty -> Dead, the group leaves ``groups``, its ``offsets``
    go, a tombstone is persisted; the answer to ``token`` comes last. Unknown or Dead: GROUP_ID_NOT_FOUND; with
    members: NON_EMPTY_GROUP; a group ``status`` refuses: that error (COORDINATOR_LOAD_IN_PROGRESS while
    loading, NOT_COORDINATOR for a partition not owned)."""
    out: list[Effect] = []
    results: list[DeletedGroup] = []
    for group_id in req.groups:
        error = status(group_id)
        if error is not None:
            results.append(DeletedGroup(group_id, error))
            continue
        group = groups.get(group_id)
        if group is None or group.state is GroupState.DEAD:
            results.append(DeletedGroup(group_id, ErrorCode.GROUP_ID_NOT_FOUND))
        elif group.state is GroupState.EMPTY:
            for pending_id in group.pending_members:
                out.append(CancelTimer((TIMER_PENDING, group_id, pending_id)))
            group.pending_members.clear()
            transition(group, GroupState.DEAD, now_ms, out)
            del groups[group_id]
            offsets.delete_group(group_id)
            out.append(Persist(GroupTombstoneRecord(group_id)))
            log.info("group=%s generation=%d deleted", group_id, group.generation_id)
            results.append(DeletedGroup(group_id, ErrorCode.NONE))
        else:
            results.append(DeletedGroup(group_id, ErrorCode.NON_EMPTY_GROUP))
    out.append(Respond(token, DeleteGroupsResponse(results)))
    return out
