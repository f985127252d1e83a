"""Kafka 0.8.2.2's own ZooKeeper consumer as a legacy_zk member (``--client kafka-0.8.2.2``:
harness/members/legacy08/HerdlabLegacyMember.java under the child adapter) on Apache Kafka 3.9 in
ZooKeeper mode, with the real 0.8.2.2 jars, built once per session.

* the group's life: a member owns every partition, a second one joins and takes its range share, a third
  joins and is killed (SIGKILL: its owner znodes go with its session), one leaves (SIGTERM: the original's
  shutdown, which commits), the survivor owns everything again; each time the owner znodes are exactly the
  range assignor's answer for the registered members, and the histories say the same;
* commits: every record the members processed is committed to ZooKeeper, and the offset znodes hold the
  last offset each member's history says it committed (0.8.2.2 logs no commit: the program reads its
  ZooKeeper replies);
* the history passes the contracts the Python member's does: the history schema, the ownership fold
  (owned once at the end), and, kind for kind, the field names of herdlab's own legacy member's events
  from the same actions;
* no process is left behind.

Marked ``kafka`` and ``clients`` (opt-in): the first run needs Maven Central for both Kafka 3.9's jars
and 0.8.2.2's; when they cannot be had, the tests skip.
"""

from __future__ import annotations

import json
import signal
import subprocess
import time
import uuid
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import psutil
import pytest
from kafka import KafkaProducer
from kafka.admin import KafkaAdminClient, NewTopic
from kazoo.client import KazooClient

from harness.cluster.apache_kafka import ApacheKafkaCluster
from harness.cluster.kafka_dist import fetch
from harness.history.schema import rows_to_table
from harness.history.writer import read_events
from harness.kernel.errors import ConfigError
from harness.kernel.ownership import GroupView
from harness.members import legacy08_dist
from harness.procs import free_port
from harness.run.launch import MemberService, legacy_member_argv
from legacy_zk import paths
from tests.support.legacy_zk import owners, settled
from tests.support.waiting import wait_until

pytestmark = [pytest.mark.slow, pytest.mark.kafka, pytest.mark.clients]

PARTITIONS = 4
RECORDS = 40  # ten per partition
SESSION_MS = 3000
#: the 0.8 properties both kinds of member run with (short sessions and backoffs, frequent commits)
PROPS = {
    "zookeeper.session.timeout.ms": str(SESSION_MS),
    "rebalance.backoff.ms": "300",
    "rebalance.max.retries": "10",
    "auto.commit.enable": "true",
    "auto.commit.interval.ms": "300",
    "auto.offset.reset": "smallest",
}
#: how long a change may take to settle: a killed member's session timeout, backoffs, a loaded machine
SETTLE_S = 60.0


@pytest.fixture(scope="module")
def cluster(tmp_path_factory: pytest.TempPathFactory) -> Iterator[ApacheKafkaCluster]:
    try:
        fetch("3.9")
        legacy08_dist.build(legacy08_dist.CLIENT)
    except ConfigError as e:
        pytest.skip(f"Kafka 3.9 or 0.8.2.2 cannot be had here: {e}")
    c = ApacheKafkaCluster(
        "3.9", settings={"auto.create.topics.enable": "false"}, workdir=tmp_path_factory.mktemp("kafka")
    )
    with c:  # started and stopped by the context
        yield c


@pytest.fixture(scope="module")
def admin(cluster: ApacheKafkaCluster) -> Iterator[KazooClient]:
    zk = KazooClient(hosts=cluster.zookeeper_connect, timeout=10.0)
    zk.start(timeout=15)
    yield zk
    zk.stop()
    zk.close()


def _topic_with_records(cluster: ApacheKafkaCluster) -> str:
    topic = f"t-{uuid.uuid4().hex[:8]}"
    a = KafkaAdminClient(bootstrap_servers=cluster.bootstrap)
    try:
        a.create_topics([NewTopic(topic, PARTITIONS, 1)])
    finally:
        a.close()
    p = KafkaProducer(bootstrap_servers=cluster.bootstrap)
    for i in range(RECORDS):
        p.send(topic, json.dumps({"seq": i}).encode(), partition=i % PARTITIONS)
    p.flush()
    p.close()
    return topic


