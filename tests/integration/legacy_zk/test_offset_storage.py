"""``offsets.storage=kafka`` against the real ZooKeeper and our real broker (``python -m coordinator``).

The broker runs without ZooKeeper; the test writes ``/brokers/topics/<t>`` itself (as a 0.8 admin tool
would) and members get the broker with ``bootstrap.servers``. Offsets are read back independently:
ZooKeeper with kazoo, the broker with kafka-python's admin client (OffsetFetch), and written there
with kafka-python's admin client (a "simple" OffsetCommit) and kazoo. 30 records, 10 per partition.
Tests ask for ``broker`` before ``make_member``, so the members are closed (their shutdown commit, which
retries as 0.8.2.2 against a broker that is gone) before the broker stops.
"""

from __future__ import annotations

import json
import signal
import threading
import time
from typing import Any

import pytest
from kafka import KafkaConsumer, KafkaProducer
from kafka.admin import KafkaAdminClient, NewTopic
from kafka.structs import OffsetAndMetadata
from kafka.structs import TopicPartition as KafkaTP

from harness.history.writer import read_events
from harness.procs import free_port, spawn
from harness.run.launch import legacy_member_argv
from legacy_zk import paths
from tests.support.legacy_zk import create_topic
from tests.support.waiting import wait_until

PARTITIONS = 3


@pytest.fixture
def admin(broker):
    a = KafkaAdminClient(bootstrap_servers=broker.bootstrap)
    yield a
    a.close()


@pytest.fixture
def data_topic(broker, admin, zk_admin, topic) -> str:
    admin.create_topics([NewTopic(topic, PARTITIONS, 1)])
    create_topic(zk_admin, topic, PARTITIONS)
    p = KafkaProducer(bootstrap_servers=broker.bootstrap, linger_ms=0)
    try:
        for s in range(30):
            p.send(topic, json.dumps({"seq": s}).encode(), partition=s % PARTITIONS)
        p.flush()
    finally:
        p.close()
    return topic


def kafka_member(make_member, broker, group: str, topic: str, **kw: Any):
    kw.setdefault("dual_commit_enabled", True)
    kw.setdefault("auto_commit_interval_ms", 300)
    return make_member(
        group,
        {topic: 1},
        fetch=True,
        bootstrap_servers=broker.bootstrap,
        auto_offset_reset="smallest",
        offsets_storage="kafka",
        offsets_channel_backoff_ms=200,
        **kw,
    )


def in_zookeeper(zk_admin, group: str, topic: str) -> dict[int, int]:
    out = {}
    for p in range(PARTITIONS):
        path = paths.offset_path(group, topic, p)
        if zk_admin.exists(path):
            out[p] = int(zk_admin.get(path)[0])
    return out


def in_broker(admin: KafkaAdminClient, group: str, topic: str) -> dict[int, int]:
    got = admin.list_group_offsets({group: [KafkaTP(topic, p) for p in range(PARTITIONS)]})[group]
    return {tp.partition: oam.offset for tp, oam in got.items() if oam.offset >= 0}


def first_records(events, member: str) -> dict[int, int]:
    out: dict[int, int] = {}
    for e in events("record", member=member):
        out.setdefault(e["partition"], e["offset"])
    return out


def test_dual_commit_puts_every_commit_in_the_broker_and_in_zookeeper(
    broker, make_member, admin, zk_admin, group, data_topic, events
) -> None:
    m = kafka_member(make_member, broker, group, data_topic)
    wait_until(lambda: len(events("record", member=m.id)) == 30, 30, what="30 records processed")
    done = {0: 10, 1: 10, 2: 10}  # 10 records per partition: the next offset to read is 10
    wait_until(lambda: in_broker(admin, group, data_topic) == done, 20, what="the commits in the broker")
    wait_until(lambda: in_zookeeper(zk_admin, group, data_topic) == done, 20, what="the commits in ZooKeeper")
    commits = events("commit", member=m.id)
    for store in ("kafka", "zookeeper"):
        assert {(e["partition"], e["offset"]) for e in commits if e["store"] == store} >= {
            (p, 10) for p in range(PARTITIONS)
        }
    # no offsets anywhere at the start: both stores read, both -1, auto.offset.reset (smallest)
    fetched = events("offset_fetch", member=m.id)
    assert [(e["partition"], e["zookeeper_offset"], e["kafka_offset"], e["offset"]) for e in fetched] == [
        (p, -1, -1, -1) for p in range(PARTITIONS)
    ]
    assert first_records(events, m.id) == {0: 0, 1: 0, 2: 0}


