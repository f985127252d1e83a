"""Kafka's own Java consumer as a coordinator member (``--client java``: harness/members/java/HerdlabMember.java
under the child adapter) on herdlab's broker, with the real kafka-clients jars, built once per session.

* the group's life (kafka-clients 3.9 and 4): two members split the partitions, a third joins, one leaves
  (SIGTERM), one crashes (SIGKILL); every time each partition ends owned by exactly one live member;
  commits are recorded with outcomes and the last accepted one per partition is what the broker returns;
* the poll timer: a member whose processing stalls (``{"cmd":"stall"}`` on the program's stdin, as the
  adapter's stall writes it) goes on heart-beating, so the broker does not expire it (session 2 s), but its
  client leaves the group when ``max.poll.interval.ms`` (3 s) passes without a poll; the survivor gets every
  partition within that plus a poll window, one heartbeat and the survivor's rejoin; unstalled, the member
  finds its membership lost (``revoked`` lost) and rejoins;
* a commit the client refuses: a stalled member removed by its poll timer, stopped, tries its final commit
  and records it rejected with the client's error;
* the same actions give a Java member's history the same event kinds and field names as kafka-python's;
* several members in one JVM (``--names``: one KafkaConsumer per thread) join as separate members, each
  under its own name, and stop cleanly together; a run hosts the untargeted members of a java unit;
* kafka-clients 4 with the consumer group protocol on Apache Kafka 4 (also marked ``kafka``);
* a held member (``--hold-until``) stopped before its release ends at once, status 0, no event;
* property passthrough: ``-X`` reaches the client (``started.effective``, the client's parse); an unknown
  name is a one-line error, from the scenario-side check and from the program itself.
"""

from __future__ import annotations

import json
import os
import signal
import subprocess
import threading
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import psutil
import pytest
from kafka.admin import KafkaAdminClient, NewTopic

from harness.cluster.broker import BrokerProcess
from harness.history.writer import HistoryWriter, read_events
from harness.members import java_dist
from harness.members.child import ChildMember
from harness.members.clients.registry import child_argv, make_member
from harness.members.recorder import MemberConfig
from harness.procs import spawn
from harness.run.launch import PY, MemberService
from harness.run.runner import RunOptions, run_scenario
from harness.scenario import load_scenario
from harness.workload.producer import Producer, ProducerConfig
from tests.support.brokers import BrokerFactory
from tests.support.client_members import (
    FAST_BROKER,
    ClientGroup,
    committed_offsets,
    create_topic,
    member_argv,
)
from tests.support.recording import RecordingHistory
from tests.support.runs import FAST
from tests.support.waiting import wait_until

pytestmark = pytest.mark.clients

PARTITIONS = 4
OPTIONS = (
    "--session-timeout-ms",
    "2000",
    "--heartbeat-interval-ms",
    "300",
    "--auto-commit-interval-ms",
    "200",
)
#: The poll-timer tests' member settings (ms): a session shorter than the poll timer, so a removal after
#: the session timeout can only be the poll timer's (the heartbeat thread kept the session alive).
SESSION_MS, HEARTBEAT_MS, MAX_POLL_MS = 2000, 300, 3000
#: the program's poll window (--poll-ms): a stall begins at most this long after its command
POLL_MS = 200
#: the survivor's part of a rebalance: it learns of it at its next heartbeat, then JoinGroup and
#: SyncGroup on loopback; loose, for a loaded two-core machine
REJOIN_ALLOWANCE_MS = HEARTBEAT_MS + 1500


@pytest.fixture(scope="session")
def java_member() -> dict[str, Path]:
    """The java member built for both lines (idempotent: a warm cache builds nothing)."""
    return {v: java_dist.build("java", v) for v in ("3.9", "4")}


def _kinds(events: list[dict[str, Any]], kind: str) -> list[dict[str, Any]]:
    return [e for e in events if e["kind"] == kind]


