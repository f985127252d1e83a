"""The broker registers itself and its topics in a real ZooKeeper, in the 0.8 layout (spec 1.4)."""

from __future__ import annotations

import json
import signal
from collections.abc import Iterator
from pathlib import Path

import pytest
from kafka import KafkaProducer
from kafka.admin import KafkaAdminClient, NewPartitions, NewTopic
from kafka.protocol.metadata import MetadataRequest
from kafka.protocol.metadata.find_coordinator import FindCoordinatorRequest
from kazoo.client import KazooClient

from coordinator.rawclient import RawClient
from harness.cluster.broker import BrokerProcess
from harness.cluster.zookeeper import ZooKeeperServer
from harness.history.writer import read_events
from harness.kernel.javacompat import partition_for
from harness.run.launch import PY, MemberService
from legacy_zk.paths import decode_broker, decode_topic_partitions
from tests.support.brokers import BrokerFactory
from tests.support.waiting import wait_until


@pytest.fixture
def zk(zookeeper: ZooKeeperServer) -> Iterator[KazooClient]:
    client = KazooClient(hosts=zookeeper.connect_string)
    client.start(timeout=15)
    yield client
    client.stop()
    client.close()


def _topic(zk: KazooClient, name: str) -> dict:
    data, _ = zk.get(f"/brokers/topics/{name}")
    return json.loads(data)


@pytest.fixture
def fresh_id_broker(
    broker_factory: BrokerFactory, zookeeper: ZooKeeperServer, zk: KazooClient
) -> BrokerProcess:
    """A broker with an id no other test of the session used (the ZooKeeper is shared)."""
    used = {int(c) for c in zk.get_children("/brokers/ids")} if zk.exists("/brokers/ids") else set()
    broker_id = max(used | {100}) + 1
    return broker_factory(broker_id=broker_id, zookeeper=zookeeper.connect_string)


def test_broker_registration_matches_the_08_layout(fresh_id_broker: BrokerProcess, zk: KazooClient) -> None:
    b = fresh_id_broker
    path = f"/brokers/ids/{b.broker_id}"
    data, stat = zk.get(path)
    assert stat.ephemeralOwner != 0, "the registration must be ephemeral"
    obj = json.loads(data)
    assert (obj["version"], obj["host"], obj["port"], obj["jmx_port"]) == (4, "127.0.0.1", b.port, -1)
    assert obj["endpoints"] == [f"PLAINTEXT://127.0.0.1:{b.port}"]
    assert obj["timestamp"].isdigit()
    assert decode_broker(path, data) == ("127.0.0.1", b.port)  # what the 0.8 consumer reads
    for common in ("/brokers/ids", "/brokers/topics", "/consumers"):
        assert zk.exists(common) is not None
    b.stop()
    assert zk.exists(path) is None, "a clean shutdown removes the ephemeral registration at once"


def test_topics_are_registered_and_rewritten_when_partitions_are_added(
    fresh_id_broker: BrokerProcess, zk: KazooClient
) -> None:
    b = fresh_id_broker
    name = f"zt-{b.broker_id}"
    admin = KafkaAdminClient(bootstrap_servers=b.bootstrap)
    admin.create_topics([NewTopic(name, 3, 1)])
    path = f"/brokers/topics/{name}"
    wait_until(lambda: zk.exists(path), 10, what=path)
    assert _topic(zk, name) == {
        "version": 1,
        "partitions": {"0": [b.broker_id], "1": [b.broker_id], "2": [b.broker_id]},
    }
    seen: list[list[int]] = []
    zk.DataWatch(path, lambda data, _stat: seen.append(decode_topic_partitions(path, data)) if data else None)
    admin.create_partitions({name: NewPartitions(total_count=5)})
    admin.close()
    wait_until(lambda: seen and seen[-1] == [0, 1, 2, 3, 4], 10, what="the watch to see 5 partitions")
    # Auto-created topics are registered too.
    producer = KafkaProducer(bootstrap_servers=b.bootstrap)
    producer.send(f"auto-{b.broker_id}", b"x").get(timeout=10)
    producer.close()
    assert _topic(zk, f"auto-{b.broker_id}") == {"version": 1, "partitions": {"0": [b.broker_id]}}


@pytest.mark.long  # moved out of the default run (12-minute budget); CI's long step runs it
def test_killed_broker_disappears_with_its_session_and_reregisters_on_restart(
    fresh_id_broker: BrokerProcess, zk: KazooClient
) -> None:
    b = fresh_id_broker
    path = f"/brokers/ids/{b.broker_id}"
    _, before = zk.get(path)
    b.kill()
    wait_until(lambda: zk.exists(path) is None, 20, what="the dead broker's session to expire")
    b.restart()
    _, after = zk.get(path)
    assert after.ephemeralOwner not in (0, before.ephemeralOwner)
    # A restart right after a kill waits for the old session instead of failing.
    b.kill()
    b.restart(timeout=40)
    assert json.loads(zk.get(path)[0])["port"] == b.port