class Members:
    """Member processes of one group (``python -m harness.members legacy_zk``), each its own history."""

    def __init__(self, cluster: ApacheKafkaCluster, tmp: Path, topic: str, client: str) -> None:
        self.cluster, self.tmp, self.topic, self.client = cluster, tmp, topic, client
        self.group = f"g-{client}-{uuid.uuid4().hex[:6]}"
        self.procs: dict[str, MemberService] = {}
        self.pids: set[int] = set()
        self.crashed_ns = 0  # when m2 was killed (the nemesis's complete of a crash, for the fold)
        self.extra: list[str] = []  # options after the common ones (a -X wins over PROPS)

    def start(self, name: str) -> MemberService:
        options = ["--name", name, "--history", str(self.tmp / f"{name}.jsonl")]
        if self.client == "python":
            options += ["--bootstrap", self.cluster.bootstrap]
        else:
            options += ["--client", self.client]
        for k, v in PROPS.items():
            options += ["-X", f"{k}={v}"]
        options += self.extra
        argv = legacy_member_argv(self.cluster.zookeeper_connect, self.group, self.topic, *options)
        m = MemberService(f"legacy_zk:{name}", argv, self.tmp / f"{name}.jsonl", self.tmp / f"{name}.log")
        self.procs[name] = m.start(timeout=60)
        proc = psutil.Process(m.pid)
        wait_until(lambda: self.client == "python" or proc.children(), 30, what=f"{name}'s JVM")
        self.pids |= {proc.pid, *(c.pid for c in proc.children(recursive=True))}
        return m

    def events(self, name: str | None = None) -> list[dict[str, Any]]:
        names = [name] if name else list(self.procs)
        out = [
            e
            for n in names
            if (self.tmp / f"{n}.jsonl").exists()
            for e in read_events(self.tmp / f"{n}.jsonl")
        ]
        return sorted(out, key=lambda e: e["ts_ns"])

    def member_id(self, name: str) -> str:
        return next(e["member"] for e in self.events(name) if e["kind"] == "registered")

    def stop_all(self) -> None:
        for m in self.procs.values():
            m.stop()


@pytest.fixture
def members_of(cluster: ApacheKafkaCluster, tmp_path: Path) -> Iterator[Any]:
    made: list[Members] = []

    def make(client: str, topic: str) -> Members:
        (tmp_path / client).mkdir(exist_ok=True)
        m = Members(cluster, tmp_path / client, topic, client)
        made.append(m)
        return m

    yield make
    for m in made:
        m.stop_all()


def _owned_by(admin: KazooClient, g: Members, name: str) -> set[int]:
    me = g.member_id(name)
    return {p for p, thread in owners(admin, g.group, g.topic).items() if thread.rsplit("-", 1)[0] == me}


def _history_owns(g: Members, name: str) -> set[int]:
    """What ``name``'s history says it owns now: its assigned minus its revoked, in order."""
    owned: set[int] = set()
    for e in g.events(name):
        if e["kind"] == "assigned":
            owned.add(e["partition"])
        elif e["kind"] == "revoked":
            owned.discard(e["partition"])
    return owned


