"""``herdlab bench legacy_zk``: the herd effect of the 0.8 ZooKeeper consumer per membership change,
beside the analytic model (:mod:`legacy_zk.model`), counted by the bench and by the PySpark checker.

Contract
--------
For each group size N (default 10, 50, 100, 200; P = N partitions, one registered broker: B = 1) on a
fresh ZooKeeper, in ``<workdir>/N<n>/`` (:func:`run_size`):

* member processes ``python -m harness member legacy_zk --no-fetch --name <process> --history <process>.jsonl``
  (coordination-only: the 0.8 rebalance reads and writes the same znodes with or without a
  fetcher): N - 1 members on gevent in processes ``host<i>`` (``members_per_host`` each, named
  ``host<i>-<j>``; a process of one member is named as the process) and ``victim`` alone in its own;
* a history ``nemesis.jsonl`` in the contract of :mod:`harness.kernel.events`: ``unit_start`` (role
  harness, with ``partitions``), ``stable`` once the N members settled, then per change an
  ``invoke`` (``trigger`` true, ``action_id``) just before acting and its ``complete`` once it took
  effect -- **join**: a new member ``joiner`` in its own process, complete once its ``ready`` was
  read (``ready_ns``); **leave**: SIGTERM to ``joiner`` (a clean close), complete once the process
  exited; **crash**: SIGKILL to ``victim``, complete once the process is dead, with every member
  of that process as targets (the survivors learn of it when its session expires) --; ``zk_mntr``
  samples (role harness; labels ``idle:<action_id>`` ``idle_s`` before the invoke, ``invoke:<action_id>``
  just before it, and ``settling_end``) and ``settling_end`` once the last change settled;
* every wait is :meth:`harness.kernel.ownership.GroupView.settled` (window W) over the events read so
  far from all these files, after a first reaction to the change (as
  :func:`harness.kernel.windows.evaluate` defines both; a join also waits for the joiner to be
  live). A start-up in which members gave up is nudged by touching the topic znode (before
  ``stable``: not measured). A change that does not settle within ``settle_timeout_s`` ends the
  measurement of that N (its outcome is ``never``).

The bench only orchestrates: it counts nothing. Once every N ran (:func:`write_run_dir`), their
histories become one run directory ``<workdir>/run`` (``history.parquet``, ``manifest.json`` with one
unit per N: case ``N=<n>``, impl legacy_zk, settle window W), which the PySpark checker analyses
(:func:`analyse`: :func:`harness.analysis.analyze_run`; ``metrics.json`` is kept there). Its figures
of each trigger, with the trigger windows of :func:`harness.kernel.windows.evaluate` ([t0, end): t0
= the invoke, for a join the joiner's ``ready``; end = the next trigger's t0, else
``settling_end``), are the herd family's (:mod:`harness.analysis.herd`): the members' ``watch``
events (notifications) and the first one, their ``zk_request`` events of the rebalance (offset
writes are steady state), by operation; owner writes (``create`` / ``delete`` under ``/owners/``);
registration reads; conflicts; failed attempts; rebalancing members; latency t1 - t0; ZooKeeper
packets received from the ``invoke:`` sample to the next window edge's sample, raw and minus the
idle rate measured from the ``idle:`` sample to the ``invoke:`` one; the live members and
partitions just before the invoke (:mod:`harness.analysis.facts`).
:func:`harness.bench.legacy_zk_figures.unit_figures` sets each beside
:func:`legacy_zk.model.herd_model` of those members, with the deviation (measured - model, and %),
printed per N. ``--no-analysis`` skips the checker, and with it every figure.
"""

from __future__ import annotations

import contextlib
import json
import secrets
import signal
import tempfile
import time
from collections.abc import Callable, Mapping
from dataclasses import asdict, dataclass
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import click

from harness.analysis import analyze_run
from harness.analysis.metrics_model import MetricsDocument
from harness.analysis.spark import stop_spark
from harness.bench.common import Sizes, emit_unit_start, settle_window_option
from harness.bench.legacy_zk_figures import ChangeFigures, format_size, unit_figures
from harness.cluster.zookeeper import ZooKeeperServer
from harness.history.schema import to_parquet
from harness.history.writer import HistoryWriter
from harness.kernel.errors import HerdlabError
from harness.kernel.events import Kind, Role
from harness.run.launch import MemberService, legacy_member_argv
from harness.run.manifest import write_manifest
from harness.run.tail import GroupWatch
from harness.scenario import Scenario
from harness.scenario.processing import processing_gap_s
from legacy_zk import paths
from legacy_zk.model import CHANGES

