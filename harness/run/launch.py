"""Starting member and producer processes for one run unit, each kind the way it is run by hand.

Every process goes through :func:`harness.procs.spawn` (own process group, registered, stopped at
the end) and writes its events to ``<events>/<name>.jsonl`` and its log to ``<logs>/<name>.log``.
Members are started with ``python -m harness member <impl> ...``, the same commands a person uses.
:func:`start_member` takes a ``launcher`` to run that command elsewhere (the containers backend runs
it in a container); the runner handles every member through :class:`MemberHandle`.
"""

from __future__ import annotations

import sys
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Protocol

from harness.procs import ChildProcess, spawn
from harness.scenario.model import Scenario

PY = [sys.executable, "-m", "harness"]


class MemberHandle(Protocol):
    """A running member as the runner drives it: :class:`~harness.procs.ChildProcess` (a local
    process) or :class:`~harness.cluster.containers.MemberContainer` (SIGKILL / SIGSTOP / SIGCONT
    become docker kill / pause / unpause)."""

    def alive(self) -> bool: ...

    def signal(self, sig: int, group: bool = True) -> None: ...

    def wait(self, timeout: float | None = None) -> int | None: ...

    def stop(self, grace: float = 5.0) -> None: ...


#: Starts a member command elsewhere: ``(argv, name, log_path) -> handle``; ``argv[0]`` is this Python.
Launcher = Callable[[list[str], str, Path], MemberHandle]


@dataclass(frozen=True)
class Endpoints:
    """Where one member connects (a proxy's address when the member can be cut off)."""

    zookeeper: str
    bootstrap: str


def coordinator_argv(
    s: Scenario, name: str, ep: Endpoints, history: Path, group: str, topic: str
) -> list[str]:
    c = s.group.coordinator
    argv = PY + ["member", "coordinator", "--bootstrap", ep.bootstrap, "--group", group, "--topic", topic]
    argv += ["--name", name, "--history", str(history)]
    argv += [
        "--session-timeout-ms",
        str(c.session_timeout_ms),
        "--heartbeat-interval-ms",
        str(c.heartbeat_interval_ms),
    ]
    argv += [
        "--max-poll-interval-ms",
        str(c.max_poll_interval_ms),
        "--auto-commit-interval-ms",
        str(c.auto_commit_interval_ms),
    ]
    argv += ["--assignor", s.group.assignor]
    if c.static_membership:
        argv += ["--group-instance-id", name]
    return argv


def legacy_argv(s: Scenario, name: str, ep: Endpoints, history: Path, group: str, topic: str) -> list[str]:
    c = s.group.legacy_zk
    props = {
        "zookeeper.session.timeout.ms": c.zookeeper_session_timeout_ms,
        "rebalance.max.retries": c.rebalance_max_retries,
        "rebalance.backoff.ms": c.rebalance_backoff_ms,
        "auto.commit.enable": str(c.auto_commit_enable).lower(),
        "auto.commit.interval.ms": c.auto_commit_interval_ms,
        "auto.offset.reset": c.auto_offset_reset,
        "partition.assignment.strategy": s.group.assignor,
        "takeover.delay.ms": c.takeover_delay_ms,
        "offsets.commit.fenced": str(c.fenced_commits).lower(),
        "herdlab.zk.reconnect.delay.ms": c.reconnect_delay_ms,
        "herdlab.zk.reconnect.random.ms": c.reconnect_random_ms,
    }
    argv = PY + [
        "member",
        "legacy_zk",
        "--zookeeper",
        ep.zookeeper,
        "--bootstrap",
        ep.bootstrap,
        "--handler",
        "threading",
    ]
    argv += ["--group", group, "--topic", topic, "--name", name, "--history", str(history)]
    for k, v in props.items():
        argv += ["-X", f"{k}={v}"]
    return argv


def start_member(
    impl: str,
    s: Scenario,
    name: str,
    ep: Endpoints,
    events: Path,
    logs: Path,
    group: str,
    topic: str,
    launcher: Launcher | None = None,
) -> MemberHandle:
    """Start one member of ``impl`` named ``name``: a child process, or through ``launcher``."""
    history = events / f"{name}.jsonl"
    build = coordinator_argv if impl == "coordinator" else legacy_argv
    argv = build(s, name, ep, history, group, topic)
    if launcher is not None:
        return launcher(argv, f"{impl}:{name}", logs / f"{name}.log")
    return spawn(argv, name=f"{impl}:{name}", log_path=logs / f"{name}.log")


def start_producer(s: Scenario, bootstrap: str, events: Path, logs: Path, topic: str) -> ChildProcess:
    argv = PY + ["produce", "--bootstrap", bootstrap, "--topic", topic, "--rate", str(s.workload.rate)]
    argv += ["--record-size", str(s.workload.record_size), "--history", str(events / "producer.jsonl")]
    return spawn(argv, name="producer", log_path=logs / "producer.log")
