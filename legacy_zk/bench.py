"""``herdlab bench legacy_zk``: the herd effect of the 0.8 ZooKeeper consumer, per membership change.

For each group size N (default 10, 50, 100, 200; as many partitions as members) on a fresh ZooKeeper:

1. start N members: N-1 coordination-only members hosted on gevent (``--members-per-host`` per
   process) and one member alone in its own process (the crash victim); wait until settled;
2. for each change — **join** (a new member in its own process), **leave** (that member stops
   cleanly), **crash** (SIGKILL of the victim; detected when its session expires) — measure from the
   change (t0) until the group has settled (every partition owned by exactly one live member, every
   live member's last attempt succeeded, then quiet for ``--quiet-ms``):

   * watch notifications delivered to members (``watch`` events);
   * ZooKeeper requests sent by members, by operation (``zk_request`` events: client side);
   * packets received by the server (``mntr`` ``zk_packets_received`` before/after), raw and with the
     idle rate (pings) measured just before the change subtracted;
   * NodeExists conflicts, failed attempts, members that gave up, rebalances; time to settle
     (t1 = the last successful attempt's end) and to the first notification.

It prints one table per N next to the analytic model and writes every figure to a JSON file.
Members are **coordination-only** (no record fetcher; the 0.8 rebalance reads and writes exactly
the same znodes with or without one). Figures are measured, nothing is asserted.

Analytic model of one membership change, every member rebalancing once (``B`` brokers, ``P``
partitions, ``M`` members rebalancing, ``P_i`` the partitions member ``i`` owns; sum of ``P_i`` = P):

* notifications = one per watching member (the members present before a join, the survivors of a
  leave or crash);
* per member and attempt, reads: ``2(B+1)`` (``/brokers/ids`` children and payloads, twice) + 2 (own
  registration) + 1 (topic) + 2 (ids children) + ``M`` (every registration, its own included) +
  ``P_i`` (offsets); writes: ``P_i`` owner deletes + ``P_i`` owner creates;
* per notification, the watch re-arm of ZkClient 0.3 (``fireChildChangedEvents``): ``exists`` then
  ``getChildren`` = 2 requests (spec 1.15).

Summed over the group: ``zk_requests = M^2 + (2B+9)M + 3P`` (``M^2 + 2M`` of them registration
reads, ``2P`` owner-znode writes, ``2M`` watch re-arms); reads grow as M squared. ``M`` = members after
the change; the model counts the joiner as a re-arming watcher, though it re-arms nothing (it
subscribes instead: ``exists`` + ``getChildren`` on the ids, ``exists`` per topic, and creates its
registration), and a crashed owner's deletes that never happen: within a few requests. (Before the
re-arm followed ZkClient it cost 1 request, and the model read ``M^2 + (2B+8)M + 3P``.)
"""

from __future__ import annotations

import contextlib
import json
import math
import signal
import sys
import tempfile
import time
from collections import Counter, defaultdict
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import click

from harness.errors import HerdlabError
from harness.procs import ChildProcess, spawn
from legacy_zk import paths

CHANGES = ("join", "leave", "crash")


def herd_model_requests(members: int, brokers: int, partitions: int) -> int:
    """ZooKeeper requests of one membership change by the model (module docstring):
    ``M^2 + (2B+9)M + 3P``, each of the ``M`` members rebalancing once and re-arming its ids watch
    with 2 requests."""
    m = members
    return m * m + (2 * brokers + 9) * m + 3 * partitions


# -- reading histories as they grow -------------------------------------------------------------


class HistoryTail:
    """Reads the complete new lines of several JSON-lines files, in order per file."""

    def __init__(self) -> None:
        self._pos: dict[Path, int] = {}

    def add(self, path: Path) -> None:
        self._pos.setdefault(path, 0)

    def read(self) -> list[dict[str, Any]]:
        """New complete events of every file; each carries ``_file``, the file it came from."""
        out: list[dict[str, Any]] = []
        for path, pos in list(self._pos.items()):
            if not path.exists():
                continue
            with open(path, "rb") as f:
                f.seek(pos)
                data = f.read()
            end = data.rfind(b"\n")
            if end < 0:
                continue
            self._pos[path] = pos + end + 1
            for line in data[: end + 1].splitlines():
                with contextlib.suppress(ValueError):
                    e = json.loads(line)
                    e["_file"] = str(path)
                    out.append(e)
        return out


