"""NodeExists conflicts, retries, backoff, giving up, and a burst of 20 joins (spec 1.8, 1.11)."""

from __future__ import annotations

import threading
from collections import defaultdict

from kazoo.client import KazooClient

from legacy_zk import paths
from legacy_zk.ids import TopicPartition
from tests.support.legacy_zk import create_topic, owners, registered, settled
from tests.support.waiting import wait_until


def _block(admin: KazooClient, group: str, topic: str, partition: int, holder: str = "someone-else-0") -> str:
    """An owner znode held by another session, as a peer that has not released yet would hold it."""
    path = paths.owner_path(group, topic, partition)
    admin.create(path, holder.encode(), ephemeral=True, makepath=True)
    return path


def test_a_conflict_fails_the_attempt_rolls_back_and_is_retried(
    make_member, zk_admin, group, topic, events
) -> None:
    create_topic(zk_admin, topic, 4)
    blocker = _block(zk_admin, group, topic, 3)
    m = make_member(group, {topic: 1}, start=False, rebalance_backoff_ms=100, rebalance_max_retries=50)
    starter = threading.Thread(target=m.start)
    starter.start()
    try:
        wait_until(
            lambda: sum(e["outcome"] == "conflict" for e in events("rebalance_end", member=m.id)) >= 2,
            20,
            what="two conflicting attempts",
        )
        # every attempt that hit the conflict deleted the claims it had made (p0..p2)
        ends = [e for e in events("rebalance_end", member=m.id) if e["outcome"] == "conflict"]
        assert ends and all(not e["gave_up"] for e in ends)
        for end in ends:
            attempt = (end["rebalance"], end["attempt"])
            claims = {
                e["partition"]
                for e in events("claim", member=m.id)
                if (e["rebalance"], e["attempt"]) == attempt
            }
            rolled = {
                e["partition"]
                for e in events("release", member=m.id)
                if (e["rebalance"], e["attempt"]) == attempt and e.get("rollback")
            }
            assert claims == rolled == {0, 1, 2}
        conflict = events("conflict", member=m.id)[0]
        assert conflict["partition"] == 3 and conflict["holder"] == "someone-else-0"
        assert m.stats["conflicts"] >= 2 and m.stats["failed_attempts"] >= 2
        zk_admin.delete(blocker)  # the slow peer finally releases
        starter.join(20)
        wait_until(lambda: settled(zk_admin, group, topic, 1), 20, what="member claims after the release")
        assert m.owned() == {TopicPartition(topic, p) for p in range(4)}
        last = events("rebalance_end", member=m.id)[-1]
        assert last["outcome"] == "ok"
    finally:
        if zk_admin.exists(blocker):
            zk_admin.delete(blocker)
        starter.join(30)


def test_exhausted_retries_give_up_registered_and_recover_on_the_next_watch(
    make_member, zk_admin, group, topic, events
) -> None:
    create_topic(zk_admin, topic, 2)
    blocker = _block(zk_admin, group, topic, 0)
    m = make_member(group, {topic: 1}, start=False, rebalance_backoff_ms=50, rebalance_max_retries=3)
    assert m.start() is False  # 0.8 threw ConsumerRebalanceFailedException here
    ends = events("rebalance_end", member=m.id)
    assert [e["attempt"] for e in ends] == [0, 1, 2]
    assert [e["outcome"] for e in ends] == ["conflict"] * 3
    assert [e["gave_up"] for e in ends] == [False, False, True]
    assert m.gave_up and m.owned() == frozenset()
    assert m.id in registered(zk_admin, group), "a member that gave up stays registered"
    assert owners(zk_admin, group, topic) == {0: "someone-else-0"}
    # the next watch event (here: the topic znode changes) makes it try again
    zk_admin.delete(blocker)
    zk_admin.set(paths.topic_path(topic), paths.encode_topic({0: [0], 1: [0]}))
    wait_until(lambda: settled(zk_admin, group, topic, 1), 20, what="recovery after the next watch")
    assert not m.gave_up
    assert any(e["path"] == paths.topic_path(topic) for e in events("watch", member=m.id))


def test_twenty_members_joining_at_once_converge_or_give_up_as_0_8_did(
    make_member, zk_admin, group, topic, events
) -> None:
    """Short backoff: every member either ends with a successful attempt, or made exactly
    ``rebalance.max.retries`` failed attempts in its last rebalance and owns nothing."""
    retries = 4
    create_topic(zk_admin, topic, 20)
    ms = [
        make_member(group, {topic: 1}, start=False, rebalance_backoff_ms=300, rebalance_max_retries=retries)
        for _ in range(20)
    ]
    threads = [threading.Thread(target=m.start) for m in ms]
    for t in threads:
        t.start()
    for t in threads:
        t.join(120)

    def quiet() -> bool:
        # no member rebalancing: each member's last rebalance_begin has its rebalance_end
        last_begin, last_end = {}, {}
        for e in events():
            key = (e["rebalance"], e["attempt"]) if "rebalance" in e else None
            if e["kind"] == "rebalance_begin":
                last_begin[e["member"]] = key
            elif e["kind"] == "rebalance_end":
                last_end[e["member"]] = key
        return len(last_begin) == 20 and all(last_end.get(k) == v for k, v in last_begin.items())

    wait_until(lambda: quiet() and (settled(zk_admin, group, topic, 20) or any(m.gave_up for m in ms)), 90)
    wait_until(quiet, 60, what="no rebalance in flight")
    by_member = defaultdict(list)
    for e in events("rebalance_end"):
        by_member[e["member"]].append(e)
    for m in ms:
        ends = by_member[m.id]
        last_rebalance = [e for e in ends if e["rebalance"] == ends[-1]["rebalance"]]
        if ends[-1]["outcome"] == "ok":
            assert not m.gave_up
        else:
            assert m.gave_up and m.owned() == frozenset()
            assert [e["attempt"] for e in last_rebalance] == list(range(retries))
            assert all(e["outcome"] != "ok" for e in last_rebalance) and last_rebalance[-1]["gave_up"]
    if not any(m.gave_up for m in ms):
        assert settled(zk_admin, group, topic, 20)
    # the burst caused conflicts (members raced for owner znodes) and they were counted
    total_conflicts = sum(m.stats["conflicts"] for m in ms)
    assert total_conflicts == len(events("conflict"))