def _produce(
    bootstrap: str, topic: str, tmp: Path, count: int, name: str = "producer"
) -> set[tuple[int, int]]:
    path = tmp / f"{name}.jsonl"
    with HistoryWriter(path, name) as h:
        Producer(ProducerConfig(bootstrap=bootstrap, topic=topic, rate=1000, max_records=count), h).run()
    return {(e["partition"], e["offset"]) for e in read_events(path) if e["kind"] == "produced"}


@pytest.fixture
def group_of(broker_factory: BrokerFactory, tmp_path: Path, java_member: dict[str, Path]) -> Iterator[Any]:
    groups: list[ClientGroup] = []

    def make(client: str = "java", *extra: str, topic: str = "t") -> ClientGroup:
        broker = broker_factory(extra_args=FAST_BROKER)
        create_topic(broker, topic, PARTITIONS)
        g = ClientGroup(broker, tmp_path, f"g-{client}", topic, PARTITIONS, client, (*OPTIONS, *extra))
        groups.append(g)
        return g

    yield make
    for g in groups:
        g.stop_all()


@pytest.mark.parametrize("version", ["3.9", "4"])
def test_join_rebalance_leave_and_crash_keep_one_live_owner_per_partition_and_commits_match_the_broker(
    group_of: Any, tmp_path: Path, version: str
) -> None:
    g: ClientGroup = group_of("java", "--client-version", version)
    g.start("m0")
    g.start("m1")
    assert set(g.wait_balanced("after two joins")) == {"m0", "m1"}

    produced = _produce(g.broker.bootstrap, g.topic, tmp_path, 80)
    assert len(produced) == 80

    def processed() -> set[tuple[int, int]]:
        return {(e["partition"], e["offset"]) for n in ("m0", "m1") for e in _kinds(g.events(n), "record")}

    wait_until(lambda: processed() >= produced, timeout=30, what="every record processed")

    g.start("m2")
    assert set(g.wait_balanced("after a third join")) == {"m0", "m1", "m2"}
    g.leave("m1")
    assert set(g.wait_balanced("after a clean leave")) == {"m0", "m2"}
    g.kill("m2")
    assert set(g.wait_balanced("after a crash (session expiry)")) == {"m0"}
    g.leave("m0")

    commits = sorted(
        (e for n in ("m0", "m1", "m2") for e in g.events(n) if e["kind"] in ("commit", "commit_rejected")),
        key=lambda e: e["ts_ns"],
    )
    accepted = [e for e in commits if e["kind"] == "commit"]
    assert accepted, "no commit recorded"
    assert all(e["library"] == "java" and e["store"] == "kafka" for e in commits)
    last: dict[int, int] = {}
    for e in accepted:
        last[e["partition"]] = e["offset"]
    ends = {p: max(o for q, o in produced if q == p) + 1 for p in {q for q, _ in produced}}
    assert last == ends
    assert committed_offsets(g.broker, g.group) == ends
    # the generation of every assignment is the client's (groupMetadata), the broker's numbering
    generations = {e["generation"] for n in ("m0", "m1", "m2") for e in _kinds(g.events(n), "assigned")}
    assert min(generations) >= 1 and all(isinstance(x, int) for x in generations)


class InProcessMember:
    """A java member's adapter (:class:`ChildMember`) run in this process, so that the test writes the
    program's stdin commands as the adapter's stall does; events in a stamped in-memory history."""

    def __init__(self, broker: BrokerProcess, group: str, topic: str, name: str, **props: str) -> None:
        self.history = RecordingHistory(stamp=True)
        config = MemberConfig(
            bootstrap=broker.bootstrap, group=group, topic=topic, name=name, client="java", properties=props
        )
        member = make_member(config, self.history)  # pyright: ignore[reportArgumentType]
        assert isinstance(member, ChildMember)
        self.member = member
        self.thread = threading.Thread(target=member.run, name=name, daemon=True)
        self.thread.start()
        wait_until(lambda: self.history.of("started"), timeout=60, what=f"{name} started")

    def command(self, cmd: str) -> None:
        stdin = self.member.consumer.stdin
        stdin.write(json.dumps({"cmd": cmd}).encode() + b"\n")
        stdin.flush()

    def assignment(self) -> set[int]:
        owned: set[int] = set()
        for e in list(self.history.events):
            if e["kind"] == "assigned":
                owned.add(e["partition"])
            elif e["kind"] == "revoked":
                owned.discard(e["partition"])
        return owned

    def since(self, t: float) -> list[dict[str, Any]]:
        return [e for e in list(self.history.events) if e["t"] >= t]

    def stop(self) -> None:
        self.member.stop(clean=True)
        self.thread.join(60)
        assert not self.thread.is_alive()


