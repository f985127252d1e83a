"""``herdlab bench replication``: what replication costs a broker: produce throughput with
``acks=all`` and broker memory, three replicating brokers against one broker without replication.

Contract: for each configuration the bench starts a local cluster of its own (a real ZooKeeper, broker
processes on free loopback ports; three brokers with ``--replication``, or one without), creates topic
``bench`` with one partition (replication factor 3, or 1), waits until Metadata names its leader, and
sends ``--records`` records of ``--size`` bytes with an unmodified kafka-python producer (``acks='all'``,
``linger_ms`` 5) to partition 0, waiting for every acknowledgement. Throughput = records / (first send
to last acknowledgement). RSS: each broker process's resident memory after the run. ``--repeat`` runs
each configuration that many times (fresh clusters); the table shows each run and the median. Nothing
is asserted; every process is stopped on success, failure and Ctrl-C.
"""

from __future__ import annotations

import statistics
import tempfile
import time
from pathlib import Path

import click
from rich.console import Console
from rich.table import Table

from harness.cluster.local import LocalCluster
from harness.kernel.errors import HerdlabError

TOPIC = "bench"
CONFIGS = (("1 broker, no replication", 1, ()), ("3 brokers, replication factor 3", 3, ("--replication",)))


def _rss_mib(cluster: LocalCluster) -> list[float]:
    import psutil

    out = []
    for b in cluster.brokers:
        try:
            out.append(psutil.Process(b.process.pid).memory_info().rss / 2**20)
        except (psutil.NoSuchProcess, AttributeError):
            out.append(float("nan"))
    return out


def _wait_for_leader(bootstrap: str, timeout: float = 60.0) -> None:
    from kafka import KafkaConsumer

    consumer = KafkaConsumer(
        bootstrap_servers=bootstrap, client_id="herdlab-harness", enable_auto_commit=False
    )
    try:
        deadline = time.monotonic() + timeout
        while True:
            parts = consumer.partitions_for_topic(TOPIC)
            if parts:
                return
            if time.monotonic() > deadline:
                raise HerdlabError(f"topic {TOPIC} has no leader after {timeout:.0f}s")
            consumer.poll(timeout_ms=100)  # refreshes metadata; paces the wait
    finally:
        consumer.close()


def measure(brokers: int, broker_args: tuple[str, ...], records: int, size: int) -> tuple[float, list[float]]:
    """One run: (records per second with acks=all, each broker's RSS in MiB)."""
    from kafka import KafkaProducer
    from kafka.admin import KafkaAdminClient, NewTopic

    with (
        tempfile.TemporaryDirectory(prefix="herdlab-bench-replication-") as tmp,
        LocalCluster(brokers=brokers, workdir=Path(tmp), broker_args=broker_args) as cluster,
    ):
        bootstrap = cluster.bootstrap
        admin = KafkaAdminClient(bootstrap_servers=bootstrap, client_id="herdlab-harness")
        try:
            deadline = time.monotonic() + 60
            while len(admin.describe_cluster()["brokers"]) < brokers:
                if time.monotonic() > deadline:
                    raise HerdlabError(f"fewer than {brokers} brokers registered after 60s")
                time.sleep(0.1)  # polling pace toward a deadline
            admin.create_topics([NewTopic(TOPIC, 1, brokers)])
        finally:
            admin.close()
        _wait_for_leader(bootstrap)
        producer = KafkaProducer(bootstrap_servers=bootstrap, acks="all", linger_ms=5, retries=5)
        try:
            value = b"x" * size
            t0 = time.monotonic()
            futures = [producer.send(TOPIC, value=value, partition=0) for _ in range(records)]
            producer.flush(timeout=300)
            for f in futures:
                f.get(timeout=60)  # raises if any record was not acknowledged
            elapsed = time.monotonic() - t0
        finally:
            producer.close()
        return records / elapsed, _rss_mib(cluster)


@click.command("replication")
@click.option("--records", default=50_000, show_default=True, help="Records per run.")
@click.option("--size", default=100, show_default=True, help="Record value size in bytes.")
@click.option("--repeat", default=3, show_default=True, help="Runs per configuration (fresh clusters).")
def replication(records: int, size: int, repeat: int) -> None:
    """Produce throughput (acks=all) and broker RSS: three replicating brokers against one broker."""
    console = Console()
    table = Table(title=f"produce {records} x {size} B, acks=all, kafka-python")
    for col in ("configuration", "run", "records/s", "broker RSS (MiB)"):
        table.add_column(col, justify="right" if col != "configuration" else "left")
    for name, n, args in CONFIGS:
        rates: list[float] = []
        rss_all: list[float] = []
        for i in range(repeat):
            console.print(f"[dim]{name}: run {i + 1}/{repeat}[/dim]")
            rate, rss = measure(n, args, records, size)
            rates.append(rate)
            rss_all.extend(rss)
            table.add_row(name, str(i + 1), f"{rate:,.0f}", " / ".join(f"{r:.0f}" for r in rss))
        table.add_row(
            name,
            "median",
            f"{statistics.median(rates):,.0f}",
            f"{statistics.median(rss_all):.0f}",
            style="bold",
        )
    console.print(table)
