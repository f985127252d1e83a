"""Every row of the state-transition table (spec 2.4) and the validPreviousStates rule."""

from __future__ import annotations

from collections.abc import Callable

import pytest

from coordinator.core.group import (
    DeleteGroupsRequest,
    ErrorCode,
    GroupMetadataRecord,
    GroupState,
    GroupTombstoneRecord,
)
from coordinator.core.group.group import VALID_PREVIOUS_STATES, Group, IllegalTransition
from tests.support.group_driver import Driver, G

S = GroupState


# ---------------------------------------------------------------------------------------------- validPreviousStates

ALLOWED = {
    (S.STABLE, S.PREPARING_REBALANCE),
    (S.COMPLETING_REBALANCE, S.PREPARING_REBALANCE),
    (S.EMPTY, S.PREPARING_REBALANCE),
    (S.PREPARING_REBALANCE, S.COMPLETING_REBALANCE),
    (S.COMPLETING_REBALANCE, S.STABLE),
    (S.PREPARING_REBALANCE, S.EMPTY),
} | {(s, S.DEAD) for s in S}


@pytest.mark.parametrize("src", list(S))
@pytest.mark.parametrize("dst", list(S))
def test_valid_previous_states_are_enforced(src: GroupState, dst: GroupState) -> None:
    g = Group("g", src)
    if (src, dst) in ALLOWED:
        assert g.transition_to(dst, 5) is src
        assert g.state is dst and g.state_timestamp_ms == 5
    else:
        with pytest.raises(IllegalTransition):
            g.transition_to(dst, 5)
        assert g.state is src


def test_valid_previous_states_table_matches_spec() -> None:
    assert {(p, s) for s, prev in VALID_PREVIOUS_STATES.items() for p in prev} == ALLOWED


# ---------------------------------------------------------------------------------------------- (none) -> Empty


def test_join_without_member_id_creates_empty_group() -> None:
    d = Driver()
    tok = d.join()  # v7 dynamic: MEMBER_ID_REQUIRED, the group exists and stays Empty
    assert d.resp(tok).error == ErrorCode.MEMBER_ID_REQUIRED
    assert d.state() is S.EMPTY
    assert d.generation() == 0


def test_join_with_member_id_does_not_create_group() -> None:
    d = Driver()
    tok = d.join("someone-1")
    assert d.resp(tok).error == ErrorCode.UNKNOWN_MEMBER_ID
    assert d.state() is None


# ---------------------------------------------------------------------------------------------- Empty -> Preparing


def _dynamic_v3(d: Driver) -> int:
    return d.join(version=3)


def _static(d: Driver) -> int:
    return d.join(instance="i1")


def _pending_rejoin(d: Driver) -> int:
    first = d.join()
    assert d.state() is S.EMPTY  # a pending member alone does not start a rebalance
    return d.join(d.resp(first).member_id)


@pytest.mark.parametrize(
    "how", [_dynamic_v3, _static, _pending_rejoin], ids=["dynamic-v3", "static", "pending"]
)
def test_empty_to_preparing_uses_initial_delayed_join(how: Callable[[Driver], int]) -> None:
    d = Driver()
    tok = how(d)
    assert d.state() is S.PREPARING_REBALANCE
    # InitialDelayedJoin: everyone has joined, but it still waits the full delay.
    assert d.timers[("join", G)] == d.now + 3000
    d.advance(2999)
    assert d.resp(tok) is None
    d.advance(1)
    r = d.resp(tok)
    assert r.error == ErrorCode.NONE and r.generation_id == 1
    assert d.state() is S.COMPLETING_REBALANCE


# ---------------------------------------------------------------------------------------------- Stable -> Preparing


def _stable_expiry(d: Driver, ids: list[str]) -> None:
    for _ in range(2):  # everyone but the last member keeps heartbeating
        d.advance(4000)
        for m in ids[:-1]:
            assert d.hb(m, 1) == ErrorCode.NONE
    d.advance(4000)  # the last member's session (10 s after its SyncGroup) runs out
    assert ids[-1] not in d.members()
    assert d.kinds("member_removed")[-1]["reason"] == "expired"


def _stable_leave(d: Driver, ids: list[str]) -> None:
    r = d.leave((ids[1], None))
    assert r.error == ErrorCode.NONE and r.members[0].error == ErrorCode.NONE


def _stable_leader_join(d: Driver, ids: list[str]) -> None:
    d.join(ids[0])


def _stable_follower_changed(d: Driver, ids: list[str]) -> None:
    d.join(ids[1], protocols=[("range", b"CHANGED"), ("roundrobin", b"RR")])


@pytest.mark.parametrize(
    "trigger",
    [_stable_expiry, _stable_leave, _stable_leader_join, _stable_follower_changed],
    ids=["heartbeat-expiry", "leave", "leader-join", "follower-changed-metadata"],
)
def test_stable_to_preparing(trigger: Callable[[Driver, list[str]], None]) -> None:
    d = Driver()
    ids = d.stable_group(3)
    trigger(d, ids)
    assert d.state() is S.PREPARING_REBALANCE
    assert d.generation() == 1  # not bumped until the barrier completes
    assert d.timers[("join", G)] > d.now  # a DelayedJoin, not an InitialDelayedJoin
    assert d.kinds("rebalance_begin")[-1]["generation"] == 1


