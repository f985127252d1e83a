"""The coordinator as a fault target on real processes: a local cluster of three brokers (no
replication: FindCoordinator answers offsets partition p mod live brokers), the nemesis classes run as
the runner runs them, the effect checked from outside (the process, ZooKeeper's ``/brokers/ids``, the
Kafka protocol). The tests share one cluster (each ends with its fault undone); the offsets tests come
last, the one that reads no commit before the one that commits."""

from __future__ import annotations

import socket
import time
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import psutil
import pytest
from kafka.admin import KafkaAdminClient, NewTopic
from kafka.protocol.consumer import OffsetCommitRequest
from kazoo.client import KazooClient

from coordinator.rawclient import RawClient
from harness.cluster.local import LocalCluster
from harness.faults.actions import nemesis_for
from harness.faults.kafka_probe import fetch_offsets, find_coordinator
from harness.faults.nemesis import ActionPair
from harness.kernel.javacompat import partition_for
from harness.run.plan import Step
from tests.support.recording import RecordingHistory as Recorded
from tests.support.waiting import wait_until

# failover: opt-in (CI runs it in its migration-or-failover step), keeping the default run under 12 minutes
pytestmark = [pytest.mark.slow, pytest.mark.failover]

GROUP = "herd-group"


@dataclass
class LiveContext:
    """A NemesisContext on the real cluster and the wall clock (no members)."""

    cluster: LocalCluster
    impl: str = "coordinator"
    unit_key: str = "c0-coordinator-r0"
    logs_dir: Path = Path("/logs")
    stable_timeout: float = 30.0
    topic: str = "herd"
    group: str = GROUP
    proxies: None = None
    members: dict[str, Any] = field(default_factory=dict)

    def start_member(self, name: str, kind: str | None = None, props: Any = None) -> None:
        raise AssertionError("no member here")

    def frozen(self, member: Any) -> bool:
        return False

    def wait(self, seconds: float, until: Callable[[], bool] | None = None) -> bool:
        deadline = time.monotonic() + seconds
        while time.monotonic() < deadline:
            if until is not None and until():
                return True
            time.sleep(0.05)
        return until() if until is not None else True

    def ready_ns(self, name: str) -> int:
        return 0

    def registration(self, name: str) -> tuple[int, str] | None:
        return None

    def time_ns(self) -> int:
        return time.time_ns()

    def coordinator(self, timeout: float) -> int | None:
        return find_coordinator(self.cluster.bootstrap, self.group, timeout)


def _perform(kind: str, ctx: LiveContext, value: float | None = None) -> list[dict[str, Any]]:
    step = Step.of(0.0, kind, value=value)
    history = Recorded()
    nemesis_for(step).run(ActionPair(step, 1, history, ctx.time_ns, {"impl": ctx.impl}), ctx)
    assert [e["kind"] for e in history.events] == ["invoke", "complete"], history.events
    return history.events


@pytest.fixture(scope="module")
def shared_cluster(tmp_path_factory: pytest.TempPathFactory) -> Iterator[LocalCluster]:
    """One cluster for the module: each test undoes its fault (restart, resume, heal) before it ends,
    and the ``cluster`` fixture waits until the three brokers serve as one again."""
    workdir = tmp_path_factory.mktemp("coordinator-faults") / "cluster"
    with LocalCluster(brokers=3, tick_time_ms=200, workdir=workdir, broker_zookeeper_proxies=True) as c:
        yield c


@pytest.fixture
def cluster(shared_cluster: LocalCluster) -> LocalCluster:
    """The module's cluster with no fault in force and every broker seeing the other two (FindCoordinator's
    modulus is the live broker count): each one names the same coordinator, whichever broker a client
    asks first."""
    c = shared_cluster
    assert (c.brokers_down, c.brokers_paused, c.brokers_cut) == (set(), set(), set()), "a fault left in force"
    wait_until(lambda: _ids(c) == [0, 1, 2], 30, what="three registered brokers")
    want = _expected_coordinator([0, 1, 2])
    wait_until(
        lambda: all(find_coordinator(b.bootstrap, GROUP, 2) == want for b in c.brokers),
        30,
        what="every broker to see the other two",
    )
    return c


def _ids(c: LocalCluster) -> list[int]:
    zk = KazooClient(hosts=c.zookeeper_connect, timeout=10.0)
    zk.start(timeout=15)
    try:
        return sorted(int(i) for i in zk.get_children("/brokers/ids"))
    finally:
        zk.stop()
        zk.close()


def _expected_coordinator(live: list[int]) -> int:
    """The broker that coordinates GROUP without replication: offsets partition p led by the
    (p mod n)-th live broker in id order (coordinator/cluster.py)."""
    return live[partition_for(GROUP, 50) % len(live)]


def _answers(c: LocalCluster, broker_id: int) -> bool:
    """Whether broker ``broker_id`` itself answers FindCoordinator now."""
    return find_coordinator(c.brokers[broker_id].bootstrap, GROUP, 1.0) is not None


