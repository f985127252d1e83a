# pyright: strict
"""The rebalance plan of one attempt: from a view to what to release and what to claim.

0.8 is *eager*: an attempt first releases **every** owner znode the member holds (before it even
reads the group), then claims its whole new share. The plan states that explicitly and adds what
a person (and the history) wants to know about the step: which partitions stay, come, go, and which
of the new ones were held, in the member's previous view, by a consumer that has since vanished
(the partitions the takeover-delay mitigation waits for).

Pure: no ZooKeeper, no clock.
"""

from __future__ import annotations

from collections.abc import Mapping, Set
from dataclasses import dataclass

from legacy_zk.assignors import View, assign, assign_all, context_for
from legacy_zk.ids import ThreadId, TopicPartition


@dataclass(frozen=True)
class RebalancePlan:
    """What one attempt does.

    ``release``: everything owned before the attempt (eager: all of it, sorted);
    ``claim``: the ownership decision, partition -> my thread id (to be created as owner znodes);
    ``kept`` / ``gained`` / ``lost``: ``claim`` against ``release``;
    ``takeover``: claimed partitions whose owner in the previous view is no longer registered.
    """

    release: tuple[TopicPartition, ...]
    claim: Mapping[TopicPartition, ThreadId]
    kept: frozenset[TopicPartition]
    gained: frozenset[TopicPartition]
    lost: frozenset[TopicPartition]
    takeover: frozenset[TopicPartition]


def vanished_owners(
    previous: View | None, current: View, strategy: str, candidates: Set[TopicPartition]
) -> frozenset[TopicPartition]:
    """Partitions in ``candidates`` whose owner under ``previous`` is not registered in ``current``.

    The previous owner is the one the assignor gave the partition to on the previous view (the
    group's agreed state when that view settled). No previous view, or an assignor that cannot run
    on it, means no known previous owner.
    """
    if previous is None or not candidates:
        return frozenset()
    try:
        before = assign_all(strategy, previous)
    except Exception:  # noqa: BLE001 - an unusable old view just means "owner unknown"
        return frozenset()
    present = set(current.consumers)
    return frozenset(tp for tp in candidates if tp in before and before[tp].consumer not in present)


def plan_rebalance(
    view: View,
    me: str,
    strategy: str,
    owned: Set[TopicPartition],
    previous: View | None = None,
) -> RebalancePlan:
    """The plan of member ``me`` for ``view``.

    ``owned``: partitions it held when the attempt began; ``previous``: the view of its last
    successful attempt (for ``takeover``). Raises :class:`legacy_zk.assignors.AssignmentError`
    when the assignor cannot run on this view (the attempt fails, as in 0.8).
    """
    claim = assign(strategy, context_for(view, me))
    new = frozenset(claim)
    old = frozenset(owned)
    return RebalancePlan(
        release=tuple(sorted(old)),
        claim=dict(sorted(claim.items())),
        kept=new & old,
        gained=new - old,
        lost=old - new,
        takeover=vanished_owners(previous, view, strategy, new - old),
    )
