"""The ZooKeeper restart and the broker-ZooKeeper cut on the real local cluster, performed by their nemesis
as a run performs them:
``restart_zk`` (a kazoo client reconnects to the restarted server, its session and the data survive) and
``cut_broker_zk`` (the broker's registration goes when its session expires behind the cut, and comes back
once healed)."""

from __future__ import annotations

import time
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import pytest
from kazoo.client import KazooClient, KazooState

from harness.cluster.local import LocalCluster
from harness.cluster.zookeeper import ZooKeeperServer
from harness.faults.actions import nemesis_for
from harness.faults.nemesis import ActionPair
from harness.run.plan import Step
from tests.support.recording import RecordingHistory
from tests.support.waiting import wait_until


@dataclass
class RealContext:
    """The part of a unit's context these nemeses use: the real cluster and a real clock."""

    cluster: LocalCluster
    impl: str = "legacy_zk"
    unit_key: str = "c0-legacy_zk-r0"
    logs_dir: Path = Path(".")
    stable_timeout: float = 30.0
    topic: str = "herd"
    group: str = "g"
    members: dict[str, Any] = field(default_factory=dict)
    proxies: None = None

    def wait(self, seconds: float, until: Callable[[], bool] | None = None) -> bool:
        deadline = time.monotonic() + seconds
        while time.monotonic() < deadline:
            if until is not None and until():
                return True
            time.sleep(0.05)  # the nemesis's own downtime, not test synchronisation
        return until is None or until()

    def time_ns(self) -> int:
        return time.time_ns()


def _perform(step: Step, ctx: RealContext) -> list[dict[str, Any]]:
    history = RecordingHistory()
    nemesis_for(step).run(ActionPair(step, 1, history, ctx.time_ns, {}), ctx)  # type: ignore[arg-type]
    return history.events


@pytest.fixture
def client_states() -> list[str]:
    return []


def _client(connect: str, states: list[str]) -> KazooClient:
    zk = KazooClient(hosts=connect, timeout=10.0)
    zk.add_listener(lambda state: states.append(str(state)))
    zk.start(timeout=15)
    return zk


@pytest.fixture
def zookeeper_only(tmp_path: Path) -> Iterator[LocalCluster]:
    with LocalCluster(brokers=0, tick_time_ms=200, workdir=tmp_path) as c:
        yield c


def test_restart_zk_restarts_a_standalone_server_and_a_client_keeps_its_session_and_data(
    zookeeper_only: LocalCluster, client_states: list[str]
) -> None:
    zk = _client(zookeeper_only.zookeeper_connect, client_states)
    try:
        zk.create("/survives", b"kept")
        zk.create("/mine", b"", ephemeral=True)
        session = zk.client_id[0]  # pyright: ignore[reportOptionalSubscript]
        server = zookeeper_only.zookeeper
        assert isinstance(server, ZooKeeperServer)
        port = server.port
        before = server.mntr()["zk_packets_received"]
        ctx = RealContext(zookeeper_only)
        invoke, complete = _perform(Step.of(0.0, "restart_zk", value=0.5, extra={"server": 0}), ctx)
        assert (invoke["kind"], complete["kind"], complete["server"]) == ("invoke", "complete", 0)
        assert complete["restarted_s"] >= 0.5  # down for the downtime at least, then served again
        assert server.port == port  # the same port
        assert server.ready()
        assert KazooState.SUSPENDED in client_states, client_states  # the client saw the server go
        wait_until(lambda: zk.state == KazooState.CONNECTED, timeout=20, what="the client reconnected")
        # the same session: restored from the data directory (the states say how the client got there)
        assert zk.client_id[0] == session, client_states  # pyright: ignore[reportOptionalSubscript]
        assert zk.get("/survives")[0] == b"kept"  # pyright: ignore[reportOptionalSubscript]
        assert zk.exists("/mine") is not None  # its ephemeral with it
        after = server.mntr()["zk_packets_received"]
        assert isinstance(before, int) and isinstance(after, int) and after > before  # carried, not reset
    finally:
        zk.stop()
        zk.close()


@pytest.mark.long
def test_restart_zk_restarts_one_server_of_an_ensemble(tmp_path: Path, client_states: list[str]) -> None:
    with LocalCluster(brokers=0, tick_time_ms=200, workdir=tmp_path, zookeeper_servers=3) as cluster:
        zk = _client(cluster.zookeeper_connect, client_states)
        try:
            zk.create("/survives", b"kept")
            ensemble = cluster.zookeeper_ensemble
            assert ensemble is not None
            _, complete = _perform(
                Step.of(0.0, "restart_zk", value=0.5, extra={"server": 1}), RealContext(cluster)
            )
            assert (complete["kind"], complete["server"]) == ("complete", 1)
            assert ensemble.down == set() and ensemble.peers[1].ready()  # serving again
            wait_until(lambda: zk.state == KazooState.CONNECTED, timeout=20, what="the client connected")
            assert zk.get("/survives")[0] == b"kept"  # pyright: ignore[reportOptionalSubscript]
        finally:
            zk.stop()
            zk.close()


@pytest.mark.long
def test_cut_broker_zk_takes_the_brokers_registration_away_until_healed(tmp_path: Path) -> None:
    with LocalCluster(
        brokers=1, tick_time_ms=200, workdir=tmp_path, broker_zookeeper_proxies=True
    ) as cluster:
        zk = KazooClient(hosts=cluster.zookeeper_connect, timeout=10.0)
        zk.start(timeout=15)
        try:
            wait_until(
                lambda: zk.get_children("/brokers/ids") == ["0"], timeout=20, what="broker 0 registered"
            )
            ctx = RealContext(cluster)
            cut = _perform(Step.of(0.0, "cut_broker_zk", value=10.0, extra={"broker_id": 0}), ctx)
            assert [e["kind"] for e in cut] == ["invoke", "complete"] and cut[1]["broker_id"] == 0
            assert cluster.brokers_cut == {0}
            # the broker's session (6 s) expires behind the cut: its ephemeral registration goes
            wait_until(lambda: zk.get_children("/brokers/ids") == [], timeout=30, what="registration gone")
            heal = _perform(Step.of(10.0, "heal_broker_zk", extra={"broker_id": 0}), ctx)
            assert [e["kind"] for e in heal] == ["invoke", "complete"]
            assert cluster.brokers_cut == set()
            # it re-registers on a new session
            wait_until(lambda: zk.get_children("/brokers/ids") == ["0"], timeout=40, what="registered again")
        finally:
            zk.stop()
            zk.close()