def _poll_timer_props(**more: str) -> dict[str, str]:
    return {
        "session.timeout.ms": str(SESSION_MS),
        "heartbeat.interval.ms": str(HEARTBEAT_MS),
        "max.poll.interval.ms": str(MAX_POLL_MS),
        "auto.offset.reset": "earliest",
        **more,
    }


def _removed(broker: BrokerProcess, group: str, name: str) -> list[dict[str, Any]]:
    assert broker.history_path is not None
    return [
        e
        for e in read_events(broker.history_path)
        if e["kind"] == "member_removed"
        and e.get("group") == group
        and str(e.get("member")).startswith(f"{name}-")
    ]


def test_a_stalled_member_keeps_its_session_is_removed_by_its_poll_timer_and_rejoins_when_unstalled(
    broker_factory: BrokerFactory, java_member: dict[str, Path], capfd: pytest.CaptureFixture[str]
) -> None:
    broker = broker_factory(extra_args=FAST_BROKER)
    create_topic(broker, "t", PARTITIONS)
    members: list[InProcessMember] = []
    try:
        survivor = InProcessMember(broker, "g", "t", "m1", **_poll_timer_props())
        members.append(survivor)
        wait_until(lambda: survivor.assignment() == set(range(PARTITIONS)), timeout=30, what="m1 alone")
        stalled = InProcessMember(broker, "g", "t", "m0", **_poll_timer_props())
        members.append(stalled)
        wait_until(
            lambda: (
                stalled.assignment()
                and survivor.assignment() == set(range(PARTITIONS)) - stalled.assignment()
            ),
            timeout=30,
            what="m0 and m1 sharing the partitions",
        )

        stalled.command("bogus")  # an unknown command: one line on the member's log, nothing else
        t_stall = time.monotonic()
        stalled.command("stall")
        wait_until(
            lambda: survivor.assignment() == set(range(PARTITIONS)),
            timeout=(MAX_POLL_MS + POLL_MS + REJOIN_ALLOWANCE_MS) / 1000 + 10,
            what="m1 to get every partition back",
        )
        done = [e for e in survivor.since(t_stall) if e["kind"] == "rebalance_end"][-1]
        elapsed_ms = (done["t"] - t_stall) * 1000
        # not before the poll timer (the last poll began at most one poll window before the command) ...
        assert elapsed_ms >= MAX_POLL_MS - POLL_MS, elapsed_ms
        # ... and within it plus the poll window, one heartbeat of the stalled member's heartbeat thread
        # (which notices the expired timer) and the survivor's rejoin
        assert elapsed_ms <= MAX_POLL_MS + POLL_MS + HEARTBEAT_MS + REJOIN_ALLOWANCE_MS, elapsed_ms
        # removed by its own LeaveGroup (the poll timer), not expired: its heartbeats went on
        assert [e["reason"] for e in _removed(broker, "g", "m0")] == ["leave"]
        assert not [e for e in stalled.since(t_stall) if e["kind"] not in ("record",)]  # no callback ran

        t_unstall = time.monotonic()
        stalled.command("unstall")
        wait_until(
            lambda: (
                stalled.assignment()
                and survivor.assignment() == set(range(PARTITIONS)) - stalled.assignment()
            ),
            timeout=30,
            what="m0 to rejoin after the unstall",
        )
        after = [
            e["kind"] for e in stalled.since(t_unstall) if e["kind"] in ("rebalance_begin", "rebalance_end")
        ]
        assert after[:2] == ["rebalance_begin", "rebalance_end"], after
        begin = [e for e in stalled.since(t_unstall) if e["kind"] == "rebalance_begin"][0]
        assert begin["lost"] is True  # onPartitionsLost: the membership was gone, nothing to commit
        # nothing was produced: no record, so no commit, after the unstall
        assert not [e for e in stalled.since(t_unstall) if e["kind"] in ("commit", "commit_rejected")]
    finally:
        for m in members:
            m.stop()
    assert [e["clean"] for e in stalled.history.of("stopped")] == [True]
    unknown = [line for line in capfd.readouterr().err.splitlines() if "unknown command" in line]
    assert unknown == ['HerdlabMember: unknown command ignored: {"cmd": "bogus"}']


