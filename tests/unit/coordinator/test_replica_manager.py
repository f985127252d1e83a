"""The replica manager over the pure replication core, without sockets: states injected as
the ZooKeeper shell would, the ISR writes going to an in-memory znode dict, time from a fake clock (the acks
timeout alone is a real, short timer)."""

from __future__ import annotations

import asyncio
from pathlib import Path
from typing import Any

import pytest

from coordinator.cluster import ClusterView
from coordinator.config import BrokerConfig, ReplicationConfig
from coordinator.core.replication.state import ConditionalResult, PartitionState
from coordinator.records import split_batches
from coordinator.replicas.manager import FENCED_LEADER_EPOCH, REQUEST_TIMED_OUT, ProduceResult, ReplicaManager
from coordinator.topics import TopicStore
from tests.support.batches import batch, read_back
from tests.support.replicas import FakeStates, ListHistory

T = "t"
LAG_MS = 10_000


class Clock:
    def __init__(self) -> None:
        self.now = 1_000_000

    def __call__(self) -> int:
        return self.now


def _manager(
    broker_id: int = 1, *, data_dir: Path | None = None, min_isr: int = 1, clock: Clock | None = None
) -> tuple[ReplicaManager, FakeStates, ListHistory, Clock]:
    config = BrokerConfig(
        broker_id=broker_id,
        zookeeper="127.0.0.1:1",  # never contacted: replication needs the setting, these tests feed states
        data_dir=data_dir,
        replication=ReplicationConfig(
            enabled=True, replica_lag_time_max_ms=LAG_MS, min_insync_replicas=min_isr
        ),
    )
    states, history, clock = FakeStates(), ListHistory(), clock or Clock()
    rm = ReplicaManager(
        config, TopicStore(data_dir), ClusterView(broker_id), history, isr_writer=states, clock_ms=clock
    )
    return rm, states, history, clock


def _inject(
    rm: ReplicaManager, states: FakeStates, state: PartitionState, p: int = 0, assigned=(1, 2, 3)
) -> int:
    version = states.set(T, p, state)
    return rm.apply_state(T, p, state, version, tuple(assigned))


def _produce(rm: ReplicaManager, values: list[bytes], acks: int = -1, timeout_ms: int = 5_000) -> Any:
    return rm.produce(T, 0, split_batches(batch(values)), acks, timeout_ms)


async def _settle() -> None:
    """Let spawned ISR-write tasks (the fake writer answers at once) run to their end."""
    for _ in range(5):
        await asyncio.sleep(0)


def test_acks_all_completes_only_when_every_isr_follower_fetched_past_it() -> None:
    async def main() -> None:
        rm, states, history, _ = _manager()
        assert _inject(rm, states, PartitionState(1, 0, (1, 2, 3), 1)) == 0
        fut = _produce(rm, [b"a", b"b"])  # offsets 0-1: needs HW 2
        assert isinstance(fut, asyncio.Future)
        rm.read(T, 0, 2, 1 << 20, replica_id=2)  # follower 2 has both
        await _settle()
        assert not fut.done() and rm.partition(T, 0).hw == 0  # follower 3's LEO is unknown
        rm.read(T, 0, 1, 1 << 20, replica_id=3)  # follower 3 has only offset 0
        await _settle()
        assert not fut.done() and rm.partition(T, 0).hw == 1
        rm.read(T, 0, 2, 1 << 20, replica_id=3)
        await _settle()
        assert fut.done() and fut.result() == ProduceResult(0, 0, 2, 0)
        assert rm.local_log(T, 0).hw == 2
        acks = history.of("produce_ack")
        assert [(a["base_offset"], a["count"], a["acks"], a["leader_epoch"]) for a in acks] == [(0, 2, -1, 0)]

    asyncio.run(main())


def test_acks_1_answers_at_once_and_consumers_read_only_below_the_high_watermark() -> None:
    async def main() -> None:
        rm, states, _, _ = _manager()
        _inject(rm, states, PartitionState(1, 0, (1, 2), 1), assigned=(1, 2))
        assert _produce(rm, [b"a"], acks=1) == ProduceResult(0, 0, 1, 0)
        assert _produce(rm, [b"b"], acks=1) == ProduceResult(0, 1, 1, 0)
        assert rm.read(T, 0, 0, 1 << 20, replica_id=-1).records == b""  # HW 0: nothing committed
        leader_read = rm.read(T, 0, 1, 1 << 20, replica_id=2)  # follower has offset 0; reads up to the end
        assert read_back(leader_read.records) == [(1, b"b")]
        consumer = rm.read(T, 0, 0, 1 << 20, replica_id=-1)
        assert consumer.high_watermark == 1 and read_back(consumer.records) == [(0, b"a")]
        assert rm.read(T, 0, 3, 1 << 20, replica_id=-1).error == 1  # beyond the log end: OFFSET_OUT_OF_RANGE

    asyncio.run(main())


