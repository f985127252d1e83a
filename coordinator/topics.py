"""Topics of one broker: names, ids, partition logs, and their files.

Contract
--------
* :class:`TopicStore` holds every topic this broker leads. It is in memory when ``data_dir`` is
  None. With a ``data_dir`` each topic is described by ``topics/<name>.json`` (``{"topic_id":
  "<uuid>", "partitions": n}``, replaced atomically) and each partition's records are in
  ``logs/<name>-<p>/00000000000000000000.log`` (see :mod:`coordinator.partition_log`); a new store
  over the same directory finds everything again.
* Names follow Kafka's rules (``Topic.validate``): 1..249 characters of ``[a-zA-Z0-9._-]``, not
  ``.`` or ``..``. Violations raise :class:`InvalidTopic`; creating an existing topic raises
  :class:`TopicExists`; shrinking partitions raises :class:`InvalidPartitions`.
* ``listeners`` are called with the :class:`Topic` after it is created or gains partitions (the
  ZooKeeper registration rewrites ``/brokers/topics/<name>`` from there).
"""

from __future__ import annotations

import json
import os
import re
import uuid
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from pathlib import Path

from coordinator.partition_log import SEGMENT_NAME, PartitionLog

__all__ = [
    "InvalidPartitions",
    "InvalidTopic",
    "MAX_PARTITIONS",
    "Topic",
    "TopicExists",
    "TopicStore",
    "replicated_topic_id",
    "validate_topic_name",
]

_LEGAL = re.compile(r"^[a-zA-Z0-9._-]+$")
_MAX_NAME = 249
#: Upper bound on partitions per topic, to keep one bad request from exhausting memory or files.
MAX_PARTITIONS = 10_000


_TOPIC_ID_NAMESPACE = uuid.UUID("5f0c6a3e-8d7e-4a61-9b7c-2f6a1c9e0b14")


def replicated_topic_id(name: str) -> uuid.UUID:
    """The id of a replicated topic: the same on every broker (Metadata v10+ names it, and clients treat a
    changed id as a re-created topic). Kafka 2.8+ keeps a random id in the topic's znode; herdlab derives it
    from the name, since replicated topics are never deleted (so never re-created)."""
    return uuid.uuid5(_TOPIC_ID_NAMESPACE, name)


class InvalidTopic(ValueError):
    """An illegal topic name (INVALID_TOPIC_EXCEPTION)."""


class TopicExists(ValueError):
    """CreateTopics of an existing topic (TOPIC_ALREADY_EXISTS)."""


class InvalidPartitions(ValueError):
    """A partition count that is not positive, too large, or not larger than the current one."""


def validate_topic_name(name: str) -> None:
    """Raise :class:`InvalidTopic` unless ``name`` is a legal Kafka topic name."""
    if not name or name in (".", "..") or len(name) > _MAX_NAME or not _LEGAL.match(name):
        raise InvalidTopic(f"illegal topic name {name!r}")


@dataclass(slots=True)
class Topic:
    """A topic and its partition logs (index = partition number)."""

    name: str
    topic_id: uuid.UUID
    partitions: list[PartitionLog] = field(default_factory=list)

    def partition(self, index: int) -> PartitionLog | None:
        """The log of partition ``index``, or None if there is no such partition."""
        if 0 <= index < len(self.partitions):
            return self.partitions[index]
        return None


