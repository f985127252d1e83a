"""legacy_zk against a real ZooKeeper: what the tests set up (topics, member configs and argv) and
what they read back (owners, the expected assignment, settledness)."""

from __future__ import annotations

from typing import Any

from kazoo.client import KazooClient
from kazoo.exceptions import NoNodeError

from harness.cluster.zookeeper import ZooKeeperServer
from harness.run.launch import legacy_member_argv
from legacy_zk import paths
from legacy_zk.assignors import View, assign_all
from legacy_zk.config import ConsumerConfig


def create_topic(admin: KazooClient, topic: str, partitions: int) -> None:
    """What ``kafka-topics.sh --create`` did in 0.8: the topic znode with a replica map."""
    admin.create(
        paths.topic_path(topic), paths.encode_topic({p: [0] for p in range(partitions)}), makepath=True
    )


def fast_config(zookeeper: ZooKeeperServer, group: str, topics: dict[str, int], **kw: Any) -> ConsumerConfig:
    """Short sessions and backoffs (tickTime is 200 ms): tests not about defaults use these."""
    kw.setdefault("zookeeper_session_timeout_ms", 1500)
    kw.setdefault("zookeeper_connection_timeout_ms", 10000)
    kw.setdefault("rebalance_backoff_ms", 200)
    kw.setdefault("rebalance_max_retries", 10)
    kw.setdefault("fetch", False)
    kw.setdefault("zookeeper_connect", zookeeper.connect_string)
    return ConsumerConfig(group_id=group, topics=topics, **kw)


def member_argv(zookeeper: ZooKeeperServer, group: str, topic: str, *extra: str) -> list[str]:
    """argv of a member process (``python -m harness member legacy_zk``), coordination-only, fast timeouts."""
    return legacy_member_argv(
        zookeeper.connect_string,
        group,
        topic,
        "--no-fetch",
        "--zookeeper.session.timeout.ms",
        "1500",
        "--zookeeper.connection.timeout.ms",
        "10000",
        "--rebalance.backoff.ms",
        "200",
        "--rebalance.max.retries",
        "10",
        *extra,
    )


def owners(admin: KazooClient, group: str, topic: str) -> dict[int, str]:
    """partition -> owning thread id, from ``/consumers/<g>/owners/<t>``."""
    out: dict[int, str] = {}
    try:
        children = admin.get_children(paths.owners_dir(group, topic))
    except NoNodeError:
        return out
    for p in children:
        try:
            data, _ = admin.get(paths.owner_path(group, topic, int(p)))
        except NoNodeError:
            continue
        out[int(p)] = data.decode()
    return out


def registered(admin: KazooClient, group: str) -> list[str]:
    try:
        return sorted(admin.get_children(paths.ids_dir(group)))
    except NoNodeError:
        return []


def expected(admin: KazooClient, group: str, topic: str, strategy: str = "range") -> dict[int, str]:
    """What every member computes on the group's current registrations (the spec's assignor)."""
    subs = {}
    for cid in registered(admin, group):
        data, _ = admin.get(paths.id_path(group, cid))
        subs[cid] = paths.decode_registration("", data).topics()
    data, _ = admin.get(paths.topic_path(topic))
    view = View(tuple(sorted(subs)), subs, {topic: tuple(paths.decode_topic_partitions("", data))})
    return {tp.partition: str(t) for tp, t in assign_all(strategy, view).items()}


def settled(admin: KazooClient, group: str, topic: str, members: int, strategy: str = "range") -> bool:
    """``members`` registered, and the owner znodes are exactly the assignor's answer for them."""
    if len(registered(admin, group)) != members:
        return False
    want = expected(admin, group, topic, strategy)
    return bool(want) and owners(admin, group, topic) == want
