"""A member started held (``--hold-until``, harness.members.release): it starts up, writes nothing and
waits; the release file makes it join at once (its ``ready`` then), and the file is consumed."""

from __future__ import annotations

import os
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest
from kafka.admin import KafkaAdminClient, NewTopic

from harness.cluster.broker import BrokerProcess
from harness.cluster.zookeeper import ZooKeeperServer
from harness.history.writer import read_events
from harness.procs import spawn
from tests.support.waiting import wait_until

pytestmark = pytest.mark.slow

HERDLAB = os.path.join(os.path.dirname(sys.executable), "herdlab")


@pytest.fixture
def broker() -> Iterator[BrokerProcess]:
    with BrokerProcess(extra_args=["--group-initial-rebalance-delay-ms", "0"]) as b:
        admin = KafkaAdminClient(bootstrap_servers=b.bootstrap)
        admin.create_topics([NewTopic("t", 2, 1)])
        admin.close()
        yield b


@pytest.mark.parametrize("impl", ["coordinator", "legacy_zk"])
def test_a_held_member_writes_nothing_until_released_then_joins(
    impl: str, broker: BrokerProcess, zookeeper: ZooKeeperServer, tmp_path: Path
) -> None:
    history, log, release = tmp_path / "j0.jsonl", tmp_path / "j0.log", tmp_path / ".j0.release"
    argv = [
        HERDLAB,
        "member",
        impl,
        "--bootstrap",
        broker.bootstrap,
        "--group",
        f"held-{impl}",
        "--topic",
        "t",
    ]
    if impl == "legacy_zk":
        argv += ["--zookeeper", zookeeper.connect_string]
    argv += ["--name", "j0", "--history", str(history), "--hold-until", str(release)]
    member = spawn(argv, name="j0", log_path=log)
    try:
        wait_until(
            lambda: log.exists() and f"held until {release} exists" in log.read_text(), 60, what="held"
        )
        # started up and waiting: alive, nothing recorded
        assert member.alive()
        assert not history.exists() or read_events(history) == []
        release.touch()
        # joined: the coordinator member's first assignment; the legacy member's registration in ZooKeeper
        # (this broker is not registered there, so the legacy member learns no partitions)
        joined = "assigned" if impl == "coordinator" else "registered"
        events = wait_until(
            lambda: [e for e in read_events(history) if e["kind"] == joined] and read_events(history),
            60,
            what=f"the released member's {joined}",
        )
        assert events[0]["kind"] == "ready"
        assert not release.exists()  # consumed
    finally:
        member.stop()
    assert not member.alive()
