"""``herdlab bench clients``: the set-up time and the memory of one member of each client.

What it does, per client (every client of :data:`harness.members.clients.registry.CLIENT_SPECS` by default;
``--client NAME`` repeatable):

* set-up: a client whose program is built at set-up (java, kafka-go, franz-go) is built with its own
  ``build()`` (what ``herdlab clients build`` runs) at its default version into a fresh, empty herdlab cache
  (``HERDLAB_CACHE_DIR`` set to a temporary directory: herdlab's cache cold; Maven's ``~/.m2`` and Go's
  module and build caches are left as they are, warm when the machine built them before), then built a
  second time into the same cache (already built: the idempotent check). A Python client has nothing to
  build ("-"). ``--no-setup`` skips it and runs members from herdlab's usual cache (building there if needed).
* memory: herdlab's broker on a free loopback port with a topic of ``--partitions`` partitions; one member
  of the client started exactly as a run starts it (:func:`harness.run.launch.start_member` with
  :func:`~harness.run.launch.coordinator_argv` of the built-in ``coordinators`` scenario, whose member
  settings the clients are compared with (every client waits 500 ms on an empty fetch), with that
  client; ``--set`` overrides its keys);
  once its history says it owns every partition, ``--records`` small records are produced (the workload
  producer) and consumed (one ``record`` event each); then the resident memory (RSS, psutil) of its process
  tree is read: the Python adapter (the member process; for a Python client the whole member) and the
  child program under it (the JVM or the Go program; "-" for a Python client), and their total.
* hosted java members: for each count of ``--hosted`` (default 1,2,4,8), that many java members in one
  JVM as ``group.coordinator.members_per_host`` hosts them (:func:`~harness.run.launch.start_coordinator_host`),
  the same wait and batch, the JVM's RSS and that per member.

Every process is stopped at the end of each measurement, also on an error or Ctrl-C (the members and the
broker are :func:`harness.procs.spawn` children: their ``stop`` in ``finally`` blocks, the registry at exit).
Figures are measured on the machine at hand (say whether it was shared); nothing is asserted.
"""

from __future__ import annotations

import contextlib
import json
import os
import tempfile
import time
from collections.abc import Callable, Iterator, Sequence
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Any

import click
from rich.console import Console
from rich.table import Table

from harness.bench.common import Sizes
from harness.cluster.broker import BrokerProcess
from harness.history.writer import HistoryWriter
from harness.kernel.errors import ConfigError, HerdlabError
from harness.members.clients.registry import CLIENT_SPECS, ChildClient, missing_for
from harness.procs import install_signal_handlers
from harness.run.launch import Endpoints, MemberService, start_coordinator_host, start_member
from harness.run.tail import POLL_S, HistoryTail
from harness.scenario import Scenario, load_scenario
from harness.workload.producer import Producer, ProducerConfig

__all__ = ["ClientFigures", "HostedFigures", "Waiter", "clients", "owns_all"]

#: the broker's group settings for a quick start (no initial delay to speak of, short sessions allowed)
BROKER_ARGS = ["--group-initial-rebalance-delay-ms", "100", "--group-min-session-timeout-ms", "1000"]
MIB = 2**20


@dataclass
class ClientFigures:
    """One client's figures: set-up seconds (None: nothing to build, or not measured) and RSS in bytes of
    the adapter, of the child program (None: a Python client, the adapter is the whole member) and total."""

    client: str
    setup_cold_s: float | None
    setup_built_s: float | None
    adapter_rss: int
    program_rss: int | None
    records: int

    @property
    def total_rss(self) -> int:
        return self.adapter_rss + (self.program_rss or 0)


@dataclass
class HostedFigures:
    """The java host's figures with ``members`` members in one JVM: RSS in bytes of the adapter and the JVM."""

    members: int
    adapter_rss: int
    program_rss: int
    records: int


def owns_all(assignments: dict[str, list[int]], members: Sequence[str], partitions: int) -> bool:
    """Whether every member of ``members`` has an assignment and the assignments (member -> its whole
    assignment) partition ``range(partitions)``: every partition owned by exactly one member. Pure."""
    if any(m not in assignments for m in members):
        return False
    owned = [p for m in members for p in assignments[m]]
    return sorted(owned) == list(range(partitions))


class Waiter:
    """Reads a member's history (one file, every member's events under its own ``source``) as it grows:
    each member's whole assignment (``rebalance_end.partitions``) and the records consumed."""

    def __init__(self, history: Path) -> None:
        self.tail = HistoryTail(history)
        self.assignments: dict[str, list[int]] = {}
        self.records: set[tuple[int, int]] = set()

    def poll(self) -> None:
        for e in self.tail.poll():
            kind = e.get("kind")
            if kind == "rebalance_end" and e.get("outcome") == "ok":
                self.assignments[str(e.get("source"))] = list(e.get("partitions") or [])
            elif kind == "record":
                self.records.add((int(e["partition"]), int(e["offset"])))

    def until(self, what: str, done: Callable[[], bool], member: MemberService, timeout: float) -> None:
        """Poll the history until ``done()``; Unreachable-style HerdlabError naming ``what`` when the
        member exits first or ``timeout`` passes."""
        deadline = time.monotonic() + timeout
        while True:
            self.poll()
            if done():
                return
            if not member.alive():
                raise HerdlabError(f"{member.name} exited before {what} (log {member.log_path})")
            if time.monotonic() > deadline:
                raise HerdlabError(f"{member.name}: no {what} after {timeout:g}s (log {member.log_path})")
            time.sleep(POLL_S)  # polling the history file


