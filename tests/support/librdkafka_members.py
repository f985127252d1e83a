"""librdkafka (confluent-kafka) members as processes in tests, and what they and the broker recorded.

* :func:`start_member` runs ``herdlab member coordinator --client librdkafka`` writing ``<name>.jsonl`` and
  ``<name>.log`` under ``tmp``; :func:`events` reads members' histories in time order;
  :func:`ownership` folds them with :class:`harness.kernel.ownership.GroupView` (the harness's one
  definition of who owns what).
* :func:`broker_events` reads a broker's history (``group_request``, ``rebalance_end``, ``member_added``...).
* :func:`committed` asks the broker the group's committed offsets; :func:`group_assignor` its protocol.
* :func:`produce` writes ``count`` workload records (harness producer) and returns their (partition, offset)s.
"""

from __future__ import annotations

import os
import sys
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from harness.cluster.broker import BrokerProcess
from harness.history.writer import HistoryWriter, read_events
from harness.kernel.ownership import GroupView
from harness.procs import ChildProcess, spawn
from harness.workload.producer import Producer, ProducerConfig

HERDLAB = os.path.join(os.path.dirname(sys.executable), "herdlab")


def member_argv(broker: BrokerProcess, tmp: Path, name: str, *extra: str, group: str = "g") -> list[str]:
    """The command line of a librdkafka member ``name`` of ``group`` on topic ``t``."""
    argv = [HERDLAB, "member", "coordinator", "--client", "librdkafka", "--bootstrap", broker.bootstrap]
    argv += ["--group", group, "--topic", "t", "--name", name, "--history", str(tmp / f"{name}.jsonl")]
    return argv + ["--auto-commit-interval-ms", "300", *extra]


def start_member(broker: BrokerProcess, tmp: Path, name: str, *extra: str) -> ChildProcess:
    """A running member process (see :func:`member_argv`); ``extra`` are more CLI arguments."""
    return spawn(member_argv(broker, tmp, name, *extra), name=name, log_path=tmp / f"{name}.log")


def events(tmp: Path, *names: str) -> list[dict[str, Any]]:
    """The members' events in time order (a member without a history yet has none)."""
    out: list[dict[str, Any]] = []
    for n in names:
        p = tmp / f"{n}.jsonl"
        if p.exists():
            out.extend(read_events(p))
    return sorted(out, key=lambda e: e["ts_ns"])


def ownership(tmp: Path, partitions: int, *names: str) -> GroupView:
    """Who owns what, folded from the members' histories."""
    view = GroupView(partitions=partitions)
    view.apply_all(events(tmp, *names))
    return view


def broker_events(broker: BrokerProcess, kind: str) -> list[dict[str, Any]]:
    """The broker's events of ``kind`` so far."""
    assert broker.history_path is not None
    if not broker.history_path.exists():
        return []
    return [e for e in read_events(broker.history_path) if e["kind"] == kind]


def committed(broker: BrokerProcess, partitions: int, group: str = "g") -> dict[int, int]:
    """partition -> the group's committed offset, as the broker answers OffsetFetch (a confluent-kafka
    consumer that never subscribes, so never joins; partitions without a commit are left out)."""
    from confluent_kafka import Consumer, TopicPartition

    c = Consumer({"bootstrap.servers": broker.bootstrap, "group.id": group, "log_level": 0})
    try:
        tps = c.committed([TopicPartition("t", p) for p in range(partitions)], timeout=10)
    finally:
        c.close()
    return {tp.partition: tp.offset for tp in tps if tp.offset >= 0}


def group_assignor(broker: BrokerProcess, group: str = "g") -> str:
    """The protocol (assignor) the broker chose for ``group`` (DescribeGroups)."""
    from confluent_kafka.admin import AdminClient

    admin = AdminClient({"bootstrap.servers": broker.bootstrap})
    (future,) = admin.describe_consumer_groups([group]).values()
    return future.result(timeout=10).partition_assignor


def create_topic(broker: BrokerProcess, partitions: int) -> None:
    """Topic ``t`` with ``partitions`` partitions."""
    from kafka.admin import KafkaAdminClient, NewTopic

    admin = KafkaAdminClient(bootstrap_servers=broker.bootstrap)
    try:
        admin.create_topics([NewTopic("t", partitions, 1)])
    finally:
        admin.close()


def produce(broker: BrokerProcess, tmp: Path, count: int, rate: float = 500.0, name: str = "producer") -> set:
    """Write ``count`` records to ``t``; their acknowledged (partition, offset)s."""
    path = tmp / f"{name}.jsonl"
    with HistoryWriter(path, name) as h:
        Producer(ProducerConfig(bootstrap=broker.bootstrap, topic="t", rate=rate, max_records=count), h).run()
    return {(e["partition"], e["offset"]) for e in read_events(path) if e["kind"] == "produced"}


def processed(tmp: Path, names: Sequence[str]) -> set:
    """The (partition, offset)s the members recorded as processed."""
    return {(e["partition"], e["offset"]) for e in events(tmp, *names) if e["kind"] == "record"}
