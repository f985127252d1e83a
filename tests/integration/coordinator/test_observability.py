"""What the broker tells the harness: request counters and group events in the history, log lines."""

from __future__ import annotations

from collections import Counter

from kafka import KafkaConsumer, KafkaProducer

from harness.history.writer import read_events
from tests.support.brokers import BrokerFactory
from tests.support.waiting import wait_until


def test_history_has_request_counters_and_group_events(broker_factory: BrokerFactory) -> None:
    """One consumer joins once, consumes, commits and leaves; the broker's history and log show it.

    Two kafka-python 3.0.12 bugs would make the one join flaky (this test timed out intermittently),
    so the consumer learns the partitions of ``obs`` before its first poll and polls with a timeout
    long enough to see a join through (``poll()`` returns as soon as records arrive).

    1. A leader's metadata-triggered rejoin is lost when it completes between two ``poll()`` calls
       (pinned by ``test_kafka_python_rejoin.py``). Without the metadata, the consumer's first metadata
       for ``obs`` races its first join (the refresh waits ``retry_backoff_ms`` after the bootstrap's
       topic-less Metadata; FindCoordinator and JoinGroup go out at once and, with
       ``--group-initial-rebalance-delay-ms 0``, are answered at once): generation 1 assigns nothing
       ("No partition metadata for topic obs"), the metadata then makes ``need_rejoin()`` true, and:

       * ``kafka/coordinator/consumer.py:605-609``: ``need_rejoin()`` says True for a changed metadata
         snapshot without ``request_rejoin()`` (Java's ``ConsumerCoordinator.rejoinNeededOrPending``
         calls ``requestRejoinIfNecessary``), so ``rejoin_needed`` stays False;
       * ``kafka/coordinator/base.py:512-515``: when ``poll()``'s timeout runs out with the JoinGroup
         in flight, ``join_group_async`` returns and the join task goes on on the IO thread;
       * ``kafka/coordinator/consumer.py:473``: that task's ``_perform_assignment`` sets
         ``_assignment_snapshot = _metadata_snapshot``, so ``need_rejoin()`` is False again and neither
         ``consumer.py:408`` nor ``base.py:480`` (``while self.need_rejoin()``, no "or a join is
         pending" as in Java's ``rejoinNeeded || joinFuture != null``) awaits the task again;
       * ``kafka/coordinator/base.py:542-551``, the only code that sets the state STABLE, re-enables
         the heartbeat (disabled at ``base.py:505``) and assigns the partitions, never runs. SyncGroup
         succeeded, yet the client sends nothing more and the broker expires it after 6 s. Here the
         JoinGroup response landed in one of ``wait_until``'s 20 ms sleeps.

    2. A join that completes while no ``poll()`` awaits it is thrown away even when ``rejoin_needed`` is
       set: ``kafka/coordinator/base.py:490`` sends a new JoinGroup when the previous join task is
       already done (its result is never read). A first join slower than ``poll()``'s timeout then
       costs a second generation (for a leader, a whole extra rebalance).

    The broker's answers at every step are Apache Kafka 3.7.0's (a Metadata v12 with an empty topic
    list lists no topics; MEMBER_ID_REQUIRED, then generation 1; the leader's JoinGroup in Stable
    starts a rebalance; the session restarts when SyncGroup hands out the assignment), so a Kafka
    broker would see the same client behaviour.
    """
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
    # The subscribed topic's metadata before the first poll (hence the first JoinGroup): bug 1 above.
    assert consumer.partitions_for_topic("obs") == {0}
    got: list = []
    wait_until(  # a poll long enough for the join to complete inside it: bug 2 above
        lambda: got.extend(r for rs in consumer.poll(10_000).values() for r in rs) or len(got) == 10,
        20,
        what="the consumer to receive the 10 records",
    )
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
    # Exactly one join (generation 1) and one leave: no second rebalance, no session expiry.
    assert states == [
        ("Empty", "PreparingRebalance"),
        ("PreparingRebalance", "CompletingRebalance"),
        ("CompletingRebalance", "Stable"),
        ("Stable", "PreparingRebalance"),
        ("PreparingRebalance", "Empty"),
    ]
    assert [e["reason"] for e in group if e["kind"] == "member_removed"] == ["leave"]
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
