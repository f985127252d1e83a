# pyright: strict
"""ZooKeeper paths and znode payloads of the 0.8 layout (spec 1.4), as pure functions.

Paths (``ZKGroupDirs`` / ``ZKGroupTopicDirs`` / ``ZkUtils`` @0.8.2.2)::

    /consumers/<group>/ids/<consumerId>            ephemeral, registration JSON
    /consumers/<group>/owners/<topic>/<partition>  ephemeral, owning thread id
    /consumers/<group>/offsets/<topic>/<partition> persistent, next offset to read (decimal)
    /brokers/ids/<brokerId>                        ephemeral, broker JSON
    /brokers/topics/<topic>                        persistent, {"version":1,"partitions":{"0":[..]}}

Decoders raise :class:`MalformedZnode` (a ``ValueError``) naming the path and the problem, so the
member can report a payload somebody else wrote and skip it instead of failing. Encoders produce
the bytes 0.8 wrote (``kafka.utils.Json.encode``: no spaces, keys in insertion order).
"""

from __future__ import annotations

import json
import re
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any, cast

CONSUMERS = "/consumers"
BROKER_IDS = "/brokers/ids"
BROKER_TOPICS = "/brokers/topics"

STATIC = "static"
WHITE_LIST = "white_list"
BLACK_LIST = "black_list"
PATTERNS = (STATIC, WHITE_LIST, BLACK_LIST)

#: ``kafka.common.Topic.InternalTopics`` in 0.8.2: the offsets topic.
INTERNAL_TOPICS = frozenset({"__consumer_offsets"})


class MalformedZnode(ValueError):
    """A znode's payload does not parse as the 0.8 layout says; the message names path and cause."""

    def __init__(self, path: str, problem: str, data: bytes | None = None) -> None:
        shown = "" if data is None else f" (payload {data[:120]!r})"
        super().__init__(f"malformed znode {path}: {problem}{shown}")
        self.path = path
        self.problem = problem


def group_dir(group: str) -> str:
    return f"{CONSUMERS}/{group}"


def ids_dir(group: str) -> str:
    return f"{CONSUMERS}/{group}/ids"


def id_path(group: str, consumer_id: str) -> str:
    return f"{CONSUMERS}/{group}/ids/{consumer_id}"


def owners_dir(group: str, topic: str) -> str:
    return f"{CONSUMERS}/{group}/owners/{topic}"


def owner_path(group: str, topic: str, partition: int) -> str:
    return f"{CONSUMERS}/{group}/owners/{topic}/{partition}"


def offsets_dir(group: str, topic: str) -> str:
    return f"{CONSUMERS}/{group}/offsets/{topic}"


def offset_path(group: str, topic: str, partition: int) -> str:
    return f"{CONSUMERS}/{group}/offsets/{topic}/{partition}"


def topic_path(topic: str) -> str:
    return f"{BROKER_TOPICS}/{topic}"


def broker_path(broker_id: int | str) -> str:
    return f"{BROKER_IDS}/{broker_id}"


def parent(path: str) -> str:
    """``path.substring(0, path.lastIndexOf('/'))`` ('' for a top-level path)."""
    return path[: path.rfind("/")]


def _json(path: str, data: bytes | None) -> Any:
    if data is None:
        raise MalformedZnode(path, "no data")
    try:
        return json.loads(data.decode("utf-8"))
    except (UnicodeDecodeError, json.JSONDecodeError) as e:
        raise MalformedZnode(path, f"not JSON ({e.__class__.__name__}: {e})", data) from None


def _object(path: str, data: bytes | None, what: str) -> dict[str, Any]:
    """The JSON object in ``data`` (``MalformedZnode`` naming ``what`` when it is not one)."""
    obj = _json(path, data)
    if not isinstance(obj, dict):
        raise MalformedZnode(path, f"{what} is not a JSON object", data)
    return cast("dict[str, Any]", obj)


# -- consumer registration --------------------------------------------------------------------


