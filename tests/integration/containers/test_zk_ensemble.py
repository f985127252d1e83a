"""A ZooKeeper ensemble of three containers on a real Docker engine: one leader, a
leader kill or pause elects another while a client keeps its session, the nemesis's ZooKeeper-leader
actions work on the containers cluster unchanged, and nothing is left behind (after a failed or an
interrupted start too)."""

from __future__ import annotations

import os
import signal
import socket
import subprocess
import sys
import time
import uuid
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import pytest
from kazoo.client import KazooClient, KazooState

from harness.cluster import engine as engine_mod
from harness.cluster.container_ensemble import ZooKeeperEnsembleContainers
from harness.cluster.containers import ContainersCluster
from harness.cluster.engine import SESSION
from harness.cluster.zookeeper import QUORUM_INIT_LIMIT, QUORUM_SYNC_LIMIT
from harness.faults.actions import nemesis_for
from harness.faults.nemesis import ActionPair
from harness.images import ImageNames
from harness.kernel.errors import Unreachable
from harness.run.plan import Step
from tests.support.containers import IMAGE_PREFIX, started_herdlab
from tests.support.waiting import wait_until

pytestmark = pytest.mark.containers

TICK_MS = 200


def _ours(engine: Any) -> list[Any]:
    """This process's containers (any state)."""
    return list(
        engine.containers.list(all=True, ignore_removed=True, filters={"label": f"herdlab.session={SESSION}"})
    )


@pytest.fixture
def ensemble(images: ImageNames, baseline: Any, tmp_path: Path) -> Iterator[ZooKeeperEnsembleContainers]:
    zk = ZooKeeperEnsembleContainers(
        images.zookeeper,
        n=3,
        tick_time_ms=TICK_MS,
        workdir=tmp_path / "zk",
        labels={"herdlab.run": "test-run", "herdlab.unit": "u0"},
        name="zkens-test",
    )
    with zk:
        yield zk


def _client(zk: ZooKeeperEnsembleContainers, timeout: float = 10.0) -> KazooClient:
    c = KazooClient(hosts=zk.connect_string, timeout=timeout)
    c.start(timeout=15)
    return c


def test_three_containers_serve_one_ensemble_with_one_leader_and_a_session_survives_a_leader_kill(
    ensemble: ZooKeeperEnsembleContainers, engine: Any, tmp_path: Path
) -> None:
    # three containers, host network, one per server, each with its own data directory and myid
    ours = [c for c in _ours(engine) if c.labels.get("herdlab.role") == "zookeeper"]
    assert len(ours) == 3
    assert all(c.attrs["HostConfig"]["NetworkMode"] == "host" for c in ours)
    for i in range(3):
        assert (tmp_path / f"zk/zk-{i}/data/myid").read_text().strip() == str(i + 1)
    ports = [port for p in ensemble.peers for port in (p.client_port, p.quorum_port, p.election_port)]
    assert len(set(ports)) == 9
    assert ensemble.connect_string == ",".join(f"127.0.0.1:{p.client_port}" for p in ensemble.peers)

    modes = [p.mode() for p in ensemble.peers]
    assert sorted(m or "" for m in modes) == ["follower", "follower", "leader"]
    old = ensemble.leader()
    assert old == modes.index("leader")

    c = _client(ensemble)
    states: list[KazooState] = []
    c.add_listener(states.append)
    session = c.client_id[0]
    path = f"/kill-{uuid.uuid4().hex[:8]}"
    try:
        c.create(path, b"e", ephemeral=True)
        before = ensemble.mntr()["zk_packets_received"]
        ensemble.kill_server(old)
        assert ensemble.peers[old].status() == "exited" and old in ensemble.down
        new = ensemble.wait_leader(15, not_in=(old,))
        assert new != old
        # the client moves to a survivor within its session timeout: same session, ephemeral kept
        wait_until(lambda: c.exists(path) is not None, 15, what="the ephemeral through a survivor")
        assert c.client_id[0] == session
        assert KazooState.LOST not in states
        assert ensemble.mntr()["zk_packets_received"] >= before  # the killed server's counters carried
        # docker start of the same container: it rejoins the quorum as a follower of the new leader
        ensemble.start_server(old)
        assert ensemble.peers[old].mode() == "follower" and ensemble.leader() == new
        assert ensemble.mntr()["servers"] == 3
    finally:
        c.stop()
        c.close()


