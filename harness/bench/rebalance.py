"""Rebalance latency of a coordinator group when one member joins and when one leaves, measured with
the one definition of trigger windows (:func:`harness.kernel.windows.evaluate`): the same figure as
the reports' "rebalance latency".

Contract
--------
:func:`run_rebalance` measures one group size N in a directory of its own:

* a broker (``python -m harness.cluster.broker_main``, history ``broker.jsonl``, role broker), a topic of N + 1
  partitions (so with range every member owns at least one), and N members run as the harness runs
  them: ``python -m harness member coordinator ... --history <name>.jsonl`` (unmodified kafka-python;
  heartbeat 500 ms, session 6 s by default; no auto-commit, nothing is produced), each a
  :class:`harness.run.launch.MemberService`;
* a nemesis history ``nemesis.jsonl`` (:mod:`harness.kernel.events`): ``unit_start`` (role harness,
  with ``partitions``), ``stable`` once the N members settled, then ``reps`` times a ``join`` of a new
  member ``j<rep>`` and its ``leave``, each an ``invoke`` (``trigger`` true, ``action_id``) just before
  acting and a ``complete`` once it took effect (a join: the joiner's ``ready`` was read, carried as
  ``ready_ns``; a leave: the SIGTERMed process exited, after its clean close and LeaveGroup), and
  ``settling_end`` (role harness) after the last change settled;
* every wait is :meth:`GroupView.settled` over the events read so far from all of these files
  (:class:`harness.run.tail.GroupWatch`; a join also waits for the joiner to be live): the same fold and window ``W`` that :func:`evaluate` uses,
  so each trigger's window holds its settled instant. Afterwards DescribeGroups checks, as a sanity
  check only, that the broker agrees (group Stable with the expected member count).

:func:`measure` evaluates the merged events of all files with window ``W`` and returns one
:class:`Change` per trigger: latency = t1 - t0 (t0 = the invoke, for a join the joiner's ``ready``;
t1 = settled), detection = first reaction - t0, convergence = t1 - first reaction, and for a join the
start-up (t0 - invoke) apart. Raises :class:`~harness.kernel.errors.HerdlabError` (one line, naming the
directory with the logs) when the group does not settle in time or the broker disagrees.

:func:`rebalance` is the command ``herdlab bench coordinator rebalance`` (added to the
``coordinator`` group by :mod:`harness.bench.coordinator`): per group size, the figures of every
trigger and a table of their medians.
"""

from __future__ import annotations

import contextlib
import math
import signal
import statistics
import tempfile
from collections import Counter
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import click
from rich.console import Console
from rich.table import Table

from coordinator.rawclient import RawClient
from harness.bench.common import Sizes, emit_unit_start, merged_events, settle_window_option
from harness.cluster.broker import BrokerProcess
from harness.history.writer import HistoryWriter
from harness.kernel.errors import HerdlabError
from harness.kernel.events import SETTLED, Kind, Role
from harness.kernel.windows import evaluate
from harness.run.launch import PY, MemberService
from harness.run.tail import GroupWatch

__all__ = ["Change", "RebalanceBench", "measure", "member_argv", "rebalance", "run_rebalance"]

console = Console()


@dataclass(frozen=True)
class RebalanceBench:
    """One group size's measurement (see the module contract)."""

    members: int
    reps: int
    workdir: Path
    settle_window_s: float = 3.0
    session_timeout_ms: int = 6000
    heartbeat_interval_ms: int = 500
    form_timeout_s: float = 300.0
    change_timeout_s: float = 60.0


@dataclass(frozen=True)
class Change:
    """One trigger's figures in ms (None unless its outcome is ``settled``; ``startup_ms`` for joins)."""

    action: str
    member: str
    outcome: str
    latency_ms: float | None
    detection_ms: float | None
    convergence_ms: float | None
    startup_ms: float | None


