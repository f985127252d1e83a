"""The controller and the ZooKeeper shell in replicated mode against a real ZooKeeper.

No broker processes: several replicated-mode ``ZkRegistration`` shells run in this process, each with its own
asyncio loop thread, a recording sink (0.9's epoch refusals) and a recording history. Each test's rig lives
under its own ZooKeeper chroot, so tests sharing the session's ZooKeeper never see each other's ``/controller``
or brokers. Closing a shell closes its ZooKeeper session (its ephemeral znodes go at once), which is how a
broker death reaches the controller.
"""

from __future__ import annotations

import json
from typing import Any

import pytest
from kazoo.client import KazooClient

from coordinator.cluster import PartitionInfo
from coordinator.config import ReplicationConfig
from coordinator.core.replication.errors import InvalidReplicationFactor
from coordinator.core.replication.state import (
    ConditionalResult,
    PartitionState,
    encode_partition_state,
    partition_state_path,
)
from coordinator.topics import TopicExists
from harness.cluster.zookeeper import ZooKeeperServer
from tests.support.controller_rig import Rig, Shell, make_rig
from tests.support.waiting import wait_until

CONTRACT = {
    "controller": {"phase", "controller_epoch"},
    "broker_change": {"live", "dead", "added", "controller_epoch"},
    "partition_state": {
        "topic",
        "partition",
        "leader",
        "leader_epoch",
        "isr",
        "controller_epoch",
        "zk_version",
        "reason",
    },
    "isr_change": {"topic", "partition", "isr", "leader_epoch", "zk_version", "ok"},
}
BROKER_FIELDS = {"kind", "t", "impl", "broker_id"}


@pytest.fixture
def rig(zookeeper: ZooKeeperServer) -> Any:
    r = make_rig(zookeeper.connect_string)
    yield r
    r.stop()


def start_with_controller(rig: Rig, ids: list[int]) -> Shell:
    """Start ``ids`` in order, the first alone until it is controller (so the controller is known)."""
    first = rig.start(ids[0])
    assert rig.controller() is first
    for i in ids[1:]:
        rig.start(i)
    # the controller must have seen them all (its own view decides new partitions' ISRs)
    wait_until(
        lambda: any(
            e["live"] == sorted(ids) for e in rig.history.of("broker_change", broker_id=first.broker_id)
        ),
        10,
        what=f"controller sees brokers {sorted(ids)}",
    )
    return first


def test_one_controller_is_elected_and_after_its_session_closes_another_with_epoch_plus_one(rig: Rig) -> None:
    for i in (1, 2, 3):
        rig.start(i)
    first = rig.controller()
    assert first.zk.controller is not None and first.zk.controller.controller_epoch == 1
    assert rig.admin.get("/controller_epoch")[0] == b"1"
    assert json.loads(rig.admin.get("/controller")[0])["brokerid"] == first.broker_id
    elected = rig.history.of("controller", phase="elected")
    assert [(e["broker_id"], e["controller_epoch"]) for e in elected] == [(first.broker_id, 1)]

    first.stop()
    second = rig.controller()
    assert second is not first
    assert second.zk.controller is not None and second.zk.controller.controller_epoch == 2
    assert rig.admin.get("/controller_epoch")[0] == b"2"
    assert json.loads(rig.admin.get("/controller")[0])["brokerid"] == second.broker_id
    elected = rig.history.of("controller", phase="elected")
    assert [(e["broker_id"], e["controller_epoch"]) for e in elected] == [
        (first.broker_id, 1),
        (second.broker_id, 2),
    ]
    assert [e["broker_id"] for e in rig.history.of("controller", phase="resigned")] == [first.broker_id]
    # the new controller saw the old one go (onControllerFailover reads the live brokers after the election the
    # rig waits for, on the controller's own worker)
    changes = wait_until(
        lambda: rig.history.of("broker_change", broker_id=second.broker_id),
        10,
        what="the new controller's broker_change",
    )
    change = changes[0]
    assert change["dead"] == [first.broker_id] and change["controller_epoch"] == 2


