"""ContainersCluster on a real Docker engine: readiness, labels, logs, faults, restart, cleanup."""

from __future__ import annotations

import contextlib
import signal
import socket
from pathlib import Path
from typing import Any

import pytest
from kafka import KafkaConsumer, KafkaProducer
from kafka.admin import KafkaAdminClient, NewTopic

from harness.cluster.containers import ContainersCluster
from harness.cluster.engine import SESSION
from harness.cluster.zookeeper import four_letter
from harness.history.writer import read_events
from harness.images import ImageNames
from tests.support.waiting import wait_until

pytestmark = pytest.mark.containers


def _ruok(connect: str, timeout: float = 1.0) -> bool:
    host, _, port = connect.rpartition(":")
    try:
        return four_letter(host, int(port), "ruok", timeout=timeout).strip() == "imok"
    except OSError:
        return False


def _accepts(bootstrap: str) -> bool:
    host, _, port = bootstrap.rpartition(":")
    try:
        with socket.create_connection((host, int(port)), timeout=1.0):
            return True
    except OSError:
        return False


def _create_topic(bootstrap: str, name: str, partitions: int = 2) -> None:
    admin = KafkaAdminClient(bootstrap_servers=bootstrap, client_id="test")
    try:
        admin.create_topics([NewTopic(name, partitions, 1)])
    finally:
        admin.close()


def _topics(bootstrap: str) -> set[str]:
    c = KafkaConsumer(bootstrap_servers=bootstrap)
    try:
        return set(c.topics())
    finally:
        c.close()


@pytest.fixture
def cluster(tmp_path: Path, images: ImageNames, baseline: Any) -> Any:
    c = ContainersCluster(
        brokers=1,
        tick_time_ms=200,
        workdir=tmp_path / "cluster",
        history_dir=tmp_path / "events",
        images=images,
        broker_args=("--group-initial-rebalance-delay-ms", "0"),
        labels={"herdlab.run": "test-run", "herdlab.unit": "u0"},
    ).start(members_in_containers=True)
    yield c
    c.stop()


def test_cluster_serves_is_labelled_saves_logs_and_leaves_nothing(
    cluster: ContainersCluster, engine: Any, tmp_path: Path
) -> None:
    assert _ruok(cluster.zookeeper_connect)
    mntr = cluster.zk_mntr()
    assert mntr is not None and str(mntr["zk_version"]).startswith("3.")
    _create_topic(cluster.bootstrap, "t")
    producer = KafkaProducer(bootstrap_servers=cluster.bootstrap)
    producer.send("t", b"hello", partition=0).get(timeout=10)
    producer.close()
    consumer = KafkaConsumer("t", bootstrap_servers=cluster.bootstrap, auto_offset_reset="earliest")
    try:
        got = wait_until(lambda: consumer.poll(500).values(), timeout=20, what="the record back")
        assert [r.value for batch in got for r in batch] == [b"hello"]
    finally:
        consumer.close()
    ours = engine.containers.list(
        all=True, ignore_removed=True, filters={"label": f"herdlab.session={SESSION}"}
    )
    assert {c.labels["herdlab.role"] for c in ours} == {"zookeeper", "broker"}
    for c in ours:
        assert c.labels["herdlab.run"] == "test-run" and c.labels["herdlab.unit"] == "u0"
        assert c.attrs["HostConfig"]["NetworkMode"] == "host"
    assert all(h.healthy for h in cluster.describe())
    cluster.stop()
    assert (
        engine.containers.list(all=True, ignore_removed=True, filters={"label": f"herdlab.session={SESSION}"})
        == []
    )
    # Logs saved where the local backend puts them; the broker wrote its history through the mount.
    assert "binding to port" in (tmp_path / "cluster/zookeeper/zookeeper.log").read_text()
    assert (tmp_path / "cluster/broker-0/broker.log").read_text().strip()
    assert any(e["kind"] == "broker_request" for e in read_events(tmp_path / "events/broker-0.jsonl"))