def test_acks_all_times_out_when_a_follower_does_not_fetch() -> None:
    async def main() -> None:
        rm, states, history, _ = _manager()
        _inject(rm, states, PartitionState(1, 0, (1, 2), 1), assigned=(1, 2))
        fut = _produce(rm, [b"a"], timeout_ms=50)
        result = await asyncio.wait_for(fut, 5)
        assert result == ProduceResult(REQUEST_TIMED_OUT, 0, 1, 0)
        assert rm.local_log(T, 0).end_offset == 1 and rm.partition(T, 0).hw == 0  # written, not committed
        assert history.of("produce_ack") == []
        assert [f["error"] for f in history.of("fenced")] == ["REQUEST_TIMED_OUT"]

    asyncio.run(main())


def test_leadership_lost_while_parked_answers_not_leader_and_tells_listeners() -> None:
    async def main() -> None:
        rm, states, history, _ = _manager()
        calls: list[tuple[str, int, int]] = []

        class Listener:
            def on_became_leader(self, partition: int, leader_epoch: int) -> None:
                calls.append(("leader", partition, leader_epoch))

            def on_resigned(self, partition: int, leader_epoch: int) -> None:
                calls.append(("resigned", partition, leader_epoch))

        rm.add_leadership_listener(T, Listener())
        _inject(rm, states, PartitionState(1, 0, (1, 2), 1), assigned=(1, 2))
        fut = _produce(rm, [b"a"])
        assert _inject(rm, states, PartitionState(2, 1, (2,), 2), assigned=(1, 2)) == 0
        assert fut.done() and fut.result().error == 6
        assert calls == [("leader", 0, 0), ("resigned", 0, 0)]
        # the follower truncated its uncommitted tail (offset 0, HW 0) and refuses produce
        assert rm.local_log(T, 0).end_offset == 0
        assert _produce(rm, [b"b"]).error == 6
        roles = [(e["replica_role"], e["leader"], e["leader_epoch"]) for e in history.of("leadership")]
        assert roles == [("leader", 1, 0), ("follower", 2, 1)]

    asyncio.run(main())


def test_stale_states_are_refused_and_change_nothing() -> None:
    async def main() -> None:
        rm, states, history, _ = _manager()
        assert _inject(rm, states, PartitionState(1, 3, (1, 2), 5), assigned=(1, 2)) == 0
        # an older controller
        assert _inject(rm, states, PartitionState(2, 4, (2,), 4), assigned=(1, 2)) == 11
        # a current controller but a leader epoch not newer
        assert _inject(rm, states, PartitionState(2, 2, (2,), 5), assigned=(1, 2)) == FENCED_LEADER_EPOCH
        core = rm.partition(T, 0)
        assert core.is_leader and core.leader_epoch == 3
        # the refusals are the ZooKeeper shell's to emit (fenced what=state, from these return codes; each
        # once, by one layer), tested in tests/integration/coordinator/test_controller.py
        assert history.of("fenced") == []
        # the same leadership seen again with a newer zkVersion (an ISR write's echo) is no new state
        assert _inject(rm, states, PartitionState(1, 3, (1,), 5), assigned=(1, 2)) == 0
        assert core.isr == (1, 2) and len(history.of("leadership")) == 1

    asyncio.run(main())


def test_shrink_after_the_lag_time_is_written_and_completes_parked_produces() -> None:
    async def main() -> None:
        rm, states, history, clock = _manager()
        _inject(rm, states, PartitionState(1, 0, (1, 2, 3), 1))
        fut = _produce(rm, [b"a"])
        rm.read(T, 0, 1, 1 << 20, replica_id=2)  # 2 caught up; 3 never fetches
        clock.now += LAG_MS
        rm.maybe_shrink_isr()
        await _settle()
        assert states.writes == [] and not fut.done()  # exactly the lag time: still in sync (strictly more)
        clock.now += 1
        rm.maybe_shrink_isr()
        await _settle()
        # 2 also fell behind by now: its last caught-up time is the fetch at the start
        ((topic, p, state, expected, ok),) = states.writes
        assert (state.isr, expected, ok) == ((1,), 0, True)
        assert rm.partition(T, 0).isr == (1,) and rm.partition(T, 0).zk_version == 1
        assert fut.done() and fut.result().error == 0
        assert history.of("isr_change") == []  # the IsrWriter (the ZooKeeper shell) emits it, not this layer

    asyncio.run(main())


