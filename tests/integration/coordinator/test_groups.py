"""Consumer groups of unmodified kafka-python members (``herdlab member coordinator`` processes, read
through their histories) on a real broker process.

For every assignor kafka-python has: after joins, clean leaves and kills (session expiry), every
partition is assigned to exactly one live member. Static members restart without a rebalance. A
zombie's commit with an old generation is rejected with ILLEGAL_GENERATION. Offsets survive a
broker restart (clean and SIGKILL).
"""

from __future__ import annotations

import signal
import time
from pathlib import Path

import pytest
from kafka import KafkaConsumer, KafkaProducer
from kafka.admin import KafkaAdminClient, NewTopic
from kafka.protocol.admin import DescribeGroupsRequest
from kafka.protocol.consumer import (
    HeartbeatRequest,
    JoinGroupRequest,
    OffsetCommitRequest,
    OffsetFetchRequest,
    SyncGroupRequest,
)
from kafka.structs import TopicPartition

from coordinator.rawclient import RawClient
from harness.cluster.broker import BrokerProcess
from harness.history.writer import read_events
from harness.run.launch import PY, MemberService
from harness.run.tail import HistoryTail
from tests.support.brokers import BrokerFactory
from tests.support.waiting import wait_until

#: The tests are not about the initial delay or the minimum session: make them fast.
FAST = ["--group-initial-rebalance-delay-ms", "100", "--group-min-session-timeout-ms", "1000"]
PARTITIONS = 6
NONE, ILLEGAL_GENERATION, REBALANCE_IN_PROGRESS = 0, 22, 27
JOIN_V = 3  # JoinGroup v3: no MEMBER_ID_REQUIRED round trip (v4+), keeps the raw test short


class _MemberState:
    """One member process, folded from the events its history has since ``since_ns`` (a restarted
    member appends to the same file: the previous process's events are older)."""

    def __init__(self, history: Path, since_ns: int) -> None:
        self.since_ns = since_ns
        self.tail = HistoryTail(history)
        self.assignment: set[int] = set()
        self.member_id: str | None = None
        self.records: list[tuple[int, int]] = []

    def update(self) -> None:
        for e in self.tail.poll():
            kind = e["kind"]
            if e["ts_ns"] < self.since_ns:
                continue
            if kind == "assigned":
                self.assignment.add(e["partition"])
            elif kind == "revoked":
                self.assignment.discard(e["partition"])
            elif kind == "rebalance_end":
                self.member_id = e["member"]
            elif kind == "record":
                self.records.append((e["partition"], e["offset"]))