__all__ = ["LegacyBench", "analyse", "legacy_zk", "member_names", "run_size", "write_run_dir"]

IMPL = "legacy_zk"
SCENARIO = "bench-legacy_zk"
Echo = Callable[[str], None]


@dataclass(frozen=True)
class LegacyBench:
    """What to measure and how (see the module contract); times in ms unless named ``_s``."""

    sizes: tuple[int, ...]
    changes: tuple[str, ...] = CHANGES
    settle_window_s: float = 3.0
    session_timeout_ms: int = 6000
    backoff_ms: int = 2000
    retries: int = 4
    strategy: str = "range"
    members_per_host: int = 50
    tick_time_ms: int = 500
    idle_s: float = 2.0
    settle_timeout_s: float = 180.0

    def __post_init__(self) -> None:
        if any(n < 2 for n in self.sizes):
            raise HerdlabError("group sizes must be >= 2 (one member is the crash victim)")
        if len(set(self.sizes)) != len(self.sizes):
            raise HerdlabError(f"each group size is measured once, got {list(self.sizes)}")
        bad = [c for c in self.changes if c not in CHANGES]
        if bad:
            raise HerdlabError(f"unknown changes {bad} (known: {', '.join(CHANGES)})")
        if len(set(self.changes)) != len(self.changes):
            raise HerdlabError(f"each change is measured once per size, got {list(self.changes)}")
        if "leave" in self.changes and (
            "join" not in self.changes or self.changes.index("join") > self.changes.index("leave")
        ):
            raise HerdlabError("'leave' stops the member 'join' started: measure join before leave")


def case_label(n: int) -> str:
    """The run directory's case (one unit per group size)."""
    return f"N={n}"


# -- the processes --------------------------------------------------------------------------------------
def member_names(process: str, members: int) -> list[str]:
    """The history names of a process's members (``herdlab member legacy_zk --name``)."""
    return [process] if members == 1 else [f"{process}-{i}" for i in range(members)]


