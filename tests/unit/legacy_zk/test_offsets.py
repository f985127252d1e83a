"""Offset storage against the in-memory ZooKeeper: plain 0.8 commits and fenced commits."""

from __future__ import annotations

from typing import Any

from legacy_zk import paths
from legacy_zk.ids import ThreadId, TopicPartition
from legacy_zk.memzk import MemZk, MemZkSession
from legacy_zk.offsets import OffsetStore, fetch_offsets
from legacy_zk.reads import MalformedLog
from legacy_zk.registry import OwnedPartition, Registry

G = "g"
TP = TopicPartition("t", 0)
OFFSET = paths.offset_path(G, "t", 0)
OWNER = paths.owner_path(G, "t", 0)


class _NoLock:
    def __enter__(self) -> None:
        return None

    def __exit__(self, *exc: object) -> None:
        return None


def store(
    session: MemZkSession, registry: Registry, fenced: bool, events: list[tuple[str, dict[str, Any]]]
) -> tuple[OffsetStore, dict[str, int]]:
    def emit(kind: str, /, **fields: Any) -> None:
        events.append((kind, fields))

    stats = {"commits": 0, "commits_rejected": 0}
    return OffsetStore(session, G, registry, fenced, emit, stats, _NoLock(), lambda: "m"), stats


def owned(session: MemZkSession, consumed: int, version: int | None = None) -> Registry:
    """A registry owning t-0 by thread g_a-0, whose owner znode this session creates."""
    session.create_parents(paths.owners_dir(G, "t"))
    session.create(OWNER, b"g_a-0", ephemeral=True)
    r = Registry()
    r.replace({TP: OwnedPartition(ThreadId("g_a", 0), consumed, version)})
    return r


def test_plain_commit_writes_the_next_offset_once_per_position() -> None:
    zk = MemZk()
    a = zk.session()
    registry = owned(a, 10)
    events: list[tuple[str, dict[str, Any]]] = []
    s, stats = store(a, registry, False, events)
    assert s.commit("manual") == 1
    assert zk.dump()[OFFSET] == b"10"
    assert s.commit("auto") == 0  # "No updates to offsets since last commit"
    registry.advance(TP, 11)
    assert s.commit("auto") == 1 and zk.dump()[OFFSET] == b"11"
    assert [(k, f["offset"], f["reason"]) for k, f in events] == [
        ("commit", 10, "manual"),
        ("commit", 11, "auto"),
    ]
    assert stats["commits"] == 2


def test_an_unknown_position_is_not_committed() -> None:
    a = MemZk().session()
    s, _ = store(a, owned(a, -1), False, [])
    assert s.commit("auto") == 0


def test_fenced_commit_writes_at_the_known_version_and_learns_a_foreign_write() -> None:
    zk = MemZk()
    a, other = zk.session(), zk.session()
    registry = owned(a, 10)
    events: list[tuple[str, dict[str, Any]]] = []
    s, stats = store(a, registry, True, events)
    assert s.commit("manual") == 1  # no offset znode yet: created (version 0) with the owner check
    assert zk.dump()[OFFSET] == b"10"
    other.set(OFFSET, b"99")  # someone else writes the offset: version 1
    registry.advance(TP, 11)
    assert s.commit("auto") == 0
    assert events[-1][0] == "commit_rejected"
    assert events[-1][1]["reason"] == "offset znode was written by someone else since we read it"
    registry.advance(TP, 12)
    assert s.commit("auto") == 1  # it learned version 1 when refused: this write succeeds (version 2)
    assert zk.dump()[OFFSET] == b"12" and a.get(OFFSET)[1].version == 2
    assert (stats["commits"], stats["commits_rejected"]) == (2, 1)


def test_fenced_commit_is_refused_when_the_owner_znode_is_someone_elses() -> None:
    zk = MemZk()
    a, b = zk.session(), zk.session()
    registry = owned(a, 10)
    events: list[tuple[str, dict[str, Any]]] = []
    s, _ = store(a, registry, True, events)
    a.delete(OWNER)
    b.create(OWNER, b"g_b-0", ephemeral=True)  # b claimed the partition meanwhile
    assert s.commit("auto") == 0
    assert events == [
        (
            "commit_rejected",
            {
                "topic": "t",
                "partition": 0,
                "offset": 10,
                "reason": "owner znode belongs to another session",
                "trigger": "auto",
                "store": "zookeeper",
            },
        )
    ]
    assert OFFSET not in zk.dump()
    b.delete(OWNER)
    assert s.commit("auto") == 0 and events[-1][1]["reason"] == "owner znode missing"


def test_fetch_offsets_reads_next_offset_and_version_and_reports_garbage_once() -> None:
    zk = MemZk()
    a = zk.session()
    a.create_parents(paths.offsets_dir(G, "t"))
    a.create(OFFSET, b"42")
    a.set(OFFSET, b"43")  # version 1
    a.create(paths.offset_path(G, "t", 1), b"garbage")
    seen: list[str] = []
    log = MalformedLog(lambda e: seen.append(e.path))
    parts = [TP, TopicPartition("t", 1), TopicPartition("t", 2)]
    got = fetch_offsets(a, G, parts, log)
    assert got == {TP: (43, 1), TopicPartition("t", 1): (-1, 0), TopicPartition("t", 2): (-1, None)}
    fetch_offsets(a, G, parts, log)
    assert seen == [paths.offset_path(G, "t", 1)]  # once per (path, version)