def test_a_new_topic_gets_states_from_its_assignment_and_every_sink_its_partitions(rig: Rig) -> None:
    start_with_controller(rig, [1, 2, 3])
    rig.shells[2].zk.create_topic("t", 3, 2)
    # assign_replicas([1,2,3], 3, 2): p0 (1,2), p1 (2,3), p2 (3,1) (follower at (first+1+0)%3)
    assert json.loads(rig.admin.get("/brokers/topics/t")[0]) == {
        "version": 1,
        "partitions": {"0": [1, 2], "1": [2, 3], "2": [3, 1]},
    }
    expected = {
        0: PartitionState(1, 0, (1, 2), 1),
        1: PartitionState(2, 0, (2, 3), 1),
        2: PartitionState(3, 0, (3, 1), 1),
    }
    for p, state in expected.items():
        assert rig.wait_state("t", p, state) == 0  # created, never rewritten
    # the controller emits each partition_state after its write returns: wait for the events, not the znodes
    wait_until(
        lambda: len(rig.history.of("partition_state", topic="t")) >= 3, 10, what="three partition_state"
    )
    writes = rig.history.of("partition_state", topic="t")
    assert sorted((e["partition"], e["leader"], e["isr"], e["reason"], e["zk_version"]) for e in writes) == [
        (0, 1, [1, 2], "new_partition", 0),
        (1, 2, [2, 3], "new_partition", 0),
        (2, 3, [3, 1], "new_partition", 0),
    ]
    assigned = {1: (0, 2), 2: (0, 1), 3: (1, 2)}
    for broker, parts in assigned.items():
        shell = rig.shells[broker]
        for p in parts:
            wait_until(
                lambda s=shell, p=p: s.applied("t", p) == expected[p], 10, what=f"broker {broker} t-{p}"
            )
        calls = shell.loop.call(lambda s=shell: [(c[0], c[1], c[3], c[4]) for c in s.sink.calls])
        replicas = {0: (1, 2), 1: (2, 3), 2: (3, 1)}
        assert sorted(calls) == [("t", p, 0, replicas[p]) for p in parts]  # only its own partitions
        # every broker's ClusterView knows every partition
        for p, state in expected.items():
            info = PartitionInfo(state.leader, 0, replicas[p], state.isr)
            wait_until(lambda s=shell, p=p, i=info: s.loop.call(s.cluster.partition_info, "t", p) == i, 10)


def test_create_topic_refuses_an_existing_topic_and_a_factor_above_the_live_brokers(rig: Rig) -> None:
    start_with_controller(rig, [1, 2])
    zk = rig.shells[1].zk
    with pytest.raises(InvalidReplicationFactor, match="larger than available brokers: 2"):
        zk.create_topic("big", 1, 3)
    zk.create_topic("u", 2, None)  # default: min(3, 2 live) = 2
    assert json.loads(rig.admin.get("/brokers/topics/u")[0])["partitions"] == {"0": [1, 2], "1": [2, 1]}
    with pytest.raises(TopicExists):
        zk.create_topic("u", 1, 1)


def test_the_offsets_topic_is_created_once_on_the_first_coordinator_lookup(rig: Rig) -> None:
    start_with_controller(rig, [1, 2])
    shell = rig.shells[2]
    assert shell.loop.call(shell.cluster.coordinator_id, "my-group") is None  # unknown: asks for it
    # offsets_partitions 4, factor min(3, 2 live) = 2: p0 (1,2) p1 (2,1) p2 (1,2) p3 (2,1) (shift 1 from p2)
    path = "/brokers/topics/__consumer_offsets"
    wait_until(lambda: rig.admin.exists(path), 10, what=path)
    assert json.loads(rig.admin.get(path)[0])["partitions"] == {
        "0": [1, 2],
        "1": [2, 1],
        "2": [1, 2],
        "3": [2, 1],
    }
    # "my-group".hashCode() = -1906497762 (Java String.hashCode), abs % 4 = 2: offsets partition 2, led by 1
    assert shell.cluster.offsets_partition("my-group") == 2
    wait_until(lambda: shell.loop.call(shell.cluster.coordinator_id, "my-group") == 1, 10, what="coordinator")
    assert not shell.loop.call(shell.cluster.is_coordinator, "my-group")
    # broker 1 follows the partition states itself (as a 0.9 broker gets its own LeaderAndIsr): its view may come
    # a moment after broker 2's, all four partitions at once
    one = rig.shells[1]
    wait_until(lambda: one.loop.call(one.cluster.is_coordinator, "my-group"), 10, what="broker 1 coordinates")


