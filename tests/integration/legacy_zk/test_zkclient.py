"""ZkClient 0.3 semantics under faults (spec 1.15), against a real ZooKeeper through the harness's
cut proxy (a partition: traffic held, nothing closed).

* the watch re-arm costs exactly ``exists`` + ``getChildren`` (child) or ``exists`` + ``getData``
  (data), the first subscription likewise, and a watch on a missing ``/brokers/ids`` fires when it is
  created;
* ``retryUntilConnected``: a cut during a rebalance stalls the attempt, which then succeeds (no failed
  attempt); a commit in flight is reissued and written;
* ``handleNewSession``: after an expiry during a rebalance, the member re-registers as soon as the new
  session is connected, not when the rebalance in flight is over;
* reconnect attempts follow the ZooKeeper 3.4.6 Java client: 1 s + random 0-1 s after a drop;
* after a reconnect within the session the subscriptions are re-armed and a change missed meanwhile
  is delivered (what the Java client's ``SetWatches`` replay gave).

Fault durations (a 1.5 s cut) are timers, as a nemesis runs them; every wait for an outcome is a
condition with a timeout. A 1.5 s cut is noticed by a member with a 1.8 s session (kazoo drops a
connection after 2/3 of the session without an answer) and does not expire it when the session was
heard from just before the cut.
"""

from __future__ import annotations

import threading
import time
from typing import Any

import pytest
from kazoo.client import KazooClient

from harness.cluster.zookeeper import ZooKeeperServer
from harness.history.writer import HistoryWriter
from legacy_zk import paths
from legacy_zk.ids import TopicPartition
from legacy_zk.member import LegacyZkMember
from tests.support.legacy_zk import create_topic, fast_config, registered, settled
from tests.support.waiting import wait_until

CUT_S = 1.5
#: a session that notices a 1.5 s cut (within 1.2 s) and outlives it (1.8 s), reconnecting quickly
BLIP = dict(zookeeper_session_timeout_ms=1800, zk_reconnect_random_ms=250, zk_reconnect_delay_ms=250)


def requests_after(evs: list[dict[str, Any]], i: int, stop: set[str]) -> list[tuple[str, str]]:
    """(op, path) of the ``zk_request`` events after ``evs[i]``, up to the first event of a ``stop`` kind."""
    out = []
    for e in evs[i + 1 :]:
        if e["kind"] in stop:
            break
        if e["kind"] == "zk_request":
            out.append((e["op"], e["path"]))
    return out


def first_index(evs: list[dict[str, Any]], start: int = 0, **match: Any) -> int:
    return next(i for i in range(start, len(evs)) if all(evs[i].get(k) == v for k, v in match.items()))


def kind_after(evs: list[dict[str, Any]], i: int, skip: str = "zk_request") -> str:
    return next(e["kind"] for e in evs[i + 1 :] if e["kind"] != skip)


def idle(events, member: LegacyZkMember) -> bool:
    """No rebalance attempt of ``member`` in flight: its last ``rebalance_begin`` has its end."""
    ev = [e for e in events(member=member.id) if e["kind"] in ("rebalance_begin", "rebalance_end")]
    return bool(ev) and ev[-1]["kind"] == "rebalance_end"


def test_subscriptions_and_each_watch_re_arm_cost_exactly_two_requests(
    make_member, zk_admin, group, topic, events
) -> None:
    create_topic(zk_admin, topic, 2)
    ids, tpath = paths.ids_dir(group), paths.topic_path(topic)
    m = make_member(group, {topic: 1})
    ev = events(member=m.id)
    # subscribeChildChanges (exists + getChildren), subscribeDataChanges (exists), then the rebalance
    reg = first_index(ev, kind="registered")
    assert requests_after(ev, reg, {"rebalance_begin"}) == [
        ("exists", ids),
        ("get_children", ids),
        ("exists", tpath),
    ]

    # a child event: another member registers
    mark = len(ev)
    other = make_member(group, {topic: 1})
    wait_until(
        lambda: settled(zk_admin, group, topic, 2) and idle(events, m) and idle(events, other),
        20,
        what="2 members settle",
    )
    ev = events(member=m.id)
    w = first_index(ev, mark, kind="watch", path=ids)
    assert ev[w]["type"] == "CHILD" and ev[w]["via"] == "notification"
    assert requests_after(ev, w, {"rebalance_begin", "watch"}) == [("exists", ids), ("get_children", ids)]
    assert kind_after(ev, w) == "rebalance_begin"  # the listener ran after the re-arm and triggered it

    # a data event: the topic znode is rewritten
    mark = len(ev)
    zk_admin.set(tpath, paths.encode_topic({0: [0], 1: [0], 2: [0]}))
    wait_until(
        lambda: settled(zk_admin, group, topic, 2) and idle(events, m), 20, what="settled on 3 partitions"
    )
    ev = events(member=m.id)
    w = first_index(ev, mark, kind="watch", path=tpath)
    assert ev[w]["type"] == "CHANGED"
    assert requests_after(ev, w, {"rebalance_begin", "watch"}) == [("exists", tpath), ("get", tpath)]
    assert kind_after(ev, w) == "rebalance_begin"
    assert len([e for e in ev[mark:] if e["kind"] == "watch"]) == 1


