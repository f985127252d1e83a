"""JoinGroup (spec 2.5) and the join barrier (spec 2.6, vectors of 2.18 items 2-4)."""

from __future__ import annotations

import pytest

from coordinator.core.group import ErrorCode, GroupConfig, GroupState, JoinGroupMember
from tests.support.group_driver import Driver, G

S = GroupState


# ---------------------------------------------------------------------------------------------- validation


@pytest.mark.parametrize(
    "session, error",
    [
        (5999, ErrorCode.INVALID_SESSION_TIMEOUT),
        (6000, ErrorCode.MEMBER_ID_REQUIRED),
        (1_800_000, ErrorCode.MEMBER_ID_REQUIRED),
        (1_800_001, ErrorCode.INVALID_SESSION_TIMEOUT),
    ],
)
def test_session_timeout_bounds_are_inclusive(session: int, error: ErrorCode) -> None:
    d = Driver()
    r = d.resp(d.join(session=session))
    assert r.error == error
    assert (d.state() is None) == (error == ErrorCode.INVALID_SESSION_TIMEOUT)


def test_validation_order_group_id_then_loading_then_session_then_member() -> None:
    d = Driver()
    assert d.resp(d.join(group="", session=1)).error == ErrorCode.INVALID_GROUP_ID
    d.apply(d.c.begin_loading())
    assert d.resp(d.join(session=1)).error == ErrorCode.COORDINATOR_LOAD_IN_PROGRESS
    d.apply(d.c.finish_loading(d.now))
    assert d.resp(d.join("x-1", session=1)).error == ErrorCode.INVALID_SESSION_TIMEOUT
    r = d.resp(d.join("x-1"))
    assert r.error == ErrorCode.UNKNOWN_MEMBER_ID and r.member_id == "x-1" and r.generation_id == -1


@pytest.mark.parametrize(
    "protocol_type, protocols",
    [("", [("range", b"")]), ("consumer", [])],
    ids=["empty-type", "no-protocols"],
)
def test_empty_group_needs_a_type_and_a_protocol(protocol_type: str, protocols: list) -> None:
    d = Driver()
    r = d.resp(d.join(version=3, protocol_type=protocol_type, protocols=protocols))
    assert r.error == ErrorCode.INCONSISTENT_GROUP_PROTOCOL and r.member_id == ""


@pytest.mark.parametrize(
    "protocol_type, protocols",
    [("connect", [("range", b"")]), ("consumer", [("sticky", b"")])],
    ids=["other-type", "no-common-protocol"],
)
def test_non_empty_group_protocol_must_be_compatible(protocol_type: str, protocols: list) -> None:
    d = Driver()
    ids = d.stable_group(2)
    assert d.resp(d.join(version=3, protocol_type=protocol_type, protocols=protocols)).error == (
        ErrorCode.INCONSISTENT_GROUP_PROTOCOL
    )
    # a known member is checked the same way
    r = d.resp(d.join(ids[1], protocol_type=protocol_type, protocols=protocols))
    assert r.error == ErrorCode.INCONSISTENT_GROUP_PROTOCOL and r.member_id == ids[1]
    assert d.state() is S.STABLE


def test_known_member_id_unknown_to_group() -> None:
    d = Driver()
    d.stable_group(1)
    assert d.resp(d.join("ghost-1")).error == ErrorCode.UNKNOWN_MEMBER_ID


def test_group_max_size_refuses_new_members() -> None:
    d = Driver(GroupConfig(max_size=2))
    ids = d.stable_group(2)
    r = d.resp(d.join(version=3))
    assert r.error == ErrorCode.GROUP_MAX_SIZE_REACHED and r.member_id == ""
    assert d.state() is S.STABLE and d.members() == ids
    # known members are still accepted (the leader's rejoin starts a rebalance)
    d.join(ids[0])
    assert d.state() is S.PREPARING_REBALANCE
    # PreparingRebalance counts members awaiting join: one awaiting < 2, so a newcomer gets in...
    assert d.resp(d.join(version=3, client_id="n1")) is None
    # ... and now two are awaiting: a non-awaiting known member is refused and dropped
    r = d.resp(d.join(ids[1]))
    assert r.error == ErrorCode.GROUP_MAX_SIZE_REACHED
    assert ids[1] not in d.members()
    assert d.kinds("member_removed")[-1]["reason"] == "group_max_size"
    # with the laggard gone everyone has joined: the barrier completes
    assert d.state() is S.COMPLETING_REBALANCE