def measure(events: list[dict[str, Any]], window_ns: int) -> list[Change]:
    """Every trigger of one run's merged events, in time order, from :func:`evaluate`."""
    out = []
    for t in evaluate(events, window_ns).triggers:
        lat = det = conv = None
        if t.outcome == SETTLED and t.t1_ns is not None and t.react_ns is not None:
            lat = (t.t1_ns - t.t0_ns) / 1e6
            det = (t.react_ns - t.t0_ns) / 1e6
            conv = (t.t1_ns - t.react_ns) / 1e6
        startup = None if t.startup_ns is None else t.startup_ns / 1e6
        out.append(Change(t.action, ",".join(t.targets), t.outcome, lat, det, conv, startup))
    return out


def member_argv(
    b: RebalanceBench, bootstrap: str, group: str, topic: str, name: str, history: Path
) -> list[str]:
    """The harness's coordinator member (``herdlab member coordinator``) with the bench's settings."""
    argv = PY + ["member", "coordinator", "--bootstrap", bootstrap, "--group", group, "--topic", topic]
    argv += ["--name", name, "--history", str(history)]
    argv += ["--session-timeout-ms", str(b.session_timeout_ms)]
    argv += ["--heartbeat-interval-ms", str(b.heartbeat_interval_ms)]
    return argv + ["--no-auto-commit", "--auto-offset-reset", "latest"]


def _until(watch: GroupWatch, condition: Callable[[], bool], timeout_s: float, what: str) -> None:
    """Read the histories until ``condition()`` holds; HerdlabError after ``timeout_s``."""
    if not watch.until(condition, timeout_s):
        raise HerdlabError(
            f"timed out after {timeout_s:g}s waiting for {what} ({watch.view.summary()}); see {watch.path}"
        )


def _create_topic(bootstrap: str, topic: str, partitions: int) -> None:
    from kafka.admin import KafkaAdminClient, NewTopic

    admin = KafkaAdminClient(bootstrap_servers=bootstrap, client_id="herdlab-bench")
    try:
        admin.create_topics([NewTopic(topic, partitions, 1)])
    finally:
        admin.close()


def _check_broker(bootstrap: str, group: str, members: int, directory: Path) -> None:
    """Sanity check, not the definition: the broker's group is Stable with ``members`` members."""
    from kafka.protocol.admin import DescribeGroupsRequest

    host, port = bootstrap.rsplit(":", 1)
    with RawClient(host, int(port)) as raw:
        g = raw.call(DescribeGroupsRequest(groups=[group]), 1).groups[0]
    if (g.group_state, len(g.members)) != ("Stable", members):
        raise HerdlabError(
            f"the members settled but the broker has group {group} {g.group_state} with "
            f"{len(g.members)} members (expected Stable with {members}); see {directory}"
        )