def test_a_paused_leader_is_replaced_within_the_election_bound_and_rejoins_as_follower(
    ensemble: ZooKeeperEnsembleContainers,
) -> None:
    old = ensemble.leader()
    assert old is not None
    # Worked out from the configuration: a follower reads its leader with a timeout of syncLimit ticks
    # (5 x 200 ms = 1.0 s) and the leader pings every half tick, so a frozen leader is given up no
    # sooner than 0.9 s after it froze; the new leader then waits at most initLimit ticks
    # (20 x 200 ms = 4.0 s) for a quorum to sync, and the election's vote exchange on loopback takes
    # well under a second: 1.0 + 4.0 + 1.0 = 6.0 s at most.
    sooner = (QUORUM_SYNC_LIMIT - 1) * TICK_MS / 1000
    bound = (QUORUM_SYNC_LIMIT + QUORUM_INIT_LIMIT) * TICK_MS / 1000 + 1.0
    assert (sooner, bound) == (0.8, 6.0)
    t0 = time.monotonic()
    ensemble.pause(old)
    assert ensemble.peers[old].status() == "paused" and old in ensemble.paused
    new = ensemble.wait_leader(bound, not_in=(old,))
    elected = time.monotonic() - t0
    assert new != old
    assert sooner <= elected <= bound
    ensemble.resume(old)
    assert ensemble.peers[old].status() == "running" and not ensemble.paused
    wait_until(lambda: ensemble.peers[old].mode() == "follower", 15, what="the old leader rejoins")
    assert ensemble.leader() == new


def test_stop_removes_every_server_even_a_paused_and_a_killed_one(engine: Any, images: ImageNames) -> None:
    before = {c.name for c in _ours(engine)}
    zk = ZooKeeperEnsembleContainers(images.zookeeper, n=3, tick_time_ms=TICK_MS, name="zkens-hygiene")
    zk.start()
    names = {p.box.name for p in zk.peers if p.box is not None}
    workdir = zk.workdir
    assert len(names) == 3 and names <= {c.name for c in _ours(engine)}
    assert workdir is not None and workdir.exists()
    zk.pause(0)
    zk.kill_server(1)
    zk.stop()
    zk.stop()  # idempotent
    assert {c.name for c in _ours(engine)} == before
    assert not workdir.exists()  # a temporary work directory goes too


def test_a_start_that_fails_removes_every_container_and_keeps_each_log(
    engine: Any, images: ImageNames, tmp_path: Path
) -> None:
    before = {c.name for c in _ours(engine)}
    # a 1 MiB heap below the image's 32 MiB initial heap: every JVM refuses to start and exits
    zk = ZooKeeperEnsembleContainers(
        images.zookeeper, n=3, tick_time_ms=TICK_MS, workdir=tmp_path / "zk", heap_mb=1, name="zkens-fail"
    )
    with pytest.raises(Unreachable) as info:
        zk.start(timeout=60)
    why = str(info.value)
    assert all(f"--- zkens-fail-{i} " in why for i in range(3))  # every server's log tail
    assert {c.name for c in _ours(engine)} == before
    # each log is saved; those of the servers seen exited say why (the others may have been removed
    # before their JVM wrote anything: the start gives up as soon as one server exits)
    logs = [(tmp_path / f"zk/zk-{i}/zookeeper.log") for i in range(3)]
    assert all(log.exists() for log in logs)
    exited = [i for i in range(3) if f"zkens-fail-{i} is exited (exit code 1)" in why]
    assert exited
    for i in exited:
        assert "Initial heap size set to a larger value than the maximum heap size" in logs[i].read_text()


