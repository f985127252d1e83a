"""SyncGroup (spec 2.7), Heartbeat and liveness (spec 2.8), the pending-sync timeout (DelayedSync)."""

from __future__ import annotations

import pytest

from coordinator.core.group import (
    ErrorCode,
    GroupState,
    HeartbeatRequest,
    Persist,
    Respond,
    SyncGroupRequest,
)
from tests.support.group_driver import Driver, G

S = GroupState


def _completing(d: Driver, n: int = 2, **kw) -> list[str]:
    ids = [d.join_new(client_id=f"c{i}", **kw)[0] for i in range(n)]
    d.advance(d.config.initial_rebalance_delay_ms * (n + 1))
    assert d.state() is S.COMPLETING_REBALANCE
    return ids


# ---------------------------------------------------------------------------------------------- SyncGroup errors


def test_sync_error_paths() -> None:
    d = Driver()
    assert d.resp(d.sync("m", 0, group="")).error == ErrorCode.INVALID_GROUP_ID
    assert d.resp(d.sync("m", 0, group="nope")).error == ErrorCode.UNKNOWN_MEMBER_ID
    ids = _completing(d)
    assert d.resp(d.sync("ghost", 1)).error == ErrorCode.UNKNOWN_MEMBER_ID
    assert d.resp(d.sync(ids[1], 0)).error == ErrorCode.ILLEGAL_GENERATION
    assert d.resp(d.sync(ids[1], 2)).error == ErrorCode.ILLEGAL_GENERATION
    assert d.resp(d.sync(ids[1], 1, protocol_type="connect")).error == ErrorCode.INCONSISTENT_GROUP_PROTOCOL
    assert (
        d.resp(d.sync(ids[1], 1, protocol_name="roundrobin")).error == ErrorCode.INCONSISTENT_GROUP_PROTOCOL
    )
    assert d.resp(d.sync(ids[1], 1, instance="unknown-instance")).error == ErrorCode.UNKNOWN_MEMBER_ID
    # v5 fields that match are fine: the follower is parked
    assert d.resp(d.sync(ids[1], 1, protocol_type="consumer", protocol_name="range")) is None


def test_sync_while_loading_is_rebalance_in_progress() -> None:
    d = Driver()
    d.apply(d.c.begin_loading())
    assert d.resp(d.sync("m", 1)).error == ErrorCode.REBALANCE_IN_PROGRESS


def test_sync_in_preparing_rebalance() -> None:
    d = Driver()
    ids = d.stable_group(2)
    d.join(ids[0])
    assert d.resp(d.sync(ids[1], 1)).error == ErrorCode.REBALANCE_IN_PROGRESS


def test_sync_in_empty_group() -> None:
    d = Driver()
    d.commit()
    assert d.resp(d.sync("m", 0)).error == ErrorCode.UNKNOWN_MEMBER_ID


def test_sync_in_stable_returns_stored_assignment_and_resets_session() -> None:
    d = Driver()
    ids = _completing(d)
    d.sync(ids[0], 1, {ids[0]: b"A", ids[1]: b"B"})  # leader first
    assert d.state() is S.STABLE and ("sync", G, 1) in d.timers  # the follower has not synced yet
    d.advance(5000)
    r = d.resp(d.sync(ids[1], 1))
    assert (r.error, r.assignment, r.protocol_type, r.protocol_name) == (
        ErrorCode.NONE,
        b"B",
        "consumer",
        "range",
    )
    assert d.timers[("heartbeat", G, ids[1])] == d.now + 10_000
    assert ("sync", G, 1) not in d.timers


def test_leader_sync_persists_before_answering() -> None:
    d = Driver()
    ids = _completing(d, 3)
    d.sync(ids[1], 1)
    d.sync(ids[2], 1)
    tok = d.token()
    effects = d.apply(
        d.c.sync_group(d.now, tok, SyncGroupRequest(G, 1, ids[0], [(m, m.encode()) for m in ids]))
    )
    kinds = [type(e).__name__ for e in effects if isinstance(e, Persist | Respond)]
    assert kinds == ["Persist", "Respond", "Respond", "Respond"]
    record = next(e.record for e in effects if isinstance(e, Persist))
    assert (record.generation_id, record.protocol_name, record.leader_id) == (1, "range", ids[0])
    assert [(m.member_id, m.subscription, m.assignment) for m in record.members] == [
        (m, b"R", m.encode()) for m in ids
    ]
    end = d.kinds("rebalance_end")[-1]
    assert end == {"group": G, "generation": 1, "members": 3, "leader": ids[0], "protocol": "range"}


def test_superseded_parked_sync_is_answered() -> None:
    d = Driver()
    ids = _completing(d)
    t1 = d.sync(ids[1], 1)
    t2 = d.sync(ids[1], 1)
    assert d.resp(t1).error == ErrorCode.REBALANCE_IN_PROGRESS
    d.sync(ids[0], 1, {ids[1]: b"B"})
    assert d.resp(t2).assignment == b"B"


# ---------------------------------------------------------------------------------------------- pending sync