def test_v0_join_uses_session_timeout_as_rebalance_timeout() -> None:
    d = Driver()
    d.join(version=0, session=7000, rebalance=99_000)
    (member,) = d.c.group(G).members.values()
    assert member.rebalance_timeout_ms == 7000
    d.join(version=1, session=7000, rebalance=99_000, client_id="b")
    assert [m.rebalance_timeout_ms for m in d.c.group(G).members.values()] == [7000, 99_000]


def test_member_id_is_client_id_or_instance_id_plus_uuid() -> None:
    d = Driver()
    assert d.resp(d.join(client_id="consumer-7")).member_id == "consumer-7-u1"
    d.join(instance="host-a", client_id="consumer-8")
    assert "host-a-u2" in d.members()


# ---------------------------------------------------------------------------------------------- MEMBER_ID_REQUIRED


def test_member_id_required_round_trip() -> None:
    d = Driver()
    r1 = d.resp(d.join(version=4))
    assert r1.error == ErrorCode.MEMBER_ID_REQUIRED and r1.member_id == "c-u1" and r1.generation_id == -1
    assert d.members() == [] and ("pending", G, "c-u1") in d.timers
    t2 = d.join("c-u1", version=4)
    assert d.members() == ["c-u1"] and ("pending", G, "c-u1") not in d.timers
    d.advance(3000)
    r2 = d.resp(t2)
    assert (r2.error, r2.member_id, r2.leader, r2.generation_id) == (ErrorCode.NONE, "c-u1", "c-u1", 1)
    assert r2.members == [JoinGroupMember("c-u1", None, b"R")]


@pytest.mark.parametrize("version, instance", [(3, None), (5, "i1"), (7, "i1")])
def test_no_member_id_required_below_v4_or_for_static_members(version: int, instance: str | None) -> None:
    d = Driver()
    assert d.resp(d.join(version=version, instance=instance)) is None  # parked in the join phase
    assert len(d.members()) == 1


def test_pending_member_blocks_the_barrier_until_it_rejoins() -> None:
    d = Driver()
    ids = d.stable_group(2)
    newcomer = d.resp(d.join(client_id="new")).member_id  # pending, group still Stable
    assert d.state() is S.STABLE
    t0, t1 = d.join(ids[0]), d.join(ids[1])
    assert d.state() is S.PREPARING_REBALANCE  # all known members joined, but one is pending
    d.advance(5000)
    assert d.state() is S.PREPARING_REBALANCE
    t2 = d.join(newcomer, client_id="new")
    assert d.state() is S.COMPLETING_REBALANCE  # completes on the pending member's rejoin, not at a timeout
    assert [d.resp(t).generation_id for t in (t0, t1, t2)] == [2, 2, 2]
    assert len(d.resp(t0).members) == 3


def test_pending_member_blocks_the_barrier_until_its_session_expires() -> None:
    d = Driver()
    ids = d.stable_group(2)
    d.join(session=7000, client_id="new")
    start = d.now
    d.join(ids[0])
    d.join(ids[1])
    d.advance(6999)
    assert d.state() is S.PREPARING_REBALANCE
    d.advance(1)  # pending member's session: barrier re-checked, well before the 60 s rebalance timeout
    assert d.state() is S.COMPLETING_REBALANCE
    assert d.now - start == 7000
    assert d.members() == ids


def test_pending_member_rejoin_after_expiry_is_unknown() -> None:
    d = Driver()
    r = d.resp(d.join(session=6000))
    d.advance(6000)
    assert d.resp(d.join(r.member_id, session=6000)).error == ErrorCode.UNKNOWN_MEMBER_ID


# ---------------------------------------------------------------------------------------------- InitialDelayedJoin


def test_initial_delay_vector_arrivals_at_0_2500_5000_complete_at_9000() -> None:
    d = Driver()
    toks = []
    for t in (0, 2500, 5000):
        d.advance_to(t)
        toks.append(d.join(version=3, rebalance=300_000, client_id=f"c{t}"))
    d.advance_to(8999)
    assert d.state() is S.PREPARING_REBALANCE and all(d.resp(t) is None for t in toks)
    d.advance_to(9000)
    assert d.state() is S.COMPLETING_REBALANCE
    assert all(d.resp(t).generation_id == 1 for t in toks)


def test_initial_delay_single_member_waits_exactly_one_delay() -> None:
    d = Driver()
    t = d.join(version=3, rebalance=300_000)
    d.advance(2999)
    assert d.resp(t) is None
    d.advance(1)
    assert d.resp(t).error == ErrorCode.NONE


