"""Produce throughput and broker memory, 3 replicated brokers against 1 broker without replication.

    .venv/bin/python -m tests.support.replication_bench [--records 20000] [--size 100] [--repeat 1]

Each broker is a process of its own (``serve`` below): the replicated ones get one static partition state
(leader 1, ISR 1,2,3, replicas 1,2,3) and each other's addresses from the command line instead of ZooKeeper
(a fake shell: nothing else changes while the bench runs, so no controller is needed). A kafka-python producer
(``acks='all'``) sends ``--records`` records of ``--size`` bytes to partition 0 and waits for every ack; the
figure is records / (time from the first send to the last ack). RSS is each broker's after the run (psutil).
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import socket
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

TOPIC = "bench"


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


class _StaticZk:
    """The fake ZooKeeper shell of one bench broker: fixed peers, one fixed partition state."""

    def __init__(self, ports: dict[int, int], cluster: Any, sink: Any, loop: Any) -> None:
        self.ports, self.cluster, self.sink, self.loop = ports, cluster, sink, loop
        self.version = 0

    def start(self) -> None:
        self.loop.call_soon_threadsafe(self._deliver)

    def _deliver(self) -> None:
        from coordinator.cluster import Node, PartitionInfo
        from coordinator.core.replication.state import PartitionState

        self.cluster.set_peers({i: Node(i, "127.0.0.1", p) for i, p in self.ports.items()})
        replicas = tuple(sorted(self.ports))
        state = PartitionState(replicas[0], 0, replicas, 1)
        self.cluster.set_partition_info(TOPIC, 0, PartitionInfo(state.leader, 0, replicas, state.isr))
        self.sink.apply_state(TOPIC, 0, state, 0, replicas)

    def stop(self) -> None:
        return None

    def knows_topic(self, name: str) -> bool:
        return name == TOPIC

    async def write_isr(self, topic: str, partition: int, state: Any, expected: int) -> Any:
        from coordinator.core.replication.state import conditional_update

        result = conditional_update(self.version, expected)
        if result.succeeded:
            self.version = result.version
        return result

    def create_topic(self, name: str, partitions: int, replication_factor: int | None) -> None:
        raise RuntimeError("bench topics are static")


async def _serve(
    broker_id: int, ports: dict[int, int], data_dir: Path, ready: Path, replicated: bool
) -> None:
    import signal

    from coordinator.config import BrokerConfig, ReplicationConfig
    from coordinator.server import Broker
    from tests.support.replicas import replicated_cluster

    config = BrokerConfig(
        broker_id=broker_id,
        port=ports[broker_id],
        data_dir=data_dir,
        ready_file=ready,
        metrics_interval_s=0,
        zookeeper="127.0.0.1:1" if replicated else None,
        replication=ReplicationConfig(enabled=replicated),
    )
    if replicated:
        broker = Broker(
            config,
            cluster=replicated_cluster(broker_id),
            zk_factory=lambda cfg, store, cluster, port, loop, **kw: _StaticZk(
                ports, cluster, kw["sink"], loop
            ),
        )
    else:
        broker = Broker(config)
    loop = asyncio.get_running_loop()
    for sig in (signal.SIGTERM, signal.SIGINT):
        loop.add_signal_handler(sig, broker.request_stop)
    try:
        await broker.start()
        await broker.wait_stopped()
    finally:
        await broker.stop()


def _produce(port: int, records: int, size: int) -> float:
    from kafka import KafkaProducer

    producer = KafkaProducer(bootstrap_servers=f"127.0.0.1:{port}", acks="all", linger_ms=5)
    try:
        producer.send(TOPIC, value=b"w", partition=0).get(timeout=30)  # metadata and connection first
        value = b"x" * size
        t0 = time.perf_counter()
        futures = [producer.send(TOPIC, value=value, partition=0) for _ in range(records)]
        producer.flush(timeout=300)
        for f in futures:
            f.get(timeout=1)
        return records / (time.perf_counter() - t0)
    finally:
        producer.close()


def _run(replicated: bool, records: int, size: int) -> dict[str, Any]:
    import psutil

    ids = [1, 2, 3] if replicated else [1]
    ports = {i: _free_port() for i in ids}
    with tempfile.TemporaryDirectory() as tmp:
        procs: dict[int, subprocess.Popen[bytes]] = {}
        try:
            for i in ids:
                ready = Path(tmp) / f"ready-{i}"
                procs[i] = subprocess.Popen(
                    [sys.executable, "-m", "tests.support.replication_bench", "serve", "--id", str(i),
                     "--ports", json.dumps(ports), "--data-dir", str(Path(tmp) / f"b{i}"), "--ready", str(ready)]
                    + (["--replicated"] if replicated else []),
                )  # fmt: skip
            deadline = time.monotonic() + 60
            while not all((Path(tmp) / f"ready-{i}").exists() for i in ids):
                if time.monotonic() > deadline or any(p.poll() is not None for p in procs.values()):
                    raise RuntimeError("a bench broker did not start")
                time.sleep(0.05)
            rate = _produce(ports[1], records, size)
            rss = {i: psutil.Process(p.pid).memory_info().rss // (1024 * 1024) for i, p in procs.items()}
            logs = {i: (Path(tmp) / f"b{i}" / "logs" / f"{TOPIC}-0").glob("*.log") for i in ids}
            log_bytes = {i: sum(f.stat().st_size for f in files) for i, files in logs.items()}
            return {
                "replicated": replicated,
                "records_per_s": round(rate),
                "rss_mib": rss,
                "log_bytes": log_bytes,
            }
        finally:
            for p in procs.values():
                p.terminate()
            for p in procs.values():
                p.wait(30)


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("mode", nargs="?", default="bench", choices=["bench", "serve"])
    parser.add_argument("--records", type=int, default=20_000)
    parser.add_argument("--size", type=int, default=100)
    parser.add_argument("--repeat", type=int, default=1)
    parser.add_argument("--id", type=int)
    parser.add_argument("--ports")
    parser.add_argument("--data-dir")
    parser.add_argument("--ready")
    parser.add_argument("--replicated", action="store_true")
    args = parser.parse_args()
    if args.mode == "serve":
        ports = {int(k): v for k, v in json.loads(args.ports).items()}
        asyncio.run(_serve(args.id, ports, Path(args.data_dir), Path(args.ready), args.replicated))
        return
    os.environ.setdefault("PYTHONHASHSEED", "0")
    for _ in range(args.repeat):
        for replicated in (False, True):
            print(json.dumps(_run(replicated, args.records, args.size)), flush=True)


if __name__ == "__main__":
    main()
