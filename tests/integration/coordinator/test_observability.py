"""What the broker tells the harness: request counters and group events in the history, log lines."""

from __future__ import annotations

from collections import Counter

from kafka import KafkaConsumer, KafkaProducer

from harness.history.writer import read_events
from tests.integration.conftest import BrokerFactory
from tests.waiting import wait_until


def test_history_has_request_counters_and_group_events(broker_factory: BrokerFactory) -> None:
    broker = broker_factory(
        extra_args=["--metrics-interval", "0.2", "--group-initial-rebalance-delay-ms", "0"]
    )
    producer = KafkaProducer(bootstrap_servers=broker.bootstrap)
    for i in range(10):
        producer.send("obs", b"%d" % i)
    producer.flush()
    producer.close()
    consumer = KafkaConsumer(
        "obs",
        bootstrap_servers=broker.bootstrap,
        group_id="g-obs",
        auto_offset_reset="earliest",
        enable_auto_commit=False,
        session_timeout_ms=6000,
        heartbeat_interval_ms=500,
    )
    got: list = []
    wait_until(lambda: got.extend(r for rs in consumer.poll(200).values() for r in rs) or len(got) == 10, 20)
    consumer.commit()
    consumer.close()
    broker.stop()

    events = read_events(broker.history_path)
    assert all(e["source"] == "broker-0" for e in events)
    kinds = Counter(e["kind"] for e in events)
    assert kinds["started"] == 1 and kinds["stopped"] == 1
    counters = [e for e in events if e["kind"] == "broker_request"]
    assert counters and all(e["impl"] == "coordinator" and e["broker_id"] == 0 for e in counters)
    assert all(e["total"] == sum(e["requests"].values()) for e in counters)
    assert all(set(e["handling_us"]) == set(e["requests"]) for e in counters)
    totals: Counter[str] = Counter()
    for e in counters:
        totals.update(e["requests"])
    for api in ("ApiVersions", "Metadata", "Produce", "Fetch", "FindCoordinator", "JoinGroup", "SyncGroup"):
        assert totals[api] >= 1, api
    assert totals["OffsetCommit"] >= 1 and totals["LeaveGroup"] == 1

    group = [e for e in events if e.get("group") == "g-obs"]
    states = [(e["from_state"], e["to_state"]) for e in group if e["kind"] == "group_state"]
    assert ("Empty", "PreparingRebalance") in states and ("CompletingRebalance", "Stable") in states
    stable = next(e for e in group if e["kind"] == "group_state" and e["to_state"] == "Stable")
    assert stable["generation"] == 1 and stable["members"] == 1 and stable["impl"] == "coordinator"
    assert {"rebalance_begin", "rebalance_end", "member_added", "member_removed", "commit"} <= {
        e["kind"] for e in group
    }
    commits = [e for e in group if e["kind"] == "commit"]
    assert {(e["topic"], e["partition"], e["offset"]) for e in commits} == {("obs", 0, 10)}

    log = broker.log_path.read_text()
    transitions = [line for line in log.splitlines() if "group=g-obs" in line and " state " in line]
    assert len(transitions) == len(states)
    assert any("generation=1 state CompletingRebalance -> Stable members=1 [" in line for line in transitions)
