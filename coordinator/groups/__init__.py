"""The group APIs of the broker, dispatched by group type.

* :mod:`~coordinator.groups.types` -- what a group type serves (:class:`~coordinator.groups.types.GroupType`) and
  the dispatch of the shared APIs to the type holding a group;
* :mod:`~coordinator.groups.classic` -- the classic type: JoinGroup, SyncGroup, Heartbeat, LeaveGroup over the
  pure machine (:mod:`coordinator.core.group`) and its runner (:mod:`coordinator.groups.runner`: timers, durable log,
  responses, history events, loud failures);
* :mod:`~coordinator.groups.consumer` -- the consumer type (KIP-848): ConsumerGroupHeartbeat, ConsumerGroupDescribe
  over the consumer protocol's pure machine (:mod:`coordinator.core.consumer`). In single-broker mode both
  machines sit behind one facade (:class:`~coordinator.core.groups.GroupCoordinators`: Kafka 4's online migration
  between the types, ``--consumer-migration-policy``), run by one runner over one group log. In replicated mode
  the consumer type has a runner of its own beside the classic type, both machines own groups per
  ``__consumer_offsets`` partition, the classic runner (the leadership listener) loads and unloads both
  (:attr:`~coordinator.groups.runner.GroupRunner.co_runners`), and groups are not converted between the types;
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
from coordinator.core.consumer.api import TopicsImage
from coordinator.core.consumer.machine import ConsumerGroupCoordinator
from coordinator.core.group.machine import GroupCoordinator
from coordinator.core.groups import GroupCoordinators
from coordinator.groups.admin import DeleteGroupsApi, DescribeGroupsApi, ListGroupsApi
from coordinator.groups.classic import ClassicGroups
from coordinator.groups.codec import kio_error
from coordinator.groups.consumer import ClusterTopics, ConsumerGroups, ConsumerMachine, StoreTopics
from coordinator.groups.find_coordinator import FindCoordinatorApi
from coordinator.groups.log import GroupLog
from coordinator.groups.offsets import OffsetCommitApi, OffsetFetchApi
from coordinator.groups.routing import HashRouting, OwnedRouting, Routing
from coordinator.groups.runner import GroupRunner, now_ms
from coordinator.groups.types import GroupTypes, Handler
from coordinator.ports import ReplicatedLog
from coordinator.topics import TopicStore
from harness.kernel.history import History

__all__ = ["CONSUMER_VERSIONS", "GROUP_VERSIONS", "GroupApis", "kio_error"]

#: API key -> (min, max) of the consumer type's own APIs (served only with the consumer type).
CONSUMER_VERSIONS: dict[int, tuple[int, int]] = {
    ApiKey.CONSUMER_GROUP_HEARTBEAT: (0, 1),
    ApiKey.CONSUMER_GROUP_DESCRIBE: (0, 0),
}

#: API key -> (min, max) served by :class:`GroupApis` (OffsetCommit / OffsetFetch v9: a consumer group's member
#: epoch; a classic group's v9 commit carries its generation as before).
GROUP_VERSIONS: dict[int, tuple[int, int]] = {
    ApiKey.OFFSET_COMMIT: (2, 9),
    ApiKey.OFFSET_FETCH: (1, 9),
    ApiKey.FIND_COORDINATOR: (0, 4),
    ApiKey.JOIN_GROUP: (0, 9),
    ApiKey.HEARTBEAT: (0, 4),
    ApiKey.LEAVE_GROUP: (0, 5),
    ApiKey.SYNC_GROUP: (0, 5),
    ApiKey.DESCRIBE_GROUPS: (0, 6),
    ApiKey.LIST_GROUPS: (0, 5),
    ApiKey.DELETE_GROUPS: (0, 2),
    **CONSUMER_VERSIONS,
}


class GroupApis:
    """Group APIs of the broker: the shared adapters over the group types (the classic one, and the consumer one
    when it is given its machine)."""

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
        consumer: Callable[[TopicsImage], ConsumerMachine] | None = None,
    ) -> None:
        """``replicated`` switches the classic type to replicated mode (see
        :class:`~coordinator.groups.classic.ClassicGroups`) and the routing to :class:`OwnedRouting`. An
        OffsetCommit's topic is known if the store has it, else if ``known_topic`` says so (default: the store).
        ``consumer`` makes the consumer type's machine over the broker's topics (it must share the classic
        machine's offsets); without it the consumer type is not served."""
        routing: Routing = OwnedRouting() if replicated is not None else HashRouting(cluster)
        # Single-broker mode with the consumer protocol's own machine: both types behind the facade (the online
        # migration), one runner. Replicated mode (or another consumer machine): the two types stay apart.
        consumer_machine: ConsumerMachine | None = None
        topics: TopicsImage | None = None
        facade: GroupCoordinators | None = None
        if consumer is not None:
            # replicated: the cluster's topics (a coordinator need not host a topic its groups consume)
            topics = StoreTopics(store) if replicated is None else ClusterTopics(cluster, store)
            consumer_machine = consumer(topics)
            if replicated is None and isinstance(consumer_machine, ConsumerGroupCoordinator):
                facade = GroupCoordinators(machine, consumer_machine)
        #: The facade of both group types (single-broker mode with the consumer type), else None.
        self.facade = facade
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
            facade=facade,
        )
        self.consumer: ConsumerGroups | None = None
        if consumer_machine is not None and topics is not None:
            self.consumer = ConsumerGroups(
                consumer_machine,
                topics,
                routing,
                history,
                group_log,
                classic_in_use=self.classic.in_use,
                classic_holds=self.classic.holds,
                offsets_partitions=cluster.offsets_partitions,
                broker_id=broker_id,
                clock=clock,
                rejected=rejected,
                store=self.classic.topic_store,
                facade=facade,
                runner=self.classic.runner if facade is not None else None,
            )
            if facade is None:
                self.classic.held_elsewhere = self.consumer.holds
            if replicated is not None:
                self.classic.runner.co_runners.append(
                    (self.consumer.runner, self.consumer.machine.takes_record)
                )
        # Under the facade the classic type's shared APIs serve both types (it routes by holder).
        self.types = GroupTypes(
            [self.classic] if self.consumer is None or facade is not None else [self.classic, self.consumer]
        )
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
        if self.consumer is not None:  # under the facade it is not among the types of the shared APIs
            self._handlers.update(self.consumer.handlers())

    def handlers(self) -> dict[int, Handler]:
        """API key -> handler, for every key of :meth:`versions`."""
        return dict(self._handlers)

    def versions(self) -> dict[int, tuple[int, int]]:
        """API key -> (min, max) these group APIs serve: :data:`GROUP_VERSIONS`, without the consumer type's own
        APIs when it is not served."""
        if self.consumer is not None:
            return dict(GROUP_VERSIONS)
        return {k: v for k, v in GROUP_VERSIONS.items() if k not in CONSUMER_VERSIONS}

    @property
    def machine(self) -> GroupCoordinator:
        """The classic type's machine (tests and the broker inspect it)."""
        return self.classic.machine

    @property
    def runner(self) -> GroupRunner:
        """The classic type's runner."""
        return self.classic.runner

    async def load(self) -> tuple[int, int]:
        """Load the groups (see :meth:`ClassicGroups.load`); with the consumer type, one replay of the group log
        gives each record to the machine that takes it (the consumer machine's ``takes_record``; under the facade,
        the facade's ``load`` decides), the rest to the classic machine."""
        if self.consumer is not None and self.facade is None:
            return await self.classic.load(also=[(self.consumer.runner, self.consumer.machine.takes_record)])
        return await self.classic.load()

    @property
    def loading(self) -> bool:
        """True while groups load."""
        return self.classic.loading or (self.consumer is not None and self.consumer.loading)

    def _other_runner(self) -> GroupRunner | None:
        """The consumer type's runner when it is not the classic type's (no facade)."""
        if self.consumer is None or self.consumer.runner is self.classic.runner:
            return None
        return self.consumer.runner

    def cancel_timers(self) -> None:
        self.classic.runner.cancel_timers()
        other = self._other_runner()
        if other is not None:
            other.cancel_timers()

    @property
    def timer_count(self) -> int:
        other = self._other_runner()
        return self.classic.runner.timer_count + (other.timer_count if other is not None else 0)
