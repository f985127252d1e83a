"""LeaveGroup (2.9), OffsetCommit / OffsetFetch (2.10), DescribeGroups / ListGroups (2.11)."""

from __future__ import annotations

import pytest

from coordinator.core.group import (
    DescribeGroupsRequest,
    ErrorCode,
    GroupState,
    ListGroupsRequest,
    OffsetCommitRecord,
    OffsetFetchPartition,
    OffsetFetchRequest,
)
from tests.support.group_driver import Driver, G

S = GroupState


# ---------------------------------------------------------------------------------------------- LeaveGroup


def test_leave_group_level_errors() -> None:
    d = Driver()
    assert d.leave(("m", None), group="").error == ErrorCode.INVALID_GROUP_ID
    r = d.leave(("m1", None), ("", "i1"), group="nope")
    assert r.error == ErrorCode.NONE
    assert [(m.member_id, m.group_instance_id, m.error) for m in r.members] == [
        ("m1", None, ErrorCode.UNKNOWN_MEMBER_ID),
        ("", "i1", ErrorCode.UNKNOWN_MEMBER_ID),
    ]
    d.apply(d.c.begin_loading())
    r = d.leave(("m", None))
    assert r.error == ErrorCode.COORDINATOR_LOAD_IN_PROGRESS and r.members == []


def test_leave_batch_with_every_kind_of_member() -> None:
    d = Driver()
    ts = d.join(instance="st", version=5, client_id="s")
    dyn, _ = d.join_new(client_id="d")
    other, _ = d.join_new(client_id="o")
    d.advance(9000)
    st = d.resp(ts).member_id
    pending = d.resp(d.join(client_id="p")).member_id
    assert d.state() is S.COMPLETING_REBALANCE
    r = d.leave(
        (dyn, None),  # known dynamic member
        ("ghost", None),  # unknown
        (pending, None),  # pending member
        ("", "st"),  # admin-style removal of a static member
        ("", "nobody"),  # unknown instance
        (other, "wrong-instance"),  # instance id not in the group
    )
    assert r.error == ErrorCode.NONE
    assert [m.error for m in r.members] == [
        ErrorCode.NONE,
        ErrorCode.UNKNOWN_MEMBER_ID,
        ErrorCode.NONE,
        ErrorCode.NONE,
        ErrorCode.UNKNOWN_MEMBER_ID,
        ErrorCode.UNKNOWN_MEMBER_ID,
    ]
    assert d.members() == [other]
    assert ("pending", G, pending) not in d.timers
    assert ("heartbeat", G, dyn) not in d.timers and ("heartbeat", G, st) not in d.timers
    assert [e["member"] for e in d.kinds("member_removed")] == [dyn, st]
    assert all(e["reason"] == "leave" for e in d.kinds("member_removed"))


def test_leave_of_a_fenced_static_member() -> None:
    d = Driver()
    ts = d.join(instance="st")
    d.advance(3000)
    st = d.resp(ts).member_id
    r = d.leave(("stale-id", "st"))
    assert r.members[0].error == ErrorCode.FENCED_INSTANCE_ID
    assert d.members() == [st]


def test_leave_in_preparing_answers_parked_join_and_rechecks_barrier() -> None:
    d = Driver()
    ids = d.stable_group(3)
    t0 = d.join(ids[0])
    t1 = d.join(ids[1])
    assert d.state() is S.PREPARING_REBALANCE
    r = d.leave((ids[1], None), (ids[2], None))  # a parked member and the laggard
    assert [m.error for m in r.members] == [ErrorCode.NONE, ErrorCode.NONE]
    assert d.resp(t1).error == ErrorCode.UNKNOWN_MEMBER_ID and d.resp(t1).member_id == ""
    assert d.state() is S.COMPLETING_REBALANCE  # only the leader is left, and it has joined
    assert d.resp(t0).members[0].member_id == ids[0]


def test_leave_of_a_pending_member_rechecks_barrier() -> None:
    d = Driver()
    ids = d.stable_group(1)
    pending = d.resp(d.join(client_id="p")).member_id
    d.join(ids[0])
    assert d.state() is S.PREPARING_REBALANCE
    d.leave((pending, None))
    assert d.state() is S.COMPLETING_REBALANCE


def test_removing_a_member_with_a_parked_sync_answers_it() -> None:
    d = Driver()
    ta = d.join(instance="a")
    tb = d.join(instance="b")
    d.advance(6000)
    b = d.resp(tb).member_id
    sync_tok = d.sync(b, 1, instance="b")
    d.leave(("", "b"))
    assert d.resp(sync_tok).error == ErrorCode.UNKNOWN_MEMBER_ID  # documented deviation: no leaked token
    assert d.state() is S.PREPARING_REBALANCE
    assert d.resp(ta).error == ErrorCode.NONE