def test_two_brokers_share_groups_by_hash_and_list_each_other(
    broker_factory: BrokerFactory, fresh_zookeeper: ZooKeeperServer, tmp_path: Path
) -> None:
    fast = ["--group-initial-rebalance-delay-ms", "0"]
    b0 = broker_factory(broker_id=0, zookeeper=fresh_zookeeper.connect_string, extra_args=fast)
    b1 = broker_factory(broker_id=1, zookeeper=fresh_zookeeper.connect_string, extra_args=fast)
    ids = [b0.broker_id, b1.broker_id]
    ports = {b0.broker_id: b0.port, b1.broker_id: b1.port}
    with RawClient("127.0.0.1", b0.port) as raw:

        def both_listed() -> object:
            r = raw.call(MetadataRequest(topics=None), 1)
            return r if len(r.brokers) == 2 else None

        brokers = wait_until(both_listed, 10, what="both brokers in Metadata")
        assert {(x.node_id, x.port) for x in brokers.brokers} == set(ports.items())
        for group in ("Hello", "my-group", "test-group", "g-1", "g-2", "g-3"):
            want = ids[partition_for(group, 50) % 2]
            r = raw.call(FindCoordinatorRequest(key=group, key_type=0), 3)
            assert (r.error_code, r.node_id, r.port) == (0, want, ports[want]), group
    # A topic on broker 1 is listed by broker 0 with broker 1 as leader, and a group whose
    # coordinator is the other broker consumes it end to end.
    admin = KafkaAdminClient(bootstrap_servers=b1.bootstrap)
    admin.create_topics([NewTopic("shared", 2, 1)])
    admin.close()
    producer = KafkaProducer(bootstrap_servers=b0.bootstrap)
    for i in range(20):
        producer.send("shared", json.dumps({"seq": i}).encode())  # the workload's value shape
    producer.flush()
    producer.close()
    group = next(g for g in (f"grp-{i}" for i in range(100)) if ids[partition_for(g, 50) % 2] == b0.broker_id)
    # The harness's member (unmodified kafka-python) consumes it; what it processed is in its history.
    history = tmp_path / "c.jsonl"
    argv = [*PY, "member", "coordinator", "--bootstrap", b0.bootstrap, "--group", group, "--topic", "shared"]
    member = MemberService(
        "c", argv + ["--name", "c", "--history", str(history)], history, tmp_path / "c.log"
    )
    member.start(timeout=30)
    try:

        def seqs() -> list[int]:
            return [e["seq"] for e in read_events(history) if e["kind"] == "record"]

        wait_until(lambda: len(seqs()) >= 20, 30, what="the member to process the 20 records")
        member.signal(signal.SIGTERM, group=False)  # a clean close: commit, LeaveGroup
        assert member.wait(15) == 0, member.log_tail()
    finally:
        member.stop()
    assert sorted(seqs()) == list(range(20))


@pytest.mark.slow
def test_broker_reregisters_after_its_session_expired(
    fresh_id_broker: BrokerProcess, zk: KazooClient
) -> None:
    b = fresh_id_broker
    path = f"/brokers/ids/{b.broker_id}"
    _, before = zk.get(path)
    b.signal(signal.SIGSTOP)  # a long GC pause: the session expires at the server
    try:
        wait_until(lambda: zk.exists(path) is None, 20, what="the paused broker's session to expire")
    finally:
        b.signal(signal.SIGCONT)
    data, after = wait_until(lambda: zk.exists(path) and zk.get(path), 20, what="re-registration")
    assert after.ephemeralOwner != before.ephemeralOwner
    assert json.loads(data)["port"] == b.port


def test_a_topic_left_in_zookeeper_by_a_broker_that_is_gone_is_adopted(
    fresh_id_broker: BrokerProcess, zk: KazooClient
) -> None:
    b = fresh_id_broker
    name = f"leftover-{b.broker_id}"
    zk.create(f"/brokers/topics/{name}", b'{"version":1,"partitions":{"0":[9999]}}', makepath=True)
    producer = KafkaProducer(bootstrap_servers=b.bootstrap)
    assert producer.send(name, b"x").get(timeout=15).offset == 0
    producer.close()
    assert _topic(zk, name) == {"version": 1, "partitions": {"0": [b.broker_id]}}
