# pyright: strict
"""Member configuration: the 0.8 consumer property names, their defaults, and herdlab's extras.

Contract
--------
* :class:`ConsumerConfig` holds one member's settings as attributes; :data:`PROPERTIES` maps every
  supported 0.8 property name (``rebalance.max.retries`` ...) to its attribute, so options, property
  files and ``-X key=value`` all speak the 0.8 names (spec 1.2).
* Defaults are 0.8.2's: session 6000 ms, connection timeout = session timeout, sync time 2000 ms,
  4 rebalance attempts, backoff = sync time, ``range``, auto commit on every 60000 ms,
  ``auto.offset.reset=largest``.
* :meth:`ConsumerConfig.validate` raises :class:`harness.kernel.errors.ConfigError` with one line naming
  the property.
* Offset storage as 0.8.2.2's ``ConsumerConfig``: ``offsets.storage`` zookeeper (default) | kafka
  (lower-cased, as 0.8.2 did); ``dual.commit.enabled`` defaults to ``offsets.storage == kafka`` (None
  here = that default, see :attr:`ConsumerConfig.dual_commit`); ``offsets.commit.max.retries`` (5),
  ``offsets.channel.backoff.ms`` (1000), ``offsets.channel.socket.timeout.ms`` (10000). With kafka
  storage the offset manager is found through ``bootstrap.servers`` or, like the fetcher, the brokers
  registered under ``/brokers/ids`` (:mod:`legacy_zk.offset_channel`).
* herdlab extras (not 0.8 properties, off by default): ``takeover.delay.ms`` (mitigation a),
  ``offsets.commit.fenced`` (mitigation b), ``herdlab.fetch`` (false = coordination-only member,
  no kafka-python fetcher), ``bootstrap.servers`` (where the fetcher connects; default: the
  brokers registered under ``/brokers/ids``).
* ZooKeeper client timing (herdlab extras, defaulting to what 0.8.2 did with the ZooKeeper 3.4.6
  Java client and one server): before each reconnect attempt wait ``herdlab.zk.reconnect.delay.ms``
  (1000) plus a random ``0 .. herdlab.zk.reconnect.random.ms`` (1000), see :mod:`legacy_zk.reconnect`.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from typing import Any

from harness.kernel.errors import ConfigError
from legacy_zk.assignors import STRATEGIES


def _bool(v: str) -> bool:
    s = str(v).strip().lower()
    if s in ("true", "1", "yes", "on"):
        return True
    if s in ("false", "0", "no", "off"):
        return False
    raise ValueError(f"not a boolean: {v!r}")


@dataclass
class ConsumerConfig:
    """One member's configuration (attribute names are the 0.8 names with ``_`` for ``.``)."""

    group_id: str
    zookeeper_connect: str
    #: topic -> number of streams (0.8's ``topicCountMap`` given to ``createMessageStreams``).
    topics: dict[str, int] = field(default_factory=dict[str, int])
    consumer_id: str | None = None
    zookeeper_session_timeout_ms: int = 6000
    #: None means "= zookeeper.session.timeout.ms" (0.8's default).
    zookeeper_connection_timeout_ms: int | None = None
    zookeeper_sync_time_ms: int = 2000
    rebalance_max_retries: int = 4
    #: None means "= zookeeper.sync.time.ms" (0.8's default).
    rebalance_backoff_ms: int | None = None
    partition_assignment_strategy: str = "range"
    auto_commit_enable: bool = True
    auto_commit_interval_ms: int = 60000
    auto_offset_reset: str = "largest"
    offsets_storage: str = "zookeeper"
    #: None means "= (offsets.storage == kafka)" (0.8.2's default)
    dual_commit_enabled: bool | None = None
    offsets_commit_max_retries: int = 5
    offsets_channel_backoff_ms: int = 1000
    offsets_channel_socket_timeout_ms: int = 10000
    exclude_internal_topics: bool = True
    client_id: str | None = None
    # -- herdlab extras --
    bootstrap_servers: str | None = None
    fetch: bool = True
    takeover_delay_ms: int = 0
    offsets_commit_fenced: bool = False
    #: reconnect timing: fixed wait and upper bound of the random wait before each reconnect attempt
    zk_reconnect_delay_ms: int = 1000
    zk_reconnect_random_ms: int = 1000
    #: the harness's name for this member: the ``source`` of its history events (default: the consumer id)
    name: str | None = None

    # -- derived ------------------------------------------------------------------------------
    @property
    def connection_timeout_ms(self) -> int:
        """``zookeeper.connection.timeout.ms`` with its default applied."""
        if self.zookeeper_connection_timeout_ms is None:
            return self.zookeeper_session_timeout_ms
        return self.zookeeper_connection_timeout_ms

    @property
    def backoff_ms(self) -> int:
        """``rebalance.backoff.ms`` with its default (``zookeeper.sync.time.ms``) applied."""
        return self.zookeeper_sync_time_ms if self.rebalance_backoff_ms is None else self.rebalance_backoff_ms

    @property
    def dual_commit(self) -> bool:
        """``dual.commit.enabled`` with its default (``offsets.storage == kafka``) applied."""
        if self.dual_commit_enabled is None:
            return self.offsets_storage == "kafka"
        return self.dual_commit_enabled

    def validate(self) -> ConsumerConfig:
        """Check every value; raise ConfigError naming the 0.8 property. Returns ``self``."""

        def bad(prop: str, why: str) -> ConfigError:
            return ConfigError(f"{prop}: {why}")

        if not self.group_id:
            raise bad("group.id", "required")
        if not self.zookeeper_connect:
            raise bad("zookeeper.connect", "required (HOST:PORT[,HOST:PORT...])")
        if not self.topics:
            raise ConfigError("no topic to consume: give at least one --topic")
        for t, n in self.topics.items():
            if not t or "/" in t:
                raise ConfigError(f"invalid topic name {t!r}")
            if n < 1:
                raise ConfigError(f"topic {t}: the stream count must be >= 1, got {n}")
        for prop, attr, low in (
            ("zookeeper.session.timeout.ms", "zookeeper_session_timeout_ms", 1),
            ("zookeeper.sync.time.ms", "zookeeper_sync_time_ms", 0),
            ("rebalance.max.retries", "rebalance_max_retries", 1),
            ("auto.commit.interval.ms", "auto_commit_interval_ms", 1),
            ("takeover.delay.ms", "takeover_delay_ms", 0),
            ("herdlab.zk.reconnect.delay.ms", "zk_reconnect_delay_ms", 0),
            ("herdlab.zk.reconnect.random.ms", "zk_reconnect_random_ms", 0),
            ("offsets.commit.max.retries", "offsets_commit_max_retries", 0),
            ("offsets.channel.backoff.ms", "offsets_channel_backoff_ms", 0),
            ("offsets.channel.socket.timeout.ms", "offsets_channel_socket_timeout_ms", 1),
        ):
            if getattr(self, attr) < low:
                raise bad(prop, f"must be >= {low}, got {getattr(self, attr)}")
        if self.zookeeper_connection_timeout_ms is not None and self.zookeeper_connection_timeout_ms < 1:
            raise bad("zookeeper.connection.timeout.ms", "must be >= 1")
        if self.rebalance_backoff_ms is not None and self.rebalance_backoff_ms < 0:
            raise bad("rebalance.backoff.ms", "must be >= 0")
        # 0.8 silently treats anything but "roundrobin" as range; refusing a typo helps people more.
        if self.partition_assignment_strategy not in STRATEGIES:
            raise bad("partition.assignment.strategy", f"must be one of {', '.join(STRATEGIES)}")
        if self.auto_offset_reset not in ("smallest", "largest"):
            raise bad("auto.offset.reset", f"must be smallest or largest, got {self.auto_offset_reset!r}")
        if self.offsets_storage not in ("zookeeper", "kafka"):
            raise bad("offsets.storage", f"must be zookeeper or kafka, got {self.offsets_storage!r}")
        if self.consumer_id is not None and ("/" in self.consumer_id or not self.consumer_id):
            raise bad("consumer.id", "must be a non-empty string without '/'")
        return self

    def replace(self, **changes: Any) -> ConsumerConfig:
        """A copy with ``changes`` applied (attribute names)."""
        return dataclasses.replace(self, **changes)

    def as_properties(self) -> dict[str, Any]:
        """The effective settings under their property names (for logs and the ``started`` event)."""
        out: dict[str, Any] = {}
        for prop, (attr, _parse) in PROPERTIES.items():
            value = getattr(self, attr)
            if attr == "zookeeper_connection_timeout_ms":
                value = self.connection_timeout_ms
            elif attr == "rebalance_backoff_ms":
                value = self.backoff_ms
            elif attr == "dual_commit_enabled":
                value = self.dual_commit
            out[prop] = value
        return out


