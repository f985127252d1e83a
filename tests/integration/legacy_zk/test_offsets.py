"""Offsets in ZooKeeper: committed as the next offset to read, resumed after a restart; fenced commits
(refused from a member that lost ownership; once refused for a foreign write, accepted next time);
the takeover delay, which claims on the group as it is after the wait (spec 1.12, the two
mitigations). The fetcher is not involved here: records are reported to the member through the
fetcher's callback (``record_processed``)."""

from __future__ import annotations

from kazoo.client import KazooClient

from legacy_zk import paths
from legacy_zk.ids import TopicPartition
from tests.support.legacy_zk import create_topic, settled
from tests.support.waiting import wait_until


def stored_offset(admin: KazooClient, group: str, topic: str, partition: int) -> int | None:
    path = paths.offset_path(group, topic, partition)
    return int(admin.get(path)[0]) if admin.exists(path) else None


def test_offsets_are_committed_as_next_offset_and_resumed_after_a_restart(
    make_member, zk_admin, group, topic, events
) -> None:
    create_topic(zk_admin, topic, 2)
    tp0 = TopicPartition(topic, 0)
    m = make_member(group, {topic: 1}, auto_commit_interval_ms=600_000)
    for off in range(10):
        m.record_processed(tp0, off, b'{"seq": %d}' % off)
    assert [e["seq"] for e in events("record", member=m.id)] == list(range(10))
    m.close()  # 0.8 commits at shutdown when auto commit is on
    assert stored_offset(zk_admin, group, topic, 0) == 10  # the next offset to read
    assert stored_offset(zk_admin, group, topic, 1) is None  # nothing consumed, nothing written
    assert [(e["partition"], e["offset"]) for e in events("commit", member=m.id)] == [(0, 10)]

    again = make_member(group, {topic: 1})
    assert again.consumed_offsets() == {tp0: 10, TopicPartition(topic, 1): -1}


def test_auto_commit_writes_periodically_and_skips_unchanged_offsets(
    make_member, zk_admin, group, topic, events
):
    create_topic(zk_admin, topic, 1)
    tp0 = TopicPartition(topic, 0)
    m = make_member(group, {topic: 1}, auto_commit_interval_ms=200)
    m.record_processed(tp0, 4, None)
    wait_until(lambda: stored_offset(zk_admin, group, topic, 0) == 5, 10, what="auto commit")
    m.record_processed(tp0, 5, None)
    wait_until(lambda: stored_offset(zk_admin, group, topic, 0) == 6, 10, what="second auto commit")
    # the commit event follows the znode write: wait for it too (reading at once raced the committer)
    wait_until(lambda: len(events("commit", member=m.id)) >= 2, 10, what="the second commit event")
    assert [e["offset"] for e in events("commit", member=m.id)] == [5, 6]  # no rewrite of an unchanged offset


def test_fenced_commit_from_a_member_that_lost_ownership_is_refused(
    make_member, zk_admin, group, topic, events
):
    create_topic(zk_admin, topic, 2)
    tp0, tp1 = TopicPartition(topic, 0), TopicPartition(topic, 1)
    m = make_member(group, {topic: 1}, auto_commit_enable=False, offsets_commit_fenced=True)
    m.record_processed(tp0, 41, None)
    m.record_processed(tp1, 7, None)
    assert m.commit_offsets() == 2  # owner znodes are ours: accepted (create, since no offset existed)
    assert stored_offset(zk_admin, group, topic, 0) == 42
    m.record_processed(tp0, 42, None)
    assert m.commit_offsets() == 1  # versioned set on an existing offset znode
    assert stored_offset(zk_admin, group, topic, 0) == 43

    # tp0 now belongs to someone else (the way a zombie's partition does after its session expired)
    owner = paths.owner_path(group, topic, 0)
    zk_admin.delete(owner)
    zk_admin.create(owner, b"other-consumer-0", ephemeral=True)
    # tp1's offset was written by someone else since this member last read it
    zk_admin.set(paths.offset_path(group, topic, 1), b"100")
    m.record_processed(tp0, 50, None)
    m.record_processed(tp1, 8, None)
    assert m.commit_offsets() == 0
    assert stored_offset(zk_admin, group, topic, 0) == 43 and stored_offset(zk_admin, group, topic, 1) == 100
    rejected = {e["partition"]: e["reason"] for e in events("commit_rejected", member=m.id)}
    assert rejected[0] == "owner znode belongs to another session"
    assert rejected[1] == "offset znode was written by someone else since we read it"
    # the refusal re-read tp1's offset version: the next commit (tp1 is still ours) goes through,
    # while tp0, owned by someone else, is refused again
    assert m.commit_offsets() == 1
    assert stored_offset(zk_admin, group, topic, 1) == 9 and stored_offset(zk_admin, group, topic, 0) == 43
    assert [e["partition"] for e in events("commit", member=m.id)][-1] == 1
    assert [e["partition"] for e in events("commit_rejected", member=m.id)] == [0, 1, 0]
    zk_admin.delete(owner)


