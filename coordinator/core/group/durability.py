# pyright: strict
"""How the classic group machine's state reaches its log and comes back: one of two strategies, chosen once.

* :class:`LocalDurability` (single-broker mode): the coordinator owns every group it is given
  (:class:`~coordinator.core.group.ownership.WholeOwnership`); loading is all-or-nothing (``begin_loading()`` unloads
  every group, ``finish_loading(now_ms)`` serves them all); every write is synchronous and successful (a
  :class:`~coordinator.core.group.api.Persist` without write id), so a commit is visible and SyncGroup's group
  record written at once.
* :class:`ReplicatedDurability` (replicated mode, ``__consumer_offsets``): ownership, loading and unloading per
  offsets partition (:class:`~coordinator.core.group.ownership.Ownership`; Kafka 3.7 ``GroupMetadataManager``
  ``addLoadingPartition`` / ``onElection`` / ``onResignation``); commits and SyncGroup's group record are written
  in two phases (a ``Persist`` with a write id, then the append's outcome: Kafka 3.7 ``storeOffsets``'
  ``putCacheCallback`` and ``storeGroup``'s callback).

A strategy holds the machine's group table and offsets (the same objects) and answers for the mode-dependent part
of each durability step; the :class:`~coordinator.core.group.machine.GroupCoordinator` does what is the same in
both modes (unloading a group: Kafka ``onGroupUnloaded``; loading one: ``onGroupLoaded``; finishing a SyncGroup
whose group record is written). Both strategies answer the same questions, so the machine never asks which mode
it is in.
"""

from __future__ import annotations

import logging
from dataclasses import dataclass
from typing import Any

from coordinator.core.group.api import Effect, GroupState, OffsetCommitRequest, Persist
from coordinator.core.group.errors import ErrorCode
from coordinator.core.group.group import Group
from coordinator.core.group.loading import group_record
from coordinator.core.group.offsets import OffsetEntry, OffsetManager, PreparedCommit
from coordinator.core.group.ownership import Ownership, WholeOwnership, commit_error

__all__ = ["LocalDurability", "PendingSync", "ReplicatedDurability"]

log = logging.getLogger("coordinator.group")


@dataclass(slots=True)
class PendingSync:
    """The leader's SyncGroup whose group record awaits its append's outcome (replicated mode): the group, its
    generation then and the leader's member id."""

    group: Group
    generation: int
    leader: str


@dataclass(slots=True)
class _PendingCommit:
    """A commit whose offsets append awaits its outcome."""

    commit: PreparedCommit
    offsets_partition: int


class LocalDurability:
    """Single-broker mode (see the module docstring)."""

    __slots__ = ("_groups", "_offsets", "own")

    replicated = False

    def __init__(self, groups: dict[str, Group], offsets: OffsetManager) -> None:
        self._groups = groups
        self._offsets = offsets
        self.own = WholeOwnership()

    @property
    def pending_writes(self) -> int:
        """Two-phase writes awaiting their outcome: none in this mode."""
        return 0

    def begin_loading(self, partition: int | None) -> list[Group]:
        """Start loading the whole coordinator (``partition`` must be None): every group and offset is forgotten
        and returned groups are the ones the machine must unload; requests get COORDINATOR_LOAD_IN_PROGRESS."""
        if partition is not None:
            raise ValueError("begin_loading(partition) needs replicated mode (own_by_partition)")
        unloaded = list(self._groups.values())
        self._groups.clear()
        self._offsets.clear()
        self.own.loading = True
        return unloaded

    def check_record(self, record: object) -> None:
        """Any record may be loaded."""

    def finish_loading(self, now_ms: int, partition: int | None) -> list[Group]:
        """End loading (``partition`` must be None): every group is loaded."""
        if partition is not None:
            raise ValueError("finish_loading(now_ms, partition) needs replicated mode (own_by_partition)")
        self.own.loading = False
        return list(self._groups.values())

    def unload(self, partition: int) -> list[Group]:
        """Not in this mode: ``ValueError``."""
        raise ValueError("unload(partition) needs replicated mode (own_by_partition)")

    def write_commit(
        self, group: Group, req: OffsetCommitRequest, now_ms: int, out: list[Effect], token: Any
    ) -> None:
        """Write an accepted commit at once, visible at once, and answer it."""
        self._offsets.store(req, now_ms, out, token)

    def write_sync_group(self, group: Group, leader: str, now_ms: int, out: list[Effect]) -> bool:
        """``storeGroup`` for the leader's SyncGroup: written at once, so True (the machine moves on now: the
        state check Kafka makes in the write callback, still CompletingRebalance of the same generation, holds)."""
        out.append(Persist(group_record(group, now_ms)))
        return True

    def persisted(
        self, write: int, error: int, now_ms: int, leader_epoch: int, out: list[Effect]
    ) -> PendingSync | None:
        """There are no two-phase writes in this mode: nothing to do."""
        return None