def _rss(member: MemberService) -> tuple[int, int | None]:
    """(RSS of the member process, summed RSS of its descendants or None when it has none)."""
    import psutil

    proc = psutil.Process(member.pid)
    adapter = proc.memory_info().rss
    children = 0
    seen = False
    for child in proc.children(recursive=True):
        with contextlib.suppress(psutil.Error):
            children += child.memory_info().rss
            seen = True
    return adapter, children if seen else None


@contextlib.contextmanager
def _env(name: str, value: str | None) -> Iterator[None]:
    """``os.environ[name]`` set to ``value`` (None: as it is) for the block (children inherit it)."""
    if value is None:
        yield
        return
    old = os.environ.get(name)
    os.environ[name] = value
    try:
        yield
    finally:
        if old is None:
            os.environ.pop(name, None)
        else:
            os.environ[name] = old


def _setup(client: str, version: str | None, progress: Callable[[str], None]) -> tuple[float, float] | None:
    """(cold, built) seconds of ``build()`` of ``client`` at ``version`` into the cache set now; None:
    nothing to build."""
    spec = CLIENT_SPECS[client]
    if not isinstance(spec, ChildClient) or spec.build is None:
        return None
    t0 = time.perf_counter()
    spec.build(version, progress)
    cold = time.perf_counter() - t0
    t0 = time.perf_counter()
    spec.build(version, progress)
    return cold, time.perf_counter() - t0


def _scenario(client: str, overrides: Sequence[str]) -> Scenario:
    """The ``coordinators`` scenario's member settings with ``client``, then ``overrides`` (``--set``)."""
    return load_scenario(
        "coordinators",
        ["matrix={}", 'implementations=["coordinator"]', f'group.coordinator.client="{client}"', *overrides],
    )


def _member_memory(
    s: Scenario, work: Path, partitions: int, records: int, hosted: int | None, timeout: float
) -> tuple[int, int | None, int]:
    """Broker, topic, one member (or a host of ``hosted`` members) of ``client``, owned partitions, a
    consumed batch: (adapter RSS, program RSS or None, records consumed). Everything stopped on return."""
    from kafka.admin import KafkaAdminClient, NewTopic

    events, logs = work / "events", work / "logs"
    events.mkdir(parents=True)
    logs.mkdir()
    broker = BrokerProcess(log_path=logs / "broker.log", extra_args=BROKER_ARGS)
    member: MemberService | None = None
    try:
        broker.start()
        topic, group = "bench", f"bench-{s.group.coordinator.client}"
        admin = KafkaAdminClient(bootstrap_servers=broker.bootstrap)
        try:
            admin.create_topics([NewTopic(topic, partitions, 1)])
        finally:
            admin.close()
        ep = Endpoints(zookeeper="", bootstrap=broker.bootstrap)
        if hosted is None:
            names = ["m0"]
            member = start_member("coordinator", s, "m0", ep, events, logs, group, topic)
        else:
            names = [f"m{i}" for i in range(hosted)]
            member = start_coordinator_host(s, "host0", names, ep, events, logs, group, topic)
        waiter = Waiter(member.history)
        waiter.until(
            "owning every partition",
            lambda: owns_all(waiter.assignments, names, partitions),
            member,
            timeout,
        )
        with HistoryWriter(events / "producer.jsonl", "producer") as h:
            Producer(
                ProducerConfig(bootstrap=broker.bootstrap, topic=topic, rate=2000, max_records=records), h
            ).run()
        waiter.until(f"{records} records consumed", lambda: len(waiter.records) >= records, member, timeout)
        adapter, program = _rss(member)
        return adapter, program, len(waiter.records)
    finally:
        if member is not None:
            member.stop()
        broker.stop()


def _mib(x: int | None) -> str:
    return "-" if x is None else f"{x / MIB:,.0f}"


def _secs(x: float | None) -> str:
    return "-" if x is None else f"{x:.2f}"


