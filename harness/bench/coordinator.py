"""``herdlab bench coordinator ...``: figures of the broker and its group coordinator on this machine.

Subcommands (``all`` runs every one with its defaults):

* ``handling``: server-side handling time of Heartbeat and JoinGroup, in process: the request frame
  as kafka-python encodes it is decoded (kio, after the bounds guard), handled by the shell and the
  state machine, and the response encoded -- everything but the socket. Median and p99 in us.
* ``rebalance``: rebalance latency of a settled group of N kafka-python consumers (the harness's
  member processes; heartbeat 500 ms, session 6 s) when one member joins and when one leaves,
  measured as the reports measure it (:mod:`harness.bench.rebalance`): t1 - t0 of each trigger
  window of :func:`harness.kernel.windows.evaluate` over the merged histories (t0 = the invoke, for
  a join the joiner's ``ready``; t1 = settled), with its detection and convergence. Median and max
  over the repetitions.
* ``throughput``: kafka-python producer then consumer, 100-byte records, records/s each way, and
  the broker's CPU time per record (the client is usually the bottleneck).
* ``memory``: broker RSS before and after 1,000 members in 100 groups joined and heartbeating
  (raw protocol clients, one connection per member).
"""

from __future__ import annotations

import asyncio
import contextlib
import random
import statistics
import tempfile
import time
from pathlib import Path
from typing import Any

import click
from rich.console import Console
from rich.table import Table

from coordinator.config import BrokerConfig
from coordinator.core.group.config import GroupConfig
from coordinator.rawclient import RawClient
from harness.bench.rebalance import rebalance
from harness.cluster.broker import BrokerProcess

__all__ = ["coordinator"]

console = Console()


def _pct(values: list[float], q: float) -> float:
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, int(q * len(ordered)))]


def _table(title: str, rows: list[tuple[str, str]]) -> None:
    t = Table(title=title)
    t.add_column("figure")
    t.add_column("value", justify="right")
    for k, v in rows:
        t.add_row(k, v)
    console.print(t)


@click.group("coordinator")
def coordinator() -> None:
    """Benchmarks of the broker (handling time, rebalance latency, throughput, memory)."""


coordinator.add_command(rebalance)  # ``herdlab bench coordinator rebalance``: harness.bench.rebalance


# ---------------------------------------------------------------------------------------- handling


async def _resolve(result: Any) -> Any:
    """A parked response's value, or an immediate response as is."""
    return await result if isinstance(result, asyncio.Future) else result