def test_a_commit_after_the_poll_timer_removed_the_member_is_recorded_rejected(
    broker_factory: BrokerFactory, tmp_path: Path, java_member: dict[str, Path]
) -> None:
    """m0 processes records but commits nothing yet (a long commit interval), stalls, and is removed by its
    poll timer; stopped then, its final commit is refused by its client (the member is out of the group)
    and recorded as ``commit_rejected`` with the client's error; nothing of it reaches the broker."""
    broker = broker_factory(extra_args=FAST_BROKER)
    create_topic(broker, "t", PARTITIONS)
    members: list[InProcessMember] = []
    try:
        m1 = InProcessMember(broker, "g", "t", "m1", **_poll_timer_props())
        members.append(m1)
        wait_until(lambda: m1.assignment() == set(range(PARTITIONS)), timeout=30, what="m1 alone")
        m0 = InProcessMember(
            broker, "g", "t", "m0", **_poll_timer_props(**{"auto.commit.interval.ms": "600000"})
        )
        members.append(m0)
        wait_until(
            lambda: m0.assignment() and len(m1.assignment()) < PARTITIONS, timeout=30, what="m0 joined"
        )
        mine = m0.assignment()
        produced = _produce(broker.bootstrap, "t", tmp_path, 40)
        wait_until(
            lambda: (
                {(e["partition"], e["offset"]) for e in m0.history.of("record")}
                >= {r for r in produced if r[0] in mine}
            ),
            timeout=30,
            what="m0 processing its records",
        )
        m0.command("stall")
        wait_until(lambda: m1.assignment() == set(range(PARTITIONS)), timeout=30, what="m0 removed")
        members.remove(m0)
        m0.stop()
    finally:
        for m in members:
            m.stop()
    rejected = m0.history.of("commit_rejected")
    assert {e["partition"] for e in rejected} == mine
    assert not m0.history.of("commit")
    # the client refuses it itself (it is in no generation): its CommitFailedException carries no Kafka
    # error code, so the class's name is the error
    assert all(e["error"] == "CommitFailedException" and e["code"] is None for e in rejected), rejected
    assert all(e["store"] == "kafka" for e in rejected)
    assert [e["clean"] for e in m0.history.of("stopped")] == [True]


#: Fields every history has that say when and who, not what (the comparison leaves them out).
_HEADER = {"ts_ns", "source", "role", "member", "generation", "library"}


def _shape(events: list[dict[str, Any]]) -> dict[str, set[str]]:
    shape: dict[str, set[str]] = {}
    for e in events:
        shape.setdefault(e["kind"], set()).update(set(e) - _HEADER)
    return shape