def render(
    figures: Sequence[ClientFigures], hosted: Sequence[HostedFigures], setup: bool, console: Console
) -> None:
    """The tables of the figures (see the module contract)."""
    caches = (
        "set-up: build() into an empty herdlab cache (cold), then again (built); Maven's ~/.m2 and Go's "
        "module and build caches as they were"
        if setup
        else "set-up not measured (--no-setup)"
    )
    t = Table(title="herdlab bench clients: one member each (RSS after a consumed batch)", caption=caches)
    for c in ("client", "set-up cold s", "set-up built s", "adapter MiB", "program MiB", "total MiB"):
        t.add_column(c, justify="right")
    for f in figures:
        t.add_row(
            f.client,
            _secs(f.setup_cold_s),
            _secs(f.setup_built_s),
            _mib(f.adapter_rss),
            _mib(f.program_rss),
            _mib(f.total_rss),
        )
    console.print(t)
    if hosted:
        th = Table(title="java: members hosted in one JVM (members_per_host)")
        for c in ("members", "adapter MiB", "JVM MiB", "JVM MiB per member"):
            th.add_column(c, justify="right")
        for h in hosted:
            th.add_row(
                str(h.members), _mib(h.adapter_rss), _mib(h.program_rss), _mib(h.program_rss // h.members)
            )
        console.print(th)


def _as_json(
    figures: Sequence[ClientFigures], hosted: Sequence[HostedFigures], setup: bool
) -> dict[str, Any]:
    return {
        "setup_measured": setup,
        "clients": [{**asdict(f), "total_rss": f.total_rss} for f in figures],
        "java_hosted": [asdict(h) for h in hosted],
    }


@click.command("clients")
@click.option(
    "--client",
    "names",
    multiple=True,
    type=click.Choice(list(CLIENT_SPECS)),
    help="A client to measure (repeatable; default: every client).",
)
@click.option(
    "--hosted",
    type=Sizes(1),
    default="1,2,4,8",
    show_default=True,
    help="Java members per JVM to measure (with java among the clients).",
)
@click.option(
    "--set",
    "overrides",
    multiple=True,
    metavar="KEY=VALUE",
    help="Override a key of the coordinators scenario whose member settings are used, e.g. "
    "group.coordinator.client_version=4 (repeatable).",
)
@click.option("--no-hosted", is_flag=True, help="Skip the hosted java members.")
@click.option("--setup/--no-setup", default=True, show_default=True, help="Time the builds.")
@click.option("--partitions", default=8, show_default=True, type=click.IntRange(min=1))
@click.option("--records", default=2000, show_default=True, type=click.IntRange(min=1))
@click.option("--timeout", default=120.0, show_default=True, help="Seconds to wait for each step.")
@click.option("--json", "as_json", is_flag=True, help="Print the figures as JSON instead of tables.")
@click.option(
    "--keep",
    type=click.Path(file_okay=False, path_type=Path),
    default=None,
    help="Work in this new directory and keep it (histories, logs, the built caches); default: a temporary one.",
)
def clients(
    names: tuple[str, ...],
    hosted: tuple[int, ...],
    overrides: tuple[str, ...],
    no_hosted: bool,
    setup: bool,
    partitions: int,
    records: int,
    timeout: float,
    as_json: bool,
    keep: Path | None,
) -> None:
    """Set-up time and memory of one member of each client (a benchmark: nothing asserted)."""
    install_signal_handlers()
    console = Console(width=160, stderr=as_json)
    wanted = list(dict.fromkeys(names)) or list(CLIENT_SPECS)
    scenarios = {
        name: _scenario(name, overrides) for name in wanted
    }  # a bad --set fails before anything runs
    for name, sc in scenarios.items():
        if why := missing_for(name, sc.group.coordinator.client_version):
            raise ConfigError(why)
    if not no_hosted and "java" in wanted and max(hosted) > partitions:
        raise ConfigError(f"--hosted {max(hosted)} needs at least as many --partitions (got {partitions})")

    def progress(line: str) -> None:
        console.print(f"[dim]{line}[/dim]")

    figures: list[ClientFigures] = []
    hosted_figures: list[HostedFigures] = []
    if keep is not None and keep.exists() and any(keep.iterdir()):
        raise ConfigError(f"--keep {keep}: not an empty directory")
    with contextlib.ExitStack() as stack:
        if keep is None:
            tmp = stack.enter_context(tempfile.TemporaryDirectory(prefix="herdlab-bench-clients-"))
        else:
            keep.mkdir(parents=True, exist_ok=True)
            tmp = str(keep)
        for name in wanted:
            cache = str(Path(tmp) / f"cache-{name}") if setup else None
            with _env("HERDLAB_CACHE_DIR", cache):
                spec = CLIENT_SPECS[name]
                s = scenarios[name]
                version = s.group.coordinator.client_version
                times = _setup(name, version, progress) if setup else None
                if not setup and isinstance(spec, ChildClient) and spec.build is not None:
                    spec.build(version, progress)  # the usual cache: built once, then nothing to do
                console.print(f"[dim]{name}: one member[/dim]")
                adapter, program, got = _member_memory(
                    s, Path(tmp) / name, partitions, records, None, timeout
                )
                figures.append(
                    ClientFigures(
                        name,
                        times[0] if times else None,
                        times[1] if times else None,
                        adapter,
                        program,
                        got,
                    )
                )
                if name == "java" and not no_hosted:
                    for n in hosted:
                        console.print(f"[dim]java: {n} members in one JVM[/dim]")
                        a, p, got = _member_memory(
                            s, Path(tmp) / f"java-hosted-{n}", partitions, records, n, timeout
                        )
                        hosted_figures.append(HostedFigures(n, a, p or 0, got))
    if as_json:
        click.echo(json.dumps(_as_json(figures, hosted_figures, setup), indent=2))
    else:
        render(figures, hosted_figures, setup, Console(width=160))
