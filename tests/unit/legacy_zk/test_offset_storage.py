"""0.8.2.2's offset storage (``offsets.storage=kafka``, ``dual.commit.enabled``) with hand-made values:
the fetch rule, the commit order (broker first, then ZooKeeper for the partitions the broker accepted)
and the commit retry rule, against the in-memory ZooKeeper and a fake offset manager.

Expected values are worked out by hand from ``ZookeeperConsumerConnector.scala`` at 0.8.2.2 (see
:mod:`legacy_zk.offset_rules`).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

import pytest

from harness.kernel.errors import ConfigError
from legacy_zk import paths
from legacy_zk.config import ConsumerConfig, parse_properties
from legacy_zk.ids import ThreadId, TopicPartition
from legacy_zk.memzk import MemZk, MemZkSession
from legacy_zk.offset_rules import CommitRetry, choose_offset, judge_commit
from legacy_zk.offsets import OffsetChannelClosed, OffsetStore, fetch_start_offsets
from legacy_zk.reads import MalformedLog
from legacy_zk.registry import OwnedPartition, Registry

G = "g"
T0, T1, T2 = (TopicPartition("t", p) for p in range(3))


class FakeManager:
    """An offset manager answering from scripted lists (one entry per request), recording requests."""

    def __init__(
        self,
        commit_answers: Sequence[Mapping[TopicPartition, str] | Exception] = (),
        fetch_answers: Sequence[Mapping[TopicPartition, tuple[int, str]] | Exception] = (),
    ) -> None:
        self.commit_answers = list(commit_answers)
        self.fetch_answers = list(fetch_answers)
        self.commits: list[dict[TopicPartition, int]] = []
        self.fetches: list[list[TopicPartition]] = []
        self.disconnects = 0
        #: ZooKeeper offsets written when each commit arrived (proves the order: broker first)
        self.zk_at_commit: list[dict[str, bytes]] = []
        self.zk: MemZk | None = None

    def commit(self, offsets: Mapping[TopicPartition, int]) -> dict[TopicPartition, str]:
        self.commits.append(dict(offsets))
        if self.zk is not None:
            self.zk_at_commit.append({k: v for k, v in self.zk.dump().items() if "/offsets/" in k})
        answer = self.commit_answers.pop(0) if len(self.commit_answers) > 1 else self.commit_answers[0]
        if isinstance(answer, Exception):
            raise answer
        return dict(answer)

    def fetch(self, partitions: Sequence[TopicPartition]) -> dict[TopicPartition, tuple[int, str]]:
        self.fetches.append(list(partitions))
        answer = self.fetch_answers.pop(0)
        if isinstance(answer, Exception):
            raise answer
        return dict(answer)

    def disconnect(self) -> None:
        self.disconnects += 1


class _NoLock:
    def __enter__(self) -> None:
        return None

    def __exit__(self, *exc: object) -> None:
        return None


class Rig:
    """One member's OffsetStore over a memzk session owning t-0..t-2 at the given positions."""

    def __init__(self, positions: Mapping[TopicPartition, int], manager: FakeManager, **kw: Any) -> None:
        self.zk = MemZk()
        self.session: MemZkSession = self.zk.session()
        manager.zk = self.zk
        self.manager = manager
        self.events: list[tuple[str, dict[str, Any]]] = []
        self.sleeps: list[float] = []
        self.stopping = False
        self.registry = Registry()
        self.registry.replace(
            {tp: OwnedPartition(ThreadId("g_a", 0), off, None) for tp, off in positions.items()}
        )
        self.stats = {"commits": 0, "commits_rejected": 0}
        self.store = OffsetStore(
            self.session,
            G,
            self.registry,
            kw.pop("fenced", False),
            lambda kind, /, **f: self.events.append((kind, f)),
            self.stats,
            _NoLock(),
            lambda: "m",
            storage=kw.pop("storage", "kafka"),
            dual=kw.pop("dual", True),
            manager=manager,
            max_retries=kw.pop("max_retries", 5),
            backoff_ms=kw.pop("backoff_ms", 1000),
            shutting_down=lambda: self.stopping,
            sleep=self.sleeps.append,
        )

    def zk_offsets(self) -> dict[int, int]:
        out = {}
        for p in range(3):
            path = paths.offset_path(G, "t", p)
            if self.session.exists(path) is not None:
                out[p] = int(self.session.get(path)[0])
        return out

    def commits(self, store: str) -> list[tuple[int, int]]:
        return [
            (f["partition"], f["offset"]) for k, f in self.events if k == "commit" and f["store"] == store
        ]