class _Run:
    """One group size's ZooKeeper, member processes and nemesis history (see :func:`run_size`)."""

    def __init__(self, b: LegacyBench, n: int, directory: Path, echo: Echo) -> None:
        self.b, self.n, self.d, self.echo = b, n, directory, echo
        self.group, self.topic = f"bench-{n}", f"herd-{n}"
        self.nemesis = HistoryWriter(directory / "nemesis.jsonl", source="nemesis", role=Role.NEMESIS)
        self.watch = GroupWatch(directory, n)
        self.procs: dict[str, MemberService] = {}
        self.members_of: dict[str, list[str]] = {}
        self.action_id = 0
        self.zk: Any = None
        self.admin: Any = None

    # processes
    def _argv(self, process: str, members: int) -> list[str]:
        b = self.b
        return legacy_member_argv(
            self.zk.connect_string,
            self.group,
            self.topic,
            "--no-fetch",
            "--members",
            str(members),
            "--name",
            process,
            "--history",
            str(self.d / f"{process}.jsonl"),
            "--zookeeper.session.timeout.ms",
            str(b.session_timeout_ms),
            "--zookeeper.connection.timeout.ms",
            "30000",
            "--rebalance.backoff.ms",
            str(b.backoff_ms),
            "--rebalance.max.retries",
            str(b.retries),
            "--partition.assignment.strategy",
            b.strategy,
            "--auto.commit.interval.ms",
            "600000",
        )

    def start(self, process: str, members: int) -> list[str]:
        self.members_of[process] = member_names(process, members)
        self.procs[process] = MemberService(
            f"legacy-zk-{self.group}-{process}",
            self._argv(process, members),
            self.d / f"{process}.jsonl",
            self.d / f"{process}.log",
            env={"HERDLAB_LOG_LEVEL": "WARNING"},
        ).start()
        return self.members_of[process]

    def sample(self, label: str) -> None:
        """ZooKeeper's mntr counters as a ``zk_mntr`` event (``label``: the moment it marks)."""
        counters = {k: v for k, v in self.zk.mntr().items() if isinstance(v, int | float)}
        self.nemesis.emit(Kind.ZK_MNTR, role=Role.HARNESS, label=label, counters=counters)

    def _settled(self, members: list[str]) -> bool:
        return self.watch.settled(self.b.settle_window_s, members)

    def _rss_mb(self) -> float:
        import psutil

        total = 0
        for p in self.procs.values():
            with contextlib.suppress(psutil.Error):
                total += psutil.Process(p.pid).memory_info().rss
        return total / 2**20

    # the unit
    def form(self) -> None:
        """ZooKeeper, the broker and topic znodes, ``unit_start``, the N members settled, ``stable``."""
        from kazoo.client import KazooClient

        b = self.b
        self.zk = ZooKeeperServer(tick_time_ms=b.tick_time_ms, heap_mb=1024, log_level="WARN").start()
        self.admin = KazooClient(hosts=self.zk.connect_string, timeout=30.0)
        self.admin.start(timeout=30)
        # coordination-only: one 0.8.2 broker registration, so that the 0.8 rebalance proceeds
        self.admin.create(
            paths.broker_path(0), paths.encode_broker("127.0.0.1", 9, 0), ephemeral=True, makepath=True
        )
        self.admin.create(paths.topic_path(self.topic), self._topic_data(), makepath=True)
        hosted = self.n - 1
        sizes = [min(b.members_per_host, hosted - i) for i in range(0, hosted, b.members_per_host)]
        plan = [(f"host{h}", k) for h, k in enumerate(sizes)] + [("victim", 1)]
        initial = [m for process, k in plan for m in member_names(process, k)]
        emit_unit_start(self.nemesis, self.topic, self.group, self.n, initial)
        self.sample("start")
        t0 = time.monotonic()
        running: list[str] = []
        for process, k in plan:  # one process at a time: a smaller start-up herd
            running += self.start(process, k)
            if not self._wait_formed(running):
                raise HerdlabError(
                    f"N={self.n}: {len(running)} members did not settle during start-up within "
                    f"{b.settle_timeout_s:g}s ({self.watch.view.summary()}); see {self.d}"
                )
        self.nemesis.emit(Kind.STABLE, role=Role.HARNESS)
        self.sample("stable")
        self.echo(
            f"  N={self.n}: {self.n} members settled in {time.monotonic() - t0:.1f}s; member processes "
            f"RSS {self._rss_mb():.0f} MB in {len(self.procs)} processes"
        )

    def _topic_data(self) -> bytes:
        return paths.encode_topic({p: [0] for p in range(self.n)})

    def _wait_formed(self, members: list[str]) -> bool:
        """Wait until ``members`` are live and settled; touch the topic if some gave up meanwhile."""
        b = self.b
        deadline = time.monotonic() + b.settle_timeout_s
        patience = max(20.0, 3 * b.backoff_ms * b.retries / 1000.0)
        while time.monotonic() < deadline:
            if self.watch.until(lambda: self._settled(members), min(patience, deadline - time.monotonic())):
                return True
            if self.watch.gave_up:
                self.echo(
                    f"  N={self.n}: {len(self.watch.gave_up)} members gave up during start-up; "
                    "touching the topic znode"
                )
                self.admin.set(paths.topic_path(self.topic), self._topic_data())
        return False

    def change(self, action: str) -> bool:
        """One measured change (see the module contract); True once the group settled after it."""
        b = self.b
        self.action_id += 1
        aid = self.action_id
        targets = self.members_of["victim"] if action == "crash" else ["joiner"]
        pair = {"action": action, "action_id": aid, "targets": targets, "trigger": True}
        self.sample(f"idle:{aid}")
        idle_end = time.monotonic() + b.idle_s
        self.watch.until(lambda: time.monotonic() >= idle_end, b.idle_s + 1.0)  # the idle rate's interval
        self.sample(f"invoke:{aid}")
        t0 = time.time_ns()
        self.nemesis.emit(Kind.INVOKE, **pair)
        if action == "join":
            self.start("joiner", 1)
            if not self.watch.until(lambda: self.watch.ready.get("joiner", 0) >= t0, b.settle_timeout_s):
                raise HerdlabError(f"N={self.n}: the joiner was not ready within {b.settle_timeout_s:g}s")
            t0 = self.watch.ready["joiner"]
            self.nemesis.emit(Kind.COMPLETE, **pair, ready_ns={"joiner": t0})
        else:
            process = "joiner" if action == "leave" else "victim"
            proc = self.procs.pop(process)
            if action == "leave":
                proc.signal(signal.SIGTERM, group=False)  # a clean close: the member deletes its znodes
            else:
                proc.signal(signal.SIGKILL)
            code = proc.wait(b.settle_timeout_s)
            proc.stop()
            if code is None:
                raise HerdlabError(f"N={self.n}: {process} did not exit within {b.settle_timeout_s:g}s")
            self.nemesis.emit(Kind.COMPLETE, **pair, exit_code=code)
        must_live = targets if action == "join" else []
        window_ns = b.settle_window_s * 1e9

        def settled() -> bool:
            react = self.watch.first_reaction(t0, targets)
            return react is not None and time.time_ns() - react >= window_ns and self._settled(must_live)

        ok = self.watch.until(settled, b.settle_timeout_s)
        took = (time.time_ns() - t0) / 1e9
        self.echo(
            f"  N={self.n} {action}: "
            + (f"settled (seen {took:.1f}s after t0)" if ok else f"NOT settled after {took:.0f}s")
        )
        return ok

    def finish(self, settled: bool) -> None:
        self.sample("settling_end")
        self.nemesis.emit(Kind.SETTLING_END, role=Role.HARNESS, settled=settled)

    def close(self) -> None:
        """Quiesce every member (no teardown herd), stop them, the admin client and ZooKeeper."""
        for p in self.procs.values():
            p.signal(signal.SIGUSR1)
        for p in self.procs.values():
            p.stop(grace=30)
        self.procs.clear()
        if self.admin is not None:
            with contextlib.suppress(Exception):
                self.admin.stop()
                self.admin.close()
        if self.zk is not None:
            self.zk.stop()
        self.nemesis.close()


