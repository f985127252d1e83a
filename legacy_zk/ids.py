# pyright: strict
"""Identifiers of the 0.8 high-level consumer: consumer ids, thread ids, topic-partitions.

Contract (spec 1.3; ``ZookeeperConsumerConnector.consumerIdString`` and ``TopicCount.scala`` @0.8.2.2):

* consumer id = ``<group>_<uuidPart>``; ``uuidPart`` is ``consumer.id`` when configured, otherwise
  ``<hostname>-<currentTimeMillis>-<first 8 hex digits of the UUID's most significant 64 bits>``
  (Java's ``Long.toHexString``: two's complement, no leading zeros);
* thread id = ``<consumerId>-<n>``; thread ids are **ordered as Java strings** (UTF-16 code units),
  so ``c-10`` sorts before ``c-2``;
* a topic-partition prints as ``[topic,partition]`` (``TopicAndPartition.toString``); the
  round-robin assignor orders partitions by the Java hash code of that string.

Everything here is pure: no ZooKeeper, no sockets, no clock unless one is passed in.
"""

from __future__ import annotations

import socket
import time
import uuid as uuidlib
from typing import NamedTuple


def java_string_key(s: str) -> bytes:
    """A sort key that orders strings as Java's ``String.compareTo`` does (UTF-16 code units).

    Python compares code points; the two orders differ only between supplementary characters and
    BMP characters above U+D7FF. Comparing UTF-16BE bytes is exactly code-unit order.
    """
    return s.encode("utf-16-be", "surrogatepass")


def uuid_part(hostname: str, now_ms: int, uuid: uuidlib.UUID) -> str:
    """``"%s-%d-%s".format(host, millis, uuid.getMostSignificantBits.toHexString.substring(0, 8))``."""
    msb = uuid.int >> 64  # the 64 most significant bits, as an unsigned number
    # Long.toHexString prints the two's-complement bits without leading zeros; for the unsigned
    # value that is simply format(msb, "x").
    return f"{hostname}-{now_ms}-{format(msb, 'x')[:8]}"


def make_consumer_id(
    group: str,
    consumer_id: str | None = None,
    hostname: str | None = None,
    now_ms: int | None = None,
    uuid: uuidlib.UUID | None = None,
) -> str:
    """The 0.8 ``consumerIdString`` for ``group``: ``<group>_<consumer.id or host-ms-hex8>``."""
    if consumer_id:
        return f"{group}_{consumer_id}"
    return f"{group}_" + uuid_part(
        hostname if hostname is not None else socket.gethostname(),
        now_ms if now_ms is not None else int(time.time() * 1000),
        uuid if uuid is not None else uuidlib.uuid4(),
    )


class ThreadId(NamedTuple):
    """``ConsumerThreadId(consumer, threadId)``: prints ``<consumer>-<n>``, ordered by that string."""

    consumer: str
    n: int

    def __str__(self) -> str:
        return f"{self.consumer}-{self.n}"

    def __lt__(self, other: object) -> bool:  # type: ignore[override]
        if not isinstance(other, ThreadId):
            return NotImplemented
        return java_string_key(str(self)) < java_string_key(str(other))

    def __gt__(self, other: object) -> bool:  # type: ignore[override]
        if not isinstance(other, ThreadId):
            return NotImplemented
        return java_string_key(str(self)) > java_string_key(str(other))

    def __le__(self, other: object) -> bool:  # type: ignore[override]
        return self == other or self < other  # type: ignore[operator]

    def __ge__(self, other: object) -> bool:  # type: ignore[override]
        return self == other or self > other  # type: ignore[operator]

    @classmethod
    def parse(cls, s: str) -> ThreadId:
        """Inverse of ``str``: the consumer part is everything before the last ``-``."""
        consumer, sep, n = s.rpartition("-")
        if not sep or not consumer or not n.isdigit():
            raise ValueError(f"not a consumer thread id: {s!r}")
        return cls(consumer, int(n))


def thread_ids(consumer_id: str, streams: int) -> list[ThreadId]:
    """The thread ids of one consumer for one topic: ``<id>-0 .. <id>-(streams-1)``, sorted."""
    if streams < 1:
        raise ValueError(f"stream count must be >= 1, got {streams}")
    return sorted(ThreadId(consumer_id, i) for i in range(streams))


class TopicPartition(NamedTuple):
    """``TopicAndPartition``: prints ``[topic,partition]``; natural order (topic, partition)."""

    topic: str
    partition: int

    def __str__(self) -> str:
        return f"[{self.topic},{self.partition}]"