def test_kill_coordinator_kills_the_named_broker_and_restart_brings_it_back_serving(
    cluster: LocalCluster,
) -> None:
    ctx = LiveContext(cluster)
    named = find_coordinator(cluster.bootstrap, GROUP, 10)
    assert named is not None and named == _expected_coordinator([0, 1, 2])
    killed = _perform("kill_coordinator", ctx, value=5.0)
    for e in killed:
        assert (e["broker_id"], e["offsets_partition"], e["group"]) == (
            named,
            partition_for(GROUP, 50),
            GROUP,
        )
    pid = cluster.brokers[named].process.pid
    assert not psutil.pid_exists(pid) or psutil.Process(pid).status() == psutil.STATUS_ZOMBIE
    assert cluster.brokers_down == {named}
    # the others stop naming it once its session expired (6 s): the coordinator moved
    others = sorted({0, 1, 2} - {named})
    moved = _expected_coordinator(others)
    wait_until(
        lambda: find_coordinator(cluster.bootstrap, GROUP, 2) == moved, 30, what="the coordinator to move"
    )
    restarted = _perform("restart_coordinator", ctx)
    assert [e["broker_id"] for e in restarted] == [named, named]
    assert cluster.brokers_down == set() and _answers(cluster, named)
    wait_until(lambda: _ids(cluster) == [0, 1, 2], 30, what="the restarted broker registered again")


def test_pause_coordinator_stops_the_named_broker_and_resume_continues_it(cluster: LocalCluster) -> None:
    ctx = LiveContext(cluster)
    named = find_coordinator(cluster.bootstrap, GROUP, 10)
    assert named is not None
    paused = _perform("pause_coordinator", ctx, value=8.0)
    assert paused[1]["broker_id"] == named
    assert psutil.Process(cluster.brokers[named].process.pid).status() == psutil.STATUS_STOPPED
    assert not _answers(cluster, named)  # a zombie: it holds its socket and answers nothing
    resumed = _perform("resume_coordinator", ctx)
    assert resumed[1]["broker_id"] == named and cluster.brokers_paused == set()
    assert psutil.Process(cluster.brokers[named].process.pid).status() != psutil.STATUS_STOPPED
    wait_until(lambda: _answers(cluster, named), 10, what="the resumed broker to answer")


def test_cut_coordinator_cuts_its_zookeeper_session_and_heal_re_registers_it(cluster: LocalCluster) -> None:
    ctx = LiveContext(cluster)
    named = find_coordinator(cluster.bootstrap, GROUP, 10)
    assert named is not None
    watcher = KazooClient(hosts=cluster.zookeeper_connect, timeout=10.0)
    watcher.start(timeout=15)
    try:
        path = f"/brokers/ids/{named}"
        registered = watcher.exists(path)
        assert registered is not None
        owner = registered.ephemeralOwner
        cut = _perform("cut_coordinator", ctx, value=10.0)
        assert cut[1]["broker_id"] == named and cluster.brokers_cut == {named}
        # the broker's session expires at the server (6 s) and its ephemeral registration goes
        wait_until(lambda: watcher.exists(path) is None, 20, what="the cut broker's registration to go")
        assert _answers(cluster, named)  # the process itself runs on: only ZooKeeper is cut
        healed = _perform("heal_coordinator", ctx)
        assert healed[1]["broker_id"] == named and cluster.brokers_cut == set()
        stat = wait_until(lambda: watcher.exists(path), 30, what="the healed broker to re-register")
        assert stat is not None and stat.ephemeralOwner != owner  # a new session
    finally:
        watcher.stop()
        watcher.close()


def test_offsets_of_a_group_with_no_commit_are_minus_one_from_its_coordinator(cluster: LocalCluster) -> None:
    answer = fetch_offsets(cluster.bootstrap, GROUP, "herd", 2, timeout=10)
    assert answer.error is None and answer.broker_id == _expected_coordinator([0, 1, 2])
    assert answer.offsets == {"herd/0": -1, "herd/1": -1}


def test_fetch_offsets_returns_what_the_coordinator_committed(cluster: LocalCluster) -> None:
    named = find_coordinator(cluster.bootstrap, GROUP, 10)
    assert named is not None
    coordinator = cluster.brokers[named]
    admin = KafkaAdminClient(bootstrap_servers=coordinator.bootstrap, client_id="herdlab-harness")
    try:
        admin.create_topics([NewTopic("herd", 2, 1)])
    finally:
        admin.close()
    parts = [
        OffsetCommitRequest.OffsetCommitRequestTopic.OffsetCommitRequestPartition(
            partition_index=p, committed_offset=offset, committed_metadata=""
        )
        for p, offset in ((0, 7), (1, 3))
    ]
    commit = OffsetCommitRequest(  # a simple commit: no generation, no member (an empty group)
        group_id=GROUP,
        generation_id_or_member_epoch=-1,
        member_id="",
        topics=[OffsetCommitRequest.OffsetCommitRequestTopic(name="herd", partitions=parts)],
    )
    with RawClient("127.0.0.1", coordinator.port) as raw:
        # the admin client creates the topic on the controller it reads from Metadata, possibly another
        # broker: the coordinator learns it through ZooKeeper (UNKNOWN_TOPIC_OR_PARTITION until then)
        wait_until(
            lambda: [p.error_code for p in raw.call(commit, 8).topics[0].partitions] == [0, 0],
            10,
            what="the coordinator to accept the commit",
        )
    answer = fetch_offsets(cluster.bootstrap, GROUP, "herd", 3, timeout=10)
    assert (answer.broker_id, answer.error) == (named, None)
    assert answer.offsets == {"herd/0": 7, "herd/1": 3, "herd/2": -1}


def test_fetch_offsets_with_no_broker_listening_gives_the_connection_error_in_time() -> None:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]  # closed again below: nothing listens there
    t0 = time.monotonic()
    answer = fetch_offsets(f"127.0.0.1:{port}", GROUP, "herd", 1, timeout=1.0)
    assert time.monotonic() - t0 < 3.0
    assert (answer.broker_id, answer.offsets, answer.error) == (None, {}, "ConnectionRefusedError")