def test_a_java_members_history_has_the_kinds_and_fields_of_a_kafka_python_members_for_the_same_actions(
    group_of: Any, tmp_path: Path
) -> None:
    shapes = {}
    for client in ("kafka-python", "java"):
        g: ClientGroup = group_of(client)
        g.start("a")
        g.wait_balanced(f"{client}: a alone")
        g.start("b")
        g.wait_balanced(f"{client}: a and b")
        produced = _produce(g.broker.bootstrap, g.topic, tmp_path, 20, name=f"producer-{client}")
        wait_until(
            lambda g=g, produced=produced: (
                {(e["partition"], e["offset"]) for n in "ab" for e in _kinds(g.events(n), "record")}
                >= produced
            ),
            timeout=30,
            what=f"{client}: every record processed",
        )
        wait_until(
            lambda g=g: _kinds(g.events("a"), "commit") and _kinds(g.events("b"), "commit"),
            timeout=30,
            what=f"{client}: commits",
        )
        g.leave("b")
        g.wait_balanced(f"{client}: a after b left")
        g.leave("a")
        shapes[client] = _shape(g.events("a") + g.events("b"))
    # a rejected commit depends on timing (an interval commit in flight when the group rebalances), so it
    # may appear in one client's run only; where it appears it has the accepted commit's fields and the error
    for shape in shapes.values():
        if "commit_rejected" in shape:
            assert shape.pop("commit_rejected") == shape["commit"] | {"error", "code"}
    assert shapes["java"] == shapes["kafka-python"]


@pytest.mark.parametrize("version", ["3.9", "4"])
def test_a_property_given_with_X_reaches_the_client(group_of: Any, version: str) -> None:
    g: ClientGroup = group_of("java", "--client-version", version)
    g.start("m0", "-X", "fetch.max.wait.ms=123", "-X", "client.rack=rack-a", "-X", "check.crcs=false")
    started = wait_until(lambda: _kinds(g.events("m0"), "started"), timeout=30, what="m0 started")
    effective = started[0]["effective"]
    assert effective["fetch.max.wait.ms"] == 123  # the client's parse: an int
    assert effective["client.rack"] == "rack-a"
    assert effective["check.crcs"] is False
    assert effective["session.timeout.ms"] == 2000  # a typed option is a property too
    assert effective["partition.assignment.strategy"] == ["org.apache.kafka.clients.consumer.RangeAssignor"]
    assert started[0]["library"] == "java"


def test_an_unknown_property_is_a_one_line_error_from_the_check_and_from_the_program(
    java_member: dict[str, Path],
) -> None:
    argv = [*PY, "member", "coordinator", "--client", "java", "--bootstrap", "127.0.0.1:1", "--group", "g"]
    argv += ["--topic", "t", "-X", "no.such.property=1"]
    r = subprocess.run(argv, capture_output=True, text=True, timeout=60, env={**os.environ, "NO_COLOR": "1"})
    assert r.returncode == 2
    errors = [line for line in r.stderr.splitlines() if "error" in line.lower()]
    assert len(errors) == 1 and "unknown java property 'no.such.property'" in errors[0], r.stderr

    config = MemberConfig(
        bootstrap="127.0.0.1:1",
        group="g",
        topic="t",
        name="m0",
        client="java",
        properties={"no.such.property": "1"},
    )
    argv = child_argv(java_dist.command(config), config)
    r = subprocess.run(argv, capture_output=True, text=True, timeout=60, stdin=subprocess.DEVNULL)
    assert r.returncode == 2 and r.stdout == ""
    assert r.stderr.strip().splitlines() == ["HerdlabMember: unknown java property 'no.such.property'"]


@pytest.mark.parametrize("to", ["adapter", "group"])
def test_a_held_member_stopped_before_its_release_ends_at_once_with_status_0_and_no_event(
    java_member: dict[str, Path], tmp_path: Path, to: str
) -> None:
    """A join's member started held and never released (harness.members.release): a stop, to the adapter
    alone (its clean stop signals the program) or to the process group (as the rig stops a held process),
    ends the JVM at once; the member exits 0 and has written no event."""
    history, log, release = tmp_path / "j0.jsonl", tmp_path / "j0.log", tmp_path / ".j0.release"
    argv = [*PY, "member", "coordinator", "--client", "java", "--bootstrap", "127.0.0.1:1", "--group", "g"]
    argv += ["--topic", "t", "--name", "j0", "--history", str(history), "--hold-until", str(release)]
    member = spawn(argv, name="j0", log_path=log)
    try:
        wait_until(
            lambda: log.exists() and f"held until {release} exists" in log.read_text(), 60, what="held"
        )
        (jvm,) = psutil.Process(member.pid).children()
        member.signal(signal.SIGTERM, group=to == "group")
        # a program that ignored the stop while held would still be waiting for its release here
        assert member.wait(30) == 0, log.read_text()
        assert not jvm.is_running()
        assert not history.exists() or read_events(history) == []
        assert "HerdlabMember: stopped while held" in log.read_text()
        assert not release.exists()  # never released
    finally:
        member.stop()


