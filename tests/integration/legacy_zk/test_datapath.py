"""Records from the real broker (``python -m coordinator``) through kafka-python, offsets in ZooKeeper.

The broker runs without ZooKeeper here; the test writes ``/brokers/topics/<t>`` itself, as a 0.8
admin tool would, and members get the broker address with ``bootstrap.servers``.
"""

from __future__ import annotations

import json

import pytest
from kafka import KafkaProducer
from kafka.admin import KafkaAdminClient, NewTopic

from legacy_zk import paths
from tests.support.legacy_zk import create_topic, owners, settled
from tests.support.waiting import wait_until

PARTITIONS = 3


@pytest.fixture
def data_topic(broker, zk_admin, topic) -> str:
    admin = KafkaAdminClient(bootstrap_servers=broker.bootstrap)
    try:
        admin.create_topics([NewTopic(topic, PARTITIONS, 1)])
    finally:
        admin.close()
    create_topic(zk_admin, topic, PARTITIONS)
    return topic


@pytest.fixture
def producer(broker):
    p = KafkaProducer(bootstrap_servers=broker.bootstrap, linger_ms=0)
    yield p
    p.close()


def produce(producer: KafkaProducer, topic: str, seqs: range) -> None:
    for s in seqs:
        producer.send(topic, json.dumps({"seq": s}).encode(), partition=s % PARTITIONS)
    producer.flush()


def processed(events, member: str | None = None) -> list[dict]:
    return events("record", member=member)


def stored(zk_admin, group, topic) -> dict[int, int]:
    out = {}
    for p in range(PARTITIONS):
        path = paths.offset_path(group, topic, p)
        if zk_admin.exists(path):
            out[p] = int(zk_admin.get(path)[0])
    return out


def test_records_are_processed_committed_and_resumed_after_a_restart(
    make_member, broker, zk_admin, group, data_topic, producer, events
) -> None:
    topic = data_topic
    produce(producer, topic, range(30))
    kw = dict(
        fetch=True,
        bootstrap_servers=broker.bootstrap,
        auto_offset_reset="smallest",
        auto_commit_interval_ms=300,
    )
    m = make_member(group, {topic: 1}, **kw)
    wait_until(lambda: len(processed(events, m.id)) == 30, 30, what="30 records processed")
    assert sorted(e["seq"] for e in processed(events, m.id)) == list(range(30))
    wait_until(lambda: stored(zk_admin, group, topic) == {0: 10, 1: 10, 2: 10}, 20, what="offsets committed")
    m.close()

    produce(producer, topic, range(30, 45))
    again = make_member(group, {topic: 1}, **kw)
    wait_until(lambda: len(processed(events, again.id)) == 15, 30, what="the 15 new records")
    got = processed(events, again.id)
    assert sorted(e["seq"] for e in got) == list(range(30, 45))  # nothing re-read: resumed at the commits
    assert min(e["offset"] for e in got) == 10
    wait_until(lambda: stored(zk_admin, group, topic) == {0: 15, 1: 15, 2: 15}, 20, what="new commits")


def test_largest_starts_at_the_end_without_a_stored_offset(
    make_member, broker, zk_admin, group, data_topic, producer, events
) -> None:
    topic = data_topic
    produce(producer, topic, range(6))
    m = make_member(
        group, {topic: 1}, fetch=True, bootstrap_servers=broker.bootstrap, auto_commit_interval_ms=200
    )
    # auto.offset.reset=largest (the default): the old records are skipped, the position is committed
    wait_until(
        lambda: stored(zk_admin, group, topic) == {0: 2, 1: 2, 2: 2}, 20, what="resolved positions committed"
    )
    produce(producer, topic, range(6, 9))
    wait_until(lambda: len(processed(events, m.id)) == 3, 20, what="only the new records")
    assert sorted(e["seq"] for e in processed(events, m.id)) == [6, 7, 8]


