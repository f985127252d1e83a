"""The 0.8.2 range and roundrobin assignors against test vectors (spec 1.10).

Round-robin vectors: the partition order was computed with a JVM (``"[t,p]".hashCode()``):
``[t,0]`` .. ``[t,9]`` = 87540032 + 31 p, ``[t,10]`` = -1581226645, ``[t,11]`` = -1581226614;
``[orders,p]`` = -1093576615 + 31 p, ``[payments,p]`` = 1617066449 + 31 p.
"""

from __future__ import annotations

import pytest

from legacy_zk.assignors import (
    AssignmentError,
    View,
    assign,
    assign_all,
    consumers_per_topic,
    context_for,
)
from legacy_zk.ids import ThreadId, TopicPartition


def view(subs: dict[str, dict[str, int]], partitions: dict[str, int]) -> View:
    return View(
        consumers=tuple(sorted(subs)),
        subscriptions=subs,
        partitions={t: tuple(range(n)) for t, n in partitions.items()},
    )


def owners(result: dict[TopicPartition, ThreadId]) -> dict[int, str]:
    return {tp.partition: str(t) for tp, t in result.items()}


def test_range_worked_example_from_the_source_comment() -> None:
    # 2 consumers x 2 streams, p0..p4: p0,p1 -> C1-0; p2 -> C1-1; p3 -> C2-0; p4 -> C2-1
    v = view({"C1": {"t": 2}, "C2": {"t": 2}}, {"t": 5})
    assert owners(assign("range", context_for(v, "C1"))) == {0: "C1-0", 1: "C1-0", 2: "C1-1"}
    assert owners(assign("range", context_for(v, "C2"))) == {3: "C2-0", 4: "C2-1"}


def test_range_orders_threads_as_strings() -> None:
    # c-1, c-10, c-2 ...: thread "c-10" is third and gets the third partition
    v = view({"c": {"t": 11}}, {"t": 11})
    got = owners(assign("range", context_for(v, "c")))
    assert got[0] == "c-0" and got[1] == "c-1" and got[2] == "c-10" and got[3] == "c-2" and got[10] == "c-9"


def test_range_gives_nothing_to_threads_beyond_the_partitions() -> None:
    v = view({"a": {"t": 1}, "b": {"t": 1}, "c": {"t": 1}}, {"t": 2})
    assert owners(assign("range", context_for(v, "a"))) == {0: "a-0"}
    assert owners(assign("range", context_for(v, "b"))) == {1: "b-0"}
    assert assign("range", context_for(v, "c")) == {}


def test_range_is_per_topic_and_only_over_my_topics() -> None:
    v = view({"a": {"x": 1, "y": 1}, "b": {"x": 1}}, {"x": 3, "y": 2})
    got = assign("range", context_for(v, "a"))
    assert sorted(got) == [
        TopicPartition("x", 0),
        TopicPartition("x", 1),
        TopicPartition("y", 0),
        TopicPartition("y", 1),
    ]
    assert sorted(assign("range", context_for(v, "b"))) == [TopicPartition("x", 2)]


def test_range_uneven_split_first_threads_get_the_extra_partition() -> None:
    v = view({f"m{i}": {"t": 1} for i in range(3)}, {"t": 8})
    sizes = [len(assign("range", context_for(v, f"m{i}"))) for i in range(3)]
    assert sizes == [3, 3, 2]


def test_roundrobin_orders_partitions_by_java_hash_of_topic_and_partition() -> None:
    v = view({"A": {"t": 1}, "B": {"t": 1}, "C": {"t": 1}}, {"t": 12})
    assert sorted(p.partition for p in assign("roundrobin", context_for(v, "A"))) == [1, 4, 7, 10]
    assert sorted(p.partition for p in assign("roundrobin", context_for(v, "B"))) == [2, 5, 8, 11]
    assert sorted(p.partition for p in assign("roundrobin", context_for(v, "C"))) == [0, 3, 6, 9]


def test_roundrobin_spreads_topics_by_hash_order() -> None:
    v = view(
        {"X": {"orders": 1, "payments": 1}, "Y": {"orders": 1, "payments": 1}}, {"orders": 3, "payments": 3}
    )
    x = sorted(assign("roundrobin", context_for(v, "X")))
    y = sorted(assign("roundrobin", context_for(v, "Y")))
    assert x == [TopicPartition("orders", 0), TopicPartition("orders", 2), TopicPartition("payments", 1)]
    assert y == [TopicPartition("orders", 1), TopicPartition("payments", 0), TopicPartition("payments", 2)]


def test_roundrobin_uses_every_stream_of_a_consumer() -> None:
    v = view({"A": {"t": 2}, "B": {"t": 1}}, {"t": 3})
    # threads, B-0 in order; partitions p0, p1, p2 (ascending hash)
    assert owners(assign("roundrobin", context_for(v, "A"))) == {0: "A-0", 1: "A-1"}
    assert owners(assign("roundrobin", context_for(v, "B"))) == {2: "B-0"}


def test_roundrobin_requires_identical_subscriptions() -> None:
    v = view({"A": {"x": 1, "y": 1}, "B": {"x": 1}}, {"x": 2, "y": 2})
    with pytest.raises(AssignmentError, match="Round-robin assignment is allowed only if"):
        assign("roundrobin", context_for(v, "A"))


def test_context_requires_my_registration() -> None:
    with pytest.raises(AssignmentError):
        context_for(view({"a": {"t": 1}}, {"t": 1}), "missing")


def test_consumers_per_topic_sorted_as_strings() -> None:
    cft = consumers_per_topic({"c": {"t": 3}, "b": {"t": 1}})
    assert [str(t) for t in cft["t"]] == ["b-0", "c-0", "c-1", "c-2"]


@pytest.mark.parametrize("strategy", ["range", "roundrobin"])
@pytest.mark.parametrize(
    ("members", "partitions", "streams"), [(1, 4, 1), (3, 10, 1), (4, 3, 2), (20, 20, 1), (7, 50, 3)]
)
def test_every_member_on_one_view_gives_a_disjoint_cover(
    strategy: str, members: int, partitions: int, streams: int
) -> None:
    v = view({f"g_m{i}": {"t": streams} for i in range(members)}, {"t": partitions})
    merged: dict[TopicPartition, ThreadId] = {}
    for m in v.subscriptions:
        mine = assign(strategy, context_for(v, m))
        assert all(t.consumer == m for t in mine.values())
        assert not set(mine) & set(merged), "two members claim one partition"
        merged.update(mine)
    assert sorted(merged) == [TopicPartition("t", p) for p in range(partitions)]
    assert merged == assign_all(strategy, v)
