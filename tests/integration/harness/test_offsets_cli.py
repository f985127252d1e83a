"""``herdlab offsets diff|export|copy`` as a user runs it (``python -m harness offsets ...``) against a real
ZooKeeper and a real broker: our broker (the module's ``shared_cluster``), and Apache Kafka 3.9 in ZooKeeper
mode (marked ``kafka``: run with ``-m kafka``).

The module produces a known number of records to each partition of one topic; each test seeds a group of
its own: offsets written into ZooKeeper with kazoo (``/consumers/<g>/offsets/<t>/<p>``, the 0.8 layout) and
into the broker with a kafka-python commit, then checks what the command prints or writes against values
worked out by hand from those seeds.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path

import pytest
from kafka import KafkaConsumer, KafkaProducer
from kafka.admin import KafkaAdminClient, NewTopic
from kafka.structs import OffsetAndMetadata, TopicPartition
from kazoo.client import KazooClient

from harness.procs import free_port
from tests.support.runs import SharedCluster
from tests.support.waiting import wait_until

TOPIC = "offsets-cli"
#: Records produced to each partition: the log end offsets.
LOG_END = {0: 10, 1: 6, 2: 0}
#: The seeds of every test's group: next offsets per partition.
ZK_SEED = {0: 4, 1: 6}
KAFKA_SEED = {0: 7, 2: 0}
CLI_TIMEOUT_S = 60


@pytest.fixture(scope="module", params=["herdlab", pytest.param("apache-kafka", marks=pytest.mark.kafka)])
def stores(request: pytest.FixtureRequest) -> Iterator[SharedCluster]:
    """The two stores the commands read and write: the shared ZooKeeper and herdlab's broker, or Apache
    Kafka 3.9 (ZooKeeper mode, marked ``kafka``) with its own ZooKeeper, the broker a migration
    really ends on."""
    if request.param == "herdlab":
        yield request.getfixturevalue("shared_cluster")
        return
    from harness.cluster.apache_kafka import ApacheKafkaCluster
    from harness.cluster.kafka_dist import fetch

    fetch("3.9")
    with ApacheKafkaCluster("3.9", settings={"group.initial.rebalance.delay.ms": "0"}) as kafka:
        yield SharedCluster(zookeeper=kafka.zookeeper_connect, bootstrap=kafka.bootstrap)


@pytest.fixture(scope="module")
def cluster(stores: SharedCluster) -> SharedCluster:
    """The stores' cluster with TOPIC created and LOG_END records produced to its partitions."""
    shared_cluster = stores
    admin = KafkaAdminClient(bootstrap_servers=shared_cluster.bootstrap, request_timeout_ms=10000)
    try:
        admin.create_topics([NewTopic(TOPIC, len(LOG_END), 1)])
    finally:
        admin.close()
    producer = KafkaProducer(bootstrap_servers=shared_cluster.bootstrap, acks="all")
    try:
        futures = [producer.send(TOPIC, b"x", partition=p) for p, n in LOG_END.items() for _ in range(n)]
        producer.flush(30)
        assert all(f.get(30).offset >= 0 for f in futures)
    finally:
        producer.close()
    return shared_cluster


@pytest.fixture(scope="module")
def zk(cluster: SharedCluster) -> Iterator[KazooClient]:
    client = KazooClient(hosts=cluster.zookeeper)
    client.start(timeout=10)
    yield client
    client.stop()
    client.close()


def _zk_write(zk: KazooClient, group: str, offsets: dict[int, int]) -> None:
    for p, o in offsets.items():
        zk.create(f"/consumers/{group}/offsets/{TOPIC}/{p}", str(o).encode(), makepath=True)


def _zk_read(zk: KazooClient, group: str) -> dict[int, int]:
    base = f"/consumers/{group}/offsets/{TOPIC}"
    if not zk.exists(base):
        return {}
    return {int(c): int(zk.get(f"{base}/{c}")[0]) for c in zk.get_children(base)}


def _kafka_commit(cluster: SharedCluster, group: str, offsets: dict[int, int]) -> None:
    """A kafka-python consumer of ``group`` that commits ``offsets`` without joining (manual assignment)."""
    consumer = KafkaConsumer(bootstrap_servers=cluster.bootstrap, group_id=group, enable_auto_commit=False)
    try:
        consumer.assign([TopicPartition(TOPIC, p) for p in offsets])
        consumer.commit({TopicPartition(TOPIC, p): OffsetAndMetadata(o, "", -1) for p, o in offsets.items()})
    finally:
        consumer.close()


def _kafka_read(cluster: SharedCluster, group: str) -> dict[int, int]:
    admin = KafkaAdminClient(bootstrap_servers=cluster.bootstrap, request_timeout_ms=10000)
    try:
        found = admin.list_group_offsets(group)[group]
    finally:
        admin.close()
    return {tp.partition: oam.offset for tp, oam in found.items() if tp.topic == TOPIC and oam.offset >= 0}


