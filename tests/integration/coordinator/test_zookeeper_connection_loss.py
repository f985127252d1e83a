"""The ZooKeeper shell under lost connections, against a real ZooKeeper.

A lost connection is provoked in two ways: :class:`FlakyClient`, a thin wrapper around the real kazoo client that
raises ``ConnectionLoss`` on chosen calls, either before sending the request (it did not land) or after it
returned (it landed, the answer was lost); or a :class:`harness.faults.proxy.ProxyHost` proxy between the shell and
ZooKeeper, cut with its connections dropped (ZooKeeper unreachable).
"""

from __future__ import annotations

import contextlib
import json
import threading
import time
from collections.abc import Iterator
from dataclasses import dataclass
from typing import Any

import pytest
from kazoo.client import KazooClient, KazooState
from kazoo.exceptions import ConnectionLoss

from coordinator.cluster import ClusterView
from coordinator.config import BrokerConfig, ReplicationConfig
from coordinator.topics import TopicStore
from coordinator.zookeeper.controller import Controller
from coordinator.zookeeper.registration import ZkRegistration
from harness.cluster.zookeeper import ZooKeeperServer
from harness.faults.proxy import ProxyHost, TcpProxy
from tests.support.controller_rig import (
    LoopThread,
    RecordingHistory,
    RecordingSink,
    Rig,
    make_rig,
)
from tests.support.waiting import wait_until

BEFORE = "before"  # ConnectionLoss without sending: the request did not land
AFTER = "after"  # the request landed, then ConnectionLoss: the answer was lost


class FlakyClient:
    """A KazooClient stand-in that delegates everything to ``real`` except that ``create`` / ``set`` / ``delete``
    / ``get`` on a path listed in :attr:`faults` consume one mode of that list each call: :data:`BEFORE` raises
    ``ConnectionLoss`` without calling ZooKeeper, :data:`AFTER` calls it and then raises, a callable is called and
    then the request goes out normally. :attr:`injected` records ``(op, path, mode)`` of every injected fault."""

    def __init__(self, real: KazooClient) -> None:
        self._real = real
        self.faults: dict[tuple[str, str], list[Any]] = {}
        self.injected: list[tuple[str, str, Any]] = []
        self._lock = threading.Lock()

    def __getattr__(self, name: str) -> Any:
        return getattr(self._real, name)

    def _call(self, op: str, path: str, *args: Any, **kwargs: Any) -> Any:
        with self._lock:
            modes = self.faults.get((op, path))
            mode = modes.pop(0) if modes else None
            if mode is not None:
                self.injected.append((op, path, mode))
        if mode == BEFORE:
            raise ConnectionLoss()
        if callable(mode):
            mode()
        result = getattr(self._real, op)(path, *args, **kwargs)
        if mode == AFTER:
            raise ConnectionLoss()
        return result

    def create(self, path: str, *args: Any, **kwargs: Any) -> Any:
        return self._call("create", path, *args, **kwargs)

    def get(self, path: str, *args: Any, **kwargs: Any) -> Any:
        return self._call("get", path, *args, **kwargs)

    def set(self, path: str, *args: Any, **kwargs: Any) -> Any:
        return self._call("set", path, *args, **kwargs)

    def delete(self, path: str, *args: Any, **kwargs: Any) -> Any:
        return self._call("delete", path, *args, **kwargs)


@pytest.fixture
def rig(zookeeper: ZooKeeperServer) -> Iterator[Rig]:
    r = make_rig(zookeeper.connect_string)
    yield r
    r.stop()


@pytest.fixture
def controller_client(rig: Rig) -> Iterator[FlakyClient]:
    """A started kazoo client on the rig's chroot (with ``/brokers/ids`` and ``/brokers/topics``), wrapped."""
    rig.admin.ensure_path("/brokers/ids")
    rig.admin.ensure_path("/brokers/topics")
    real = KazooClient(hosts=rig.connect)
    real.start(timeout=15)
    yield FlakyClient(real)
    real.stop()
    real.close()


def run_controller(client: FlakyClient, history: RecordingHistory) -> Controller:
    controller = Controller(client, 1, ReplicationConfig(enabled=True), history)  # type: ignore[arg-type]
    controller.start()
    return controller


def assert_sole_controller_of_epoch_1(rig: Rig, controller: Controller, history: RecordingHistory) -> None:
    wait_until(lambda: controller.controller_epoch == 1, 15, what="broker 1 controller of epoch 1")
    assert json.loads(rig.admin.get("/controller")[0])["brokerid"] == 1
    assert rig.admin.get("/controller_epoch")[0] == b"1"
    controller.wait_idle()
    assert [(e["broker_id"], e["controller_epoch"]) for e in history.of("controller", phase="elected")] == [
        (1, 1)
    ]


