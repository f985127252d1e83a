"""Static membership, KIP-345 (spec 2.12, vector 2.18 item 5)."""

from __future__ import annotations

from coordinator.core.group import ErrorCode, GroupMetadataRecord, GroupState, JoinGroupMember
from tests.support.group_driver import Driver, G

S = GroupState


def _static_stable(d: Driver, n: int = 2, **kw) -> list[str]:
    """Stable group of static members i0..i{n-1}; i0 leads; assignment of member k is b"a<k>"."""
    toks = [d.join(instance=f"i{k}", client_id=f"c{k}", **kw) for k in range(n)]
    d.advance(d.config.initial_rebalance_delay_ms * (n + 1))
    ids = [d.resp(t).member_id for t in toks]
    assert d.resp(toks[0]).leader == ids[0]
    for k in range(1, n):
        d.sync(ids[k], 1, instance=f"i{k}")
    d.sync(ids[0], 1, {m: f"a{k}".encode() for k, m in enumerate(ids)}, instance="i0")
    assert d.state() is S.STABLE
    return ids


def test_static_follower_bounce_in_stable_keeps_generation_and_assignment() -> None:
    d = Driver()
    old = _static_stable(d)
    d.log.clear()
    r = d.resp(d.join(instance="i1", client_id="c1"))
    new_id = r.member_id
    assert new_id != old[1] and new_id.startswith("i1-")
    assert (r.error, r.generation_id, r.leader, r.members) == (ErrorCode.NONE, 1, old[0], [])
    assert d.state() is S.STABLE and d.generation() == 1  # no rebalance
    assert d.kinds("rebalance_begin") == [] or d.kinds("rebalance_begin")[-1]["generation"] == 0
    # the new membership is persisted at once, with the current assignments
    assert isinstance(d.log[-1], GroupMetadataRecord)
    assert [(m.member_id, m.assignment) for m in d.log[-1].members] == [(old[0], b"a0"), (new_id, b"a1")]
    # SyncGroup returns the previous assignment
    s = d.resp(d.sync(new_id, 1, instance="i1"))
    assert (s.error, s.assignment) == (ErrorCode.NONE, b"a1")
    # the old incarnation is fenced everywhere
    assert d.hb(old[1], 1, instance="i1") == ErrorCode.FENCED_INSTANCE_ID
    assert d.resp(d.sync(old[1], 1, instance="i1")).error == ErrorCode.FENCED_INSTANCE_ID
    assert d.resp(d.join(old[1], instance="i1")).error == ErrorCode.FENCED_INSTANCE_ID
    assert d.commit(old[1], 1, instance="i1") == [ErrorCode.FENCED_INSTANCE_ID]
    assert d.hb(new_id, 1, instance="i1") == ErrorCode.NONE
    assert d.state() is S.STABLE and d.generation() == 1
    removed = d.kinds("member_removed")[-1]
    assert (removed["member"], removed["reason"]) == (old[1], "fenced")
    assert d.kinds("member_added")[-1]["replaces"] == old[1]
    assert ("heartbeat", G, old[1]) not in d.timers and ("heartbeat", G, new_id) in d.timers


def test_static_leader_bounce_before_v9_gets_old_leader_id() -> None:
    d = Driver()
    old = _static_stable(d)
    r = d.resp(d.join(instance="i0", client_id="c0", version=7))
    assert r.leader == old[0] != r.member_id  # so the new incarnation does not run the assignor
    assert r.members == [] and not r.skip_assignment
    assert d.c.group(G).leader_id == r.member_id  # leadership itself moved with the entry
    assert d.resp(d.sync(r.member_id, 1, instance="i0")).assignment == b"a0"


def test_static_leader_bounce_v9_skips_assignment() -> None:
    d = Driver()
    old = _static_stable(d)
    r = d.resp(d.join(instance="i0", client_id="c0", version=9))
    assert r.leader == r.member_id and r.skip_assignment
    assert r.members == [JoinGroupMember(r.member_id, "i0", b"R"), JoinGroupMember(old[1], "i1", b"R")]
    assert d.state() is S.STABLE and d.generation() == 1


def test_static_rejoin_during_preparing_rebalance_joins_the_ongoing_rebalance() -> None:
    d = Driver()
    old = _static_stable(d)
    t_old = d.join(old[1], instance="i1", protocols=[("range", b"new")])  # i1 starts a rebalance
    assert d.state() is S.PREPARING_REBALANCE
    t_new = d.join(instance="i1")  # and is then restarted
    assert d.resp(t_old).error == ErrorCode.FENCED_INSTANCE_ID
    assert d.state() is S.PREPARING_REBALANCE
    t_lead = d.join(old[0], instance="i0")
    assert d.state() is S.COMPLETING_REBALANCE
    new_id = d.resp(t_new).member_id
    assert d.resp(t_new).generation_id == 2
    assert {m.member_id for m in d.resp(t_lead).members} == {old[0], new_id}


def test_static_member_with_unknown_instance_and_member_id_is_unknown() -> None:
    d = Driver()
    _static_stable(d)
    assert d.resp(d.join("x-1", instance="i9")).error == ErrorCode.UNKNOWN_MEMBER_ID


def test_dynamic_laggard_removed_static_laggard_kept_at_barrier_timeout() -> None:
    d = Driver()
    ts = d.join(instance="s", session=90_000, rebalance=30_000, client_id="s")
    dyn, td = d.join_new(session=90_000, rebalance=30_000, client_id="d")
    tl = d.join(instance="l", session=90_000, rebalance=30_000, client_id="l")
    d.advance(6000)
    s_id, l_id = d.resp(ts).member_id, d.resp(tl).member_id
    leader = d.resp(ts).leader
    assert leader == s_id
    d.sync(dyn, 1)
    d.sync(l_id, 1, instance="l")
    d.sync(s_id, 1, {}, instance="s")
    assert d.state() is S.STABLE
    d.join(s_id, instance="s", session=90_000, rebalance=30_000)  # the leader rejoins: rebalance
    d.advance(30_000)  # neither l (static) nor the dynamic member rejoin
    assert d.members() == [s_id, l_id]
    assert d.state() is S.COMPLETING_REBALANCE


def test_replacing_a_static_member_that_never_synced_rebalances_at_the_sync_timeout() -> None:
    """Kafka quirk kept on purpose: the pending-sync set keeps the old member id."""
    d = Driver()
    ta = d.join(instance="ia", rebalance=20_000, session=30_000)
    tb = d.join(instance="ib", rebalance=20_000, session=30_000)
    d.advance(6000)
    a, b = d.resp(ta).member_id, d.resp(tb).member_id
    d.sync(a, 1, {a: b"A", b: b"B"}, instance="ia")
    assert d.state() is S.STABLE
    r = d.resp(d.join(instance="ib", rebalance=20_000, session=30_000))  # ib restarts before it synced
    assert d.state() is S.STABLE
    assert d.resp(d.sync(r.member_id, 1, instance="ib")).assignment == b"B"
    d.hb(a, 1, instance="ia")
    d.advance(20_000)
    assert d.state() is S.PREPARING_REBALANCE
    assert d.members() == [a, r.member_id]
