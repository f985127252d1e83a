# pyright: strict
"""Which ``__consumer_offsets`` partitions this coordinator serves, and how an append's outcome becomes a group
API error (replicated mode).

Ownership (Kafka 3.7 ``GroupMetadataManager``: ``ownedPartitions`` / ``loadingPartitions``,
``isGroupLocal`` / ``isGroupLoading``; 0.9 ``handleGroupImmigration`` / ``handleGroupEmigration``): a group
belongs to offsets partition ``partitionFor(group)`` (:func:`harness.kernel.javacompat.partition_for`); each
partition is *not owned*, *loading* (elected leader, its groups being read: CatchUp) or *owned* (Ready). 3.7
``scheduleLoadGroupAndOffsets`` adds the partition to ``loadingPartitions`` and only after the load moves it to
``ownedPartitions``; ``removeGroupsForPartition`` drops it from both. :meth:`Ownership.status` gives Kafka 3.7
``GroupCoordinator.validateGroupStatus``'s answer after the group id check: COORDINATOR_LOAD_IN_PROGRESS for a
loading partition (checked first), NOT_COORDINATOR for one not owned, None for an owned one.

Single-broker mode (:class:`WholeOwnership`): no partitions; every group is owned, and the whole machine loads at
once. The machine asks either kind the same questions (:attr:`~Ownership.any_loading`, ``partition_for``,
``partition_status``, ``status``); each belongs to one durability strategy
(:mod:`~coordinator.core.group.durability`), which also decides how the machine loads and whether its writes are
two-phase.

Error mapping of a failed append (the commit and group-record write callbacks):

* offsets (:func:`commit_error`): Kafka 3.7 ``GroupMetadataManager.maybeConvertOffsetCommitError`` (0.9's
  ``prepareStoreOffsets`` mapping is the same minus the replica errors): UNKNOWN_TOPIC_OR_PARTITION,
  NOT_ENOUGH_REPLICAS, NOT_ENOUGH_REPLICAS_AFTER_APPEND -> COORDINATOR_NOT_AVAILABLE; NOT_LEADER_OR_FOLLOWER,
  KAFKA_STORAGE_ERROR -> NOT_COORDINATOR; MESSAGE_TOO_LARGE, RECORD_LIST_TOO_LARGE, INVALID_FETCH_SIZE ->
  INVALID_COMMIT_OFFSET_SIZE. DECIDED deviations: REQUEST_TIMED_OUT -> COORDINATOR_NOT_AVAILABLE (3.7's Scala
  path passes it through; 3.7's Java ``GroupCoordinatorService.normalizeException`` maps a timeout to
  COORDINATOR_NOT_AVAILABLE, which every client retries after rediscovering the coordinator), and any other
  error -> UNKNOWN_SERVER_ERROR (Kafka passes it through: a produce error means nothing to a commit client).
* group records (:func:`group_write_error`): Kafka 3.7 ``storeGroup`` (0.9 ``prepareStoreGroup`` alike): the
  same replica errors -> COORDINATOR_NOT_AVAILABLE / NOT_COORDINATOR; REQUEST_TIMED_OUT ->
  REBALANCE_IN_PROGRESS; too large -> UNKNOWN_SERVER_ERROR; others -> UNKNOWN_SERVER_ERROR (Kafka: as is).
"""

from __future__ import annotations

from functools import lru_cache

from coordinator.core.group.errors import ErrorCode
from harness.kernel.javacompat import partition_for

__all__ = ["Ownership", "WholeOwnership", "commit_error", "group_write_error"]

_partition_for = lru_cache(maxsize=100_000)(partition_for)