@pytest.mark.parametrize("mode", [BEFORE, AFTER])
def test_a_connection_loss_while_creating_the_controller_znode_still_ends_with_a_controller(
    rig: Rig, controller_client: FlakyClient, mode: str
) -> None:
    # BEFORE, nothing landed and no watch fires again; AFTER, /controller is ours but no epoch was
    # taken. Either way the broker must end as the controller of epoch 1 (0.9 elect: catch, resign, re-elect).
    controller_client.faults[("create", "/controller")] = [mode]
    history = RecordingHistory(stamp=True)
    controller = run_controller(controller_client, history)
    try:
        assert_sole_controller_of_epoch_1(rig, controller, history)
        assert controller_client.injected == [("create", "/controller", mode)]
    finally:
        controller.stop()
        controller.join()


def make_shell(connect: str, broker_id: int, replicated: bool) -> tuple[ZkRegistration, LoopThread]:
    """An unstarted ZooKeeper shell (registration writes port 20000 + id; nothing listens there)."""
    cfg = BrokerConfig(
        broker_id=broker_id,
        zookeeper=connect,
        offsets_partitions=4,
        replication=ReplicationConfig(enabled=replicated),
    )
    loop = LoopThread()
    cluster = ClusterView(broker_id, 4, replicated=replicated)
    zk = ZkRegistration(
        cfg,
        TopicStore(None),
        cluster,
        20000 + broker_id,
        loop.loop,
        sink=RecordingSink() if replicated else None,
        history=RecordingHistory(stamp=True),
    )
    return zk, loop


@pytest.mark.parametrize("replicated", [False, True])
def test_a_reregistration_that_loses_its_connection_is_retried(rig: Rig, replicated: bool) -> None:
    # after a session expiry, the re-registration's create fails twice with ConnectionLoss; the broker
    # must still end registered (0.9 ZkClient.retryUntilConnected)
    zk, loop = make_shell(rig.connect, 7, replicated)
    flaky = FlakyClient(zk.client)
    zk.client = flaky  # type: ignore[assignment]
    zk.start()
    try:
        assert rig.admin.exists("/brokers/ids/7") is not None
        flaky.faults[("create", "/brokers/ids/7")] = [BEFORE, BEFORE]
        client_id = flaky.client_id
        thief = KazooClient(hosts=rig.connect, client_id=client_id)
        thief.start(timeout=15)
        thief.stop()
        thief.close()
        wait_until(lambda: len(flaky.injected) == 2, 20, what="both injected losses")
        wait_until(lambda: rig.admin.exists("/brokers/ids/7"), 20, what="broker 7 registered again")
        _, stat = rig.admin.get("/brokers/ids/7")
        assert stat.ephemeralOwner == flaky.client_id[0]  # on the broker's new session
    finally:
        zk.stop()
        loop.close()


@dataclass
class Cut:
    """A started broker shell (``zk``, its ``loop``) that reaches ZooKeeper only through ``proxy`` (named "zk"
    in ``proxies``), on the chroot of ``rig``."""

    rig: Rig
    proxies: ProxyHost
    proxy: TcpProxy
    zk: ZkRegistration
    loop: LoopThread


@contextlib.contextmanager
def _behind_a_proxy(zookeeper: ZooKeeperServer, broker_id: int, replicated: bool) -> Iterator[Cut]:
    """A broker shell started behind a proxy to ``zookeeper``; afterwards the proxy restored, the shell
    stopped (unless the test stopped it), its loop closed and the rig stopped."""
    rig = make_rig(zookeeper.connect_string)
    chroot = rig.connect[len(zookeeper.connect_string) :]
    host, port = zookeeper.connect_string.split(":")
    with ProxyHost() as proxies:
        proxy = proxies.add((host, int(port)), name="zk")
        zk, loop = make_shell(proxy.address + chroot, broker_id, replicated=replicated)
        zk.start()
        try:
            yield Cut(rig, proxies, proxy, zk, loop)
        finally:
            proxies.restore("zk")
            if not zk.client._stopped.is_set():  # noqa: SLF001
                zk.stop()
            loop.close()
            rig.stop()


def test_stop_returns_while_zookeeper_is_unreachable_with_a_request_pending(
    zookeeper: ZooKeeperServer,
) -> None:
    # ZooKeeper cut off (connections dropped, reconnects refused) while the shell's ZooKeeper thread
    # waits on a request; stop must still return, failing that request
    with _behind_a_proxy(zookeeper, 8, replicated=True) as c:
        zk = c.zk
        assert zk.controller is not None
        wait_until(lambda: zk.controller is not None and zk.controller.controller_epoch, 15, what="elected")
        states: list[str] = []
        zk.client.add_listener(states.append)
        c.proxies.cut("zk", drop=True)
        wait_until(lambda: KazooState.SUSPENDED in states, 15, what="connection lost")
        # a FindCoordinator with no offsets topic asks the shell to create it: a ZooKeeper request that waits
        assert zk.cluster.on_missing_offsets_topic is not None
        c.loop.call(zk.cluster.on_missing_offsets_topic)
        stopper = threading.Thread(target=zk.stop, daemon=True)
        stopper.start()
        stopper.join(20)
        assert not stopper.is_alive(), "stop hung while ZooKeeper was unreachable"


