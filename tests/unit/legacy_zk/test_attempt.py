"""The synced rebalance of 2-3 members against the in-memory ZooKeeper (no server, no threads).

Each member has its own session of one :class:`MemZk` tree holding a 0.8 layout: broker 1, topic
``t`` with 4 partitions, and the members' ephemeral registrations. Expected assignments are worked
out by hand from 0.8's range assignor: consumers sorted, ``4 // n`` partitions each, the first
``4 % n`` consumers one more.
"""

from __future__ import annotations

import pytest

from legacy_zk import paths
from legacy_zk.ids import ThreadId
from legacy_zk.memzk import MemZk
from legacy_zk.states import RebalanceState
from tests.support.memzk_members import G, Member, memzk_cluster, tp


@pytest.fixture
def zk() -> MemZk:
    """Broker 1 and topic t (4 partitions, replicas on broker 1), as 0.8's admin tools wrote them."""
    return memzk_cluster(4)


def owners(zk: MemZk) -> dict[int, bytes]:
    prefix = paths.owners_dir(G, "t") + "/"
    return {int(p[len(prefix) :]): d for p, d in zk.dump().items() if p.startswith(prefix)}


def test_two_members_split_the_partitions_by_range_and_claim_them(zk: MemZk) -> None:
    # a committed offset 42 for partition 1 earlier (the znode holds the next offset to read)
    admin = zk.session()
    admin.create_parents(paths.offsets_dir(G, "t"))
    admin.create(paths.offset_path(G, "t", 1), b"42")
    a, b = Member(zk, "a"), Member(zk, "b")
    a.session.counts.clear()  # count the rebalance's requests only (not the registration)

    assert a.rebalancer.synced_rebalance(["start"]) is True
    # consumers [g_a, g_b], 4 partitions: 4 // 2 = 2 each, g_a-0 first
    assert owners(zk) == {0: b"g_a-0", 1: b"g_a-0"}
    for p in (0, 1):
        assert admin.get(paths.owner_path(G, "t", p))[1].ephemeralOwner == a.session.id
    assert a.registry.owned() == {tp(0), tp(1)}
    assert a.registry.consumed() == {tp(0): -1, tp(1): 42}  # no offset znode: auto.offset.reset
    assert a.hooks.fetching == [{tp(0): -1, tp(1): 42}]
    assert [(e["outcome"], e["gave_up"], e["owned"]) for e in a.kinds("rebalance_end")] == [
        ("ok", False, [["t", 0], ["t", 1]])
    ]
    assert [(e["partition"], e["thread"]) for e in a.kinds("claim")] == [(0, "g_a-0"), (1, "g_a-0")]
    assert [e["partition"] for e in a.kinds("assigned")] == [0, 1]
    assert a.kinds("assigned")[0]["consumers"] == 2
    # the requests of 0.8's attempt, worked out per step (see legacy_zk.model):
    # get_children: /brokers/ids twice, the ids twice (consumers per topic, consumers in group), then
    #      /brokers/ids by the leader finder = 5;
    # get: broker 1 twice, own registration, then in the view: own registration, topic, g_a, g_b,
    #      then 2 offsets, then broker 1 by the leader finder = 10;
    # create: owner t/0 (NoNode), owners/t (NoNode), owners, owners/t, owner t/0, then owner t/1 = 6
    assert dict(a.session.counts) == {"get_children": 5, "get": 10, "create": 6}
    assert a.hooks.leader_finds == 1  # it owns partitions: the fetcher's leader finder read the brokers
    assert a.rebalancer.state.state is RebalanceState.SETTLED and not a.rebalancer.gave_up

    assert b.rebalancer.synced_rebalance(["start"]) is True
    assert owners(zk) == {0: b"g_a-0", 1: b"g_a-0", 2: b"g_b-0", 3: b"g_b-0"}
    assert b.registry.consumed() == {tp(2): -1, tp(3): -1}


def test_a_join_makes_the_owner_release_everything_then_claim_its_share(zk: MemZk) -> None:
    a = Member(zk, "a")
    assert a.rebalancer.synced_rebalance(["start"])
    assert owners(zk) == {p: b"g_a-0" for p in range(4)}  # alone: all four
    Member(zk, "b")  # joins (registers); a's ids watch would fire
    assert a.rebalancer.synced_rebalance(["watch:/consumers/g/ids"])
    # eager: all four owner znodes deleted first, then 0 and 1 claimed again
    assert [e["partition"] for e in a.kinds("release")] == [0, 1, 2, 3]
    assert [e["partition"] for e in a.kinds("revoked")] == [0, 1, 2, 3]
    assert owners(zk) == {0: b"g_a-0", 1: b"g_a-0"}
    last = [e for e in a.kinds("assigned") if e["rebalance"] == 2]
    assert last[0]["lost"] == [["t", 2], ["t", 3]] and last[0]["gained"] == []