def test_a_dead_leader_is_replaced_from_the_isr_and_with_no_live_isr_member_the_partition_goes_offline(
    rig: Rig,
) -> None:
    start_with_controller(rig, [1, 2, 3])
    rig.shells[1].zk.create_topic("t", 3, 2)  # p0 (1,2), p1 (2,3), p2 (3,1)
    for p, st in {
        0: PartitionState(1, 0, (1, 2), 1),
        1: PartitionState(2, 0, (2, 3), 1),
        2: PartitionState(3, 0, (3, 1), 1),
    }.items():
        rig.wait_state("t", p, st)

    rig.shells[2].stop()
    # p1 led by 2: leader 3 (the live ISR), epoch 1; p0 followed by 2: ISR (1,), epoch 1; p2 untouched.
    # One conditional write per decision: each version went from 0 to exactly 1.
    assert rig.wait_state("t", 1, PartitionState(3, 1, (3,), 1)) == 1
    assert rig.wait_state("t", 0, PartitionState(1, 1, (1,), 1)) == 1
    assert rig.state("t", 2) == (PartitionState(3, 0, (3, 1), 1), 0)
    change = rig.history.of("broker_change", broker_id=1)[-1]
    assert (change["live"], change["dead"], change["added"]) == ([1, 3], [2], [])
    wait_until(
        lambda: rig.shells[3].applied("t", 1) == PartitionState(3, 1, (3,), 1), 10, what="broker 3 leads t-1"
    )

    rig.shells[3].stop()
    # p1: ISR (3,) all dead, unclean off: leader -1, the last ISR member kept, epoch 2. p2: leader 1 from ISR.
    assert rig.wait_state("t", 1, PartitionState(-1, 2, (3,), 1)) == 2
    assert rig.wait_state("t", 2, PartitionState(1, 1, (1,), 1)) == 1
    reasons = {
        (e["partition"], e["leader_epoch"]): e["reason"] for e in rig.history.of("partition_state", topic="t")
    }
    assert reasons[(1, 1)] == "offline" and reasons[(1, 2)] == "offline"

    rig.start(3)  # broker 3 returns: the offline partition is elected again
    assert rig.wait_state("t", 1, PartitionState(3, 3, (3,), 1)) == 3
    wait_for_reason(rig, "t", 1, 3)
    assert reasons_of(rig, "t", 1)[-1] == ("broker_startup", 3, 3)
    wait_until(lambda: rig.shells[3].applied("t", 1) == PartitionState(3, 3, (3,), 1), 10, what="t-1 applied")


def test_with_unclean_election_on_a_returning_out_of_sync_replica_leads(zookeeper: ZooKeeperServer) -> None:
    rig = make_rig(
        zookeeper.connect_string, replication=ReplicationConfig(enabled=True, unclean_leader_election=True)
    )
    try:
        start_with_controller(rig, [3, 1, 2])  # broker 3 controls and outlives the others
        rig.shells[3].zk.create_topic("t", 1, 2)  # assign_replicas([1,2,3], 1, 2): p0 (1,2)
        rig.wait_state("t", 0, PartitionState(1, 0, (1, 2), 1))
        rig.shells[2].stop()
        assert rig.wait_state("t", 0, PartitionState(1, 1, (1,), 1)) == 1
        rig.shells[1].stop()
        # no assigned replica lives: leader -1 and, unclean being on, no ISR member is retained
        assert rig.wait_state("t", 0, PartitionState(-1, 2, (), 1)) == 2
        rig.start(2)  # out of sync (not in the ISR) but assigned: it leads, uncleanly
        assert rig.wait_state("t", 0, PartitionState(2, 3, (2,), 1)) == 3
        wait_for_reason(rig, "t", 0, 3)
        assert reasons_of(rig, "t", 0)[-1] == ("unclean", 2, 3)
    finally:
        rig.stop()


def wait_for_reason(rig: Rig, topic: str, partition: int, zk_version: int) -> None:
    """Wait until the controller recorded its write of the state's ``zk_version``: it records the event after
    the write, which the test's wait_state may see first."""
    wait_until(
        lambda: any(r[2] == zk_version for r in reasons_of(rig, topic, partition)),
        10,
        what=f"the controller's record of {topic}-{partition} zk_version {zk_version}",
    )