# -- configuration -------------------------------------------------------------------------------
def test_storage_properties_and_their_defaults() -> None:
    base = ConsumerConfig(group_id="g", zookeeper_connect="z:1", topics={"t": 1})
    assert (base.offsets_storage, base.dual_commit) == ("zookeeper", False)  # 0.8.2: dual = storage==kafka
    kafka = base.replace(**parse_properties({"offsets.storage": "Kafka"})).validate()
    assert (kafka.offsets_storage, kafka.dual_commit) == ("kafka", True)  # lower-cased as 0.8.2 did
    off = kafka.replace(**parse_properties({"dual.commit.enabled": "false"}))
    assert off.dual_commit is False
    assert (base.offsets_commit_max_retries, base.offsets_channel_backoff_ms) == (5, 1000)
    assert base.offsets_channel_socket_timeout_ms == 10000
    assert kafka.as_properties()["dual.commit.enabled"] is True
    with pytest.raises(ConfigError, match=r"^offsets\.storage: must be zookeeper or kafka, got 'redis'$"):
        base.replace(offsets_storage="redis").validate()
    with pytest.raises(ConfigError, match="offsets.commit.max.retries"):
        base.replace(offsets_commit_max_retries=-1).validate()


# -- the fetch rule ------------------------------------------------------------------------------
@pytest.mark.parametrize(
    ("storage", "dual", "zk", "kafka", "expected"),
    [
        ("kafka", True, 120, 100, 120),  # dual: the larger wins (ZooKeeper ahead)
        ("kafka", True, 100, 130, 130),  # dual: the larger wins (broker ahead)
        ("kafka", True, -1, 40, 40),  # no znode: -1 loses to the broker's
        ("kafka", True, 55, -1, 55),  # the broker has none: ZooKeeper's
        ("kafka", True, -1, -1, -1),  # neither: auto.offset.reset
        ("kafka", False, 120, 100, 100),  # dual off: the broker only, even when ZooKeeper is ahead
        ("kafka", False, None, -1, -1),  # dual off, ZooKeeper not read, broker has none
        ("zookeeper", False, 120, None, 120),  # storage zookeeper: ZooKeeper only
        ("zookeeper", True, 7, 500, 7),  # 0.8.2 ignores dual commit while storage is zookeeper
        ("zookeeper", False, -1, None, -1),
    ],
)
def test_fetch_rule(storage: str, dual: bool, zk: int | None, kafka: int | None, expected: int) -> None:
    assert choose_offset(storage, dual, zk, kafka) == expected


def fetch(
    zk: MemZk, manager: FakeManager | None, storage: str, dual: bool, stopping: list[bool] | None = None
) -> Any:
    waits: list[float] = []
    stop = stopping or [False]
    got = fetch_start_offsets(
        zk=zk.session(),
        group=G,
        partitions=[T0, T1, T2],
        malformed=MalformedLog(lambda e: None),
        storage=storage,
        dual=dual,
        manager=manager,
        shutting_down=lambda: stop[0],
        wait=lambda s: waits.append(s) or stop[0],
        backoff_ms=1000,
    )
    return got, waits


def zk_with_offsets(offsets: Mapping[int, int]) -> MemZk:
    zk = MemZk()
    s = zk.session()
    s.create_parents(paths.offsets_dir(G, "t"))
    for p, off in offsets.items():
        s.create(paths.offset_path(G, "t", p), str(off).encode())
    return zk


def test_fetch_reads_both_stores_with_dual_commit_and_takes_the_larger() -> None:
    zk = zk_with_offsets({0: 120, 1: 100})  # no znode for t-2
    manager = FakeManager(fetch_answers=[{T0: (100, "NONE"), T1: (130, "NONE"), T2: (-1, "NONE")}])
    got, waits = fetch(zk, manager, "kafka", True)
    assert {tp: (s.zookeeper_offset, s.kafka_offset, s.offset) for tp, s in got.items()} == {
        T0: (120, 100, 120),
        T1: (100, 130, 130),
        T2: (-1, -1, -1),
    }
    assert got[T0].zookeeper_version == 0 and got[T2].zookeeper_version is None
    assert manager.fetches == [[T0, T1, T2]] and waits == []


