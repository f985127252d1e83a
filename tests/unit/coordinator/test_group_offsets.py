"""The offsets manager on its own, behind a fake group type: what it asks the group (commit and fetch
validation), what it stores, answers and persists, in both write modes; and the classic group's answers.

Clocks are plain numbers passed in (the manager reads none); the metadata limit is 4 (Java length: UTF-16 units).
"""

from __future__ import annotations

from dataclasses import dataclass, field

from coordinator.core.group import (
    Emit,
    ErrorCode,
    GroupState,
    OffsetCommitPartition,
    OffsetCommitRecord,
    OffsetCommitRequest,
    OffsetCommitResponse,
    OffsetFetchPartition,
    OffsetFetchRequest,
    Persist,
    Respond,
)
from coordinator.core.group.api import Effect
from coordinator.core.group.group import Group
from coordinator.core.group.offsets import OffsetManager

E = ErrorCode


@dataclass
class FakeGroup:
    """A group of another type: answers what it is told to and records what it was asked."""

    group_id: str = "cg"
    generation_id: int = 5
    commit_error: ErrorCode | None = None
    fetch_error: ErrorCode | None = None
    asked: list[str] = field(default_factory=list)

    def validate_offset_commit(self, req: OffsetCommitRequest) -> ErrorCode | None:
        self.asked.append(f"commit {req.member_id} {req.generation_id}")
        return self.commit_error

    def validate_offset_fetch(self, req: OffsetFetchRequest) -> ErrorCode | None:
        self.asked.append("fetch")
        return self.fetch_error


def _commit(
    *parts: tuple[str, int, int, str], member: str = "m1", generation: int = 5
) -> OffsetCommitRequest:
    return OffsetCommitRequest(
        "cg", [OffsetCommitPartition(t, p, o, meta) for t, p, o, meta in parts], generation, member
    )


def _answer(out: list[Effect]) -> list[tuple[str, int, ErrorCode]]:
    respond = out[-1]
    assert isinstance(respond, Respond) and isinstance(respond.response, OffsetCommitResponse)
    return [(r.topic, r.partition, r.error) for r in respond.response.partitions]


def test_a_commit_the_group_refuses_is_answered_with_its_error_and_stores_nothing() -> None:
    m = OffsetManager(max_metadata_bytes=4)
    group = FakeGroup(commit_error=E.ILLEGAL_GENERATION)
    out: list[Effect] = []
    req = _commit(("t", 0, 10, ""), ("t", 1, 11, ""))
    assert m.accept_commit(group, req, "tok", out) is False
    assert group.asked == ["commit m1 5"]
    assert _answer(out) == [("t", 0, E.ILLEGAL_GENERATION), ("t", 1, E.ILLEGAL_GENERATION)]
    assert [e.kind for e in out if isinstance(e, Emit)] == ["commit_rejected", "commit_rejected"]
    assert m.count("cg") == 0


def test_an_accepted_commit_is_stored_persisted_and_answered_in_one_step() -> None:
    m = OffsetManager(max_metadata_bytes=4)
    group = FakeGroup()
    out: list[Effect] = []
    req = _commit(("t", 0, 10, "abcd"), ("t", 1, 11, "abcde"), ("u", 0, 3, "éé"))
    assert m.accept_commit(group, req, "tok", out) is True
    assert out == []  # accepting answers nothing
    m.store(req, 1000, out, "tok")
    persisted = [e.record for e in out if isinstance(e, Persist)]
    # "abcd" is 4 units (fits), "abcde" 5 (too large), "éé" 2 UTF-16 units though 4 UTF-8 bytes (fits).
    assert persisted == [
        OffsetCommitRecord("cg", "t", 0, 10, -1, "abcd", 1000),
        OffsetCommitRecord("cg", "u", 0, 3, -1, "éé", 1000),
    ]
    assert _answer(out) == [("t", 0, E.NONE), ("t", 1, E.OFFSET_METADATA_TOO_LARGE), ("u", 0, E.NONE)]
    assert m.count("cg") == 2
    fetched = m.fetch(group, OffsetFetchRequest("cg", [("t", 0), ("t", 1), ("u", 0)]))
    assert fetched.error is E.NONE
    assert fetched.partitions == [
        OffsetFetchPartition("t", 0, 10, -1, "abcd"),
        OffsetFetchPartition("t", 1, -1),
        OffsetFetchPartition("u", 0, 3, -1, "éé"),
    ]