@pytest.mark.parametrize(
    ("dual", "expected"),
    [
        # broker 3/3/3, ZooKeeper 7/2/none: dual commit takes the larger per partition
        (True, {0: 7, 1: 3, 2: 3}),
        # without dual commit only the broker is read
        (False, {0: 3, 1: 3, 2: 3}),
    ],
)
def test_the_member_starts_where_the_fetch_rule_says(
    broker, make_member, admin, zk_admin, group, data_topic, events, dual: bool, expected: dict[int, int]
) -> None:
    errors = admin.alter_group_offsets(
        group, {KafkaTP(data_topic, p): OffsetAndMetadata(3, "", -1) for p in range(PARTITIONS)}
    )
    assert {tp.partition: e.__name__ for tp, e in errors.items()} == {p: "NoError" for p in range(PARTITIONS)}
    zk_admin.create(paths.offset_path(group, data_topic, 0), b"7", makepath=True)
    zk_admin.create(paths.offset_path(group, data_topic, 1), b"2", makepath=True)

    m = kafka_member(make_member, broker, group, data_topic, dual_commit_enabled=dual)
    wait_until(lambda: len(first_records(events, m.id)) == PARTITIONS, 30, what="a record of each partition")
    assert first_records(events, m.id) == expected
    fetched = {e["partition"]: e for e in events("offset_fetch", member=m.id)}
    assert {p: e["offset"] for p, e in fetched.items()} == expected
    assert {p: e["kafka_offset"] for p, e in fetched.items()} == {0: 3, 1: 3, 2: 3}
    assert {p: e["zookeeper_offset"] for p, e in fetched.items()} == (
        {0: 7, 1: 2, 2: -1} if dual else {0: None, 1: None, 2: None}
    )
    assert all(e["storage"] == "kafka" and e["dual"] is dual for e in fetched.values())


def test_an_unreachable_broker_keeps_the_member_out_of_the_group_with_one_line_per_failure(
    make_member, zk_admin, group, topic, caplog, events
) -> None:
    """0.8.2.2 locates the offset manager in the connector's constructor, before registering: a
    member that cannot reach one retries, logging each failure, and never joins the group."""
    create_topic(zk_admin, topic, 1)
    dead = f"127.0.0.1:{free_port()}"  # nobody listens there
    m = make_member(
        group,
        {topic: 1},
        start=False,
        bootstrap_servers=dead,
        offsets_storage="kafka",
        offsets_channel_backoff_ms=100,
        offsets_channel_socket_timeout_ms=300,
    )
    result: dict[str, bool] = {}
    caplog.set_level("WARNING", logger="legacy_zk")
    starter = threading.Thread(target=lambda: result.update(converged=m.start()), daemon=True)
    starter.start()
    assert m.offset_channel is not None
    wait_until(lambda: m.offset_channel.failures >= 3, 20, what="three failed lookups of the offset manager")
    assert starter.is_alive()  # still retrying, as 0.8.2's channelToOffsetManager did
    lines = [r.getMessage() for r in caplog.records if "offset manager of group" in r.getMessage()]
    assert len(lines) >= 3
    assert m.id in lines[0] and f"group {group}" in lines[0] and dead in lines[0]
    # booted and connected to ZooKeeper, but not in the group: no id znode, no registration, no rebalance
    assert [e["kind"] for e in events(member=m.id) if e["kind"] in ("ready", "started")] == [
        "ready",
        "started",
    ]
    assert zk_admin.exists(paths.id_path(group, m.id)) is None
    assert events("registered", member=m.id) == [] and events("rebalance_begin", member=m.id) == []
    t0 = time.monotonic()
    m.close()
    starter.join(10)
    # at most one lookup in flight (300 ms socket timeout); 0.8.2 never returned
    assert not starter.is_alive() and time.monotonic() - t0 < 5.0
    assert result == {"converged": False}
    assert events("registered", member=m.id) == [] and events("rebalance_begin", member=m.id) == []
    assert events("commit_rejected", member=m.id) == []  # it owned nothing: nothing to commit