def test_fetch_without_dual_commit_reads_only_the_broker() -> None:
    zk = zk_with_offsets({0: 120})
    manager = FakeManager(fetch_answers=[{T0: (100, "NONE"), T1: (5, "NONE"), T2: (-1, "NONE")}])
    got, _ = fetch(zk, manager, "kafka", False)
    assert {tp: (s.zookeeper_offset, s.kafka_offset, s.offset) for tp, s in got.items()} == {
        T0: (None, 100, 100),
        T1: (None, 5, 5),
        T2: (None, -1, -1),
    }


def test_fetch_with_zookeeper_storage_never_asks_the_broker() -> None:
    zk = zk_with_offsets({1: 9})
    got, _ = fetch(zk, None, "zookeeper", False)
    assert {tp: (s.zookeeper_offset, s.kafka_offset, s.offset) for tp, s in got.items()} == {
        T0: (-1, None, -1),
        T1: (9, None, 9),
        T2: (-1, None, -1),
    }


def test_fetch_retries_not_coordinator_with_a_disconnect_and_load_in_progress_without() -> None:
    zk = zk_with_offsets({})
    ok = {T0: (3, "NONE"), T1: (4, "NONE"), T2: (5, "NONE")}
    manager = FakeManager(
        fetch_answers=[
            {T0: (-1, "NOT_COORDINATOR"), T1: (-1, "NONE"), T2: (-1, "NONE")},
            {T0: (-1, "COORDINATOR_LOAD_IN_PROGRESS"), T1: (-1, "NONE"), T2: (-1, "NONE")},
            OSError("connection reset"),
            ok,
        ]
    )
    got, waits = fetch(zk, manager, "kafka", True)
    assert [got[tp].offset for tp in (T0, T1, T2)] == [3, 4, 5]
    assert len(manager.fetches) == 4
    assert manager.disconnects == 2  # NOT_COORDINATOR and the exception; not the load in progress
    assert waits == [1.0, 1.0, 1.0]  # offsets.channel.backoff.ms between tries


def test_fetch_interrupted_by_shutdown_gives_no_offsets() -> None:
    stopping = [False]
    manager = FakeManager(fetch_answers=[OSError("refused")] * 3)

    def fail_then_stop(partitions: Sequence[TopicPartition]) -> dict[TopicPartition, tuple[int, str]]:
        stopping[0] = True
        raise OSError("refused")

    manager.fetch = fail_then_stop  # type: ignore[method-assign]
    got, waits = fetch(zk_with_offsets({}), manager, "kafka", True, stopping)
    assert got is None and waits == [1.0]


class FlakyZk:
    """A ZooKeeper session whose first ``fails`` reads raise ConnectionLoss."""

    def __init__(self, zk: MemZk, fails: int) -> None:
        self._inner = zk.session()
        self.fails = fails

    def __getattr__(self, name: str) -> Any:
        return getattr(self._inner, name)

    def get(self, path: str, *a: Any, **kw: Any) -> Any:
        if self.fails:
            from kazoo.exceptions import ConnectionLoss

            self.fails -= 1
            raise ConnectionLoss()
        return self._inner.get(path, *a, **kw)


def test_a_zookeeper_read_error_under_dual_commit_is_retried_like_a_failed_fetch() -> None:
    zk = zk_with_offsets({0: 120})
    manager = FakeManager(
        fetch_answers=[{T0: (100, "NONE"), T1: (5, "NONE"), T2: (-1, "NONE")}] * 2,
    )
    waits: list[float] = []
    got = fetch_start_offsets(
        zk=FlakyZk(zk, fails=1),  # type: ignore[arg-type]
        group=G,
        partitions=[T0, T1, T2],
        malformed=MalformedLog(lambda e: None),
        storage="kafka",
        dual=True,
        manager=manager,
        shutting_down=lambda: False,
        wait=lambda s: waits.append(s) or False,
        backoff_ms=1000,
    )
    assert got is not None
    assert [got[tp].offset for tp in (T0, T1, T2)] == [120, 5, -1]  # max(120, 100), max(-1, 5), none
    assert len(manager.fetches) == 2 and manager.disconnects == 1 and waits == [1.0]


def test_a_fetch_cut_short_by_shutdown_logs_no_warning(caplog: pytest.LogCaptureFixture) -> None:
    stopping = [False]

    def refused_then_stop(partitions: Sequence[TopicPartition]) -> dict[TopicPartition, tuple[int, str]]:
        stopping[0] = True  # the shutdown closes the channel under the request
        raise OSError("closed")

    manager = FakeManager()
    manager.fetch = refused_then_stop  # type: ignore[method-assign]
    caplog.set_level("DEBUG", logger="legacy_zk")
    got, _ = fetch(zk_with_offsets({}), manager, "kafka", True, stopping)
    assert got is None
    assert [r.getMessage() for r in caplog.records if r.levelname == "WARNING"] == []
    assert any("ended by the shutdown" in r.getMessage() for r in caplog.records)


