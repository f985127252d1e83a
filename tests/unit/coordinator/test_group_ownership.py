"""Replicated mode of the pure coordinator: ownership per offsets partition and two-phase writes.

Group names and their offsets partitions (50 partitions), worked out by hand with Java's ``String.hashCode``:
``"g1"`` = 103 * 31 + 49 = 3242 -> 3242 % 50 = 42; ``"g2"`` = 3243 -> 43; ``"h1"`` = 104 * 31 + 49 = 3273 -> 23.
"""

from __future__ import annotations

from typing import Any

import pytest

from coordinator.core.group import (
    DeleteGroupsRequest,
    DescribeGroupsRequest,
    Effect,
    ErrorCode,
    GroupState,
    ListGroupsRequest,
    OffsetCommitPartition,
    OffsetCommitRecord,
    OffsetCommitRequest,
    OffsetFetchRequest,
    Persist,
    Record,
)
from coordinator.core.group.ownership import commit_error, group_write_error
from tests.support.group_driver import Driver

S = GroupState
E = ErrorCode
G1, G2, H1 = "g1", "g2", "h1"
P_G1, P_G2, P_H1 = 42, 43, 23


class ReplicatedDriver(Driver):
    """The test Driver with the machine in replicated mode: two-phase writes are held until :meth:`ack`; only
    acknowledged records reach ``self.log`` (the partition's committed records). ``auto_ack`` acknowledges every
    write as soon as the effects that carry it are applied."""

    def __init__(self, *, owned: tuple[int, ...] = (P_G1, P_G2), auto_ack: bool = True) -> None:
        super().__init__()
        self.c.own_by_partition(50)
        self.writes: dict[int, list[Record]] = {}
        self.auto_ack = auto_ack
        for p in owned:
            self.apply(self.c.begin_loading(p))
            self.apply(self.c.finish_loading(self.now, p))

    def apply(self, effects: list[Effect]) -> list[Effect]:
        fresh: list[int] = []
        rest: list[Effect] = []
        for e in effects:
            if isinstance(e, Persist) and e.write is not None:
                if e.write not in self.writes:
                    fresh.append(e.write)
                self.writes.setdefault(e.write, []).append(e.record)
            else:
                rest.append(e)
        super().apply(rest)
        if self.auto_ack:
            for w in fresh:
                self.ack(w)
        return effects

    def ack(self, write: int, error: int = 0, epoch: int = 7) -> None:
        records = self.writes.pop(write)
        if error == 0:
            self.log.extend(records)
        self.apply(self.c.persisted(write, error, self.now, epoch))

    def commit_token(
        self, offsets: list[tuple[str, int, int]], *, group: str = G1, metadata: list[str] | None = None
    ) -> int:
        """Commit as a simple consumer (generation -1); returns the token (the answer may come later)."""
        tok = self.token()
        meta = metadata or [""] * len(offsets)
        parts = [OffsetCommitPartition(t, p, o, m) for (t, p, o), m in zip(offsets, meta, strict=True)]
        self.apply(self.c.offset_commit(self.now, tok, OffsetCommitRequest(group, parts, -1, "")))
        return tok

    def fetch(self, group: str = G1) -> Any:
        return self.c.offset_fetch(self.now, OffsetFetchRequest(group, None))

    def offsets(self, group: str = G1) -> list[tuple[str, int, int]]:
        r = self.fetch(group)
        assert r.error == E.NONE, r
        return [(p.topic, p.partition, p.offset) for p in r.partitions]


def test_group_names_map_to_the_partitions_worked_out_by_hand() -> None:
    d = ReplicatedDriver()
    assert (d.c.partition_for(G1), d.c.partition_for(G2), d.c.partition_for(H1)) == (P_G1, P_G2, P_H1)
    assert Driver().c.partition_for(G1) is None  # single-broker mode has no partitions


# ------------------------------------------------------------------ ownership


