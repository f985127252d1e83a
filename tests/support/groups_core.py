"""A driver for the facade holding both group machines (:mod:`coordinator.core.groups`) with a fake clock and a
fake topics image: classic members (JoinGroup / SyncGroup / Heartbeat / LeaveGroup with the embedded consumer
protocol's bytes) and consumer-protocol members (ConsumerGroupHeartbeat) in one group id, for unit tests of the
online migration."""

from __future__ import annotations

import itertools
import uuid
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from typing import Any

from coordinator.core.consumer.api import ConsumerGroupHeartbeatRequest, ConsumerGroupHeartbeatResponse
from coordinator.core.consumer.config import ConsumerGroupConfig
from coordinator.core.consumer.machine import ConsumerGroupCoordinator
from coordinator.core.consumer.protocol import decode_assignment, encode_assignment, encode_subscription
from coordinator.core.group.api import (
    CancelTimer,
    Effect,
    Emit,
    HeartbeatRequest,
    HeartbeatResponse,
    JoinGroupRequest,
    JoinGroupResponse,
    LeaveGroupRequest,
    LeaveGroupResponse,
    Persist,
    Respond,
    SetTimer,
    SyncGroupRequest,
    SyncGroupResponse,
)
from coordinator.core.group.config import GroupConfig
from coordinator.core.group.machine import GroupCoordinator
from coordinator.core.group.offsets import OffsetManager
from coordinator.core.group.records import decode_record, encode_record
from coordinator.core.groups import GroupCoordinators
from tests.support.consumer_core import FakeTopics, tps

#: A member's partitions of topic "t" (the tests use one topic).
Parts = Iterable[int]


def sub(owned: Parts = (), *, version: int = 1, topics: tuple[str, ...] = ("t",)) -> bytes:
    """A classic member's JoinGroup metadata: the embedded consumer protocol's subscription to ``topics``, owning
    ``owned`` of topic t (v1+)."""
    return encode_subscription(topics, version=version, owned={"t": frozenset(owned)} if list(owned) else {})


def assignment(parts: Parts, version: int = 1) -> bytes:
    return encode_assignment({"t": frozenset(parts)}, version)


def parts_of(data: bytes) -> set[int]:
    """The partitions of topic t in a SyncGroup assignment."""
    decoded, _ = decode_assignment(data)
    return set(decoded.get("t", frozenset()))