def run_size(b: LegacyBench, n: int, directory: Path, echo: Echo = print) -> None:
    """Form a group of ``n`` in ``directory`` (new or empty), make ``b.changes``: the histories."""
    if directory.exists() and any(directory.iterdir()):
        raise HerdlabError(f"{directory} is not empty: give a workdir without earlier histories")
    directory.mkdir(parents=True, exist_ok=True)
    run = _Run(b, n, directory, echo)
    try:
        run.form()
        settled = True
        for action in b.changes:
            settled = run.change(action)
            if not settled:
                echo(f"  N={n}: the remaining changes are not measured (the group did not settle)")
                break
        run.finish(settled)
    finally:
        run.close()


# -- the run directory and the checker ---------------------------------------------------------------
def write_run_dir(run_dir: Path, b: LegacyBench, size_dirs: Mapping[int, Path], started: str) -> int:
    """``history.parquet`` (every size's files, one unit per size) and ``manifest.json``; the row count."""
    # the bench's members fetch no records; their bound is the scenario defaults' (stated, as a run's)
    base = Scenario(name=SCENARIO, implementations=[IMPL])

    run_id = f"{datetime.now(UTC):%Y%m%d-%H%M%S}-{secrets.token_hex(2)}"

    def ctx(n: int) -> dict[str, Any]:
        return {"run_id": run_id, "scenario": SCENARIO, "case": case_label(n), "impl": IMPL, "repetition": 0}

    sources = [(p, ctx(n)) for n, d in size_dirs.items() for p in sorted(d.glob("*.jsonl"))]
    rows = to_parquet(sources, run_dir / "history.parquet")
    write_manifest(
        run_dir / "manifest.json",
        run_id=run_id,
        scenario={
            "name": SCENARIO,
            "description": "herdlab bench legacy_zk: one join, leave and crash per group size",
            "settle_window": b.settle_window_s,
            "implementations": [IMPL],
        },
        cases=[
            {
                "index": i,
                "label": case_label(n),
                "params": {"members": n},
                "members": n,
                "partitions": n,
                "processing_gap_s": {IMPL: processing_gap_s(base, IMPL, n)},
            }
            for i, n in enumerate(size_dirs)
        ],
        repetitions=1,
        backend="local",
        started=started,
        finished=datetime.now(UTC).isoformat(),
        interrupted=False,
        units=[{"unit": f"N{n}", "case": case_label(n), "impl": IMPL, "repetition": 0} for n in size_dirs],
        bench=asdict(b),
    )
    return rows


def analyse(run_dir: Path) -> MetricsDocument:
    """Analyse ``run_dir`` with the PySpark checker; its metrics document (also written to
    ``run_dir/metrics.json``)."""
    try:
        metrics = analyze_run(run_dir)
    finally:
        stop_spark()
    (run_dir / "metrics.json").write_text(json.dumps(metrics, indent=1, default=str) + "\n")
    return metrics


