# pyright: strict
"""The pure core of ``herdlab offsets``: the diff table, the CSV export, the copy plan, the live-member rule.

Offsets everywhere are *next offsets to read* (what 0.8 wrote to ``/consumers/<g>/offsets/<t>/<p>`` and what
an OffsetCommit carries); a store without an offset for a partition simply has no entry for it.
Partitions are ``(topic, partition)`` tuples. Nothing here does IO.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass

TopicPartition = tuple[str, int]
Offsets = Mapping[TopicPartition, int]

STORES = ("zookeeper", "kafka")
#: Broker group states in which no member holds the group (Kafka's ``GroupState``).
IDLE_STATES = frozenset({"Empty", "Dead"})


@dataclass(frozen=True)
class DiffRow:
    """One partition of a group's offsets in both stores.

    ``lag`` is ``log_end`` minus the larger committed offset (what the group would have left to read if it
    resumed from the more advanced store), ``difference`` is ``kafka - zookeeper``; both are ``None`` when a
    value they need is missing.
    """

    topic: str
    partition: int
    zookeeper: int | None
    kafka: int | None
    log_end: int | None

    @property
    def committed(self) -> int | None:
        """The larger of the two committed offsets (``None`` when neither store has one)."""
        present = [v for v in (self.zookeeper, self.kafka) if v is not None]
        return max(present) if present else None

    @property
    def lag(self) -> int | None:
        committed = self.committed
        if committed is None or self.log_end is None:
            return None
        return self.log_end - committed

    @property
    def difference(self) -> int | None:
        if self.zookeeper is None or self.kafka is None:
            return None
        return self.kafka - self.zookeeper

    def as_dict(self) -> dict[str, str | int | None]:
        """The row as JSON: every column, missing values as ``None``."""
        return {
            "topic": self.topic,
            "partition": self.partition,
            "zookeeper_offset": self.zookeeper,
            "kafka_offset": self.kafka,
            "log_end_offset": self.log_end,
            "lag": self.lag,
            "difference": self.difference,
        }


def group_topics(zookeeper: Offsets, kafka: Offsets, topics: Sequence[str] = ()) -> list[str]:
    """The topics a diff covers: ``topics`` when given (in that order, duplicates dropped), else the sorted
    union of the topics with a committed offset in either store."""
    if topics:
        return list(dict.fromkeys(topics))
    return sorted({t for t, _ in zookeeper} | {t for t, _ in kafka})


def diff_rows(
    zookeeper: Offsets,
    kafka: Offsets,
    log_end: Offsets,
    partitions_of: Mapping[str, Iterable[int]],
    topics: Sequence[str] = (),
) -> list[DiffRow]:
    """One row per partition of each topic of :func:`group_topics`, sorted by topic then partition.

    A topic's partitions are those the broker lists (``partitions_of``; a topic it does not know has none)
    together with every partition either store has an offset for, so an offset left on a partition the
    broker no longer has is still shown.
    """
    rows: list[DiffRow] = []
    for topic in group_topics(zookeeper, kafka, topics):
        parts = set(partitions_of.get(topic, ()))
        parts |= {p for t, p in zookeeper if t == topic} | {p for t, p in kafka if t == topic}
        for p in sorted(parts):
            tp = (topic, p)
            rows.append(DiffRow(topic, p, zookeeper.get(tp), kafka.get(tp), log_end.get(tp)))
    return rows


def export_csv(offsets: Offsets) -> str:
    """The single-group reset plan that ``kafka-consumer-groups --reset-offsets --from-file`` reads.

    Kafka 3.7.0's ``ConsumerGroupCommand`` writes it with ``CsvRecordNoGroup`` (``topic,partition,offset``,
    no header, one ``\\n``-terminated line per partition) and ``parseResetPlan`` splits the file on ``\\n``
    and each line on ``,``. Lines are sorted by topic then partition.
    """
    return "".join(f"{t},{p},{offsets[(t, p)]}\n" for t, p in sorted(offsets))


@dataclass(frozen=True)
class CopyStep:
    """One partition of a copy: the ``source`` offset, the ``target`` store's current one (``None``: none);
    the new target value is the source's."""

    topic: str
    partition: int
    source: int
    target: int | None

    @property
    def new(self) -> int:
        return self.source

    @property
    def changes(self) -> bool:
        return self.target != self.source

    def as_dict(self) -> dict[str, str | int | bool | None]:
        return {
            "topic": self.topic,
            "partition": self.partition,
            "from": self.source,
            "current": self.target,
            "new": self.new,
            "changes": self.changes,
        }


def copy_plan(source: Offsets, target: Offsets) -> list[CopyStep]:
    """One step per partition the source store has an offset for, sorted; partitions only the target has
    are not part of the plan (a copy leaves them as they are)."""
    return [CopyStep(t, p, source[(t, p)], target.get((t, p))) for t, p in sorted(source)]


def changed(plan: Iterable[CopyStep]) -> dict[TopicPartition, int]:
    """The offsets a copy writes: the steps whose target differs from the source."""
    return {(s.topic, s.partition): s.new for s in plan if s.changes}


@dataclass(frozen=True)
class Activity:
    """What both stores say about a group's members: the children of ``/consumers/<g>/ids`` (``None``: not
    read) and the broker's DescribeGroups state and member count (``None``: not read)."""

    zookeeper_ids: tuple[str, ...] | None = None
    broker_state: str | None = None
    broker_members: int = 0


def live_member_refusal(group: str, activity: Activity) -> str | None:
    """The one-line reason a copy into ``group``'s offsets must not run, or ``None`` when no member is live.

    A group is live when a consumer is registered under ``/consumers/<g>/ids``, or the broker reports members
    or a state other than Empty / Dead (a running group would overwrite the copied offsets with its own
    next commit, and the broker refuses simple commits to an active group).
    """
    reasons: list[str] = []
    if activity.zookeeper_ids:
        ids = sorted(activity.zookeeper_ids)
        shown = ", ".join(ids[:3]) + (f" and {len(ids) - 3} more" if len(ids) > 3 else "")
        reasons.append(f"{len(ids)} registered in ZooKeeper ({shown})")
    state = activity.broker_state
    if activity.broker_members or (state is not None and state not in IDLE_STATES):
        reasons.append(f"{activity.broker_members} in the broker (group state {state})")
    if not reasons:
        return None
    return f"group {group} has live members: {'; '.join(reasons)}; stop them first or pass --force to copy anyway"