@dataclass(frozen=True)
class Registration:
    """The payload of ``/consumers/<g>/ids/<id>``.

    ``subscription`` maps topic (static) or one regex (white_list / black_list) to a stream count.
    """

    subscription: dict[str, int]
    pattern: str = STATIC
    timestamp_ms: int | None = None
    version: int = 1

    def topics(self, all_topics: list[str] | None = None, exclude_internal: bool = True) -> dict[str, int]:
        """Topic -> stream count. Wildcards are evaluated against ``all_topics`` (children of
        ``/brokers/topics``) as ``WildcardTopicCount`` does; static subscriptions ignore it."""
        if self.pattern == STATIC or not self.subscription:
            return dict(self.subscription)
        regex_text, streams = next(iter(self.subscription.items()))
        matcher = topic_filter(regex_text, self.pattern, exclude_internal)
        return {t: streams for t in (all_topics or []) if matcher(t)}


def encode_registration(subscription: dict[str, int], timestamp_ms: int, pattern: str = STATIC) -> bytes:
    """``{"version":1,"subscription":{..},"pattern":"static","timestamp":"<ms>"}`` (0.8.2 order)."""
    return json.dumps(
        {"version": 1, "subscription": subscription, "pattern": pattern, "timestamp": str(timestamp_ms)},
        separators=(",", ":"),
    ).encode()


def decode_registration(path: str, data: bytes | None) -> Registration:
    """Parse a registration; ``pattern`` and ``subscription`` are required (as in ``TopicCount``)."""
    obj = _object(path, data, "registration")
    pattern = obj.get("pattern")
    sub = obj.get("subscription")
    if pattern not in PATTERNS:
        raise MalformedZnode(path, f"pattern must be one of {PATTERNS}, got {pattern!r}", data)
    if not isinstance(sub, dict):
        raise MalformedZnode(path, "subscription must be a JSON object", data)
    subscription: dict[str, int] = {}
    for topic, streams in cast("dict[Any, Any]", sub).items():
        if not isinstance(streams, int) or isinstance(streams, bool) or streams < 1:
            raise MalformedZnode(path, f"stream count of {topic!r} must be an integer >= 1", data)
        subscription[str(topic)] = streams
    if pattern != STATIC and len(subscription) != 1:
        raise MalformedZnode(path, "a wildcard subscription has exactly one regex", data)
    ts = obj.get("timestamp")
    try:
        timestamp_ms = int(ts) if ts is not None else None
    except (TypeError, ValueError):
        timestamp_ms = None  # informational only; 0.8 never reads it back
    version = obj.get("version", 1)
    return Registration(subscription, pattern, timestamp_ms, version if isinstance(version, int) else 1)


def normalize_filter_regex(raw: str) -> str:
    """``TopicFilter.regex``: trim, ',' -> '|', drop spaces and surrounding quotes."""
    regex = raw.strip().replace(",", "|").replace(" ", "")
    regex = re.sub(r"""^["']+""", "", regex)
    return re.sub(r"""["']+$""", "", regex)


def topic_filter(raw_regex: str, pattern: str, exclude_internal: bool = True) -> Callable[[str], bool]:
    """A predicate ``topic -> bool``: ``Whitelist`` (full match) or ``Blacklist`` (no full match).

    Java and Python regex dialects agree on the topic-name patterns people write; a regex Python
    cannot compile raises ``ValueError`` (0.8 threw "is an invalid regex").
    """
    regex = normalize_filter_regex(raw_regex)
    try:
        compiled = re.compile(regex)
    except re.error as e:
        raise ValueError(f"{regex} is an invalid regex: {e}") from None
    white = pattern == WHITE_LIST

    def allowed(topic: str) -> bool:
        if exclude_internal and topic in INTERNAL_TOPICS:
            return False
        return bool(compiled.fullmatch(topic)) == white

    return allowed


# -- topics, brokers, offsets -----------------------------------------------------------------