#: 0.8 property name (and herdlab extras) -> (attribute, parser of the string form).
PROPERTIES: dict[str, tuple[str, Callable[[str], Any]]] = {
    "group.id": ("group_id", str),
    "consumer.id": ("consumer_id", str),
    "client.id": ("client_id", str),
    "zookeeper.connect": ("zookeeper_connect", str),
    "zookeeper.session.timeout.ms": ("zookeeper_session_timeout_ms", int),
    "zookeeper.connection.timeout.ms": ("zookeeper_connection_timeout_ms", int),
    "zookeeper.sync.time.ms": ("zookeeper_sync_time_ms", int),
    "rebalance.max.retries": ("rebalance_max_retries", int),
    "rebalance.backoff.ms": ("rebalance_backoff_ms", int),
    "partition.assignment.strategy": ("partition_assignment_strategy", str),
    "auto.commit.enable": ("auto_commit_enable", _bool),
    "auto.commit.interval.ms": ("auto_commit_interval_ms", int),
    "auto.offset.reset": ("auto_offset_reset", str),
    "offsets.storage": ("offsets_storage", lambda v: str(v).strip().lower()),
    "dual.commit.enabled": ("dual_commit_enabled", _bool),
    "offsets.commit.max.retries": ("offsets_commit_max_retries", int),
    "offsets.channel.backoff.ms": ("offsets_channel_backoff_ms", int),
    "offsets.channel.socket.timeout.ms": ("offsets_channel_socket_timeout_ms", int),
    "exclude.internal.topics": ("exclude_internal_topics", _bool),
    "bootstrap.servers": ("bootstrap_servers", str),
    "herdlab.fetch": ("fetch", _bool),
    "takeover.delay.ms": ("takeover_delay_ms", int),
    "offsets.commit.fenced": ("offsets_commit_fenced", _bool),
    "herdlab.zk.reconnect.delay.ms": ("zk_reconnect_delay_ms", int),
    "herdlab.zk.reconnect.random.ms": ("zk_reconnect_random_ms", int),
}