def _owned(events: list[dict[str, Any]]) -> set[int]:
    owned: set[int] = set()
    for e in events:
        if e["kind"] == "assigned":
            owned.add(e["partition"])
        elif e["kind"] == "revoked":
            owned.discard(e["partition"])
    return owned


def test_members_hosted_in_one_jvm_each_join_with_their_own_consumer_and_stop_together(
    group_of: Any, tmp_path: Path
) -> None:
    g: ClientGroup = group_of("java")
    g.start("solo")
    g.wait_balanced("solo alone")
    history = tmp_path / "host0.jsonl"
    argv = member_argv(g.broker, g.group, g.topic, "host0", history, "java", *OPTIONS, "--names", "a,b,c")
    host = MemberService("host0", argv, history, tmp_path / "host0.log").start(timeout=60)
    try:
        hosted = ("a", "b", "c")

        def split() -> dict[str, set[int]] | None:
            events = read_events(history) if history.exists() else []
            owned = {n: _owned([e for e in events if e["source"] == n]) for n in hosted}
            owned["solo"] = g.assignments()["solo"]
            flat = sorted(p for ps in owned.values() for p in ps)
            stable = g.group_state == "Stable" and g.stable is not None and g.stable[1] == 4
            return owned if flat == list(range(PARTITIONS)) and all(owned.values()) and stable else None

        owned = wait_until(split, timeout=60, what=f"four members sharing the partitions: {g.describe()}")
        assert owned is not None and set(owned) == {"solo", *hosted}
        events = read_events(history)
        ids = {
            n: {e["member"] for e in events if e["source"] == n and e["kind"] == "assigned"} for n in hosted
        }
        assert all(len(i) == 1 for i in ids.values()) and len(set().union(*ids.values())) == 3, ids
        assert all(next(iter(ids[n])).startswith(f"{n}-") for n in hosted)  # client.id = the member's name
        jvms = subprocess.run(["pgrep", "-P", str(host.pid)], capture_output=True, text=True).stdout.split()
        assert len(jvms) == 1  # one JVM under the host's adapter

        host.signal(signal.SIGTERM, group=False)
        assert host.wait(60) == 0, host.log_tail()
    finally:
        host.stop()
    stopped = {e["source"]: e for e in read_events(history) if e["kind"] == "stopped"}
    assert set(stopped) == set(hosted) and all(e["clean"] for e in stopped.values())
    assert g.wait_balanced("solo after the host stopped") == {"solo": set(range(PARTITIONS))}