def test_unfenced_commit_from_a_member_that_lost_ownership_is_written(
    make_member, zk_admin, group, topic, events
):
    """The 0.8 behaviour the mitigation fixes: a plain setData after ownership moved."""
    create_topic(zk_admin, topic, 1)
    tp0 = TopicPartition(topic, 0)
    m = make_member(group, {topic: 1}, auto_commit_enable=False)
    owner = paths.owner_path(group, topic, 0)
    zk_admin.delete(owner)
    zk_admin.create(owner, b"other-consumer-0", ephemeral=True)
    zk_admin.create(paths.offset_path(group, topic, 0), b"500", makepath=True)  # the new owner's progress
    m.record_processed(tp0, 9, None)
    assert m.commit_offsets() == 1
    assert stored_offset(zk_admin, group, topic, 0) == 10  # the new owner's offset went backwards
    zk_admin.delete(owner)


def test_takeover_delay_waits_before_claiming_a_vanished_owners_partitions(
    make_member, zk_admin, group, topic, events
) -> None:
    create_topic(zk_admin, topic, 4)
    delay_ms = 1200
    a = make_member(group, {topic: 1}, takeover_delay_ms=delay_ms)
    b = make_member(group, {topic: 1}, takeover_delay_ms=delay_ms)
    wait_until(lambda: settled(zk_admin, group, topic, 2), 20, what="2 members settle")
    assert not events("takeover_wait"), "a join moves partitions between live members: no delay"
    lost = sorted(p.partition for p in b.owned())
    b.close()
    wait_until(lambda: settled(zk_admin, group, topic, 1), 20, what="survivor owns everything")
    waits = events("takeover_wait", member=a.id)
    assert len(waits) == 1 and [p for _t, p in waits[0]["partitions"]] == lost
    begin = next(
        e
        for e in events("rebalance_begin", member=a.id)
        if (e["rebalance"], e["attempt"]) == (waits[0]["rebalance"], 0)
    )
    claims = [e for e in events("claim", member=a.id) if e["rebalance"] == waits[0]["rebalance"]]
    assert claims and all((e["ts_ns"] - begin["ts_ns"]) / 1e6 >= delay_ms for e in claims)


def test_takeover_delay_claims_on_the_group_as_it_is_after_the_wait(
    make_member, zk_admin, group, topic, events
) -> None:
    """A member that joins while a survivor waits to take over a vanished owner's partitions is in
    the survivor's view when the wait ends: the survivor claims its share of the new group (range
    over a, c: p0-p1), not the whole topic of the view it had before waiting (which would conflict)."""
    create_topic(zk_admin, topic, 4)
    delay_ms = 2500
    a = make_member(group, {topic: 1}, consumer_id="a", takeover_delay_ms=delay_ms)
    b = make_member(group, {topic: 1}, consumer_id="b", takeover_delay_ms=delay_ms)
    wait_until(lambda: settled(zk_admin, group, topic, 2), 20, what="2 members settle")
    b.close()
    wait = wait_until(lambda: events("takeover_wait", member=a.id), 20, what="a waits to take over")[0]
    assert [p for _t, p in wait["partitions"]] == [2, 3]  # b's share under range over a, b
    c = make_member(group, {topic: 1}, consumer_id="c", takeover_delay_ms=delay_ms)
    assert events("registered", member=c.id)[0]["ts_ns"] < wait["ts_ns"] + delay_ms * 1e6, (
        "c joined during the wait"
    )
    attempt = (wait["rebalance"], wait["attempt"])
    end = wait_until(
        lambda: [
            e for e in events("rebalance_end", member=a.id) if (e["rebalance"], e["attempt"]) == attempt
        ],
        20,
        what="the attempt that waited ends",
    )[0]
    assert not [e for e in events("conflict", member=a.id) if (e["rebalance"], e["attempt"]) == attempt]
    assert end["outcome"] == "ok" and [p for _t, p in end["owned"]] == [0, 1]
    reread = events("takeover_reread", member=a.id)
    assert [(e["rebalance"], e["attempt"], e["consumers"]) for e in reread] == [(*attempt, 2)]
    assert [p for _t, p in reread[0]["claim"]] == [0, 1]
    wait_until(lambda: settled(zk_admin, group, topic, 2), 20, what="a and c settle")
    assert sorted(c.owned()) == [TopicPartition(topic, 2), TopicPartition(topic, 3)]
