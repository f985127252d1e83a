"""``herdlab cluster up`` and ``herdlab demo``."""

from __future__ import annotations

import threading
import time
from pathlib import Path

import click
from rich.console import Console
from rich.table import Table

from harness.cluster.external import ExternalCluster
from harness.cluster.local import LocalCluster
from harness.kernel.errors import ConfigError
from harness.procs import install_signal_handlers
from harness.scenario.model import ClusterSettings

console = Console()


def _health_table(cluster: LocalCluster) -> Table:
    table = Table(title="herdlab local cluster")
    table.add_column("component")
    table.add_column("address")
    table.add_column("pid", justify="right")
    table.add_column("health")
    table.add_column("detail")
    for c in cluster.describe():
        table.add_row(
            c.name,
            c.address,
            str(c.pid or "-"),
            "[green]ok[/green]" if c.healthy else "[red]down[/red]",
            c.detail,
        )
    return table


@click.group()
def cluster() -> None:
    """Start and inspect clusters."""


def broker_count(brokers: int | None, no_broker: bool) -> int:
    """How many brokers ``cluster up`` starts: ``--brokers`` when given, 0 with ``--no-broker``,
    else 1 (ZooKeeper and one broker, what both implementations need)."""
    if no_broker and brokers:
        raise ConfigError(f"--no-broker and --brokers {brokers} contradict each other: give one of them")
    if brokers is not None and brokers < 0:
        raise ConfigError(f"--brokers must be 0 or more, got {brokers}")
    if no_broker:
        return 0
    return 1 if brokers is None else brokers


def replication_args(brokers: int, replication: bool | None) -> tuple[str, ...]:
    """The broker options ``cluster up`` passes for ``--replication`` / ``--no-replication`` (None:
    neither given): replication is on for more than one broker unless turned off, as a scenario's
    ``[cluster]`` table has it (the same :class:`ClusterSettings` gives the options, so a topic with
    replication factor N is created alike on both). No broker with ``--replication`` is a user error."""
    if brokers == 0:
        if replication:
            raise ConfigError("--replication needs brokers: it contradicts --no-broker / --brokers 0")
        return ()
    replicated = brokers > 1 if replication is None else replication
    return ClusterSettings(replication=replicated).broker_args()


@cluster.command("up")
@click.option(
    "--brokers",
    type=int,
    default=None,
    help="Number of broker processes [default: 1; 0: ZooKeeper only, as --no-broker].",
)
@click.option("--no-broker", is_flag=True, help="ZooKeeper only, no broker (the legacy_zk side alone).")
@click.option(
    "--replication/--no-replication",
    default=None,
    help="The brokers' replication [default: on for more than one broker, as a scenario's [cluster] "
    "brokers = N has it].",
)
@click.option("--tick-time", "tick_time_ms", default=500, show_default=True, help="ZooKeeper tickTime in ms.")
@click.option(
    "--workdir",
    type=click.Path(file_okay=False),
    default=None,
    help="Keep logs and data here (default: temporary directories removed at exit).",
)
@click.option(
    "--broker",
    type=click.Choice(["herdlab", "apache-kafka"]),
    default="herdlab",
    show_default=True,
    help="herdlab's broker, or Apache Kafka's own (fetched by `herdlab kafka fetch`).",
)
@click.option(
    "--kafka-version",
    default="3.9",
    show_default=True,
    help="With --broker apache-kafka: 3.9 (ZooKeeper mode), 4 (KRaft) or an exact version.",
)
@click.option(
    "--kafka-home",
    type=click.Path(file_okay=False, exists=True, path_type=Path),
    default=None,
    help="With --broker apache-kafka: an unpacked Apache Kafka distribution (default: $HERDLAB_KAFKA_HOME, "
    "else the fetched version).",
)
def cluster_up(
    brokers: int | None,
    tick_time_ms: int,
    workdir: str | None,
    no_broker: bool = False,
    broker: str = "herdlab",
    kafka_version: str = "3.9",
    kafka_home: Path | None = None,
    replication: bool | None = None,
) -> None:
    """Run a local cluster until Ctrl-C, printing its addresses.

    ZooKeeper (the real Apache ZooKeeper from the pyspark wheel) and one herdlab broker registered in
    it, each on a free loopback port; prints zookeeper.connect and bootstrap.servers. --no-broker
    starts ZooKeeper alone, --brokers N starts N brokers, which replicate (a topic may have a
    replication factor up to N) unless --no-replication is given. --broker apache-kafka runs one Apache Kafka
    broker instead (3.x in ZooKeeper mode against its own ZooKeeper, 4.x in KRaft mode) behind a Kafka
    tap. Every process is stopped on Ctrl-C or SIGTERM.
    """
    n = broker_count(brokers, no_broker)
    if broker == "apache-kafka":
        if replication is not None:
            raise ConfigError("--replication / --no-replication apply to herdlab's brokers only")
        install_signal_handlers()
        _apache_kafka_up(n, tick_time_ms, workdir, kafka_version, kafka_home)
        return
    args = replication_args(n, replication)
    install_signal_handlers()
    with LocalCluster(brokers=n, tick_time_ms=tick_time_ms, workdir=workdir, broker_args=args) as c:
        console.print(_health_table(c))
        console.print(f"zookeeper.connect = {c.zookeeper_connect}")
        if c.bootstrap:
            console.print(f"bootstrap.servers = {c.bootstrap}")
            on = "--replication" in args
            console.print(
                f"replication: {'on' if on else 'off'} "
                f"({'--no-replication' if on else '--replication'} to turn it {'off' if on else 'on'})"
            )
        console.print("Press Ctrl-C to stop.")
        stop = threading.Event()
        while not stop.wait(1.0):
            if not c.zookeeper.is_serving():
                raise click.ClickException("ZooKeeper stopped answering; shutting the cluster down")