def test_a_loading_partition_answers_load_in_progress_and_another_partition_is_served() -> None:
    d = ReplicatedDriver(owned=(P_G2,))
    d.apply(d.c.begin_loading(P_G1))
    assert d.c.loading and d.c.partition_status(P_G1) == "loading"
    tok = d.join(group=G1)
    assert d.resp(tok).error == E.COORDINATOR_LOAD_IN_PROGRESS
    assert d.hb("m", 1, group=G1) == E.NONE  # Kafka answers a heartbeat blindly while loading
    assert d.resp(d.sync("m", 1, group=G1)).error == E.REBALANCE_IN_PROGRESS
    assert d.leave(("m", None), group=G1).error == E.COORDINATOR_LOAD_IN_PROGRESS
    assert d.commit(offsets=[("t", 0, 5)], group=G1) == [E.COORDINATOR_LOAD_IN_PROGRESS]
    assert d.fetch(G1).error == E.COORDINATOR_LOAD_IN_PROGRESS
    described = d.c.describe_groups(d.now, DescribeGroupsRequest([G1, G2])).groups
    assert [(x.group_id, x.error) for x in described] == [(G1, E.COORDINATOR_LOAD_IN_PROGRESS), (G2, E.NONE)]
    assert d.c.list_groups(d.now, ListGroupsRequest()).error == E.COORDINATOR_LOAD_IN_PROGRESS
    # g2's partition is owned: a whole group forms and commits there meanwhile
    ids = d.stable_group(2, group=G2)
    assert d.commit(ids[0], 1, [("t", 0, 9)], group=G2) == [E.NONE]
    assert d.offsets(G2) == [("t", 0, 9)]
    assert d.c.group(G1) is None  # nothing was created for the loading partition
    d.apply(d.c.finish_loading(d.now, P_G1))
    assert not d.c.loading and d.c.partition_status(P_G1) == "owned"
    assert d.commit(offsets=[("t", 0, 5)], group=G1) == [E.NONE]


def test_a_partition_not_owned_answers_not_coordinator_for_every_api() -> None:
    d = ReplicatedDriver(owned=(P_G1,))
    assert d.c.partition_status(P_H1) == "not_owned"
    assert d.resp(d.join(group=H1)).error == E.NOT_COORDINATOR
    assert d.resp(d.sync("m", 1, group=H1)).error == E.NOT_COORDINATOR
    assert d.hb("m", 1, group=H1) == E.NOT_COORDINATOR
    assert d.leave(("m", None), group=H1).error == E.NOT_COORDINATOR
    assert d.commit(offsets=[("t", 0, 5)], group=H1) == [E.NOT_COORDINATOR]
    assert d.fetch(H1).error == E.NOT_COORDINATOR
    (described,) = d.c.describe_groups(d.now, DescribeGroupsRequest([H1])).groups
    assert described.error == E.NOT_COORDINATOR
    tok = d.token()
    d.apply(d.c.delete_groups(d.now, tok, DeleteGroupsRequest([H1])))
    assert [r.error for r in d.resp(tok).results] == [E.NOT_COORDINATOR]
    assert d.c.group(H1) is None and d.writes == {} and d.log == []
    # the empty group id is still INVALID_GROUP_ID first (validateGroupStatus order)
    assert d.resp(d.join(group="")).error == E.INVALID_GROUP_ID
    # an owned partition in the same machine is served
    assert d.commit(offsets=[("t", 0, 5)], group=G1) == [E.NONE]


def test_loading_is_strict_about_partitions_and_modes() -> None:
    d = ReplicatedDriver(owned=())
    with pytest.raises(ValueError):
        d.c.begin_loading()
    with pytest.raises(ValueError):
        d.c.begin_loading(50)
    with pytest.raises(ValueError):
        d.c.own_by_partition(50)  # chosen once
    d.apply(d.c.begin_loading(P_G1))
    assert d.c.begin_loading(P_G1) == []  # already loading: Kafka's "Already loading", nothing changes
    with pytest.raises(ValueError):  # a record of a partition that is not loading
        d.c.load(_offset(H1, "t", 0, 3))
    d.c.load(_offset(G1, "t", 0, 3))
    d.apply(d.c.finish_loading(d.now, P_G1))
    assert d.c.begin_loading(P_G1) == [] and d.c.partition_status(P_G1) == "owned"  # owned: not reloaded
    single = Driver()
    with pytest.raises(ValueError):
        single.c.begin_loading(P_G1)
    with pytest.raises(ValueError):
        single.c.unload(P_G1, 0)