# -- the commit order ----------------------------------------------------------------------------
def test_dual_commit_writes_the_broker_first_then_zookeeper_only_where_the_broker_said_none() -> None:
    manager = FakeManager(commit_answers=[{T0: "NONE", T1: "UNKNOWN_TOPIC_OR_PARTITION", T2: "NONE"}])
    rig = Rig({T0: 10, T1: 20, T2: 30}, manager)
    rig.store.commit("auto")
    assert manager.commits == [{T0: 10, T1: 20, T2: 30}]  # ONE OffsetCommit with every owned partition
    assert manager.zk_at_commit == [{}]  # nothing in ZooKeeper when the broker got the commit
    assert rig.zk_offsets() == {0: 10, 2: 30}  # t-1 was refused by the broker: not written to ZooKeeper
    assert rig.commits("kafka") == [(0, 10), (2, 30)]
    assert rig.commits("zookeeper") == [(0, 10), (2, 30)]
    rejected = [f for k, f in rig.events if k == "commit_rejected"]
    assert [(f["partition"], f["store"], f["error"]) for f in rejected] == [
        (1, "kafka", "UNKNOWN_TOPIC_OR_PARTITION")
    ]
    # unchanged positions: the broker gets them again (0.8.2 sends all), ZooKeeper skips its checkpoint
    manager.commit_answers = [{T0: "NONE", T1: "NONE", T2: "NONE"}]
    rig.store.commit("auto")
    assert manager.commits[-1] == {T0: 10, T1: 20, T2: 30}
    assert rig.commits("zookeeper") == [(0, 10), (2, 30), (1, 20)]


def test_without_dual_commit_nothing_goes_to_zookeeper() -> None:
    manager = FakeManager(commit_answers=[{T0: "NONE", T1: "NONE", T2: "NONE"}])
    rig = Rig({T0: 1, T1: 2, T2: 3}, manager, dual=False)
    assert rig.store.commit("auto") == 3
    assert rig.zk_offsets() == {} and rig.commits("zookeeper") == []
    assert rig.commits("kafka") == [(0, 1), (1, 2), (2, 3)]


def test_zookeeper_storage_never_asks_the_broker() -> None:
    manager = FakeManager(commit_answers=[{}])
    rig = Rig({T0: 4, T1: 5, T2: -1}, manager, storage="zookeeper", dual=True)
    assert rig.store.commit("auto") == 2
    assert manager.commits == [] and rig.zk_offsets() == {0: 4, 1: 5}
    assert rig.commits("zookeeper") == [(0, 4), (1, 5)]


def test_not_coordinator_disconnects_the_channel() -> None:
    manager = FakeManager(
        commit_answers=[{T0: "NOT_COORDINATOR", T1: "NOT_COORDINATOR", T2: "NOT_COORDINATOR"}]
    )
    rig = Rig({T0: 1, T1: 2, T2: 3}, manager)
    assert rig.store.commit("auto") == 0
    assert manager.disconnects == 1 and rig.zk_offsets() == {}


# -- the retry rule ------------------------------------------------------------------------------
def test_retry_rule_by_hand() -> None:
    r = CommitRetry(is_auto_commit=True, max_retries=5)
    assert [r.done(True, False) for _ in range(6)] == [False] * 5 + [True]  # 1 + 5 attempts
    assert CommitRetry(True, 5).done(False, False)  # not shutting down: one attempt
    assert CommitRetry(False, 5).done(True, False)  # the scheduler's commit: one attempt
    assert CommitRetry(True, 5).done(True, True)  # committed: done
    assert judge_commit({T0: "OFFSET_METADATA_TOO_LARGE"}).committed  # failed, but not retriable
    assert not judge_commit({T0: "NONE", T1: "COORDINATOR_LOAD_IN_PROGRESS"}).committed


@pytest.mark.parametrize("error", ["COORDINATOR_NOT_AVAILABLE", "NOT_COORDINATOR", "REQUEST_TIMED_OUT"])
def test_shutdown_commit_retries_one_plus_max_retries_times_while_a_retriable_error_persists(
    error: str,
) -> None:
    manager = FakeManager(commit_answers=[{T0: error}])
    rig = Rig({T0: 7}, manager, max_retries=3, backoff_ms=250)
    rig.stopping = True
    rig.store.commit("shutdown")
    assert len(manager.commits) == 4  # 1 + offsets.commit.max.retries
    assert rig.sleeps == [0.25, 0.25, 0.25]  # offsets.channel.backoff.ms between attempts, not after
    assert rig.commits("kafka") == []


