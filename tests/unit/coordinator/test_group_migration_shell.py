"""The broker's group APIs over the facade of both group types (single-broker mode, in process, over the real
machines): a classic group in use is converted to a consumer group by the first consumer-protocol member's join
and back by its leave, with one runner and one group log (a restart in between keeps the consumer group and its
classic member), each conversion a ``group_converted`` event of the consumer protocol; with the migration policy
disabled the join is GROUP_ID_NOT_FOUND, as Kafka 4 answers."""

from __future__ import annotations

import asyncio
import datetime
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from kio.index import load_request_schema
from kio.schema.errors import ErrorCode as KioError

from coordinator.config import BrokerConfig, GroupConfig
from coordinator.core.consumer.config import ConsumerGroupConfig
from coordinator.server import Broker
from coordinator.wire import nested
from tests.support.groups_core import assignment, parts_of, sub
from tests.support.kio_wire import cgh, dispatch
from tests.support.recording import RecordingHistory


@pytest.fixture
def loop() -> Iterator[asyncio.AbstractEventLoop]:
    loop = asyncio.new_event_loop()
    yield loop
    loop.close()


def _broker(data: Path, loop: asyncio.AbstractEventLoop, history: RecordingHistory, policy: str) -> Broker:
    config = BrokerConfig(
        data_dir=data,
        group=GroupConfig(initial_rebalance_delay_ms=0),
        consumer=ConsumerGroupConfig(migration_policy=policy),
    )
    broker = Broker(config, history=history)  # pyright: ignore[reportArgumentType]
    loop.run_until_complete(broker.groups.load())
    return broker


def _join(broker: Broker, loop: asyncio.AbstractEventLoop, member: str) -> Any:
    cls: Any = load_request_schema(11, 5)
    proto = nested(cls, "protocols")
    body = cls(
        group_id="g",
        session_timeout=datetime.timedelta(seconds=10),
        rebalance_timeout=datetime.timedelta(seconds=30),
        member_id=member,
        group_instance_id=None,
        protocol_type="consumer",
        protocols=(proto(name="range", metadata=sub()),),
    )
    return dispatch(broker, 11, 5, body, loop)


def _sync(broker: Broker, loop: asyncio.AbstractEventLoop, member: str, generation: int) -> Any:
    cls: Any = load_request_schema(14, 3)
    a = nested(cls, "assignments")
    body = cls(
        group_id="g",
        generation_id=generation,
        member_id=member,
        group_instance_id=None,
        assignments=(a(member_id=member, assignment=assignment([0, 1])),),
    )
    return dispatch(broker, 14, 3, body, loop)


def _classic_group_of_one(broker: Broker, loop: asyncio.AbstractEventLoop) -> str:
    """A classic member joins g (v5: the first join is answered MEMBER_ID_REQUIRED) and, as leader, syncs both
    partitions of t to itself: a Stable classic group at generation 1."""
    first = _join(broker, loop, "")
    assert first.error_code == KioError.member_id_required
    joined = _join(broker, loop, first.member_id)
    assert (joined.error_code, joined.generation_id, joined.leader) == (KioError.none, 1, first.member_id)
    synced = _sync(broker, loop, first.member_id, 1)
    assert synced.error_code == KioError.none and parts_of(synced.assignment) == {0, 1}
    return first.member_id


def _conversions(history: RecordingHistory) -> list[tuple[str, str, int, str]]:
    return [(e["from_type"], e["to_type"], e["members"], e["impl"]) for e in history.of("group_converted")]


def test_a_classic_group_converts_to_a_consumer_group_and_back_across_a_restart(
    tmp_path: Path, loop: asyncio.AbstractEventLoop
) -> None:
    history = RecordingHistory()
    first = _broker(tmp_path, loop, history, "bidirectional")
    first.store.create("t", 2)
    classic_member = _classic_group_of_one(first, loop)
    facade = first.groups.facade
    assert facade is not None and facade.holder("g") == "classic"
    r = dispatch(
        first, 68, 1, cgh(1, "g", "k-1", 0, topics=("t",), owned=(), rebalance_timeout_ms=30000), loop
    )
    # by hand: the classic group (generation 1) becomes a consumer group whose epoch starts at the generation;
    # k-1's join bumps it to 2. The classic member still owns both partitions, so k-1 is given nothing yet.
    assert (r.error_code, r.member_epoch) == (KioError.none, 2)
    assert [tuple(tp.partitions) for tp in r.assignment.topic_partitions] == []
    assert facade.holder("g") == "consumer"
    assert _conversions(history) == [("classic", "consumer", 1, "consumer")]
    # the consumer machine's events carry impl consumer; the classic machine's before it impl coordinator
    assert {e["impl"] for e in history.of("member_added") if e.get("member") == "k-1"} == {"consumer"}
    assert {e["impl"] for e in history.of("group_state") if "to_state" in e} == {"coordinator"}
    first.groups.cancel_timers()
    assert first.group_log is not None
    first.group_log.close()

    # a restart replays the one group log through the facade: the consumer group with its classic member
    second = _broker(tmp_path, loop, history, "bidirectional")
    facade = second.groups.facade
    assert facade is not None and facade.holder("g") == "consumer"
    group = facade.consumer.group("g")
    assert group is not None and sorted(group.members) == sorted([classic_member, "k-1"])
    left = dispatch(second, 68, 1, cgh(1, "g", "k-1", -1), loop)
    # the last consumer-protocol member leaves: back to a classic group of the classic member
    assert (left.error_code, left.member_epoch) == (KioError.none, -1)
    assert facade.holder("g") == "classic"
    assert _conversions(history)[1:] == [("consumer", "classic", 1, "consumer")]
    second.groups.cancel_timers()


def test_with_the_policy_disabled_the_join_is_group_id_not_found(
    tmp_path: Path, loop: asyncio.AbstractEventLoop
) -> None:
    history = RecordingHistory()
    broker = _broker(tmp_path, loop, history, "disabled")
    broker.store.create("t", 2)
    _classic_group_of_one(broker, loop)
    r = dispatch(
        broker, 68, 1, cgh(1, "g", "k-1", 0, topics=("t",), owned=(), rebalance_timeout_ms=30000), loop
    )
    assert (r.error_code, r.error_message) == (
        KioError.group_id_not_found,
        "Cannot upgrade classic group g to consumer group because online upgrade is disabled.",
    )
    assert broker.groups.facade is not None and broker.groups.facade.holder("g") == "classic"
    assert _conversions(history) == []
    broker.groups.cancel_timers()