_E = ErrorCode
_REPLICA_ERRORS: dict[int, ErrorCode] = {
    _E.UNKNOWN_TOPIC_OR_PARTITION: _E.COORDINATOR_NOT_AVAILABLE,
    _E.NOT_ENOUGH_REPLICAS: _E.COORDINATOR_NOT_AVAILABLE,
    _E.NOT_ENOUGH_REPLICAS_AFTER_APPEND: _E.COORDINATOR_NOT_AVAILABLE,
    _E.NOT_LEADER_OR_FOLLOWER: _E.NOT_COORDINATOR,
    _E.KAFKA_STORAGE_ERROR: _E.NOT_COORDINATOR,
}
_TOO_LARGE = frozenset({_E.MESSAGE_TOO_LARGE, _E.RECORD_LIST_TOO_LARGE, _E.INVALID_FETCH_SIZE})


def commit_error(append_error: int) -> ErrorCode:
    """The OffsetCommit answer for an offsets append that ended with ``append_error`` (0: NONE)."""
    if append_error == _E.NONE:
        return _E.NONE
    mapped = _REPLICA_ERRORS.get(append_error)
    if mapped is not None:
        return mapped
    if append_error in _TOO_LARGE:
        return _E.INVALID_COMMIT_OFFSET_SIZE
    if append_error == _E.REQUEST_TIMED_OUT:
        return _E.COORDINATOR_NOT_AVAILABLE
    return _E.UNKNOWN_SERVER_ERROR


def group_write_error(append_error: int) -> ErrorCode:
    """The SyncGroup answer for a group-record append that ended with ``append_error`` (0: NONE)."""
    if append_error == _E.NONE:
        return _E.NONE
    mapped = _REPLICA_ERRORS.get(append_error)
    if mapped is not None:
        return mapped
    if append_error == _E.REQUEST_TIMED_OUT:
        return _E.REBALANCE_IN_PROGRESS
    return _E.UNKNOWN_SERVER_ERROR


class WholeOwnership:
    """Single-broker mode: every group is owned; ``loading`` between the machine's ``begin_loading()`` and
    ``finish_loading(now_ms)`` (see the module docstring)."""

    __slots__ = ("loading",)

    def __init__(self) -> None:
        self.loading = False

    @property
    def any_loading(self) -> bool:
        return self.loading

    def partition_for(self, group_id: str) -> int | None:
        """None: there are no offsets partitions."""
        return None

    def partition_status(self, partition: int) -> str:
        """``"loading"`` while loading, else ``"owned"`` (any partition number)."""
        return "loading" if self.loading else "owned"

    def status(self, group_id: str) -> ErrorCode | None:
        """COORDINATOR_LOAD_IN_PROGRESS while loading, else None."""
        return _E.COORDINATOR_LOAD_IN_PROGRESS if self.loading else None


class Ownership:
    """The offsets partitions of one coordinator: not owned, loading, owned (see the module docstring)."""

    __slots__ = ("loading", "owned", "partitions")

    def __init__(self, partitions: int) -> None:
        if partitions < 1:
            raise ValueError(f"offsets.topic.num.partitions must be >= 1, got {partitions}")
        self.partitions = partitions
        self.loading: set[int] = set()
        self.owned: set[int] = set()

    def partition_for(self, group_id: str) -> int:
        """``partitionFor(group_id)``: the offsets partition that holds the group."""
        return _partition_for(group_id, self.partitions)

    @property
    def any_loading(self) -> bool:
        """True while any partition loads."""
        return bool(self.loading)

    def partition_status(self, partition: int) -> str:
        """``"loading"``, ``"owned"`` or ``"not_owned"``."""
        if partition in self.loading:
            return "loading"
        return "owned" if partition in self.owned else "not_owned"

    def check(self, partition: int) -> None:
        """Raise ``ValueError`` for a partition number outside ``[0, partitions)``."""
        if not 0 <= partition < self.partitions:
            raise ValueError(f"offsets partition {partition} not in [0, {self.partitions})")

    def status(self, group_id: str) -> ErrorCode | None:
        """COORDINATOR_LOAD_IN_PROGRESS (loading), NOT_COORDINATOR (not owned) or None (owned)."""
        p = self.partition_for(group_id)
        if p in self.loading:
            return _E.COORDINATOR_LOAD_IN_PROGRESS
        if p not in self.owned:
            return _E.NOT_COORDINATOR
        return None