def test_a_watch_on_a_missing_brokers_ids_fires_when_it_is_created(
    fresh_zookeeper: ZooKeeperServer, history: HistoryWriter, events
) -> None:
    admin = KazooClient(hosts=fresh_zookeeper.connect_string, timeout=10.0)
    admin.start(timeout=15)
    create_topic(admin, "t", 2)  # /brokers/topics/t; no /brokers/ids at all
    m = LegacyZkMember(fast_config(fresh_zookeeper, "g", {"t": 1}), history=history)
    try:
        assert m.start()  # 0.8: no brokers is a successful attempt that owns nothing
        ev = events(member=m.id)
        end = first_index(ev, kind="rebalance_end")
        assert ev[end]["outcome"] == "no_brokers" and m.owned() == frozenset()
        done = [(e["op"], e["path"]) for e in ev[:end] if e["kind"] == "zk_request"]
        assert done[-2:] == [("exists", paths.BROKER_IDS), ("get_children", paths.BROKER_IDS)]

        # the parent and a broker appear together (one transaction): one creation event
        tx = admin.transaction()
        tx.create(paths.BROKER_IDS)
        tx.create(paths.broker_path(0), paths.encode_broker("127.0.0.1", 9, 0), ephemeral=True)
        assert all(not isinstance(r, Exception) for r in tx.commit())
        wait_until(lambda: len(m.owned()) == 2, 20, what="the member claims once a broker exists")
        ev = events(member=m.id)
        watches = [i for i, e in enumerate(ev) if e["kind"] == "watch"]
        assert len(watches) == 1
        w = watches[0]
        assert (ev[w]["path"], ev[w]["type"]) == (paths.BROKER_IDS, "CREATED")
        assert requests_after(ev, w, {"rebalance_begin"}) == [
            ("exists", paths.BROKER_IDS),
            ("get_children", paths.BROKER_IDS),
        ]
    finally:
        m.close()
        admin.stop()
        admin.close()


def _cut_when_a_watch_rebalance_begins(proxy_host, zk_proxy, hooked_history, member, restore_after=None):
    """Cut ``member`` off from ZooKeeper the moment a watch-triggered rebalance begins (on its
    rebalance thread, before the attempt's first request); restore after ``restore_after`` seconds."""
    cut: dict[str, Any] = {}
    timer = threading.Timer(restore_after or 0, proxy_host.restore, args=(zk_proxy.name,))
    timer.daemon = True

    def hook(kind: str, fields: dict[str, Any]) -> None:
        if (
            kind == "rebalance_begin"
            and fields.get("member") == member.id
            and fields["reason"].startswith("watch:")
            and not cut
        ):
            proxy_host.cut(zk_proxy.name)
            wait_until(lambda: zk_proxy.is_cut, 5, what="the cut")
            cut.update(rebalance=fields["rebalance"], ns=time.time_ns())
            if restore_after is not None:
                timer.start()

    hooked_history.hook = hook
    return cut, timer