def parse_properties(props: Mapping[str, str]) -> dict[str, Any]:
    """Turn ``{property: string}`` into ``{attribute: value}``; unknown names are a ConfigError."""
    out: dict[str, Any] = {}
    for name, raw in props.items():
        if name not in PROPERTIES:
            known = ", ".join(sorted(PROPERTIES))
            raise ConfigError(f"unknown consumer property {name!r} (known: {known})")
        attr, parse = PROPERTIES[name]
        try:
            out[attr] = parse(raw)
        except ValueError as e:
            raise ConfigError(f"{name}: {e}") from None
    return out


def read_properties_file(path: str) -> dict[str, str]:
    """A Java-style ``.properties`` file (``key=value`` or ``key: value``, ``#``/``!`` comments)."""
    out: dict[str, str] = {}
    try:
        with open(path, encoding="utf-8") as f:
            for raw in f:
                line = raw.strip()
                if not line or line[0] in "#!":
                    continue
                sep = min((i for i in (line.find("="), line.find(":")) if i >= 0), default=-1)
                if sep < 0:
                    raise ConfigError(f"{path}: not a key=value line: {line!r}")
                out[line[:sep].strip()] = line[sep + 1 :].strip()
    except OSError as e:
        raise ConfigError(f"cannot read properties file {path}: {e.strerror}") from None
    return out
