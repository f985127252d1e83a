"""The third design end to end: a consumer unit (KIP-848's consumer group protocol) of librdkafka members on
Apache Kafka 4, through a join and a leave, ends VALID with every partition owned once; a franz-go member
asked for the protocol refuses a broker that does not serve it (Apache Kafka 3.9).

Marked ``kafka`` (CI runs them in .ci/run): the first fetch needs Maven Central; later ones find the
version in herdlab's cache.
"""

from __future__ import annotations

import json
import subprocess
import sys
from collections import Counter
from pathlib import Path
from typing import Any

import pytest

from harness.cluster.apache_kafka import ApacheKafkaCluster
from harness.cluster.kafka_dist import fetch
from harness.run.runner import RunOptions, run_scenario
from harness.run.session import analyse, is_valid
from harness.scenario import load_scenario
from tests.support.runs import FAST

pytestmark = [pytest.mark.slow, pytest.mark.kafka]


def _events(path: Path) -> list[dict[str, Any]]:
    return [json.loads(line) for line in path.read_text().splitlines() if line.strip()]


@pytest.mark.long  # a unit of about a minute, then the Spark analysis
def test_a_consumer_unit_on_apache_kafka_4_joins_and_leaves_on_the_consumer_protocol(tmp_path: Path) -> None:
    fetch("4")
    s = load_scenario(
        "designs-small",
        [
            *FAST,
            'implementations=["consumer"]',
            'cluster.broker="apache-kafka"',
            "cluster.kafka_version=4",
            "group.members=2",
            "topic.partitions=4",
            "group.consumer.session_timeout_ms=3000",
            "group.consumer.heartbeat_interval_ms=300",
            "group.consumer.auto_commit_interval_ms=500",
            'timeline=[{at="1s",action="join"},{at="8s",action="leave",select="oldest"}]',
        ],
    )
    result = run_scenario(s, RunOptions(out=tmp_path))
    (unit,) = result.units
    assert "failed" not in unit, unit.get("failed")
    # the harness's own view at the end: every partition owned by exactly one live member
    assert unit["settled_at_end"] is True and unit["drained"] is True
    props = unit["broker_config"]["properties"]
    assert props["group.consumer.heartbeat.interval.ms"] == "300"
    assert props["group.consumer.min.session.timeout.ms"] == "3000"
    events = result.run_dir / "units" / unit["unit"] / "events"
    # the members ran the consumer protocol: the tap counted ConsumerGroupHeartbeat and no JoinGroup
    counted: Counter[str] = Counter()
    for e in _events(events / "tap.jsonl"):
        if e["kind"] == "broker_request":
            counted.update(e["requests"])
    assert counted["ConsumerGroupHeartbeat"] > 0 and counted["JoinGroup"] == 0
    # their events are the cooperative shape: incremental assigned / revoked, each carrying the member's
    # epoch as its generation (a member's own epoch: they differ between members)
    members = {p.stem: _events(p) for p in events.glob("[mj]*.jsonl")}
    assert set(members) == {"m0", "m1", "j0"}
    epochs: dict[str, set[int]] = {}
    for name, history in members.items():
        assigned = [e for e in history if e["kind"] == "assigned"]
        assert assigned and all(e["generation"] >= 1 for e in assigned), name
        epochs[name] = {e["generation"] for e in assigned}
        assert {e["impl"] for e in history if "impl" in e} == {"coordinator"}, name
    assert len(set.union(*epochs.values())) > 1
    # 4 partitions: 2 + 2, then the joiner takes one from a member that revoked it first (incremental: the
    # others keep theirs), then m0 (the oldest) leaves and its partitions move to m1 and j0
    revoked = [e for e in members["m0"] if e["kind"] == "revoked"]
    assert revoked and not any(e["lost"] for e in revoked)
    metrics: Any = analyse(result.run_dir)  # PySpark, as `herdlab run` does
    assert is_valid(metrics), metrics["verdict"]["line"]
    (u,) = metrics["units"]
    assert u["impl"] == "consumer" and u["lost"] == 0 and u["not_drained"] == 0
    assert [(t["action"], t["outcome"]) for t in u["triggers"]] == [("join", "settled"), ("leave", "settled")]


def test_a_franz_go_member_on_the_consumer_protocol_refuses_a_broker_that_does_not_serve_it(
    tmp_path: Path,
) -> None:
    # Apache Kafka 3.9 has no ConsumerGroupHeartbeat v1: kgo would run the classic protocol without a word
    home = fetch("3.9")
    with ApacheKafkaCluster(home.version, settings={}, workdir=tmp_path) as c:
        argv = [sys.executable, "-m", "harness.members", "coordinator", "--bootstrap", c.bootstrap]
        argv += ["--group", "g", "--topic", "t", "--client", "franz-go", "--group-protocol", "consumer"]
        done = subprocess.run(argv, capture_output=True, text=True, timeout=120, check=False)
    assert done.returncode != 0
    assert (
        "franz-go member: error: the broker does not serve the consumer group protocol "
        "(ConsumerGroupHeartbeat v1); kgo would run the classic protocol instead"
    ) in done.stderr