@dataclass
class MemberState:
    process: str
    last: str = ""  # rebalance_begin | rebalance_end
    ok: bool = False
    gave_up: bool = False
    owned: frozenset = frozenset()
    alive: bool = True


@dataclass
class Group:
    """The bench's picture of the group, from the histories only (no ZooKeeper reads)."""

    partitions: int
    members: dict[str, MemberState] = field(default_factory=dict)
    last_event_ns: int = 0

    def apply(self, events: list[dict[str, Any]], process_of: dict[str, str]) -> None:
        for e in events:
            m = e.get("member")
            if m is None:
                continue
            if e["kind"] != "zk_request":
                self.last_event_ns = max(self.last_event_ns, e["ts_ns"])
            st = self.members.get(m)
            if st is None:
                st = self.members[m] = MemberState(process_of.get(e["_file"], "?"))
            kind = e["kind"]
            if kind == "rebalance_begin":
                st.last, st.ok = kind, False
            elif kind == "rebalance_end":
                st.last = kind
                st.ok = e["outcome"] in ("ok", "no_brokers")
                st.gave_up = bool(e.get("gave_up"))
                st.owned = frozenset(tuple(x) for x in e.get("owned", []))
            elif kind == "stopped":
                st.alive = False

    def kill_process(self, process: str) -> None:
        for st in self.members.values():
            if st.process == process:
                st.alive = False

    def alive(self) -> list[str]:
        return [m for m, st in self.members.items() if st.alive]

    def settled(self, expected_members: int) -> bool:
        live = [st for st in self.members.values() if st.alive]
        if len(live) != expected_members:
            return False
        if not all(st.last == "rebalance_end" and st.ok for st in live):
            return False
        owned = [tp for st in live for tp in st.owned]
        return len(owned) == self.partitions and len(set(owned)) == self.partitions

    def gave_up(self) -> int:
        return sum(
            1 for st in self.members.values() if st.alive and st.gave_up and st.last == "rebalance_end"
        )


# -- the run ------------------------------------------------------------------------------------


@dataclass
class BenchSettings:
    sizes: list[int]
    changes: list[str]
    session_timeout_ms: int = 6000
    backoff_ms: int = 2000
    retries: int = 4
    members_per_host: int = 50
    tick_time_ms: int = 500
    quiet_ms: int = 1000
    settle_timeout_s: float = 180.0
    strategy: str = "range"
    workdir: Path | None = None