def test_a_shutdown_commit_that_finds_no_broker_is_retried_then_rejected_in_the_history(
    broker, make_member, admin, group, data_topic, events
) -> None:
    """The broker goes away before the shutdown: the commit's first attempt fails on the open channel,
    each retry looks the offset manager up again for at most offsets.channel.socket.timeout.ms, and
    the commit given up after 1 + offsets.commit.max.retries attempts is in the history."""
    m = kafka_member(
        make_member,
        broker,
        group,
        data_topic,
        dual_commit_enabled=False,
        auto_commit_interval_ms=600000,  # nothing committed before the shutdown
        offsets_commit_max_retries=2,
        offsets_channel_socket_timeout_ms=300,
    )
    wait_until(lambda: len(events("record", member=m.id)) == 30, 30, what="30 records processed")
    assert m.offset_channel is not None
    broker.stop()
    failures = m.offset_channel.failures
    t0 = time.monotonic()
    m.close()
    # 3 attempts, the last two each a lookup of at most 300 ms (+ one try in flight) and 200 ms backoff
    assert time.monotonic() - t0 < 10.0
    assert m.offsets.attempts >= 3 and m.offset_channel.failures > failures
    rejected = events("commit_rejected", member=m.id)
    assert sorted((e["partition"], e["offset"], e["store"], e["error"], e["trigger"]) for e in rejected) == [
        (p, 10, "kafka", "NO_OFFSET_MANAGER", "shutdown") for p in range(PARTITIONS)
    ]
    assert events("commit", member=m.id) == []


def test_a_member_process_waiting_for_an_offset_manager_is_not_in_the_group_and_stops_at_sigterm(
    zookeeper, zk_admin, group, topic, tmp_path
) -> None:
    create_topic(zk_admin, topic, 1)
    dead = f"127.0.0.1:{free_port()}"  # nobody listens there
    history = tmp_path / "member.jsonl"
    log_path = tmp_path / "member.log"
    argv = legacy_member_argv(
        zookeeper.connect_string,
        group,
        topic,
        "--bootstrap",
        dead,
        "--offsets.storage",
        "kafka",
        "--offsets.channel.backoff.ms",
        "100",
        "--offsets.channel.socket.timeout.ms",
        "300",
        "--history",
        str(history),
    )
    p = spawn(argv, name="legacy-zk-no-offset-manager", log_path=log_path)
    try:

        def failures() -> int:
            text = log_path.read_text() if log_path.exists() else ""
            return sum(
                f"offset manager of group {group} not found via {dead}" in line for line in text.splitlines()
            )

        wait_until(lambda: failures() >= 2, 30, what="two logged lookups of the offset manager")
        assert zk_admin.exists(paths.ids_dir(group)) is None  # never registered: no id znode at all
        t0 = time.monotonic()
        p.signal(signal.SIGTERM)
        assert p.wait(10) == 0
        assert time.monotonic() - t0 < 5.0
    finally:
        p.stop()
    kinds = [e["kind"] for e in read_events(history)]
    assert kinds.index("ready") < kinds.index("started") < kinds.index("stopped")
    assert "registered" not in kinds and "rebalance_begin" not in kinds


def test_a_member_process_commits_to_the_broker_at_sigterm(
    zookeeper, broker, admin, zk_admin, group, data_topic, tmp_path
) -> None:
    history = tmp_path / "member.jsonl"
    argv = legacy_member_argv(
        zookeeper.connect_string,
        group,
        data_topic,
        "--bootstrap",
        broker.bootstrap,
        "--offsets.storage",
        "kafka",
        "--dual.commit.enabled",
        "false",
        "--auto.commit.interval.ms",
        "600000",  # no scheduled commit during the test: what lands is the rebalance's or the shutdown's
        "--auto.offset.reset",
        "smallest",
        "--zookeeper.session.timeout.ms",
        "1500",
        "--history",
        str(history),
    )
    p = spawn(argv, name="legacy-zk-kafka-storage", log_path=tmp_path / "member.log")
    try:

        def records() -> int:
            return sum(e["kind"] == "record" for e in read_events(history)) if history.exists() else 0

        wait_until(lambda: records() == 30, 30, what="30 records processed")
        assert in_broker(admin, group, data_topic) == {}  # nothing committed yet (nothing owned before)
        p.signal(signal.SIGTERM)
        assert p.wait(15) == 0
    finally:
        p.stop()
    assert in_broker(admin, group, data_topic) == {0: 10, 1: 10, 2: 10}
    assert in_zookeeper(zk_admin, group, data_topic) == {}  # dual commit off: nothing in ZooKeeper
    ev = read_events(history)
    assert sorted(
        (e["partition"], e["offset"], e["store"], e["reason"]) for e in ev if e["kind"] == "commit"
    ) == [(p, 10, "kafka", "shutdown") for p in range(PARTITIONS)]
    assert {e["impl"] for e in ev if e["kind"] in ("ready", "started")} == {"legacy_zk"}
    started = next(e for e in ev if e["kind"] == "started")
    assert (
        started["config"]["offsets.storage"] == "kafka" and started["config"]["dual.commit.enabled"] is False
    )


