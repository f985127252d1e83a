"""Replicated mode: a consumer-group heartbeat whose records are not written is answered with Kafka's mapped
error, and its change does not stay in memory (Kafka 4's ``CoordinatorRuntime`` reverts to the last written
offset): while this broker still leads the offsets partition, the partition is reloaded from its log. Over a fake
ReplicatedLog, on a real asyncio loop, through the broker's classic runner (the leadership listener) and the
consumer machine's runner.

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
from coordinator.core.group.errors import ErrorCode
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


async def _send(broker: Broker, body: Any) -> Any:
    out = broker.dispatch(request_frame(68, 1, 1, body), LoopbackPeer())
    assert out is not None
    result = out[3]
    return await asyncio.wait_for(result, 10) if inspect.isawaitable(result) else result


def test_a_heartbeat_whose_records_are_not_written_leaves_no_change_behind() -> None:
    async def scenario() -> None:
        fake, history = FakeReplicatedLog(), RecordingHistory()
        fake.epochs[P_G1] = 3
        broker, apis = _broker(fake, history)
        consumer = apis.consumer
        assert consumer is not None
        machine = consumer.machine
        assert isinstance(machine, ConsumerGroupCoordinator)
        await apis.load()
        await _until(lambda: machine.partition_status(P_G1) == "owned")
        r = await _send(broker, cgh(1, G1, "m-1", 0, topics=("t",), owned=(), rebalance_timeout_ms=30000))
        assert (r.error_code, r.member_epoch) == (E.none, 1)

        # m-2's join bumps the group epoch to 2 in memory, but its records are refused (NOT_ENOUGH_REPLICAS):
        # Kafka's answer is COORDINATOR_NOT_AVAILABLE, and this broker still leads partition 42.
        fake.mode = int(ErrorCode.NOT_ENOUGH_REPLICAS)
        r = await _send(broker, cgh(1, G1, "m-2", 0, topics=("t",), owned=(), rebalance_timeout_ms=30000))
        assert r.error_code == E.coordinator_not_available
        fake.mode = "ack"

        # The partition is reloaded from its log: the group is as written, m-1 alone at group epoch 1.
        await _until(
            lambda: (
                len([e for e in history.of("coordinator_load") if e["offsets_partition"] == P_G1]) == 5
                and machine.partition_status(P_G1) == "owned"
            )
        )
        loads = [
            (e["phase"], e.get("groups"))
            for e in history.of("coordinator_load")
            if e["offsets_partition"] == P_G1
        ]
        assert loads == [("begin", None), ("end", 0), ("unload", None), ("begin", None), ("end", 1)]
        group = machine.group(G1)
        assert group is not None
        assert (sorted(group.members), group.group_epoch, group.assignment_epoch) == (["m-1"], 1, 1)
        # m-1 carries on at epoch 1 with both partitions; m-2 joins again and is served.
        r = await _send(broker, cgh(1, G1, "m-1", 1))
        assert (r.error_code, r.member_epoch, r.assignment) == (E.none, 1, None)
        r = await _send(broker, cgh(1, G1, "m-2", 0, topics=("t",), owned=(), rebalance_timeout_ms=30000))
        assert (r.error_code, r.member_epoch) == (E.none, 2)
        apis.cancel_timers()

    asyncio.run(scenario())