def test_stable_static_rejoin_changing_selected_protocol_rebalances() -> None:
    d = Driver()
    s1 = d.join(instance="i1", protocols=[("range", b"R"), ("roundrobin", b"RR")])
    s2 = d.join(instance="i2", protocols=[("roundrobin", b"RR"), ("range", b"R")])
    d.advance(6000)
    gen = d.generation()
    r1, r2 = d.resp(s1), d.resp(s2)
    # Tie (one vote each): the oldest member's preference wins (documented deterministic tie-break).
    assert r1.protocol_name == "range"
    leader = r1.leader
    d.sync(r2.member_id, gen)
    d.sync(leader, gen, {r1.member_id: b"a1", r2.member_id: b"a2"})
    assert d.state() is S.STABLE
    # i1 comes back preferring roundrobin only: the selection changes -> rebalance
    d.join(instance="i1", protocols=[("roundrobin", b"RR")])
    assert d.state() is S.PREPARING_REBALANCE


def test_stable_follower_join_with_same_metadata_stays_stable() -> None:
    d = Driver()
    ids = d.stable_group(2)
    tok = d.join(ids[1])
    r = d.resp(tok)
    assert d.state() is S.STABLE
    assert r.error == ErrorCode.NONE and r.generation_id == 1 and r.members == [] and r.leader == ids[0]


# ---------------------------------------------------------------------------------------------- Completing -> Preparing


def _completing(d: Driver) -> tuple[list[str], int]:
    """Three members A (leader), B, C in CompletingRebalance; B has a parked SyncGroup. Returns ids, B's token."""
    ids, toks = [], []
    for i in range(3):
        mid, tok = d.join_new(client_id=f"c{i}", rebalance=20_000)
        ids.append(mid)
        toks.append(tok)
    d.advance(6000)
    assert d.state() is S.COMPLETING_REBALANCE
    assert d.resp(toks[0]).leader == ids[0]
    btok = d.sync(ids[1], 1)
    assert d.resp(btok) is None
    return ids, btok


def _c_new_member(d: Driver, ids: list[str]) -> None:
    d.join(version=3, client_id="new")


def _c_changed(d: Driver, ids: list[str]) -> None:
    d.join(ids[2], protocols=[("range", b"X")])


def _c_leave(d: Driver, ids: list[str]) -> None:
    d.leave((ids[2], None))


def _c_expiry(d: Driver, ids: list[str]) -> None:
    d.advance(5000)
    assert d.hb(ids[0], 1) == ErrorCode.NONE  # CompletingRebalance heartbeats are NONE
    d.advance(5000)  # C (never synced, never heartbeated) expires at 6000 + 10000
    assert ids[2] not in d.members()


def _c_pending_sync_timeout(d: Driver, ids: list[str]) -> None:
    for _ in range(4):  # A and C heartbeat but never sync; the sync timeout is 20 s after the join
        d.advance(5000)
        d.hb(ids[0], 1)
        d.hb(ids[2], 1)
    assert d.members() == [ids[1]]
    assert {e["member"] for e in d.kinds("member_removed") if e["reason"] == "sync_timeout"} == {
        ids[0],
        ids[2],
    }


@pytest.mark.parametrize(
    "trigger",
    [_c_new_member, _c_changed, _c_leave, _c_expiry, _c_pending_sync_timeout],
    ids=["new-member", "changed-metadata", "leave", "expiry", "pending-sync-timeout"],
)
def test_completing_to_preparing_cancels_parked_syncs(trigger: Callable[[Driver, list[str]], None]) -> None:
    d = Driver()
    ids, btok = _completing(d)
    trigger(d, ids)
    assert d.state() is S.PREPARING_REBALANCE
    assert d.resp(btok).error == ErrorCode.REBALANCE_IN_PROGRESS
    assert ("sync", G, 1) not in d.timers


def test_completing_static_replacement_always_rebalances() -> None:
    d = Driver()
    a = d.join(instance="ia")
    b = d.join(instance="ib")
    d.advance(6000)
    assert d.state() is S.COMPLETING_REBALANCE
    bid = d.resp(b).member_id
    btok = d.sync(bid, 1, instance="ib")
    assert d.resp(a).leader == d.resp(a).member_id
    d.join(instance="ib")  # ib restarts with an empty member id: replaced, fenced, and a rebalance
    assert d.state() is S.PREPARING_REBALANCE
    assert d.resp(btok).error == ErrorCode.FENCED_INSTANCE_ID


# ---------------------------------------------------------------------------------------------- Preparing -> Completing / Empty