def reasons_of(rig: Rig, topic: str, partition: int) -> list[tuple[str, int, int]]:
    return [
        (e["reason"], e["leader"], e["zk_version"])
        for e in rig.history.of("partition_state", topic=topic, partition=partition)
    ]


def test_the_new_controller_continues_from_the_states_it_reads(rig: Rig) -> None:
    first = start_with_controller(rig, [1, 2, 3])
    first.zk.create_topic("t", 3, 3)  # p0 (1,2,3), p1 (2,3,1), p2 (3,1,2)
    for p, replicas in {0: (1, 2, 3), 1: (2, 3, 1), 2: (3, 1, 2)}.items():
        rig.wait_state("t", p, PartitionState(replicas[0], 0, replicas, 1))
    first.stop()  # the controller was also p0's leader
    # the next controller (epoch 2) elects p0's leader from the live ISR in assignment order: 2
    assert rig.wait_state("t", 0, PartitionState(2, 1, (2, 3), 2)) == 1
    assert rig.wait_state("t", 1, PartitionState(2, 1, (2, 3), 2)) == 1  # follower 1 leaves the ISR
    assert rig.wait_state("t", 2, PartitionState(3, 1, (3, 2), 2)) == 1


def test_a_state_older_than_the_applied_one_is_refused_and_emitted_as_fenced(rig: Rig) -> None:
    start_with_controller(rig, [1, 2])
    rig.shells[1].zk.create_topic("t", 1, 2)  # p0 (1,2)
    version = rig.wait_state("t", 0, PartitionState(1, 0, (1, 2), 1))
    shell = rig.shells[2]
    wait_until(lambda: shell.applied("t", 0) == PartitionState(1, 0, (1, 2), 1), 10, what="applied")
    path = partition_state_path("t", 0)
    # a newer decision (as a controller of epoch 1 would write) is applied ...
    newer = PartitionState(2, 1, (2, 1), 1)
    rig.admin.set(path, encode_partition_state(newer), version=version)
    wait_until(lambda: shell.applied("t", 0) == newer, 10, what="newer state applied")
    # ... then an older leader epoch lands on the znode (a zombie's write): refused, fenced, nothing changes
    rig.admin.set(path, encode_partition_state(PartitionState(1, 0, (1, 2), 1)), version=version + 1)
    fenced = wait_until(lambda: rig.history.of("fenced", broker_id=2), 10, what="fenced event")
    assert fenced[0]["what"] == "state" and fenced[0]["error"] == "FENCED_LEADER_EPOCH"
    assert (fenced[0]["topic"], fenced[0]["partition"]) == ("t", 0)
    assert shell.applied("t", 0) == newer
    # a stale controller epoch is refused too (STALE_CONTROLLER_EPOCH), however new its leader epoch
    rig.admin.set(path, encode_partition_state(PartitionState(2, 9, (2,), 0)), version=version + 2)
    wait_until(lambda: len(rig.history.of("fenced", broker_id=2)) == 2, 10, what="second fenced")
    assert rig.history.of("fenced", broker_id=2)[1]["error"] == "STALE_CONTROLLER_EPOCH"
    assert shell.applied("t", 0) == newer


def test_write_isr_wins_on_its_version_and_loses_on_a_stale_one(rig: Rig) -> None:
    start_with_controller(rig, [1, 2])
    rig.shells[1].zk.create_topic("t", 1, 2)  # p0 (1,2)
    version = rig.wait_state("t", 0, PartitionState(1, 0, (1, 2), 1))
    leader = rig.shells[1]
    shrunk = PartitionState(1, 0, (1,), 1)
    assert leader.loop.run(leader.zk.write_isr("t", 0, shrunk, version)) == ConditionalResult(
        True, version + 1
    )
    assert rig.state("t", 0) == (shrunk, version + 1)
    # a write on the old version loses and changes nothing ...
    grown = PartitionState(1, 0, (1, 2), 1)
    assert leader.loop.run(leader.zk.write_isr("t", 0, grown, version)) == ConditionalResult(False, -1)
    assert rig.state("t", 0) == (shrunk, version + 1)
    # ... unless the znode already holds exactly that state (a retried write that had landed)
    assert leader.loop.run(leader.zk.write_isr("t", 0, shrunk, version)) == ConditionalResult(
        True, version + 1
    )
    isr = rig.history.of("isr_change", broker_id=1)
    assert [(e["isr"], e["zk_version"], e["ok"]) for e in isr] == [
        ([1], 0, True),
        ([1, 2], 0, False),
        ([1], 0, True),
    ]
    assert [(e["what"], e["error"]) for e in rig.history.of("fenced", broker_id=1)] == [
        ("isr_write", "NOT_LEADER_OR_FOLLOWER")
    ]
    # the leader's own ISR write (same leader epoch) reaches the ClusterView, not the sink again
    wait_until(
        lambda: leader.loop.call(leader.cluster.partition_info, "t", 0) == PartitionInfo(1, 0, (1, 2), (1,)),
        10,
    )
    assert leader.loop.call(lambda: len([c for c in leader.sink.calls if c[:2] == ("t", 0)])) == 1


