# pyright: strict
"""Offset storage in ZooKeeper: reading start offsets, committing positions (spec 1.12).

Contract
--------
* :func:`fetch_offsets` (``fetchOffsets``): for each partition about to be claimed, the committed
  next offset of ``/consumers/<g>/offsets/<t>/<p>`` and that znode's version; ``(-1, None)`` when
  there is no znode, ``(-1, version)`` when it does not parse (reported once, as malformed).
* :class:`OffsetStore` commits the position of every owned partition (the registry's ``consumed``)
  that changed since its last checkpoint, as the next offset to read:
  - plain (0.8): ``updatePersistentPath``: set; on NoNode create the parents and create; on
    NodeExists set;
  - fenced (``offsets.commit.fenced``, mitigation b): only while the owner znode belongs to this
    session and names this member's thread, by one ``multi`` of (check the owner's version, write the
    offset at the version last read or written). A commit refused because someone else wrote the
    offset znode re-reads its version, so the next commit can succeed.
  Every commit is a ``commit`` event, every refusal a ``commit_rejected`` event; a ZooKeeper error
  ends that round of commits (logged; 0.8's auto commit let it go). Commits are serialised by the
  store's lock.
"""

from __future__ import annotations

import logging
from collections.abc import Callable, Iterable, MutableMapping
from typing import Any, Protocol

from legacy_zk import paths
from legacy_zk.ids import TopicPartition
from legacy_zk.reads import MalformedLog
from legacy_zk.registry import OwnedPartition, Registry
from legacy_zk.zkport import BadVersionError, KazooException, NodeExistsError, NoNodeError, ZkPort

log = logging.getLogger("legacy_zk")


class Emit(Protocol):
    """Writes one history event of this member."""

    def __call__(self, kind: str, /, **fields: Any) -> None: ...


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
    ) -> None:
        """``lock``: a lock of the member's handler (a thread or greenlet lock)."""
        self.zk = zk
        self.group = group
        self.registry = registry
        self.fenced = fenced
        self._emit = emit
        self._stats = stats
        self._lock = lock
        self._tag = tag
        #: partition -> offset last committed or read (0.8's ``checkpointedOffsets``)
        self.checkpointed: dict[TopicPartition, int] = {}

    def checkpoint(self, offsets: Iterable[tuple[TopicPartition, int]]) -> None:
        """Record the start offsets of a new ownership as already committed."""
        for tp, off in offsets:
            self.checkpointed[tp] = off

    def commit(self, reason: str) -> int:
        """Commit every owned partition's position that moved; returns commits written."""
        written = 0
        with self._lock:
            for tp, info, offset in self.registry.snapshot():
                if offset < 0 or self.checkpointed.get(tp) == offset:
                    continue  # "No updates to offsets since last commit"
                try:
                    if self.fenced:
                        ok = self._fenced_commit(tp, info, offset, reason)
                    else:
                        self._update_persistent(paths.offset_path(self.group, tp.topic, tp.partition), offset)
                        ok = True
                except KazooException as e:
                    log.warning("%s: committing %s failed: %s", self._tag(), tp, e.__class__.__name__)
                    break
                if ok:
                    self.checkpointed[tp] = offset
                    written += 1
                    self._stats["commits"] += 1
                    self._emit("commit", topic=tp.topic, partition=tp.partition, offset=offset, reason=reason)
        return written

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
