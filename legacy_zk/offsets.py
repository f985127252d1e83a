# pyright: strict
"""Offset storage: reading start offsets, committing positions (spec 1.12), in ZooKeeper and, as
0.8.2.2 could, in the broker (``offsets.storage=kafka``, ``dual.commit.enabled``).

Contract
--------
* :func:`fetch_offsets` (``fetchOffsetFromZooKeeper``): for each partition about to be claimed, the
  committed next offset of ``/consumers/<g>/offsets/<t>/<p>`` and that znode's version; ``(-1, None)``
  when there is no znode, ``(-1, version)`` when it does not parse (reported once, as malformed).
* :func:`fetch_start_offsets` (``fetchOffsets``) applies the storage: zookeeper: the ZooKeeper
  offsets; kafka: OffsetFetch through the :class:`OffsetManagerPort` until an answer (NOT_COORDINATOR
  or an exception: disconnect and retry; COORDINATOR_LOAD_IN_PROGRESS: retry; ``offsets.channel.
  backoff.ms`` between tries, through ``wait``); with dual commit the ZooKeeper offsets are read in
  the same try (a ZooKeeper error: disconnect and retry, as 0.8.2.2); per partition the offset
  :func:`legacy_zk.offset_rules.choose_offset` picks. ``None`` when the member shut down before an
  answer (the attempt then fails as 0.8.2's did; a request ended by the shutdown is not logged as an
  error). An answer that leaves out a partition asked raises :class:`OffsetFetchIncomplete` (0.8.2.2
  threw ``NoSuchElementException`` in the rebalance: the attempt fails).
* :class:`OffsetStore` commits the position of every owned partition (the registry's ``consumed``)
  as the next offset to read, with 0.8.2.2's ``commitOffsets`` order and retry rule
  (:mod:`legacy_zk.offset_rules`):
  - storage zookeeper: each position that changed since its last ZooKeeper checkpoint is written to
    ZooKeeper;
  - storage kafka: ONE OffsetCommit of every owned position; the answer of every partition in the
    response goes into the history first (a ``commit`` or ``commit_rejected`` event each; a partition
    the response leaves out is skipped, as 0.8.2.2's fold skips it); then, with dual commit, each
    partition the broker answered ``NONE`` is written to ZooKeeper (same checkpoint skip; a ZooKeeper
    error ends the round, disconnects and fails the attempt, as it did inside 0.8.2.2's try).
    NOT_COORDINATOR / COORDINATOR_NOT_AVAILABLE or an exception disconnect the channel, so the next
    attempt locates the offset manager again (also while shutting down: the channel then looks for
    at most ``offsets.channel.socket.timeout.ms`` per attempt, :class:`OffsetChannelClosed` after);
  - retries: a commit made while shutting down (reasons ``shutdown`` / ``rebalance`` / ``manual``,
    0.8.2's ``isAutoCommit=true``) is retried up to ``offsets.commit.max.retries`` times while a
    retriable error persists, sleeping ``offsets.channel.backoff.ms`` between attempts; every other
    commit is one attempt. A shutdown commit given up after an attempt the broker did not answer
    (an exception, no offset manager found) writes one ``commit_rejected`` event (store kafka,
    ``error`` = ``NO_OFFSET_MANAGER`` or the exception's class, ``trigger`` = the reason) per position.
  ZooKeeper writes are, as before:
  - plain (0.8): ``updatePersistentPath``: set; on NoNode create the parents and create; on
    NodeExists set;
  - fenced (``offsets.commit.fenced``, mitigation b): only while the owner znode belongs to this
    session and names this member's thread, by one ``multi`` of (check the owner's version, write the
    offset at the version last read or written). A commit refused because someone else wrote the
    offset znode re-reads its version, so the next commit can succeed.
  Every accepted write is a ``commit`` event with ``store`` (``zookeeper`` | ``kafka``), every refusal
  a ``commit_rejected`` event with ``store`` (and for kafka ``error``, the Kafka error name); a
  ZooKeeper error ends that round of ZooKeeper writes (logged; 0.8's auto commit let it go). Commits
  are serialised by the store's lock.

Deviations from 0.8.2.2 and why
-------------------------------
* positions of -1 (a partition whose start offset was none and whose fetcher has not reset it yet)
  are not committed, to ZooKeeper (as before) nor to the broker; 0.8.2.2 sent ``getConsumeOffset()``
  of every partition, -1 included. With ZooKeeper storage its checkpoint skip made that a no-op; to
  the broker it replaces "no offset" by -1 ("no offset") except in a race where it erases another
  owner's real commit, and it would put broker ``commit`` events of offset -1 into the history, which
  the migration proof reads as the last offset committed in the broker (its contract: null = none);
* a member shutting down ends the fetch loop's backoff and the offset manager lookup at once, and
  the shutdown commit's lookup after ``offsets.channel.socket.timeout.ms`` per attempt (0.8.2.2's
  ``Thread.sleep`` and ``channelToAnyBroker`` could hang its shutdown for ever);
* a shutdown commit given up is in the history (``commit_rejected``), not only in a log line.
"""