def test_shutdown_commit_stops_retrying_once_committed() -> None:
    manager = FakeManager(commit_answers=[{T0: "COORDINATOR_NOT_AVAILABLE"}, OSError("reset"), {T0: "NONE"}])
    rig = Rig({T0: 7}, manager)
    rig.stopping = True
    rig.store.commit("shutdown")
    assert len(manager.commits) == 3 and rig.sleeps == [1.0, 1.0]
    assert rig.commits("kafka") == [(0, 7)] and rig.zk_offsets() == {0: 7}


@pytest.mark.parametrize("reason", ["auto", "rebalance"])
def test_auto_and_rebalance_commits_make_exactly_one_attempt(reason: str) -> None:
    manager = FakeManager(commit_answers=[{T0: "COORDINATOR_NOT_AVAILABLE"}])
    rig = Rig({T0: 7}, manager)  # not shutting down: the rebalance commit does not retry either
    rig.store.commit(reason)
    assert len(manager.commits) == 1 and rig.sleeps == []


def test_the_schedulers_commit_does_not_retry_even_while_shutting_down() -> None:
    manager = FakeManager(commit_answers=[{T0: "COORDINATOR_NOT_AVAILABLE"}])
    rig = Rig({T0: 7}, manager)
    rig.stopping = True
    rig.store.commit("auto")  # 0.8.2's isAutoCommit=false
    assert len(manager.commits) == 1


def test_offset_metadata_too_large_is_not_retried() -> None:
    manager = FakeManager(commit_answers=[{T0: "OFFSET_METADATA_TOO_LARGE", T1: "NONE"}])
    rig = Rig({T0: 7, T1: 8}, manager)
    rig.stopping = True
    rig.store.commit("shutdown")
    assert len(manager.commits) == 1 and rig.sleeps == []
    assert rig.commits("kafka") == [(1, 8)] and rig.zk_offsets() == {1: 8}


def test_a_shutdown_commit_that_finds_no_offset_manager_is_retried_then_given_up_in_the_history() -> None:
    manager = FakeManager(commit_answers=[OffsetChannelClosed("offset manager of group g not found")])
    rig = Rig({T0: 7, T1: 8}, manager, max_retries=2)
    rig.stopping = True
    assert rig.store.commit("shutdown") == 0
    assert len(manager.commits) == 3 and rig.sleeps == [1.0, 1.0]  # 1 + offsets.commit.max.retries
    rejected = [f for k, f in rig.events if k == "commit_rejected"]
    assert [(f["partition"], f["offset"], f["store"], f["error"], f["trigger"]) for f in rejected] == [
        (0, 7, "kafka", "NO_OFFSET_MANAGER", "shutdown"),
        (1, 8, "kafka", "NO_OFFSET_MANAGER", "shutdown"),
    ]
    assert all(f["reason"].startswith("given up after 3 attempt(s): ") for f in rejected)
    assert rig.commits("kafka") == [] and rig.stats["commits_rejected"] == 2


def test_a_given_up_shutdown_commit_whose_last_attempt_was_answered_adds_no_second_rejection() -> None:
    manager = FakeManager(commit_answers=[OSError("reset"), {T0: "COORDINATOR_NOT_AVAILABLE"}])
    rig = Rig({T0: 7}, manager, max_retries=1)
    rig.stopping = True
    rig.store.commit("shutdown")
    rejected = [(f["error"], f["trigger"]) for k, f in rig.events if k == "commit_rejected"]
    assert rejected == [("COORDINATOR_NOT_AVAILABLE", "shutdown")]  # the broker's answer, once


# -- the history gets every answer of the broker before the ZooKeeper writes ----------------------
class FailingZk:
    """A ZooKeeper session whose writes of some offset znodes raise; records the events seen then."""

    def __init__(self, rig: Rig, fail_partitions: set[int]) -> None:
        self._inner = rig.session
        self._rig = rig
        self._fail = {paths.offset_path(G, "t", p) for p in fail_partitions}
        #: (path, number of events written) at each write
        self.writes: list[tuple[str, int]] = []

    def __getattr__(self, name: str) -> Any:
        return getattr(self._inner, name)

    def _write(self, op: str, path: str, *a: Any, **kw: Any) -> Any:
        self.writes.append((path, len(self._rig.events)))
        if path in self._fail:
            from kazoo.exceptions import ConnectionLoss

            raise ConnectionLoss()
        return getattr(self._inner, op)(path, *a, **kw)

    def set(self, path: str, *a: Any, **kw: Any) -> Any:
        return self._write("set", path, *a, **kw)

    def create(self, path: str, *a: Any, **kw: Any) -> Any:
        return self._write("create", path, *a, **kw)


