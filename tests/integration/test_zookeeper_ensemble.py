"""A real 3-server ZooKeeper ensemble: one leader, a leader kill or pause elects another, clients and
legacy members stay registered.

The default run keeps the ensemble's own checks (it serves, replicates and stops cleanly); the leader
faults (a kill, a pause, about 7 s each) are marked ``failover`` and run with the scenario runs under
leader faults in CI's failover step, so the default run stays under 12 minutes."""

from __future__ import annotations

import uuid
from collections.abc import Iterator
from pathlib import Path

import psutil
import pytest
from kazoo.client import KazooClient, KazooState

from harness.cluster.zookeeper import four_letter, parse_mntr
from harness.cluster.zookeeper_ensemble import ZooKeeperEnsemble
from harness.history.writer import HistoryWriter, read_events
from harness.kernel.errors import Unreachable
from harness.run.runner import RunOptions
from legacy_zk import paths
from legacy_zk.member import LegacyZkMember
from tests.support.legacy_zk import create_topic, fast_config, owners, registered, settled
from tests.support.waiting import wait_until
from tests.support.zk_leader_runs import assert_the_group_survived_the_leader_faults, run_leader_faults

pytestmark = pytest.mark.slow


@pytest.fixture
def ensemble() -> Iterator[ZooKeeperEnsemble]:
    with ZooKeeperEnsemble(n=3, tick_time_ms=200, name="zk-ensemble-test") as zk:
        yield zk


def _client(zk: ZooKeeperEnsemble, timeout: float = 10.0) -> KazooClient:
    c = KazooClient(hosts=zk.connect_string, timeout=timeout)
    c.start(timeout=15)
    return c


def test_ensemble_serves_with_one_leader_and_replicates(ensemble: ZooKeeperEnsemble) -> None:
    modes = [p.mode() for p in ensemble.peers]
    assert sorted(m or "" for m in modes) == ["follower", "follower", "leader"]
    assert ensemble.leader() == modes.index("leader")
    assert len(ensemble.connect_string.split(",")) == 3
    # a write through one server is read back through each of the others (one replicated tree)
    writer = KazooClient(hosts=ensemble.peers[0].address, timeout=10.0)
    writer.start(timeout=15)
    path = f"/rep-{uuid.uuid4().hex[:8]}"
    try:
        writer.create(path, b"x")
        for p in ensemble.peers[1:]:
            reader = KazooClient(hosts=p.address, timeout=10.0)
            reader.start(timeout=15)
            try:
                reader.sync(path)
                assert reader.get(path)[0] == b"x"
            finally:
                reader.stop()
                reader.close()
    finally:
        writer.stop()
        writer.close()

    # the herd's counters are the servers' summed: between two direct samples of every server
    def direct_sum() -> int:
        return sum(
            int(parse_mntr(four_letter(p.host, p.client_port, "mntr"))["zk_packets_received"])
            for p in ensemble.peers
        )

    low = direct_sum()
    m = ensemble.mntr()
    high = direct_sum()
    assert low <= m["zk_packets_received"] <= high and low > 0
    assert m["servers"] == 3 and m["leader"] == ensemble.leader()
    leader_port = ensemble.peers[m["leader"]].client_port
    assert m["zk_znode_count"] == parse_mntr(four_letter("127.0.0.1", leader_port, "mntr"))["zk_znode_count"]


@pytest.mark.failover  # a leader fault: with the failover runs (see the module docstring)
def test_a_leader_kill_elects_a_new_leader_and_a_client_keeps_its_session(
    ensemble: ZooKeeperEnsemble,
) -> None:
    old = ensemble.leader()
    assert old is not None
    c = _client(ensemble)
    states: list[KazooState] = []
    c.add_listener(states.append)
    session = c.client_id[0]
    path = f"/kill-{uuid.uuid4().hex[:8]}"
    try:
        c.create(path, b"e", ephemeral=True)
        before = ensemble.mntr()["zk_packets_received"]
        ensemble.kill_server(old)
        new = ensemble.wait_leader(15, not_in=(old,))
        assert new != old and not ensemble.peers[old].alive()
        # the client reconnects to a survivor within its session timeout: same session, ephemeral kept
        wait_until(lambda: c.exists(path) is not None, 15, what="the ephemeral through a survivor")
        assert c.client_id[0] == session
        assert KazooState.LOST not in states
        # the killed server's counters are carried: the herd's sum never goes backwards
        assert ensemble.mntr()["zk_packets_received"] >= before
        ensemble.start_server(old)
        assert ensemble.peers[old].mode() == "follower" and ensemble.leader() == new
        assert ensemble.mntr()["servers"] == 3
    finally:
        c.stop()
        c.close()


