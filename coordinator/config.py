"""Broker settings (everything but the group coordinators' own :class:`GroupConfig` and
:class:`ConsumerGroupConfig`)."""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path

from coordinator.core.consumer.config import ConsumerGroupConfig
from coordinator.core.group.config import GroupConfig
from harness.kernel.errors import ConfigError

__all__ = ["BrokerConfig", "DEFAULT_MAX_REQUEST_BYTES", "ReplicationConfig"]

#: Kafka's ``socket.request.max.bytes`` default (100 MiB).
DEFAULT_MAX_REQUEST_BYTES = 104_857_600


@dataclass(frozen=True, slots=True)
class ReplicationConfig:
    """Replication and controller settings, Kafka's names and 0.9.0.1 defaults unless said.

    * ``enabled``: run the 0.9 replication design: a controller elected through ``/controller``, partition
      state znodes, leaders and followers, the group coordinator following ``__consumer_offsets``
      leadership. Off (the default) keeps the single-broker design: every broker leads what it creates.
      Needs ``zookeeper``.
    * ``default_replication_factor``: ``default.replication.factor`` of auto-created and CreateTopics(-1)
      topics; ``None`` (herdlab's default) means min(3, live brokers) (Kafka's is 1).
    * ``offsets_topic_replication_factor``: ``offsets.topic.replication.factor`` (3); fewer live brokers at
      creation give min(3, live), as 0.9's ``GroupCoordinator`` does.
    * ``replica_lag_time_max_ms`` (10000), ``min_insync_replicas`` (1), ``unclean_leader_election``
      (``unclean.leader.election.enable``: off here; 0.9's default was on),
      ``replica_fetch_wait_max_ms`` (500), ``replica_fetch_max_bytes`` (1 MiB),
      ``offsets_commit_required_acks`` (-1), ``offsets_commit_timeout_ms`` (5000),
      ``controller_socket_timeout_ms`` (30000).
    """

    enabled: bool = False
    default_replication_factor: int | None = None
    offsets_topic_replication_factor: int = 3
    replica_lag_time_max_ms: int = 10_000
    min_insync_replicas: int = 1
    unclean_leader_election: bool = False
    replica_fetch_wait_max_ms: int = 500
    replica_fetch_max_bytes: int = 1_048_576
    offsets_commit_required_acks: int = -1
    offsets_commit_timeout_ms: int = 5_000
    controller_socket_timeout_ms: int = 30_000

    def __post_init__(self) -> None:
        if self.default_replication_factor is not None and self.default_replication_factor < 1:
            raise ConfigError("default.replication.factor must be >= 1")
        if self.offsets_topic_replication_factor < 1:
            raise ConfigError("offsets.topic.replication.factor must be >= 1")
        if self.min_insync_replicas < 1:
            raise ConfigError("min.insync.replicas must be >= 1")
        if self.replica_lag_time_max_ms < 1:
            raise ConfigError("replica.lag.time.max.ms must be >= 1")
        if self.offsets_commit_required_acks not in (-1, 0, 1):
            raise ConfigError("offsets.commit.required.acks must be -1, 0 or 1")
        if self.offsets_commit_timeout_ms < 1:
            raise ConfigError("offsets.commit.timeout.ms must be >= 1")


@dataclass(frozen=True, slots=True)
class BrokerConfig:
    """How one broker process runs.

    * ``host`` / ``port``: where it listens (port 0: any free port; the real one is in the ready
      file). Loopback only is the harness's rule, not enforced here.
    * ``broker_id``: ``broker.id``; also the node id in Metadata and FindCoordinator.
    * ``advertised_host``: the host put in Metadata / FindCoordinator. None (the default) means
      *the address the client connected through* (see :mod:`coordinator.server`).
    * ``zookeeper``: ZooKeeper connect string for 0.8-style registration, or None.
    * ``data_dir``: where partition logs and the group log live; None keeps everything in memory.
    * ``auto_create_topics`` / ``num_partitions``: ``auto.create.topics.enable`` and the partition
      count of auto-created topics (``num.partitions``).
    * ``offsets_partitions``: ``offsets.topic.num.partitions``, the modulus of FindCoordinator's
      ``partitionFor(group)`` when there are several brokers.
    * ``max_request_bytes``: ``socket.request.max.bytes``; a larger frame closes the connection.
    * ``metrics_interval_s``: how often request counters go to the history (0: only at shutdown).
    * ``ready_file``: written (``{"port": ..., "pid": ...}``) once the broker accepts connections.
    * ``group``: the group coordinator's settings.
    * ``consumer``: the consumer group protocol's settings (Kafka 4's ``group.consumer.*``).
    * ``replication``: replication and the controller (:class:`ReplicationConfig`; off by default).
    """

    host: str = "127.0.0.1"
    port: int = 0
    broker_id: int = 0
    advertised_host: str | None = None
    zookeeper: str | None = None
    data_dir: Path | None = None
    auto_create_topics: bool = True
    num_partitions: int = 1
    offsets_partitions: int = 50
    max_request_bytes: int = DEFAULT_MAX_REQUEST_BYTES
    metrics_interval_s: float = 1.0
    ready_file: Path | None = None
    cluster_id: str = "herdlab-cluster"
    group: GroupConfig = field(default_factory=GroupConfig)
    consumer: ConsumerGroupConfig = field(default_factory=ConsumerGroupConfig)
    replication: ReplicationConfig = field(default_factory=ReplicationConfig)

    def __post_init__(self) -> None:
        if not 0 <= self.port <= 65535:
            raise ConfigError(f"port must be in [0, 65535], got {self.port}")
        if self.broker_id < 0:
            raise ConfigError(f"broker id must be >= 0, got {self.broker_id}")
        if self.num_partitions < 1:
            raise ConfigError(f"num.partitions must be >= 1, got {self.num_partitions}")
        if self.offsets_partitions < 1:
            raise ConfigError(f"offsets.topic.num.partitions must be >= 1, got {self.offsets_partitions}")
        if self.max_request_bytes < 1024:
            raise ConfigError(f"max request bytes must be >= 1024, got {self.max_request_bytes}")
        if self.metrics_interval_s < 0:
            raise ConfigError("metrics interval must be >= 0")
        if self.replication.enabled and not self.zookeeper:
            raise ConfigError(
                "--replication needs --zookeeper (the controller and partition states live there)"
            )