def _offset(group: str, topic: str, partition: int, offset: int) -> Record:
    return OffsetCommitRecord(group, topic, partition, offset, -1, "", 0)


def test_unload_answers_parked_joins_and_syncs_not_coordinator_and_cancels_their_timers() -> None:
    d = ReplicatedDriver()
    ids = d.stable_group(3)
    other = d.stable_group(2, group=G2)
    # a rebalance of g1 with two members parked in JoinGroup, the third not rejoined yet
    t0 = d.join(ids[0])
    t1 = d.join(ids[1])
    assert d.state() is S.PREPARING_REBALANCE and d.resp(t0) is None and d.resp(t1) is None
    g1_timers = {k for k in d.timers if k[1] == G1}
    assert ("join", G1) in g1_timers and len(g1_timers) == 4  # the join barrier and three sessions
    g2_timers = {k: v for k, v in d.timers.items() if k[1] == G2}
    effects = d.apply(d.c.unload(P_G1, d.now))
    assert d.resp(t0).error == E.NOT_COORDINATOR and d.resp(t1).error == E.NOT_COORDINATOR
    assert not any(k[1] == G1 for k in d.timers)
    assert {k: v for k, v in d.timers.items() if k[1] == G2} == g2_timers  # the other partition untouched
    assert d.c.group(G1) is None and d.state(G2) is S.STABLE
    assert d.kinds("group_state")[-1] == {
        "group": G1,
        "from_state": "PreparingRebalance",
        "to_state": "Dead",
        "generation": 1,
        "members": 3,
    }
    assert not any(isinstance(e, Persist) for e in effects)
    assert d.c.partition_status(P_G1) == "not_owned"
    assert d.hb(ids[2], 1) == E.NOT_COORDINATOR
    assert d.hb(other[0], 1, group=G2) == E.NONE


def test_unload_answers_a_parked_sync_not_coordinator() -> None:
    d = ReplicatedDriver()
    ids = d.stable_group(2)
    t0, t1 = d.join(ids[0]), d.join(ids[1])
    gen = d.resp(t0).generation_id
    assert gen == 2 and d.state() is S.COMPLETING_REBALANCE
    follower = ids[1] if d.resp(t0).leader == ids[0] else ids[0]
    ts = d.sync(follower, gen)
    assert d.resp(ts) is None and d.resp(t1) is not None
    d.apply(d.c.unload(P_G1, d.now))
    assert d.resp(ts).error == E.NOT_COORDINATOR
    assert not any(k[1] == G1 for k in d.timers)


def test_unload_cancels_a_load_in_progress() -> None:
    d = ReplicatedDriver(owned=())
    d.apply(d.c.begin_loading(P_G1))
    d.c.load(_offset(G1, "t", 0, 3))
    d.apply(d.c.unload(P_G1, d.now))
    assert d.c.group(G1) is None and d.c.partition_status(P_G1) == "not_owned"
    assert d.c.finish_loading(d.now, P_G1) == []  # the cancelled load's end changes nothing
    assert d.c.partition_status(P_G1) == "not_owned"
    assert d.fetch(G1).error == E.NOT_COORDINATOR


def test_a_reload_after_unload_returns_every_committed_offset_and_the_group() -> None:
    d = ReplicatedDriver()
    ids = d.stable_group(2)
    assert d.commit(ids[0], 1, [("t", 0, 10), ("t", 1, 20)]) == [E.NONE, E.NONE]
    assert d.commit(ids[1], 1, [("t", 1, 25), ("u", 0, 3)]) == [E.NONE, E.NONE]
    assert d.commit(offsets=[("t", 0, 7)], group=G2) == [E.NONE]
    d.apply(d.c.unload(P_G1, d.now))
    assert d.fetch(G1).error == E.NOT_COORDINATOR
    # the new leader (here: the same machine elected again) reads the partition's committed records
    d.apply(d.c.begin_loading(P_G1))
    for record in d.log:
        if d.c.partition_for(record.group_id) == P_G1:
            d.c.load(record)
    d.apply(d.c.finish_loading(d.now, P_G1))
    assert d.offsets() == [("t", 0, 10), ("t", 1, 25), ("u", 0, 3)]
    assert d.offsets(G2) == [("t", 0, 7)]
    group = d.c.group(G1)
    assert group is not None and group.state is S.STABLE and list(group.members) == ids
    assert all(d.timers[("heartbeat", G1, m)] == d.now + 10_000 for m in ids)
    assert d.hb(ids[0], 1) == E.NONE