def test_a_run_hosts_the_untargeted_java_members_two_per_jvm_and_keeps_the_targeted_alone(
    tmp_path: Path, java_member: dict[str, Path]
) -> None:
    """herd-small's join, leave and crash on a coordinator unit of six java members, two per JVM: the leave's
    and the crash's targets run alone, the four others in two hosts, each member under its own name; the
    unit does not fail and no process is left."""
    s = load_scenario(
        "herd-small",
        [
            *FAST,
            'implementations=["coordinator"]',
            "group.members=6",
            'group.coordinator.client="java"',
            "group.coordinator.members_per_host=2",
        ],
    )
    before = {p.pid for p in psutil.Process().children(recursive=True)}
    result = run_scenario(s, RunOptions(out=tmp_path))
    assert not [u for u in result.units if u.get("failed")], result.units
    left = [p for p in psutil.Process().children(recursive=True) if p.is_running() and p.pid not in before]
    assert not left, left
    events_dir = next((result.run_dir / "units").glob("c0-coordinator-r0")) / "events"
    hosts = sorted(events_dir.glob("host*.jsonl"))
    assert [h.name for h in hosts] == ["host0.jsonl", "host1.jsonl"]
    hosted = {h.stem: {e["source"] for e in read_events(h) if e["kind"] == "ready"} for h in hosts}
    assert [len(v) for v in hosted.values()] == [2, 2]
    singles = {p.stem for p in events_dir.glob("m*.jsonl")}
    assert len(singles) == 2 and not singles & set().union(*hosted.values())
    for h in hosts:  # each hosted member joined and was assigned, in its own name
        events = read_events(h)
        for name in hosted[h.stem]:
            mine = [e for e in events if e["source"] == name]
            assert [e for e in mine if e["kind"] == "assigned"] and mine[-1]["kind"] == "stopped", name


@pytest.mark.slow
@pytest.mark.kafka
def test_the_consumer_group_protocol_on_apache_kafka_4_assigns_with_member_epochs(
    tmp_path: Path, java_member: dict[str, Path]
) -> None:
    """kafka-clients 4 with ``group.protocol=consumer`` (KIP-848) on Apache Kafka 4, through the member
    command with its typed defaults: the shorthands the client refuses under that protocol
    (session.timeout.ms, heartbeat.interval.ms, partition.assignment.strategy) are left out, the broker
    assigns, and each assignment carries the member epoch as its generation. A second member takes half;
    when it leaves, the first gets everything back."""
    from harness.cluster.apache_kafka import ApacheKafkaCluster
    from harness.cluster.kafka_dist import fetch

    home = fetch("4")
    with ApacheKafkaCluster(home.version, workdir=tmp_path / "kafka") as kafka:
        admin = KafkaAdminClient(bootstrap_servers=kafka.bootstrap)
        try:
            admin.create_topics([NewTopic("t", PARTITIONS, 1)])
        finally:
            admin.close()
        members: dict[str, MemberService] = {}

        def start(name: str) -> None:
            history = tmp_path / f"{name}.jsonl"
            argv = [*PY, "member", "coordinator", "--client", "java", "--client-version", "4"]
            argv += ["--bootstrap", kafka.bootstrap, "--group", "g", "--topic", "t", "--name", name]
            argv += ["--history", str(history), "-X", "group.protocol=consumer"]
            members[name] = MemberService(name, argv, history, tmp_path / f"{name}.log").start(timeout=60)

        def owned(name: str) -> set[int]:
            history = tmp_path / f"{name}.jsonl"
            return _owned(read_events(history)) if history.exists() else set()

        try:
            start("a")
            wait_until(lambda: owned("a") == set(range(PARTITIONS)), timeout=60, what="a owning everything")
            start("b")
            wait_until(
                lambda: owned("b") and owned("a") == set(range(PARTITIONS)) - owned("b"),
                timeout=60,
                what="a and b sharing the partitions",
            )
            b = members.pop("b")
            b.signal(signal.SIGTERM, group=False)
            assert b.wait(60) == 0, b.log_tail()
            b.stop()
            wait_until(lambda: owned("a") == set(range(PARTITIONS)), timeout=60, what="a after b left")
        finally:
            for m in members.values():
                m.stop()
    events = read_events(tmp_path / "a.jsonl")
    (started,) = _kinds(events, "started")
    assert started["effective"]["group.protocol"] == "consumer"
    assert not {"session.timeout.ms", "heartbeat.interval.ms", "partition.assignment.strategy"} & set(
        started["effective"]
    )
    epochs = [e["generation"] for e in _kinds(events, "rebalance_end")]
    assert epochs == sorted(epochs) and epochs[0] >= 1, epochs
    assert {e["member"] for e in _kinds(events, "assigned")} != {""}