def _seed(cluster: SharedCluster, zk: KazooClient, group: str) -> None:
    _zk_write(zk, group, ZK_SEED)
    _kafka_commit(cluster, group, KAFKA_SEED)
    assert _zk_read(zk, group) == ZK_SEED
    assert _kafka_read(cluster, group) == KAFKA_SEED


def _herdlab(*args: str) -> subprocess.CompletedProcess[str]:
    """The command as a user runs it; plain output (no colour codes) so tables can be read back."""
    env = {k: v for k, v in os.environ.items() if k not in ("FORCE_COLOR", "TTY_COMPATIBLE")}
    env["NO_COLOR"] = "1"
    return subprocess.run(
        [sys.executable, "-m", "harness", "offsets", *args],
        capture_output=True,
        text=True,
        timeout=CLI_TIMEOUT_S,
        env=env,
    )


def _stores(cluster: SharedCluster) -> list[str]:
    return ["--zookeeper", cluster.zookeeper, "--bootstrap", cluster.bootstrap]


def _table_rows(stdout: str) -> list[list[str]]:
    """The body rows of a rich table (cells stripped)."""
    rows = []
    for line in stdout.splitlines():
        if line.startswith("│"):
            rows.append([c.strip() for c in line.strip("│").split("│")])
    return rows


def test_diff_lists_both_stores_log_ends_lags_and_differences(
    cluster: SharedCluster, zk: KazooClient
) -> None:
    group = "diff-group"
    _seed(cluster, zk, group)

    r = _herdlab("diff", *_stores(cluster), "--group", group, "--json")
    assert r.returncode == 0, r.stderr
    # p0: zk 4, broker 7, log end 10: lag 10 - max(4, 7) = 3, difference 7 - 4 = 3.
    # p1: zk 6 only, log end 6: lag 0.  p2: broker 0 only, log end 0: lag 0.
    assert json.loads(r.stdout) == [
        {
            "topic": TOPIC,
            "partition": 0,
            "zookeeper_offset": 4,
            "kafka_offset": 7,
            "log_end_offset": 10,
            "lag": 3,
            "difference": 3,
        },
        {
            "topic": TOPIC,
            "partition": 1,
            "zookeeper_offset": 6,
            "kafka_offset": None,
            "log_end_offset": 6,
            "lag": 0,
            "difference": None,
        },
        {
            "topic": TOPIC,
            "partition": 2,
            "zookeeper_offset": None,
            "kafka_offset": 0,
            "log_end_offset": 0,
            "lag": 0,
            "difference": None,
        },
    ]

    table = _herdlab("diff", *_stores(cluster), "--group", group)
    assert table.returncode == 0, table.stderr
    assert _table_rows(table.stdout) == [
        [TOPIC, "0", "4", "7", "10", "3", "3"],
        [TOPIC, "1", "6", "-", "6", "0", "-"],
        [TOPIC, "2", "-", "0", "0", "0", "-"],
    ]


def test_export_writes_kafkas_reset_plan_csv_from_either_store(
    cluster: SharedCluster, zk: KazooClient, tmp_path: Path
) -> None:
    group = "export-group"
    _seed(cluster, zk, group)

    r = _herdlab("export", "--zookeeper", cluster.zookeeper, "--group", group, "--from", "zookeeper")
    assert r.returncode == 0, r.stderr
    assert r.stdout == f"{TOPIC},0,4\n{TOPIC},1,6\n"

    out = tmp_path / "plan.csv"
    r = _herdlab(
        "export", "--bootstrap", cluster.bootstrap, "--group", group, "--from", "kafka", "-o", str(out)
    )
    assert r.returncode == 0, r.stderr
    assert out.read_text() == f"{TOPIC},0,7\n{TOPIC},2,0\n"


def test_copy_dry_run_prints_the_plan_and_changes_nothing(cluster: SharedCluster, zk: KazooClient) -> None:
    group = "copy-dry-group"
    _seed(cluster, zk, group)

    r = _herdlab("copy", *_stores(cluster), "--group", group, "--from", "zookeeper", "--to", "kafka")
    assert r.returncode == 0, r.stderr
    # From ZooKeeper {0: 4, 1: 6} into the broker {0: 7, 2: 0}: both source partitions change.
    assert _table_rows(r.stdout) == [
        [TOPIC, "0", "4", "7", "4", "write"],
        [TOPIC, "1", "6", "-", "6", "write"],
    ]
    assert "dry run: 2 offset(s) would change" in r.stdout
    assert _kafka_read(cluster, group) == KAFKA_SEED
    assert _zk_read(zk, group) == ZK_SEED