@pytest.mark.failover  # a leader fault: with the failover runs (see the module docstring)
def test_a_paused_leader_is_replaced_and_rejoins_as_follower_when_resumed(
    ensemble: ZooKeeperEnsemble,
) -> None:
    old = ensemble.leader()
    assert old is not None
    ensemble.pause(old)
    assert psutil.Process(ensemble.peers[old].process.pid).status() == psutil.STATUS_STOPPED
    new = ensemble.wait_leader(15, not_in=(old,))
    assert new != old
    ensemble.resume(old)
    wait_until(lambda: ensemble.peers[old].mode() == "follower", 15, what="the old leader rejoins")
    assert ensemble.leader() == new


def test_stop_leaves_no_server_behind() -> None:
    zk = ZooKeeperEnsemble(n=3, tick_time_ms=200, name="zk-ensemble-hygiene").start()
    pids = [p.process.pid for p in zk.peers if p.process is not None]
    workdir = zk.workdir
    assert len(pids) == 3 and workdir is not None and workdir.exists()
    zk.pause(0)
    zk.stop()
    zk.stop()  # idempotent
    assert not any(psutil.pid_exists(pid) and psutil.Process(pid).status() != "zombie" for pid in pids)
    assert not workdir.exists()


@pytest.mark.failover  # a leader fault: with the failover runs (see the module docstring)
def test_a_leader_kill_leaves_legacy_members_registered_or_reregistered(
    ensemble: ZooKeeperEnsemble, tmp_path: Path
) -> None:
    """Three 0.8 members on the ensemble; the ZooKeeper leader dies: every member is registered
    (its ids znode exists) and the owners cover every partition exactly once (the range answer)."""
    group, topic, partitions = f"g-{uuid.uuid4().hex[:8]}", f"t-{uuid.uuid4().hex[:8]}", 6
    admin = _client(ensemble)
    history_path = tmp_path / "history.jsonl"
    history = HistoryWriter(history_path, "tests")
    members: list[LegacyZkMember] = []
    try:
        create_topic(admin, topic, partitions)
        admin.create(
            paths.broker_path(9999), paths.encode_broker("127.0.0.1", 9, 0), ephemeral=True, makepath=True
        )
        for _ in range(3):
            # fast_config reads only ``connect_string``: the ensemble's lists every server
            config = fast_config(ensemble, group, {topic: 1})  # type: ignore[arg-type]
            m = LegacyZkMember(config, history=history)
            members.append(m)
            m.start()
        wait_until(lambda: settled(admin, group, topic, 3), 30, what="3 members settle")
        old = ensemble.leader()
        assert old is not None
        seen = len(read_events(history_path))
        ensemble.kill_server(old)
        ensemble.wait_leader(15, not_in=(old,))

        def disconnected() -> set[str]:
            return {
                e["member"]
                for e in read_events(history_path)[seen:]
                if e["kind"] == "zk_state" and e["state"] == KazooState.SUSPENDED
            }

        # the leader's loss reached every member: a follower that loses its leader closes every client
        # connection (ZooKeeper's Learner.shutdown: closeAllConnections) until a new leader is elected
        wait_until(lambda: disconnected() == {m.id for m in members}, 15, what="every member disconnected")
        wait_until(lambda: settled(admin, group, topic, 3), 30, what="3 members registered after the kill")
        ids = registered(admin, group)
        assert len(ids) == 3 and all(admin.exists(paths.id_path(group, i)) for i in ids)
        assert sorted(owners(admin, group, topic)) == list(range(partitions))  # one owner each
    finally:
        for m in members:
            m.quiesce()
        for m in members:
            m.close()
        history.close()
        admin.stop()
        admin.close()


@pytest.mark.failover  # a scenario run each (about 20 s): opt-in, CI runs it in a step of its own
@pytest.mark.parametrize("impl", ["legacy_zk", "coordinator"])
def test_a_run_with_three_zookeeper_servers_survives_a_leader_kill_and_a_leader_pause(
    tmp_path: Path, impl: str
) -> None:
    """``herd`` with ``zookeeper.servers=3``: the nemesis kills the ZooKeeper leader, restarts it, pauses
    the new leader and resumes it; each fault completes with a different new leader, the group ends
    settled and every produced record was processed."""
    _, unit, events = run_leader_faults(impl, RunOptions(out=tmp_path))
    assert_the_group_survived_the_leader_faults(unit, events)


def test_an_ensemble_not_ready_in_time_is_unreachable_with_every_log_tail_and_leaves_nothing(
    tmp_path: Path,
) -> None:
    zk = ZooKeeperEnsemble(n=3, tick_time_ms=200, workdir=tmp_path / "zk", name="zk-ensemble-late")
    with pytest.raises(Unreachable) as info:
        zk.start(timeout=0.0)
    message = str(info.value)
    assert message.startswith("ZooKeeper ensemble zk-ensemble-late not ready after 0s")
    assert all(f"--- zk-ensemble-late-{i} (127.0.0.1:" in message for i in range(3))
    assert all(p.process is not None and not p.process.alive() for p in zk.peers)
    assert (tmp_path / "zk" / "zk-2" / "data" / "myid").read_text() == "3\n"  # a given workdir stays
