# pyright: strict
"""What one rebalance attempt reads from ZooKeeper: brokers, registrations, topics, the group view.

Contract (spec 1.9; ``ZkUtils`` / ``ZookeeperConsumerConnector`` of 0.8.2)
-------------------------------------------------------------------------
:class:`GroupReader` reads through a :class:`legacy_zk.zkport.ZkPort`, request by request as 0.8
did (so the request counts are 0.8's). Malformed znodes written by someone else are reported to
the :class:`MalformedLog` once per (path, version) and skipped: a peer registration that does not
parse is left out of the view, an unparsable topic znode counts as no partitions, an unparsable
broker is left out. The member's *own* registration must parse (else ``MalformedZnode``); a missing
registration raises ``NoNodeError`` (0.8's ``readData`` threw: the attempt fails).

The peers' registrations are read with one :meth:`ZkPort.get_many` (a ``get`` per registration, in
order, as 0.8's loop made them). A :class:`ViewMemo` shared by several readers (the simulator's members)
decodes each topic znode once per version (its partitions at one ``mzxid`` never change) and makes
the views they build from the *same* read results the same :class:`View` object: results are the
same when the port hands out the same result list (the simulator's fluid reads do so while the
directory is unchanged), and a view is a pure function of what was read, so sharing it changes nothing
but the cost (each reader still reports the malformed peers to its own log). Reads that touched a
wildcard registration are never shared (its topics come from a further request of the reader's own).
"""

from __future__ import annotations

from collections.abc import Callable

from legacy_zk import paths
from legacy_zk.assignors import View
from legacy_zk.ids import java_string_key
from legacy_zk.zkport import NoNodeError, ZkPort

#: (host, port) of one broker, with its id
Broker = tuple[int, str, int]


class MalformedLog:
    """Reports each malformed znode once per (path, version) to ``report(err)``."""

    def __init__(self, report: Callable[[paths.MalformedZnode], None]) -> None:
        self._report = report
        self._seen: set[tuple[str, int]] = set()

    def __call__(self, err: paths.MalformedZnode, version: int = -1) -> None:
        key = (err.path, version)
        if key in self._seen:
            return
        self._seen.add(key)
        self._report(err)


#: A shared view's key: the read results' identity, the consumers, my topics' partitions.
_Key = tuple[int, tuple[str, ...], tuple[tuple[str, tuple[int, ...]], ...]]


class ViewMemo:
    """Views built from one read-result object, shared by the readers that hold this memo (module
    contract). Keeps the last :attr:`SIZE` entries; an entry keeps its result object alive, so an id is
    never reused while it is remembered."""

    SIZE = 8

    def __init__(self) -> None:
        self._views: dict[_Key, _Shared] = {}
        self._sorted: dict[tuple[str, ...], tuple[str, ...]] = {}
        #: decoded topic znodes, (path, mzxid) -> partition ids (a znode's data at one mzxid never changes)
        self.topics: dict[tuple[str, int], tuple[int, ...]] = {}

    def get(self, key: _Key) -> _Shared | None:
        return self._views.get(key)

    def put(self, key: _Key, shared: _Shared) -> None:
        if len(self._views) >= self.SIZE:
            del self._views[next(iter(self._views))]
        self._views[key] = shared

    def sorted_consumers(self, consumers: tuple[str, ...]) -> tuple[str, ...]:
        """``consumers`` in Java string order (remembered: the same children sort the same)."""
        out = self._sorted.get(consumers)
        if out is None:
            if len(self._sorted) >= self.SIZE:
                del self._sorted[next(iter(self._sorted))]
            out = self._sorted[consumers] = tuple(sorted(consumers, key=java_string_key))
        return out


class _Shared:
    """One shared view, the read results it came from, and the malformed peers met building it."""

    __slots__ = ("view", "reads", "malformed")

    def __init__(
        self, view: View, reads: object, malformed: list[tuple[str, paths.MalformedZnode, int, bool]]
    ) -> None:
        self.view = view
        self.reads = reads
        self.malformed = malformed


