"""A member started held (``--hold-until``, harness.members.release): it starts up, writes nothing and
waits; the release file makes it join at once (its ``ready`` then), and the file is consumed."""

from __future__ import annotations

import logging
import os
import signal
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest
from kafka.admin import KafkaAdminClient, NewTopic

from harness.cluster.broker import BrokerProcess
from harness.cluster.zookeeper import ZooKeeperServer
from harness.history.writer import read_events
from harness.procs import spawn
from harness.run.plan import make_plan
from harness.run.rig import UnitRig
from harness.scenario import expand, load_scenario
from tests.support.rigs import local_rig_spec
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


def test_a_held_member_that_died_before_its_join_is_started_afresh_by_the_join(
    tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    """UnitRig.start_member on a held process that is gone starts the member anew (the join works, as it
    would have without the hold) instead of releasing a dead handle."""
    (case,) = expand(load_scenario("herd", ["group.members=2", "topic.partitions=2"]))
    spec = local_rig_spec(case.scenario, "coordinator", make_plan(case.scenario, 2), 2, tmp_path)
    events, logs = spec.events_dir, spec.logs_dir
    events.mkdir()
    logs.mkdir()
    rig = UnitRig(spec)
    try:
        rig.start()
        assert rig.prestart_member("j0")
        held, release = rig.held["j0"]
        log = logs / "j0.log"
        wait_until(lambda: log.exists() and "held until" in log.read_text(), 60, what="held")
        held.signal(signal.SIGKILL)
        wait_until(lambda: not held.alive(), 10, what="the held process gone")
        with caplog.at_level(logging.WARNING, logger="harness.run"):
            rig.start_member("j0")
        # the warning names the member, its group and how the held process ended (SIGKILL: -9)
        assert any(
            "member j0 of group g" in r.getMessage() and "exit status -9" in r.getMessage()
            for r in caplog.records
        ), [r.getMessage() for r in caplog.records]
        fresh = rig.members["j0"]
        assert fresh is not held and fresh.alive()
        assert "j0" not in rig.held
        history = events / "j0.jsonl"

        def kinds() -> list[str]:
            return [e["kind"] for e in read_events(history)]

        wait_until(lambda: "assigned" in kinds(), 60, what="the fresh member's assignment")
        assert kinds()[0] == "ready"
        assert not release.exists()  # removed with the dead process, none made for the fresh one
        # the log (appended to by both processes) names one hold: the dead process's
        assert log.read_text().count("held until") == 1
    finally:
        try:
            rig.stop_processes()
        finally:
            rig.stop_cluster()
    assert not any(p.alive() for p in rig.members.values())