class _Run:
    """One group size's processes and nemesis history (see :func:`run_rebalance`)."""

    def __init__(self, b: RebalanceBench, directory: Path) -> None:
        self.b = b
        self.d = directory
        self.group = self.topic = f"bench-{b.members}"
        self.partitions = b.members + 1
        self.broker = BrokerProcess(
            history_path=directory / "broker.jsonl",
            log_path=directory / "broker.log",
            extra_args=["--metrics-interval", "0"],
        )
        self.nemesis = HistoryWriter(directory / "nemesis.jsonl", source="nemesis", role=Role.NEMESIS)
        self.watch = GroupWatch(directory, self.partitions)
        self.procs: dict[str, MemberService] = {}
        self.action_id = 0

    def start(self, name: str, ready_timeout: float | None = None) -> MemberService:
        """Start member ``name``; with ``ready_timeout``, wait until it wrote ``ready``."""
        history = self.d / f"{name}.jsonl"
        argv = member_argv(self.b, self.broker.bootstrap, self.group, self.topic, name, history)
        member = MemberService(f"coordinator:{name}", argv, history, self.d / f"{name}.log")
        self.procs[name] = member
        return member.start(ready_timeout)

    def settled(self) -> bool:
        return self.watch.settled(self.b.settle_window_s)

    def form(self) -> None:
        """``unit_start``, the N initial members, a settled group of them, ``stable``."""
        self.broker.start()
        _create_topic(self.broker.bootstrap, self.topic, self.partitions)
        initial = [f"m{i}" for i in range(self.b.members)]
        emit_unit_start(self.nemesis, self.topic, self.group, self.partitions, initial)
        for name in initial:
            self.start(name)
        _until(
            self.watch,
            lambda: set(initial) <= self.watch.view.live and self.settled(),
            self.b.form_timeout_s,
            f"a settled group of {self.b.members}",
        )
        _check_broker(self.broker.bootstrap, self.group, self.b.members, self.d)
        self.nemesis.emit(Kind.STABLE, role=Role.HARNESS)

    def _pair(self, action: str, name: str) -> dict[str, Any]:
        self.action_id += 1
        return {"action": action, "action_id": self.action_id, "targets": [name], "trigger": True}

    def join(self, name: str) -> None:
        """Start ``name``; complete once it is ready; wait until it is live and settled."""
        pair = self._pair("join", name)
        self.nemesis.emit(Kind.INVOKE, **pair)
        joiner = self.start(name, ready_timeout=self.b.change_timeout_s)
        self.nemesis.emit(Kind.COMPLETE, **pair, ready_ns={name: joiner.ready_ns})
        _until(
            self.watch,
            lambda: name in self.watch.view.live and self.settled(),
            self.b.change_timeout_s,
            f"{name} to join and the group to settle",
        )
        _check_broker(self.broker.bootstrap, self.group, len(self.procs), self.d)

    def leave(self, name: str) -> None:
        """SIGTERM ``name`` (clean close, LeaveGroup); complete once it exited; wait until settled."""
        pair = self._pair("leave", name)
        self.nemesis.emit(Kind.INVOKE, **pair)
        leaver = self.procs.pop(name)
        leaver.signal(signal.SIGTERM, group=False)
        code = leaver.wait(self.b.change_timeout_s)
        leaver.stop()
        if code is None:
            raise HerdlabError(
                f"{name} did not exit within {self.b.change_timeout_s:g}s of SIGTERM; see {self.d}"
            )
        self.nemesis.emit(Kind.COMPLETE, **pair, exit_code=code)
        _until(self.watch, self.settled, self.b.change_timeout_s, f"the group to settle after {name} left")
        _check_broker(self.broker.bootstrap, self.group, len(self.procs), self.d)

    def close(self) -> None:
        """Stop every member (clean close first), then the broker."""
        for p in self.procs.values():
            p.signal(signal.SIGTERM, group=False)
        for p in self.procs.values():
            p.stop()
        self.procs.clear()
        self.broker.stop()
        self.nemesis.close()


def run_rebalance(b: RebalanceBench, echo: Callable[[str], None] = print) -> list[Change]:
    """Form a group of ``b.members``, then ``b.reps`` times one join and one leave; their figures."""
    d = b.workdir / f"N{b.members}"
    if d.exists() and any(d.iterdir()):
        raise HerdlabError(f"{d} is not empty: give a workdir without earlier histories")
    d.mkdir(parents=True, exist_ok=True)
    run = _Run(b, d)
    try:
        run.form()
        for rep in range(b.reps):
            name = f"j{rep}"
            run.join(name)
            echo(f"  N={b.members} rep {rep + 1}: {name} joined, the group settled")
            run.leave(name)
            echo(f"  N={b.members} rep {rep + 1}: {name} left, the group settled")
        run.nemesis.emit(Kind.SETTLING_END, role=Role.HARNESS, settled=True)
    finally:
        run.close()
    return measure(merged_events(d), int(b.settle_window_s * 1e9))


# -- the command (``herdlab bench coordinator rebalance``) ------------------------------------------


def _ms(v: float | None) -> str:
    return "-" if v is None else f"{v:.0f}"


def _median_of(changes: list[Change], attr: str) -> float:
    """The median over repetitions where a change that did not settle counts as +infinity (never),
    as the reports' statistics count it (docs/concepts.md, "statistics")."""
    return statistics.median(math.inf if getattr(c, attr) is None else getattr(c, attr) for c in changes)