def test_a_member_cut_off_from_zookeeper_keeps_fetching_split_brain(
    proxy_host, zk_proxy, make_member, broker, zk_admin, group, data_topic, producer, events
) -> None:
    """0.8 did nothing on a disconnect: the fetcher ran on. Once the session expires the peer owns the
    partitions too, and both process the same records: the history shows the overlap. (The proxy is
    the harness's: a partition, not a closed connection. ``zk_proxy`` is requested before
    ``make_member``, so it is closed after the members, which close through it.)"""
    topic = data_topic
    kw = dict(
        fetch=True,
        bootstrap_servers=broker.bootstrap,
        auto_offset_reset="smallest",
        auto_commit_interval_ms=300,
    )
    cut_off = make_member(group, {topic: 1}, zookeeper_connect=zk_proxy.address, consumer_id="a", **kw)
    wait_until(lambda: settled(zk_admin, group, topic, 1), 20, what="the first member owns everything")
    produce(producer, topic, range(3))
    wait_until(lambda: len(processed(events, cut_off.id)) == 3, 20, what="first records")

    proxy_host.cut(zk_proxy.name)
    wait_until(lambda: any(e["state"] == "SUSPENDED" for e in events("zk_state", member=cut_off.id)), 10)
    peer = make_member(group, {topic: 1}, consumer_id="b", **kw)
    # the cut-off member's session expires; the peer alone is registered and claims everything
    wait_until(
        lambda: settled(zk_admin, group, topic, 1) and owners(zk_admin, group, topic)[0].startswith(peer.id),
        30,
    )
    produce(producer, topic, range(3, 9))
    wait_until(lambda: len(processed(events, peer.id)) >= 6, 20, what="the peer processes")
    wait_until(lambda: len(processed(events, cut_off.id)) >= 9, 20, what="the cut-off member processes too")
    peer_claim_ns = min(e["ts_ns"] for e in events("claim", member=peer.id))
    late = [e for e in processed(events, cut_off.id) if e["ts_ns"] > peer_claim_ns]
    assert late, "records processed by the cut-off member after the peer claimed the partitions"
    assert all("owned" not in e for e in late), "the cut-off member still believes it owns them"
    dup = {(e["partition"], e["offset"]) for e in late} & {
        (e["partition"], e["offset"]) for e in processed(events, peer.id)
    }
    assert dup, "the same records were processed by both members"

    proxy_host.restore(zk_proxy.name)
    # back in touch: it learns the session expired, drops its partitions, re-registers, rebalances
    wait_until(lambda: len(events("registered", member=cut_off.id)) == 2, 30, what="re-registration")
    wait_until(lambda: settled(zk_admin, group, topic, 2), 30, what="2 members settle")
    assert any(e.get("reason") == "session_expired" for e in events("revoked", member=cut_off.id))


def test_members_find_broker_and_topic_through_zookeeper_and_follow_partition_changes(
    fresh_zookeeper, broker_factory, history, events
) -> None:
    """The broker registers itself and its topics in the 0.8 layout: no bootstrap address is given,
    the member reads ``/brokers/ids``; adding partitions rewrites the topic znode, and the data watch
    makes the member rebalance onto the new partition (KAFKA-1075)."""
    from kafka.admin import NewPartitions
    from kazoo.client import KazooClient

    from legacy_zk.member import LegacyZkMember
    from tests.support.legacy_zk import fast_config

    b = broker_factory(zookeeper=fresh_zookeeper.connect_string)
    admin = KafkaAdminClient(bootstrap_servers=b.bootstrap)
    zk = KazooClient(hosts=fresh_zookeeper.connect_string)
    zk.start(timeout=15)
    producer = KafkaProducer(bootstrap_servers=b.bootstrap)
    m = LegacyZkMember(
        fast_config(fresh_zookeeper, "g-zk", {"orders": 1}, fetch=True, auto_offset_reset="smallest"),
        history=history,
    )
    try:
        admin.create_topics([NewTopic("orders", 2, 1)])
        wait_until(lambda: zk.exists(paths.topic_path("orders")), 20, what="the broker registers the topic")
        assert m.config.bootstrap_servers is None
        assert m.start()
        assert len(m.owned()) == 2
        for s in range(4):
            producer.send("orders", json.dumps({"seq": s}).encode(), partition=s % 2)
        producer.flush()
        wait_until(
            lambda: len(events("record", member=m.id)) == 4, 30, what="records via the ZK-registered broker"
        )
        admin.create_partitions({"orders": NewPartitions(3)})
        wait_until(lambda: len(m.owned()) == 3, 20, what="rebalance onto the new partition")
        assert any(e["path"] == paths.topic_path("orders") for e in events("watch", member=m.id))
        producer.close()
        producer = KafkaProducer(bootstrap_servers=b.bootstrap)  # fresh metadata: three partitions
        producer.send("orders", json.dumps({"seq": 4}).encode(), partition=2)
        producer.flush()
        wait_until(
            lambda: any(e.get("seq") == 4 for e in events("record", member=m.id)), 30, what="new partition"
        )
    finally:
        m.close()
        producer.close()
        admin.close()
        zk.stop()
        zk.close()