# -- the command ------------------------------------------------------------------------------------
@click.command("legacy_zk")
@click.option(
    "--sizes",
    type=Sizes(minimum=2, why=" (one member is the crash victim)"),
    default="10,50,100,200",
    show_default=True,
    help="Group sizes N (P = N).",
)
@click.option(
    "--changes",
    default="join,leave,crash",
    show_default=True,
    help="Membership changes to measure, in order.",
)
@settle_window_option
@click.option(
    "--session-timeout-ms", type=int, default=6000, show_default=True, help="zookeeper.session.timeout.ms"
)
@click.option("--backoff-ms", type=int, default=2000, show_default=True, help="rebalance.backoff.ms")
@click.option("--retries", type=int, default=4, show_default=True, help="rebalance.max.retries")
@click.option("--strategy", type=click.Choice(["range", "roundrobin"]), default="range", show_default=True)
@click.option(
    "--members-per-host",
    type=click.IntRange(min=1),
    default=50,
    show_default=True,
    help="gevent members per process.",
)
@click.option(
    "--tick-time", "tick_time_ms", type=int, default=500, show_default=True, help="ZooKeeper tickTime in ms."
)
@click.option(
    "--idle",
    "idle_s",
    type=click.FloatRange(min=0, min_open=True),
    default=2.0,
    show_default=True,
    help="Seconds before each change over which the idle packet rate (pings) is measured.",
)
@click.option(
    "--settle-timeout", type=float, default=180.0, show_default=True, help="Seconds before a wait gives up."
)
@click.option(
    "--no-analysis",
    is_flag=True,
    help="Skip the PySpark checker, which computes every figure (none is printed).",
)
@click.option(
    "--workdir",
    type=click.Path(file_okay=False, path_type=Path),
    help="Keep the histories, logs and run directory here (default: a temporary directory, removed afterwards).",
)
@click.option(
    "--output", type=click.Path(dir_okay=False, path_type=Path), help="Write all figures as JSON here."
)
def legacy_zk(
    sizes: tuple[int, ...],
    changes: str,
    settle_window: float,
    session_timeout_ms: int,
    backoff_ms: int,
    retries: int,
    strategy: str,
    members_per_host: int,
    tick_time_ms: int,
    idle_s: float,
    settle_timeout: float,
    no_analysis: bool,
    workdir: Path | None,
    output: Path | None,
) -> None:
    """Herd effect of the 0.8 ZooKeeper consumer per join / leave / crash, against the model.

    Runs each group size and writes the histories as one run directory; the PySpark checker counts
    notifications, ZooKeeper requests and owner writes per trigger window (as the reports count
    them), and the bench prints them beside the analytic model with the deviation.
    """
    b = LegacyBench(
        sizes=sizes,
        changes=tuple(c.strip() for c in changes.split(",") if c.strip()),
        settle_window_s=settle_window,
        session_timeout_ms=session_timeout_ms,
        backoff_ms=backoff_ms,
        retries=retries,
        strategy=strategy,
        members_per_host=members_per_host,
        tick_time_ms=tick_time_ms,
        idle_s=idle_s,
        settle_timeout_s=settle_timeout,
    )
    click.echo(
        f"legacy_zk herd benchmark: sizes {list(b.sizes)}, changes {list(b.changes)}, W {settle_window:g} s, "
        f"session {session_timeout_ms} ms, backoff {backoff_ms} ms x {retries}, {strategy}; coordination-only "
        f"members ({members_per_host} per gevent process, the victim and the joiner alone in theirs)"
    )
    with contextlib.ExitStack() as stack:
        root = workdir or Path(stack.enter_context(tempfile.TemporaryDirectory(prefix="herdlab-bench-")))
        started = datetime.now(UTC).isoformat()
        dirs: dict[int, Path] = {}
        for n in b.sizes:
            click.echo(f"N={n}: starting {n} members ...")
            dirs[n] = root / f"N{n}"
            try:
                run_size(b, n, dirs[n], echo=click.echo)
            except HerdlabError as e:
                if workdir is not None:
                    raise
                raise HerdlabError(f"{e} (a temporary directory: --workdir DIR keeps the logs)") from None
        run_dir = root / "run"
        rows = write_run_dir(run_dir, b, dirs, started)
        if no_analysis:
            kept = f"is in {run_dir}" if workdir else "was in a temporary directory (--workdir DIR keeps it)"
            click.echo(f"\n--no-analysis: no figures; the history ({rows} events) {kept}")
            return
        click.echo(f"\nthe PySpark checker on the bench's history ({rows} events, {run_dir}) ...")
        metrics = analyse(run_dir)
        results = {n: unit_figures(metrics, case_label(n)) for n in b.sizes}
        for n, measured in results.items():
            click.echo(format_size(n, measured, settle_window))
        if output:
            _write_json(output, b, results)
            click.echo(f"\nfigures written to {output}")


def _write_json(path: Path, b: LegacyBench, results: Mapping[int, list[ChangeFigures]]) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    data = {
        "settings": asdict(b),
        "results": {str(n): [asdict(c) for c in cs] for n, cs in results.items()},
    }
    path.write_text(json.dumps(data, indent=2, default=str) + "\n")