def test_a_two_phase_commit_is_visible_only_once_completed_and_a_failed_one_never() -> None:
    m = OffsetManager(max_metadata_bytes=4)
    group = FakeGroup()
    out: list[Effect] = []
    prepared = m.prepare(group, _commit(("t", 0, 10, ""), ("t", 1, 11, "toolong")), 2000, out, "tok", 7)
    assert prepared is not None
    assert [(e.record, e.write) for e in out if isinstance(e, Persist)] == [
        (OffsetCommitRecord("cg", "t", 0, 10, -1, "", 2000), 7)
    ]
    assert not any(isinstance(e, Respond) for e in out)
    assert m.fetch(group, OffsetFetchRequest("cg")).partitions == []  # not visible before the outcome
    out.clear()
    m.complete(prepared, E.NONE, m.group_offsets("cg"), out, extra={"offsets_partition": 3})
    assert _answer(out) == [("t", 0, E.NONE), ("t", 1, E.OFFSET_METADATA_TOO_LARGE)]
    committed = [e.fields for e in out if isinstance(e, Emit) and e.kind == "commit"]
    assert committed == [
        {
            "group": "cg",
            "member": "m1",
            "generation": 5,
            "topic": "t",
            "partition": 0,
            "offset": 10,
            "offsets_partition": 3,
        }
    ]
    assert m.fetch(group, OffsetFetchRequest("cg")).partitions == [OffsetFetchPartition("t", 0, 10)]

    out.clear()
    failed = m.prepare(group, _commit(("t", 0, 99, "")), 3000, out, "tok2", 8)
    assert failed is not None
    m.complete(failed, E.NOT_COORDINATOR, m.group_offsets("cg"), out, extra={})
    assert _answer(out) == [("t", 0, E.NOT_COORDINATOR)]
    assert m.fetch(group, OffsetFetchRequest("cg", [("t", 0)])).partitions == [
        OffsetFetchPartition("t", 0, 10)
    ]


def test_a_two_phase_commit_with_nothing_that_fits_is_answered_without_an_append() -> None:
    m = OffsetManager(max_metadata_bytes=4)
    out: list[Effect] = []
    assert m.prepare(FakeGroup(), _commit(("t", 0, 10, "toolong")), 0, out, "tok", 1) is None
    assert not any(isinstance(e, Persist) for e in out)
    assert _answer(out) == [("t", 0, E.OFFSET_METADATA_TOO_LARGE)]


def test_fetch_asks_the_group_absent_groups_give_minus_one_and_other_errors_are_the_answers() -> None:
    m = OffsetManager(max_metadata_bytes=4)
    m.replay(OffsetCommitRecord("cg", "t", 0, 10, -1, "", 1))
    m.replay(OffsetCommitRecord("cg", "t", 0, 12, 2, "x", 2))  # the later record of a partition wins
    wanted = OffsetFetchRequest("cg", [("t", 0), ("t", 1)])
    group = FakeGroup()
    assert m.fetch(group, wanted).partitions == [
        OffsetFetchPartition("t", 0, 12, 2, "x"),
        OffsetFetchPartition("t", 1, -1),
    ]
    assert group.asked == ["fetch"]
    gone = FakeGroup(fetch_error=E.GROUP_ID_NOT_FOUND)
    answer = m.fetch(gone, wanted)
    assert (answer.error, answer.partitions) == (
        E.NONE,
        [OffsetFetchPartition("t", 0, -1), OffsetFetchPartition("t", 1, -1)],
    )
    assert m.fetch(gone, OffsetFetchRequest("cg")).partitions == []
    assert m.fetch(None, wanted).partitions == [
        OffsetFetchPartition("t", 0, -1),
        OffsetFetchPartition("t", 1, -1),
    ]
    refused = m.fetch(FakeGroup(fetch_error=E.UNKNOWN_MEMBER_ID), wanted)
    assert (refused.error, refused.partitions) == (E.UNKNOWN_MEMBER_ID, [])


def test_offsets_go_with_their_group_and_only_with_it() -> None:
    m = OffsetManager(max_metadata_bytes=4)
    m.replay(OffsetCommitRecord("a", "t", 0, 1, -1, "", 1))
    m.replay(OffsetCommitRecord("b", "t", 0, 2, -1, "", 1))
    m.delete_group("a")
    assert (m.count("a"), m.count("b")) == (0, 1)
    m.clear()
    assert m.count("b") == 0


def test_the_classic_group_validates_commits_as_kafka_does() -> None:
    empty = Group("g", GroupState.EMPTY)
    simple = OffsetCommitRequest("g", [], -1, "")
    assert empty.validate_offset_commit(simple) is None  # a simple commit to an Empty group
    assert empty.validate_offset_commit(OffsetCommitRequest("g", [], 0, "m")) is E.UNKNOWN_MEMBER_ID
    completing = Group("g", GroupState.COMPLETING_REBALANCE)
    assert (
        completing.validate_offset_commit(simple) is E.UNKNOWN_MEMBER_ID
    )  # only members commit to a live group
    dead = Group("g", GroupState.DEAD)
    assert dead.validate_offset_commit(simple) is E.COORDINATOR_NOT_AVAILABLE
    assert dead.validate_offset_fetch(OffsetFetchRequest("g")) is E.GROUP_ID_NOT_FOUND
    assert empty.validate_offset_fetch(OffsetFetchRequest("g")) is None
