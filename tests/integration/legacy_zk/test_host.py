"""A host of several legacy members on threads (harness.members.legacy_host) against a real ZooKeeper: each
member's life cycle runs on the member template, and the host stops them one after the other."""

from __future__ import annotations

import threading

from kazoo.client import KazooClient

from harness.history.writer import HistoryWriter
from harness.members.legacy_host import run_members
from legacy_zk.member import LegacyZkMember
from tests.support.legacy_zk import create_topic, fast_config, owners, registered, settled
from tests.support.waiting import wait_until


def test_a_threading_host_runs_every_member_and_closes_them_one_after_the_other(
    zookeeper, zk_admin: KazooClient, fake_broker, group, topic, history: HistoryWriter, events
) -> None:
    create_topic(zk_admin, topic, 4)
    configs = [fast_config(zookeeper, group, {topic: 1}, name=n) for n in ("h1", "h2")]
    started: list[LegacyZkMember] = []
    changes: list[tuple[str, str]] = []
    stop = threading.Event()
    host = threading.Thread(
        target=run_members,
        args=(configs, history),
        kwargs={
            "handler": "threading",
            "on_started": started.extend,
            "on_assignment": lambda m, what, _ps: changes.append((m.config.name or "", what)),
            "stop": stop,
        },
        daemon=True,
    )
    host.start()
    try:
        wait_until(lambda: settled(zk_admin, group, topic, 2), 30, what="the host's two members settle")
        wait_until(lambda: len(started) == 2, 10, what="on_started")
    finally:
        stop.set()
        host.join(30)
    assert not host.is_alive()
    assert [m.config.name for m in started] == ["h1", "h2"]
    assert {name for name, what in changes if what == "assigned"} == {"h1", "h2"}
    assert registered(zk_admin, group) == [] and owners(zk_admin, group, topic) == {}
    ev = events()
    for name in ("h1", "h2"):
        kinds = [e["kind"] for e in ev if e["source"] == name and e["kind"] not in ("zk_request", "zk_state")]
        assert kinds[:3] == ["ready", "started", "registered"] and kinds[-1] == "stopped"
        assert kinds.count("ready") == kinds.count("started") == kinds.count("stopped") == 1
    # the first member's close (its stopped) ends before the second one's begins (its shutdown revoke)
    at = {(e["source"], e["kind"], e.get("reason")): i for i, e in enumerate(ev)}
    assert at[("h1", "stopped", None)] < at[("h2", "revoked", "shutdown")]