def expire_session(shell: Shell, rig: Rig) -> None:
    """Expire ``shell``'s ZooKeeper session from outside, as a pause longer than the session timeout does: a
    second client attached to the same session closes it. The shell's client then reconnects on a new session."""
    client_id = shell.zk.client.client_id
    assert client_id is not None
    thief = KazooClient(hosts=rig.connect, client_id=client_id)
    thief.start(timeout=15)
    thief.stop()
    thief.close()


def test_a_leader_whose_session_expired_learns_on_its_new_session_that_it_was_deposed(rig: Rig) -> None:
    start_with_controller(rig, [2, 1])  # broker 2 is the controller and stays it
    rig.shells[2].zk.create_topic("t", 1, 2)  # p0 (1,2): led by broker 1
    rig.wait_state("t", 0, PartitionState(1, 0, (1, 2), 1))
    deposed = rig.shells[1]
    wait_until(lambda: deposed.applied("t", 0) == PartitionState(1, 0, (1, 2), 1), 10, what="applied")
    expire_session(deposed, rig)
    # the controller sees broker 1 die and elects broker 2 from the ISR (one conditional write: version 1)
    assert rig.wait_state("t", 0, PartitionState(2, 1, (2,), 1)) == 1
    # broker 1 comes back on a new session, registers again and applies the state that deposed it
    wait_until(lambda: deposed.applied("t", 0) == PartitionState(2, 1, (2,), 1), 20, what="broker 1 learns")
    wait_until(lambda: rig.admin.exists("/brokers/ids/1"), 20, what="broker 1 re-registered")
    wait_until(lambda: any(e["added"] == [1] for e in rig.history.of("broker_change", broker_id=2)), 10)
    assert rig.controller() is rig.shells[2]


def test_a_controller_whose_session_expired_resigns_and_one_controller_of_the_next_epoch_follows(
    rig: Rig,
) -> None:
    first = start_with_controller(rig, [1, 2])
    expire_session(first, rig)
    wait_until(lambda: [e["broker_id"] for e in rig.history.of("controller", phase="resigned")] == [1], 20)
    # whichever broker wins the next election (broker 1 may be back first), there is one, of epoch 2
    wait_until(lambda: len(rig.history.of("controller", phase="elected")) == 2, 20, what="second election")
    holder = rig.controller()
    assert holder.zk.controller is not None and holder.zk.controller.controller_epoch == 2
    assert rig.admin.get("/controller_epoch")[0] == b"2"
    assert json.loads(rig.admin.get("/controller")[0])["brokerid"] == holder.broker_id
    wait_until(lambda: rig.admin.exists("/brokers/ids/1"), 20, what="broker 1 re-registered")


def test_events_carry_exactly_the_contract_fields(rig: Rig) -> None:
    first = start_with_controller(rig, [1, 2])
    first.zk.create_topic("t", 1, 2)
    version = rig.wait_state("t", 0, PartitionState(1, 0, (1, 2), 1))
    first.loop.run(first.zk.write_isr("t", 0, PartitionState(1, 0, (1,), 1), version))
    rig.shells[2].stop()
    wait_until(lambda: rig.history.of("broker_change", broker_id=1), 10, what="broker_change")
    for kind, fields in CONTRACT.items():
        events = rig.history.of(kind)
        assert events, kind
        for e in events:
            assert set(e) == fields | BROKER_FIELDS, (kind, e)
            assert e["impl"] == "coordinator"