from __future__ import annotations

import logging
import time
from collections.abc import Callable, Iterable, Mapping, MutableMapping, Sequence
from dataclasses import dataclass
from typing import Any, Protocol

from legacy_zk import offset_rules, paths
from legacy_zk.ids import TopicPartition
from legacy_zk.reads import MalformedLog
from legacy_zk.registry import OwnedPartition, Registry
from legacy_zk.zkport import BadVersionError, KazooException, NodeExistsError, NoNodeError, ZkPort

log = logging.getLogger("legacy_zk")


class Emit(Protocol):
    """Writes one history event of this member."""

    def __call__(self, kind: str, /, **fields: Any) -> None: ...


class OffsetChannelClosed(Exception):
    """The member is shutting down and has no channel to the offset manager (none is located then)."""


class OffsetFetchIncomplete(Exception):
    """The offset manager's OffsetFetch answer left out a partition asked (the attempt fails)."""


class OffsetManagerPort(Protocol):
    """The group's offset manager (a broker) as a member reaches it (``offsetsChannel``).

    :meth:`commit` sends one OffsetCommit (generation -1, empty member id) and returns Kafka's error
    name per partition (``NONE`` = accepted); :meth:`fetch` sends one OffsetFetch and returns (offset or
    -1, error name) per partition; both raise on a transport failure or when the member shut down
    while the manager was being located. :meth:`disconnect` drops the channel (the next request
    locates the manager again).
    """

    def commit(self, offsets: Mapping[TopicPartition, int]) -> dict[TopicPartition, str]: ...

    def fetch(self, partitions: Sequence[TopicPartition]) -> dict[TopicPartition, tuple[int, str]]: ...

    def disconnect(self) -> None: ...


@dataclass(frozen=True)
class StartOffset:
    """What the fetch rule read and chose for one partition (the ``offset_fetch`` event's fields)."""

    offset: int  # the start offset chosen; -1 = none (auto.offset.reset applies)
    zookeeper_offset: int | None  # -1 = no znode; None = ZooKeeper not read
    kafka_offset: int | None  # -1 = the broker has none; None = not read
    zookeeper_version: int | None  # version of the offset znode read (fenced commits); None = none


def fetch_offsets(
    zk: ZkPort, group: str, partitions: Iterable[TopicPartition], malformed: MalformedLog
) -> dict[TopicPartition, tuple[int, int | None]]:
    """``fetchOffsets`` from ZooKeeper: (next offset or -1, offset znode version or None)."""
    out: dict[TopicPartition, tuple[int, int | None]] = {}
    for tp in partitions:
        path = paths.offset_path(group, tp.topic, tp.partition)
        try:
            data, stat = zk.get(path)
        except NoNodeError:
            out[tp] = (-1, None)
            continue
        try:
            out[tp] = (paths.decode_offset(path, data), stat.version)
        except paths.MalformedZnode as e:
            malformed(e, stat.mzxid)
            out[tp] = (-1, stat.version)
    return out