def test_a_failing_dual_write_loses_no_accepted_broker_commit_from_the_history() -> None:
    manager = FakeManager(commit_answers=[{T0: "NONE", T1: "NONE", T2: "NONE"}])
    rig = Rig({T0: 10, T1: 20, T2: 30}, manager)
    zk = FailingZk(rig, {0})  # the dual write of t-0, the first one, raises
    rig.store.zk = zk  # type: ignore[assignment]
    assert rig.store.commit("auto") == 3  # three broker commits accepted, no ZooKeeper write
    assert rig.commits("kafka") == [(0, 10), (1, 20), (2, 30)]  # every one the broker accepted
    assert rig.commits("zookeeper") == [] and rig.zk_offsets() == {}
    assert manager.disconnects == 1  # 0.8.2.2: the exception inside the commit's try disconnects
    assert [p for p, _n in zk.writes] == [paths.offset_path(G, "t", 0)]  # the round ends at the error


def test_the_broker_answers_are_written_to_the_history_before_the_first_dual_write() -> None:
    manager = FakeManager(commit_answers=[{T0: "NONE", T1: "UNKNOWN_TOPIC_OR_PARTITION", T2: "NONE"}])
    rig = Rig({T0: 10, T1: 20, T2: 30}, manager)
    zk = FailingZk(rig, set())
    rig.store.zk = zk  # type: ignore[assignment]
    rig.store.commit("auto")
    first_write_seen = zk.writes[0][1]
    assert [(k, f["store"]) for k, f in rig.events[:first_write_seen]] == [
        ("commit", "kafka"),
        ("commit_rejected", "kafka"),
        ("commit", "kafka"),
    ]
    assert rig.commits("zookeeper") == [(0, 10), (2, 30)] and rig.zk_offsets() == {0: 10, 2: 30}


# -- 0.8.2.2's fold of a response that leaves partitions out --------------------------------------
def test_a_partition_missing_from_the_commit_response_is_not_folded() -> None:
    manager = FakeManager(commit_answers=[{T0: "NONE"}])  # t-1 not answered at all
    rig = Rig({T0: 10, T1: 20}, manager)
    rig.stopping = True
    rig.store.commit("shutdown")
    assert len(manager.commits) == 1 and rig.sleeps == []  # committed: no retry
    assert rig.commits("kafka") == [(0, 10)] and rig.zk_offsets() == {0: 10}
    assert [k for k, _f in rig.events if k == "commit_rejected"] == []


def test_a_partition_missing_from_the_fetch_response_fails_the_fetch() -> None:
    from legacy_zk.offsets import OffsetFetchIncomplete

    manager = FakeManager(fetch_answers=[{T0: (3, "NONE"), T1: (4, "NONE")}])  # t-2 left out
    with pytest.raises(OffsetFetchIncomplete, match=r"did not answer for t-2$"):
        fetch(zk_with_offsets({}), manager, "kafka", True)


# -- the attempt's fetch step --------------------------------------------------------------------
def test_an_attempt_starts_at_the_fetch_rules_offset_and_records_one_offset_fetch_per_partition() -> None:
    from tests.support.memzk_members import Member, memzk_cluster

    zk = memzk_cluster(2)
    admin = zk.session()
    admin.create_parents(paths.offsets_dir(G, "t"))
    admin.create(paths.offset_path(G, "t", 0), b"50")  # ZooKeeper ahead on t-0
    manager = FakeManager(fetch_answers=[{T0: (40, "NONE"), T1: (60, "NONE")}])
    a = Member(zk, "a")
    a.rebalancer.offsets_storage, a.rebalancer.dual_commit = "kafka", True
    a.rebalancer.offset_manager = manager
    assert a.rebalancer.synced_rebalance(["start"]) is True
    assert a.hooks.fetching == [{T0: 50, T1: 60}]  # max(50, 40), max(-1, 60)
    assert [
        (e["partition"], e["storage"], e["dual"], e["zookeeper_offset"], e["kafka_offset"], e["offset"])
        for e in a.kinds("offset_fetch")
    ] == [(0, "kafka", True, 50, 40, 50), (1, "kafka", True, -1, 60, 60)]
    assert a.registry.owned() == {T0, T1}