def test_initial_delay_is_capped_by_the_rebalance_timeout() -> None:
    # delay 3000, rebalance timeout 5000: remaining 2000, so the extension is only 2000 and then it must complete
    d = Driver()
    toks = [d.join(version=3, rebalance=5000, session=6000)]
    d.advance_to(1000)
    toks.append(d.join(version=3, rebalance=5000, session=6000, client_id="b"))
    d.advance_to(4000)
    toks.append(d.join(version=3, rebalance=5000, session=6000, client_id="c"))
    d.advance_to(4999)
    assert d.state() is S.PREPARING_REBALANCE
    d.advance_to(5000)
    assert d.state() is S.COMPLETING_REBALANCE
    assert len(d.members()) == 3


def test_initial_delay_is_not_extended_after_generation_zero() -> None:
    d = Driver()
    ids = d.stable_group(1)
    d.leave((ids[0], None))
    assert d.state() is S.EMPTY and d.generation() == 2
    start = d.now
    t1 = d.join(version=3, client_id="a")
    d.advance(2000)
    t2 = d.join(version=3, client_id="b")  # would extend the wait at generation 0, not at 2
    d.advance_to(start + 3000)
    assert d.resp(t1).generation_id == d.resp(t2).generation_id == 3


# ---------------------------------------------------------------------------------------------- DelayedJoin


def test_non_empty_group_completes_at_rebalance_timeout_and_drops_dynamic_laggards() -> None:
    d = Driver()
    ids = d.stable_group(3, rebalance=30_000, session=40_000)
    start = d.now
    t0 = d.join(ids[0], rebalance=30_000, session=40_000)
    t1 = d.join(ids[1], rebalance=30_000, session=40_000)
    d.advance(29_999)
    assert d.state() is S.PREPARING_REBALANCE
    d.advance(1)
    assert d.now - start == 30_000 and d.state() is S.COMPLETING_REBALANCE
    assert d.members() == ids[:2]
    assert d.kinds("member_removed")[-1]["member"] == ids[2]
    assert d.kinds("member_removed")[-1]["reason"] == "join_timeout"
    assert ("heartbeat", G, ids[2]) not in d.timers
    assert len(d.resp(t0).members) == 2 and d.resp(t1).members == []


def test_rebalance_timeout_is_the_max_over_members() -> None:
    d = Driver()
    ids = [d.join_new(rebalance=r, client_id=f"c{r}")[0] for r in (20_000, 40_000)]
    d.advance(6000)
    d.sync(ids[1], 1)
    d.sync(ids[0], 1, {})
    d.join(ids[0], rebalance=20_000)
    assert d.timers[("join", G)] == d.now + 40_000


def test_leader_reelected_when_leader_does_not_rejoin() -> None:
    d = Driver()
    ids = d.stable_group(3, session=90_000)
    changed = [("range", b"changed")]
    tb = d.join(ids[1], session=90_000, protocols=changed)  # a follower with changed metadata: rebalance
    tc = d.join(ids[2], session=90_000, protocols=changed)
    d.advance(60_000)  # the leader never rejoins
    assert ids[0] not in d.members()
    rb, rc = d.resp(tb), d.resp(tc)
    assert rb.leader == rc.leader == ids[1]  # the oldest member that did rejoin
    assert [m.member_id for m in rb.members] == ids[1:] and rc.members == []


def test_leader_moves_to_oldest_remaining_member_on_leave() -> None:
    d = Driver()
    ids = d.stable_group(3)
    d.leave((ids[0], None))
    assert d.c.group(G).leader_id == ids[1]


def test_static_only_group_where_nobody_rejoins_waits_again() -> None:
    d = Driver()
    toks = [d.join(instance=f"i{i}", session=30_000, rebalance=10_000, client_id=f"c{i}") for i in range(3)]
    d.advance(6000)
    ids = [d.resp(t).member_id for t in toks]
    leader = d.resp(toks[0]).leader
    for m, i in zip(ids, range(3), strict=True):
        if m != leader:
            d.sync(m, 1, instance=f"i{i}")
    d.sync(leader, 1, {m: b"x" for m in ids}, instance="i0")
    assert d.state() is S.STABLE
    d.leave(("", "i2"))  # admin removal of i2 -> rebalance; i0 and i1 never rejoin
    start = d.now
    d.advance(10_000)
    assert d.state() is S.PREPARING_REBALANCE  # static members are kept, nobody joined: another DelayedJoin
    assert d.members() == ids[:2]
    assert d.timers[("join", G)] == start + 20_000
    d.advance(20_000)  # their sessions (30 s after their SyncGroup) remove them; the group empties
    assert d.members() == []
    assert d.state() is S.EMPTY


