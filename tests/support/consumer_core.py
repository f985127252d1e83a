"""A driver for the pure consumer-group machine (:mod:`coordinator.core.consumer.machine`) with a fake clock and
a fake topics image, for unit tests."""

from __future__ import annotations

import itertools
import uuid
from collections.abc import Iterable, Iterator, Mapping
from dataclasses import dataclass, field
from typing import Any

from coordinator.core.consumer.api import (
    ConsumerGroupHeartbeatRequest,
    ConsumerGroupHeartbeatResponse,
    TopicMetadata,
    TopicPartitions,
)
from coordinator.core.consumer.config import ConsumerGroupConfig
from coordinator.core.consumer.machine import ConsumerGroupCoordinator
from coordinator.core.group.api import CancelTimer, Effect, Emit, Persist, Respond, SetTimer
from coordinator.core.group.offsets import OffsetManager


def tid(n: int) -> uuid.UUID:
    """Topic id number ``n`` (ids in ascending Kafka order as ``n`` grows)."""
    return uuid.UUID(int=n)


class FakeTopics:
    """A topics image: ``add("t", partitions)`` gives the topic the next id (1, 2, ...)."""

    def __init__(self) -> None:
        self._by_name: dict[str, TopicMetadata] = {}
        self._ids = itertools.count(1)

    def add(self, name: str, partitions: int) -> uuid.UUID:
        existing = self._by_name.get(name)
        topic_id = existing.topic_id if existing is not None else tid(next(self._ids))
        self._by_name[name] = TopicMetadata(topic_id, name, partitions)
        return topic_id

    def by_name(self, name: str) -> TopicMetadata | None:
        return self._by_name.get(name)

    def by_id(self, topic_id: uuid.UUID) -> TopicMetadata | None:
        for t in self._by_name.values():
            if t.topic_id == topic_id:
                return t
        return None

    def names(self) -> Iterator[str]:
        return iter(list(self._by_name))


def tps(assignment: Mapping[uuid.UUID, Iterable[int]]) -> tuple[TopicPartitions, ...]:
    """Wire topic-partitions from ``{topic id: partitions}`` (topics and partitions sorted)."""
    return tuple(TopicPartitions(t, tuple(sorted(p))) for t, p in sorted(assignment.items()) if list(p))


def as_dict(partitions: tuple[TopicPartitions, ...] | None) -> dict[uuid.UUID, list[int]] | None:
    if partitions is None:
        return None
    return {tp.topic_id: list(tp.partitions) for tp in partitions}


@dataclass
class Driver:
    """The machine, a clock (``now``), the effects of the last call (``effects``) and all timers armed."""

    topics: FakeTopics = field(default_factory=FakeTopics)
    config: ConsumerGroupConfig = field(default_factory=ConsumerGroupConfig)
    now: int = 0
    group: str = "g"

    def __post_init__(self) -> None:
        counter = itertools.count(1)
        self.offsets = OffsetManager(max_metadata_bytes=self.config.offset_metadata_max_bytes)
        self.machine = ConsumerGroupCoordinator(
            self.config, self.topics, offsets=self.offsets, new_uuid=lambda: f"uuid-{next(counter)}"
        )
        self.effects: list[Effect] = []
        self.timers: dict[tuple[Any, ...], int] = {}
        self.persisted: list[Any] = []

    def apply(self, effects: list[Effect]) -> list[Effect]:
        self.effects = effects
        for e in effects:
            if isinstance(e, SetTimer):
                self.timers[e.key] = e.deadline_ms
            elif isinstance(e, CancelTimer):
                self.timers.pop(e.key, None)
            elif isinstance(e, Persist):
                self.persisted.append(e.record)
        return effects

    def send(self, req: ConsumerGroupHeartbeatRequest) -> ConsumerGroupHeartbeatResponse:
        effects = self.apply(self.machine.heartbeat(self.now, "tok", req))
        responds = [e for e in effects if isinstance(e, Respond)]
        assert len(responds) == 1 and responds[0].token == "tok"
        response = responds[0].response
        assert isinstance(response, ConsumerGroupHeartbeatResponse)
        return response

    def join(
        self,
        member: str,
        topics: Iterable[str],
        *,
        instance_id: str | None = None,
        assignor: str | None = None,
        rebalance_timeout_ms: int = 300_000,
        regex: str | None = None,
    ) -> ConsumerGroupHeartbeatResponse:
        return self.send(
            ConsumerGroupHeartbeatRequest(
                self.group,
                member,
                0,
                instance_id=instance_id,
                rebalance_timeout_ms=rebalance_timeout_ms,
                subscribed_topic_names=tuple(topics) if regex is None else None,
                subscribed_topic_regex=regex,
                server_assignor=assignor,
                topic_partitions=(),
            )
        )

    def hb(
        self,
        member: str,
        epoch: int,
        owned: Mapping[uuid.UUID, Iterable[int]] | None = None,
        *,
        instance_id: str | None = None,
    ) -> ConsumerGroupHeartbeatResponse:
        return self.send(
            ConsumerGroupHeartbeatRequest(
                self.group,
                member,
                epoch,
                instance_id=instance_id,
                topic_partitions=None if owned is None else tps(owned),
            )
        )

    def advance(self, ms: int) -> list[Effect]:
        """Move the clock by ``ms`` and fire every timer due, in deadline order; the effects of the firings."""
        self.now += ms
        fired: list[Effect] = []
        while True:
            due = sorted((d, k) for k, d in self.timers.items() if d <= self.now)
            if not due:
                return fired
            deadline, key = due[0]
            del self.timers[key]
            fired.extend(self.apply(self.machine.on_timer(self.now, key)))
            del deadline

    def emitted(self, kind: str, effects: list[Effect] | None = None) -> list[dict[str, Any]]:
        source = self.effects if effects is None else effects
        return [e.fields for e in source if isinstance(e, Emit) and e.kind == kind]
