"""Round trips of a joining and of a steady ConsumerGroupHeartbeat, timed from a raw client: Apache Kafka 4
directly and through herdlab's Kafka tap (with ``group.coordinator.append.linger.ms`` at its default and at 0),
and herdlab's broker directly for reference.

Each trial is a fresh member on a fresh connection, as a joining librdkafka member reaches its coordinator:
connect, ApiVersions, the joining heartbeat (epoch 0, subscription, rebalance timeout), the steady one (its
epoch back, nothing else), then its leave (not timed). The group holds ``BASE`` members that joined first, so
each joiner is the group's seventh as in the consumer-fidelity scenario's join. Trials alternate between the
paths so that the machine's load falls on both alike.

Then, on the same brokers, librdkafka members (``group.protocol=consumer``) join one after another, and
their own ``protocol`` and ``cgrp`` debug lines give what the consumer-fidelity scenario reads: the round trips of the
coordinator connection's ApiVersions and of the joining heartbeat, and the time from the FindCoordinator
answer to the joining heartbeat's answer, and from the first FindCoordinator sent to that answer, apart for
the joins whose first FindCoordinator librdkafka lost with its bootstrap connection. Prints, per path and step, the median and range in milliseconds.

A measurement, not a test (pytest does not collect it); opt-in, as the ``kafka`` tests (Apache Kafka's
jars, fetched into herdlab's cache)::

    PYTHONPATH=$PWD .venv/bin/python -m tests.integration.kafka.heartbeat_latency [trials [joiners]]
"""

from __future__ import annotations

import logging
import re
import statistics
import sys
import tempfile
import time
import uuid
from collections import defaultdict
from collections.abc import Callable
from pathlib import Path
from typing import Any

from confluent_kafka import Consumer
from kafka.admin import KafkaAdminClient, NewTopic
from kio.index import load_request_schema
from kio.static.primitive import i8

from harness.cluster.apache_kafka import ApacheKafkaCluster
from harness.cluster.broker import BrokerProcess
from harness.cluster.kafka_dist import fetch
from tests.support.kio_wire import KioClient, cgh

HB = 68
API_VERSIONS = 18
FIND_COORDINATOR = 10
BASE = 6
PARTITIONS = 12
TOPIC = "t"
LINGER = "group.coordinator.append.linger.ms"

Timings = dict[str, list[float]]


def _ms(start: int) -> float:
    return (time.perf_counter_ns() - start) / 1e6


def _join(client: KioClient, group: str, member: str) -> Any:
    return client.call(HB, 1, cgh(1, group, member, 0, topics=(TOPIC,), owned=(), rebalance_timeout_ms=30000))


def _ready(host: str, port: int, group: str, deadline_s: float = 60.0) -> None:
    """Join ``BASE`` members once the coordinator answers without an error (Kafka creates
    ``__consumer_offsets`` at the first FindCoordinator, then loads it)."""
    deadline = time.monotonic() + deadline_s
    with KioClient(host, port) as c:
        c.call(
            FIND_COORDINATOR,
            4,
            _schema(FIND_COORDINATOR, 4)(key_type=i8(0), coordinator_keys=(group,)),
        )
        joined = 0
        while joined < BASE:
            r = _join(c, group, str(uuid.uuid4()))
            if r.error_code.value == 0:
                joined += 1
            elif time.monotonic() > deadline:
                raise TimeoutError(f"{group}: the coordinator still answers {r.error_code}")
            else:
                time.sleep(
                    0.2
                )  # polling a broker that is loading its offsets topic, not synchronising a test


def trial(host: str, port: int, group: str, into: Timings) -> None:
    """One fresh member on a fresh connection: the four steps' times into ``into``."""
    t = time.perf_counter_ns()
    client = KioClient(host, port)
    into["connect"].append(_ms(t))
    try:
        t = time.perf_counter_ns()
        client.call(
            API_VERSIONS,
            3,
            _schema(API_VERSIONS, 3)(client_software_name="herdlab", client_software_version="0"),
        )
        into["api_versions"].append(_ms(t))
        member = str(uuid.uuid4())
        t = time.perf_counter_ns()
        joined = _join(client, group, member)
        into["join"].append(_ms(t))
        assert joined.error_code.value == 0, joined.error_code
        t = time.perf_counter_ns()
        steady = client.call(HB, 1, cgh(1, group, member, joined.member_epoch))
        into["steady"].append(_ms(t))
        assert steady.error_code.value == 0, steady.error_code
        client.call(HB, 1, cgh(1, group, member, -1))
    finally:
        client.close()


def run_paths(paths: dict[str, tuple[str, int]], trials: int) -> dict[str, Timings]:
    """Per path (in ``paths``' order): its ``BASE`` members, then at once its first trial (the step names
    prefixed ``first``: on a broker just started, the seventh join it serves for the first path); then
    ``trials`` more, alternating between the paths."""
    out: dict[str, Timings] = defaultdict(lambda: defaultdict(list))
    for name, (host, port) in paths.items():
        _ready(host, port, f"g-{name}")
        first: Timings = defaultdict(list)
        trial(host, port, f"g-{name}", first)
        for step, values in first.items():
            out[name][f"first {step}"] = values
    for _ in range(trials):
        for name, (host, port) in paths.items():
            trial(host, port, f"g-{name}", out[name])
    return out


def _topic(bootstrap: str) -> None:
    admin = KafkaAdminClient(bootstrap_servers=bootstrap)
    admin.create_topics([NewTopic(TOPIC, PARTITIONS, 1)])  # pyright: ignore[reportUnknownMemberType]
    admin.close()