def test_an_attempt_whose_fetch_is_cut_by_shutdown_claims_nothing() -> None:
    from tests.support.memzk_members import Member, memzk_cluster

    zk = memzk_cluster(1)
    a = Member(zk, "a")

    def refused(partitions: Sequence[TopicPartition]) -> dict[TopicPartition, tuple[int, str]]:
        a.hooks.stopping = True  # SIGTERM arrives while the broker does not answer
        raise OSError("connection refused")

    manager = FakeManager()
    manager.fetch = refused  # type: ignore[method-assign]
    a.rebalancer.offsets_storage, a.rebalancer.offset_manager = "kafka", manager
    assert a.rebalancer.synced_rebalance(["start"]) is False
    assert [e["outcome"] for e in a.kinds("rebalance_end")] == ["shutdown"]
    assert a.kinds("claim") == [] and a.kinds("offset_fetch") == [] and a.hooks.fetching == []


def test_dual_commit_keeps_the_fenced_zookeeper_write() -> None:
    manager = FakeManager(commit_answers=[{T0: "NONE", T1: "NONE"}])
    rig = Rig({T0: 10, T1: 20}, manager, fenced=True)
    rig.session.create_parents(paths.owners_dir(G, "t"))
    rig.session.create(paths.owner_path(G, "t", 0), b"g_a-0", ephemeral=True)  # t-0's owner znode is ours
    other = rig.zk.session()
    other.create(paths.owner_path(G, "t", 1), b"g_b-0", ephemeral=True)  # t-1's belongs to someone else
    rig.store.commit("auto")
    assert rig.commits("kafka") == [(0, 10), (1, 20)]  # the broker takes both (0.8.2 has no fencing there)
    assert rig.zk_offsets() == {0: 10}  # ZooKeeper only where the owner check passed
    rejected = [(f["partition"], f["store"], f["reason"]) for k, f in rig.events if k == "commit_rejected"]
    assert rejected == [(1, "zookeeper", "owner znode belongs to another session")]


# -- wire versions and error names of the offsets channel ----------------------------------------
class _Versions:
    """A kafka-python client stand-in whose broker advertised ``api_versions`` (ApiVersions)."""

    def __init__(self, api_versions: dict[int, tuple[int, int]]) -> None:
        self._manager = type(
            "M", (), {"broker_version_data": type("B", (), {"api_versions": api_versions})}
        )()


@pytest.mark.parametrize(
    ("advertised", "expected"),
    [
        ((0, 9), 2),  # Kafka 3.7 serves v0-9: the lowest Kafka 4 still accepts is 2
        ((2, 8), 2),  # our broker and Kafka 4
        ((3, 8), 3),  # a broker whose minimum is higher: its minimum
        ((0, 1), None),  # nothing both accept
    ],
)
def test_offset_commit_uses_the_lowest_version_both_sides_accept(
    advertised: tuple[int, int], expected: int | None
) -> None:
    import kafka.errors
    from kafka.protocol.consumer import OffsetCommitRequest

    from legacy_zk.offset_channel import MIN_OFFSET_COMMIT, KafkaOffsetChannel

    client = _Versions({OffsetCommitRequest.API_KEY: advertised})
    if expected is None:
        with pytest.raises(kafka.errors.IncompatibleBrokerVersion):
            KafkaOffsetChannel._version(client, OffsetCommitRequest, MIN_OFFSET_COMMIT)
    else:
        assert KafkaOffsetChannel._version(client, OffsetCommitRequest, MIN_OFFSET_COMMIT) == expected


def test_error_names_are_kafkas() -> None:
    from legacy_zk.offset_channel import error_name

    assert [error_name(c) for c in (0, 16, 15, 14, 12)] == [
        "NONE",
        "NOT_COORDINATOR",
        "COORDINATOR_NOT_AVAILABLE",
        "COORDINATOR_LOAD_IN_PROGRESS",
        "OFFSET_METADATA_TOO_LARGE",
    ]


def test_an_error_code_kafka_python_does_not_know_keeps_its_number() -> None:
    from legacy_zk.offset_channel import error_name

    assert error_name(9999) == "UNKNOWN(9999)"
    assert error_name(-1) == "UNKNOWN_SERVER_ERROR"  # a known code: Kafka's name


