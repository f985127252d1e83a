"""Which groups this broker refuses with NOT_COORDINATOR before any group type sees the request.

Two rules, chosen once per broker:

* :class:`HashRouting` (without replication): the :class:`~coordinator.cluster.ClusterView`'s hash of the group id
  over the live brokers names the coordinator; every other broker answers NOT_COORDINATOR.
* :class:`OwnedRouting` (replication): nothing is refused here; the group type answers COORDINATOR_LOAD_IN_PROGRESS
  / NOT_COORDINATOR itself from the ``__consumer_offsets`` partitions it owns (Kafka 3.7 ``validateGroupStatus``
  order).
"""

from __future__ import annotations

from typing import Protocol

from coordinator.cluster import ClusterView

__all__ = ["HashRouting", "OwnedRouting", "Routing", "other_coordinates"]


class Routing(Protocol):
    def not_coordinator(self, group_id: str) -> bool:
        """True if this broker answers NOT_COORDINATOR for ``group_id`` whatever the request."""
        ...


class HashRouting:
    """The cluster view's coordinator rule (see the module docstring)."""

    def __init__(self, cluster: ClusterView) -> None:
        self.cluster = cluster

    def not_coordinator(self, group_id: str) -> bool:
        return not self.cluster.is_coordinator(group_id)


class OwnedRouting:
    """The group type decides (see the module docstring)."""

    def not_coordinator(self, group_id: str) -> bool:
        return False


def other_coordinates(routing: Routing, group_id: str) -> bool:
    """NOT_COORDINATOR is the answer for a JoinGroup / SyncGroup / Heartbeat / LeaveGroup: Kafka 3.7's
    ``GroupCoordinator.validateGroupStatus`` checks, in order, INVALID_GROUP_ID (an empty id, which the group type
    answers), COORDINATOR_LOAD_IN_PROGRESS (only for a group whose offsets partition this broker is loading, i.e.
    one it coordinates: the group type answers that too) and NOT_COORDINATOR. So an empty id never gets
    NOT_COORDINATOR, and a group of another broker gets it even while this one loads."""
    return bool(group_id) and routing.not_coordinator(group_id)
