"""legacy_zk's rebalance attempt driven against the in-memory ZooKeeper (no server, no threads): one
:class:`Member` per session of one :class:`~legacy_zk.memzk.MemZk` tree, its events and hooks recorded.
Shared by the attempt tests and the offset-storage tests."""

from __future__ import annotations

from collections.abc import Callable, Mapping
from typing import Any

from legacy_zk import paths
from legacy_zk.attempt import Rebalancer
from legacy_zk.ids import TopicPartition
from legacy_zk.member import STAT_NAMES
from legacy_zk.memzk import MemZk, MemZkSession
from legacy_zk.offsets import OffsetStore
from legacy_zk.reads import GroupReader, MalformedLog
from legacy_zk.registry import Registry

G = "g"


def tp(p: int) -> TopicPartition:
    return TopicPartition("t", p)


class Hooks:
    """Records what the attempt asks of its member; ``on_wait`` runs during a backoff."""

    def __init__(self) -> None:
        self.waits: list[float] = []
        self.closed_fetchers = 0
        self.fetching: list[dict[TopicPartition, int]] = []
        self.watched_brokers = 0
        self.leader_finds = 0
        self.assignments: list[tuple[str, list[TopicPartition]]] = []
        self.on_wait: Callable[[int], None] | None = None
        self.stopping = False

    def shutting_down(self) -> bool:
        return self.stopping

    def wait(self, seconds: float) -> bool:
        self.waits.append(seconds)
        if self.on_wait is not None:
            self.on_wait(len(self.waits))
        return self.stopping

    def close_fetchers(self) -> None:
        self.closed_fetchers += 1

    def start_fetching(self, offsets: Mapping[TopicPartition, int]) -> None:
        self.fetching.append(dict(offsets))

    def find_leaders(self, read_brokers: Callable[[], object]) -> None:
        self.leader_finds += 1
        read_brokers()

    def watch_brokers(self) -> None:
        self.watched_brokers += 1

    def assignment_changed(self, what: str, partitions: list[TopicPartition]) -> None:
        self.assignments.append((what, partitions))


class Member:
    """One member's rebalancer on its own session, with its events and hooks."""

    def __init__(self, zk: MemZk, name: str, register: bool = True, **kw: Any) -> None:
        self.session: MemZkSession = zk.session()
        self.id = f"{G}_{name}"
        self.events: list[tuple[str, dict[str, Any]]] = []
        self.hooks = Hooks()
        self.registry = Registry()
        self.stats: dict[str, int] = {k: 0 for k in STAT_NAMES}  # the member's counters
        store = OffsetStore(
            self.session,
            G,
            self.registry,
            fenced=False,
            emit=self.emit,
            stats=self.stats,
            lock=_NoLock(),
            tag=lambda: self.id,
        )
        self.rebalancer = Rebalancer(
            zk=self.session,
            group=G,
            member_id=self.id,
            strategy=kw.pop("strategy", "range"),
            topics={"t": 1},
            max_retries=kw.pop("max_retries", 4),
            backoff_ms=kw.pop("backoff_ms", 250),
            takeover_delay_ms=0,
            reader=GroupReader(self.session, G, self.id, True, MalformedLog(self.malformed)),
            registry=self.registry,
            offsets=store,
            hooks=self.hooks,
            emit=self.emit,
            stats=self.stats,
            clock=lambda: 0.0,
        )
        if register:
            self.register()

    def register(self) -> None:
        self.session.create_parents(paths.ids_dir(G))
        self.session.create(paths.id_path(G, self.id), paths.encode_registration({"t": 1}, 0), ephemeral=True)

    def emit(self, kind: str, /, **fields: Any) -> None:
        self.events.append((kind, fields))

    def malformed(self, err: paths.MalformedZnode) -> None:
        self.emit("malformed", path=err.path, error=str(err))

    def kinds(self, kind: str) -> list[dict[str, Any]]:
        return [f for k, f in self.events if k == kind]


class _NoLock:
    def __enter__(self) -> None:
        return None

    def __exit__(self, *exc: object) -> None:
        return None


def memzk_cluster(partitions: int, topic: str = "t") -> MemZk:
    """A tree with broker 1 and ``topic`` of ``partitions`` partitions (replicas on broker 1), as 0.8's
    admin tools wrote them."""
    tree = MemZk()
    admin = tree.session()
    admin.create_parents(paths.BROKER_IDS)
    admin.create(paths.broker_path(1), paths.encode_broker("127.0.0.1", 9092, 0), ephemeral=True)
    admin.create_parents(paths.BROKER_TOPICS)
    admin.create(paths.topic_path(topic), paths.encode_topic({p: [1] for p in range(partitions)}))
    return tree