async def _handling(members: int, heartbeats: int, rounds: int) -> dict[str, list[float]]:
    from kafka.protocol.consumer import HeartbeatRequest, JoinGroupRequest, SyncGroupRequest

    # deferred: start-up: the in-process broker (kio wire codec) loads only when the bench runs
    from coordinator.inprocess import InProcessClient
    from coordinator.server import Broker
    from coordinator.wire import encode_response

    broker = Broker(BrokerConfig(group=GroupConfig(initial_rebalance_delay_ms=0)))
    await broker.groups.load()
    client = InProcessClient(broker, client_id="bench-consumer")
    group = "bench-group"
    metadata = bytes(random.Random(1).randbytes(48))

    def join_frame(member_id: str) -> bytes:
        proto = JoinGroupRequest.JoinGroupRequestProtocol(name="range", metadata=metadata)
        req = JoinGroupRequest(
            group_id=group,
            session_timeout_ms=30000,
            rebalance_timeout_ms=60000,
            member_id=member_id,
            group_instance_id=None,
            protocol_type="consumer",
            protocols=[proto],
        )
        return client.frame(req, 7)  # what kafka-python 3.0.x sends

    def sync_frame(member_id: str, generation: int, assignments: dict[str, bytes]) -> bytes:
        a = [
            SyncGroupRequest.SyncGroupRequestAssignment(member_id=m, assignment=b)
            for m, b in assignments.items()
        ]
        req = SyncGroupRequest(
            group_id=group,
            generation_id=generation,
            member_id=member_id,
            protocol_type="consumer",
            protocol_name="range",
            assignments=a,
        )
        return client.frame(req, 5)

    def timed(frame: bytes) -> tuple[int, Any]:
        t0 = time.perf_counter_ns()
        out = broker.dispatch(frame, client.peer)
        assert out is not None
        correlation_id, _key, _version, result = out
        if not isinstance(result, asyncio.Future):
            encode_response(correlation_id, result)
        return time.perf_counter_ns() - t0, result

    # Form the group: every member gets its id (MEMBER_ID_REQUIRED), then all join at once.
    ids = []
    for _ in range(members):
        _, r = timed(join_frame(""))
        ids.append(r.member_id)
    parked = [timed(join_frame(m))[1] for m in ids]
    joined = [await _resolve(p) for p in parked]
    generation = joined[0].generation_id
    leader = joined[0].leader
    assignments = {m: b"assignment-%d" % i for i, m in enumerate(ids)}
    syncs = [timed(sync_frame(leader, generation, assignments))[1]]
    syncs += [timed(sync_frame(m, generation, {}))[1] for m in ids if m != leader]
    for s in syncs:
        await _resolve(s)

    figures: dict[str, list[float]] = {"heartbeat": [], "join": [], "join_completing": [], "sync": []}
    hb_frames = [
        client.frame(HeartbeatRequest(group_id=group, generation_id=generation, member_id=m), 4) for m in ids
    ]
    for i in range(heartbeats):
        ns, r = timed(hb_frames[i % members])
        assert r.error_code == 0
        figures["heartbeat"].append(ns / 1000)

    for _ in range(rounds):
        # The leader rejoins (a rebalance starts), then every follower; the last completes the barrier.
        order = [leader] + [m for m in ids if m != leader]
        futures = []
        for k, m in enumerate(order):
            ns, fut = timed(join_frame(m))
            futures.append(fut)
            figures["join_completing" if k == members - 1 else "join"].append(ns / 1000)
        joined = [await _resolve(f) for f in futures]
        generation = joined[0].generation_id
        leader = joined[0].leader
        sync_futures = []
        for m in [leader] + [x for x in ids if x != leader]:
            ns, fut = timed(sync_frame(m, generation, assignments if m == leader else {}))
            sync_futures.append(fut)
            figures["sync"].append(ns / 1000)
        for f in sync_futures:
            await _resolve(f)
    broker.groups.cancel_timers()
    return figures


@coordinator.command("handling")
@click.option("--members", default=50, show_default=True, help="Members of the group.")
@click.option("--heartbeats", default=20000, show_default=True, help="Heartbeats to time.")
@click.option(
    "--rounds", default=40, show_default=True, help="Rebalance rounds (every member's JoinGroup timed)."
)
def handling(members: int, heartbeats: int, rounds: int) -> None:
    """Server-side handling time of Heartbeat and JoinGroup (decode + handle + encode, no socket)."""
    f = asyncio.run(_handling(members, heartbeats, rounds))
    rows = []
    for key, label in (
        ("heartbeat", "Heartbeat v4"),
        ("join", "JoinGroup v7 (parked)"),
        ("join_completing", f"JoinGroup v7 completing the barrier ({members} answered)"),
        ("sync", "SyncGroup v5"),
    ):
        v = f[key]
        rows.append(
            (f"{label}: median / p99 (n={len(v)})", f"{statistics.median(v):.1f} / {_pct(v, 0.99):.1f} us")
        )
    _table(f"Server-side handling time, group of {members}", rows)


# ---------------------------------------------------------------------------------------- throughput