def test_offset_fetch_dual_is_the_effective_value() -> None:
    from tests.support.memzk_members import Member, memzk_cluster

    zk = memzk_cluster(1)
    a = Member(zk, "a")
    a.rebalancer.offsets_storage, a.rebalancer.dual_commit = "zookeeper", True  # 0.8.2.2 ignores dual
    assert a.rebalancer.synced_rebalance(["start"]) is True
    assert [(e["storage"], e["dual"]) for e in a.kinds("offset_fetch")] == [("zookeeper", False)]


# -- the real offsets channel, its broker scripted --------------------------------------------------
class ScriptedClient:
    """A kafka-python client stand-in: the broker serves OffsetCommit v2-8 and answers from a script
    (one list of (partition, error code) per OffsetCommit)."""

    def __init__(self, answers: list[list[tuple[int, int]]]) -> None:
        from types import SimpleNamespace

        from kafka.protocol.consumer import OffsetCommitRequest

        self._ns = SimpleNamespace
        self._manager = _Versions({OffsetCommitRequest.API_KEY: (2, 8)})._manager
        self.answers = answers
        self.closed = False

    def send_and_receive(self, node: Any, request: Any, timeout_ms: int) -> Any:
        answer = self.answers.pop(0)
        parts = [self._ns(partition_index=p, error_code=code) for p, code in answer]
        return self._ns(topics=[self._ns(name="t", partitions=parts)])

    def close(self) -> None:
        self.closed = True


class Clock:
    def __init__(self) -> None:
        self.now = 0.0
        self.sleeps: list[float] = []

    def sleep(self, s: float) -> None:
        self.sleeps.append(s)
        self.now += s


def channel_rig(locate: Any, clock: Clock, timeout_ms: int = 10000) -> Any:
    from legacy_zk.offset_channel import KafkaOffsetChannel

    channel = KafkaOffsetChannel(
        group=G,
        bootstrap=lambda: "127.0.0.1:1",
        client_id="m",
        socket_timeout_ms=timeout_ms,
        backoff_ms=1000,
        stopping=lambda: True,  # the member is shutting down
        wait=lambda s: True,  # and every wait ends at once
        tag=lambda: "m",
        sleep=clock.sleep,
        clock=lambda: clock.now,
    )
    channel._locate = locate  # type: ignore[method-assign]
    return channel


def test_a_coordinator_move_at_shutdown_is_followed_and_the_final_commit_lands() -> None:
    clock = Clock()
    client = ScriptedClient([[(0, 16)], [(0, 0)]])  # NOT_COORDINATOR, then NONE from the new manager
    located: list[str] = []

    def locate(servers: str) -> None:
        located.append(servers)
        channel._client, channel._coordinator = client, 1

    channel = channel_rig(locate, clock)
    channel._client, channel._coordinator = client, 0  # connected before the shutdown
    rig = Rig({T0: 7}, FakeManager())
    rig.store.manager = channel
    rig.stopping = True
    assert rig.store.commit("shutdown") == 2  # the broker's and the dual ZooKeeper write
    assert located == ["127.0.0.1:1"]  # looked up again after NOT_COORDINATOR
    assert rig.commits("kafka") == [(0, 7)] and rig.zk_offsets() == {0: 7}
    assert rig.sleeps == [1.0]  # offsets.channel.backoff.ms between the two attempts
    rejected = [(f["error"], f["trigger"]) for k, f in rig.events if k == "commit_rejected"]
    assert rejected == [("NOT_COORDINATOR", "shutdown")]


def test_the_shutdown_commits_lookup_is_bounded_by_the_socket_timeout_per_attempt() -> None:
    clock = Clock()
    tries: list[float] = []

    def locate(servers: str) -> None:
        tries.append(clock.now)
        raise OSError("connection refused")

    channel = channel_rig(locate, clock, timeout_ms=3000)
    rig = Rig({T0: 7}, FakeManager(), max_retries=1)
    rig.store.manager = channel
    rig.stopping = True
    assert rig.store.commit("shutdown") == 0
    # per attempt: tries at +0, +1, +2 s (backoff 1 s), none at +3 s (the 3 s deadline); two attempts
    assert tries == [0.0, 1.0, 2.0, 3.0, 4.0, 5.0] and channel.failures == 6
    assert clock.sleeps == [1.0] * 6
    assert rig.sleeps == [1.0]  # the store's backoff between the two attempts
    rejected = [(f["partition"], f["error"]) for k, f in rig.events if k == "commit_rejected"]
    assert rejected == [(0, "NO_OFFSET_MANAGER")]
