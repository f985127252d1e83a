"""Members against a real ZooKeeper: ownership after joins, leaves and crashes; spec vectors."""

from __future__ import annotations

import json
import signal
import threading

from kazoo.client import KazooClient

from harness.procs import spawn
from legacy_zk import paths
from legacy_zk.ids import TopicPartition
from tests.support.legacy_zk import create_topic, expected, member_argv, owners, registered, settled
from tests.support.waiting import wait_until


def test_one_member_registers_and_owns_every_partition(
    make_member, zk_admin: KazooClient, group, topic, events
) -> None:
    create_topic(zk_admin, topic, 8)
    m = make_member(group, {topic: 1})
    assert m.owned() == {TopicPartition(topic, p) for p in range(8)}
    assert owners(zk_admin, group, topic) == {p: f"{m.id}-0" for p in range(8)}
    data, stat = zk_admin.get(paths.id_path(group, m.id))
    reg = json.loads(data)
    assert reg["version"] == 1 and reg["subscription"] == {topic: 1} and reg["pattern"] == "static"
    assert isinstance(reg["timestamp"], str) and stat.ephemeralOwner == m.session_id
    assigned = events("assigned", member=m.id)
    assert assigned and assigned[-1]["all"] == [[topic, p] for p in range(8)]
    assert sorted(e["partition"] for e in assigned if e["rebalance"] == assigned[-1]["rebalance"]) == list(
        range(8)
    )
    assert all(e["impl"] == "legacy_zk" and e["group"] == group for e in events(member=m.id))
    requests = {e["op"] for e in events("zk_request", member=m.id)}
    assert {"create", "get", "get_children", "exists"} <= requests


def test_joins_and_leaves_keep_ownership_disjoint_and_covering(
    make_member, zk_admin, group, topic, events
) -> None:
    create_topic(zk_admin, topic, 6)
    ms = []
    for n in range(1, 4):
        ms.append(make_member(group, {topic: 1}))
        wait_until(lambda n=n: settled(zk_admin, group, topic, n), 20, what=f"{n} members settle")
    # every member's own view of its ownership agrees with ZooKeeper
    wait_until(lambda: sum(len(m.owned()) for m in ms) == 6, 10, what="members' registries")
    leaver = ms.pop(1)
    leaver.close()
    wait_until(lambda: settled(zk_admin, group, topic, 2), 20, what="2 members settle after a leave")
    got = owners(zk_admin, group, topic)
    assert {t.rsplit("-", 1)[0] for t in got.values()} == {m.id for m in ms}
    assert events("watch", member=ms[0].id), "the remaining members were notified"


def test_a_crashed_member_is_replaced_after_its_session_expires(
    make_member, zookeeper, zk_admin, group, topic, tmp_path
) -> None:
    create_topic(zk_admin, topic, 4)
    local = make_member(group, {topic: 1})
    child = spawn(
        member_argv(zookeeper, group, topic), name="legacy-zk-victim", log_path=tmp_path / "victim.log"
    )
    try:
        wait_until(lambda: settled(zk_admin, group, topic, 2), 30, what="2 members settle")
        child.signal(signal.SIGKILL)
        child.wait(10)
        # the victim's id and owner znodes disappear with its session; the survivor takes over
        wait_until(lambda: settled(zk_admin, group, topic, 1), 30, what="survivor owns everything")
        assert owners(zk_admin, group, topic) == {p: f"{local.id}-0" for p in range(4)}
    finally:
        child.stop()


def test_range_vector_two_consumers_two_streams_five_partitions(make_member, zk_admin, group, topic) -> None:
    # spec 1.10 worked example: p0,p1 -> C1-0; p2 -> C1-1; p3 -> C2-0; p4 -> C2-1
    create_topic(zk_admin, topic, 5)
    make_member(group, {topic: 2}, consumer_id="C1")
    make_member(group, {topic: 2}, consumer_id="C2")
    want = {
        0: f"{group}_C1-0",
        1: f"{group}_C1-0",
        2: f"{group}_C1-1",
        3: f"{group}_C2-0",
        4: f"{group}_C2-1",
    }
    wait_until(lambda: owners(zk_admin, group, topic) == want, 20, what="range vector")


def test_roundrobin_vector_three_consumers_twelve_partitions(make_member, zk_admin, group, topic) -> None:
    # JVM hash order of "[t,p]" for a topic: p10, p11, p0, p1, ..., p9 (whatever the topic name's
    # prefix, the digits decide: see test_assignors). Threads A-0, B-0, C-0 in turn.
    create_topic(zk_admin, topic, 12)
    for name in ("A", "B", "C"):
        make_member(group, {topic: 1}, consumer_id=name, partition_assignment_strategy="roundrobin")
    want = expected(zk_admin, group, topic, "roundrobin")
    wait_until(lambda: settled(zk_admin, group, topic, 3, "roundrobin"), 20, what="roundrobin settles")
    by_member: dict[str, list[int]] = {}
    for p, t in sorted(owners(zk_admin, group, topic).items()):
        by_member.setdefault(t, []).append(p)
    assert owners(zk_admin, group, topic) == want
    # the order of "[<topic>,<p>]" hash codes for p = 0..11 decides who gets what
    from harness.kernel.javacompat import java_string_hashcode

    order = sorted(range(12), key=lambda p: java_string_hashcode(f"[{topic},{p}]"))
    threads = [f"{group}_A-0", f"{group}_B-0", f"{group}_C-0"]
    assert by_member == {t: sorted(order[i::3]) for i, t in enumerate(threads)}


def test_members_started_concurrently_converge(make_member, zk_admin, group, topic) -> None:
    create_topic(zk_admin, topic, 10)
    ms = [make_member(group, {topic: 1}, start=False) for _ in range(5)]
    threads = [threading.Thread(target=m.start) for m in ms]
    for t in threads:
        t.start()
    for t in threads:
        t.join(60)
    wait_until(lambda: settled(zk_admin, group, topic, 5), 30, what="5 concurrent members settle")
    assert registered(zk_admin, group) == sorted(m.id for m in ms)