def kafka(
    trials: int, settings: dict[str, str], label: str, tap_first: bool = False, joiners: int = 0
) -> dict[str, Timings]:
    """A fresh Apache Kafka 4 broker: the trials directly and through its tap (``tap_first``: the tap's
    path is the first served), then ``joiners`` librdkafka joins (through the tap, which the broker
    advertises)."""
    with tempfile.TemporaryDirectory(prefix="hb-latency-") as tmp:
        cluster = ApacheKafkaCluster("4", settings=settings, workdir=Path(tmp) / "kafka", history_dir=tmp)
        with cluster:
            _topic(cluster.bootstrap)
            direct = int(cluster.properties["listeners"].split(",")[0].rpartition(":")[2])
            assert cluster.tap is not None
            paths = [
                (f"{label} direct", ("127.0.0.1", direct)),
                (f"{label} tap", ("127.0.0.1", cluster.tap.port)),
            ]
            out = run_paths(dict(reversed(paths) if tap_first else paths), trials)
            if joiners:
                _ready("127.0.0.1", cluster.tap.port, "g-librdkafka")
                librdkafka_joins(cluster.bootstrap, "g-librdkafka", joiners, out[f"{label} librdkafka (tap)"])
            return out


def herdlab(trials: int, joiners: int = 0) -> dict[str, Timings]:
    """herdlab's broker: the trials, then ``joiners`` librdkafka joins, all directly."""
    with BrokerProcess() as broker:
        _topic(broker.bootstrap)
        host, _, port = broker.bootstrap.rpartition(":")
        out = run_paths({"herdlab direct": (host, int(port))}, trials)
        if joiners:
            _ready(host, int(port), "g-librdkafka")
            librdkafka_joins(broker.bootstrap, "g-librdkafka", joiners, out["herdlab librdkafka"])
        return out


class _Log(logging.Handler):
    """librdkafka's debug lines, each with the moment it was logged."""

    def __init__(self) -> None:
        super().__init__()
        self.lines: list[tuple[float, str]] = []

    def emit(self, record: logging.LogRecord) -> None:
        self.lines.append((time.perf_counter(), record.getMessage()))


def _first(lines: list[tuple[float, str]], text: str) -> tuple[float, str]:
    return next((t, m) for t, m in lines if text in m)


def _rtt(line: str) -> float:
    """The round trip librdkafka measured, from its ``Received ...Response (..., rtt 1.23ms)`` line."""
    found = re.search(r"rtt ([0-9.]+)ms", line)
    assert found, line
    return float(found.group(1))


def _schema(api_key: int, version: int) -> Any:
    return load_request_schema(api_key, version)


def librdkafka_joins(bootstrap: str, group: str, joiners: int, into: Timings) -> None:
    """``joiners`` librdkafka members (``group.protocol=consumer``), one after another, each joining
    ``group`` and leaving a second later. From librdkafka's ``protocol`` debug lines: the round trips it
    measured of its coordinator connection's ApiVersions and of its joining heartbeat, and the time from
    its first FindCoordinator answer to its joining heartbeat's answer (the interval the scenario reads
    from the broker's side)."""
    for i in range(joiners):
        log = _Log()
        logger = logging.getLogger(f"{__name__}.{group}.{i}")
        logger.setLevel(logging.DEBUG)
        logger.addHandler(log)
        logger.propagate = False
        consumer = Consumer(
            {
                "bootstrap.servers": bootstrap,
                "group.id": group,
                "group.protocol": "consumer",
                "debug": "protocol,cgrp",
                "logger": logger,
            }
        )
        consumer.subscribe([TOPIC])
        end = time.monotonic() + 1.0
        while time.monotonic() < end:
            consumer.poll(0.1)
        consumer.close()

        found_at, _ = _first(log.lines, "Received FindCoordinatorResponse")
        answered_at, heartbeat = _first(log.lines, "Received ConsumerGroupHeartbeatResponse")
        api_versions = next(
            m for _, m in log.lines if "GroupCoordinator/" in m and "Received ApiVersionResponse" in m
        )
        into["coord api_versions"].append(_rtt(api_versions))
        into["join (rtt)"].append(_rtt(heartbeat))
        into["FindCoordinator->join"].append((answered_at - found_at) * 1000)
        # librdkafka may drop its bootstrap connection (the broker learned from Metadata replaces it) while
        # the first FindCoordinator is on it; that one is never read and is sent again on a new connection
        asked_at, _ = _first(log.lines, "Sent FindCoordinatorRequest")
        lost = any("FindCoordinator" in m and "Broker handle destroyed" in m for _, m in log.lines)
        into["1st FC sent->join, " + ("FC lost" if lost else "FC kept")].append(
            (answered_at - asked_at) * 1000
        )


def report(results: dict[str, Timings], write: Callable[[str], object] = print) -> None:
    write(f"{'path':<36}{'step':<24}{'median ms':>10}{'min':>9}{'max':>9}  n")
    for name, steps in results.items():
        for step, values in steps.items():
            write(
                f"{name:<36}{step:<24}{statistics.median(values):>10.2f}"
                f"{min(values):>9.2f}{max(values):>9.2f}  {len(values)}"
            )


def main(argv: list[str]) -> None:
    trials = int(argv[0]) if argv else 30
    joiners = int(argv[1]) if len(argv) > 1 else 15
    fetch("4")
    results: dict[str, Timings] = {}
    results.update(kafka(trials, {}, "kafka linger=5 (a)", joiners=joiners))
    results.update(kafka(trials, {}, "kafka linger=5 (b)", tap_first=True))
    results.update(kafka(trials, {LINGER: "0"}, "kafka linger=0", joiners=joiners))
    results.update(herdlab(trials, joiners))
    report(results)


if __name__ == "__main__":
    main(sys.argv[1:])