class Members:
    """Member processes of one group (``herdlab member coordinator``, the harness's member), each
    observed through its history: its assignment (``assigned`` / ``revoked``), its member id (from
    ``rebalance_end``) and the records it processed; the group's generation is the broker's."""

    def __init__(
        self, broker: BrokerProcess, tmp: Path, group: str, topic: str, assignor: str = "range"
    ) -> None:
        self.broker, self.tmp, self.group, self.topic, self.assignor = broker, tmp, group, topic, assignor
        self.procs: dict[str, MemberService] = {}
        self.states: dict[str, _MemberState] = {}
        self.broker_tail = HistoryTail(broker.history_path)
        self.stable: tuple[int, int] | None = None  # (generation, members) of the broker's latest Stable
        self.group_state = ""

    def start(self, name: str, instance_id: str | None = None, commit: bool = False) -> MemberService:
        """Start ``name``; ``commit``: auto-commit every 100 ms (else nothing is committed)."""
        history = self.tmp / f"{name}.jsonl"
        argv = [*PY, "member", "coordinator", "--bootstrap", self.broker.bootstrap, "--group", self.group]
        argv += [
            "--topic",
            self.topic,
            "--name",
            name,
            "--history",
            str(history),
            "--assignor",
            self.assignor,
        ]
        argv += ["--auto-commit-interval-ms", "100"] if commit else ["--no-auto-commit"]
        if instance_id:
            argv += ["--group-instance-id", instance_id]
        proc = MemberService(name, argv, history, self.tmp / f"{name}.log").start()
        self.states[name] = _MemberState(history, proc.started_ns)
        self.procs[name] = proc
        return proc

    def leave(self, name: str) -> None:
        """SIGTERM: kafka-python closes cleanly (LeaveGroup for a dynamic member)."""
        proc = self.procs.pop(name)
        proc.signal(signal.SIGTERM)
        assert proc.wait(15) == 0, proc.log_tail()
        proc.stop()

    def kill(self, name: str) -> None:
        proc = self.procs.pop(name)
        proc.signal(signal.SIGKILL)
        proc.wait(5)
        proc.stop()

    def _observe_broker(self) -> None:
        for e in self.broker_tail.poll():
            if e["kind"] == "group_state" and e.get("group") == self.group:
                self.group_state = e["to_state"]
                if e["to_state"] == "Stable":
                    self.stable = (e["generation"], e["members"])

    def state(self, name: str) -> dict | None:
        """``name``'s assignment and member id (None before its first completed rebalance), with the
        generation of the broker's latest Stable group."""
        self._observe_broker()
        st = self.states[name]
        st.update()
        if st.member_id is None or self.stable is None:
            return None
        return {"assignment": sorted(st.assignment), "member_id": st.member_id, "generation": self.stable[0]}

    def records(self, name: str) -> list[tuple[int, int]]:
        """(partition, offset) of every record ``name``'s latest process processed."""
        self.states[name].update()
        return list(self.states[name].records)

    def balanced(self) -> dict[str, dict] | None:
        """The live members' states if every partition is owned by exactly one live member, every
        live member owns something, and the broker's group is Stable with exactly these members (one
        generation); else None. The members' states are read while the broker's latest Stable stays the
        same (reading them observes the broker as well): a snapshot that straddles a new Stable could join a
        member's state from before the rebalance to the others' after it."""
        self._observe_broker()
        before = self.stable
        states = {n: self.state(n) for n in self.procs}
        if any(s is None for s in states.values()) or self.stable != before:
            return None
        owned = [p for s in states.values() for p in s["assignment"]]
        if sorted(owned) != list(range(PARTITIONS)):
            return None
        if self.group_state != "Stable" or self.stable is None or self.stable[1] != len(states):
            return None
        if any(not s["assignment"] for s in states.values()):
            return None
        return states

    def wait_balanced(self, timeout: float = 30.0, what: str = "") -> dict[str, dict]:
        return wait_until(self.balanced, timeout, interval=0.05, what=f"balanced group {what} {self.tails()}")

    def tails(self) -> str:
        return f"broker: {self.group_state} {self.stable} | " + " | ".join(
            f"{n}: {self.state(n)}" for n in self.procs
        )

    def stop_all(self) -> None:
        for proc in self.procs.values():
            proc.stop()
        self.procs.clear()


def _topic(broker: BrokerProcess, name: str, partitions: int = PARTITIONS) -> None:
    admin = KafkaAdminClient(bootstrap_servers=broker.bootstrap)
    admin.create_topics([NewTopic(name, partitions, 1)])
    admin.close()


def _events(broker: BrokerProcess, kind: str, group: str) -> list[dict]:
    return [e for e in read_events(broker.history_path) if e["kind"] == kind and e.get("group") == group]


@pytest.mark.slow
@pytest.mark.parametrize(
    "assignor",
    [
        # about 10 s each, all with the long tests (CI runs them), so the default run stays under 12 minutes:
        # its ground (one live owner per partition through joins, a leave and a crash, kafka-python on the
        # range assignor) is covered in the default run by tests/integration/harness/test_client_members.py
        pytest.param("range", marks=pytest.mark.long),
        pytest.param("roundrobin", marks=pytest.mark.long),
        pytest.param("sticky", marks=pytest.mark.long),
        pytest.param("cooperative-sticky", marks=pytest.mark.long),
    ],
)
def test_every_partition_has_exactly_one_live_owner_through_joins_leaves_and_kills(
    broker_factory: BrokerFactory, tmp_path: Path, assignor: str
) -> None:
    broker = broker_factory(extra_args=FAST)
    _topic(broker, "work")
    group = f"g-{assignor}"
    members = Members(broker, tmp_path, group, "work", assignor)
    try:
        for name in ("m1", "m2", "m3"):
            members.start(name)
        members.wait_balanced(what="after 3 joins")
        members.start("m4")
        members.start("m5")
        states = members.wait_balanced(what="after 5 joins")
        assert len(states) == 5
        gen_before = next(iter(states.values()))["generation"]

        t0 = time.monotonic()
        members.leave("m2")
        states = members.wait_balanced(what="after a clean leave")
        assert len(states) == 4 and next(iter(states.values()))["generation"] > gen_before
        assert time.monotonic() - t0 < 6.0, "a clean leave must not wait for the session timeout"

        killed_id = members.state("m4")["member_id"]
        members.kill("m4")
        states = members.wait_balanced(timeout=30, what="after a kill (session expiry)")
        assert len(states) == 3
        removed = {e["member"]: e["reason"] for e in _events(broker, "member_removed", group)}
        assert removed[killed_id] == "expired"
        assert "leave" in removed.values()
    finally:
        members.stop_all()