class Run:
    """One group size on a fresh ZooKeeper."""

    def __init__(self, n: int, s: BenchSettings, root: Path, echo) -> None:  # noqa: ANN001
        self.n = n
        self.s = s
        self.root = root
        self.echo = echo
        self.group = f"bench-{n}"
        self.topic = f"herd-{n}"
        self.procs: dict[str, ChildProcess] = {}
        self.files: dict[str, Path] = {}
        self.process_of: dict[str, str] = {}
        self.tail = HistoryTail()
        self.state = Group(partitions=n)
        self.zk = None
        self.admin = None

    # processes
    def _argv(self, members: int, history: Path) -> list[str]:
        s = self.s
        return [
            sys.executable,
            "-m",
            "legacy_zk",
            "--zookeeper",
            self.zk.connect_string,
            "--group",
            self.group,
            "--topic",
            self.topic,
            "--no-fetch",
            "--members",
            str(members),
            "--history",
            str(history),
            "--zookeeper.session.timeout.ms",
            str(s.session_timeout_ms),
            "--zookeeper.connection.timeout.ms",
            "30000",
            "--rebalance.backoff.ms",
            str(s.backoff_ms),
            "--rebalance.max.retries",
            str(s.retries),
            "--partition.assignment.strategy",
            s.strategy,
            "--auto.commit.interval.ms",
            "600000",
        ]

    def start_process(self, name: str, members: int) -> None:
        hist = self.root / f"{name}.jsonl"
        self.files[name] = hist
        self.process_of[str(hist)] = name
        self.tail.add(hist)
        self.procs[name] = spawn(
            self._argv(members, hist),
            name=f"legacy-zk-{self.group}-{name}",
            log_path=self.root / f"{name}.log",
            env={"HERDLAB_LOG_LEVEL": "WARNING"},
        )

    def poll(self) -> list[dict[str, Any]]:
        events = self.tail.read()
        self.state.apply(events, self.process_of)
        for name, p in self.procs.items():
            if not p.alive():
                self.state.kill_process(name)
        return events

    def wait_settled(
        self, members: int, timeout: float, kick: bool = False
    ) -> tuple[bool, list[dict[str, Any]]]:
        """Poll histories until settled and quiet; optionally nudge a stuck start-up."""
        seen: list[dict[str, Any]] = []
        deadline = time.monotonic() + timeout
        next_kick = time.monotonic() + max(20.0, 3 * self.s.backoff_ms * self.s.retries / 1000.0)
        while time.monotonic() < deadline:
            seen.extend(self.poll())
            quiet_ns = time.time_ns() - self.state.last_event_ns
            if self.state.settled(members) and quiet_ns >= self.s.quiet_ms * 1e6:
                return True, seen
            if kick and time.monotonic() > next_kick and self.state.gave_up():
                # start-up only (not measured): members that gave up wait for the next change
                self.echo(
                    f"  N={self.n}: {self.state.gave_up()} members gave up during start-up; touching the topic"
                )
                self.admin.set(
                    paths.topic_path(self.topic), paths.encode_topic({p: [0] for p in range(self.n)})
                )
                next_kick = time.monotonic() + 20.0
            time.sleep(0.1)
        return False, seen

    def rss_mb(self) -> float:
        import psutil

        total = 0
        for p in self.procs.values():
            with contextlib.suppress(psutil.Error):
                total += psutil.Process(p.pid).memory_info().rss
        return total / 2**20

    def mntr(self) -> dict[str, Any]:
        return self.zk.mntr()

    def idle_rate(self, seconds: float = 2.0) -> float:
        a = self.mntr()["zk_packets_received"]
        t = time.monotonic()
        time.sleep(seconds)
        b = self.mntr()["zk_packets_received"]
        return (b - a) / (time.monotonic() - t)

    def setup(self) -> None:
        from kazoo.client import KazooClient

        from harness.cluster.zookeeper import ZooKeeperServer

        self.zk = ZooKeeperServer(tick_time_ms=self.s.tick_time_ms, heap_mb=1024, log_level="WARN").start()
        self.admin = KazooClient(hosts=self.zk.connect_string, timeout=30.0)
        self.admin.start(timeout=30)
        # coordination-only: one 0.8.2 broker registration so the 0.8 rebalance proceeds
        self.admin.create(
            paths.broker_path(0), paths.encode_broker("127.0.0.1", 9, 0), ephemeral=True, makepath=True
        )
        self.admin.create(
            paths.topic_path(self.topic), paths.encode_topic({p: [0] for p in range(self.n)}), makepath=True
        )
        hosted = self.n - 1
        hosts = math.ceil(hosted / self.s.members_per_host) if hosted else 0
        t0 = time.monotonic()
        running = 0
        for h in range(hosts):
            k = min(self.s.members_per_host, hosted - h * self.s.members_per_host)
            self.start_process(f"host{h}", k)
            running += k
            ok, _ = self.wait_settled(running, self.s.settle_timeout_s, kick=True)
            if not ok:
                raise HerdlabError(f"N={self.n}: {running} members did not settle during start-up")
        self.start_process("victim", 1)
        ok, _ = self.wait_settled(self.n, self.s.settle_timeout_s, kick=True)
        if not ok:
            raise HerdlabError(f"N={self.n}: the group did not settle during start-up")
        self.echo(
            f"  N={self.n}: {self.n} members settled in {time.monotonic() - t0:.1f}s; "
            f"member processes RSS {self.rss_mb():.0f} MB in {len(self.procs)} processes"
        )

    def measure(self, change: str) -> dict[str, Any]:
        members_before = len(self.state.alive())
        rate = self.idle_rate()
        self.poll()
        m0 = self.mntr()
        t0 = time.time_ns()
        if change == "join":
            self.start_process("joiner", 1)
            expected = members_before + 1
        elif change == "leave":
            self.procs["joiner"].signal(signal.SIGTERM)
            expected = members_before - 1
        elif change == "crash":
            self.procs["victim"].signal(signal.SIGKILL)
            self.procs["victim"].wait(10)
            self.state.kill_process("victim")
            expected = members_before - 1
        else:
            raise ValueError(change)
        ok, events = self.wait_settled(expected, self.s.settle_timeout_s)
        m1 = self.mntr()
        t_end = time.time_ns()
        window = [e for e in events if t0 <= e["ts_ns"] <= t_end]
        kinds = Counter(e["kind"] for e in window)
        ops = Counter(e["op"] for e in window if e["kind"] == "zk_request")
        ends = [e for e in window if e["kind"] == "rebalance_end"]
        ok_ends = [e["ts_ns"] for e in ends if e["outcome"] == "ok"]
        watches = [e["ts_ns"] for e in window if e["kind"] == "watch"]
        per_member_rebalances = Counter(
            (e["member"], e["rebalance"]) for e in window if e["kind"] == "rebalance_begin"
        )
        rebalancing_members = len({m for m, _r in per_member_rebalances})
        packets = m1["zk_packets_received"] - m0["zk_packets_received"]
        interval = (t_end - t0) / 1e9
        p, b, mm = self.n, 1, expected  # model: every member present after the change rebalances once
        return {
            "n": self.n,
            "partitions": p,
            "change": change,
            "members_before": members_before,
            "members_after": expected,
            "settled": ok,
            "settle_s": round((max(ok_ends) - t0) / 1e9, 3) if ok and ok_ends else None,
            "first_notification_s": round((min(watches) - t0) / 1e9, 3) if watches else None,
            "watch_notifications": kinds["watch"],
            "zk_requests": sum(ops.values()),
            "zk_requests_by_op": dict(sorted(ops.items())),
            "owner_creates": sum(
                1
                for e in window
                if e["kind"] == "zk_request" and e["op"] == "create" and "/owners/" in e["path"]
            ),
            "owner_deletes": sum(
                1
                for e in window
                if e["kind"] == "zk_request" and e["op"] == "delete" and "/owners/" in e["path"]
            ),
            "registration_reads": sum(
                1
                for e in window
                if e["kind"] == "zk_request"
                and e["op"] == "get"
                and e["path"].startswith(f"/consumers/{self.group}/ids/")
            ),
            "packets_received": packets,
            "packets_received_minus_idle": round(packets - rate * interval),
            "idle_packets_per_s": round(rate, 1),
            "window_s": round(interval, 3),
            "conflicts": kinds["conflict"],
            "attempts": len(ends),
            "failed_attempts": sum(1 for e in ends if e["outcome"] not in ("ok", "no_brokers")),
            "gave_up": sum(1 for e in ends if e.get("gave_up")),
            "rebalances": len(per_member_rebalances),
            "rebalancing_members": rebalancing_members,
            "model": {
                "watch_notifications": members_before if change == "join" else members_before - 1,
                "zk_requests": herd_model_requests(mm, b, p),
                "registration_reads": mm * mm + 2 * mm,
                "owner_writes": 2 * p,
            },
        }

    def teardown(self) -> None:
        for p in self.procs.values():
            p.signal(signal.SIGUSR1)  # quiesce first: no teardown herd
        for p in self.procs.values():
            p.stop(grace=30)
        if self.admin is not None:
            self.admin.stop()
            self.admin.close()
        if self.zk is not None:
            self.zk.stop()


