"""Consumer groups in replicated mode over a fake ReplicatedLog, on a real asyncio loop: the classic runner (the
``__consumer_offsets`` leadership listener) loads and unloads the consumer machine's partitions with its own, a
heartbeat that writes records is answered once its append is acknowledged, and a new leader reloads the group.

Group ``g1`` is in offsets partition 42 of 50 (Java ``String.hashCode``: 103 * 31 + 49 = 3242 -> 42)."""

from __future__ import annotations

import asyncio
import inspect
from collections.abc import Callable
from typing import Any

from kio.schema.errors import ErrorCode as E

from coordinator.config import BrokerConfig, ReplicationConfig
from coordinator.core.consumer.config import ConsumerGroupConfig
from coordinator.core.consumer.machine import ConsumerGroupCoordinator
from coordinator.core.group.config import GroupConfig
from coordinator.core.group.machine import GroupCoordinator
from coordinator.groups import GroupApis
from coordinator.inprocess import LoopbackPeer
from coordinator.server import Broker
from tests.support.kio_wire import cgh, request_frame
from tests.support.replicated import FakeReplicatedLog, RecordingHistory

G1, P_G1 = "g1", 42


async def _until(what: Callable[[], bool], timeout_s: float = 10.0) -> None:
    loop = asyncio.get_running_loop()
    deadline = loop.time() + timeout_s
    while not what():
        assert loop.time() < deadline, "condition not reached in time"
        await asyncio.sleep(0.001)


def _broker(fake: FakeReplicatedLog, history: RecordingHistory) -> tuple[Broker, GroupApis]:
    broker = Broker(BrokerConfig(broker_id=1), history=history)
    broker.store.create("t", 2)
    classic = GroupCoordinator(GroupConfig(initial_rebalance_delay_ms=0))
    apis = GroupApis(
        classic,
        broker.cluster,
        broker.store,
        history,
        broker_id=1,
        rejected=broker.rejected,
        replicated=fake,
        replication=ReplicationConfig(offsets_commit_timeout_ms=1234),
        consumer=lambda topics: ConsumerGroupCoordinator(
            ConsumerGroupConfig(), topics, offsets=classic.offsets
        ),
    )
    broker.groups = apis
    broker.handlers.update(apis.handlers())
    return broker, apis


def _send(broker: Broker, body: Any) -> Any:
    out = broker.dispatch(request_frame(68, 1, 1, body), LoopbackPeer())
    assert out is not None
    return out[3]


async def _answer(result: Any) -> Any:
    return await result if inspect.isawaitable(result) else result


def test_a_heartbeat_is_answered_once_written_and_a_new_leader_reloads_the_group() -> None:
    async def scenario() -> None:
        fake, history = FakeReplicatedLog(), RecordingHistory()
        fake.epochs[P_G1] = 3
        broker, apis = _broker(fake, history)
        consumer = apis.consumer
        assert consumer is not None
        await apis.load()
        await _until(lambda: consumer.runner.machine.partition_status(P_G1) == "owned")  # type: ignore[attr-defined]
        fake.mode = "hold"
        join = asyncio.ensure_future(
            _answer(_send(broker, cgh(1, G1, "m-1", 0, topics=("t",), owned=(), rebalance_timeout_ms=30000)))
        )
        await _until(lambda: len(fake.held) == 1)
        assert not join.done()  # Kafka answers once the records are committed
        fake.release()
        r = await asyncio.wait_for(join, 10)
        assert (r.error_code, r.member_epoch) == (E.none, 1)
        assert [e["change"] for e in history.of("group_request", api="ConsumerGroupHeartbeat")] == [True]
        fake.mode = "ack"
        fake.resign(P_G1, 4)  # the group goes with its partition
        assert not consumer.holds(G1)
        r = await _answer(_send(broker, cgh(1, G1, "m-1", 1)))
        assert r.error_code == E.not_coordinator
        fake.elect(P_G1, 5)  # reloaded from what was written: the member at its epoch
        await _until(lambda: consumer.holds(G1) and not consumer.loading)
        r = await _answer(_send(broker, cgh(1, G1, "m-1", 1)))
        assert (r.error_code, r.member_epoch, r.assignment) == (E.none, 1, None)
        loads = [
            (e["phase"], e.get("groups"))
            for e in history.of("coordinator_load")
            if e["offsets_partition"] == P_G1
        ]
        assert loads == [("begin", None), ("end", 0), ("unload", None), ("begin", None), ("end", 1)]
        apis.cancel_timers()

    asyncio.run(scenario())