# ------------------------------------------------------------------ two-phase writes


def test_a_commit_is_invisible_until_acknowledged() -> None:
    d = ReplicatedDriver(auto_ack=False)
    tok = d.commit_token([("t", 0, 5), ("t", 1, 6)])
    assert d.resp(tok) is None  # not answered before the append is acknowledged
    (write,) = d.writes
    assert [(r.topic, r.partition, r.offset) for r in d.writes[write]] == [("t", 0, 5), ("t", 1, 6)]
    assert d.offsets() == [] and d.kinds("commit") == []
    assert d.c.pending_writes == 1
    d.ack(write, 0, epoch=4)
    assert [p.error for p in d.resp(tok).partitions] == [E.NONE, E.NONE]
    assert d.offsets() == [("t", 0, 5), ("t", 1, 6)]
    assert [
        (c["partition"], c["offset"], c["offsets_partition"], c["leader_epoch"]) for c in d.kinds("commit")
    ] == [
        (0, 5, P_G1, 4),
        (1, 6, P_G1, 4),
    ]
    assert d.c.pending_writes == 0


@pytest.mark.parametrize(
    ("append_error", "answer"),
    [
        (19, E.COORDINATOR_NOT_AVAILABLE),  # NOT_ENOUGH_REPLICAS
        (20, E.COORDINATOR_NOT_AVAILABLE),  # NOT_ENOUGH_REPLICAS_AFTER_APPEND
        (7, E.COORDINATOR_NOT_AVAILABLE),  # REQUEST_TIMED_OUT (decided: as 3.7's Java coordinator)
        (3, E.COORDINATOR_NOT_AVAILABLE),  # UNKNOWN_TOPIC_OR_PARTITION
        (6, E.NOT_COORDINATOR),  # NOT_LEADER_OR_FOLLOWER: deposed
        (56, E.NOT_COORDINATOR),  # KAFKA_STORAGE_ERROR
        (10, E.INVALID_COMMIT_OFFSET_SIZE),  # MESSAGE_TOO_LARGE
        (18, E.INVALID_COMMIT_OFFSET_SIZE),  # RECORD_LIST_TOO_LARGE
        (4, E.INVALID_COMMIT_OFFSET_SIZE),  # INVALID_FETCH_SIZE
        (87, E.UNKNOWN_SERVER_ERROR),  # anything else
        (-1, E.UNKNOWN_SERVER_ERROR),
    ],
)
def test_a_failed_commit_append_is_never_visible_and_answers_the_mapped_error(
    append_error: int, answer: ErrorCode
) -> None:
    d = ReplicatedDriver(auto_ack=False)
    first = d.commit_token([("t", 0, 1)])
    d.ack(next(iter(d.writes)))
    tok = d.commit_token([("t", 0, 5), ("t", 1, 6)])
    (write,) = d.writes
    d.ack(write, append_error)
    assert [p.error for p in d.resp(tok).partitions] == [answer, answer]
    assert d.offsets() == [("t", 0, 1)]  # the earlier, written offset; never the failed ones
    assert d.resp(first).partitions[0].error == E.NONE
    rejected = d.kinds("commit_rejected")
    assert [(r["partition"], r["error"], r["offsets_partition"]) for r in rejected] == [
        (0, answer.name, P_G1),
        (1, answer.name, P_G1),
    ]
    assert len(d.kinds("commit")) == 1
    assert commit_error(append_error) is answer


