"""Faults: a paused member (SIGSTOP), session expiry, malformed znodes, an unreachable ZooKeeper."""

from __future__ import annotations

import signal
import time

import pytest
from kazoo.client import KazooClient

from harness.history.writer import read_events
from harness.kernel.errors import Unreachable
from harness.procs import free_port, spawn
from harness.run.launch import legacy_member_argv
from legacy_zk import paths
from legacy_zk.config import ConsumerConfig
from legacy_zk.ids import TopicPartition
from legacy_zk.member import LegacyZkMember
from tests.support.legacy_zk import create_topic, member_argv, owners, registered, settled
from tests.support.waiting import wait_until


def expire_session(zookeeper, member: LegacyZkMember) -> None:
    """Expire ``member``'s session from outside: attach to it with its id and password, then close it."""
    thief = KazooClient(hosts=zookeeper.connect_string, client_id=member._client.client_id, timeout=5.0)
    thief.start(timeout=10)
    thief.stop()
    thief.close()


@pytest.mark.slow
def test_a_paused_member_loses_its_znodes_and_rejoins_after_sigcont(
    make_member, zookeeper, zk_admin, group, topic, tmp_path
) -> None:
    create_topic(zk_admin, topic, 6)
    survivors = [make_member(group, {topic: 1}) for _ in range(2)]
    victim_history = tmp_path / "victim.jsonl"
    victim = spawn(
        member_argv(zookeeper, group, topic, "--history", str(victim_history)),
        name="legacy-zk-paused",
        log_path=tmp_path / "victim.log",
    )
    try:
        wait_until(lambda: settled(zk_admin, group, topic, 3), 30, what="3 members settle")
        victim_id = next(e["member"] for e in read_events(victim_history) if e["kind"] == "started")
        before = read_events(victim_history)
        assert sum(e["kind"] == "registered" for e in before) == 1
        victim.signal(signal.SIGSTOP)
        # longer than its session: ZooKeeper expires it, its znodes vanish, the others take over
        wait_until(lambda: victim_id not in registered(zk_admin, group), 20, what="victim's id znode expires")
        wait_until(lambda: settled(zk_admin, group, topic, 2), 30, what="survivors own everything")
        assert {t.rsplit("-", 1)[0] for t in owners(zk_admin, group, topic).values()} == {
            m.id for m in survivors
        }
        victim.signal(signal.SIGCONT)

        def rejoined() -> bool:
            ev = read_events(victim_history)
            return (
                any(e["kind"] == "zk_state" and e["state"] == "LOST" for e in ev)
                and sum(e["kind"] == "registered" for e in ev) == 2
            )

        wait_until(rejoined, 30, what="victim notices the expiry and re-registers")
        wait_until(lambda: settled(zk_admin, group, topic, 3), 30, what="3 members settle again")
        ev = read_events(victim_history)
        assert any(e["kind"] == "revoked" and e.get("reason") == "session_expired" for e in ev)
        assert any(e["kind"] == "rebalance_begin" and "new_session" in e["reason"] for e in ev)
    finally:
        victim.stop()


def test_session_expiry_re_registers_and_rebalances(
    make_member, zookeeper, zk_admin, group, topic, events
) -> None:
    create_topic(zk_admin, topic, 4)
    m = make_member(group, {topic: 1})
    other = make_member(group, {topic: 1})
    wait_until(lambda: settled(zk_admin, group, topic, 2), 20, what="2 members settle")
    old_session = m.session_id
    expire_session(zookeeper, m)
    wait_until(lambda: m.stats["session_expiries"] == 1, 20, what="expiry noticed")
    wait_until(lambda: len(events("registered", member=m.id)) == 2, 20, what="re-registration")
    assert m.session_id != old_session
    # (after an expiry 0.8 rebalances twice: handleNewSession, then ZkClient's re-fired listeners)
    wait_until(
        lambda: settled(zk_admin, group, topic, 2) and sum(len(x.owned()) for x in (m, other)) == 4,
        20,
        what="settled after expiry",
    )
    assert any(e["state"] == "LOST" for e in events("zk_state", member=m.id))
    assert any("new_session" in e["reason"] for e in events("rebalance_begin", member=m.id))