class ReplicatedDurability:
    """Replicated mode over ``partitions`` offsets partitions (see the module docstring)."""

    __slots__ = ("_groups", "_late_offsets", "_next_write", "_offsets", "_writes", "own")

    replicated = True

    def __init__(self, partitions: int, groups: dict[str, Group], offsets: OffsetManager) -> None:
        self._groups = groups
        self._offsets = offsets
        self.own = Ownership(partitions)
        #: Two-phase writes awaiting :meth:`persisted`, by write id.
        self._writes: dict[int, _PendingCommit | PendingSync] = {}
        #: Offsets acknowledged while their partition loads, by partition and group: applied when it is loaded.
        self._late_offsets: dict[int, dict[str, dict[tuple[str, int], OffsetEntry]]] = {}
        self._next_write = 1

    @property
    def pending_writes(self) -> int:
        """Two-phase writes awaiting :meth:`persisted`."""
        return len(self._writes)

    def _take_write(self) -> int:
        write = self._next_write
        self._next_write += 1
        return write

    # ============================================================================================ loading

    def begin_loading(self, partition: int | None) -> list[Group]:
        """Offsets partition ``partition`` becomes *loading* (3.7 ``addLoadingPartition``); nothing is unloaded.
        A partition already loading or owned stays as it is (3.7: "Already loading"). ``ValueError`` for None or a
        partition out of range."""
        if partition is None:
            raise ValueError(
                "replicated mode loads one offsets partition at a time: begin_loading(partition)"
            )
        own = self.own
        own.check(partition)
        if partition in own.loading or partition in own.owned:
            return []
        own.loading.add(partition)
        log.info("offsets partition %d loading: its groups answer COORDINATOR_LOAD_IN_PROGRESS", partition)
        return []

    def check_record(self, record: object) -> None:
        """``ValueError`` for a record of a group whose offsets partition is not loading."""
        group_id = getattr(record, "group_id", None)
        if not isinstance(group_id, str) or self.own.partition_for(group_id) not in self.own.loading:
            raise ValueError(f"record of group {group_id!r}: its offsets partition is not loading")

    def finish_loading(self, now_ms: int, partition: int | None) -> list[Group]:
        """``partition`` becomes owned (Ready); offsets acknowledged while it loaded are applied (a group they name
        is created Empty if the load did not know it); returns its groups. Nothing (an empty list) if it is not
        loading (its load was cancelled by :meth:`unload`). ``ValueError`` for None."""
        if partition is None:
            raise ValueError("replicated mode: finish_loading(now_ms, partition)")
        own = self.own
        if partition not in own.loading:
            return []
        own.loading.discard(partition)
        own.owned.add(partition)
        for group_id, late in self._late_offsets.pop(partition, {}).items():
            if group_id not in self._groups:
                self._groups[group_id] = Group(group_id, GroupState.EMPTY, now_ms)
            self._offsets.update(group_id, late)
        loaded = [g for g in self._groups.values() if own.partition_for(g.group_id) == partition]
        log.info("offsets partition %d loaded: %d groups, now served", partition, len(loaded))
        return loaded

    def unload(self, partition: int) -> list[Group]:
        """This coordinator resigned ``partition`` (3.7 ``onResignation`` -> ``removeGroupsForPartition``): neither
        loading nor owned any more; its groups and their offsets are forgotten and returned (the machine unloads
        those not Dead). Two-phase writes in flight stay: their outcome is still answered."""
        own = self.own
        own.check(partition)
        own.loading.discard(partition)
        own.owned.discard(partition)
        self._late_offsets.pop(partition, None)
        gone = [g for g in self._groups.values() if own.partition_for(g.group_id) == partition]
        for group in gone:
            del self._groups[group.group_id]
            self._offsets.delete_group(group.group_id)
        return gone

    # ============================================================================================ writes

    def write_commit(
        self, group: Group, req: OffsetCommitRequest, now_ms: int, out: list[Effect], token: Any
    ) -> None:
        """The first phase of an accepted commit (:meth:`OffsetManager.prepare`); :meth:`persisted` does the
        rest."""
        write = self._next_write
        pending = self._offsets.prepare(group, req, now_ms, out, token, write)
        if pending is not None:
            self._take_write()
            self._writes[write] = _PendingCommit(pending, self.own.partition_for(group.group_id))

    def write_sync_group(self, group: Group, leader: str, now_ms: int, out: list[Effect]) -> bool:
        """``storeGroup`` for the leader's SyncGroup in two phases: False, the machine moves the group on when
        :meth:`persisted` hands the write back."""
        write = self._take_write()
        self._writes[write] = PendingSync(group, group.generation_id, leader)
        out.append(Persist(group_record(group, now_ms), write))
        return False

    def persisted(
        self, write: int, error: int, now_ms: int, leader_epoch: int, out: list[Effect]
    ) -> PendingSync | None:
        """The outcome of two-phase write ``write``. A commit is completed here (see
        :meth:`GroupCoordinator.persisted <coordinator.core.group.machine.GroupCoordinator.persisted>`); a group
        record's write is returned for the machine to finish; None for a commit or an unknown write."""
        pending = self._writes.pop(write, None)
        if not isinstance(pending, _PendingCommit):
            return pending
        mapped = commit_error(error)
        target = self._acked_offsets_target(pending, now_ms) if mapped is ErrorCode.NONE else None
        self._offsets.complete(
            pending.commit,
            mapped,
            target,
            out,
            extra={"offsets_partition": pending.offsets_partition, "leader_epoch": leader_epoch},
        )
        return None

    def _acked_offsets_target(
        self, pending: _PendingCommit, now_ms: int
    ) -> dict[tuple[str, int], OffsetEntry] | None:
        """Where an acknowledged commit's offsets go. Its partition owned: the group's offsets (the group is
        created Empty if a reload did not know it; a Dead one takes nothing). Loading: a cache applied when the
        load ends (the write is committed, but the load may have read the log before it was). Not owned: nowhere
        (the next load reads it from the log). Kafka applies it to the group object that accepted it, which a
        reload replaced: its loader reads up to the log end, ours below the high watermark, hence the
        difference."""
        own = self.own
        group_id = pending.commit.group.group_id
        partition = pending.offsets_partition
        if partition in own.loading:
            return self._late_offsets.setdefault(partition, {}).setdefault(group_id, {})
        if partition not in own.owned:
            return None
        group = self._groups.get(group_id)
        if group is None:
            group = Group(group_id, GroupState.EMPTY, now_ms)
            self._groups[group_id] = group
        return None if group.state is GroupState.DEAD else self._offsets.group_offsets(group_id)