def run_bench(s: BenchSettings, echo=print) -> list[dict[str, Any]]:  # noqa: ANN001
    """Run every size and change of ``s``; returns one dict of figures per (N, change)."""
    results: list[dict[str, Any]] = []
    base = s.workdir or Path(tempfile.mkdtemp(prefix="herdlab-bench-legacy-zk-"))
    for n in s.sizes:
        if n < 2:
            raise HerdlabError("group sizes must be >= 2 (one member is the crash victim)")
        root = base / f"n{n}"
        root.mkdir(parents=True, exist_ok=True)
        run = Run(n, s, root, echo)
        try:
            run.setup()
            for change in s.changes:
                r = run.measure(change)
                results.append(r)
                echo(_row(r))
        finally:
            run.teardown()
    return results


def _row(r: dict[str, Any]) -> str:
    m = r["model"]
    return (
        f"  N={r['n']:<4} {r['change']:<6} settled={'yes' if r['settled'] else 'NO '} "
        f"settle={r['settle_s']}s notif={r['watch_notifications']} (model {m['watch_notifications']}) "
        f"zk_req={r['zk_requests']} (model {m['zk_requests']}) pkts={r['packets_received']} "
        f"(-idle {r['packets_received_minus_idle']}) conflicts={r['conflicts']} failed={r['failed_attempts']} "
        f"gave_up={r['gave_up']} rebalances={r['rebalances']}"
    )