def _shown(*values: float) -> str:
    if all(math.isfinite(v) for v in values):
        return " / ".join(f"{v:.0f}" for v in values) + " ms"
    return " / ".join("never" if math.isinf(v) else f"{v:.0f} ms" for v in values)


def _rebalance_rows(n: int, changes: list[Change]) -> list[tuple[str, str]]:
    """Table rows of one group size: per action, latency median / max and the medians of its parts."""
    rows = []
    for action, verb in (("join", "joins"), ("leave", "leaves")):
        mine = [c for c in changes if c.action == action]
        if not mine:
            continue
        unsettled = Counter(c.outcome for c in mine if c.latency_ms is None)
        note = "".join(f", {k} {outcome}" for outcome, k in sorted(unsettled.items()))
        worst = max(math.inf if c.latency_ms is None else c.latency_ms for c in mine)
        rows.append(
            (
                f"N={n}, one member {verb}: rebalance latency median / max (n={len(mine)}{note})",
                _shown(_median_of(mine, "latency_ms"), worst),
            )
        )
        rows.append(("    detection (first reaction - t0), median", _shown(_median_of(mine, "detection_ms"))))
        rows.append(
            ("    convergence (t1 - first reaction), median", _shown(_median_of(mine, "convergence_ms")))
        )
        if action == "join":
            rows.append(
                (
                    "    start-up (t0 - invoke: the joiner booting), median",
                    _shown(_median_of(mine, "startup_ms")),
                )
            )
    return rows


@click.command("rebalance")
@click.option(
    "--members",
    "sizes",
    default="10,50",
    show_default=True,
    type=Sizes(minimum=1),
    help="Group sizes N, comma-separated.",
)
@click.option(
    "--reps", type=click.IntRange(min=1), default=5, show_default=True, help="Joins and leaves per size."
)
@settle_window_option
@click.option(
    "--workdir",
    type=click.Path(file_okay=False, path_type=Path),
    default=None,
    help="Keep the histories and logs here (default: a temporary directory, removed afterwards).",
)
def rebalance(sizes: tuple[int, ...], reps: int, settle_window: float, workdir: Path | None) -> None:
    """Rebalance latency of a settled group of N kafka-python consumers, one join / one leave.

    Measured as the reports measure it: t1 - t0 of each trigger window (harness.kernel.windows).
    """
    rows = []
    with contextlib.ExitStack() as stack:
        root = workdir or Path(stack.enter_context(tempfile.TemporaryDirectory(prefix="herdlab-bench-")))
        for n in sizes:
            console.print(f"N={n}: starting {n} consumers ...")
            bench = RebalanceBench(members=n, reps=reps, workdir=root, settle_window_s=settle_window)
            try:
                changes = run_rebalance(bench, echo=console.print)
            except HerdlabError as e:
                if workdir is not None:
                    raise
                raise HerdlabError(f"{e} (a temporary directory: --workdir DIR keeps the logs)") from None
            for c in changes:
                figures = (
                    f"{c.latency_ms:.0f} ms (detection {_ms(c.detection_ms)} ms, convergence {_ms(c.convergence_ms)} ms)"
                    if c.latency_ms is not None
                    else c.outcome
                )
                console.print(f"  N={n} {c.action} {c.member}: {figures}")
            rows += _rebalance_rows(n, changes)
    t = Table(
        title=f"Rebalance latency (heartbeat 500 ms, session 6 s, W = {settle_window:g} s; target median <= 800 ms)",
        caption=(
            'The reports\' "rebalance latency" (harness.kernel.windows): t1 - t0 of each trigger, '
            "t0 = the invoke, for a join the joiner's ready; t1 = every partition owned by exactly one "
            "live member (the joiner live) with no change for W. A change that did not settle counts as "
            "never (+infinity) in the statistics, as in the reports."
        ),
    )
    t.add_column("figure")
    t.add_column("value", justify="right")
    for k, v in rows:
        t.add_row(k, v)
    console.print(t)
