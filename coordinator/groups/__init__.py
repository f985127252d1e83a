"""The group APIs of the broker, dispatched by group type.

* :mod:`~coordinator.groups.types` -- what a group type serves (:class:`~coordinator.groups.types.GroupType`) and
  the dispatch of the shared APIs to the type holding a group;
* :mod:`~coordinator.groups.classic` -- the classic type: JoinGroup, SyncGroup, Heartbeat, LeaveGroup over the
  pure machine (:mod:`coordinator.core.group`) and its runner (:mod:`coordinator.groups.runner`: timers, durable log,
  responses, history events, loud failures);
* :mod:`~coordinator.groups.offsets` -- OffsetCommit, OffsetFetch; :mod:`~coordinator.groups.admin` --
  DescribeGroups, ListGroups, DeleteGroups; :mod:`~coordinator.groups.find_coordinator` -- FindCoordinator (from
  the cluster view; no group type models it);
* :mod:`~coordinator.groups.routing` -- which groups this broker refuses NOT_COORDINATOR before any type sees
  them (the cluster view's hash without replication; with it the type decides from the offsets partitions it
  owns).

Each handler turns the kio request (any served version) into the group type's version-neutral request
(:mod:`coordinator.core.group.api`) and returns the kio response of the request's version, or a future of it for a
parked JoinGroup / SyncGroup. Effects, timers, the group log and failures are the runner's business.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Callable

from coordinator.api_keys import ApiKey
from coordinator.cluster import ClusterView
from coordinator.config import ReplicationConfig
from coordinator.core.group.machine import GroupCoordinator
from coordinator.groups.admin import DeleteGroupsApi, DescribeGroupsApi, ListGroupsApi
from coordinator.groups.classic import ClassicGroups
from coordinator.groups.codec import kio_error
from coordinator.groups.find_coordinator import FindCoordinatorApi
from coordinator.groups.log import GroupLog
from coordinator.groups.offsets import OffsetCommitApi, OffsetFetchApi
from coordinator.groups.routing import HashRouting, OwnedRouting, Routing
from coordinator.groups.runner import GroupRunner, now_ms
from coordinator.groups.types import GroupTypes, Handler
from coordinator.ports import ReplicatedLog
from coordinator.topics import TopicStore
from harness.kernel.history import History

__all__ = ["GROUP_VERSIONS", "GroupApis", "kio_error"]

#: API key -> (min, max) served by :class:`GroupApis`.
GROUP_VERSIONS: dict[int, tuple[int, int]] = {
    ApiKey.OFFSET_COMMIT: (2, 8),
    ApiKey.OFFSET_FETCH: (1, 8),
    ApiKey.FIND_COORDINATOR: (0, 4),
    ApiKey.JOIN_GROUP: (0, 9),
    ApiKey.HEARTBEAT: (0, 4),
    ApiKey.LEAVE_GROUP: (0, 5),
    ApiKey.SYNC_GROUP: (0, 5),
    ApiKey.DESCRIBE_GROUPS: (0, 6),
    ApiKey.LIST_GROUPS: (0, 5),
    ApiKey.DELETE_GROUPS: (0, 2),
}


class GroupApis:
    """Group APIs of the broker: the shared adapters over the group types (today the classic one)."""

    def __init__(
        self,
        machine: GroupCoordinator,
        cluster: ClusterView,
        store: TopicStore,
        history: History,
        group_log: GroupLog | None = None,
        *,
        broker_id: int = 0,
        clock: Callable[[], int] = now_ms,
        known_topic: Callable[[str], bool] | None = None,
        rejected: Counter[str] | None = None,
        replicated: ReplicatedLog | None = None,
        replication: ReplicationConfig | None = None,
    ) -> None:
        """``replicated`` switches the classic type to replicated mode (see
        :class:`~coordinator.groups.classic.ClassicGroups`) and the routing to :class:`OwnedRouting`. An
        OffsetCommit's topic is known if the store has it, else if ``known_topic`` says so (default: the store)."""
        routing: Routing = OwnedRouting() if replicated is not None else HashRouting(cluster)
        self.classic = ClassicGroups(
            machine,
            routing,
            history,
            group_log,
            offsets_partitions=cluster.offsets_partitions,
            broker_id=broker_id,
            clock=clock,
            rejected=rejected,
            replicated=replicated,
            replication=replication,
        )
        self.types = GroupTypes([self.classic])
        self._handlers: dict[int, Handler] = {
            ApiKey.FIND_COORDINATOR: FindCoordinatorApi(cluster),
            ApiKey.OFFSET_COMMIT: OffsetCommitApi(
                self.types, routing, store, known_topic or (lambda name: store.get(name) is not None)
            ),
            ApiKey.OFFSET_FETCH: OffsetFetchApi(self.types, routing),
            ApiKey.DESCRIBE_GROUPS: DescribeGroupsApi(self.types, routing),
            ApiKey.LIST_GROUPS: ListGroupsApi(self.types),
            ApiKey.DELETE_GROUPS: DeleteGroupsApi(self.types, routing),
        }
        for group_type in self.types.types:
            self._handlers.update(group_type.handlers())

    def handlers(self) -> dict[int, Handler]:
        """API key -> handler, for every key of :data:`GROUP_VERSIONS`."""
        return dict(self._handlers)

    @property
    def machine(self) -> GroupCoordinator:
        """The classic type's machine (tests and the broker inspect it)."""
        return self.classic.machine

    @property
    def runner(self) -> GroupRunner:
        """The classic type's runner."""
        return self.classic.runner

    async def load(self) -> tuple[int, int]:
        """Load the groups (see :meth:`ClassicGroups.load`)."""
        return await self.classic.load()

    @property
    def loading(self) -> bool:
        """True while groups load."""
        return self.classic.loading

    def cancel_timers(self) -> None:
        self.classic.runner.cancel_timers()

    @property
    def timer_count(self) -> int:
        return self.classic.runner.timer_count
