"""The ZooKeeper store of a group's offsets (the 0.8 layout of :mod:`legacy_zk.paths`), read and written with kazoo.

Contract: :func:`session` checks the connect string first (:func:`harness.cluster.probe.check_zookeeper`, so an
unreachable or wrong address is a one-line :class:`~harness.kernel.errors.Unreachable` naming it, within
``timeout_s``) and then yields a started kazoo client, stopped on exit. Reads return next offsets keyed by
``(topic, partition)``; a missing ``/consumers/<g>/offsets`` is an empty mapping. A znode that does not parse
raises :class:`~harness.kernel.errors.HerdlabError` naming its path.
"""

from __future__ import annotations

import time
from collections.abc import Iterator, Mapping
from contextlib import contextmanager

from kazoo.client import KazooClient
from kazoo.exceptions import KazooException, NodeExistsError, NoNodeError
from kazoo.handlers.threading import KazooTimeoutError

from harness.cluster.probe import check_zookeeper, client_logs_captured
from harness.kernel.errors import HerdlabError, Unreachable
from harness.offsets.core import TopicPartition
from legacy_zk import paths

TIMEOUT_S = 5.0


def offsets_root(group: str) -> str:
    """``/consumers/<g>/offsets``."""
    return f"{paths.group_dir(group)}/offsets"


@contextmanager
def session(connect: str, timeout_s: float = TIMEOUT_S) -> Iterator[KazooClient]:
    """A started kazoo client on ``connect`` (see the module contract); kazoo's own log lines are kept
    quiet while it is open."""
    with client_logs_captured():
        check_zookeeper(connect, time.monotonic() + timeout_s)
        zk = KazooClient(hosts=connect, timeout=10.0, connection_retry={"max_tries": 2, "max_delay": 1.0})
        try:
            zk.start(timeout=timeout_s)
        except KazooTimeoutError:
            raise Unreachable(f"ZooKeeper {connect}: no session within {timeout_s:.1f}s") from None
        try:
            yield zk
        except KazooException as e:
            raise Unreachable(f"ZooKeeper {connect}: {e.__class__.__name__} {e}".strip()) from None
        finally:
            zk.stop()
            zk.close()


def _children(zk: KazooClient, path: str) -> list[str]:
    try:
        return list(zk.get_children(path))
    except NoNodeError:
        return []


def read_offsets(zk: KazooClient, group: str, topics: tuple[str, ...] = ()) -> dict[TopicPartition, int]:
    """Every offset under ``/consumers/<group>/offsets`` (only ``topics`` when given)."""
    out: dict[TopicPartition, int] = {}
    for topic in topics or _children(zk, offsets_root(group)):
        for child in _children(zk, paths.offsets_dir(group, topic)):
            if not child.isdigit():
                continue  # not a partition znode: 0.8 never wrote one
            path = paths.offset_path(group, topic, int(child))
            try:
                data, _ = zk.get(path)
            except NoNodeError:
                continue  # deleted between the listing and the read
            try:
                out[(topic, int(child))] = paths.decode_offset(path, data)
            except paths.MalformedZnode as e:
                raise HerdlabError(str(e)) from None
    return out


def member_ids(zk: KazooClient, group: str) -> tuple[str, ...]:
    """The consumers registered under ``/consumers/<group>/ids`` (live 0.8 members: their znodes are
    ephemeral)."""
    return tuple(sorted(_children(zk, paths.ids_dir(group))))


def write_offsets(zk: KazooClient, group: str, offsets: Mapping[TopicPartition, int]) -> None:
    """Write each offset to ``/consumers/<group>/offsets/<t>/<p>`` as 0.8's ``updatePersistentPath`` does:
    set the znode, or create it (with its parents) when it does not exist."""
    for (topic, partition), offset in sorted(offsets.items()):
        path = paths.offset_path(group, topic, partition)
        data = paths.encode_offset(offset)
        try:
            zk.set(path, data)
        except NoNodeError:
            zk.ensure_path(paths.offsets_dir(group, topic))
            try:
                zk.create(path, data)
            except NodeExistsError:
                zk.set(path, data)
