# pyright: strict
"""The member's topic registry (0.8's ``topicRegistry``): the partitions it owns and their positions.

Contract
--------
:class:`Registry` maps each owned :class:`TopicPartition` to an :class:`OwnedPartition` (the thread
that owns it, the next offset to read, the version of its offset znode). It is written by the
rebalance attempt (replace on success, pop on release, clear on session expiry or shutdown) and read
by the fetcher's callbacks and the offset committer on other threads: every method takes a plain
lock that is never held across a yield (safe for threads and greenlets). The
:class:`OwnedPartition` objects handed out are shared: only the committer writes their
``offset_version`` (under its own commit lock).
"""

from __future__ import annotations

import threading
from collections.abc import Mapping
from dataclasses import dataclass

from legacy_zk.ids import ThreadId, TopicPartition


@dataclass
class OwnedPartition:
    """``PartitionTopicInfo``: one owned partition and where consumption stands."""

    thread: ThreadId
    consumed: int  # next offset to read; -1 = not known yet (auto.offset.reset pending)
    offset_version: int | None  # version of the offset znode last read/written (None: no znode)


class Registry:
    """Owned partitions (module contract)."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._owned: dict[TopicPartition, OwnedPartition] = {}

    def owned(self) -> frozenset[TopicPartition]:
        """The partitions owned now."""
        with self._lock:
            return frozenset(self._owned)

    def consumed(self) -> dict[TopicPartition, int]:
        """Next offset to read per owned partition (-1 while auto.offset.reset is pending)."""
        with self._lock:
            return {tp: o.consumed for tp, o in self._owned.items()}

    def snapshot(self) -> list[tuple[TopicPartition, OwnedPartition, int]]:
        """(partition, its entry, its position now) for every owned partition, sorted."""
        with self._lock:
            return sorted(((tp, o, o.consumed) for tp, o in self._owned.items()), key=lambda t: t[0])

    def replace(self, owned: Mapping[TopicPartition, OwnedPartition]) -> None:
        """The outcome of a successful attempt: exactly these partitions are owned."""
        with self._lock:
            self._owned = dict(owned)

    def clear(self) -> list[TopicPartition]:
        """Forget everything (the owner znodes are gone); returns what was owned, sorted."""
        with self._lock:
            owned = sorted(self._owned)
            self._owned = {}
        return owned

    def pop(self, tp: TopicPartition) -> None:
        """Forget one partition (its owner znode was deleted)."""
        with self._lock:
            self._owned.pop(tp, None)

    def advance(self, tp: TopicPartition, next_offset: int) -> bool:
        """Record that ``next_offset`` is the next to read on ``tp``; False when ``tp`` is not owned."""
        with self._lock:
            info = self._owned.get(tp)
            if info is None:
                return False
            info.consumed = next_offset
            return True

    def position_known(self, tp: TopicPartition, position: int) -> None:
        """The fetcher resolved ``auto.offset.reset``: set the position if it was still unknown."""
        with self._lock:
            info = self._owned.get(tp)
            if info is not None and info.consumed < 0:
                info.consumed = position
