# pyright: strict
"""The 0.8.2 partition assignors, ``range`` and ``roundrobin`` (spec 1.10; ``PartitionAssignor.scala``).

Every member runs the same deterministic function over **its own view** of ZooKeeper and claims
only its own part; there is no coordinator. A :class:`View` is what one member read in one
rebalance attempt; :func:`context_for` turns it into the ``AssignmentContext`` 0.8 builds;
:func:`assign` returns that member's ownership decision (partition -> one of its thread ids) and
:func:`assign_all` the decision every member would take on the same view (for tests, the
takeover-delay mitigation and the benchmark's settle check).

Faithful details:

* thread ids are sorted as Java strings (``c-10`` before ``c-2``), see :mod:`legacy_zk.ids`;
* range works per topic over the topics *I* subscribe to; a thread whose share is empty gets
  nothing (0.8 logs "No broker partitions consumed by consumer thread");
* roundrobin requires every topic of the group to have the identical thread-id set
  (0.8's ``require``), else :class:`AssignmentError`; partitions are ordered by the Java
  ``String.hashCode`` of ``"[topic,partition]"``.

UNVERIFIED in the spec: the order of round-robin *ties* (equal hash codes). 0.8.2 sorts with a
stable sort whose input is a Scala ``HashMap`` iteration over topics, each topic's partitions
ascending. Decision: the input order here is topics in Java string order, partitions ascending.
For one topic this is exactly 0.8.2's order; for several topics 0.8.2's order depends on JVM hash
buckets, which no port can promise, and a fixed order keeps every member of *this* testbed
consistent with each other (the property the protocol actually needs).
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field

from harness.kernel.javacompat import java_string_hashcode
from legacy_zk.ids import ThreadId, TopicPartition, java_string_key, thread_ids

RANGE = "range"
ROUNDROBIN = "roundrobin"
STRATEGIES = (RANGE, ROUNDROBIN)


class AssignmentError(Exception):
    """The assignor cannot run on this view (0.8 threw; the rebalance attempt fails)."""


@dataclass(frozen=True)
class View:
    """One member's snapshot of the group, read from ZooKeeper during one attempt.

    ``consumers``: children of ``/consumers/<g>/ids`` (every registered id, sorted);
    ``subscriptions``: consumer id -> topic -> stream count, wildcards already resolved, ids whose
    registration was malformed left out; ``partitions``: topic -> partition ids ascending, for the
    topics that were read (0.8.2 reads only the reading member's own topics).
    """

    consumers: tuple[str, ...]
    subscriptions: Mapping[str, Mapping[str, int]]
    partitions: Mapping[str, tuple[int, ...]]
    #: values derived from this (immutable) view, computed once: :func:`consumers_per_topic` of its
    #: subscriptions, its consumers in Java string order, :func:`assign_all` per strategy. Views that
    #: several members share (:class:`legacy_zk.reads.ViewMemo`) share them too.
    derived: dict[object, object] = field(default_factory=dict[object, object], compare=False, repr=False)

    def threads_per_topic(self) -> Mapping[str, list[ThreadId]]:
        """:func:`consumers_per_topic` of the subscriptions (computed once; callers must not mutate)."""
        out = self.derived.get("cft")
        if out is None:
            out = self.derived["cft"] = consumers_per_topic(self.subscriptions)
        return out  # pyright: ignore[reportReturnType]

    def consumers_java_order(self) -> tuple[str, ...]:
        """The consumers sorted as Java strings (computed once)."""
        out = self.derived.get("sorted")
        if out is None:
            out = self.derived["sorted"] = tuple(sorted(self.consumers, key=java_string_key))
        return out  # pyright: ignore[reportReturnType]


@dataclass(frozen=True)
class AssignmentContext:
    """``kafka.consumer.AssignmentContext``: what an assignor sees."""

    consumer_id: str
    my_topic_thread_ids: Mapping[str, list[ThreadId]]
    partitions_for_topic: Mapping[str, tuple[int, ...]]
    consumers_for_topic: Mapping[str, list[ThreadId]]
    consumers: tuple[str, ...] = field(default_factory=tuple)


def consumers_per_topic(subscriptions: Mapping[str, Mapping[str, int]]) -> dict[str, list[ThreadId]]:
    """``ZkUtils.getConsumersPerTopic``: topic -> every subscribed thread id, sorted as strings."""
    out: dict[str, list[ThreadId]] = {}
    for consumer, topics in subscriptions.items():
        for topic, streams in topics.items():
            out.setdefault(topic, []).extend(thread_ids(consumer, streams))
    for tids in out.values():
        tids.sort()
    return out


def context_for(view: View, me: str) -> AssignmentContext:
    """The ``AssignmentContext`` member ``me`` builds from ``view``.

    Raises :class:`AssignmentError` when ``me`` has no (readable) registration in the view.
    """
    mine = view.subscriptions.get(me)
    if mine is None:
        raise AssignmentError(f"{me} is not registered in the view it read")
    return AssignmentContext(
        consumer_id=me,
        my_topic_thread_ids={t: thread_ids(me, n) for t, n in mine.items()},
        partitions_for_topic={t: tuple(view.partitions.get(t, ())) for t in mine},
        consumers_for_topic=view.threads_per_topic(),
        consumers=view.consumers_java_order(),
    )


def _range_topic(topic: str, partitions: tuple[int, ...], threads: list[ThreadId], chosen: list[ThreadId]):
    """Range over one topic for the threads in ``chosen`` (each must be in ``threads``)."""
    if not threads:
        raise AssignmentError(f"no consumer threads subscribe to topic {topic}")
    n, extra = divmod(len(partitions), len(threads))
    for tid in chosen:
        try:
            pos = threads.index(tid)
        except ValueError:
            raise AssignmentError(f"{tid} is not among the consumers of {topic}") from None
        start = n * pos + min(pos, extra)
        count = n + (1 if pos < extra else 0)
        for i in range(start, start + count):
            yield TopicPartition(topic, partitions[i]), tid


def range_assign(ctx: AssignmentContext) -> dict[TopicPartition, ThreadId]:
    """``RangeAssignor.assign``: my threads' share of each topic I subscribe to."""
    out: dict[TopicPartition, ThreadId] = {}
    for topic, mine in ctx.my_topic_thread_ids.items():
        threads = ctx.consumers_for_topic.get(topic)
        if threads is None:
            raise AssignmentError(f"topic {topic} has no consumers in the view")
        out.update(_range_topic(topic, ctx.partitions_for_topic.get(topic, ()), threads, mine))
    return out


def _roundrobin_all(ctx: AssignmentContext) -> dict[TopicPartition, ThreadId]:
    cft = ctx.consumers_for_topic
    if not cft:
        raise AssignmentError("round-robin: no consumer subscribes to any topic")
    head_topic, head = next(iter(cft.items()))
    head_set = set(head)
    for topic, tids in cft.items():
        if set(tids) != head_set:
            raise AssignmentError(
                "Round-robin assignment is allowed only if all consumers in the group subscribe to the same "
                f"topics, AND if the stream counts across topics are identical for a given consumer instance. "
                f"Topic {topic} has streams {sorted(map(str, tids))}; topic {head_topic} has "
                f"{sorted(map(str, head))}"
            )
    threads = sorted(head_set)
    tps = [
        TopicPartition(t, p)
        for t in sorted(ctx.partitions_for_topic, key=java_string_key)
        for p in ctx.partitions_for_topic[t]
    ]
    tps.sort(key=lambda tp: java_string_hashcode(str(tp)))  # stable: ties keep the order above
    return {tp: threads[i % len(threads)] for i, tp in enumerate(tps)}


def roundrobin_assign(ctx: AssignmentContext) -> dict[TopicPartition, ThreadId]:
    """``RoundRobinAssignor.assign`` (0.8.2): the round-robin decisions that fall on my threads."""
    return {tp: tid for tp, tid in _roundrobin_all(ctx).items() if tid.consumer == ctx.consumer_id}


def assign(strategy: str, ctx: AssignmentContext) -> dict[TopicPartition, ThreadId]:
    """Run the named assignor (``partition.assignment.strategy``) for ``ctx.consumer_id``."""
    if strategy == ROUNDROBIN:
        return roundrobin_assign(ctx)
    if strategy == RANGE:
        return range_assign(ctx)
    raise ValueError(f"unknown partition.assignment.strategy {strategy!r}")


def assign_all(strategy: str, view: View) -> dict[TopicPartition, ThreadId]:
    """The decision of every member of ``view`` (each computing on this same view), merged.

    ``view.partitions`` must hold every subscribed topic. This is what the group converges to
    when all members agree on the view; members with nothing get nothing. Computed once per view and
    strategy (callers must not mutate the result).
    """
    key = ("all", strategy)
    done = view.derived.get(key)
    if done is None:
        done = view.derived[key] = _assign_all(strategy, view)
    return done  # pyright: ignore[reportReturnType]


def _assign_all(strategy: str, view: View) -> dict[TopicPartition, ThreadId]:
    cft = view.threads_per_topic()
    if strategy == ROUNDROBIN:
        if not view.subscriptions:
            return {}
        ctx = AssignmentContext("", {}, {t: tuple(p) for t, p in view.partitions.items() if t in cft}, cft)
        return _roundrobin_all(ctx)
    if strategy != RANGE:
        raise ValueError(f"unknown partition.assignment.strategy {strategy!r}")
    out: dict[TopicPartition, ThreadId] = {}
    for topic, threads in cft.items():
        out.update(_range_topic(topic, tuple(view.partitions.get(topic, ())), threads, threads))
    return out