class GroupReader:
    """Reads of one member of ``group`` (module contract)."""

    def __init__(
        self,
        zk: ZkPort,
        group: str,
        member_id: str,
        exclude_internal_topics: bool,
        malformed: MalformedLog,
        memo: ViewMemo | None = None,
    ) -> None:
        self.zk = zk
        self.group = group
        self.member_id = member_id
        self.exclude_internal_topics = exclude_internal_topics
        self.malformed = malformed
        self.memo = memo

    def read_cluster(self) -> list[Broker]:
        """``getCluster`` / ``getAllBrokersInCluster``: children of /brokers/ids and each payload."""
        try:
            ids = self.zk.get_children(paths.BROKER_IDS)
        except NoNodeError:
            ids = []
        brokers: list[Broker] = []
        for bid in sorted(ids):
            path = paths.broker_path(bid)
            try:
                data, stat = self.zk.get(path)
            except NoNodeError:
                continue
            try:
                host, port = paths.decode_broker(path, data)
                brokers.append((int(bid), host, port))
            except paths.MalformedZnode as e:
                self.malformed(e, stat.mzxid)
            except ValueError as e:
                self.malformed(paths.MalformedZnode(path, str(e)), stat.mzxid)
        return brokers

    def read_registration(self, consumer: str, own: bool = False) -> paths.Registration | None:
        """Read one ``ids/<consumer>`` (module contract: None for a malformed peer)."""
        path = paths.id_path(self.group, consumer)
        data, stat = self.zk.get(path)
        try:
            return paths.decode_registration(path, data)
        except paths.MalformedZnode as e:
            if own:
                raise
            self.malformed(e, stat.mzxid)
            return None

    def read_topic_partitions(self, topic: str) -> tuple[int, ...]:
        """Partition ids of ``topic`` (empty when the znode is missing or malformed)."""
        path = paths.topic_path(topic)
        try:
            data, stat = self.zk.get(path)
        except NoNodeError:
            return ()
        memo, key = self.memo, (path, stat.mzxid)
        if memo is not None and key in memo.topics:
            return memo.topics[key]
        try:
            out = tuple(paths.decode_topic_partitions(path, data))
        except paths.MalformedZnode as e:
            self.malformed(e, stat.mzxid)
            return ()
        if memo is not None:
            memo.topics[key] = out
        return out

    def read_view(self) -> View:
        """``new AssignmentContext(...)``: own registration, my topics' partitions, every consumer."""
        all_topics: list[str] | None = None
        wildcard = False

        def topics_of(reg: paths.Registration) -> dict[str, int]:
            nonlocal all_topics, wildcard
            if reg.pattern != paths.STATIC:
                wildcard = True
                if all_topics is None:
                    try:
                        all_topics = sorted(self.zk.get_children(paths.BROKER_TOPICS))
                    except NoNodeError:
                        all_topics = []
            return reg.topics(all_topics, self.exclude_internal_topics)

        mine = self.read_registration(self.member_id, own=True)  # myTopicThreadIds
        assert mine is not None
        partitions = {t: self.read_topic_partitions(t) for t in sorted(topics_of(mine))}
        ids = paths.ids_dir(self.group)
        children = self.zk.get_children(ids)  # getConsumersPerTopic: the ids, then each registration
        reads = self.zk.get_many(ids, children)
        consumers = tuple(self.zk.get_children(ids))  # getConsumersInGroup
        memo = self.memo
        key = (id(reads), consumers, tuple(partitions.items()))
        shared = memo.get(key) if memo is not None and not wildcard else None
        if shared is None:
            met: list[tuple[str, paths.MalformedZnode, int, bool]] = []
            subscriptions: dict[str, dict[str, int]] = {}
            for consumer, (data, stat) in zip(children, reads, strict=True):
                path = paths.id_path(self.group, consumer)
                try:
                    subscriptions[consumer] = topics_of(paths.decode_registration(path, data))
                except paths.MalformedZnode as e:
                    met.append((consumer, e, stat.mzxid, True))
                except ValueError as e:  # a peer's wildcard that does not compile (reported, even mine)
                    met.append((consumer, paths.MalformedZnode(path, str(e)), -1, False))
            ordered = (
                memo.sorted_consumers(consumers)
                if memo is not None
                else tuple(sorted(consumers, key=java_string_key))
            )
            shared = _Shared(
                View(consumers=ordered, subscriptions=subscriptions, partitions=partitions), reads, met
            )
            if memo is not None and not wildcard:
                memo.put(key, shared)
        for consumer, err, version, fatal in shared.malformed:
            if fatal and consumer == self.member_id:
                raise err  # my own registration must parse
            self.malformed(err, version)
        return shared.view