def fetch_start_offsets(
    *,
    zk: ZkPort,
    group: str,
    partitions: Sequence[TopicPartition],
    malformed: MalformedLog,
    storage: str,
    dual: bool,
    manager: OffsetManagerPort | None,
    shutting_down: Callable[[], bool],
    wait: Callable[[float], bool],
    backoff_ms: int,
    tag: Callable[[], str] = lambda: "",
) -> dict[TopicPartition, StartOffset] | None:
    """``fetchOffsets`` (module contract); None = shut down before the broker answered.

    Raises :class:`OffsetFetchIncomplete` when the broker's answer leaves out a partition asked."""
    if not partitions:
        return {}
    if storage == "zookeeper":
        zk_read = fetch_offsets(zk, group, partitions, malformed)
        return {
            tp: StartOffset(offset_rules.choose_offset(storage, dual, off, None), off, None, version)
            for tp, (off, version) in zk_read.items()
        }
    if manager is None:
        raise ValueError("offsets.storage=kafka needs an offset manager")
    answer: dict[TopicPartition, tuple[int, str]] | None = None
    zk_read: dict[TopicPartition, tuple[int, int | None]] = {}
    while answer is None and not shutting_down():
        try:
            got = manager.fetch(partitions)
            verdict = offset_rules.judge_fetch({tp: err for tp, (_o, err) in got.items()})
            if verdict.refresh:
                manager.disconnect()
            if not verdict.retry:
                # 0.8.2.2 reads ZooKeeper inside the same try: a failed read is retried like the fetch
                zk_read = (
                    fetch_offsets(zk, group, [tp for tp in partitions if tp in got], malformed)
                    if dual
                    else {}
                )
                answer = got
            else:
                log.info(
                    "%s: offset fetch answered %s; retrying", tag(), sorted({e for _o, e in got.values()})
                )
        except Exception as e:  # noqa: BLE001 - 0.8.2: "Error while fetching offsets", disconnect, retry
            if shutting_down():  # the shutdown ended the request: not an error of the fetch
                log.debug("%s: offset fetch ended by the shutdown: %s", tag(), e.__class__.__name__)
            else:
                log.warning("%s: error while fetching offsets: %s: %s", tag(), e.__class__.__name__, e)
            manager.disconnect()
        if answer is None and wait(backoff_ms / 1000.0):
            break
    if answer is None:
        return None
    missing = [tp for tp in partitions if tp not in answer]
    if missing:  # 0.8.2.2: requestInfo(topicAndPartition) throws, the rebalance attempt fails
        raise OffsetFetchIncomplete(
            f"the offset manager did not answer for {', '.join(f'{tp.topic}-{tp.partition}' for tp in missing)}"
        )
    out: dict[TopicPartition, StartOffset] = {}
    for tp in partitions:
        kafka_off = answer[tp][0]
        kafka_off = kafka_off if kafka_off >= 0 else -1
        zk_off, version = zk_read.get(tp, (None, None))
        out[tp] = StartOffset(
            offset_rules.choose_offset(storage, dual, zk_off, kafka_off), zk_off, kafka_off, version
        )
    return out