def test_the_documented_migration_carries_every_offset_to_a_kafka_python_consumer(
    broker, make_member, admin, zk_admin, group, data_topic, events
) -> None:
    """0.8.2's procedure, bounce by bounce: ZooKeeper storage; kafka + dual commit; kafka alone; then a
    broker-coordinated kafka-python consumer of the same group resumes exactly where the last one
    committed. Each stage consumes 10 new records per partition (offsets 10k .. 10k+9)."""
    producer = KafkaProducer(bootstrap_servers=broker.bootstrap, linger_ms=0)

    def produce_more(start: int) -> None:
        for s in range(start, start + 30):
            producer.send(data_topic, json.dumps({"seq": s}).encode(), partition=s % PARTITIONS)
        producer.flush()

    def stage(n: int, **kw: Any) -> Any:
        m = make_member(
            group,
            {data_topic: 1},
            fetch=True,
            bootstrap_servers=broker.bootstrap,
            auto_offset_reset="smallest",
            auto_commit_interval_ms=300,
            offsets_channel_backoff_ms=200,
            **kw,
        )
        wait_until(lambda: len(events("record", member=m.id)) == 30, 30, what=f"stage {n}: 30 records")
        m.close()  # the shutdown commit
        return m

    try:
        m1 = stage(1)  # offsets.storage=zookeeper (the default)
        assert first_records(events, m1.id) == {0: 0, 1: 0, 2: 0}
        assert in_zookeeper(zk_admin, group, data_topic) == {0: 10, 1: 10, 2: 10}
        assert in_broker(admin, group, data_topic) == {}

        produce_more(30)
        m2 = stage(2, offsets_storage="kafka", dual_commit_enabled=True)
        assert first_records(events, m2.id) == {0: 10, 1: 10, 2: 10}  # max(ZooKeeper 10, broker -1)
        assert in_zookeeper(zk_admin, group, data_topic) == {0: 20, 1: 20, 2: 20}
        assert in_broker(admin, group, data_topic) == {0: 20, 1: 20, 2: 20}

        produce_more(60)
        m3 = stage(3, offsets_storage="kafka", dual_commit_enabled=False)
        assert first_records(events, m3.id) == {0: 20, 1: 20, 2: 20}  # the broker's
        assert in_broker(admin, group, data_topic) == {0: 30, 1: 30, 2: 30}
        assert in_zookeeper(zk_admin, group, data_topic) == {0: 20, 1: 20, 2: 20}  # left behind

        produce_more(90)
    finally:
        producer.close()
    consumer = KafkaConsumer(
        data_topic,
        bootstrap_servers=broker.bootstrap,
        group_id=group,
        auto_offset_reset="earliest",
        enable_auto_commit=False,
    )
    try:
        seen: dict[int, list[int]] = {p: [] for p in range(PARTITIONS)}

        def all_new() -> bool:
            for records in consumer.poll(timeout_ms=200).values():
                for r in records:
                    seen[r.partition].append(r.offset)
            return all(len(v) >= 10 for v in seen.values())

        wait_until(all_new, 30, what="the coordinator consumer reads the 30 new records")
        assert seen == {p: list(range(30, 40)) for p in range(PARTITIONS)}  # nothing lost, nothing replayed
    finally:
        consumer.close(autocommit=False)
