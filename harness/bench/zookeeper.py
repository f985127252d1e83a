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