@dataclass
class Groups:
    """Both machines behind the facade, one group ``g``, a clock (``now``), every answer by token, the timers armed
    and every record persisted (``log``, encoded as the group log writes them)."""

    consumer_config: ConsumerGroupConfig = field(default_factory=ConsumerGroupConfig)
    classic_config: GroupConfig = field(default_factory=lambda: GroupConfig(initial_rebalance_delay_ms=0))
    topics: FakeTopics = field(default_factory=FakeTopics)
    now: int = 0
    group: str = "g"

    def __post_init__(self) -> None:
        if self.topics.by_name("t") is None:
            self.topics.add("t", 6)
        # Member ids stay unique across restarts (as random ids would).
        self._classic_ids = itertools.count(1)
        self._consumer_ids = itertools.count(1)
        self.build()
        self.timers: dict[tuple[Any, ...], int] = {}
        self.log: list[bytes] = []
        self.answers: dict[Any, Any] = {}
        self.effects: list[Effect] = []
        self._tokens = itertools.count(1)

    def build(self) -> None:
        """(Re)create the machines (a broker restart: call :meth:`restart`)."""
        classic_ids, consumer_ids = self._classic_ids, self._consumer_ids
        self.offsets = OffsetManager(max_metadata_bytes=4096)
        self.classic = GroupCoordinator(
            self.classic_config, new_uuid=lambda: f"u{next(classic_ids)}", offsets=self.offsets
        )
        self.consumer = ConsumerGroupCoordinator(
            self.consumer_config,
            self.topics,
            offsets=self.offsets,
            new_uuid=lambda: f"v{next(consumer_ids)}",
        )
        self.facade = GroupCoordinators(self.classic, self.consumer)

    def restart(self) -> list[Effect]:
        """A broker restart: new machines, the log replayed into them."""
        self.build()
        self.timers = {}
        self.apply(self.facade.begin_loading())
        for data in self.log:
            self.facade.load(decode_record(data))
        return self.apply(self.facade.finish_loading(self.now))

    # ------------------------------------------------------------------------------------------------ effects

    def apply(self, effects: list[Effect]) -> list[Effect]:
        self.effects = effects
        for e in effects:
            if isinstance(e, SetTimer):
                self.timers[e.key] = e.deadline_ms
            elif isinstance(e, CancelTimer):
                self.timers.pop(e.key, None)
            elif isinstance(e, Persist):
                self.log.append(encode_record(e.record))
            elif isinstance(e, Respond):
                self.answers[e.token] = e.response
        return effects

    def _call(self, make: Any) -> Any:
        token = next(self._tokens)
        self.apply(make(token))
        return token

    def answer(self, token: Any) -> Any:
        """The answer to ``token`` (None: not answered yet)."""
        return self.answers.get(token)

    def emitted(self, kind: str) -> list[dict[str, Any]]:
        return [e.fields for e in self.effects if isinstance(e, Emit) and e.kind == kind]

    def advance(self, ms: int) -> None:
        """Move the clock and fire every timer due, in deadline order."""
        self.now += ms
        while True:
            due = sorted((d, k) for k, d in self.timers.items() if d <= self.now)
            if not due:
                return
            _, key = due[0]
            del self.timers[key]
            self.apply(self.facade.on_timer(self.now, key))

    # ------------------------------------------------------------------------------------------------ classic members

    def join(
        self,
        member_id: str,
        owned: Parts = (),
        *,
        client: str = "c",
        session_ms: int = 10_000,
        rebalance_ms: int = 60_000,
        version: int = 1,
        protocols: list[tuple[str, bytes]] | None = None,
        protocol_type: str = "consumer",
        instance_id: str | None = None,
        api_version: int = 3,
    ) -> Any:
        """A classic JoinGroup (by default v3: no MEMBER_ID_REQUIRED round); returns its token."""
        req = JoinGroupRequest(
            self.group,
            member_id,
            session_ms,
            protocol_type,
            protocols if protocols is not None else [("range", sub(owned, version=version))],
            rebalance_timeout_ms=rebalance_ms,
            api_version=api_version,
            group_instance_id=instance_id,
            client_id=client,
        )
        return self._call(lambda t: self.facade.join_group(self.now, t, req))

    def sync(self, member_id: str, generation: int, assignments: Mapping[str, Parts] | None = None) -> Any:
        req = SyncGroupRequest(
            self.group,
            generation,
            member_id,
            [(m, assignment(p)) for m, p in (assignments or {}).items()],
            protocol_type="consumer",
            protocol_name="range",
        )
        return self._call(lambda t: self.facade.sync_group(self.now, t, req))

    def heartbeat(self, member_id: str, generation: int) -> HeartbeatResponse:
        token = self._call(
            lambda t: self.facade.heartbeat(self.now, t, HeartbeatRequest(self.group, generation, member_id))
        )
        response = self.answer(token)
        assert isinstance(response, HeartbeatResponse)
        return response

    def leave(self, member_id: str) -> LeaveGroupResponse:
        token = self._call(
            lambda t: self.facade.leave_group(self.now, t, LeaveGroupRequest(self.group, [(member_id, None)]))
        )
        response = self.answer(token)
        assert isinstance(response, LeaveGroupResponse)
        return response

    def classic_group_of_three(self) -> dict[str, set[int]]:
        """A Stable classic group at generation 1: members c1-u1, c2-u2, c3-u3 (joined in that order, c1-u1 the
        leader) owning t's partitions {0, 1}, {2, 3}, {4, 5}."""
        tokens = [self.join("", client=f"c{i}") for i in (1, 2, 3)]
        self.advance(1)  # the (zero) initial delay: the join completes
        answers = [self.answer(t) for t in tokens]
        assert all(isinstance(a, JoinGroupResponse) and a.generation_id == 1 for a in answers)
        ids = [a.member_id for a in answers]
        assert ids == ["c1-u1", "c2-u2", "c3-u3"]
        plan = {"c1-u1": {0, 1}, "c2-u2": {2, 3}, "c3-u3": {4, 5}}
        syncs = [self.sync(ids[0], 1, plan)] + [self.sync(m, 1) for m in ids[1:]]
        for token, member in zip(syncs, ids, strict=True):
            response = self.answer(token)
            assert isinstance(response, SyncGroupResponse) and parts_of(response.assignment) == plan[member]
        return plan

    # ------------------------------------------------------------------------------------------------ consumer members

    def send(self, req: ConsumerGroupHeartbeatRequest) -> ConsumerGroupHeartbeatResponse:
        token = self._call(lambda t: self.facade.consumer_group_heartbeat(self.now, t, req))
        response = self.answer(token)
        assert isinstance(response, ConsumerGroupHeartbeatResponse)
        return response

    def cjoin(self, member_id: str, *, rebalance_ms: int = 60_000) -> ConsumerGroupHeartbeatResponse:
        return self.send(
            ConsumerGroupHeartbeatRequest(
                self.group,
                member_id,
                0,
                rebalance_timeout_ms=rebalance_ms,
                subscribed_topic_names=("t",),
                topic_partitions=(),
            )
        )

    def chb(self, member_id: str, epoch: int, owned: Parts | None = None) -> ConsumerGroupHeartbeatResponse:
        t = self.t
        return self.send(
            ConsumerGroupHeartbeatRequest(
                self.group,
                member_id,
                epoch,
                topic_partitions=None if owned is None else tps({t: list(owned)}),
            )
        )

    def cleave(self, member_id: str) -> ConsumerGroupHeartbeatResponse:
        return self.send(ConsumerGroupHeartbeatRequest(self.group, member_id, -1))

    @property
    def t(self) -> uuid.UUID:
        meta = self.topics.by_name("t")
        assert meta is not None
        return meta.topic_id

    # ------------------------------------------------------------------------------------------------ inspection

    def owners(self) -> dict[str, set[int]]:
        """Consumer group: each member's current partitions (assigned and pending revocation) of t."""
        group = self.consumer.group(self.group)
        assert group is not None
        return {
            m.member_id: set(m.assigned.get(self.t, frozenset()))
            | set(m.pending_revocation.get(self.t, frozenset()))
            for m in group.members.values()
        }

    def targets(self) -> dict[str, set[int]]:
        group = self.consumer.group(self.group)
        assert group is not None
        return {m: set(a.get(self.t, frozenset())) for m, a in group.target.items()}

    def classic_owners(self) -> dict[str, set[int]]:
        """Classic group: each member's assignment (its last SyncGroup's) of t."""
        group = self.classic.group(self.group)
        assert group is not None
        return {
            m.member_id: parts_of(m.assignment) if m.assignment else set() for m in group.members.values()
        }


def exclusive(owners: Mapping[str, set[int]]) -> bool:
    """No partition held by two members."""
    seen: list[int] = [p for parts in owners.values() for p in parts]
    return len(seen) == len(set(seen))