@pytest.mark.long  # moved out of the default run (12-minute budget); CI's long step runs it
def test_static_member_restart_within_the_session_timeout_causes_no_rebalance(
    broker_factory: BrokerFactory, tmp_path: Path
) -> None:
    broker = broker_factory(extra_args=FAST)
    _topic(broker, "static")
    members = Members(broker, tmp_path, "g-static", "static")
    try:
        for i in range(3):
            members.start(f"s{i}", instance_id=f"instance-{i}")
        before = members.wait_balanced(what="3 static members")
        generation = before["s1"]["generation"]
        rebalances = len(_events(broker, "rebalance_begin", "g-static"))
        members.kill("s1")
        members.start("s1", instance_id="instance-1")  # back well within the 6 s session
        after = members.wait_balanced(what="after the static restart")
        assert after["s1"]["member_id"] != before["s1"]["member_id"]  # a new member id for the instance
        assert {n: s["assignment"] for n, s in after.items()} == {
            n: s["assignment"] for n, s in before.items()
        }
        assert {s["generation"] for s in after.values()} == {generation}
        # Let a whole session timeout pass: the old member id must not expire into a rebalance.
        deadline = time.monotonic() + 7
        while time.monotonic() < deadline:
            assert members.balanced() is not None
            time.sleep(0.2)
        assert len(_events(broker, "rebalance_begin", "g-static")) == rebalances
    finally:
        members.stop_all()


def _join(raw: RawClient, group: str, member_id: str = "") -> object:
    proto = JoinGroupRequest.JoinGroupRequestProtocol(name="range", metadata=b"meta")
    req = JoinGroupRequest(
        group_id=group,
        session_timeout_ms=6000,
        rebalance_timeout_ms=10000,
        member_id=member_id,
        protocol_type="consumer",
        protocols=[proto],
    )
    return raw.send(req, JOIN_V), req


def _sync(raw: RawClient, group: str, generation: int, member: str, assignments: dict[str, bytes]) -> object:
    a = [
        SyncGroupRequest.SyncGroupRequestAssignment(member_id=m, assignment=b) for m, b in assignments.items()
    ]
    return raw.call(
        SyncGroupRequest(group_id=group, generation_id=generation, member_id=member, assignments=a), 3
    )


def _commit(raw: RawClient, group: str, generation: int, member: str, offset: int) -> int:
    part = OffsetCommitRequest.OffsetCommitRequestTopic.OffsetCommitRequestPartition(
        partition_index=0, committed_offset=offset, committed_metadata=""
    )
    req = OffsetCommitRequest(
        group_id=group,
        generation_id_or_member_epoch=generation,
        member_id=member,
        topics=[OffsetCommitRequest.OffsetCommitRequestTopic(name="z", partitions=[part])],
    )
    return raw.call(req, 8).topics[0].partitions[0].error_code


def _committed(raw: RawClient, group: str) -> int:
    topics = [OffsetFetchRequest.OffsetFetchRequestTopic(name="z", partition_indexes=[0])]
    return (
        raw.call(OffsetFetchRequest(group_id=group, topics=topics), 5)
        .topics[0]
        .partitions[0]
        .committed_offset
    )


def test_zombie_commit_with_an_old_generation_is_rejected(broker_factory: BrokerFactory) -> None:
    broker = broker_factory(extra_args=FAST)
    _topic(broker, "z", 1)
    with RawClient("127.0.0.1", broker.port) as a, RawClient("127.0.0.1", broker.port) as b:
        _, req = _join(a, "gz")
        r = a.receive(req, JOIN_V)
        assert r.error_code == NONE and r.generation_id == 1
        ma = r.member_id
        assert _sync(a, "gz", 1, ma, {ma: b"p0"}).error_code == NONE
        assert _commit(a, "gz", 1, ma, 10) == NONE
        # B joins: A learns of the rebalance from its heartbeat and rejoins; generation 2.
        _, req_b = _join(b, "gz")
        hb = HeartbeatRequest(group_id="gz", generation_id=1, member_id=ma)
        assert wait_until(lambda: a.call(hb, 3).error_code == REBALANCE_IN_PROGRESS, 10)
        _, req_a = _join(a, "gz", ma)
        ra, rb = a.receive(req_a, JOIN_V), b.receive(req_b, JOIN_V)
        assert ra.generation_id == rb.generation_id == 2
        # The zombie: a commit still carrying generation 1.
        assert _commit(a, "gz", 1, ma, 99) == ILLEGAL_GENERATION
        assert _committed(a, "gz") == 10
        assert _sync(a, "gz", 2, ma, {ma: b"p0", rb.member_id: b""}).error_code == NONE
        assert _commit(a, "gz", 2, ma, 11) == NONE
        assert _committed(a, "gz") == 11
    rejected = _events(broker, "commit_rejected", "gz")
    assert [(e["member"], e["generation"], e["error"]) for e in rejected] == [(ma, 1, "ILLEGAL_GENERATION")]