def test_a_controller_whose_session_expires_mid_decision_writes_nothing_under_the_new_session(
    rig: Rig, controller_client: FlakyClient
) -> None:
    # the session expires between the read and the write of a decision; the resignation is queued
    # behind the decision, and kazoo would send the write on its new session: nothing of epoch 1 may be written
    real = controller_client._real  # noqa: SLF001
    real.create(
        "/brokers/ids/1", b"{}", ephemeral=True
    )  # broker 1's registration, on the controller's session
    rig.admin.create("/brokers/ids/2", b"{}", ephemeral=True)
    history = RecordingHistory(stamp=True)
    controller = run_controller(controller_client, history)
    try:
        wait_until(lambda: controller.controller_epoch == 1, 15, what="broker 1 controller of epoch 1")
        rig.admin.create(
            "/brokers/topics/t", json.dumps({"version": 1, "partitions": {"0": [1, 2]}}).encode()
        )
        wait_until(lambda: history.of("partition_state", topic="t"), 15, what="t-0's first state")
        first = history.of("partition_state", topic="t")
        assert [(e["leader"], e["isr"], e["controller_epoch"]) for e in first] == [(1, [1, 2], 1)]
        assert real.client_id is not None
        old_session = real.client_id[0]
        expired_at: list[float] = []

        def expire_and_wait_for_new_session() -> None:
            thief = KazooClient(hosts=rig.connect, client_id=real.client_id)
            thief.start(timeout=15)
            thief.stop()
            thief.close()
            wait_until(
                lambda: real.connected and real.client_id is not None and real.client_id[0] != old_session,
                20,
                what="the controller's client on a new session",
            )
            expired_at.append(time.monotonic())

        path = "/brokers/topics/t/partitions/0/state"
        controller_client.faults[("get", path)] = [expire_and_wait_for_new_session]
        rig.admin.delete(
            "/brokers/ids/2"
        )  # the controller decides: leader 1, ISR [1] (a set on the state znode)
        wait_until(lambda: expired_at, 30, what="the session expired mid-decision")
        controller.wait_idle(20)
        late = [e for e in history.of("partition_state", topic="t") if e["t"] > expired_at[0]]
        assert all(e["controller_epoch"] >= 2 for e in late), late
        # the znode is as the first term left it, or written by a later term
        state = json.loads(rig.admin.get(path)[0])
        assert (state["controller_epoch"], state["isr"]) == (1, [1, 2]) or state["controller_epoch"] >= 2
    finally:
        controller.stop()
        controller.join()


def test_a_broker_cut_from_zookeeper_tries_again_about_every_second_and_is_back_soon_after_the_heal(
    zookeeper: ZooKeeperServer,
) -> None:
    # Kafka's broker (ZooKeeper's Java client) tries again at most about a second apart however long the outage
    # (coordinator.zookeeper.registration.RECONNECT_MAX_DELAY_S; kazoo's jitter makes a wait 0.6-1.4 times its delay). In a 10 s cut
    # that refuses every attempt: attempts after 0, 0.1, 0.2, 0.4 and 0.8 s of back-off (x 0.6-1.4: at most
    # 2.1 s), then every 0.6-1.4 s, so at least 10 (the proxy counts them). kazoo's default doubles its delay
    # without a bound below an hour: its 9th attempt comes at least 0.6 x 25.5 s = 15.3 s after the cut, so
    # at most 8 in 10 s, and the wait after the heal grows with the outage. The session (6 s) expires meanwhile,
    # so the broker comes back on a new session and registers again, within a wait and the registration.
    with _behind_a_proxy(zookeeper, 9, replicated=False) as c:

        def registered() -> bool:
            return c.rig.admin.exists("/brokers/ids/9") is not None

        wait_until(registered, 15, what="broker 9 registered")
        before = c.proxy.stats.connections
        c.proxies.cut("zk", drop=True)
        time.sleep(10.0)  # the outage itself (a fault's duration), not a wait for a state
        attempts = c.proxy.stats.connections - before
        assert not registered(), "the cut broker's session did not expire"
        c.proxies.restore("zk")
        healed = time.monotonic()
        assert attempts >= 9, f"{attempts} attempts to reach ZooKeeper in a 10 s cut"
        wait_until(registered, 30, what="broker 9 registered again")
        took = time.monotonic() - healed
        assert took < 3.0, f"the broker was registered again {took:.1f} s after the heal"