def _apache_kafka_up(
    brokers: int, tick_time_ms: int, workdir: str | None, version: str, home: Path | None
) -> None:
    """``cluster up --broker apache-kafka``: one Apache Kafka broker until Ctrl-C."""
    # deferred: start-up: the Apache Kafka cluster (kio) loads only for `cluster up --broker apache-kafka`
    from harness.cluster.apache_kafka import ApacheKafkaCluster

    if brokers != 1:
        raise ConfigError(f"--broker apache-kafka runs one broker (not {brokers})")
    with ApacheKafkaCluster(version, home, workdir=workdir, tick_time_ms=tick_time_ms) as c:
        console.print(f"Apache Kafka {c.version} ready in {c.ready_seconds or 0:.1f} s")
        if c.zookeeper_connect:
            console.print(f"zookeeper.connect = {c.zookeeper_connect}")
        console.print(f"bootstrap.servers = {c.bootstrap}")
        console.print("Press Ctrl-C to stop.")
        stop = threading.Event()
        while not stop.wait(1.0):
            if c.broker is None or not c.broker.alive():
                raise click.ClickException("the Apache Kafka broker exited; shutting the cluster down")


def _zookeeper_smoke(connect: str) -> list[tuple[str, bool, str]]:
    """Exercise ZooKeeper with kazoo the way members will: session, ephemeral znode, children watch."""
    from kazoo.client import KazooClient

    checks: list[tuple[str, bool, str]] = []
    zk = KazooClient(hosts=connect, timeout=6.0)
    zk.start(timeout=15)
    watcher = KazooClient(hosts=connect, timeout=6.0)
    watcher.start(timeout=15)
    try:
        fired = threading.Event()
        zk.ensure_path("/herdlab-demo/ids")
        seen: list[list[str]] = []

        def on_children(children: list[str]) -> None:
            seen.append(sorted(children))
            if "m1" in children:
                fired.set()

        watcher.ChildrenWatch("/herdlab-demo/ids", on_children)
        t0 = time.perf_counter()
        zk.create("/herdlab-demo/ids/m1", b"{}", ephemeral=True)
        ok = fired.wait(10)
        checks.append(
            ("children watch fires on a new ephemeral", ok, f"{(time.perf_counter() - t0) * 1e3:.1f} ms")
        )
        owner = zk.get("/herdlab-demo/ids/m1")[1].ephemeralOwner
        session = zk.client_id
        ours = session is not None and owner == session[0]
        checks.append(("ephemeral owned by our session", ours, f"session 0x{owner:x}"))
    finally:
        zk.stop()
        zk.close()
    gone = watcher.exists("/herdlab-demo/ids/m1") is None
    checks.append(("ephemeral removed when its session closes", gone, ""))
    watcher.delete("/herdlab-demo", recursive=True)
    watcher.stop()
    watcher.close()
    return checks


@cluster.command("check")
@click.option(
    "--tick-time", "tick_time_ms", default=500, show_default=True, help="ZooKeeper tickTime in ms (local)."
)
@click.option(
    "--bootstrap",
    default=None,
    metavar="HOST:PORT[,...]",
    help="Check this existing Kafka-compatible cluster instead of starting the local one.",
)
@click.option(
    "--zookeeper", default=None, metavar="HOST:PORT[,...]", help="With --bootstrap: check this ZooKeeper too."
)
def check(tick_time_ms: int, bootstrap: str | None, zookeeper: str | None) -> None:
    """Start the embedded local cluster, check ZooKeeper with kazoo, print its health, stop it.

    With --bootstrap (and --zookeeper), check an existing cluster the way `herdlab run --backend
    external` does before it starts: every address must answer as a Kafka broker (ApiVersions and a
    kafka-python bootstrap, advertised brokers reachable) or as ZooKeeper (srvr and a kazoo session);
    otherwise one line names the address and the cause (exit status 2).
    """
    if bootstrap or zookeeper:
        _check_external(zookeeper, bootstrap or "")
        return
    install_signal_handlers()
    t0 = time.monotonic()
    with LocalCluster(tick_time_ms=tick_time_ms) as c:
        console.print(_health_table(c))
        checks = _zookeeper_smoke(c.zookeeper_connect)
        table = Table(title="checks")
        table.add_column("check")
        table.add_column("result")
        table.add_column("detail")
        for name, ok, detail in checks:
            table.add_row(name, "[green]pass[/green]" if ok else "[red]FAIL[/red]", detail)
        console.print(table)
        m = c.zookeeper.mntr()
        console.print(
            f"ZooKeeper counters: packets received {m.get('zk_packets_received')}, "
            f"watches {m.get('zk_watch_count')}, ephemerals {m.get('zk_ephemerals_count')}"
        )
    console.print(f"cluster stopped; {time.monotonic() - t0:.1f}s in all")
    if not all(ok for _, ok, _ in checks):
        raise click.ClickException("a cluster check failed")


def _check_external(zookeeper: str | None, bootstrap: str) -> None:
    """The external backend's address check, printed as a table (raises ``Unreachable`` on failure)."""
    t0 = time.monotonic()
    c = ExternalCluster(zookeeper, bootstrap)
    table = Table(title="herdlab external cluster")
    table.add_column("role")
    table.add_column("address")
    table.add_column("result")
    table.add_column("detail")
    for p in c.probes:
        table.add_row(p.role, p.address, "[green]pass[/green]", p.detail)
    console.print(table)
    console.print(f"checked in {time.monotonic() - t0:.2f}s")
