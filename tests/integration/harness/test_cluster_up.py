"""``herdlab cluster up`` by default: ZooKeeper and one broker, both addresses printed, both answering
as what they are, and both stopped on Ctrl-C (a real process tree)."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time

import psutil
import pytest

from harness.cluster.probe import check_bootstrap, check_zookeeper
from tests.support.waiting import wait_until

pytestmark = pytest.mark.slow


def test_cluster_up_runs_zookeeper_and_a_broker_until_ctrl_c() -> None:
    herdlab = os.path.join(os.path.dirname(sys.executable), "herdlab")
    proc = subprocess.Popen(
        [herdlab, "cluster", "up", "--tick-time", "200"],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        env={**os.environ, "COLUMNS": "200"},
    )
    try:
        assert proc.stdout is not None
        found: dict[str, str] = {}
        for line in proc.stdout:
            key, eq, value = line.strip().partition(" = ")
            if eq and key in ("zookeeper.connect", "bootstrap.servers"):
                found[key] = value
            if line.startswith("Press Ctrl-C"):
                break
        assert set(found) == {"zookeeper.connect", "bootstrap.servers"}, (found, proc.stderr)
        assert found["bootstrap.servers"].startswith("127.0.0.1:")
        deadline = time.monotonic() + 20
        # one server answering srvr, then a kazoo session (probe.check_zookeeper's contract)
        zk = check_zookeeper(found["zookeeper.connect"], deadline)
        assert [p.role for p in zk] == ["ZooKeeper address"] * 2
        # raises unless it answers as a Kafka broker (ApiVersions, a bootstrap, itself advertised)
        assert [p.role for p in check_bootstrap(found["bootstrap.servers"], deadline)] == ["bootstrap server"]
        children = psutil.Process(proc.pid).children(recursive=True)
        assert any("QuorumPeerMain" in " ".join(c.cmdline()) for c in children)
        proc.send_signal(signal.SIGINT)
        assert proc.wait(30) == 130
        wait_until(
            lambda: not any(c.is_running() and c.status() != psutil.STATUS_ZOMBIE for c in children),
            timeout=15,
            what="ZooKeeper and the broker to exit",
        )
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait()


def test_cluster_up_with_three_brokers_takes_a_topic_with_three_replicas() -> None:
    """Several brokers replicate as a scenario's ``[cluster] brokers = 3`` does: a topic with replication
    factor 3 is created (a broker that keeps one replica refuses it)."""
    from kafka.admin import KafkaAdminClient, NewTopic
    from kafka.errors import KafkaError

    herdlab = os.path.join(os.path.dirname(sys.executable), "herdlab")
    proc = subprocess.Popen(
        [herdlab, "cluster", "up", "--brokers", "3", "--tick-time", "200"],
        stdout=subprocess.PIPE,
        stderr=subprocess.DEVNULL,
        text=True,
        env={**os.environ, "COLUMNS": "200"},
    )
    admin: KafkaAdminClient | None = None
    try:
        assert proc.stdout is not None
        lines = []
        for line in proc.stdout:
            lines.append(line.strip())
            if line.startswith("Press Ctrl-C"):
                break
        assert "replication: on (--no-replication to turn it off)" in lines, lines
        (bootstrap,) = [v for k, _, v in (x.partition(" = ") for x in lines) if k == "bootstrap.servers"]
        admin = KafkaAdminClient(bootstrap_servers=bootstrap.split(","), request_timeout_ms=10_000)
        created: list[str] = []

        def create() -> bool:
            try:
                assert admin is not None
                admin.create_topics([NewTopic("three", num_partitions=1, replication_factor=3)])
            except KafkaError as e:
                created.append(repr(e))  # until the three brokers have registered
                return False
            return True

        wait_until(create, timeout=30, what=f"a topic with replication factor 3 ({created[-3:]})")

        def replicas() -> list[int]:
            assert admin is not None
            (topic,) = admin.describe_topics(["three"])
            return [len(p["replica_nodes"]) for p in topic["partitions"]]

        wait_until(lambda: replicas() == [3], timeout=30, what="the topic's one partition on three replicas")
        proc.send_signal(signal.SIGINT)
        assert proc.wait(30) == 130
    finally:
        if admin is not None:
            admin.close()
        if proc.poll() is None:
            proc.kill()
            proc.wait()