def test_a_zookeeper_cut_during_a_rebalance_stalls_the_attempt_and_fails_nothing(
    make_hooked_member, proxy_host, zk_proxy, hooked_history, zk_admin, group, topic, events
) -> None:
    create_topic(zk_admin, topic, 4)
    m = make_hooked_member(group, {topic: 1}, **BLIP)
    assert m.start()
    cut, timer = _cut_when_a_watch_rebalance_begins(proxy_host, zk_proxy, hooked_history, m, CUT_S)
    try:
        zk_admin.set(paths.topic_path(topic), paths.encode_topic({p: [0] for p in range(4)}))
        wait_until(lambda: cut, 10, what="a rebalance begins and the link is cut")
        rid = cut["rebalance"]
        wait_until(
            lambda: any(e["rebalance"] == rid for e in events("rebalance_end", member=m.id)),
            20,
            what="the rebalance ends",
        )
    finally:
        timer.cancel()
    ends = [e for e in events("rebalance_end", member=m.id) if e["rebalance"] == rid]
    assert [(e["attempt"], e["outcome"], e["gave_up"]) for e in ends] == [(0, "ok", False)]
    assert ends[0]["duration_ms"] >= (CUT_S - 0.1) * 1000, "the attempt stalled across the cut"
    retried = [e for e in events("zk_retry", member=m.id) if cut["ns"] <= e["ts_ns"] <= ends[0]["ts_ns"]]
    assert retried, "a request of the attempt was interrupted by the cut and reissued"
    # a blip: the connection dropped and came back within the session
    assert [e["state"] for e in events("zk_state", member=m.id)] == ["SUSPENDED", "CONNECTED"]
    assert m.stats["failed_attempts"] == 0
    assert settled(zk_admin, group, topic, 1) and len(m.owned()) == 4


def test_a_commit_in_flight_during_a_cut_is_reissued_and_written(
    make_hooked_member, proxy_host, zk_proxy, zk_admin, group, topic, events
) -> None:
    create_topic(zk_admin, topic, 1)
    tp0 = TopicPartition(topic, 0)
    opath = paths.offset_path(group, topic, 0)
    m = make_hooked_member(group, {topic: 1}, auto_commit_enable=False, **BLIP)
    assert m.start()
    m.record_processed(tp0, 4, None)
    assert m.commit_offsets() == 1  # also: the session was heard from just now, it outlives the cut
    m.record_processed(tp0, 9, None)
    proxy_host.cut(zk_proxy.name)
    wait_until(lambda: zk_proxy.is_cut, 5, what="the cut")
    timer = threading.Timer(CUT_S, proxy_host.restore, args=(zk_proxy.name,))
    timer.daemon = True
    timer.start()
    result: dict[str, int] = {}
    committer = threading.Thread(target=lambda: result.update(written=m.commit_offsets()))
    committer.start()
    committer.join(20)
    timer.cancel()
    assert result == {"written": 1}
    assert int(zk_admin.get(opath)[0]) == 10
    assert [(e["op"], e["path"]) for e in events("zk_retry", member=m.id)][:1] == [("set", opath)]
    assert [e["offset"] for e in events("commit", member=m.id)] == [5, 10]
    assert "LOST" not in [e["state"] for e in events("zk_state", member=m.id)]


def test_an_expiry_during_a_rebalance_re_registers_as_soon_as_the_new_session_is_connected(
    make_hooked_member, proxy_host, zk_proxy, hooked_history, zk_admin, group, topic, events
) -> None:
    create_topic(zk_admin, topic, 2)
    # a long retry loop: a re-registration that waited for the rebalance in flight would come late
    m = make_hooked_member(
        group,
        {topic: 1},
        zookeeper_session_timeout_ms=1500,
        rebalance_backoff_ms=1000,
        rebalance_max_retries=6,
    )
    assert m.start()
    m.record_processed(TopicPartition(topic, 0), 6, None)  # an uncommitted position of the old session
    cut, _ = _cut_when_a_watch_rebalance_begins(proxy_host, zk_proxy, hooked_history, m)
    zk_admin.set(paths.topic_path(topic), paths.encode_topic({0: [0], 1: [0]}))
    wait_until(lambda: cut, 10, what="a rebalance begins and the link is cut")
    wait_until(lambda: m.id not in registered(zk_admin, group), 20, what="ZooKeeper expires the session")
    proxy_host.restore(zk_proxy.name)
    wait_until(lambda: len(events("registered", member=m.id)) == 2, 30, what="re-registration")

    states = events("zk_state", member=m.id)
    lost = next(e for e in states if e["state"] == "LOST")
    connected = next(e for e in states if e["state"] == "CONNECTED" and e["ts_ns"] > lost["ts_ns"])
    first, again = events("registered", member=m.id)
    assert again["session_id"] == connected["session_id"] != first["session_id"]
    assert (again["ts_ns"] - connected["ts_ns"]) / 1e9 < 1.0
    # the member revoked what it owned at once (resetState), before registering again
    revoked = [e for e in events("revoked", member=m.id) if e.get("reason") == "session_expired"]
    assert revoked and max(e["ts_ns"] for e in revoked) <= again["ts_ns"]
    wait_until(lambda: settled(zk_admin, group, topic, 1), 30, what="the member owns its partitions again")
    wait_until(lambda: len(m.owned()) == 2, 10, what="the member's registry")
    assert not any(e["gave_up"] for e in events("rebalance_end", member=m.id))
    # the old session's position was forgotten with its partitions, not committed in the new session
    assert not [e for e in events("commit", member=m.id) if e["ts_ns"] > lost["ts_ns"]]
    assert not zk_admin.exists(paths.offset_path(group, topic, 0))