def test_too_large_metadata_is_answered_per_partition_and_not_appended() -> None:
    d = ReplicatedDriver(auto_ack=False)
    tok = d.commit_token([("t", 0, 5), ("t", 1, 6)], metadata=["x" * 4097, ""])
    (write,) = d.writes
    assert [(r.partition, r.offset) for r in d.writes[write]] == [(1, 6)]
    d.ack(write, 19)
    assert [p.error for p in d.resp(tok).partitions] == [
        E.OFFSET_METADATA_TOO_LARGE,
        E.COORDINATOR_NOT_AVAILABLE,
    ]
    # all too large: answered at once, nothing appended
    tok = d.commit_token([("t", 0, 5)], metadata=["x" * 4097])
    assert d.writes == {} and [p.error for p in d.resp(tok).partitions] == [E.OFFSET_METADATA_TOO_LARGE]


def test_a_commit_acknowledged_after_unload_is_answered_and_only_the_next_load_shows_it() -> None:
    d = ReplicatedDriver(auto_ack=False)
    tok = d.commit_token([("t", 0, 5)])
    (write,) = d.writes
    d.apply(d.c.unload(P_G1, d.now))
    assert d.resp(tok) is None  # the append's outcome decides the answer, as Kafka's callback does
    d.ack(write, 0)
    assert [p.error for p in d.resp(tok).partitions] == [E.NONE]  # it is durable
    d.apply(d.c.begin_loading(P_G1))
    for record in d.log:
        d.c.load(record)
    d.apply(d.c.finish_loading(d.now, P_G1))
    assert d.offsets() == [("t", 0, 5)]


def test_a_commit_deposed_while_waiting_is_never_cached() -> None:
    d = ReplicatedDriver(auto_ack=False)
    tok = d.commit_token([("t", 0, 5)])
    (write,) = d.writes
    d.apply(d.c.unload(P_G1, d.now))
    d.apply(d.c.begin_loading(P_G1))
    d.apply(d.c.finish_loading(d.now, P_G1))
    d.ack(write, 6)  # deposed while waiting: never written
    assert [p.error for p in d.resp(tok).partitions] == [E.NOT_COORDINATOR]
    assert d.offsets() == []


def test_a_commit_acknowledged_during_a_reload_is_visible_once_loaded_even_if_the_load_missed_it() -> None:
    d = ReplicatedDriver(auto_ack=False)
    tok = d.commit_token([("t", 0, 5)])
    (write,) = d.writes
    d.apply(d.c.unload(P_G1, d.now))
    d.apply(d.c.begin_loading(P_G1))  # the load reads the log before the write is committed: nothing
    d.ack(write, 0)
    assert [p.error for p in d.resp(tok).partitions] == [E.NONE]
    assert d.fetch(G1).error == E.COORDINATOR_LOAD_IN_PROGRESS
    d.apply(d.c.finish_loading(d.now, P_G1))
    assert d.offsets() == [("t", 0, 5)]


def test_a_commit_acknowledged_after_a_reload_enters_the_new_cache() -> None:
    d = ReplicatedDriver(auto_ack=False)
    tok = d.commit_token([("t", 0, 5)])
    (write,) = d.writes
    d.apply(d.c.unload(P_G1, d.now))
    d.apply(d.c.begin_loading(P_G1))
    d.apply(d.c.finish_loading(d.now, P_G1))
    assert d.c.group(G1) is None  # the reload read nothing of it
    d.ack(write, 0)
    assert [p.error for p in d.resp(tok).partitions] == [E.NONE]
    assert d.offsets() == [("t", 0, 5)]


def test_a_commit_acknowledged_while_its_partition_is_not_owned_is_not_cached() -> None:
    d = ReplicatedDriver(auto_ack=False)
    tok = d.commit_token([("t", 0, 5)])
    (write,) = d.writes
    d.apply(d.c.unload(P_G1, d.now))
    d.ack(write, 0)
    assert [p.error for p in d.resp(tok).partitions] == [E.NONE]
    assert d.c.group(G1) is None
    d.apply(d.c.begin_loading(P_G1))
    d.apply(d.c.finish_loading(d.now, P_G1))  # a load that does not read the log shows nothing
    assert d.offsets() == []