def test_a_follower_that_catches_up_rejoins_the_isr() -> None:
    async def main() -> None:
        rm, states, _, _ = _manager()
        _inject(rm, states, PartitionState(1, 0, (1,), 1), assigned=(1, 2))
        _produce(rm, [b"a", b"b"], acks=1)  # ISR {1}: HW 2 at once
        assert rm.partition(T, 0).hw == 2
        rm.read(T, 0, 1, 1 << 20, replica_id=2)  # below the HW: not yet
        await _settle()
        assert states.writes == []
        rm.read(T, 0, 2, 1 << 20, replica_id=2)
        await _settle()
        assert [(w[2].isr, w[4]) for w in states.writes] == [((1, 2), True)]
        assert rm.partition(T, 0).isr == (1, 2)

    asyncio.run(main())


def test_a_lost_isr_write_is_fenced_and_changes_nothing() -> None:
    async def main() -> None:
        rm, states, history, clock = _manager()
        _inject(rm, states, PartitionState(1, 0, (1, 2), 1), assigned=(1, 2))
        # the controller moved the znode on (this broker has not seen it yet): the leader's cached zkVersion is stale
        states.set(T, 0, PartitionState(2, 1, (2,), 1))
        clock.now += LAG_MS + 1
        rm.maybe_shrink_isr()
        await _settle()
        assert [w[4] for w in states.writes] == [False]
        assert rm.partition(T, 0).isr == (1, 2)
        # isr_change ok=false and fenced what=isr_write are the IsrWriter's (the ZooKeeper shell's) to emit
        assert history.of("fenced") == [] and history.of("isr_change") == []
        # so an acks=all produce cannot be committed by the deposed leader alone
        fut = _produce(rm, [b"x"], timeout_ms=50)
        assert (await asyncio.wait_for(fut, 5)).error == REQUEST_TIMED_OUT

    asyncio.run(main())


def test_min_insync_replicas_refuses_acks_all_before_writing() -> None:
    async def main() -> None:
        rm, states, history, _ = _manager(min_isr=2)
        _inject(rm, states, PartitionState(1, 0, (1,), 1), assigned=(1, 2))
        assert _produce(rm, [b"a"]) == ProduceResult(19, -1, 1, 0)
        assert rm.local_log(T, 0).end_offset == 0
        assert _produce(rm, [b"a"], acks=1).error == 0  # acks=1 ignores min.insync.replicas
        assert [f["error"] for f in history.of("fenced")] == ["NOT_ENOUGH_REPLICAS"]

    asyncio.run(main())


def test_follower_appends_fetched_batches_and_takes_the_leaders_high_watermark() -> None:
    async def main() -> None:
        leader, lstates, _, _ = _manager(1)
        follower, fstates, _, _ = _manager(2)
        state = PartitionState(1, 0, (1, 2), 1)
        _inject(leader, lstates, state, assigned=(1, 2))
        _inject(follower, fstates, state, assigned=(1, 2))
        assert follower.fetch_offset(1, T, 0) == 0 and follower.fetch_offset(3, T, 0) is None
        _produce(leader, [b"a", b"b"], acks=1)
        got = leader.read(T, 0, 0, 1 << 20, replica_id=2)
        assert follower.follower_fetched(1, T, 0, 0, got.error, got.high_watermark, got.records) == 0
        assert follower.local_log(T, 0).read(0, 1 << 20) == leader.local_log(T, 0).read(0, 1 << 20)
        assert follower.partition(T, 0).hw == 0  # the leader's HW when it answered
        got = leader.read(T, 0, 2, 1 << 20, replica_id=2)  # this fetch advances the leader's HW to 2
        follower.follower_fetched(1, T, 0, 2, got.error, got.high_watermark, got.records)
        assert got.high_watermark == 2 and follower.partition(T, 0).hw == 2
        assert list(follower.read_committed(T, 0)) == [(None, b"a"), (None, b"b")]
        # a stale answer (the log moved since the fetch was sent) is ignored
        assert follower.follower_fetched(1, T, 0, 0, 0, 2, got.records) == 0
        assert follower.local_log(T, 0).end_offset == 2

    asyncio.run(main())


