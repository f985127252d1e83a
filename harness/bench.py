"""``herdlab bench zookeeper``: ZooKeeper start-to-ready time and memory on this machine."""

from __future__ import annotations

import statistics
import time

import click
from rich.console import Console
from rich.table import Table

from harness.cluster.zookeeper import ZooKeeperServer


@click.command("zookeeper")
@click.option("--runs", default=5, show_default=True, help="How many cold starts to time.")
@click.option("--tick-time", "tick_time_ms", default=200, show_default=True, help="ZooKeeper tickTime in ms.")
@click.option(
    "--sessions", default=100, show_default=True, help="Sessions to open for the loaded-memory figure."
)
def zookeeper(runs: int, tick_time_ms: int, sessions: int) -> None:
    """Start ZooKeeper RUNS times: start-to-ready time (spawn until it serves), idle and loaded RSS."""
    from kazoo.client import KazooClient

    ready: list[float] = []
    idle_rss: list[int] = []
    for _ in range(runs):
        t0 = time.monotonic()
        with ZooKeeperServer(tick_time_ms=tick_time_ms) as zk:
            ready.append(time.monotonic() - t0)
            idle_rss.append(zk.rss_bytes())
    with ZooKeeperServer(tick_time_ms=tick_time_ms) as zk:
        clients = []
        try:
            for i in range(sessions):
                c = KazooClient(hosts=zk.connect_string, timeout=10)
                c.start(timeout=30)
                c.create(f"/bench-{i}", ephemeral=True)
                clients.append(c)
            loaded_rss = zk.rss_bytes()
        finally:
            for c in clients:
                c.stop()
                c.close()
        version = zk.version
    t = Table(title=f"ZooKeeper {version} (tickTime {tick_time_ms} ms)")
    t.add_column("figure")
    t.add_column("value", justify="right")
    t.add_row(f"start-to-ready, median of {runs}", f"{statistics.median(ready):.2f} s")
    t.add_row("start-to-ready, min / max", f"{min(ready):.2f} / {max(ready):.2f} s")
    t.add_row("RSS idle, median", f"{statistics.median(idle_rss) / 2**20:.0f} MiB")
    t.add_row(f"RSS with {sessions} sessions + ephemerals", f"{loaded_rss / 2**20:.0f} MiB")
    Console().print(t)


@click.command("history")
@click.option("--events", default=200_000, show_default=True, help="Events to write.")
@click.option(
    "--batch", default=1000, show_default=True, help="Events per timed batch (median over batches)."
)
def history(events: int, batch: int) -> None:
    """Cost of writing one history event (a `record` event as members write them): median, p99."""
    import tempfile
    from pathlib import Path

    from harness.history.writer import HistoryWriter

    per_event: list[float] = []
    with tempfile.TemporaryDirectory() as d:
        w = HistoryWriter(Path(d) / "events.jsonl", source="bench-member")
        for b in range(events // batch):
            t0 = time.perf_counter_ns()
            for i in range(batch):
                w.emit(
                    "record",
                    impl="coordinator",
                    group="g",
                    member="m-1",
                    generation=3,
                    topic="t",
                    partition=i % 10,
                    offset=b * batch + i,
                    seq=b * batch + i,
                )
            per_event.append((time.perf_counter_ns() - t0) / batch / 1000)
        w.close()
        size = (Path(d) / "events.jsonl").stat().st_size
    per_event.sort()
    t = Table(title=f"history writer: {events} events")
    t.add_column("figure")
    t.add_column("value", justify="right")
    t.add_row("per event, median of batches", f"{statistics.median(per_event):.2f} us")
    t.add_row("per event, p99 of batches", f"{per_event[int(len(per_event) * 0.99) - 1]:.2f} us")
    t.add_row("bytes per event", f"{size / events:.0f}")
    Console().print(t)
