"""An unmodified kafka-python consumer keeps consuming while its coordinator resigns and is elected again,
against an in-process broker listening on 127.0.0.1 whose group APIs run in replicated mode
over a fake ReplicatedLog (:mod:`tests.support.replicated`; the real replica manager is not in this
test). The broker runs on its own event-loop thread; the test drives leadership on that thread.

Group ``"g1"`` lives in offsets partition 42 (Java ``"g1".hashCode()`` = 103 * 31 + 49 = 3242; 3242 % 50 = 42).
"""

from __future__ import annotations

import asyncio
import threading
from collections.abc import Callable, Coroutine
from typing import Any, TypeVar

from kafka import KafkaConsumer, KafkaProducer
from kafka.structs import TopicPartition

from coordinator.config import BrokerConfig
from coordinator.server import Broker
from tests.support.replicated import FakeReplicatedLog, RecordingHistory, replicated_broker
from tests.support.waiting import wait_until

G1, P_G1, TOPIC = "g1", 42, "t"
T = TypeVar("T")


class _LoopThread:
    """An asyncio loop on a daemon thread; :meth:`run` executes a coroutine there and returns its result."""

    def __init__(self) -> None:
        self.loop = asyncio.new_event_loop()
        self.thread = threading.Thread(target=self.loop.run_forever, name="broker-loop", daemon=True)
        self.thread.start()

    def run(self, coro: Coroutine[Any, Any, T], timeout_s: float = 30.0) -> T:
        return asyncio.run_coroutine_threadsafe(coro, self.loop).result(timeout_s)

    def call(self, fn: Callable[[], T]) -> T:
        async def wrapped() -> T:
            return fn()

        return self.run(wrapped())

    def close(self) -> None:
        self.loop.call_soon_threadsafe(self.loop.stop)
        self.thread.join(10)
        self.loop.close()


def _consume(consumer: KafkaConsumer, count: int, timeout_s: float = 30.0) -> list[tuple[int, int]]:
    """Poll until ``count`` records arrived; (partition, offset) of each."""
    got: list[tuple[int, int]] = []

    def enough() -> bool:
        for records in consumer.poll(timeout_ms=200).values():
            got.extend((r.partition, r.offset) for r in records)
        return len(got) >= count

    wait_until(enough, timeout_s, what=f"{count} records")
    return got


def test_a_consumer_keeps_consuming_through_a_coordinator_resignation_and_resumes_at_its_commits() -> None:
    lt = _LoopThread()
    fake, history = FakeReplicatedLog(), RecordingHistory()
    fake.epochs[P_G1] = 1

    async def start() -> Broker:
        broker, _ = replicated_broker(fake, history, BrokerConfig(broker_id=0))
        await broker.start()
        return broker

    broker = lt.run(start())
    apis = broker.groups
    bootstrap = f"127.0.0.1:{broker.port}"
    producer = KafkaProducer(bootstrap_servers=bootstrap)
    consumer = KafkaConsumer(
        TOPIC,
        group_id=G1,
        bootstrap_servers=bootstrap,
        enable_auto_commit=False,
        auto_offset_reset="earliest",
        session_timeout_ms=10_000,
        heartbeat_interval_ms=300,
    )
    try:
        wait_until(lambda: lt.call(lambda: apis.machine.partition_status(P_G1)) == "owned", 10, what="load")
        for i in range(10):
            producer.send(TOPIC, value=f"a{i}".encode(), partition=i % 2)
        producer.flush()
        first = _consume(consumer, 10)
        consumer.commit()
        committed = {p: consumer.committed(TopicPartition(TOPIC, p)) for p in (0, 1)}
        assert committed == {0: 5, 1: 5}  # 10 records, alternating partitions
        member = lt.call(lambda: list(apis.machine.group(G1).members))  # type: ignore[union-attr]
        generation = lt.call(lambda: apis.machine.group(G1).generation_id)  # type: ignore[union-attr]

        lt.call(lambda: fake.resign(P_G1, 2))  # the coordinator is deposed: NOT_COORDINATOR from now on
        for i in range(10, 20):
            producer.send(TOPIC, value=f"b{i}".encode(), partition=i % 2)
        producer.flush()
        during = _consume(consumer, 10)  # fetching goes on without a coordinator
        wait_until(
            lambda: any(
                e["kind"] == "heartbeat_error" and e["error"] == "NOT_COORDINATOR" for e in history.events
            ),
            10,
            what="the member hearing NOT_COORDINATOR",
        )
        lt.call(lambda: fake.elect(P_G1, 3))  # elected again: the group and its offsets are loaded back
        wait_until(lambda: lt.call(lambda: apis.machine.partition_status(P_G1)) == "owned", 10, what="reload")
        consumer.commit()
        assert {p: consumer.committed(TopicPartition(TOPIC, p)) for p in (0, 1)} == {0: 10, 1: 10}

        records = sorted(first + during)
        assert records == sorted([(0, o) for o in range(10)] + [(1, o) for o in range(10)])  # none twice
        group = lt.call(lambda: apis.machine.group(G1))
        assert group is not None and list(group.members) == member and group.generation_id == generation
        phases = [e["phase"] for e in history.events if e["kind"] == "coordinator_load"]
        assert phases == ["begin", "end", "unload", "begin", "end"]
        served = [e for e in history.events if e["kind"] == "group_served"]
        assert len(served) == 2 and all(e["group"] == G1 and e["offsets_partition"] == P_G1 for e in served)
        commits = [e for e in history.events if e["kind"] == "commit"]
        assert {e["leader_epoch"] for e in commits} == {1, 3}
    finally:
        consumer.close(autocommit=False)
        producer.close()

        async def stop() -> None:
            apis.cancel_timers()
            await broker.stop()

        lt.run(stop())
        lt.close()
