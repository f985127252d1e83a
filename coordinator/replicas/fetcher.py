"""Followers' fetchers: one asyncio task per leader broker, pulling the partitions this broker follows from it.

Sources (apache/kafka 0.9.0.1 ``core/src/main/scala/kafka/server/``): ``ReplicaFetcherManager`` /
``AbstractFetcherManager`` (one fetcher per source broker -- 0.9 spreads partitions over
``num.replica.fetchers`` threads per broker, 1 by default, which is what this is), ``AbstractFetcherThread
.doWork`` / ``processFetchRequest`` and ``ReplicaFetcherThread``:

* a Fetch with ``replica_id`` = this broker's id, ``max_wait`` = ``replica.fetch.wait.max.ms``, ``min_bytes`` 1
  (``replica.fetch.min.bytes``), each partition at its log end offset with ``replica.fetch.max.bytes``;
* each partition's answer goes to :meth:`ReplicaManager.follower_fetched
  <coordinator.replicas.manager.ReplicaManager.follower_fetched>` (append at the leader's offsets, HW = min(LEO,
  leader HW); offset out of range: truncate);
* a partition error (e.g. NOT_LEADER_OR_FOLLOWER from a broker that is not, or not yet, the leader) or a
  connection failure backs the whole fetcher off for ``replica.fetch.backoff.ms`` (1000 in 0.9;
  ``handlePartitionsWithErrors`` / ``partitionMapCond.await(fetchBackOffMs)``) and it tries again: the
  partition is followed until a new state moves it (:meth:`FetcherManager.unfollow`);
* the leader's address is looked up in :attr:`ClusterView.peers <coordinator.cluster.ClusterView.peers>` at each
  connect (a restarted leader comes back on another port).

The Fetch goes out as version 4 (kafka-python's encoder): the lowest version this broker serves, with
``replica_id`` and whole-batch records; the leader answers it from the same handler as consumers' fetches.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
from collections import Counter

from kafka.protocol.consumer import FetchRequest

from coordinator.cluster import ClusterView
from coordinator.config import BrokerConfig
from coordinator.rawclient import AsyncRawClient
from coordinator.replicas.manager import ReplicaManager

__all__ = ["FETCH_VERSION", "FetcherManager", "REPLICA_FETCH_BACKOFF_MS"]

log = logging.getLogger("coordinator")

FETCH_VERSION = 4
#: ``replica.fetch.backoff.ms`` (0.9 default).
REPLICA_FETCH_BACKOFF_MS = 1000


class _Fetcher:
    """The fetcher of one leader broker (its task runs while it has partitions)."""

    def __init__(self, owner: FetcherManager, leader: int) -> None:
        self.owner = owner
        self.leader = leader
        self.partitions: set[tuple[str, int]] = set()
        self.changed = asyncio.Event()
        self.task: asyncio.Task[None] | None = None
        self.client: AsyncRawClient | None = None

    async def run(self) -> None:
        try:
            while True:
                if not self.partitions:
                    self.changed.clear()
                    await self.changed.wait()
                    continue
                ok = await self._fetch_once()
                if not ok:
                    await self._backoff()
        finally:
            await self._disconnect()

    async def _backoff(self) -> None:
        self.changed.clear()
        with contextlib.suppress(TimeoutError):
            await asyncio.wait_for(self.changed.wait(), self.owner.backoff_ms / 1000)

    async def _disconnect(self) -> None:
        if self.client is not None:
            client, self.client = self.client, None
            await client.close()

    async def _fetch_once(self) -> bool:
        rm = self.owner.manager
        rc = self.owner.config.replication
        wanted: dict[str, list[tuple[int, int]]] = {}
        for topic, partition in sorted(self.partitions):
            offset = rm.fetch_offset(self.leader, topic, partition)
            if offset is None:
                self.partitions.discard((topic, partition))
                continue
            wanted.setdefault(topic, []).append((partition, offset))
        if not wanted:
            return True
        if self.client is None:
            node = self.owner.cluster.peers.get(self.leader)
            if node is None:
                log.debug("leader %d not live: fetcher backs off", self.leader)
                return False
            try:
                self.client = await AsyncRawClient.connect(
                    node.host, node.port, client_id=f"replica-{self.owner.config.broker_id}", timeout=5.0
                )
            except (OSError, TimeoutError) as e:
                log.info("cannot reach leader %d at %s:%d: %s", self.leader, node.host, node.port, e)
                return False
        request = FetchRequest(
            replica_id=self.owner.config.broker_id,
            max_wait_ms=rc.replica_fetch_wait_max_ms,
            min_bytes=1,
            max_bytes=rc.replica_fetch_max_bytes,
            isolation_level=0,
            topics=[
                FetchRequest.FetchTopic(
                    topic=topic,
                    partitions=[
                        FetchRequest.FetchTopic.FetchPartition(
                            partition=p, fetch_offset=o, partition_max_bytes=rc.replica_fetch_max_bytes
                        )
                        for p, o in parts
                    ],
                )
                for topic, parts in wanted.items()
            ],
        )
        try:
            response = await self.client.call(
                request, FETCH_VERSION, timeout=rc.replica_fetch_wait_max_ms / 1000 + 10
            )
        except (OSError, EOFError, asyncio.IncompleteReadError, TimeoutError) as e:
            log.info("fetch from leader %d failed: %s", self.leader, e)
            await self._disconnect()
            return False
        offsets = {(t, p): o for t, parts in wanted.items() for p, o in parts}
        ok = True
        for tr in response.responses:
            for pr in tr.partitions:
                sent = offsets.get((tr.topic, pr.partition_index))
                if sent is None:
                    continue
                error = rm.follower_fetched(
                    self.leader,
                    tr.topic,
                    pr.partition_index,
                    sent,
                    pr.error_code,
                    pr.high_watermark,
                    bytes(pr.records) if pr.records else b"",
                )
                if error != 0:
                    log.debug(
                        "[%s,%d] leader %d answered %d", tr.topic, pr.partition_index, self.leader, error
                    )
                    self.owner.errors[(self.leader, error)] += 1
                    ok = False
        return ok


class FetcherManager:
    """Starts, feeds and stops the per-leader fetchers; installs itself as the replica manager's follow hooks."""

    def __init__(
        self,
        config: BrokerConfig,
        manager: ReplicaManager,
        cluster: ClusterView,
        *,
        backoff_ms: int = REPLICA_FETCH_BACKOFF_MS,
    ) -> None:
        self.config = config
        self.manager = manager
        self.cluster = cluster
        self.backoff_ms = backoff_ms
        self._fetchers: dict[int, _Fetcher] = {}
        self._stopped = False
        #: (leader id, error code) -> partition errors its answers carried (diagnostics and tests).
        self.errors: Counter[tuple[int, int]] = Counter()
        manager.on_follow = self.follow
        manager.on_unfollow = self.unfollow

    def follow(self, leader: int, topic: str, partition: int) -> None:
        """Fetch ``[topic, partition]`` from ``leader`` (starting its fetcher if needed)."""
        if self._stopped:
            return
        fetcher = self._fetchers.get(leader)
        if fetcher is None:
            fetcher = self._fetchers[leader] = _Fetcher(self, leader)
            fetcher.task = asyncio.ensure_future(fetcher.run())
        fetcher.partitions.add((topic, partition))
        fetcher.changed.set()

    def unfollow(self, leader: int, topic: str, partition: int) -> None:
        """Stop fetching ``[topic, partition]`` from ``leader``."""
        fetcher = self._fetchers.get(leader)
        if fetcher is not None:
            fetcher.partitions.discard((topic, partition))

    def following(self) -> dict[int, set[tuple[str, int]]]:
        """Leader id -> partitions fetched from it (diagnostics and tests)."""
        return {leader: set(f.partitions) for leader, f in self._fetchers.items() if f.partitions}

    async def stop(self) -> None:
        """Cancel every fetcher and close its connection."""
        self._stopped = True
        tasks = [f.task for f in self._fetchers.values() if f.task is not None]
        for task in tasks:
            task.cancel()
        await asyncio.gather(*tasks, return_exceptions=True)
        self._fetchers.clear()