def test_pending_sync_timeout_removes_laggards_in_completing_rebalance() -> None:
    d = Driver()
    ids = [d.join_new(client_id=f"c{i}", rebalance=20_000, session=30_000)[0] for i in range(3)]
    d.advance(6000)
    assert d.state() is S.COMPLETING_REBALANCE
    assert d.timers[("sync", G, 1)] == d.now + 20_000
    tb = d.sync(ids[1], 1)
    d.advance(19_999)
    assert d.state() is S.COMPLETING_REBALANCE
    d.advance(1)
    assert d.state() is S.PREPARING_REBALANCE
    assert d.members() == [ids[1]]
    assert d.resp(tb).error == ErrorCode.REBALANCE_IN_PROGRESS
    assert ("heartbeat", G, ids[0]) not in d.timers and ("heartbeat", G, ids[2]) not in d.timers
    assert d.c.group(G).leader_id == ids[1]


def test_stale_sync_timer_of_old_generation_is_ignored() -> None:
    d = Driver()
    ids = d.stable_group(2)
    d.join(ids[0])
    d.join(ids[1])
    assert d.generation() == 2
    assert d.c.on_timer(d.now + 10**6, ("sync", G, 1)) == []
    assert d.state() is S.COMPLETING_REBALANCE


# ---------------------------------------------------------------------------------------------- Heartbeat


def test_heartbeat_error_paths() -> None:
    d = Driver()
    assert d.hb("m", 0, group="") == ErrorCode.INVALID_GROUP_ID
    assert d.hb("m", 0, group="nope") == ErrorCode.UNKNOWN_MEMBER_ID
    ids = d.stable_group(2, instance=None)
    assert d.hb("ghost", 1) == ErrorCode.UNKNOWN_MEMBER_ID
    assert d.hb(ids[0], 0) == ErrorCode.ILLEGAL_GENERATION
    assert d.hb(ids[0], 1, instance="nobody") == ErrorCode.UNKNOWN_MEMBER_ID
    errs = d.kinds("heartbeat_error")
    assert errs[-1] == {"group": G, "generation": 1, "member": ids[0], "error": "UNKNOWN_MEMBER_ID"}
    assert errs[-2]["error"] == "ILLEGAL_GENERATION" and errs[-2]["generation"] == 0


def test_heartbeat_in_empty_group() -> None:
    d = Driver()
    d.commit()
    assert d.hb("m", 0) == ErrorCode.UNKNOWN_MEMBER_ID


def test_heartbeat_while_loading_is_answered_blindly() -> None:
    d = Driver()
    d.stable_group(1)
    d.apply(d.c.begin_loading())
    assert d.hb("anything", 42) == ErrorCode.NONE


@pytest.mark.parametrize(
    "state, expected",
    [
        (S.PREPARING_REBALANCE, ErrorCode.REBALANCE_IN_PROGRESS),
        (S.COMPLETING_REBALANCE, ErrorCode.NONE),
        (S.STABLE, ErrorCode.NONE),
    ],
)
def test_heartbeat_by_state_always_resets_the_session(state: GroupState, expected: ErrorCode) -> None:
    d = Driver()
    ids = d.stable_group(2)
    if state is not S.STABLE:
        d.join(ids[0])
    if state is S.COMPLETING_REBALANCE:
        d.join(ids[1])
    assert d.state() is state
    gen = d.generation()
    d.advance(3000)
    assert d.hb(ids[1], gen) == expected
    assert d.timers[("heartbeat", G, ids[1])] == d.now + 10_000


def test_session_expiry_removes_a_silent_member_and_heartbeats_keep_one_alive() -> None:
    d = Driver()
    ids = d.stable_group(2)
    for _ in range(5):
        d.advance(9_000)
        assert d.hb(ids[0], 1) in (ErrorCode.NONE, ErrorCode.REBALANCE_IN_PROGRESS)
    assert ids[0] in d.members() and ids[1] not in d.members()
    removed = d.kinds("member_removed")
    assert removed == [
        {"group": G, "generation": 1, "member": ids[1], "instance_id": None, "reason": "expired"}
    ]


def test_expiry_is_exact_to_the_session_timeout() -> None:
    d = Driver()
    ids = d.stable_group(2)
    d.hb(ids[0], 1)
    last = d.now
    d.advance(9_999)
    assert ids[0] in d.members()
    d.hb(ids[1], 1)
    d.advance_to(last + 10_000)
    assert ids[0] not in d.members()


def test_early_or_stale_heartbeat_timer_is_ignored() -> None:
    d = Driver()
    ids = d.stable_group(1)
    key = ("heartbeat", G, ids[0])
    assert d.c.on_timer(d.timers[key] - 1, key) == []
    assert d.c.on_timer(d.now, ("heartbeat", G, "ghost")) == []
    assert d.c.on_timer(d.now, ("heartbeat", "nogroup", "x")) == []
    assert d.c.on_timer(d.now, ("bogus",)) == []
    assert ids[0] in d.members()


def test_commit_counts_as_liveness() -> None:
    d = Driver()
    ids = d.stable_group(1)
    for _ in range(3):
        d.advance(9_000)
        assert d.commit(ids[0], 1) == [ErrorCode.NONE]
    assert ids[0] in d.members()


def test_heartbeat_responses_are_shared_and_cheap() -> None:
    d = Driver()
    ids = d.stable_group(1)
    t1, t2 = d.token(), d.token()
    e1 = d.c.heartbeat(d.now, t1, HeartbeatRequest(G, 1, ids[0]))
    e2 = d.c.heartbeat(d.now, t2, HeartbeatRequest(G, 1, ids[0]))
    assert len(e1) == 2  # SetTimer + Respond, nothing else
    assert e1[-1].response is e2[-1].response
