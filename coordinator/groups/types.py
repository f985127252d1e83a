"""Group types: each kind of group (the classic protocol today; KIP-848's consumer protocol later) is one module
beside the others, and the group APIs that every type shares are dispatched to the type that holds the group.

A :class:`GroupType` serves its own protocol's APIs (:meth:`GroupType.handlers`: the classic type's JoinGroup,
SyncGroup, Heartbeat, LeaveGroup) and its groups' part of the shared ones (OffsetCommit, OffsetFetch,
DescribeGroups, ListGroups, DeleteGroups) in the version-neutral terms of :mod:`coordinator.core.group.api`; the shared
adapters (:mod:`coordinator.groups.offsets`, :mod:`coordinator.groups.admin`) turn kio requests into those terms
and back. :class:`GroupTypes` holds the types of one broker, in order; the first is the default, which takes a
group no type holds (Kafka creates a classic group for an OffsetCommit outside group management).
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any, Protocol

from coordinator.context import RequestContext
from coordinator.core.group import api as g

__all__ = ["GroupType", "GroupTypes", "Handler"]

#: A kio request handler: the response, an awaitable of it, or None.
Handler = Callable[[RequestContext, Any], Any]


class GroupType(Protocol):
    """One kind of group (see the module docstring). Methods taking ``convert`` return what the group runner
    gives: ``convert(response)``, or a future of it when the answer comes later."""

    #: ListGroups' ``group_type`` of this type's groups (``"classic"``, ``"consumer"``).
    name: str

    def handlers(self) -> dict[int, Handler]:
        """API key -> handler of this type's own protocol."""
        ...

    def holds(self, group_id: str) -> bool:
        """True if a group ``group_id`` of this type exists on this broker."""
        ...

    def offset_commit(
        self, req: g.OffsetCommitRequest, convert: Callable[[g.OffsetCommitResponse], Any]
    ) -> Any:
        """Commit offsets of a group of this type (or of a new one, for the default type)."""
        ...

    def offset_fetch(self, req: g.OffsetFetchRequest) -> g.OffsetFetchResponse:
        """The committed offsets of a group of this type."""
        ...

    def describe_groups(self, group_ids: list[str]) -> list[g.DescribedGroup]:
        """One description per group id (an unknown id: as this type describes a group that does not exist)."""
        ...

    def list_groups(self, states: list[str] | None) -> g.ListGroupsResponse:
        """This type's groups, in the given states only (None: all)."""
        ...

    def delete_groups(self, group_ids: list[str], convert: Callable[[g.DeleteGroupsResponse], Any]) -> Any:
        """Delete groups of this type; one result per group id."""
        ...


class GroupTypes:
    """The group types of one broker (see the module docstring)."""

    def __init__(self, types: list[GroupType]) -> None:
        if not types:
            raise ValueError("at least one group type")
        self.types = types

    def for_group(self, group_id: str) -> GroupType:
        """The type holding ``group_id``; the default type when none does."""
        for t in self.types[1:]:
            if t.holds(group_id):
                return t
        return self.types[0]

    def split(self, group_ids: list[str]) -> list[tuple[GroupType, list[str]]]:
        """``group_ids`` by the type holding each (:meth:`for_group`), types in registration order, ids in request
        order; types holding none of them are left out."""
        by_type: dict[int, list[str]] = {}
        for group_id in group_ids:
            by_type.setdefault(id(self.for_group(group_id)), []).append(group_id)
        return [(t, by_type[id(t)]) for t in self.types if id(t) in by_type]