@pytest.mark.slow
@pytest.mark.parametrize("how", ["stop", "kill"])
def test_offsets_and_groups_survive_a_broker_restart(
    broker_factory: BrokerFactory, tmp_path: Path, how: str
) -> None:
    broker = broker_factory(extra_args=FAST)
    _topic(broker, "dur", 2)
    producer = KafkaProducer(bootstrap_servers=broker.bootstrap)
    for i in range(40):
        producer.send("dur", b"%d" % i, partition=i % 2)
    producer.flush()
    producer.close()
    members = Members(broker, tmp_path, "g-dur", "dur")
    members.start("c1", commit=True)
    wait_until(
        lambda: _committed_offsets(broker, "g-dur") == {0: 20, 1: 20}, 30, what="commits of every record"
    )
    members.leave("c1")
    with RawClient("127.0.0.1", broker.port) as raw:
        before = raw.call(DescribeGroupsRequest(groups=["g-dur"]), 1).groups[0]
    broker.stop() if how == "stop" else broker.kill()
    broker.restart()
    assert _committed_offsets(broker, "g-dur") == {0: 20, 1: 20}
    with RawClient("127.0.0.1", broker.port) as raw:
        after = raw.call(DescribeGroupsRequest(groups=["g-dur"]), 1).groups[0]
    assert (
        (after.group_state, after.protocol_type)
        == (before.group_state, before.protocol_type)
        == ("Empty", "consumer")
    )
    # The records are there too, at the same offsets, and a new member resumes after the commits.
    consumer = KafkaConsumer(bootstrap_servers=broker.bootstrap, auto_offset_reset="earliest")
    tps = [TopicPartition("dur", p) for p in range(2)]
    assert consumer.end_offsets(tps) == {tp: 20 for tp in tps}
    consumer.close()
    producer = KafkaProducer(bootstrap_servers=broker.bootstrap)
    producer.send("dur", b"new", partition=0).get(timeout=10)
    producer.close()
    members.start("c2", commit=True)
    try:
        wait_until(
            lambda: _committed_offsets(broker, "g-dur") == {0: 21, 1: 20}, 30, what="resumed after commits"
        )
        # c2 resumed after the commits: it processed the new record only (partition 0, offset 20).
        assert wait_until(lambda: members.records("c2"), 10, what="c2's record") == [(0, 20)]
    finally:
        members.stop_all()


def _committed_offsets(broker: BrokerProcess, group: str) -> dict[int, int]:
    consumer = KafkaConsumer(bootstrap_servers=broker.bootstrap, group_id=group, enable_auto_commit=False)
    try:
        return {p: consumer.committed(TopicPartition("dur", p)) for p in range(2)}
    finally:
        consumer.close()


@pytest.mark.long  # 11 s: run by CI's long step, not the default run (its 12 min budget)
def test_a_stable_group_carries_on_across_a_broker_crash_without_a_rebalance(
    broker_factory: BrokerFactory, tmp_path: Path
) -> None:
    broker = broker_factory(extra_args=FAST)
    _topic(broker, "carry")
    members = Members(broker, tmp_path, "g-carry", "carry")
    try:
        for name in ("c1", "c2", "c3"):
            members.start(name)
        before = members.wait_balanced(what="3 members")
        mark = time.time_ns()
        broker.kill()
        broker.restart()  # same port and data directory; back well within the 6 s sessions
        # The group record brought the members back: their heartbeats carry on in the same
        # generation. Watch for longer than a session timeout.
        deadline = time.monotonic() + 8
        while time.monotonic() < deadline:
            after = members.wait_balanced(what="after the broker restart")
            assert {n: (s["generation"], s["member_id"], s["assignment"]) for n, s in after.items()} == {
                n: (s["generation"], s["member_id"], s["assignment"]) for n, s in before.items()
            }
            time.sleep(0.5)
        assert not [e for e in _events(broker, "rebalance_begin", "g-carry") if e["ts_ns"] > mark]
        assert not [e for e in _events(broker, "member_removed", "g-carry") if e["ts_ns"] > mark]
    finally:
        members.stop_all()