def test_copy_execute_makes_the_target_equal_to_the_source_in_both_directions(
    cluster: SharedCluster, zk: KazooClient
) -> None:
    group = "copy-exec-group"
    _seed(cluster, zk, group)

    r = _herdlab(
        "copy", *_stores(cluster), "--group", group, "--from", "zookeeper", "--to", "kafka", "--execute"
    )
    assert r.returncode == 0, r.stderr
    assert "wrote 2 offset(s)" in r.stdout
    # Source partitions now equal ZooKeeper's; p2, which only the broker had, is left as it was.
    assert _kafka_read(cluster, group) == {0: 4, 1: 6, 2: 0}
    assert _zk_read(zk, group) == ZK_SEED

    # The reverse, on a group whose ZooKeeper offsets do not exist yet: the znodes are created.
    group = "copy-back-group"
    _kafka_commit(cluster, group, {0: 9, 1: 3})
    r = _herdlab(
        "copy", *_stores(cluster), "--group", group, "--from", "kafka", "--to", "zookeeper", "--execute"
    )
    assert r.returncode == 0, r.stderr
    assert _zk_read(zk, group) == {0: 9, 1: 3}
    assert zk.get(f"/consumers/{group}/offsets/{TOPIC}/0")[0] == b"9"

    # A second copy finds nothing to change.
    r = _herdlab("copy", *_stores(cluster), "--group", group, "--from", "kafka", "--to", "zookeeper")
    assert r.returncode == 0, r.stderr
    assert "dry run: 0 offset(s) would change" in r.stdout


def test_copy_refuses_while_a_member_is_registered_in_zookeeper_unless_forced(
    cluster: SharedCluster, zk: KazooClient
) -> None:
    group = "copy-live-group"
    _seed(cluster, zk, group)
    zk.create(f"/consumers/{group}/ids/{group}_host-1", b"{}", makepath=True, ephemeral=True)
    try:
        args = [
            "copy",
            *_stores(cluster),
            "--group",
            group,
            "--from",
            "zookeeper",
            "--to",
            "kafka",
            "--execute",
        ]
        r = _herdlab(*args)
        assert r.returncode == 2
        assert r.stderr.splitlines() == [
            f"herdlab: error: group {group} has live members: 1 registered in ZooKeeper ({group}_host-1); "
            "stop them first or pass --force to copy anyway"
        ]
        assert _kafka_read(cluster, group) == KAFKA_SEED

        r = _herdlab(*args, "--force")
        assert r.returncode == 0, r.stderr
        assert _kafka_read(cluster, group) == {0: 4, 1: 6, 2: 0}
    finally:
        zk.delete(f"/consumers/{group}/ids/{group}_host-1")


def test_a_group_with_no_offsets_in_either_store_is_a_one_line_error(cluster: SharedCluster) -> None:
    r = _herdlab("diff", *_stores(cluster), "--group", "no-such-group")
    assert r.returncode == 2
    assert r.stderr.splitlines() == [
        "herdlab: error: group no-such-group has no committed offsets in ZooKeeper or in the broker"
    ]
    assert r.stdout == ""


def test_an_unreachable_zookeeper_is_a_one_line_error_within_a_few_seconds(cluster: SharedCluster) -> None:
    address = f"127.0.0.1:{free_port()}"  # nothing listens there
    t0 = time.monotonic()
    r = _herdlab("diff", "--zookeeper", address, "--bootstrap", cluster.bootstrap, "--group", "g")
    elapsed = time.monotonic() - t0
    assert r.returncode == 2
    assert r.stderr.splitlines() == [
        f"herdlab: error: ZooKeeper address {address} is unreachable: connection refused"
    ]
    # The 5 s bound of the ZooKeeper check plus the interpreter's start-up.
    assert elapsed < 20


def test_copy_refuses_while_the_brokers_group_has_a_member(cluster: SharedCluster, zk: KazooClient) -> None:
    group = "copy-broker-live-group"
    _zk_write(zk, group, ZK_SEED)
    consumer = KafkaConsumer(
        TOPIC, bootstrap_servers=cluster.bootstrap, group_id=group, enable_auto_commit=False
    )
    try:

        def joined() -> bool:
            consumer.poll(100)  # drives the join and the heartbeats
            return bool(consumer.assignment())

        wait_until(joined, 30, what="the consumer's first assignment")
        r = _herdlab(
            "copy", *_stores(cluster), "--group", group, "--from", "zookeeper", "--to", "kafka", "--execute"
        )
        assert r.returncode == 2
        assert r.stderr.splitlines() == [
            f"herdlab: error: group {group} has live members: 1 in the broker (group state Stable); "
            "stop them first or pass --force to copy anyway"
        ]
        assert _kafka_read(cluster, group) == {}
    finally:
        consumer.close()


def test_bad_arguments_and_an_unreachable_broker_are_one_line_errors(cluster: SharedCluster) -> None:
    same = _herdlab("copy", *_stores(cluster), "--group", "g", "--from", "kafka", "--to", "kafka")
    assert (same.returncode, same.stderr.splitlines()) == (
        2,
        ["herdlab: error: --from and --to are both kafka: nothing to copy"],
    )
    no_zk = _herdlab("diff", "--bootstrap", cluster.bootstrap, "--group", "g")
    assert (no_zk.returncode, no_zk.stderr.splitlines()) == (2, ["herdlab: error: --zookeeper is required"])

    address = f"127.0.0.1:{free_port()}"  # nothing listens there
    r = _herdlab("export", "--bootstrap", address, "--group", "g", "--from", "kafka")
    assert r.returncode == 2
    assert r.stderr.splitlines() == [
        f"herdlab: error: bootstrap server {address} is unreachable: connection refused"
    ]