def test_an_interrupted_start_removes_the_containers_already_started(
    engine: Any, images: ImageNames, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Ctrl-C while the third container is being created: the two that run are removed."""
    before = {c.name for c in _ours(engine)}
    real_start = engine_mod.Box.start
    started: list[str] = []

    def start(box: engine_mod.Box) -> engine_mod.Box:
        if len(started) == 2:
            raise KeyboardInterrupt
        started.append(box.name)
        return real_start(box)

    monkeypatch.setattr(engine_mod.Box, "start", start)
    zk = ZooKeeperEnsembleContainers(images.zookeeper, n=3, tick_time_ms=TICK_MS, name="zkens-interrupt")
    with pytest.raises(KeyboardInterrupt):
        zk.start()
    assert len(started) == 2
    assert {c.name for c in _ours(engine)} == before


#: A herdlab process holding a containers cluster with an ensemble until it is interrupted.
_HOLD = """
import sys, threading
from pathlib import Path
from harness.cluster.containers import ContainersCluster
from harness.images import image_names
from harness.procs import install_signal_handlers
install_signal_handlers()
with ContainersCluster(brokers=0, tick_time_ms=200, images=image_names(sys.argv[1]), zookeeper_servers=3) as c:
    Path(sys.argv[2]).write_text(c.zookeeper_connect)
    threading.Event().wait()
"""


# Python ends on an uncaught KeyboardInterrupt by SIGINT (-2) after its cleanup; SIGTERM is SystemExit(143).
@pytest.mark.parametrize(("how", "status"), [("ctrl-c", -2), ("sigterm", 143), ("sigkill", -9)])
def test_an_interrupted_herdlab_leaves_no_server_container(
    tmp_path: Path, engine: Any, baseline: Any, how: str, status: int
) -> None:
    """Ctrl-C and SIGTERM: the process removes the three containers itself; SIGKILL: its reaper does."""
    up = tmp_path / "up"
    p = subprocess.Popen(
        [sys.executable, "-c", _HOLD, IMAGE_PREFIX, str(up)],
        stdout=subprocess.DEVNULL,
        stderr=subprocess.PIPE,
        start_new_session=True,
    )
    started_herdlab(p.pid)
    owner = f"{socket.gethostname()}:{p.pid}"

    def owned() -> list[Any]:
        return list(
            engine.containers.list(all=True, ignore_removed=True, filters={"label": f"herdlab.owner={owner}"})
        )

    try:
        wait_until(lambda: up.exists() or p.poll() is not None, 120, what="the ensemble up")
        assert p.poll() is None, p.stderr.read() if p.stderr else ""
        assert len(up.read_text().split(",")) == 3 and len(owned()) == 3
        sig = {"ctrl-c": signal.SIGINT, "sigterm": signal.SIGTERM, "sigkill": signal.SIGKILL}[how]
        os.killpg(p.pid, sig) if how == "ctrl-c" else p.send_signal(sig)
        assert p.wait(60) == status
        if how == "sigkill":
            wait_until(lambda: not owned(), 60, what="the reaper to remove the server containers")
        else:
            assert not owned()  # removed by the process itself before it exited
    finally:
        if p.poll() is None:
            p.kill()
            p.wait(10)


@dataclass
class _Context:
    """The part of a unit's NemesisContext the ZooKeeper-leader actions use, on the real clock."""

    cluster: ContainersCluster
    impl: str = "legacy_zk"
    unit_key: str = "u0-legacy_zk-r0"
    events: list[dict[str, Any]] = field(default_factory=list)

    def wait(self, seconds: float, until: Callable[[], bool] | None = None) -> bool:
        deadline = time.monotonic() + seconds
        while True:
            if until is not None and until():
                return True
            if time.monotonic() >= deadline:
                return False
            time.sleep(0.05)  # polling the ensemble's state, as the runner's context does

    def time_ns(self) -> int:
        return time.time_ns()

    def emit(self, kind: str, **fields: Any) -> None:
        self.events.append({"kind": kind, **fields})

    def close(self) -> None:
        pass


def _perform(step: Step, ctx: _Context) -> dict[str, Any]:
    """Run the real nemesis of ``step`` on ``ctx``; its ``complete`` event."""
    n = len(ctx.events)
    nemesis_for(step).run(ActionPair(step, n + 1, ctx, time.time_ns, {"impl": ctx.impl}), ctx)  # type: ignore[arg-type]
    kinds = [e["kind"] for e in ctx.events[n:]]
    assert kinds == ["invoke", "complete"], ctx.events[n:]
    return ctx.events[-1]


def test_a_containers_cluster_of_three_zookeeper_servers_takes_the_zk_leader_faults(
    images: ImageNames, baseline: Any, tmp_path: Path
) -> None:
    """``zookeeper_servers=3``: the broker gets every server, ``describe()`` shows each mode, and the
    nemesis's kill_zk_leader / restart_zk_server / pause_zk_leader / resume_zk_server act on the
    containers; the broker's registration survives both leader faults."""
    cluster = ContainersCluster(
        brokers=1,
        tick_time_ms=TICK_MS,
        workdir=tmp_path / "cluster",
        images=images,
        broker_args=("--group-initial-rebalance-delay-ms", "0"),
        labels={"herdlab.run": "test-run", "herdlab.unit": "u0"},
        zookeeper_servers=3,
    )
    with cluster:
        ensemble = cluster.zookeeper_ensemble
        assert ensemble is not None and len(ensemble.peers) == 3
        assert cluster.zookeeper_connect == ensemble.connect_string
        assert len(cluster.zookeeper_connect.split(",")) == 3
        broker = cluster.brokers[0]
        assert broker.zookeeper == cluster.zookeeper_connect  # the broker was given all three
        zk_lines = [h for h in cluster.describe() if h.name.startswith("u0-zookeeper-")]
        assert sorted(h.extra["mode"] for h in zk_lines) == ["follower", "follower", "leader"]
        assert all(h.healthy for h in cluster.describe())
        mntr = cluster.zk_mntr()
        assert mntr is not None and mntr["servers"] == 3 and mntr["leader"] == ensemble.leader()

        c = KazooClient(hosts=cluster.zookeeper_connect, timeout=10.0)
        c.start(timeout=15)
        try:
            wait_until(lambda: c.exists("/brokers/ids/0") is not None, 15, what="the broker registered")
            owner = c.exists("/brokers/ids/0").ephemeralOwner
            ctx = _Context(cluster)
            killed = _perform(Step.of(1.0, "kill_zk_leader", value=2.0), ctx)
            assert killed["old_leader"] != killed["new_leader"] == ensemble.leader()
            assert ensemble.peers[killed["old_leader"]].status() == "exited"
            restarted = _perform(Step.of(3.0, "restart_zk_server"), ctx)
            assert restarted["server"] == killed["old_leader"] and not ensemble.down
            paused = _perform(Step.of(5.0, "pause_zk_leader", value=2.0), ctx)
            assert paused["old_leader"] == killed["new_leader"] != paused["new_leader"]
            down = [h for h in cluster.describe() if h.name == f"u0-zookeeper-{paused['old_leader']}"]
            assert [(h.extra["mode"], h.healthy) for h in down] == [("paused", False)]
            resumed = _perform(Step.of(7.0, "resume_zk_server"), ctx)
            assert resumed["server"] == paused["old_leader"] and not ensemble.paused
            # the broker's ZooKeeper session outlived both leader faults: the same registration
            # the test's own client may be reconnecting after the resumed leader (ConnectionLoss): kazoo's
            # retry waits for its reconnection instead of failing the predicate
            wait_until(
                lambda: c.retry(c.exists, "/brokers/ids/0") is not None, 15, what="the broker registered"
            )
            assert c.retry(c.exists, "/brokers/ids/0").ephemeralOwner == owner
        finally:
            c.stop()
            c.close()
    assert (tmp_path / "cluster/zookeeper/zk-0/zookeeper.log").read_text().strip()