def encode_topic(partitions: dict[int, list[int]]) -> bytes:
    """``/brokers/topics/<t>`` payload: ``{"version":1,"partitions":{"0":[0],..}}``."""
    return json.dumps(
        {"version": 1, "partitions": {str(p): list(r) for p, r in sorted(partitions.items())}},
        separators=(",", ":"),
    ).encode()


def decode_topic_replicas(path: str, data: bytes | None) -> dict[int, list[int]]:
    """Partition -> replica list of a topic znode (``getReplicaAssignmentForTopics``)."""
    obj = _json(path, data)
    parts: Any = cast("dict[str, Any]", obj).get("partitions") if isinstance(obj, dict) else None
    if not isinstance(parts, dict):
        raise MalformedZnode(path, 'no "partitions" object', data)
    try:
        return {int(p): [int(r) for r in rs] for p, rs in cast("dict[Any, Any]", parts).items()}
    except (ValueError, TypeError):
        raise MalformedZnode(path, "partition ids and replicas must be integers", data) from None


def decode_topic_partitions(path: str, data: bytes | None) -> list[int]:
    """The partition ids of a topic znode, ascending (``getPartitionsForTopics``)."""
    obj = _json(path, data)
    parts: Any = cast("dict[str, Any]", obj).get("partitions") if isinstance(obj, dict) else None
    if not isinstance(parts, dict):
        raise MalformedZnode(path, 'no "partitions" object', data)
    try:
        return sorted(int(p) for p in cast("dict[Any, Any]", parts))
    except ValueError:
        raise MalformedZnode(path, "partition ids must be integers", data) from None


def encode_broker(host: str, port: int, timestamp_ms: int, jmx_port: int = -1) -> bytes:
    """A 0.8.2 broker registration (version 1)."""
    return json.dumps(
        {"version": 1, "host": host, "port": port, "jmx_port": jmx_port, "timestamp": str(timestamp_ms)},
        separators=(",", ":"),
    ).encode()


def encode_broker_v4(host: str, port: int, timestamp_ms: int, jmx_port: int = -1) -> bytes:
    """A broker registration of version 4 (Kafka 0.10's ``registerBrokerInZk``, one PLAINTEXT endpoint), which
    still carries the version-1 ``host`` / ``port`` that 0.8.2 consumers read; keys in the order Kafka wrote them."""
    return json.dumps(
        {
            "listener_security_protocol_map": {"PLAINTEXT": "PLAINTEXT"},
            "endpoints": [f"PLAINTEXT://{host}:{port}"],
            "jmx_port": jmx_port,
            "host": host,
            "timestamp": str(timestamp_ms),
            "port": port,
            "version": 4,
        },
        separators=(",", ":"),
    ).encode()


def decode_broker(path: str, data: bytes | None) -> tuple[str, int]:
    """``(host, port)`` of a broker registration, version 1 (host/port) or 2+ (first endpoint)."""
    obj = _object(path, data, "broker registration")
    host, port = obj.get("host"), obj.get("port")
    if isinstance(host, str) and host and isinstance(port, int) and port > 0:
        return host, port
    endpoints: Any = obj.get("endpoints") or []
    for ep in cast("list[Any]", endpoints):
        m = re.match(r"^[A-Za-z0-9_]+://\[?([^\]]*)\]?:(\d+)$", str(ep))
        if m and m.group(1):
            return m.group(1), int(m.group(2))
    raise MalformedZnode(path, "no host/port and no usable endpoint", data)


def encode_offset(offset: int) -> bytes:
    return str(offset).encode()


def decode_offset(path: str, data: bytes | None) -> int:
    """An offset znode: the decimal string of the next offset to read."""
    if data is None:
        raise MalformedZnode(path, "no data")
    try:
        return int(data.decode("ascii").strip())
    except (UnicodeDecodeError, ValueError):
        raise MalformedZnode(path, "not a decimal offset", data) from None
