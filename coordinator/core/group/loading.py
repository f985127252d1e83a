# pyright: strict
"""Loading: groups and offsets from the durable group log, and the group record that goes into it (Kafka
``GroupMetadataManager.loadGroupsAndOffsets`` / ``storeGroup``).

:func:`load_record` replays one record into the machine's group table and the offsets
(:class:`~coordinator.core.group.offsets.OffsetManager`); :func:`group_record` is the inverse for a group's
membership. The machine's ``begin_loading`` / ``finish_loading`` (Kafka ``onGroupUnloaded`` /
``onGroupLoaded``) stay in :class:`~coordinator.core.group.machine.GroupCoordinator`: they produce effects.
"""

from __future__ import annotations

from coordinator.core.group.api import GroupState
from coordinator.core.group.group import Group
from coordinator.core.group.member import Member
from coordinator.core.group.offsets import OffsetManager
from coordinator.core.group.records import (
    GroupMetadataRecord,
    GroupTombstoneRecord,
    MemberRecord,
    OffsetCommitRecord,
    Record,
)

__all__ = ["group_record", "load_record"]


def load_record(groups: dict[str, Group], offsets: OffsetManager, record: Record | object) -> None:
    """Replay one persisted record (in log order) into ``groups`` and ``offsets``. Offsets are last-writer-wins
    (a commit of a group not known creates it Empty, as a simple commit does); the last group record of a group
    replaces its membership (loaded as Stable, or Empty if it has no members) and keeps its offsets; a tombstone
    drops the group and its offsets. Raises (changing nothing) for a record that cannot be a
    group's state: a member id twice, a static instance id twice; and ``TypeError`` for a record of another kind.
    """
    if isinstance(record, OffsetCommitRecord):
        group = groups.get(record.group_id)
        if group is None:
            group = Group(record.group_id, GroupState.EMPTY, record.commit_timestamp_ms)
            groups[record.group_id] = group
        offsets.replay(record)
    elif isinstance(record, GroupMetadataRecord):
        if len({m.member_id for m in record.members}) != len(record.members):
            raise ValueError(f"group {record.group_id}: a member id appears twice")
        group = Group(
            record.group_id, GroupState.STABLE if record.members else GroupState.EMPTY, record.timestamp_ms
        )
        group.generation_id = record.generation_id
        group.protocol_type = record.protocol_type or None
        group.protocol_name = record.protocol_name
        group.leader_id = record.leader_id
        for m in record.members:
            member = Member(
                record.group_id,
                m.member_id,
                m.group_instance_id,
                m.client_id,
                m.client_host,
                m.rebalance_timeout_ms,
                m.session_timeout_ms,
                record.protocol_type or "",
                [(record.protocol_name or "", m.subscription)],
                m.assignment,
            )
            group.add(member)
        groups[record.group_id] = group
    elif isinstance(record, GroupTombstoneRecord):
        groups.pop(record.group_id, None)
        offsets.delete_group(record.group_id)
    else:
        raise TypeError(f"not a group coordinator record: {record!r}")


def group_record(group: Group, now_ms: int) -> GroupMetadataRecord:
    """``storeGroup``'s record: the group with the members' current assignments (no members when Empty)."""
    protocol = group.protocol_name
    members: tuple[MemberRecord, ...] = ()
    if group.members:
        assert protocol is not None
        members = tuple(
            MemberRecord(
                m.member_id,
                m.group_instance_id,
                m.client_id,
                m.client_host,
                m.rebalance_timeout_ms,
                m.session_timeout_ms,
                m.metadata(protocol),
                m.assignment,
            )
            for m in group.members.values()
        )
    return GroupMetadataRecord(
        group.group_id,
        group.generation_id,
        group.protocol_type,
        protocol,
        group.leader_id if group.members else None,
        now_ms,
        members,
    )
