"""Durability: Persist records replayed into a fresh coordinator restore offsets and group metadata."""

from __future__ import annotations

from coordinator.core.group import (
    DescribeGroupsRequest,
    ErrorCode,
    GroupConfig,
    GroupState,
    ListGroupsRequest,
    OffsetFetchRequest,
    Record,
    decode_record,
    encode_record,
)
from tests.support.group_driver import Driver, G

S = GroupState


def _restart(old: Driver, config: GroupConfig | None = None) -> Driver:
    """A fresh coordinator that replays ``old``'s log (through its byte encoding), at ``old``'s time."""
    lines = b"\n".join(encode_record(r) for r in old.log)
    new = Driver(config or old.config)
    new.now = old.now
    new.apply(new.c.begin_loading())
    for line in lines.split(b"\n") if lines else []:
        rec: Record = decode_record(line)
        new.c.load(rec)
    assert new.c.loading
    new.apply(new.c.finish_loading(new.now))
    assert not new.c.loading
    return new


def test_replay_restores_stable_group_and_offsets() -> None:
    d = Driver()
    ids = d.stable_group(3)
    d.commit(ids[0], 1, [("t", 0, 100), ("t", 1, 200)], metadata="m0")
    d.commit(ids[1], 1, [("t", 1, 250)])
    d.advance(1000)
    n = _restart(d)
    g = n.c.group(G)
    assert g is not None
    assert (g.state, g.generation_id, g.leader_id, g.protocol_type, g.protocol_name) == (
        S.STABLE,
        1,
        ids[0],
        "consumer",
        "range",
    )
    assert list(g.members) == ids
    assert [m.assignment for m in g.members.values()] == [f"a-{m}".encode() for m in ids]
    r = n.c.offset_fetch(n.now, OffsetFetchRequest(G, None))
    assert [(p.topic, p.partition, p.offset, p.metadata) for p in r.partitions] == [
        ("t", 0, 100, "m0"),
        ("t", 1, 250, ""),
    ]
    # members get their session back on load and carry on without a rebalance
    assert all(n.timers[("heartbeat", G, m)] == n.now + 10_000 for m in ids)
    assert n.hb(ids[1], 1) == ErrorCode.NONE
    assert n.resp(n.sync(ids[2], 1)).assignment == f"a-{ids[2]}".encode()
    assert n.commit(ids[0], 1) == [ErrorCode.NONE]
    assert n.state() is S.STABLE


def test_members_that_do_not_come_back_after_load_expire() -> None:
    d = Driver()
    ids = d.stable_group(2)
    n = _restart(d)
    for _ in range(2):
        n.advance(6000)
        n.hb(ids[0], 1)
    assert n.members() == [ids[0]]
    assert n.state() is S.PREPARING_REBALANCE
    assert n.kinds("member_removed")[-1]["reason"] == "expired"
    t = n.join(ids[0])  # the survivor rejoins: it is the only member, the barrier completes at once
    assert n.resp(t).generation_id == 2 and n.state() is S.COMPLETING_REBALANCE


def test_replay_restores_empty_group_generation_and_offsets() -> None:
    d = Driver()
    ids = d.stable_group(1)
    d.commit(ids[0], 1, [("t", 0, 7)])
    d.leave((ids[0], None))
    assert d.state() is S.EMPTY and d.generation() == 2
    n = _restart(d)
    assert n.state() is S.EMPTY and n.generation() == 2 and n.members() == []
    assert n.c.group(G).protocol_name is None and n.c.group(G).protocol_type == "consumer"
    assert n.c.offset_fetch(0, OffsetFetchRequest(G, [("t", 0)])).partitions[0].offset == 7
    # the next member starts generation 3 after the (non-extending) initial delay
    t = n.join(version=3)
    n.advance(3000)
    assert n.resp(t).generation_id == 3


def test_replay_of_simple_commits_gives_an_empty_group() -> None:
    d = Driver()
    d.commit(offsets=[("t", 3, 33)], group="simple")
    n = _restart(d)
    assert n.state("simple") is S.EMPTY
    assert n.c.offset_fetch(0, OffsetFetchRequest("simple", None)).partitions[0].offset == 33


def test_replay_keeps_static_replacement() -> None:
    d = Driver()
    ta = d.join(instance="ia")
    tb = d.join(instance="ib")
    d.advance(6000)
    a, b = d.resp(ta).member_id, d.resp(tb).member_id
    d.sync(b, 1, instance="ib")
    d.sync(a, 1, {a: b"A", b: b"B"}, instance="ia")
    b2 = d.resp(d.join(instance="ib")).member_id
    n = _restart(d)
    assert n.members() == [a, b2]
    assert n.c.group(G).static_members == {"ia": a, "ib": b2}
    assert n.hb(b, 1, instance="ib") == ErrorCode.FENCED_INSTANCE_ID
    assert n.resp(n.sync(b2, 1, instance="ib")).assignment == b"B"


def test_replay_of_tombstone_drops_group_and_offsets() -> None:
    from coordinator.core.group import DeleteGroupsRequest

    d = Driver()
    d.commit(offsets=[("t", 0, 1)])
    d.apply(d.c.delete_groups(d.now, d.token(), DeleteGroupsRequest([G])))
    d.commit(offsets=[("t", 0, 1)], group="kept")
    n = _restart(d)
    assert n.state() is None and n.state("kept") is S.EMPTY
    assert n.c.describe_groups(0, DescribeGroupsRequest([G])).groups[0].state == "Dead"


def test_group_over_capacity_after_load_rebalances() -> None:
    d = Driver()
    ids = d.stable_group(3)
    n = _restart(d, GroupConfig(max_size=2))
    assert n.state() is S.PREPARING_REBALANCE
    t0, t1 = n.join(ids[0]), n.join(ids[1])
    assert n.resp(n.join(ids[2])).error == ErrorCode.GROUP_MAX_SIZE_REACHED
    assert n.state() is S.COMPLETING_REBALANCE
    assert n.resp(t0).generation_id == n.resp(t1).generation_id == 2


def test_answers_while_loading() -> None:
    d = Driver()
    ids = d.stable_group(1)
    d.apply(d.c.begin_loading())
    assert d.resp(d.join(ids[0])).error == ErrorCode.COORDINATOR_LOAD_IN_PROGRESS
    assert d.resp(d.sync(ids[0], 1)).error == ErrorCode.REBALANCE_IN_PROGRESS
    assert d.hb(ids[0], 1) == ErrorCode.NONE
    assert d.leave((ids[0], None)).error == ErrorCode.COORDINATOR_LOAD_IN_PROGRESS
    assert d.commit(ids[0], 1) == [ErrorCode.COORDINATOR_LOAD_IN_PROGRESS]
    assert d.c.offset_fetch(d.now, OffsetFetchRequest(G)).error == ErrorCode.COORDINATOR_LOAD_IN_PROGRESS
    assert d.c.list_groups(d.now, ListGroupsRequest()).error == ErrorCode.COORDINATOR_LOAD_IN_PROGRESS
    assert d.c.on_timer(d.now + 10**9, ("heartbeat", G, ids[0])) == []