# ---------------------------------------------------------------------------------------------- liveness during join


def test_new_member_expires_after_new_member_join_timeout_even_while_parked() -> None:
    d = Driver()
    ids = d.stable_group(2, rebalance=600_000)
    newcomer, tok = d.join_new(rebalance=600_000, client_id="new")
    assert d.timers[("heartbeat", G, newcomer)] == d.now + 300_000
    for _ in range(30):  # the old members keep heartbeating (REBALANCE_IN_PROGRESS) but never rejoin
        d.advance(9_990)
        for m in ids:
            assert d.hb(m, 1) == ErrorCode.REBALANCE_IN_PROGRESS
    d.advance(300)
    r = d.resp(tok)
    assert r.error == ErrorCode.UNKNOWN_MEMBER_ID and r.member_id == ""
    assert newcomer not in d.members()
    assert d.kinds("member_removed")[-1]["reason"] == "expired"


def test_known_member_parked_in_join_is_not_expired_by_its_session() -> None:
    d = Driver()
    ids = d.stable_group(2, rebalance=60_000)
    tok = d.join(ids[0])  # leader rejoins; the follower only heartbeats
    for _ in range(4):
        d.advance(5_000)
        assert d.hb(ids[1], 1) == ErrorCode.REBALANCE_IN_PROGRESS
    # 20 s: well past the leader's 10 s session, but a parked (not new) member counts as alive
    assert ids[0] in d.members() and d.resp(tok) is None
    d.advance(10_000)  # the follower stops heartbeating: it expires, and the barrier completes without it
    assert d.resp(tok).error == ErrorCode.NONE and d.members() == ids[:1]


# ---------------------------------------------------------------------------------------------- rejoin details


def test_rejoin_in_completing_rebalance_with_same_metadata_returns_current_generation() -> None:
    d = Driver()
    ids, toks = zip(*[d.join_new(client_id=f"c{i}") for i in range(2)], strict=True)
    d.advance(6000)
    lead = d.resp(d.join(ids[0]))
    foll = d.resp(d.join(ids[1]))
    assert d.state() is S.COMPLETING_REBALANCE
    assert (lead.generation_id, lead.leader, len(lead.members)) == (1, ids[0], 2)
    assert (foll.generation_id, foll.members) == (1, [])


def test_superseded_parked_join_is_answered() -> None:
    d = Driver()
    ids = d.stable_group(2)
    t1 = d.join(ids[0])
    t2 = d.join(ids[0])
    assert d.resp(t1).error == ErrorCode.REBALANCE_IN_PROGRESS  # documented deviation: no token leaks
    assert d.resp(t2) is None
    assert d.c.group(G).num_awaiting_join == 1


def test_protocol_selection_by_votes_over_common_protocols() -> None:
    d = Driver()
    both_rr = [("roundrobin", b""), ("range", b"")]
    both_range = [("range", b""), ("roundrobin", b"")]
    toks = [
        d.join(version=3, protocols=both_range, client_id="a"),
        d.join(version=3, protocols=both_rr, client_id="b"),
        d.join(version=3, protocols=both_rr, client_id="c"),
    ]
    d.advance(6000)
    assert d.resp(toks[0]).protocol_name == "roundrobin"  # two votes to one


def test_protocol_selection_restricted_to_protocols_all_members_support() -> None:
    d = Driver()
    t = d.join(version=3, protocols=[("roundrobin", b""), ("range", b"")], client_id="a")
    d.join(version=3, protocols=[("range", b"")], client_id="b")
    d.join(version=3, protocols=[("cooperative-sticky", b"")], client_id="c")  # no common protocol
    d.advance(6000)
    assert d.resp(t).protocol_name == "range"
    assert len(d.members()) == 2


def test_immediate_rejoin_after_sync_gives_second_generation() -> None:
    """What a cooperative member does after a revocation: nothing on the broker stands in its way."""
    d = Driver()
    ids = d.stable_group(2)
    d.join(ids[1], protocols=[("range", b"owned=p0")])
    d.join(ids[0])
    assert d.state() is S.COMPLETING_REBALANCE and d.generation() == 2
    d.sync(ids[1], 2)
    d.sync(ids[0], 2, {ids[0]: b"x", ids[1]: b"y"})
    t = d.join(ids[1], protocols=[("range", b"owned=")])  # round 2
    d.join(ids[0])
    assert d.resp(t).generation_id == 3
