"""``herdlab broker`` (also ``python -m coordinator``): run one broker in the foreground until SIGTERM / Ctrl-C."""

from __future__ import annotations

import asyncio
import errno
import logging
from collections.abc import Callable
from pathlib import Path

import click

from coordinator.config import DEFAULT_MAX_REQUEST_BYTES, BrokerConfig, ReplicationConfig
from coordinator.core.consumer.config import ASSIGNOR_NAMES, MIGRATION_POLICIES, ConsumerGroupConfig
from coordinator.core.group.config import GroupConfig
from harness.kernel.errors import ConfigError, HerdlabError
from harness.kernel.history import History

__all__ = ["HistoryOpener", "broker", "broker_command"]

_G = GroupConfig()  # defaults (slots dataclass: read them from an instance)
_C = ConsumerGroupConfig()


HistoryOpener = Callable[[Path, str], History]
"""``(path, source) -> History``: how the caller turns ``--history FILE`` into a writer."""


def broker_command(open_history: HistoryOpener | None = None) -> click.Command:
    """The ``broker`` click command.

    The broker never opens a history itself (it may import only the kernel): with ``open_history``
    the command takes ``--history FILE`` and passes ``open_history(FILE, "broker-<id>")`` to the
    broker; without it (``python -m coordinator``) there is no ``--history`` option.
    """

    @click.command("broker")
    @click.option("--host", default="127.0.0.1", show_default=True, help="Address to listen on.")
    @click.option(
        "--port", type=int, default=9092, show_default=True, help="Port to listen on (0: any free port)."
    )
    @click.option(
        "--broker-id", type=int, default=0, show_default=True, help="broker.id (node id in Metadata)."
    )
    @click.option("--zookeeper", default=None, help="ZooKeeper connect string: register in the 0.8 layout.")
    @click.option(
        "--data-dir",
        type=click.Path(file_okay=False, path_type=Path),
        default=None,
        help="Keep partition logs and the group log here (default: in memory only).",
    )
    @click.option(
        "--history",
        "history_path",
        type=click.Path(dir_okay=False, path_type=Path),
        default=None,
        help="Write broker_request counters and group events to this JSON-lines file.",
    )
    @click.option(
        "--ready-file",
        type=click.Path(dir_okay=False, path_type=Path),
        default=None,
        help='Write {"port": ..., "pid": ...} here once the broker accepts connections.',
    )
    @click.option(
        "--advertised-host",
        default=None,
        help="Host to advertise (default: the address each client connected through).",
    )
    @click.option(
        "--num-partitions",
        type=int,
        default=1,
        show_default=True,
        help="num.partitions: partitions of auto-created topics.",
    )
    @click.option(
        "--auto-create-topics/--no-auto-create-topics",
        default=True,
        show_default=True,
        help="auto.create.topics.enable",
    )
    @click.option(
        "--offsets-partitions",
        type=int,
        default=50,
        show_default=True,
        help="offsets.topic.num.partitions (FindCoordinator's hash modulus with several brokers).",
    )
    @click.option(
        "--max-request-bytes",
        type=int,
        default=DEFAULT_MAX_REQUEST_BYTES,
        show_default=True,
        help="socket.request.max.bytes: larger frames close the connection.",
    )
    @click.option(
        "--metrics-interval",
        type=float,
        default=1.0,
        show_default=True,
        help="Seconds between broker_request history events (0: only at shutdown).",
    )
    @click.option(
        "--group-min-session-timeout-ms",
        type=int,
        default=_G.min_session_timeout_ms,
        show_default=True,
        help="group.min.session.timeout.ms",
    )
    @click.option(
        "--group-max-session-timeout-ms",
        type=int,
        default=_G.max_session_timeout_ms,
        show_default=True,
        help="group.max.session.timeout.ms",
    )
    @click.option(
        "--group-initial-rebalance-delay-ms",
        type=int,
        default=_G.initial_rebalance_delay_ms,
        show_default=True,
        help="group.initial.rebalance.delay.ms",
    )
    @click.option("--group-max-size", type=int, default=_G.max_size, show_default=True, help="group.max.size")
    @click.option(
        "--offset-metadata-max-bytes",
        type=int,
        default=_G.offset_metadata_max_bytes,
        show_default=True,
        help="offset.metadata.max.bytes",
    )
    @click.option(
        "--consumer-heartbeat-interval-ms",
        type=int,
        default=_C.heartbeat_interval_ms,
        show_default=True,
        help="group.consumer.heartbeat.interval.ms: the interval the consumer protocol's members heartbeat at.",
    )
    @click.option(
        "--consumer-min-heartbeat-interval-ms",
        type=int,
        default=_C.min_heartbeat_interval_ms,
        show_default=True,
        help="group.consumer.min.heartbeat.interval.ms",
    )
    @click.option(
        "--consumer-max-heartbeat-interval-ms",
        type=int,
        default=_C.max_heartbeat_interval_ms,
        show_default=True,
        help="group.consumer.max.heartbeat.interval.ms",
    )
    @click.option(
        "--consumer-session-timeout-ms",
        type=int,
        default=_C.session_timeout_ms,
        show_default=True,
        help="group.consumer.session.timeout.ms: a consumer-protocol member without a heartbeat this long is "
        "removed.",
    )
    @click.option(
        "--consumer-min-session-timeout-ms",
        type=int,
        default=_C.min_session_timeout_ms,
        show_default=True,
        help="group.consumer.min.session.timeout.ms",
    )
    @click.option(
        "--consumer-max-session-timeout-ms",
        type=int,
        default=_C.max_session_timeout_ms,
        show_default=True,
        help="group.consumer.max.session.timeout.ms",
    )
    @click.option(
        "--consumer-max-size",
        type=int,
        default=_C.max_size,
        show_default=True,
        help="group.consumer.max.size",
    )
    @click.option(
        "--consumer-assignors",
        default=",".join(_C.assignors),
        show_default=True,
        help=f"group.consumer.assignors: server-side assignors by name ({', '.join(ASSIGNOR_NAMES)}), "
        "comma-separated; the first is the default.",
    )
    @click.option(
        "--consumer-migration-policy",
        type=click.Choice(MIGRATION_POLICIES, case_sensitive=False),
        default=_C.migration_policy,
        show_default=True,
        help="group.consumer.migration.policy: the online migration between classic and consumer groups "
        "(single-broker mode; upgrade: a classic group converts when a consumer-protocol member joins; downgrade: "
        "back when its last consumer-protocol member leaves). Replicated mode converts nothing.",
    )
    @click.option(
        "--replication/--no-replication",
        default=False,
        show_default=True,
        help="Run 0.9 replication: a controller, leaders and followers, the coordinator following "
        "__consumer_offsets leadership (needs --zookeeper).",
    )
    @click.option(
        "--default-replication-factor",
        type=int,
        default=None,
        help="default.replication.factor of new topics (default: min(3, live brokers)).",
    )
    @click.option(
        "--offsets-topic-replication-factor",
        type=int,
        default=3,
        show_default=True,
        help="offsets.topic.replication.factor (min(this, live brokers) at creation).",
    )
    @click.option(
        "--replica-lag-time-max-ms",
        type=int,
        default=10_000,
        show_default=True,
        help="replica.lag.time.max.ms",
    )
    @click.option("--min-insync-replicas", type=int, default=1, show_default=True, help="min.insync.replicas")
    @click.option(
        "--unclean-leader-election/--no-unclean-leader-election",
        default=False,
        show_default=True,
        help="unclean.leader.election.enable (elect an out-of-sync replica when no in-sync one lives).",
    )
    @click.option(
        "--offsets-commit-required-acks",
        type=int,
        default=-1,
        show_default=True,
        help="offsets.commit.required.acks",
    )
    @click.option(
        "--offsets-commit-timeout-ms",
        type=int,
        default=5000,
        show_default=True,
        help="offsets.commit.timeout.ms",
    )
    def broker(
        host: str,
        port: int,
        broker_id: int,
        zookeeper: str | None,
        data_dir: Path | None,
        ready_file: Path | None,
        advertised_host: str | None,
        num_partitions: int,
        auto_create_topics: bool,
        offsets_partitions: int,
        max_request_bytes: int,
        metrics_interval: float,
        group_min_session_timeout_ms: int,
        group_max_session_timeout_ms: int,
        group_initial_rebalance_delay_ms: int,
        group_max_size: int,
        offset_metadata_max_bytes: int,
        consumer_heartbeat_interval_ms: int,
        consumer_min_heartbeat_interval_ms: int,
        consumer_max_heartbeat_interval_ms: int,
        consumer_session_timeout_ms: int,
        consumer_min_session_timeout_ms: int,
        consumer_max_session_timeout_ms: int,
        consumer_max_size: int,
        consumer_assignors: str,
        consumer_migration_policy: str,
        replication: bool,
        default_replication_factor: int | None,
        offsets_topic_replication_factor: int,
        replica_lag_time_max_ms: int,
        min_insync_replicas: int,
        unclean_leader_election: bool,
        offsets_commit_required_acks: int,
        offsets_commit_timeout_ms: int,
        history_path: Path | None = None,
    ) -> None:
        """Run a Kafka-protocol broker with the classic group coordinator (kio wire codec).

        Serves ApiVersions, Metadata, CreateTopics, CreatePartitions, Produce, Fetch, ListOffsets,
        InitProducerId, DescribeCluster and the group APIs to unmodified Kafka clients, the consumer group
        protocol (KIP-848: ConsumerGroupHeartbeat, ConsumerGroupDescribe) included, set with the --consumer-*
        options (Kafka 4's group.consumer.* defaults).
        """
        # deferred: start-up: the broker (kio wire codec) loads when the command runs, not for `herdlab --help`
        from coordinator.server import run_broker

        log = logging.getLogger("coordinator")
        if log.getEffectiveLevel() > logging.INFO:
            log.setLevel(logging.INFO)  # group transitions are always logged
        try:
            group = GroupConfig(
                min_session_timeout_ms=group_min_session_timeout_ms,
                max_session_timeout_ms=group_max_session_timeout_ms,
                initial_rebalance_delay_ms=group_initial_rebalance_delay_ms,
                max_size=group_max_size,
                offset_metadata_max_bytes=offset_metadata_max_bytes,
            )
            consumer = ConsumerGroupConfig(
                heartbeat_interval_ms=consumer_heartbeat_interval_ms,
                min_heartbeat_interval_ms=consumer_min_heartbeat_interval_ms,
                max_heartbeat_interval_ms=consumer_max_heartbeat_interval_ms,
                session_timeout_ms=consumer_session_timeout_ms,
                min_session_timeout_ms=consumer_min_session_timeout_ms,
                max_session_timeout_ms=consumer_max_session_timeout_ms,
                max_size=consumer_max_size,
                assignors=tuple(a.strip() for a in consumer_assignors.split(",") if a.strip()),
                offset_metadata_max_bytes=offset_metadata_max_bytes,
                migration_policy=consumer_migration_policy.lower(),
            )
        except ValueError as e:
            raise ConfigError(str(e)) from None
        config = BrokerConfig(
            host=host,
            port=port,
            broker_id=broker_id,
            advertised_host=advertised_host,
            zookeeper=zookeeper,
            data_dir=data_dir,
            auto_create_topics=auto_create_topics,
            num_partitions=num_partitions,
            offsets_partitions=offsets_partitions,
            max_request_bytes=max_request_bytes,
            metrics_interval_s=metrics_interval,
            ready_file=ready_file,
            group=group,
            consumer=consumer,
            replication=ReplicationConfig(
                enabled=replication,
                default_replication_factor=default_replication_factor,
                offsets_topic_replication_factor=offsets_topic_replication_factor,
                replica_lag_time_max_ms=replica_lag_time_max_ms,
                min_insync_replicas=min_insync_replicas,
                unclean_leader_election=unclean_leader_election,
                offsets_commit_required_acks=offsets_commit_required_acks,
                offsets_commit_timeout_ms=offsets_commit_timeout_ms,
            ),
        )
        try:
            history = (
                open_history(history_path, f"broker-{broker_id}") if open_history and history_path else None
            )
            asyncio.run(run_broker(config, history))
        except OSError as e:
            if e.errno in (errno.EADDRINUSE, errno.EADDRNOTAVAIL, errno.EACCES):
                raise HerdlabError(f"cannot listen on {host}:{port}: {e.strerror}") from None
            raise

    if open_history is None:
        broker.params = [p for p in broker.params if p.name != "history_path"]
    return broker


broker = broker_command()