@coordinator.command("throughput")
@click.option("--records", default=200_000, show_default=True)
@click.option("--size", default=100, show_default=True, help="Value size in bytes.")
@click.option("--partitions", default=4, show_default=True)
@click.option("--persist/--in-memory", default=True, show_default=True, help="Broker with a data directory.")
def throughput(records: int, size: int, partitions: int, persist: bool) -> None:
    """Produce then fetch RECORDS records of SIZE bytes with kafka-python; records/s each way."""
    import psutil
    from kafka import KafkaConsumer, KafkaProducer
    from kafka.admin import KafkaAdminClient, NewTopic
    from kafka.structs import TopicPartition

    with tempfile.TemporaryDirectory(prefix="herdlab-bench-") as tmp:
        broker = BrokerProcess(
            data_dir=Path(tmp) / "data" if persist else None, log_path=Path(tmp) / "broker.log"
        )
        try:
            broker.start()
            proc = psutil.Process(broker.process.pid)  # type: ignore[union-attr]
            admin = KafkaAdminClient(bootstrap_servers=broker.bootstrap)
            admin.create_topics([NewTopic("tp", partitions, 1)])
            admin.close()
            value = b"x" * size
            producer = KafkaProducer(
                bootstrap_servers=broker.bootstrap, acks=1, linger_ms=5, batch_size=128 * 1024
            )
            cpu0 = proc.cpu_times()
            t0 = time.perf_counter()
            for i in range(records):
                producer.send("tp", value, partition=i % partitions)
            producer.flush()
            t_produce = time.perf_counter() - t0
            cpu1 = proc.cpu_times()
            producer.close()
            consumer = KafkaConsumer(
                bootstrap_servers=broker.bootstrap,
                auto_offset_reset="earliest",
                enable_auto_commit=False,
                max_partition_fetch_bytes=4 * 2**20,
                fetch_max_bytes=16 * 2**20,
            )
            consumer.assign([TopicPartition("tp", p) for p in range(partitions)])
            got = 0
            t0 = time.perf_counter()
            while got < records and time.perf_counter() - t0 < 300:
                got += sum(len(v) for v in consumer.poll(timeout_ms=500, max_records=100_000).values())
            t_fetch = time.perf_counter() - t0
            cpu2 = proc.cpu_times()
            consumer.close()
        finally:
            broker.stop()

    def cpu(a: Any, b: Any) -> float:
        return (b.user - a.user) + (b.system - a.system)

    _table(
        f"Throughput, {records} records of {size} bytes, {partitions} partitions ({'on disk' if persist else 'in memory'})",
        [
            ("produce (kafka-python producer, acks=1)", f"{records / t_produce:,.0f} records/s"),
            ("fetch (kafka-python consumer, from the start)", f"{got / t_fetch:,.0f} records/s"),
            ("broker CPU per record, produce", f"{cpu(cpu0, cpu1) / records * 1e6:.2f} us"),
            ("broker CPU per record, fetch", f"{cpu(cpu1, cpu2) / max(got, 1) * 1e6:.2f} us"),
        ],
    )


# ---------------------------------------------------------------------------------------- memory


class _AsyncMember:
    """One raw-protocol group member on its own connection (JoinGroup v3, SyncGroup v1, Heartbeat v1)."""

    def __init__(self, port: int, group: str, metadata: bytes) -> None:
        self.port, self.group, self.metadata = port, group, metadata
        self.member_id = ""
        self.generation = -1
        self._correlation = 0

    async def open(self) -> None:
        self.reader, self.writer = await asyncio.open_connection("127.0.0.1", self.port)

    async def call(self, request: Any, version: int) -> Any:
        self._correlation += 1
        request.API_VERSION = version
        request.with_header(correlation_id=self._correlation, client_id="bench-member")
        self.writer.write(bytes(request.encode(header=True, framed=True)))
        await self.writer.drain()
        size = int.from_bytes(await self.reader.readexactly(4), "big")
        frame = await self.reader.readexactly(size)
        return request.header.get_response_class().decode(frame, version=version, header=True)

    async def join_and_sync(self) -> None:
        """(Re)join until a SyncGroup succeeds; the leader hands every member 40 bytes."""
        from kafka.protocol.consumer import JoinGroupRequest, SyncGroupRequest

        while True:
            proto = JoinGroupRequest.JoinGroupRequestProtocol(name="range", metadata=self.metadata)
            join = JoinGroupRequest(
                group_id=self.group,
                session_timeout_ms=30000,
                rebalance_timeout_ms=30000,
                member_id=self.member_id,
                protocol_type="consumer",
                protocols=[proto],
            )
            r = await self.call(join, 3)
            if r.error_code == 25:  # UNKNOWN_MEMBER_ID: start over
                self.member_id = ""
                continue
            if r.error_code:
                continue
            self.member_id, self.generation = r.member_id, r.generation_id
            assignments = []
            if r.leader == r.member_id:
                assignments = [
                    SyncGroupRequest.SyncGroupRequestAssignment(member_id=m.member_id, assignment=b"a" * 40)
                    for m in r.members
                ]
            sync = SyncGroupRequest(
                group_id=self.group,
                generation_id=self.generation,
                member_id=self.member_id,
                assignments=assignments,
            )
            if (await self.call(sync, 1)).error_code == 0:
                return

    async def heartbeat(self) -> None:
        """One heartbeat; rejoin if the group is rebalancing (others were still arriving)."""
        from kafka.protocol.consumer import HeartbeatRequest

        hb = HeartbeatRequest(group_id=self.group, generation_id=self.generation, member_id=self.member_id)
        if (await self.call(hb, 1)).error_code != 0:
            await self.join_and_sync()

    def close(self) -> None:
        self.writer.close()