def _life(admin: KazooClient, g: Members) -> None:
    """Start, join, join and crash, leave (see the module docstring), checked at every step."""
    g.start("m0")
    wait_until(lambda: settled(admin, g.group, g.topic, 1), SETTLE_S, what="m0 owns every partition")
    assert _owned_by(admin, g, "m0") == set(range(PARTITIONS))
    wait_until(lambda: _history_owns(g, "m0") == set(range(PARTITIONS)), 10, what="m0's history")
    g.start("m1")  # a join: range gives the older member 0-1, the newer 2-3
    wait_until(lambda: settled(admin, g.group, g.topic, 2), SETTLE_S, what="m0 and m1 share")
    wait_until(
        lambda: _history_owns(g, "m1") == {2, 3} and _history_owns(g, "m0") == {0, 1}, 10, what="histories"
    )
    crashed = g.start("m2")
    wait_until(lambda: settled(admin, g.group, g.topic, 3), SETTLE_S, what="three members share")
    crashed.signal(signal.SIGKILL)  # the process group: the adapter and its JVM
    g.crashed_ns = time.time_ns()
    wait_until(
        lambda: settled(admin, g.group, g.topic, 2), SETTLE_S, what="the crash's partitions taken over"
    )
    g.procs["m1"].signal(signal.SIGTERM, group=False)  # a clean leave, through the adapter
    assert g.procs["m1"].wait(30) == 0
    wait_until(lambda: settled(admin, g.group, g.topic, 1), SETTLE_S, what="m0 owns everything again")
    assert _owned_by(admin, g, "m0") == set(range(PARTITIONS))
    wait_until(lambda: _history_owns(g, "m0") == set(range(PARTITIONS)), 10, what="m0's history at the end")
    # every record processed, and committed: the offset znodes reach the end of every partition
    wait_until(
        lambda: (
            {(e["partition"], e["offset"]) for e in g.events() if e["kind"] == "record"}
            >= {(p, o) for p in range(PARTITIONS) for o in range(RECORDS // PARTITIONS)}
        ),
        SETTLE_S,
        what="every record processed",
    )
    wait_until(
        lambda: _offsets(admin, g) == dict.fromkeys(range(PARTITIONS), RECORDS // PARTITIONS),
        30,
        what="commits",
    )
    g.procs["m0"].signal(signal.SIGTERM, group=False)
    assert g.procs["m0"].wait(30) == 0


def _offsets(admin: KazooClient, g: Members) -> dict[int, int]:
    out = {}
    for p in range(PARTITIONS):
        path = paths.offset_path(g.group, g.topic, p)
        if admin.exists(path):
            out[p] = int(admin.get(path)[0].decode())
    return out


def test_the_original_starts_owns_rebalances_commits_and_leaves_nothing_running(
    cluster: ApacheKafkaCluster, admin: KazooClient, members_of: Any
) -> None:
    topic = _topic_with_records(cluster)
    g = members_of("kafka-0.8.2.2", topic)
    _life(admin, g)
    events = g.events()
    (started,) = [e for e in g.events("m0") if e["kind"] == "started"]
    assert started["client"] == "kafka-0.8.2.2" and started["member"].startswith(f"{g.group}_")
    # the commits the histories report are the offsets ZooKeeper holds (the last one per partition)
    last: dict[int, int] = {}
    for e in events:
        if e["kind"] == "commit":
            assert e["store"] == "zookeeper"
            last[e["partition"]] = e["offset"]
    assert last == _offsets(admin, g) == dict.fromkeys(range(PARTITIONS), RECORDS // PARTITIONS)
    # the leaver's and the survivor's shutdowns were clean; the killed member wrote no stopped
    stopped = {e["source"] for e in events if e["kind"] == "stopped"}
    assert stopped == {"m0", "m1"}
    assert not [
        p for p in g.pids if psutil.pid_exists(p) and psutil.Process(p).status() != psutil.STATUS_ZOMBIE
    ]


def test_its_history_passes_the_python_member_s_contracts(
    cluster: ApacheKafkaCluster, admin: KazooClient, members_of: Any
) -> None:
    topic = _topic_with_records(cluster)
    original, ours = members_of("kafka-0.8.2.2", topic), members_of("python", topic)
    _life(admin, original)
    _life(admin, ours)
    theirs_events, our_events = original.events(), ours.events()
    # the history schema takes every event (a field of the wrong type is an error there)
    rows_to_table(theirs_events)
    # the ownership fold, with the kill as the nemesis records it: one live owner per partition once m0
    # took everything over, up to its shutdown
    crash = {"kind": "complete", "role": "nemesis", "action": "crash", "targets": ["m2"]}
    folded = sorted([*theirs_events, {**crash, "ts_ns": original.crashed_ns}], key=lambda e: e["ts_ns"])
    end = next(
        e["ts_ns"]
        for e in folded
        if e.get("source") == "m0" and (e["kind"] == "stopped" or e.get("reason") == "shutdown")
    )
    view = GroupView(partitions=PARTITIONS)
    view.apply_all(e for e in folded if e["ts_ns"] < end)
    assert view.owned_once(), view.summary()
    assert view.live == {"m0"}
    # kind for kind, the same field names as herdlab's own member's events from the same actions
    fields: dict[str, set[str]] = {}
    for e in our_events:
        fields.setdefault(e["kind"], set()).update(e)
    optional = {"detail", "rollback", "recovered", "seq", "owned"}
    extra = {"started": {"client"}}  # the contract's addition; herdlab's member names its kazoo handler
    missing = {"started": {"handler"}}
    for kind in {e["kind"] for e in theirs_events}:
        assert kind in fields, f"herdlab's member writes no {kind!r}"
        got: set[str] = set().union(*(set(e) for e in theirs_events if e["kind"] == kind))
        want = fields[kind]
        assert got - want - optional <= extra.get(kind, set()), kind
        assert want - got - optional <= missing.get(kind, set()), kind
    # its counters are herdlab's member's (those the original's messages give)
    stats = [e["stats"] for e in theirs_events if e["kind"] == "stopped"]
    our_stats = next(e["stats"] for e in our_events if e["kind"] == "stopped")
    assert stats and all(set(st) <= set(our_stats) for st in stats)
    assert sum(st["watches"] for st in stats) > 0 and sum(st["commits"] for st in stats) > 0
    for kind in ("ready", "started", "registered", "rebalance_begin", "rebalance_end", "assigned", "revoked"):
        assert kind in {e["kind"] for e in theirs_events}, kind


def test_a_held_owner_znode_is_a_conflict_rolled_back_until_the_original_gives_up_then_a_join_recovers(
    cluster: ApacheKafkaCluster, admin: KazooClient, members_of: Any
) -> None:
    """An owner znode another session holds: every attempt of the first rebalance conflicts on it (its
    holder read from the original's own conflict message), rolls back what it claimed and fails; after
    rebalance.max.retries the original gives up (its createMessageStreams throws), stays registered, and
    the next change (a join, once the znode is gone) rebalances it into its share, whose records it
    consumes."""
    topic = _topic_with_records(cluster)
    g = members_of("kafka-0.8.2.2", topic)
    intruder = KazooClient(hosts=cluster.zookeeper_connect, timeout=10.0)
    intruder.start(timeout=15)
    try:
        intruder.create(paths.owner_path(g.group, topic, 1), b"intruder-0", ephemeral=True, makepath=True)
        g.extra = ["-X", "rebalance.max.retries=3"]
        g.start("m0")
        ends = wait_until(
            lambda: [e for e in g.events("m0") if e["kind"] == "rebalance_end" and e["gave_up"]],
            SETTLE_S,
            what="m0 gives up",
        )
    finally:
        intruder.stop()
        intruder.close()
    events = g.events("m0")
    attempts = [e for e in events if e["kind"] == "rebalance_end"]
    assert [(e["rebalance"], e["attempt"], e["outcome"]) for e in attempts] == [
        (1, a, "conflict") for a in range(3)
    ]
    assert ends[0]["attempt"] == 2 and ends[0]["owned"] == []
    conflicts = [e for e in events if e["kind"] == "conflict"]
    assert [(e["attempt"], e["partition"], e["holder"]) for e in conflicts] == [
        (a, 1, "intruder-0") for a in range(3)
    ]
    claims = [(e["attempt"], e["partition"]) for e in events if e["kind"] == "claim"]
    rolled_back = [
        (e["attempt"], e["partition"]) for e in events if e["kind"] == "release" and e.get("rollback")
    ]
    assert claims and sorted(claims) == sorted(
        rolled_back
    )  # every claim of a failed attempt is deleted again
    assert not [e for e in events if e["kind"] == "assigned"]
    assert owners(admin, g.group, topic) == {}  # the intruder's session closed; nothing of m0's left
    g.start("m1")
    wait_until(lambda: settled(admin, g.group, topic, 2), SETTLE_S, what="m0 and m1 share after the join")
    assert _owned_by(admin, g, "m0") == {0, 1}
    wait_until(
        lambda: {e["partition"] for e in g.events("m0") if e["kind"] == "record"} == {0, 1},
        SETTLE_S,
        what="m0 consumes its share on the streams made by the rebalance that gave up",
    )


def test_an_expired_session_is_reported_and_the_original_re_registers_and_owns_again(
    cluster: ApacheKafkaCluster, admin: KazooClient, members_of: Any
) -> None:
    """The nemesis's expiry (a second client attaches to the member's session with the id and password its
    ``registered`` reported, and closes it): the original logs the expiry, its partitions are revoked
    (session_expired), it registers again on a new session and a rebalance (new_session) gives it every
    partition back."""
    topic = _topic_with_records(cluster)
    g = members_of("kafka-0.8.2.2", topic)
    g.start("m0")
    wait_until(lambda: settled(admin, g.group, topic, 1), SETTLE_S, what="m0 owns every partition")
    (reg,) = [e for e in g.events("m0") if e["kind"] == "registered"]
    attach = KazooClient(
        hosts=cluster.zookeeper_connect,
        client_id=(reg["session_id"], bytes.fromhex(reg["session_password"])),
        timeout=10.0,
    )
    attach.start(timeout=15)
    attach.stop()
    attach.close()
    regs = wait_until(
        lambda: len(r := [e for e in g.events("m0") if e["kind"] == "registered"]) == 2 and r,
        SETTLE_S,
        what="m0 registers again",
    )
    assert regs[1]["session_id"] != reg["session_id"]
    wait_until(lambda: settled(admin, g.group, topic, 1), SETTLE_S, what="m0 owns every partition again")
    wait_until(lambda: _history_owns(g, "m0") == set(range(PARTITIONS)), 10, what="m0's history")
    events = g.events("m0")
    assert "LOST" in [e["state"] for e in events if e["kind"] == "zk_state"]
    expired = [e["partition"] for e in events if e["kind"] == "revoked" and e["reason"] == "session_expired"]
    assert sorted(expired) == list(range(PARTITIONS))
    after = [e for e in events if e["kind"] == "rebalance_begin" and e["ts_ns"] > regs[1]["ts_ns"]]
    assert after and after[0]["reason"].startswith("new_session")


def test_a_zookeeper_that_does_not_answer_is_one_line_and_a_failed_member(tmp_path: Path) -> None:
    try:
        legacy08_dist.build(legacy08_dist.CLIENT)
    except ConfigError as e:
        pytest.skip(f"the 0.8.2.2 member cannot be built here: {e}")
    argv = legacy_member_argv(
        f"127.0.0.1:{free_port()}",  # nothing listens there
        "g",
        "t",
        *("--name", "m0", "--client", "kafka-0.8.2.2", "--history", str(tmp_path / "m0.jsonl")),
        *("-X", "zookeeper.connection.timeout.ms=1000"),
    )
    r = subprocess.run(argv, capture_output=True, text=True, timeout=120)
    assert r.returncode == 1, r.stderr
    lines = r.stderr.strip().splitlines()
    # the program's one line (the ZooKeeper client's own threads may still log around it, as they do in the
    # member's log), then the member command's as the last: no stack trace of ours, no Python traceback
    ours = [line for line in lines if line.startswith("HerdlabLegacyMember: ")]
    assert ours == [
        f"HerdlabLegacyMember: ZooKeeper at {argv[argv.index('--zookeeper') + 1]} did not answer within 1000 ms "
        "(zookeeper.connection.timeout.ms)"
    ], r.stderr
    assert lines[-1].startswith("herdlab: error: member m0: ") and lines[-1].endswith("exited with status 1")
    assert "Traceback" not in r.stderr and "ZkTimeoutException" not in r.stderr
