"""What the tests read back from ZooKeeper: owners, the expected assignment, settledness."""

from __future__ import annotations

from kazoo.client import KazooClient
from kazoo.exceptions import NoNodeError

from legacy_zk import paths
from legacy_zk.assignors import View, assign_all


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