def test_replicated_log_append_and_read_committed() -> None:
    async def main() -> None:
        rm, states, _, _ = _manager()
        _inject(rm, states, PartitionState(1, 0, (1,), 1), assigned=(1, 2))
        assert rm.leader_epoch(T, 0) == 0
        result = await rm.append(T, 0, [(b"k", b"v"), (b"k2", None)], required_acks=-1, timeout_ms=1000)
        assert (result.error, result.base_offset, result.leader_epoch) == (0, 0, 0)
        assert list(rm.read_committed(T, 0)) == [(b"k", b"v"), (b"k2", None)]
        _inject(rm, states, PartitionState(2, 1, (2,), 1), assigned=(1, 2))
        assert rm.leader_epoch(T, 0) is None
        assert (await rm.append(T, 0, [(b"k", b"w")], -1, 1000)).error == 6

    asyncio.run(main())


def test_a_restarted_follower_truncates_to_its_checkpointed_high_watermark(tmp_path: Path) -> None:
    async def main() -> None:
        rm, states, _, _ = _manager(data_dir=tmp_path)
        _inject(rm, states, PartitionState(1, 0, (1, 2), 1), assigned=(1, 2))
        _produce(rm, [b"a"], acks=1)
        rm.read(T, 0, 1, 1 << 20, replica_id=2)  # committed: HW 1
        _produce(rm, [b"b"], acks=1)  # offset 1: not committed
        await rm.stop()  # writes the checkpoint
        rm.store.close()
        assert (tmp_path / "replication-offset-checkpoint").read_text() == "0\n1\nt 0 1\n"

        again, states2, _, _ = _manager(data_dir=tmp_path)
        assert again.store.get(T).partitions[0].end_offset == 2  # the log file has both
        assert _inject(again, states2, PartitionState(2, 1, (2,), 2), assigned=(1, 2)) == 0
        assert again.local_log(T, 0).end_offset == 1 and again.partition(T, 0).leo == 1
        assert read_back(again.local_log(T, 0).read(0, 1 << 20)) == [(0, b"a")]
        again.store.close()

    asyncio.run(main())


def test_not_assigned_states_are_not_applied() -> None:
    rm, states, _, _ = _manager(4)
    assert _inject(rm, states, PartitionState(1, 0, (1,), 1), assigned=(1, 2)) == 3
    assert rm.partition(T, 0) is None and rm.store.get(T) is None


@pytest.mark.parametrize("role_leader", [True, False])
def test_remove_partition_stops_serving(role_leader: bool) -> None:
    async def main() -> None:
        rm, states, _, _ = _manager()
        followed: list[tuple[str, int, int]] = []
        rm.on_follow = lambda leader, t, p: followed.append(("follow", leader, p))
        rm.on_unfollow = lambda leader, t, p: followed.append(("unfollow", leader, p))
        _inject(rm, states, PartitionState(1 if role_leader else 2, 0, (1, 2), 1), assigned=(1, 2))
        rm.remove_partition(T, 0)
        assert rm.partition(T, 0) is None
        assert _produce(rm, [b"a"]).error == 6
        assert followed == ([] if role_leader else [("follow", 2, 0), ("unfollow", 2, 0)])

    asyncio.run(main())


def test_stop_resigns_every_led_partition_and_answers_parked_produces() -> None:
    async def main() -> None:
        rm, states, _, _ = _manager()
        resigned: list[tuple[int, int]] = []

        class Listener:
            def on_became_leader(self, partition: int, leader_epoch: int) -> None:
                return None

            def on_resigned(self, partition: int, leader_epoch: int) -> None:
                resigned.append((partition, leader_epoch))

        rm.add_leadership_listener(T, Listener())
        _inject(rm, states, PartitionState(1, 2, (1, 2), 1), p=0, assigned=(1, 2))
        _inject(rm, states, PartitionState(2, 0, (2, 1), 1), p=1, assigned=(1, 2))  # a follower: not resigned
        fut = _produce(rm, [b"a"])
        await rm.stop()
        assert resigned == [(0, 2)]
        assert fut.done() and fut.result().error == 6
        assert rm.apply_state(T, 0, PartitionState(2, 3, (2,), 1), 1, (1, 2)) == 0  # ignored once stopped
        assert rm.partition(T, 0).leader_epoch == 2

    asyncio.run(main())