# ---------------------------------------------------------------------------------------------- OffsetCommit


def test_simple_commit_creates_an_empty_group_and_persists() -> None:
    d = Driver()
    assert d.commit(offsets=[("t", 0, 10), ("t", 1, 20)]) == [ErrorCode.NONE, ErrorCode.NONE]
    assert d.state() is S.EMPTY
    assert d.log == [
        OffsetCommitRecord(G, "t", 0, 10, -1, "", 0),
        OffsetCommitRecord(G, "t", 1, 20, -1, "", 0),
    ]
    assert d.commit() == [ErrorCode.NONE]  # further simple commits to the Empty group are fine
    assert d.kinds("commit")[0] == {
        "group": G,
        "member": "",
        "generation": -1,
        "topic": "t",
        "partition": 0,
        "offset": 10,
    }


def test_commit_with_generation_to_unknown_group_is_illegal_generation() -> None:
    d = Driver()
    assert d.commit("m", 3) == [ErrorCode.ILLEGAL_GENERATION]
    assert d.state() is None
    rej = d.kinds("commit_rejected")[0]
    assert (rej["member"], rej["generation"], rej["error"]) == ("m", 3, "ILLEGAL_GENERATION")


def test_commit_validation_table() -> None:
    d = Driver()
    ids = d.stable_group(2)
    cases = [
        ((ids[0], 1, None), ErrorCode.NONE),
        ((ids[0], 0, None), ErrorCode.ILLEGAL_GENERATION),
        ((ids[0], 2, None), ErrorCode.ILLEGAL_GENERATION),
        (("ghost", 1, None), ErrorCode.UNKNOWN_MEMBER_ID),
        ((ids[0], 1, "nobody"), ErrorCode.UNKNOWN_MEMBER_ID),
        (("", -1, None), ErrorCode.UNKNOWN_MEMBER_ID),  # only members commit to a non-empty group
        ((ids[0], -1, None), ErrorCode.ILLEGAL_GENERATION),
        (("", 1, None), ErrorCode.UNKNOWN_MEMBER_ID),
    ]
    for (member, gen, inst), expected in cases:
        assert d.commit(member, gen, instance=inst) == [expected], (member, gen, inst)


def test_commit_to_empty_group_with_generation_is_unknown_member() -> None:
    d = Driver()
    d.commit()
    assert d.commit("m", 0) == [ErrorCode.UNKNOWN_MEMBER_ID]


def test_commit_in_completing_rebalance_is_rebalance_in_progress() -> None:
    d = Driver()
    ids = d.stable_group(2)
    d.join(ids[0])
    d.join(ids[1])
    assert d.state() is S.COMPLETING_REBALANCE
    assert d.commit(ids[1], 2) == [ErrorCode.REBALANCE_IN_PROGRESS]
    assert d.commit(ids[1], 1) == [ErrorCode.ILLEGAL_GENERATION]


def test_commit_in_preparing_rebalance_from_previous_generation_is_allowed() -> None:
    d = Driver()
    ids = d.stable_group(2)
    d.join(ids[0])
    assert d.state() is S.PREPARING_REBALANCE
    d.advance(5000)
    assert d.commit(ids[1], 1, [("t", 0, 99)]) == [ErrorCode.NONE]
    assert d.timers[("heartbeat", G, ids[1])] == d.now + 10_000
    d.join(ids[1])
    assert d.generation() == 2
    assert d.commit(ids[1], 1) == [ErrorCode.ILLEGAL_GENERATION]  # now it is stale


@pytest.mark.parametrize(
    "length, error", [(4096, ErrorCode.NONE), (4097, ErrorCode.OFFSET_METADATA_TOO_LARGE)]
)
def test_offset_metadata_size_limit(length: int, error: ErrorCode) -> None:
    d = Driver()
    assert d.commit(metadata="x" * length) == [error]
    assert len(d.log) == (1 if error == ErrorCode.NONE else 0)


def test_offset_metadata_too_large_is_per_partition() -> None:
    d = Driver()
    tok = d.token()
    from coordinator.core.group import OffsetCommitPartition, OffsetCommitRequest

    req = OffsetCommitRequest(
        G, [OffsetCommitPartition("t", 0, 5, "ok"), OffsetCommitPartition("t", 1, 6, "y" * 5000)]
    )
    d.apply(d.c.offset_commit(d.now, tok, req))
    assert [p.error for p in d.resp(tok).partitions] == [ErrorCode.NONE, ErrorCode.OFFSET_METADATA_TOO_LARGE]
    assert [r.partition for r in d.log] == [0]