@pytest.mark.parametrize(
    ("settings", "low_s", "high_s"),
    [
        ({}, 1.0, 2.0),  # the defaults: ZooKeeper 3.4.6's Java client with one server
        ({"zk_reconnect_random_ms": 0, "zk_reconnect_delay_ms": 300}, 0.3, 0.3),
    ],
    ids=["java-defaults", "configured"],
)
def test_reconnect_attempts_follow_the_java_clients_timing(
    make_hooked_member, proxy_host, zk_proxy, zk_admin, group, topic, events, settings, low_s, high_s
) -> None:
    create_topic(zk_admin, topic, 1)
    m = make_hooked_member(group, {topic: 1}, **settings)
    assert m.start()
    assert zk_proxy.stats.connections == 1
    proxy_host.cut(zk_proxy.name)
    suspended = wait_until(
        lambda: next((e for e in events("zk_state", member=m.id) if e["state"] == "SUSPENDED"), None),
        10,
        what="the member notices the cut",
    )
    # a cut proxy still accepts connections (it holds them): the accept is the reconnect attempt
    attempted_ns = wait_until(
        lambda: time.time_ns() if zk_proxy.stats.connections >= 2 else None, 10, what="a reconnect attempt"
    )
    gap = (attempted_ns - suspended["ts_ns"]) / 1e9
    assert low_s <= gap <= high_s + 0.4, gap  # +0.4 s: polling and scheduling on a busy machine


def test_a_change_missed_during_a_blip_is_delivered_after_the_reconnect(
    make_hooked_member, make_member, proxy_host, zk_proxy, zk_admin, group, topic, events
) -> None:
    create_topic(zk_admin, topic, 4)
    a = make_hooked_member(group, {topic: 1}, consumer_id="a", **BLIP)
    assert a.start()
    a.zk.exists(paths.ids_dir(group))  # the session was heard from just now: it outlives the cut
    proxy_host.cut(zk_proxy.name)
    wait_until(lambda: zk_proxy.is_cut, 5, what="the cut")
    timer = threading.Timer(CUT_S, proxy_host.restore, args=(zk_proxy.name,))
    timer.daemon = True
    timer.start()
    # b joins while a is cut off: the notification to a is lost with a's connection
    # (b retries its conflicting claims for up to 10 s, until a releases them)
    joiner = threading.Thread(
        target=lambda: make_member(group, {topic: 1}, consumer_id="b", rebalance_max_retries=50)
    )
    joiner.start()
    try:
        wait_until(
            lambda: any(e["via"] == "reconnect" for e in events("watch", member=a.id)),
            20,
            what="the missed child change, delivered after the reconnect",
        )
        wait_until(lambda: settled(zk_admin, group, topic, 2), 30, what="2 members settle")
    finally:
        timer.cancel()
        joiner.join(30)
    replayed = [e for e in events("watch", member=a.id) if e["via"] == "reconnect"]
    assert [(e["path"], e["type"]) for e in replayed] == [(paths.ids_dir(group), "CHILD")]
    assert [e["state"] for e in events("zk_state", member=a.id)] == ["SUSPENDED", "CONNECTED"]