def test_malformed_znodes_from_others_are_reported_and_skipped(
    make_member, zk_admin, group, topic, events
) -> None:
    create_topic(zk_admin, topic, 3)
    m = make_member(group, {topic: 1})
    ends_before = len(events("rebalance_end", member=m.id))
    junk = paths.id_path(group, "not-a-consumer")
    zk_admin.create(junk, b"{this is not json", ephemeral=True)
    try:
        wait_until(
            lambda: any(e["path"] == junk for e in events("malformed", member=m.id)), 20, what="report"
        )
        wait_until(lambda: len(events("rebalance_end", member=m.id)) > ends_before, 20, what="the rebalance")
        # the junk id is left out of the view: the attempt succeeds and the member still owns everything
        assert events("rebalance_end", member=m.id)[-1]["outcome"] == "ok"
        assert owners(zk_admin, group, topic) == {p: f"{m.id}-0" for p in range(3)}
        # a topic znode that does not parse counts as no partitions; the member survives it
        zk_admin.set(paths.topic_path(topic), b'{"version":1,"partitions":"three"}')
        wait_until(
            lambda: any(e["path"] == paths.topic_path(topic) for e in events("malformed", member=m.id)), 20
        )
        wait_until(lambda: events("rebalance_end", member=m.id)[-1]["owned"] == [], 20, what="no partitions")
        assert m.owned() == frozenset() and events("rebalance_end", member=m.id)[-1]["outcome"] == "ok"
        zk_admin.set(paths.topic_path(topic), paths.encode_topic({0: [0], 1: [0], 2: [0]}))
        wait_until(lambda: len(m.owned()) == 3, 20, what="recovery once the topic znode is fixed")
    finally:
        zk_admin.delete(junk)


def test_unreachable_zookeeper_at_start_is_a_clear_error() -> None:
    port = free_port()
    cfg = ConsumerConfig(
        group_id="g",
        zookeeper_connect=f"127.0.0.1:{port}",
        topics={"t": 1},
        fetch=False,
        zookeeper_connection_timeout_ms=500,
    )
    m = LegacyZkMember(cfg)
    with pytest.raises(Unreachable, match=f"127.0.0.1:{port} did not answer within 500 ms"):
        m.start()
    m.close()


def test_cli_reports_an_unreachable_zookeeper_in_one_line(tmp_path) -> None:
    port = free_port()
    log = tmp_path / "cli.log"
    argv = member_argv_unreachable(port)
    p = spawn(argv, name="legacy-zk-unreachable", log_path=log)
    try:
        assert p.wait(30) == 2
        text = log.read_text()
        assert f"herdlab: error: ZooKeeper at 127.0.0.1:{port} did not answer" in text
        assert "Traceback" not in text
    finally:
        p.stop()


def member_argv_unreachable(port: int) -> list[str]:
    return legacy_member_argv(
        f"127.0.0.1:{port}", "g", "t", "--no-fetch", "--zookeeper.connection.timeout.ms", "500"
    )


def test_cli_member_prints_assignments_and_leaves_cleanly_on_sigterm(
    zookeeper, zk_admin, fake_broker, group, topic, tmp_path
) -> None:
    create_topic(zk_admin, topic, 2)
    log = tmp_path / "member.log"
    hist = tmp_path / "member.jsonl"
    p = spawn(
        member_argv(zookeeper, group, topic, "--history", str(hist)), name="legacy-zk-cli", log_path=log
    )
    try:
        wait_until(
            lambda: "owns " in log.read_text() if log.exists() else False, 30, what="an assignment line"
        )
        assert f"owns {topic}-0,{topic}-1" in log.read_text()
        member_id = registered(zk_admin, group)[0]
        p.signal(signal.SIGTERM)
        assert p.wait(20) == 0
        assert registered(zk_admin, group) == [] and owners(zk_admin, group, topic) == {}
        kinds = [e["kind"] for e in read_events(hist) if e.get("member") == member_id]
        assert kinds[:2] == ["ready", "started"] and kinds[-1] == "stopped"
    finally:
        p.stop()


def test_gevent_host_runs_many_coordination_only_members(
    zookeeper, zk_admin, fake_broker, group, topic, tmp_path
) -> None:
    create_topic(zk_admin, topic, 12)
    hist = tmp_path / "host.jsonl"
    p = spawn(
        member_argv(zookeeper, group, topic, "--members", "12", "--history", str(hist)),
        name="legacy-zk-host",
        log_path=tmp_path / "host.log",
    )
    try:
        wait_until(lambda: settled(zk_admin, group, topic, 12), 60, what="12 gevent members settle")
        started = [e for e in read_events(hist) if e["kind"] == "started"]
        assert len(started) == 12 and all(e["handler"] == "gevent" and e["fetch"] is False for e in started)
        t_quiesce = time.time_ns()
        p.signal(signal.SIGUSR1)  # quiesce: no watch re-arming, no rebalancing during teardown
        p.signal(signal.SIGTERM)
        assert p.wait(30) == 0
        assert registered(zk_admin, group) == []
        ev = read_events(hist)
        assert sum(e["kind"] == "stopped" for e in ev) == 12
        assert not [e for e in ev if e["kind"] == "rebalance_begin" and e["ts_ns"] > t_quiesce], (
            "teardown herd"
        )
    finally:
        p.stop()


def test_owned_partitions_match_thread_ids(make_member, zk_admin, group, topic) -> None:
    create_topic(zk_admin, topic, 3)
    m = make_member(group, {topic: 3})
    assert m.owned() == {TopicPartition(topic, p) for p in range(3)}
    assert owners(zk_admin, group, topic) == {0: f"{m.id}-0", 1: f"{m.id}-1", 2: f"{m.id}-2"}
