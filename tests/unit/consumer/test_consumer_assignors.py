"""The server-side assignors on small inputs, each expected assignment worked out by hand from Kafka 4's
``UniformHomogeneousAssignmentBuilder``, ``UniformHeterogeneousAssignmentBuilder`` and ``RangeAssignor``."""

from __future__ import annotations

import uuid

from coordinator.core.consumer.assignors import GroupSpec, MemberSpec, range_assign, uniform_assign
from tests.support.consumer_core import tid

T1, T2 = tid(1), tid(2)


def _spec(
    members: dict[str, tuple[set[uuid.UUID], dict[uuid.UUID, set[int]]]],
    partitions: dict[uuid.UUID, int],
    *,
    homogeneous: bool,
    instances: dict[str, str] | None = None,
) -> GroupSpec:
    instances = instances or {}
    return GroupSpec(
        [
            MemberSpec(
                m,
                instances.get(m),
                frozenset(topics),
                {t: frozenset(p) for t, p in current.items()},
            )
            for m, (topics, current) in sorted(members.items())
        ],
        homogeneous,
        partitions,
    )


def _plain(result: dict[str, dict[uuid.UUID, frozenset[int]]]) -> dict[str, dict[uuid.UUID, list[int]]]:
    return {m: {t: sorted(p) for t, p in a.items()} for m, a in result.items()}


def test_uniform_three_members_seven_partitions_from_scratch() -> None:
    # 7 // 3 = 2 each, 7 % 3 = 1 extra. a is offered it but holds nothing, and b and c follow to take the one
    # extra: a gives it up (quota 2); so does b (c follows); c, the last, keeps it (quota 3). Handed out in
    # order: a 0-1, b 2-3, c 4-6.
    spec = _spec({m: ({T1}, {}) for m in "abc"}, {T1: 7}, homogeneous=True)
    assert _plain(uniform_assign(spec)) == {"a": {T1: [0, 1]}, "b": {T1: [2, 3]}, "c": {T1: [4, 5, 6]}}


def test_uniform_a_joiner_first_in_order_leaves_the_extra_partition_with_a_member_that_holds_it() -> None:
    # b holds 0-1 and c 2-3; a joins (first in member order). 4 // 3 = 1 each, 1 extra. a is offered the extra
    # but holds nothing and two members follow: it gives the extra up (quota 1). b keeps the extra and both its
    # partitions (quota 2); c (quota 1) keeps 2 and gives up 3, which goes to a. One partition moves, as Apache
    # Kafka 4.1 moves it (an older builder gave a the extra and took one partition from each of b and c).
    spec = _spec(
        {"a": ({T1}, {}), "b": ({T1}, {T1: {0, 1}}), "c": ({T1}, {T1: {2, 3}})}, {T1: 4}, homogeneous=True
    )
    assert _plain(uniform_assign(spec)) == {"a": {T1: [3]}, "b": {T1: [0, 1]}, "c": {T1: [2]}}


def test_uniform_keeps_what_members_have_up_to_their_quota() -> None:
    # a holds 0-3 (quota 3: keeps 0-2, gives up 3), b holds 4-6 (quota 2: keeps 4-5, gives up 6); c gets 3 and 6.
    spec = _spec(
        {"a": ({T1}, {T1: {0, 1, 2, 3}}), "b": ({T1}, {T1: {4, 5, 6}}), "c": ({T1}, {})},
        {T1: 7},
        homogeneous=True,
    )
    assert _plain(uniform_assign(spec)) == {"a": {T1: [0, 1, 2]}, "b": {T1: [4, 5]}, "c": {T1: [3, 6]}}


def test_uniform_one_member_holding_everything_shares_with_two_new_ones() -> None:
    # a (quota 3) keeps 0-2; 3-6 are handed out to b (quota 2: 3, 4) and c (quota 2: 5, 6).
    spec = _spec(
        {"a": ({T1}, {T1: set(range(7))}), "b": ({T1}, {}), "c": ({T1}, {})}, {T1: 7}, homogeneous=True
    )
    assert _plain(uniform_assign(spec)) == {"a": {T1: [0, 1, 2]}, "b": {T1: [3, 4]}, "c": {T1: [5, 6]}}


def test_uniform_two_topics_with_different_subscriptions() -> None:
    # a: t1 (3 partitions) and t2 (2); b: t1. Topics by partitions per subscriber, most first: t2 (2/1), t1 (3/2).
    # t2's partitions go to its only subscriber a (a: 2). t1: b is the least loaded and stays so through 0, 1 and
    # 2 (b reaches 2 = a's count, the walk restarts at b): b 3, a 2; the balance pass sees a difference of 1.
    spec = _spec({"a": ({T1, T2}, {}), "b": ({T1}, {})}, {T1: 3, T2: 2}, homogeneous=False)
    assert _plain(uniform_assign(spec)) == {"a": {T2: [0, 1]}, "b": {T1: [0, 1, 2]}}


def test_uniform_heterogeneous_moves_partitions_from_the_most_to_the_least_loaded() -> None:
    # a (t1) holds all 4 partitions of t1; b (t1 and t2) joins.
    spec = _spec({"a": ({T1}, {T1: {0, 1, 2, 3}}), "b": ({T1, T2}, {})}, {T1: 4, T2: 1}, homogeneous=False)
    # Only t2-0 is unassigned: its one subscriber b gets it (a 4, b 1). Balancing t1: the most loaded a gives its
    # highest partition, 3, to b (a 3, b 2); for the next move (2 to b) the balancer's counts are then 3 and 2,
    # balanced, and it stops.
    assert _plain(uniform_assign(spec)) == {"a": {T1: [0, 1, 2]}, "b": {T1: [3], T2: [0]}}


def test_range_three_members_seven_partitions() -> None:
    spec = _spec({m: ({T1}, {}) for m in "cab"}, {T1: 7}, homogeneous=True)
    assert _plain(range_assign(spec)) == {"a": {T1: [0, 1, 2]}, "b": {T1: [3, 4]}, "c": {T1: [5, 6]}}


def test_range_two_topics_with_different_subscriptions() -> None:
    # t1 has 2 subscribers (a, b): 3 // 2 = 1 each, a gets the extra one: a 0-1, b 2. t2 only a: 0-1.
    spec = _spec({"a": ({T1, T2}, {}), "b": ({T1}, {})}, {T1: 3, T2: 2}, homogeneous=False)
    assert _plain(range_assign(spec)) == {"a": {T1: [0, 1], T2: [0, 1]}, "b": {T1: [2]}}


def test_range_puts_static_members_first_by_instance_id() -> None:
    # z has instance "i1": it sorts before the dynamic members a, b (then by member id).
    spec = _spec({m: ({T1}, {}) for m in "abz"}, {T1: 3}, homogeneous=True, instances={"z": "i1"})
    assert _plain(range_assign(spec)) == {"z": {T1: [0]}, "a": {T1: [1]}, "b": {T1: [2]}}
