"""Random joins, leaves and heartbeats of faithful clients (each sends back what it was last given), from fixed
seeds: no partition is ever held by two members, the machine's partition epochs are exactly what its members
hold, and once the churn stops the group settles with every partition owned by exactly one member."""

from __future__ import annotations

import random
import uuid

import pytest

from coordinator.core.consumer.config import ConsumerGroupConfig
from coordinator.core.consumer.group import ConsumerGroup
from coordinator.core.group.errors import ErrorCode
from tests.support.consumer_core import Driver


class _Client:
    def __init__(self, member_id: str, topics: list[str]) -> None:
        self.member_id = member_id
        self.topics = topics
        self.epoch = 0
        self.owned: dict[uuid.UUID, list[int]] = {}


def _check_exclusive(group: ConsumerGroup) -> None:
    held: dict[tuple[uuid.UUID, int], str] = {}
    expected: dict[uuid.UUID, dict[int, int]] = {}
    for m in group.members.values():
        for assignment in (m.assigned, m.pending_revocation):
            for topic, parts in assignment.items():
                for p in parts:
                    assert (topic, p) not in held, f"{topic}-{p} held by {held[(topic, p)]} and {m.member_id}"
                    held[(topic, p)] = m.member_id
                    expected.setdefault(topic, {})[p] = m.member_epoch
    assert group.partition_epochs == expected


def _heartbeat(d: Driver, c: _Client) -> None:
    r = d.hb(c.member_id, c.epoch, c.owned)
    assert r.error is ErrorCode.NONE, (c.member_id, r.error, r.error_message)
    c.epoch = r.member_epoch
    if r.assignment is not None:
        c.owned = {tp.topic_id: list(tp.partitions) for tp in r.assignment}


@pytest.mark.parametrize("seed", range(12))
@pytest.mark.parametrize("assignor", ["uniform", "range"])
def test_random_churn_keeps_partitions_exclusive_and_settles(seed: int, assignor: str) -> None:
    rng = random.Random(seed)
    d = Driver(config=ConsumerGroupConfig(assignors=(assignor,)))
    d.topics.add("a", 5)
    d.topics.add("b", 3)
    subscriptions = [["a"], ["b"], ["a", "b"], ["a", "missing"]]
    clients: dict[str, _Client] = {}
    serial = 0
    for _ in range(150):
        op = rng.random()
        if op < 0.2 or not clients:
            serial += 1
            c = _Client(f"m{serial:03d}", rng.choice(subscriptions))
            r = d.join(c.member_id, c.topics)
            assert r.error is ErrorCode.NONE
            c.epoch = r.member_epoch
            c.owned = {tp.topic_id: list(tp.partitions) for tp in r.assignment or ()}
            clients[c.member_id] = c
        elif op < 0.3:
            c = clients.pop(rng.choice(sorted(clients)))
            assert d.hb(c.member_id, -1).error is ErrorCode.NONE
        else:
            _heartbeat(d, clients[rng.choice(sorted(clients))])
        group = d.machine.group("g")
        assert group is not None
        _check_exclusive(group)

    group = d.machine.group("g")
    assert group is not None
    for _ in range(6):
        for member_id in sorted(clients):
            _heartbeat(d, clients[member_id])
    _check_exclusive(group)
    if clients:
        assert group.state.value == "Stable"
        owners: dict[tuple[uuid.UUID, int], str] = {}
        for c in clients.values():
            for topic, parts in c.owned.items():
                for p in parts:
                    assert (topic, p) not in owners
                    owners[(topic, p)] = c.member_id
        subscribed = {t for c in clients.values() for t in c.topics if d.topics.by_name(t) is not None}
        expected = {
            (meta.topic_id, p)
            for t in subscribed
            if (meta := d.topics.by_name(t))
            for p in range(meta.partitions)
        }
        assert set(owners) == expected