def test_preparing_to_completing_bumps_generation_and_selects_protocol() -> None:
    d = Driver()
    ids = d.stable_group(2)
    t0 = d.join(ids[0])
    t1 = d.join(ids[1])  # everyone rejoined: the DelayedJoin completes at once
    assert d.state() is S.COMPLETING_REBALANCE
    r0, r1 = d.resp(t0), d.resp(t1)
    assert (r0.generation_id, r1.generation_id) == (2, 2)
    assert r0.protocol_name == r1.protocol_name == "range"
    assert ("join", G) not in d.timers
    assert ("sync", G, 2) in d.timers


def test_preparing_to_empty_when_last_member_leaves() -> None:
    d = Driver()
    ids = d.stable_group(1)
    d.log.clear()
    d.leave((ids[0], None))
    assert d.state() is S.EMPTY
    assert d.generation() == 2
    assert d.c.group(G).protocol_name is None
    assert d.log == [GroupMetadataRecord(G, 2, "consumer", None, None, d.now, ())]
    assert d.kinds("group_state")[-2:] == [
        {"group": G, "from_state": "Stable", "to_state": "PreparingRebalance", "generation": 1, "members": 0},
        {"group": G, "from_state": "PreparingRebalance", "to_state": "Empty", "generation": 2, "members": 0},
    ]


# ---------------------------------------------------------------------------------------------- Completing -> Stable


def test_completing_to_stable_on_leader_sync() -> None:
    d = Driver()
    ids, btok = _completing(d)
    d.sync(ids[2], 1)
    assert d.state() is S.COMPLETING_REBALANCE  # followers wait for the leader
    ltok = d.sync(ids[0], 1, {ids[0]: b"A", ids[1]: b"B"})
    assert d.state() is S.STABLE
    assert d.resp(ltok).assignment == b"A"
    assert d.resp(btok).assignment == b"B"
    assert d.log[-1].members[2].assignment == b""  # missing members get empty assignments
    assert ("sync", G, 1) not in d.timers  # everyone synced: DelayedSync completed


def test_stable_to_preparing_on_pending_sync_timeout() -> None:
    d = Driver()
    ids, btok = _completing(d)
    d.sync(ids[0], 1, {ids[0]: b"A", ids[1]: b"B", ids[2]: b"C"})
    assert d.state() is S.STABLE
    for _ in range(4):  # C heartbeats (so it does not expire) but never sends SyncGroup
        d.advance(5000)
        for m in ids:
            d.hb(m, 1)
    assert d.state() is S.PREPARING_REBALANCE
    assert d.members() == ids[:2]
    assert d.kinds("member_removed")[-1] == {
        "group": G,
        "generation": 1,
        "member": ids[2],
        "instance_id": None,
        "reason": "sync_timeout",
    }


# ---------------------------------------------------------------------------------------------- -> Dead


def test_empty_to_dead_on_delete_groups() -> None:
    d = Driver()
    assert d.commit(offsets=[("t", 0, 5)]) == [ErrorCode.NONE]  # simple commit: Empty group
    assert d.state() is S.EMPTY
    tok = d.token()
    d.apply(d.c.delete_groups(d.now, tok, DeleteGroupsRequest([G, "unknown"])))
    assert [(r.group_id, r.error) for r in d.resp(tok).results] == [
        (G, ErrorCode.NONE),
        ("unknown", ErrorCode.GROUP_ID_NOT_FOUND),
    ]
    assert d.state() is None
    assert d.kinds("group_state")[-1]["to_state"] == "Dead"
    assert d.log[-1] == GroupTombstoneRecord(G)


def test_delete_non_empty_group_is_refused() -> None:
    d = Driver()
    d.stable_group(1)
    tok = d.token()
    d.apply(d.c.delete_groups(d.now, tok, DeleteGroupsRequest([G])))
    assert d.resp(tok).results[0].error == ErrorCode.NON_EMPTY_GROUP
    assert d.state() is S.STABLE


def _to_empty(d: Driver) -> list[int]:
    d.commit()
    return []


def _to_preparing(d: Driver) -> list[int]:
    return [d.join(version=3)]


def _to_completing(d: Driver) -> list[int]:
    _, btok = _completing(d)
    return [btok]


def _to_stable(d: Driver) -> list[int]:
    d.stable_group(2)
    return []


@pytest.mark.parametrize(
    "setup, state",
    [
        (_to_empty, S.EMPTY),
        (_to_preparing, S.PREPARING_REBALANCE),
        (_to_completing, S.COMPLETING_REBALANCE),
        (_to_stable, S.STABLE),
    ],
    ids=["empty", "preparing", "completing", "stable"],
)
def test_any_state_to_dead_on_unload(setup: Callable[[Driver], list[int]], state: GroupState) -> None:
    d = Driver()
    parked = setup(d)
    assert d.state() is state
    assert all(d.resp(t) is None for t in parked)
    d.apply(d.c.begin_loading())
    assert d.kinds("group_state")[-1] == {
        "group": G,
        "from_state": state.value,
        "to_state": "Dead",
        "generation": d.kinds("group_state")[-1]["generation"],
        "members": d.kinds("group_state")[-1]["members"],
    }
    assert all(d.resp(t).error == ErrorCode.NOT_COORDINATOR for t in parked)
    assert d.timers == {}  # every timer of the unloaded group is cancelled
