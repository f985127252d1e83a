"""The tansu backend (``cluster.broker = "tansu"``): tansu starts behind the Kafka tap, a real kafka-python
group forms on it through the tap, it stops and leaves no process; a small herd run on it ends VALID with its
coordination requests counted by the tap."""

from __future__ import annotations

import json
from collections import Counter
from pathlib import Path
from typing import Any

import psutil
import pytest
from kafka import KafkaAdminClient
from kafka.admin import NewTopic

from harness.cluster.tansu import TansuCluster
from harness.kernel.events import COORDINATION_APIS
from harness.run.runner import RunOptions, run_scenario
from harness.run.session import analyse, is_valid
from harness.scenario import load_scenario
from tests.support.thread_members import ThreadMembers
from tests.support.waiting import wait_until


def _group_requests(path: Path) -> Counter[str]:
    events = [json.loads(line) for line in path.read_text().splitlines()]
    return Counter(e["api"] for e in events if e["kind"] == "group_request")


def test_a_group_of_3_forms_on_tansu_through_the_tap_and_no_process_is_left(tmp_path: Path) -> None:
    cluster = TansuCluster(workdir=tmp_path / "cluster", history_dir=tmp_path / "events", tap_interval_s=0.5)
    members: ThreadMembers | None = None
    try:
        cluster.start()
        pid = cluster.pid
        assert pid is not None and psutil.pid_exists(pid)
        admin = KafkaAdminClient(bootstrap_servers=cluster.bootstrap, client_id="tansu-admin")
        admin.create_topics([NewTopic("t3", 3, 1)])  # pyright: ignore[reportUnknownMemberType]
        admin.close()
        members = ThreadMembers(cluster.bootstrap, "t3", "g3", 3, "tansu-c").start()
        wait_until(
            lambda: sorted(members.owned.values()) == [1, 1, 1],
            timeout=40,
            what="3 consumers own one partition each on tansu",
        )
    finally:
        stopped = members.stop() if members is not None else True
        cluster.stop()
    assert stopped
    assert not psutil.pid_exists(pid) or psutil.Process(pid).status() == psutil.STATUS_ZOMBIE
    assert not [p for p in psutil.process_iter(["exe"]) if p.info["exe"] == str(cluster.binary)]
    counts = _group_requests(tmp_path / "events" / "tap.jsonl")
    # every member joined and synced through the tap (tansu writes no history: these are the tap's)
    assert counts["JoinGroup"] >= 3 and counts["SyncGroup"] >= 3
    assert counts["LeaveGroup"] == 3
    cluster.stop()  # idempotent


@pytest.mark.long  # about 100 s (with the Spark analysis): opt-in (CI runs it), the default run stays under 12 minutes
def test_a_small_herd_run_on_tansu_is_valid_and_counted_by_the_tap(tmp_path: Path) -> None:
    # tansu takes 4-6.5 s per join into a stable group: the triggers are 12 s apart
    timeline = 'timeline=[{at="2s",action="join"},{at="14s",action="leave"},{at="26s",action="crash"}]'
    s = load_scenario(
        "herd-small",
        [
            'implementations=["coordinator"]',
            'cluster.broker="tansu"',
            "group.members=3",
            "topic.partitions=4",
            "drain=20s",
            timeline,
        ],
    )
    result = run_scenario(s, RunOptions(out=tmp_path))
    assert len(result.units) == 1
    unit = result.units[0]
    assert "failed" not in unit, unit.get("failed")
    taps = list(result.run_dir.rglob("tap.jsonl"))
    assert len(taps) == 1, taps
    counts = _group_requests(taps[0])
    assert set(counts) <= set(COORDINATION_APIS)
    # 3 members, then a joiner: at least 4 JoinGroups; the leaver and the teardown send LeaveGroups
    assert counts["JoinGroup"] >= 4 and counts["SyncGroup"] >= 4 and counts["LeaveGroup"] >= 1
    metrics: dict[str, Any] = analyse(result.run_dir)  # PySpark, as `herdlab run` does
    assert is_valid(metrics)
