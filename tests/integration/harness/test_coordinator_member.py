"""`herdlab member coordinator` (unmodified kafka-python) and the workload producer, on the real broker."""

from __future__ import annotations

import os
import signal
import sys
from collections import Counter
from collections.abc import Iterator
from pathlib import Path

import pytest
from kafka.admin import KafkaAdminClient, NewTopic

from harness.cluster.broker import BrokerProcess
from harness.history.writer import HistoryWriter, read_events
from harness.kernel.ownership import GroupView
from harness.procs import ChildProcess, spawn
from harness.workload.producer import Producer, ProducerConfig
from tests.support.waiting import wait_until

HERDLAB = os.path.join(os.path.dirname(sys.executable), "herdlab")
PARTITIONS = 4


@pytest.fixture
def broker() -> Iterator[BrokerProcess]:
    with BrokerProcess(extra_args=["--group-initial-rebalance-delay-ms", "0"]) as b:
        admin = KafkaAdminClient(bootstrap_servers=b.bootstrap)
        admin.create_topics([NewTopic("t", PARTITIONS, 1)])
        admin.close()
        yield b


def _member(broker: BrokerProcess, tmp: Path, name: str) -> ChildProcess:
    argv = [HERDLAB, "member", "coordinator", "--bootstrap", broker.bootstrap, "--group", "g", "--topic", "t"]
    argv += ["--name", name, "--history", str(tmp / f"{name}.jsonl"), "--auto-commit-interval-ms", "500"]
    return spawn(argv, name=name, log_path=tmp / f"{name}.log")


def _events(tmp: Path, *names: str) -> list[dict]:
    out = []
    for n in names:
        p = tmp / f"{n}.jsonl"
        if p.exists():
            out.extend(read_events(p))
    return sorted(out, key=lambda e: e["ts_ns"])


def _ownership(tmp: Path, *names: str) -> GroupView:
    o = GroupView(partitions=PARTITIONS)
    o.apply_all(_events(tmp, *names))
    return o


def test_members_share_partitions_process_every_record_and_a_leaver_hands_over(
    broker: BrokerProcess, tmp_path: Path
) -> None:
    m0, m1 = _member(broker, tmp_path, "m0"), _member(broker, tmp_path, "m1")
    try:

        def both_own() -> bool:
            o = _ownership(tmp_path, "m0", "m1")
            return o.owned_once() and {v[0] for v in o.owners().values()} == {"m0", "m1"}

        # m0 may first own everything alone; the rebalance that m1's join causes splits the partitions.
        wait_until(both_own, timeout=60, what="both members to own disjoint partitions")

        with HistoryWriter(tmp_path / "producer.jsonl", "producer") as h:
            Producer(
                ProducerConfig(bootstrap=broker.bootstrap, topic="t", rate=500, max_records=300), h
            ).run()
        produced = {
            (e["partition"], e["offset"])
            for e in read_events(tmp_path / "producer.jsonl")
            if e["kind"] == "produced"
        }
        assert len(produced) == 300

        def processed() -> set:
            return {
                (e["partition"], e["offset"]) for e in _events(tmp_path, "m0", "m1") if e["kind"] == "record"
            }

        wait_until(lambda: processed() >= produced, timeout=30, what="every produced record to be processed")
        seqs = Counter(e["seq"] for e in _events(tmp_path, "m0", "m1") if e["kind"] == "record")
        assert set(seqs) == set(range(300))

        m1.signal(signal.SIGTERM, group=False)  # a clean leave: commit, LeaveGroup
        assert m1.wait(30) == 0
        wait_until(
            lambda: _ownership(tmp_path, "m0", "m1").owners() == {p: ["m0"] for p in range(PARTITIONS)},
            timeout=30,
            what="m0 to own everything after m1 left",
        )
        kinds = Counter(e["kind"] for e in _events(tmp_path, "m1"))
        assert kinds["stopped"] == 1 and kinds["commit"] >= 1
    finally:
        m0.stop()
        m1.stop()


def test_a_member_outlives_its_broker_being_down_and_consumes_after_the_restart(
    broker: BrokerProcess, tmp_path: Path
) -> None:
    m0 = _member(broker, tmp_path, "m0")
    try:
        wait_until(
            lambda: _ownership(tmp_path, "m0").owners() == {p: ["m0"] for p in range(PARTITIONS)},
            timeout=60,
            what="m0 to own every partition",
        )
        broker.kill()
        # The member notices the outage (its connections are refused) and keeps running; when
        # kafka-python's poll() raises for want of a broker (a race: a coordinator lookup that a
        # failed request started inside poll), it logs "poll failed" and polls again.
        log = tmp_path / "m0.log"
        wait_until(lambda: "ECONNREFUSED" in log.read_text(), timeout=30, what="m0 to notice the outage")
        assert m0.alive(), m0.log_tail()
        broker.restart()
        with HistoryWriter(tmp_path / "producer.jsonl", "producer") as h:
            Producer(ProducerConfig(bootstrap=broker.bootstrap, topic="t", rate=50, max_records=8), h).run()
        produced = {
            (e["partition"], e["offset"])
            for e in read_events(tmp_path / "producer.jsonl")
            if e["kind"] == "produced"
        }
        assert len(produced) == 8
        wait_until(
            lambda: (
                produced
                <= {(e["partition"], e["offset"]) for e in _events(tmp_path, "m0") if e["kind"] == "record"}
            ),
            timeout=60,
            what="m0 to process the records produced after the restart",
        )
        assert m0.alive()
    finally:
        m0.stop()