def _completing_group(d: ReplicatedDriver) -> tuple[str, str, int, int]:
    """Two members that rejoined; returns (leader, follower, follower's parked SyncGroup token, generation)."""
    d.auto_ack = True
    ids = d.stable_group(2)
    t0, t1 = d.join(ids[0]), d.join(ids[1])
    r0 = d.resp(t0)
    gen = r0.generation_id
    leader = r0.leader
    follower = ids[1] if leader == ids[0] else ids[0]
    assert d.resp(t1).error == E.NONE and d.state() is S.COMPLETING_REBALANCE
    d.auto_ack = False
    ts = d.sync(follower, gen)
    return leader, follower, ts, gen


def test_a_sync_group_is_answered_and_stable_only_once_its_group_record_is_written() -> None:
    d = ReplicatedDriver()
    leader, follower, ts, gen = _completing_group(d)
    tl = d.sync(leader, gen, {leader: b"L", follower: b"F"})
    assert d.resp(tl) is None and d.resp(ts) is None
    assert d.state() is S.COMPLETING_REBALANCE
    (described,) = d.c.describe_groups(d.now, DescribeGroupsRequest([G1])).groups
    assert described.state == "CompletingRebalance" and all(m.assignment == b"" for m in described.members)
    (write,) = d.writes
    (record,) = d.writes[write]
    assert record.generation_id == gen
    assert {m.member_id: m.assignment for m in record.members} == {leader: b"L", follower: b"F"}
    d.ack(write)
    assert (d.resp(tl).error, d.resp(tl).assignment) == (E.NONE, b"L")
    assert (d.resp(ts).error, d.resp(ts).assignment) == (E.NONE, b"F")
    assert d.state() is S.STABLE
    assert d.kinds("rebalance_end")[-1]["generation"] == gen


@pytest.mark.parametrize(
    ("append_error", "answer"),
    [
        (6, E.NOT_COORDINATOR),
        (19, E.COORDINATOR_NOT_AVAILABLE),
        (20, E.COORDINATOR_NOT_AVAILABLE),
        (7, E.REBALANCE_IN_PROGRESS),  # storeGroup maps a timeout so that members simply rejoin
        (10, E.UNKNOWN_SERVER_ERROR),
        (87, E.UNKNOWN_SERVER_ERROR),
    ],
)
def test_a_sync_group_whose_group_record_fails_answers_the_mapped_error_and_rebalances(
    append_error: int, answer: ErrorCode
) -> None:
    d = ReplicatedDriver()
    leader, follower, ts, gen = _completing_group(d)
    tl = d.sync(leader, gen, {leader: b"L", follower: b"F"})
    (write,) = d.writes
    d.ack(write, append_error)
    assert d.resp(tl).error == answer and d.resp(ts).error == answer
    assert d.resp(tl).assignment == b"" and d.resp(ts).assignment == b""
    assert d.state() is S.PREPARING_REBALANCE
    assert d.log[-1].generation_id == gen - 1  # the last written group record is the previous generation's
    assert group_write_error(append_error) is answer


def test_a_group_record_written_after_the_group_moved_on_changes_nothing() -> None:
    d = ReplicatedDriver()
    leader, follower, ts, gen = _completing_group(d)
    tl = d.sync(leader, gen, {leader: b"L", follower: b"F"})
    (write,) = d.writes
    # the follower rejoins with new metadata meanwhile: a new rebalance answers the parked syncs
    d.join(follower, protocols=[("range", b"changed")])
    assert d.resp(tl).error == E.REBALANCE_IN_PROGRESS and d.resp(ts).error == E.REBALANCE_IN_PROGRESS
    d.ack(write)
    assert d.state() is S.PREPARING_REBALANCE
    assert d.c.persisted(write, 0, d.now) == []  # answered already: unknown write


def test_single_broker_mode_persists_in_one_phase_as_before() -> None:
    d = Driver()
    ids = d.stable_group(2)
    assert d.commit(ids[0], 1, [("t", 0, 10)]) == [E.NONE]
    assert d.c.pending_writes == 0 and not d.c.replicated
    assert d.c.offset_fetch(d.now, OffsetFetchRequest("g1", None)).partitions[0].offset == 10
    assert "offsets_partition" not in d.kinds("commit")[-1]