def test_commit_while_loading() -> None:
    d = Driver()
    d.apply(d.c.begin_loading())
    assert d.commit(offsets=[("t", 0, 1), ("t", 1, 1)]) == [ErrorCode.COORDINATOR_LOAD_IN_PROGRESS] * 2


# ---------------------------------------------------------------------------------------------- OffsetFetch


def test_offset_fetch_has_no_member_check_and_null_means_all() -> None:
    d = Driver()
    ids = d.stable_group(1)
    d.commit(ids[0], 1, [("b", 1, 11), ("a", 0, 10)], metadata="m")
    d.join(ids[0])  # any state will do
    r = d.c.offset_fetch(d.now, OffsetFetchRequest(G, None))
    assert r.error == ErrorCode.NONE
    assert r.partitions == [
        OffsetFetchPartition("a", 0, 10, -1, "m"),
        OffsetFetchPartition("b", 1, 11, -1, "m"),
    ]
    r = d.c.offset_fetch(d.now, OffsetFetchRequest(G, [("b", 1), ("c", 5)], require_stable=True))
    assert [(p.topic, p.partition, p.offset, p.error) for p in r.partitions] == [
        ("b", 1, 11, ErrorCode.NONE),
        ("c", 5, -1, ErrorCode.NONE),
    ]


def test_offset_fetch_unknown_group_and_loading() -> None:
    d = Driver()
    r = d.c.offset_fetch(0, OffsetFetchRequest("nope", [("t", 0)]))
    assert r.error == ErrorCode.NONE and r.partitions == [OffsetFetchPartition("t", 0, -1)]
    assert d.c.offset_fetch(0, OffsetFetchRequest("nope", None)).partitions == []
    d.apply(d.c.begin_loading())
    assert d.c.offset_fetch(0, OffsetFetchRequest(G, None)).error == ErrorCode.COORDINATOR_LOAD_IN_PROGRESS


# ---------------------------------------------------------------------------------------------- Describe / List


def test_describe_groups() -> None:
    d = Driver()
    ids = d.stable_group(2)
    r = d.c.describe_groups(d.now, DescribeGroupsRequest([G, "nope"])).groups
    assert (r[0].state, r[0].protocol_type, r[0].protocol, r[0].error) == (
        "Stable",
        "consumer",
        "range",
        ErrorCode.NONE,
    )
    assert [(m.member_id, m.client_id, m.metadata, m.assignment) for m in r[0].members] == [
        (ids[0], "c0", b"R", f"a-{ids[0]}".encode()),
        (ids[1], "c1", b"R", f"a-{ids[1]}".encode()),
    ]
    assert r[0].members[0].client_host == "/127.0.0.1"
    assert (r[1].group_id, r[1].state, r[1].members, r[1].error) == ("nope", "Dead", [], ErrorCode.NONE)
    d.join(ids[0])
    (g,) = d.c.describe_groups(d.now, DescribeGroupsRequest([G])).groups
    assert (g.state, g.protocol) == ("PreparingRebalance", "")
    assert all(m.metadata == b"" and m.assignment == b"" for m in g.members)
    d.apply(d.c.begin_loading())
    (g,) = d.c.describe_groups(d.now, DescribeGroupsRequest([G])).groups
    assert (g.error, g.state) == (ErrorCode.COORDINATOR_LOAD_IN_PROGRESS, "")


def test_list_groups_with_states_filter_and_while_loading() -> None:
    d = Driver()
    d.stable_group(1, group="stable")
    d.commit(group="simple")
    d.join(version=3, group="joining")
    r = d.c.list_groups(d.now, ListGroupsRequest())
    assert r.error == ErrorCode.NONE
    assert [(g.group_id, g.protocol_type, g.state) for g in r.groups] == [
        ("stable", "consumer", "Stable"),
        ("simple", "", "Empty"),
        ("joining", "consumer", "PreparingRebalance"),
    ]
    r = d.c.list_groups(d.now, ListGroupsRequest(["Empty", "Stable"]))
    assert [g.group_id for g in r.groups] == ["stable", "simple"]
    assert (
        d.c.list_groups(d.now, ListGroupsRequest([])).groups
        == d.c.list_groups(d.now, ListGroupsRequest()).groups
    )
    log = list(d.log)
    d.apply(d.c.begin_loading())
    for rec in log:
        d.c.load(rec)
    r = d.c.list_groups(d.now, ListGroupsRequest())
    assert r.error == ErrorCode.COORDINATOR_LOAD_IN_PROGRESS
    assert [g.group_id for g in r.groups] == ["stable", "simple"]