def test_a_conflicting_claim_fails_the_attempt_and_the_retry_after_backoff_succeeds(zk: MemZk) -> None:
    a, b, c = Member(zk, "a"), Member(zk, "b"), Member(zk, "c")
    # consumers [g_a, g_b, g_c]: 4 // 3 = 1 each, 4 % 3 = 1 extra for g_a -> g_a-0 owns 0 and 1
    stale = zk.session()  # a vanished owner whose session has not expired yet holds partition 1
    stale.create_parents(paths.owners_dir(G, "t"))
    stale.create(paths.owner_path(G, "t", 1), b"g_z-0", ephemeral=True)
    a.hooks.on_wait = lambda n: stale.expire()  # the stale session expires during the backoff

    assert a.rebalancer.synced_rebalance(["start"]) is True
    ends = a.kinds("rebalance_end")
    assert [(e["attempt"], e["outcome"], e["gave_up"]) for e in ends] == [
        (0, "conflict", False),
        (1, "ok", False),
    ]
    assert [(e["partition"], e["holder"]) for e in a.kinds("conflict")] == [(1, "g_z-0")]
    # attempt 0 had claimed partition 0 before it met the conflict: that claim was rolled back
    assert [(e["attempt"], e["partition"], e.get("rollback")) for e in a.kinds("release")] == [(0, 0, True)]
    assert [(e["attempt"], e["partition"]) for e in a.kinds("claim")] == [(0, 0), (1, 0), (1, 1)]
    assert a.hooks.waits == [0.25]  # rebalance.backoff.ms once, between the two attempts
    # stop fetching + commit: in each attempt, and once more after the failed one
    assert a.hooks.closed_fetchers == 3
    assert owners(zk) == {0: b"g_a-0", 1: b"g_a-0"}
    assert (a.stats["conflicts"], a.stats["failed_attempts"], a.stats["attempts"]) == (1, 1, 2)
    assert b.rebalancer.synced_rebalance(["start"]) and c.rebalancer.synced_rebalance(["start"])
    assert owners(zk) == {0: b"g_a-0", 1: b"g_a-0", 2: b"g_b-0", 3: b"g_c-0"}


def test_a_member_gives_up_after_its_last_attempt_and_owns_nothing(zk: MemZk) -> None:
    a = Member(zk, "a", max_retries=2, backoff_ms=100)
    Member(zk, "b")
    stale = zk.session()
    stale.create_parents(paths.owners_dir(G, "t"))
    stale.create(paths.owner_path(G, "t", 1), b"g_z-0", ephemeral=True)

    assert a.rebalancer.synced_rebalance(["start"]) is False
    ends = a.kinds("rebalance_end")
    assert [(e["outcome"], e["gave_up"]) for e in ends] == [("conflict", False), ("conflict", True)]
    assert a.hooks.waits == [0.1, 0.1]  # 0.8 backs off after the last attempt too
    assert a.rebalancer.gave_up and a.rebalancer.state.state is RebalanceState.GAVE_UP
    assert a.hooks.assignments == [("gave_up", [])]
    assert a.registry.owned() == frozenset()
    assert owners(zk) == {1: b"g_z-0"}  # its claims of partition 0 were rolled back each time
    assert a.stats["gave_up"] == 1

    # the next change: the stale owner is gone, the member rebalances and succeeds
    stale.expire()
    assert a.rebalancer.synced_rebalance(["watch:/consumers/g/ids"]) is True
    assert not a.rebalancer.gave_up and owners(zk) == {0: b"g_a-0", 1: b"g_a-0"}


def test_no_broker_is_a_success_that_watches_the_broker_ids(zk: MemZk) -> None:
    admin = zk.session()
    admin.delete(paths.broker_path(1))
    a = Member(zk, "a")
    assert a.rebalancer.synced_rebalance(["start"]) is True
    assert [e["outcome"] for e in a.kinds("rebalance_end")] == ["no_brokers"]
    assert a.hooks.watched_brokers == 1 and owners(zk) == {}


def test_a_vanished_registration_is_an_error_outcome(zk: MemZk) -> None:
    a = Member(zk, "a", register=False, max_retries=1)
    assert a.rebalancer.synced_rebalance(["start"]) is False
    (end,) = a.kinds("rebalance_end")
    assert end["outcome"] == "error" and end["detail"].startswith("NoNodeError")


def test_shutdown_during_the_backoff_stops_the_rebalance(zk: MemZk) -> None:
    a = Member(zk, "a")
    stale = zk.session()
    stale.create_parents(paths.owners_dir(G, "t"))
    stale.create(paths.owner_path(G, "t", 0), b"g_z-0", ephemeral=True)

    def close(n: int) -> None:
        a.hooks.stopping = True

    a.hooks.on_wait = close
    assert a.rebalancer.synced_rebalance(["start"]) is False
    assert [e["outcome"] for e in a.kinds("rebalance_end")] == ["conflict"]
    assert a.rebalancer.state.state is RebalanceState.STOPPED and not a.rebalancer.gave_up
    assert a.rebalancer.synced_rebalance(["late"]) is False  # nothing starts once closing
    assert a.kinds("rebalance_begin") == [a.kinds("rebalance_begin")[0]]


def test_a_malformed_peer_registration_is_left_out_of_the_view(zk: MemZk) -> None:
    a = Member(zk, "a")
    admin = zk.session()
    admin.create(paths.id_path(G, "g_bad"), b"not json", ephemeral=True)
    assert a.rebalancer.synced_rebalance(["start"])
    # g_bad is a consumer in the group but subscribes to nothing: a owns all four
    assert owners(zk) == {p: b"g_a-0" for p in range(4)}
    assert [e["path"] for e in a.kinds("malformed")] == [paths.id_path(G, "g_bad")]
    assert ThreadId("g_a", 0) == ThreadId.parse(owners(zk)[0].decode())