def format_tables(results: list[dict[str, Any]]) -> str:
    """Markdown tables, one per N: measured figures next to the analytic model."""
    out = []
    by_n: dict[int, list[dict[str, Any]]] = defaultdict(list)
    for r in results:
        by_n[r["n"]].append(r)
    for n, rows in by_n.items():
        out.append(f"\nN = {n} members, {n} partitions (coordination-only members)\n")
        out.append(
            "| change | settled | settle s | 1st notif s | notifications (model) | zk requests (model) "
            "| registration reads (model) | owner writes (model 2P) | packets recv (−idle) | conflicts "
            "| failed attempts | gave up | rebalances |"
        )
        out.append("|" + "---|" * 13)
        for r in rows:
            m = r["model"]
            out.append(
                f"| {r['change']} | {'yes' if r['settled'] else 'no'} | {r['settle_s']} | {r['first_notification_s']} "
                f"| {r['watch_notifications']} ({m['watch_notifications']}) | {r['zk_requests']} ({m['zk_requests']}) "
                f"| {r['registration_reads']} ({m['registration_reads']}) "
                f"| {r['owner_creates'] + r['owner_deletes']} ({m['owner_writes']}) "
                f"| {r['packets_received']} ({r['packets_received_minus_idle']}) | {r['conflicts']} "
                f"| {r['failed_attempts']} | {r['gave_up']} | {r['rebalances']} |"
            )
    return "\n".join(out)


@click.command("legacy_zk")
@click.option("--sizes", default="10,50,100,200", show_default=True, help="Group sizes N (partitions = N).")
@click.option(
    "--changes", default="join,leave,crash", show_default=True, help="Membership changes to measure."
)
@click.option(
    "--session-timeout-ms", type=int, default=6000, show_default=True, help="zookeeper.session.timeout.ms"
)
@click.option("--backoff-ms", type=int, default=2000, show_default=True, help="rebalance.backoff.ms")
@click.option("--retries", type=int, default=4, show_default=True, help="rebalance.max.retries")
@click.option("--strategy", type=click.Choice(["range", "roundrobin"]), default="range", show_default=True)
@click.option(
    "--members-per-host", type=int, default=50, show_default=True, help="gevent members per process."
)
@click.option("--quiet-ms", type=int, default=1000, show_default=True, help="Quiet time that ends a settle.")
@click.option(
    "--settle-timeout", type=float, default=180.0, show_default=True, help="Seconds before giving up."
)
@click.option(
    "--workdir", type=click.Path(file_okay=False, path_type=Path), help="Keep histories and logs here."
)
@click.option(
    "--output", type=click.Path(dir_okay=False, path_type=Path), help="Write all figures as JSON here."
)
def legacy_zk(
    sizes: str,
    changes: str,
    session_timeout_ms: int,
    backoff_ms: int,
    retries: int,
    strategy: str,
    members_per_host: int,
    quiet_ms: int,
    settle_timeout: float,
    workdir: Path | None,
    output: Path | None,
) -> None:
    """Herd effect of the 0.8 ZooKeeper consumer per join / leave / crash, against the model."""
    try:
        size_list = [int(x) for x in sizes.split(",") if x.strip()]
    except ValueError:
        raise HerdlabError(f"--sizes: not a list of integers: {sizes!r}") from None
    change_list = [c.strip() for c in changes.split(",") if c.strip()]
    bad = [c for c in change_list if c not in CHANGES]
    if bad:
        raise HerdlabError(f"--changes: unknown {bad} (known: {', '.join(CHANGES)})")
    if "leave" in change_list and "join" not in change_list:
        raise HerdlabError("--changes: 'leave' stops the member 'join' started; measure join too")
    settings = BenchSettings(
        sizes=size_list,
        changes=change_list,
        session_timeout_ms=session_timeout_ms,
        backoff_ms=backoff_ms,
        retries=retries,
        members_per_host=members_per_host,
        quiet_ms=quiet_ms,
        settle_timeout_s=settle_timeout,
        strategy=strategy,
        workdir=workdir,
    )
    click.echo(
        f"legacy_zk herd benchmark: sizes {size_list}, changes {change_list}, session {session_timeout_ms} ms, "
        f"backoff {backoff_ms} ms x {retries}, {strategy}; coordination-only members "
        f"({members_per_host} per gevent process, the victim and the joiner alone in theirs)"
    )
    results = run_bench(settings, echo=click.echo)
    click.echo(format_tables(results))
    if output:
        output.parent.mkdir(parents=True, exist_ok=True)
        output.write_text(
            json.dumps(
                {"settings": {k: str(v) for k, v in vars(settings).items()}, "results": results}, indent=2
            )
        )
        click.echo(f"\nfigures written to {output}")
