# pyright: strict
"""The analytic herd model of the 0.8 ZooKeeper consumer: what one membership change costs.

Pure (no ZooKeeper, no clock). ``herdlab bench legacy_zk`` (:mod:`harness.bench.legacy_zk`) prints
its measurement beside these figures.

One membership change, every member present after it rebalancing once, in one attempt (``B``
brokers, ``P`` partitions, ``M`` members after the change, ``P_i`` the partitions member ``i``
owns; the sum of the ``P_i`` is ``P``):

* notifications = one per watching member: the members present before a join, the survivors of a
  leave or a crash (the ids children watch fires once for each);
* per member and attempt, reads: ``2(B+1)`` (``/brokers/ids`` children and payloads, twice) + 2 (its
  own registration) + 1 (the topic) + 2 (the ids children) + ``M`` (every registration, its own
  included) + ``P_i`` (offsets); writes: ``P_i`` owner deletes (what it owned before) + ``P_i``
  owner creates (what it owns after);
* per notification, the watch re-arm of ZkClient 0.3 (``fireChildChangedEvents``): ``exists`` then
  ``getChildren`` = 2 requests (spec 1.15);
* per member that owns partitions after the change (``K = min(M, P)`` of them, range or roundrobin), the
  fetcher's leader finder: ``B+1`` (``/brokers/ids`` children and payloads once more, as 0.8.2.2's
  ``ConsumerFetcherManager.startConnections`` has its ``LeaderFinderThread`` read them).

Summed over the group: ``zk_requests = M^2 + (2B+9)M + 3P + (B+1)K``, of which ``M^2 + 2M`` are
registration reads, ``2P`` owner-znode writes and ``2M`` watch re-arms; reads grow as ``M`` squared: the
herd.

Known approximations, each within a few requests: the model counts the joiner as a re-arming
watcher, though it re-arms nothing (it subscribes instead: ``exists`` + ``getChildren`` on the ids,
``exists`` per topic, and creates its registration); and it counts the deletes of a crashed owner,
which never happen (its owner znodes vanish with its session). Before the re-arm followed ZkClient
it cost 1 request, and the model read ``M^2 + (2B+8)M + 3P``.
"""

from __future__ import annotations

from dataclasses import dataclass

CHANGES = ("join", "leave", "crash")


@dataclass(frozen=True)
class HerdModel:
    """The model's figures for one membership change (see the module docstring)."""

    members_after: int
    notifications: int
    zk_requests: int
    owner_writes: int
    registration_reads: int


def herd_model_requests(members: int, brokers: int, partitions: int) -> int:
    """ZooKeeper requests of one membership change: ``M^2 + (2B+9)M + 3P + (B+1)K`` with ``M = members``
    (after the change) and ``K = min(M, P)``, each member rebalancing once, re-arming its ids watch with 2
    requests, and each owner's leader finder reading the brokers once."""
    m = members
    owners = min(m, partitions)
    return m * m + (2 * brokers + 9) * m + 3 * partitions + (brokers + 1) * owners


def herd_model(change: str, members_before: int, brokers: int, partitions: int) -> HerdModel:
    """The model of ``change`` (one of :data:`CHANGES`) to a group of ``members_before`` members.

    A join adds one member and every member before it watches; a leave or a crash removes one and
    its survivors watch. Raises ValueError for an unknown change or a group too small for it.
    """
    if change not in CHANGES:
        raise ValueError(f"unknown change {change!r} (known: {', '.join(CHANGES)})")
    if change != "join" and members_before < 1:
        raise ValueError(f"a {change} needs a member to remove")
    after = members_before + 1 if change == "join" else members_before - 1
    watchers = members_before if change == "join" else after
    return HerdModel(
        members_after=after,
        notifications=watchers,
        zk_requests=herd_model_requests(after, brokers, partitions),
        owner_writes=2 * partitions,
        registration_reads=after * after + 2 * after,
    )