class TopicStore:
    """All topics of the broker; see the module docstring for the on-disk layout."""

    def __init__(self, data_dir: str | os.PathLike[str] | None = None) -> None:
        self.data_dir = Path(data_dir) if data_dir is not None else None
        self._topics: dict[str, Topic] = {}
        self._by_id: dict[uuid.UUID, Topic] = {}
        self.listeners: list[Callable[[Topic], None]] = []
        #: Called with the new log whenever a partition log is created (the broker wires listeners).
        self.on_new_log: Callable[[Topic, int, PartitionLog], None] | None = None
        if self.data_dir is not None:
            self._load()

    # ------------------------------------------------------------------ files

    def _meta_path(self, name: str) -> Path:
        assert self.data_dir is not None
        return self.data_dir / "topics" / f"{name}.json"

    def _log_path(self, name: str, index: int) -> Path | None:
        if self.data_dir is None:
            return None
        return self.data_dir / "logs" / f"{name}-{index}" / SEGMENT_NAME

    def _write_meta(self, topic: Topic) -> None:
        if self.data_dir is None:
            return
        path = self._meta_path(topic.name)
        path.parent.mkdir(parents=True, exist_ok=True)
        tmp = path.with_suffix(".json.tmp")
        tmp.write_text(json.dumps({"topic_id": str(topic.topic_id), "partitions": len(topic.partitions)}))
        os.replace(tmp, path)

    def _load(self) -> None:
        assert self.data_dir is not None
        meta_dir = self.data_dir / "topics"
        if not meta_dir.is_dir():
            return
        for path in sorted(meta_dir.glob("*.json")):
            name = path.stem
            try:
                validate_topic_name(name)
                meta = json.loads(path.read_text())
                topic = Topic(name, uuid.UUID(meta["topic_id"]))
                count = int(meta["partitions"])
            except (InvalidTopic, ValueError, KeyError, TypeError) as e:
                raise ValueError(f"unreadable topic metadata {path}: {e}") from e
            self._topics[name] = topic
            self._by_id[topic.topic_id] = topic
            self._grow(topic, count)

    # ------------------------------------------------------------------ queries

    def get(self, name: str) -> Topic | None:
        return self._topics.get(name)

    def by_id(self, topic_id: uuid.UUID) -> Topic | None:
        return self._by_id.get(topic_id)

    def __iter__(self) -> Iterator[Topic]:
        return iter(list(self._topics.values()))

    def __len__(self) -> int:
        return len(self._topics)

    # ------------------------------------------------------------------ changes

    def _grow(self, topic: Topic, count: int) -> None:
        for index in range(len(topic.partitions), count):
            log = PartitionLog(self._log_path(topic.name, index))
            topic.partitions.append(log)
            if self.on_new_log is not None:
                self.on_new_log(topic, index, log)

    @staticmethod
    def check_count(count: int) -> None:
        if count < 1 or count > MAX_PARTITIONS:
            raise InvalidPartitions(f"partition count {count} not in [1, {MAX_PARTITIONS}]")

    def create(self, name: str, partitions: int, *, validate_only: bool = False) -> Topic:
        """Create topic ``name`` with ``partitions`` partitions (see the module docstring for errors)."""
        validate_topic_name(name)
        self.check_count(partitions)
        if name in self._topics:
            raise TopicExists(f"topic {name!r} already exists")
        topic = Topic(name, uuid.uuid4())
        if validate_only:
            return topic
        self._topics[name] = topic
        self._by_id[topic.topic_id] = topic
        self._grow(topic, partitions)
        self._write_meta(topic)
        for listener in self.listeners:
            listener(topic)
        return topic

    def add_partitions(self, name: str, total: int, *, validate_only: bool = False) -> Topic:
        """Grow topic ``name`` to ``total`` partitions (must be more than it has)."""
        topic = self._topics.get(name)
        if topic is None:
            raise KeyError(name)
        self.check_count(total)
        if total <= len(topic.partitions):
            raise InvalidPartitions(
                f"topic {name!r} has {len(topic.partitions)} partitions; the new count must be larger, got {total}"
            )
        if validate_only:
            return topic
        self._grow(topic, total)
        self._write_meta(topic)
        for listener in self.listeners:
            listener(topic)
        return topic

    def ensure_partition(self, name: str, index: int) -> PartitionLog:
        """The log of partition ``index`` of ``name``, creating the topic and partitions up to it as needed.

        For the replica manager: a broker assigned a replica creates its local log when it learns
        the partition state. Unlike :meth:`create` it calls no ``listeners`` (the topic's znode is the
        controller's business in replicated mode, not this broker's)."""
        validate_topic_name(name)
        self.check_count(index + 1)
        topic = self._topics.get(name)
        if topic is None:
            topic = Topic(name, replicated_topic_id(name))
            self._topics[name] = topic
            self._by_id[topic.topic_id] = topic
        if index >= len(topic.partitions):
            self._grow(topic, index + 1)
            self._write_meta(topic)
        return topic.partitions[index]

    def close(self) -> None:
        for topic in self._topics.values():
            for log in topic.partitions:
                log.close()