def test_a_fetch_naming_another_leader_epoch_is_refused() -> None:
    async def main() -> None:
        rm, states, history, _ = _manager()
        _inject(rm, states, PartitionState(1, 3, (1,), 1), assigned=(1, 2))
        _produce(rm, [b"a"], acks=1)
        assert rm.read(T, 0, 0, 1 << 20, -1, current_leader_epoch=2).error == FENCED_LEADER_EPOCH
        assert rm.read(T, 0, 0, 1 << 20, -1, current_leader_epoch=4).error == 75  # UNKNOWN_LEADER_EPOCH
        assert read_back(rm.read(T, 0, 0, 1 << 20, -1, current_leader_epoch=3).records) == [(0, b"a")]
        assert read_back(rm.read(T, 0, 0, 1 << 20, -1).records) == [(0, b"a")]  # no epoch given: not checked
        assert rm.list_offset(T, 0, current_leader_epoch=2)[0] == FENCED_LEADER_EPOCH
        assert rm.list_offset(T, 0, current_leader_epoch=3)[0] == 0
        fenced = [(f["what"], f["error"]) for f in history.of("fenced")]
        assert fenced == [("fetch", "FENCED_LEADER_EPOCH"), ("fetch", "UNKNOWN_LEADER_EPOCH")]

    asyncio.run(main())


def test_a_restarted_broker_reading_no_leader_first_keeps_its_acknowledged_records(tmp_path: Path) -> None:
    """ISR shrank to [1]; 1 acknowledged records its checkpoint (5 s periodic) does not cover
    yet; 1 dies; the controller writes leader -1 ISR [1]; 1 restarts and reads that before being elected. It
    must not cut its log to the checkpoint (it is then elected with exactly that log)."""

    async def main() -> None:
        rm, states, _, _ = _manager(data_dir=tmp_path)
        _inject(rm, states, PartitionState(1, 0, (1,), 1), assigned=(1, 2))
        assert _produce(rm, [b"a"], acks=1).error == 0
        assert rm.partition(T, 0).hw == 1  # ISR [1]: committed at once
        await rm.stop()  # checkpoint: HW 1
        rm.store.close()
        # acknowledged after the last checkpoint: append to the log file as the leader did, checkpoint untouched
        again, states2, _, _ = _manager(data_dir=tmp_path)
        log = again.store.get(T).partitions[0]
        log.append(split_batches(batch([b"b"])))
        assert log.end_offset == 2
        assert _inject(again, states2, PartitionState(-1, 1, (1,), 2), assigned=(1, 2)) == 0
        assert again.local_log(T, 0).end_offset == 2 and again.partition(T, 0).leo == 2
        assert _inject(again, states2, PartitionState(1, 2, (1,), 2), assigned=(1, 2)) == 0
        assert again.partition(T, 0).is_leader
        assert read_back(again.local_log(T, 0).read(0, 1 << 20)) == [(0, b"a"), (1, b"b")]
        again.store.close()

    asyncio.run(main())


def test_an_older_controllers_state_of_another_partition_is_applied_after_a_controller_failover() -> None:
    """Controller 2 wrote partition 0's state; controller 3 (after a failover) rewrote only
    partition 1's. A broker reading partition 1 first must still apply partition 0's valid state: the controller
    epoch is compared per partition (0.9 compares the request's epoch; a znode carries the epoch of the
    controller that last wrote *it*). An older controller's state of the *same* partition stays refused."""

    async def main() -> None:
        rm, states, history, _ = _manager()
        assert _inject(rm, states, PartitionState(1, 4, (1, 2), 3), p=1, assigned=(1, 2)) == 0
        assert _inject(rm, states, PartitionState(2, 1, (2, 1), 2), p=0, assigned=(1, 2)) == 0
        assert rm.partition(T, 0).leader == 2 and rm.partition(T, 0).controller_epoch == 2
        assert history.of("fenced") == []
        # partition 1 is at controller epoch 3: a state from controller 2 with a newer leader epoch is refused
        assert _inject(rm, states, PartitionState(2, 5, (2,), 2), p=1, assigned=(1, 2)) == 11
        assert rm.partition(T, 1).is_leader and rm.partition(T, 1).leader_epoch == 4

    asyncio.run(main())


def test_an_isr_write_lost_at_shutdown_emits_nothing() -> None:
    """The ZooKeeper shell answers an ISR write it could not make because the broker is
    stopping with a lost result; that is no fencing and no ISR change, and this layer emits neither anyway."""

    class StoppingWriter(FakeStates):
        async def write_isr(self, topic: str, partition: int, state: PartitionState, expected: int) -> Any:
            return ConditionalResult(False, -1)

    async def main() -> None:
        rm, states, history, clock = _manager()
        writer = StoppingWriter()
        rm.isr_writer = writer
        version = writer.set(T, 0, PartitionState(1, 0, (1, 2), 1))
        rm.apply_state(T, 0, PartitionState(1, 0, (1, 2), 1), version, (1, 2))
        clock.now += LAG_MS + 1
        rm.maybe_shrink_isr()
        await _settle()
        assert rm.partition(T, 0).isr == (1, 2)
        assert history.of("isr_change") == [] and history.of("fenced") == []

    asyncio.run(main())