def test_broker_restart_keeps_port_and_data(cluster: ContainersCluster) -> None:
    _create_topic(cluster.bootstrap, "kept")
    before = cluster.bootstrap
    cluster.stop_broker(0)
    assert not _accepts(before)
    cluster.start_broker(0)
    assert cluster.bootstrap == before
    assert "kept" in _topics(cluster.bootstrap)


def test_pause_and_kill_take_effect_on_containers(cluster: ContainersCluster) -> None:
    zk = cluster.zookeeper
    assert zk is not None and zk.box is not None
    zk.box.pause()
    assert zk.box.status() == "paused"
    assert not _ruok(cluster.zookeeper_connect, timeout=1.0)  # frozen: accepts nothing in time
    zk.box.unpause()
    wait_until(lambda: _ruok(cluster.zookeeper_connect), timeout=10, what="ZooKeeper after unpause")
    broker = cluster.brokers[0]
    assert broker.box is not None
    broker.box.kill()
    wait_until(lambda: broker.box.status() == "exited", timeout=10, what="the killed broker container")
    assert broker.box.exit_code() == 137  # SIGKILL: no clean shutdown
    assert not _accepts(cluster.bootstrap)


def test_member_container_signals_map_to_engine_operations(
    cluster: ContainersCluster, tmp_path: Path
) -> None:
    _create_topic(cluster.bootstrap, "m")
    events = tmp_path / "events"
    history = events / "m0.jsonl"
    argv = ["/host/python", "-m", "harness", "member", "coordinator", "--bootstrap", cluster.bootstrap]
    argv += ["--group", "g", "--topic", "m", "--name", "m0", "--history", str(history)]
    m = cluster.start_member(argv, "m0", tmp_path / "logs/m0.log", mounts=[events])

    def assigned() -> bool:
        return history.exists() and any(e["kind"] == "assigned" for e in read_events(history))

    wait_until(assigned, timeout=60, what="the member in a container to be assigned")
    m.signal(signal.SIGSTOP)
    assert m.box.status() == "paused" and m.alive()
    m.signal(signal.SIGCONT)
    assert m.box.status() == "running"
    m.signal(signal.SIGTERM, group=False)  # a clean leave: the member handles SIGTERM
    assert m.wait(30) == 0
    assert any(e["kind"] == "stopped" for e in read_events(history))
    m.stop()
    assert m.box.status() == "removed"
    assert "assigned" in (tmp_path / "logs/m0.log").read_text()
    m2 = cluster.start_member(
        [*argv[:-1], str(events / "m1.jsonl")], "m1", tmp_path / "logs/m1.log", [events]
    )
    m2.signal(signal.SIGKILL)
    assert m2.wait(10) == 137 and not m2.alive()
    m2.stop()


def test_clean_removes_containers_whose_owner_is_gone(engine: Any, images: ImageNames, baseline: Any) -> None:
    """`herdlab images clean`: what a SIGKILLed herdlab (and its reaper) would leave is found by label."""
    import os
    import subprocess

    from harness.cluster.engine import remove_leftovers

    gone = subprocess.Popen(["true"])
    gone.wait()
    host = socket.gethostname()
    made = []
    for owner in (f"{host}:{gone.pid}", f"{host}:{os.getpid()}"):
        made.append(
            engine.containers.create(
                images.herdlab,
                ["sleep", "60"],
                labels={"herdlab": "1", "herdlab.owner": owner, "herdlab.session": SESSION},
                network_mode="host",
            )
        )
    try:
        # Restricted to this test session's label: another user's containers on the engine stay.
        mine = f"herdlab.session={SESSION}"
        assert remove_leftovers(label=mine) == [made[0].name]
        assert remove_leftovers(everything=True, label=mine) == [made[1].name]
    finally:
        for c in made:
            with contextlib.suppress(Exception):
                c.remove(force=True)