class OffsetStore:
    """Commits of one member (module contract)."""

    def __init__(
        self,
        zk: ZkPort,
        group: str,
        registry: Registry,
        fenced: bool,
        emit: Emit,
        stats: MutableMapping[str, int],
        lock: Any,
        tag: Callable[[], str],
        *,
        storage: str = "zookeeper",
        dual: bool = False,
        manager: OffsetManagerPort | None = None,
        max_retries: int = 5,
        backoff_ms: int = 1000,
        shutting_down: Callable[[], bool] = lambda: False,
        sleep: Callable[[float], Any] = time.sleep,
    ) -> None:
        """``lock``: a lock of the member's handler (a thread or greenlet lock). ``storage``, ``dual``,
        ``max_retries``, ``backoff_ms``: ``offsets.storage``, ``dual.commit.enabled``,
        ``offsets.commit.max.retries``, ``offsets.channel.backoff.ms``; ``manager``: required with
        kafka storage; ``sleep``: the pause between commit attempts (0.8.2's ``Thread.sleep``: it is not
        cut short by the shutdown, whose commit is the one that retries)."""
        if storage not in offset_rules.STORAGES:
            raise ValueError(f"offsets.storage must be zookeeper or kafka, got {storage!r}")
        if storage == "kafka" and manager is None:
            raise ValueError("offsets.storage=kafka needs an offset manager")
        self.zk = zk
        self.group = group
        self.registry = registry
        self.fenced = fenced
        self.storage = storage
        self.dual = dual
        self.manager = manager
        self.max_retries = max_retries
        self.backoff_ms = backoff_ms
        self._shutting_down = shutting_down
        self._sleep = sleep
        self._emit = emit
        self._stats = stats
        self._lock = lock
        self._tag = tag
        #: partition -> offset last committed to or read from ZooKeeper (0.8's ``checkpointedZkOffsets``)
        self.checkpointed: dict[TopicPartition, int] = {}
        #: commit attempts made (one per round of the retry loop)
        self.attempts = 0
        #: why the last kafka attempt got no answer from the broker: (error, detail); None = answered
        self._unanswered: tuple[str, str] | None = None

    def checkpoint(self, offsets: Iterable[tuple[TopicPartition, int]]) -> None:
        """Record the start offsets of a new ownership as already committed (to ZooKeeper)."""
        for tp, off in offsets:
            self.checkpointed[tp] = off

    def commit(self, reason: str) -> int:
        """``commitOffsets``: commit every owned position (module contract); returns accepted writes.

        ``reason``: ``auto`` (the scheduler: 0.8.2's ``isAutoCommit=false``), ``rebalance``,
        ``shutdown`` or ``manual`` (``isAutoCommit=true``: retried while shutting down).
        """
        retry = offset_rules.CommitRetry(offset_rules.IS_AUTO_COMMIT.get(reason, True), self.max_retries)
        written = 0
        attempts = 0
        while True:
            with self._lock:
                self.attempts += 1
                attempts += 1
                committed, n = self._commit_once(reason)
            written += n
            shutting_down = self._shutting_down()
            if retry.done(shutting_down, committed):
                if not committed and shutting_down and self._unanswered is not None:
                    self._give_up(reason, attempts, *self._unanswered)
                return written
            log.info("%s: retrying offset commit in %d ms", self._tag(), self.backoff_ms)
            self._sleep(self.backoff_ms / 1000.0)

    def _give_up(self, reason: str, attempts: int, error: str, why: str) -> None:
        """The shutdown commit is given up and its last attempt got no answer: one ``commit_rejected``
        event (store kafka) per position it could not commit, ``error`` naming why."""
        owned = [(tp, off) for tp, _i, off in self.registry.snapshot() if off >= 0]
        log.warning(
            "%s: offsets not committed at shutdown after %d attempt(s): %s: %s",
            self._tag(),
            attempts,
            error,
            why,
        )
        for tp, offset in owned:
            self._reject_kafka(tp, offset, error, f"given up after {attempts} attempt(s): {why}", reason)

    def _reject_kafka(self, tp: TopicPartition, offset: int, error: str, why: str, trigger: str) -> None:
        """One ``commit_rejected`` event (store kafka) of ``tp``'s position ``offset``, counted."""
        self._stats["commits_rejected"] += 1
        self._emit(
            "commit_rejected",
            topic=tp.topic,
            partition=tp.partition,
            offset=offset,
            store="kafka",
            error=error,
            reason=why,
            trigger=trigger,
        )

    def _commit_once(self, reason: str) -> tuple[bool, int]:
        """One attempt: (committed, accepted writes)."""
        if self.storage == "zookeeper":
            written = 0
            for tp, info, offset in self.registry.snapshot():
                if offset < 0:
                    continue
                try:
                    ok = self._commit_zk(tp, info, offset, reason)
                except KazooException as e:
                    log.warning("%s: committing %s failed: %s", self._tag(), tp, e.__class__.__name__)
                    break
                written += int(ok)
            return True, written
        return self._commit_kafka(reason)

    def _commit_kafka(self, reason: str) -> tuple[bool, int]:
        """Storage kafka: one OffsetCommit; the broker's answer for every partition goes into the
        history first, then (dual commit) ZooKeeper is written for each partition accepted."""
        assert self.manager is not None
        self._unanswered = None
        owned = [(tp, info, off) for tp, info, off in self.registry.snapshot() if off >= 0]
        if not owned:
            return True, 0  # "No updates to offsets since last commit"
        try:
            errors = self.manager.commit({tp: off for tp, _i, off in owned})
        except OffsetChannelClosed as e:
            # shutting down and no offset manager found in time: a failed attempt (retried as 0.8.2.2
            # retries the shutdown commit; each retry looks the manager up again)
            log.warning("%s: offsets not committed: %s", self._tag(), e)
            self._unanswered = ("NO_OFFSET_MANAGER", str(e))
            return False, 0
        except Exception as e:  # noqa: BLE001 - 0.8.2: "Error while committing offsets", disconnect
            log.warning("%s: error while committing offsets: %s: %s", self._tag(), e.__class__.__name__, e)
            self._unanswered = (e.__class__.__name__, str(e))
            self.manager.disconnect()
            return False, 0
        verdict = offset_rules.judge_commit(errors)
        written = 0
        accepted: list[tuple[TopicPartition, OwnedPartition, int]] = []
        for tp, info, offset in owned:
            error = errors.get(tp)
            if error is None:
                continue  # not in the response: 0.8.2.2 folds only the partitions answered
            if error != offset_rules.NONE:
                log.info("%s: offset commit of %s@%d answered %s", self._tag(), tp, offset, error)
                self._reject_kafka(tp, offset, error, error, reason)
                continue
            self._stats["commits"] += 1
            written += 1
            self._emit(
                "commit", topic=tp.topic, partition=tp.partition, offset=offset, reason=reason, store="kafka"
            )
            accepted.append((tp, info, offset))
        if self.dual:
            try:
                for tp, info, offset in accepted:
                    written += int(self._commit_zk(tp, info, offset, reason))
            except KazooException as e:  # 0.8.2: inside the commit's try: disconnect, not committed
                log.warning("%s: dual commit to ZooKeeper failed: %s", self._tag(), e.__class__.__name__)
                self.manager.disconnect()
                return False, written
        if verdict.refresh:
            log.info("%s: offset manager moved or unavailable: reconnecting", self._tag())
            self.manager.disconnect()
        return verdict.committed, written

    def _commit_zk(self, tp: TopicPartition, info: OwnedPartition, offset: int, reason: str) -> bool:
        """``commitOffsetToZooKeeper``: skipped when equal to the checkpoint; True when written."""
        if self.checkpointed.get(tp) == offset:
            return False  # "No updates to offsets since last commit"
        if self.fenced:
            ok = self._fenced_commit(tp, info, offset, reason)
        else:
            self._update_persistent(paths.offset_path(self.group, tp.topic, tp.partition), offset)
            ok = True
        if ok:
            self.checkpointed[tp] = offset
            self._stats["commits"] += 1
            self._emit(
                "commit",
                topic=tp.topic,
                partition=tp.partition,
                offset=offset,
                reason=reason,
                store="zookeeper",
            )
        return ok

    def _update_persistent(self, path: str, offset: int) -> None:
        """``updatePersistentPath``: set; on NoNode create parents and create; on NodeExists set."""
        data = paths.encode_offset(offset)
        try:
            self.zk.set(path, data)
        except NoNodeError:
            self.zk.create_parents(paths.parent(path))
            try:
                self.zk.create(path, data)
            except NodeExistsError:
                self.zk.set(path, data)

    def _fenced_commit(self, tp: TopicPartition, info: OwnedPartition, offset: int, reason: str) -> bool:
        """Mitigation (b): commit only if the owner znode is ours in this session, at a known version."""
        opath = paths.owner_path(self.group, tp.topic, tp.partition)
        path = paths.offset_path(self.group, tp.topic, tp.partition)

        def reject(why: str) -> bool:
            self._stats["commits_rejected"] += 1
            log.warning("%s: fenced commit of %s@%d refused: %s", self._tag(), tp, offset, why)
            self._emit(
                "commit_rejected",
                topic=tp.topic,
                partition=tp.partition,
                offset=offset,
                reason=why,
                trigger=reason,
                store="zookeeper",
            )
            return False

        try:
            owner_data, owner_stat = self.zk.get(opath)
        except NoNodeError:
            return reject("owner znode missing")
        if owner_stat.ephemeralOwner != self.zk.session_id() or owner_data != str(info.thread).encode():
            return reject("owner znode belongs to another session")
        data = paths.encode_offset(offset)
        if info.offset_version is None:
            self.zk.create_parents(paths.offsets_dir(self.group, tp.topic))
            ops: list[tuple[str, str, Any]] = [("check", opath, owner_stat.version), ("create", path, data)]
        else:
            ops = [("check", opath, owner_stat.version), ("set", path, (data, info.offset_version))]
        results = self.zk.multi(ops)
        check, write = results[0], results[1]  # a failed op's error; the other op: rolled back
        if isinstance(check, (BadVersionError, NoNodeError)):
            return reject("owner znode changed during the commit")
        if isinstance(write, (BadVersionError, NodeExistsError)):
            # Someone else wrote the offset znode since we last read or wrote it. Refuse this commit,
            # but learn the znode's version now: the next commit (still fenced by the owner check)
            # overwrites it, instead of being refused until the next rebalance.
            stat = self.zk.exists(path)
            info.offset_version = stat.version if stat is not None else None
            return reject("offset znode was written by someone else since we read it")
        errors = [r for r in results if isinstance(r, Exception)]
        if errors:
            kinds = {type(e) for e in errors}
            return reject(f"transaction failed: {', '.join(sorted(k.__name__ for k in kinds))}")
        new_version = 0 if info.offset_version is None else results[1].version
        info.offset_version = new_version
        return True