async def _memory_members(
    port: int, groups: int, per_group: int, ready: asyncio.Event, stop: asyncio.Event
) -> int:
    rng = random.Random(7)
    members = [
        _AsyncMember(port, f"mem-group-{g}", rng.randbytes(64))
        for g in range(groups)
        for _ in range(per_group)
    ]
    joined = 0

    async def run(m: _AsyncMember) -> None:
        nonlocal joined
        await m.open()
        await m.join_and_sync()
        joined += 1
        if joined == len(members):
            ready.set()
        while not stop.is_set():
            with contextlib.suppress(TimeoutError):
                await asyncio.wait_for(stop.wait(), 2.0)
            if not stop.is_set():
                await m.heartbeat()
        m.close()

    await asyncio.gather(*(run(m) for m in members))
    return joined


@coordinator.command("memory")
@click.option("--groups", default=100, show_default=True)
@click.option("--per-group", default=10, show_default=True)
def memory(groups: int, per_group: int) -> None:
    """Broker RSS with GROUPS x PER_GROUP members joined, synced and heartbeating."""
    import psutil

    with tempfile.TemporaryDirectory(prefix="herdlab-bench-") as tmp:
        broker = BrokerProcess(
            log_path=Path(tmp) / "broker.log",
            extra_args=["--group-initial-rebalance-delay-ms", "1000", "--metrics-interval", "0"],
        )
        try:
            broker.start()
            proc = psutil.Process(broker.process.pid)  # type: ignore[union-attr]
            rss_idle = proc.memory_info().rss

            async def run() -> tuple[int, float, float]:
                ready, stop = asyncio.Event(), asyncio.Event()
                t0 = time.monotonic()
                task = asyncio.ensure_future(_memory_members(broker.port, groups, per_group, ready, stop))
                await asyncio.wait_for(ready.wait(), 300)
                formed = time.monotonic() - t0
                await asyncio.sleep(3)  # a few heartbeat rounds at the full size
                rss = proc.memory_info().rss
                c0, w0 = proc.cpu_times(), time.monotonic()
                await asyncio.sleep(4)
                c1 = proc.cpu_times()
                cpu = 100 * ((c1.user - c0.user) + (c1.system - c0.system)) / (time.monotonic() - w0)
                stop.set()
                await task
                return rss, formed, cpu

            rss_loaded, formed, cpu = asyncio.run(run())
            states = {}
            from kafka.protocol.admin import ListGroupsRequest

            with RawClient("127.0.0.1", broker.port) as raw:
                for g in raw.call(ListGroupsRequest(), 3).groups:
                    states[g.group_id] = g.group_state
        finally:
            broker.stop()
    members = groups * per_group
    _table(
        f"Broker memory, {members} members in {groups} groups",
        [
            ("RSS idle", f"{rss_idle / 2**20:.1f} MiB"),
            (f"RSS with {members} members (joined, heartbeating every 2 s)", f"{rss_loaded / 2**20:.1f} MiB"),
            ("per member (incl. its connection)", f"{(rss_loaded - rss_idle) / members / 1024:.1f} KiB"),
            ("time to form every group", f"{formed:.1f} s"),
            ("broker CPU while heartbeating", f"{cpu:.0f} %"),
            ("groups listed afterwards", f"{len(states)}"),
        ],
    )


# ---------------------------------------------------------------------------------------- all


@coordinator.command("all")
@click.pass_context
def run_all(ctx: click.Context) -> None:
    """Every figure with its defaults."""
    ctx.invoke(handling)
    ctx.invoke(throughput)
    ctx.invoke(memory)
    ctx.invoke(rebalance)
