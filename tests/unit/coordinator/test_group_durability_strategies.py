"""The two durability strategies of the group machine on their own: what each does with the group table and the
offsets it shares with the machine, and what it leaves to the machine (the groups to unload or load).

Offsets partitions (50): ``"g1"`` = 103 * 31 + 49 = 3242 -> 42, ``"g2"`` = 3243 -> 43 (Java ``String.hashCode``,
by hand).
"""

from __future__ import annotations

import pytest

from coordinator.core.group import (
    Emit,
    ErrorCode,
    GroupState,
    OffsetCommitPartition,
    OffsetCommitRecord,
    OffsetCommitRequest,
    OffsetCommitResponse,
    OffsetFetchRequest,
    Persist,
    Respond,
)
from coordinator.core.group.api import Effect
from coordinator.core.group.durability import LocalDurability, ReplicatedDurability
from coordinator.core.group.group import Group
from coordinator.core.group.offsets import OffsetManager

P_G1, P_G2 = 42, 43


def _tables() -> tuple[dict[str, Group], OffsetManager]:
    groups = {"g1": Group("g1"), "g2": Group("g2")}
    offsets = OffsetManager(max_metadata_bytes=10)
    offsets.replay(OffsetCommitRecord("g1", "t", 0, 5, -1, "", 1))
    offsets.replay(OffsetCommitRecord("g2", "t", 0, 6, -1, "", 1))
    return groups, offsets


def _commit(group: str, offset: int) -> OffsetCommitRequest:
    return OffsetCommitRequest(group, [OffsetCommitPartition("t", 0, offset)])


def test_local_loading_forgets_everything_hands_back_the_groups_to_unload_and_serves_all_when_done() -> None:
    groups, offsets = _tables()
    d = LocalDurability(groups, offsets)
    g1, g2 = groups["g1"], groups["g2"]
    assert d.begin_loading(None) == [g1, g2]
    assert groups == {} and offsets.count("g1") == 0
    assert d.own.status("g1") is ErrorCode.COORDINATOR_LOAD_IN_PROGRESS
    groups["g3"] = g3 = Group("g3")  # what the load read
    assert d.finish_loading(0, None) == [g3]
    assert d.own.status("g1") is None
    with pytest.raises(ValueError):
        d.begin_loading(P_G1)
    with pytest.raises(ValueError):
        d.finish_loading(0, P_G1)
    with pytest.raises(ValueError):
        d.unload(P_G1)


def test_local_writes_are_done_at_once() -> None:
    groups, offsets = _tables()
    d = LocalDurability(groups, offsets)
    out: list[Effect] = []
    d.write_commit(groups["g1"], _commit("g1", 9), 100, out, "tok")
    assert [type(e) for e in out] == [Persist, Emit, Respond]  # written, its commit event, answered
    assert offsets.count("g1") == 1 and d.pending_writes == 0
    out.clear()
    assert d.write_sync_group(groups["g1"], "leader", 100, out) is True
    assert [(type(e), e.write) for e in out if isinstance(e, Persist)] == [(Persist, None)]
    assert d.persisted(1, 0, 100, -1, out) is None


def test_replicated_loading_is_per_partition_and_unloading_forgets_that_partitions_groups() -> None:
    groups, offsets = _tables()
    d = ReplicatedDurability(50, groups, offsets)
    assert d.own.status("g1") is ErrorCode.NOT_COORDINATOR
    assert d.begin_loading(P_G1) == []  # nothing to unload
    assert d.begin_loading(P_G1) == []  # already loading: unchanged
    d.check_record(OffsetCommitRecord("g1", "t", 0, 1, -1, "", 1))
    with pytest.raises(ValueError):
        d.check_record(OffsetCommitRecord("g2", "t", 0, 1, -1, "", 1))  # its partition is not loading
    assert d.finish_loading(0, P_G1) == [groups["g1"]]
    assert d.finish_loading(0, P_G1) == []  # not loading any more
    assert d.own.status("g1") is None
    g1 = groups["g1"]
    assert d.unload(P_G1) == [g1]
    assert "g1" not in groups and offsets.count("g1") == 0
    assert "g2" in groups and offsets.count("g2") == 1
    with pytest.raises(ValueError):
        d.begin_loading(None)
    with pytest.raises(ValueError):
        d.unload(50)


def test_replicated_commits_become_visible_on_their_acknowledgement_and_a_group_record_is_handed_back() -> (
    None
):
    groups, offsets = _tables()
    d = ReplicatedDurability(50, groups, offsets)
    d.begin_loading(P_G1)
    d.finish_loading(0, P_G1)
    out: list[Effect] = []
    d.write_commit(groups["g1"], _commit("g1", 9), 100, out, "tok")
    assert [e.write for e in out if isinstance(e, Persist)] == [1]
    assert d.pending_writes == 1
    assert d.write_sync_group(groups["g1"], "leader", 100, out) is False
    assert [e.write for e in out if isinstance(e, Persist)] == [1, 2]
    out.clear()
    assert d.persisted(1, 0, 200, 3, out) is None  # the commit is completed by the strategy
    respond = out[-1]
    assert isinstance(respond, Respond) and isinstance(respond.response, OffsetCommitResponse)
    assert [p.error for p in respond.response.partitions] == [ErrorCode.NONE]
    fetched = offsets.fetch(groups["g1"], OffsetFetchRequest("g1", [("t", 0)]))
    assert [p.offset for p in fetched.partitions] == [9]
    sync = d.persisted(2, 0, 200, 3, out)
    assert sync is not None and (sync.group, sync.generation, sync.leader) == (groups["g1"], 0, "leader")
    assert d.persisted(2, 0, 200, 3, out) is None  # answered already
    assert d.pending_writes == 0


def test_a_commit_acknowledged_while_its_partition_reloads_is_applied_when_the_load_ends() -> None:
    groups, offsets = _tables()
    d = ReplicatedDurability(50, groups, offsets)
    d.begin_loading(P_G2)
    d.finish_loading(0, P_G2)
    out: list[Effect] = []
    d.write_commit(groups["g2"], _commit("g2", 11), 100, out, "tok")
    d.unload(P_G2)
    d.begin_loading(P_G2)  # the load may read the log before the commit is in it
    d.persisted(1, 0, 200, 3, out)
    assert "g2" not in groups and offsets.count("g2") == 0
    (loaded,) = d.finish_loading(300, P_G2)
    assert loaded.group_id == "g2" and loaded.state is GroupState.EMPTY
    assert offsets.count("g2") == 1
