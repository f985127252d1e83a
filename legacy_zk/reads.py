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


class GroupReader:
    """Reads of one member of ``group`` (module contract)."""

    def __init__(
        self, zk: ZkPort, group: str, member_id: str, exclude_internal_topics: bool, malformed: MalformedLog
    ) -> None:
        self.zk = zk
        self.group = group
        self.member_id = member_id
        self.exclude_internal_topics = exclude_internal_topics
        self.malformed = malformed

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
        try:
            return tuple(paths.decode_topic_partitions(path, data))
        except paths.MalformedZnode as e:
            self.malformed(e, stat.mzxid)
            return ()

    def read_view(self) -> View:
        """``new AssignmentContext(...)``: own registration, my topics' partitions, every consumer."""
        all_topics: list[str] | None = None

        def topics_of(reg: paths.Registration) -> dict[str, int]:
            nonlocal all_topics
            if reg.pattern != paths.STATIC and all_topics is None:
                try:
                    all_topics = sorted(self.zk.get_children(paths.BROKER_TOPICS))
                except NoNodeError:
                    all_topics = []
            return reg.topics(all_topics, self.exclude_internal_topics)

        mine = self.read_registration(self.member_id, own=True)  # myTopicThreadIds
        assert mine is not None
        partitions = {t: self.read_topic_partitions(t) for t in sorted(topics_of(mine))}
        subscriptions: dict[str, dict[str, int]] = {}
        for consumer in self.zk.get_children(paths.ids_dir(self.group)):  # getConsumersPerTopic
            reg = self.read_registration(consumer, own=consumer == self.member_id)
            if reg is None:
                continue
            try:
                subscriptions[consumer] = topics_of(reg)
            except ValueError as e:  # a peer's wildcard that does not compile
                self.malformed(paths.MalformedZnode(paths.id_path(self.group, consumer), str(e)))
        consumers = self.zk.get_children(paths.ids_dir(self.group))  # getConsumersInGroup
        return View(
            consumers=tuple(sorted(consumers, key=java_string_key)),
            subscriptions=subscriptions,
            partitions=partitions,
        )
