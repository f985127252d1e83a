"""Starting member and producer processes for one run unit, each kind the way it is run by hand.

Every process goes through :func:`harness.procs.spawn` (own process group, registered, stopped at
the end) and writes its events to ``<events>/<name>.jsonl`` and its log to ``<logs>/<name>.log``.
Members are started with ``python -m harness.members <impl> ...``: the commands a person runs as
``herdlab member <impl> ...``, without importing the rest of the command line.
:func:`start_member` takes a ``launcher`` to run that command elsewhere (the containers backend runs
it in a container). Every member, of every kind, is a :class:`MemberService` (the runner's and the
benches' handle, also named :data:`MemberHandle`):

* the Service lifecycle of the cluster's services: ``name``, ``log_path``, :meth:`MemberService.start`
  (optionally waiting until ready), :meth:`MemberService.ready` (the member wrote a ``ready`` event to
  its history since this start: booted, about to connect) and :meth:`MemberService.stop`;
* the operations the nemesis uses, names and meaning unchanged: ``alive()``, ``signal(sig, group)``
  (SIGKILL / SIGSTOP / SIGCONT; a container turns them into kill / pause / unpause), ``wait(timeout)``,
  ``pid`` and ``box`` (the member's container, None for a local process).
"""

from __future__ import annotations

import sys
import time
from collections.abc import Callable, Collection, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Protocol

from harness.kernel.errors import HerdlabError, Unreachable
from harness.kernel.events import Kind
from harness.procs import ChildProcess, spawn
from harness.run.tail import POLL_S, HistoryTail
from harness.scenario.model import Scenario, property_string

__all__ = [
    "PY",
    "Endpoints",
    "Launcher",
    "MEMBER_PY",
    "MemberHandle",
    "MemberProcess",
    "MemberService",
    "coordinator_argv",
    "host_groups",
    "legacy_argv",
    "legacy_member_argv",
    "start_coordinator_host",
    "start_host",
    "start_member",
    "start_producer",
]

PY = [sys.executable, "-m", "harness"]
#: A member process's command: the lean entry point of the two member commands (:mod:`harness.members`'s
#: ``__main__``: ``herdlab member ...`` without importing the rest of the command line, a third of the
#: memory per process).
MEMBER_PY = [sys.executable, "-m", "harness.members"]


class MemberProcess(Protocol):
    """What runs a member: :class:`~harness.procs.ChildProcess` or a member container."""

    name: str

    @property
    def pid(self) -> int: ...

    def alive(self) -> bool: ...

    def signal(self, sig: int, group: bool = True) -> None: ...

    def wait(self, timeout: float | None = None) -> int | None: ...

    def log_tail(self, lines: int = 30) -> str: ...

    def stop(self, grace: float = 5.0) -> None: ...


#: Starts a member command elsewhere: ``(argv, name, log_path) -> process``; ``argv[0]`` is this Python.
Launcher = Callable[[list[str], str, Path], Any]


class MemberService:
    """One member process (see the module contract); ``name`` is ``<impl>:<member name>``."""

    def __init__(
        self,
        name: str,
        argv: list[str],
        history: Path,
        log_path: Path,
        launcher: Launcher | None = None,
        env: dict[str, str] | None = None,
    ) -> None:
        self.name = name
        self.argv = argv
        self.history = history
        self.log_path = log_path
        self.launcher = launcher
        self.env = env
        self.process: MemberProcess | None = None
        self.started_ns = 0
        self._tail = HistoryTail(history)
        self._ready_ns: int | None = None

    # -- the Service lifecycle ---------------------------------------------------------------------
    def start(self, timeout: float | None = None) -> MemberService:
        """Launch the process and return ``self``; with ``timeout``, first wait until :meth:`ready`.

        As the cluster's services: when the member exits first or is not ready after ``timeout``, it
        is stopped (nothing is left running) and :class:`~harness.kernel.errors.Unreachable` names
        it with the tail of its log. HerdlabError when this service's process is still running."""
        if self.alive():
            raise HerdlabError(f"{self.name} is already running")
        self.started_ns = time.time_ns()
        self._ready_ns = None
        if self.launcher is not None:
            self.process = self.launcher(self.argv, self.name, self.log_path)
        else:
            self.process = spawn(self.argv, name=self.name, log_path=self.log_path, env=self.env)
        if timeout is not None:
            deadline = time.monotonic() + timeout
            while not self.ready():
                why = (
                    "exited before it was ready"
                    if not self.alive()
                    else f"not ready after {timeout:g}s"
                    if time.monotonic() > deadline
                    else None
                )
                if why is not None:
                    tail = self.log_tail(10).replace("\n", " | ")
                    self.stop()
                    raise Unreachable(f"member {self.name} {why} (log {self.log_path}: {tail[-800:]})")
                time.sleep(POLL_S)  # polling its history file
        return self

    def ready(self) -> bool:
        """Whether the member wrote ``ready`` since :meth:`start` (its history is read on each call; a
        probe: never raises)."""
        if self._ready_ns is None:
            for e in self._tail.poll():
                if e.get("kind") == Kind.READY and int(e.get("ts_ns") or 0) >= self.started_ns:
                    self._ready_ns = int(e["ts_ns"])
                    break
        return self._ready_ns is not None

    @property
    def ready_ns(self) -> int | None:
        """When the member wrote its ``ready`` (after :meth:`ready` returned True), else None."""
        return self._ready_ns

    def stop(self, grace: float = 5.0) -> None:
        """SIGTERM, SIGKILL after ``grace`` seconds, reap (a container: stop and remove). Idempotent."""
        if self.process is not None:
            self.process.stop(grace)

    # -- what the nemesis uses ---------------------------------------------------------------------
    def _proc(self) -> MemberProcess:
        if self.process is None:
            raise HerdlabError(f"{self.name} was not started")
        return self.process

    @property
    def pid(self) -> int:
        return self._proc().pid

    @property
    def box(self) -> Any:
        """The member's container (None for a local process)."""
        return getattr(self.process, "box", None)

    def alive(self) -> bool:
        return self.process is not None and self.process.alive()

    def signal(self, sig: int, group: bool = True) -> None:
        """Send ``sig`` (to the process group when ``group``); no error if the process is gone."""
        self._proc().signal(sig, group=group)

    def wait(self, timeout: float | None = None) -> int | None:
        """Wait up to ``timeout`` seconds for exit; the exit code, or None if still running."""
        return self._proc().wait(timeout)

    def log_tail(self, lines: int = 30) -> str:
        return "" if self.process is None else self.process.log_tail(lines)

    def __repr__(self) -> str:
        return f"<MemberService {self.name} {self.process!r}>"


@dataclass(frozen=True)
class Endpoints:
    """Where one member connects (a proxy's address when the member can be cut off)."""

    zookeeper: str
    bootstrap: str


def coordinator_argv(
    s: Scenario, name: str, ep: Endpoints, history: Path, group: str, topic: str, impl: str = "coordinator"
) -> list[str]:
    """``herdlab member coordinator`` (through :data:`MEMBER_PY`) on the scenario's client, every Kafka property as ``-X`` (the typed
    shorthands, the assignor, then ``[group.coordinator.properties]``). ``impl`` ``consumer``: the same
    command on ``[group.consumer]``'s client and version, with its properties
    (:meth:`~harness.scenario.model.ConsumerSettings.member_properties`: the consumer group protocol)."""
    c = s.group.consumer if impl == "consumer" else s.group.coordinator
    argv = MEMBER_PY + ["coordinator", "--bootstrap", ep.bootstrap, "--group", group, "--topic", topic]
    argv += ["--name", name, "--history", str(history), "--client", c.client]
    props = (
        s.group.consumer.member_properties()
        if impl == "consumer"
        else s.group.coordinator.member_properties(s.group.assignor)
    )
    version = s.group.consumer.effective_version if impl == "consumer" else c.client_version
    if version is not None:
        argv += ["--client-version", version]
    for k, v in props.items():
        argv += ["-X", f"{k}={v}"]
    if c.static_membership:
        argv += ["--group-instance-id", name]
    return argv


def legacy_member_argv(zookeeper: str, group: str, topic: str, *options: str) -> list[str]:
    """The command line of one legacy_zk member process (``python -m harness.members legacy_zk``, the
    same command as ``herdlab member legacy_zk``) of
    ``group`` on ``topic`` against ZooKeeper at ``zookeeper``, followed by ``options`` unchanged: the one
    prefix the runner, the benches and the tests build their legacy members' argv on."""
    return [
        *MEMBER_PY,
        "legacy_zk",
        "--zookeeper",
        zookeeper,
        "--group",
        group,
        "--topic",
        topic,
        *options,
    ]


def legacy_argv(
    s: Scenario,
    name: str,
    ep: Endpoints,
    history: Path,
    group: str,
    topic: str,
    extra: Mapping[str, str] | None = None,
) -> list[str]:
    """The scenario's legacy settings as ``-X`` 0.8 properties, then ``[group.legacy_zk.properties]``,
    then ``extra`` (a timeline's properties) overriding them; ``--client`` when the members are not herdlab's
    own (``group.legacy_zk.client``). The offset-storage settings are passed only where they differ from
    0.8.2's defaults (which are the member's), so a member without them runs ZooKeeper-storage scenarios."""
    c = s.group.legacy_zk
    props: dict[str, object] = {
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
        "offsets.storage": c.offsets_storage,
    }
    if c.dual_commit_enabled is not None:
        props["dual.commit.enabled"] = str(c.dual_commit_enabled).lower()
    if c.offsets_commit_max_retries != 5:
        props["offsets.commit.max.retries"] = c.offsets_commit_max_retries
    if c.offsets_channel_backoff_ms != 1000:
        props["offsets.channel.backoff.ms"] = c.offsets_channel_backoff_ms
    props.update({k: property_string(v) for k, v in c.properties.items()})  # [group.legacy_zk.properties]
    props.update(extra or {})
    argv = legacy_member_argv(
        ep.zookeeper, group, topic, "--bootstrap", ep.bootstrap, "--handler", "threading"
    )
    argv += ["--name", name, "--history", str(history)]
    if c.client != "python":  # the original consumer: a child program under the same command
        argv += ["--client", c.client]
    for k, v in props.items():
        argv += ["-X", f"{k}={v}"]
    return argv


#: The runner's name for a member handle.
MemberHandle = MemberService


def host_groups(initial: Sequence[str], alone: Collection[str], per_host: int) -> list[tuple[str, ...]]:
    """Which initial legacy members share a gevent host process: the members of ``initial`` not in
    ``alone`` (every member some action targets), in start order, ``per_host`` at a time (the last
    group may be smaller). ``per_host`` 0 hosts nobody (every member in its own process: []). Pure."""
    if per_host < 0:
        raise ValueError(f"members per host must be >= 0, got {per_host}")
    if per_host == 0:
        return []
    hosted = [n for n in initial if n not in alone]
    return [tuple(hosted[i : i + per_host]) for i in range(0, len(hosted), per_host)]


def start_host(
    s: Scenario,
    host: str,
    names: Sequence[str],
    ep: Endpoints,
    events: Path,
    logs: Path,
    group: str,
    topic: str,
    launcher: Launcher | None = None,
) -> MemberService:
    """Start one gevent process ``host`` running the legacy members ``names`` (coordination-only: no
    record fetcher; :mod:`harness.members.legacy_host`), each writing under its own name (its events' ``source``) to
    ``<events>/<host>.jsonl``; its log is ``<logs>/<host>.log``. The scenario's legacy settings as for
    :func:`legacy_argv`. Returns at once; the service is ready when its first member wrote ``ready``."""
    if not names:
        raise ValueError(f"host {host} has no member")
    history = events / f"{host}.jsonl"
    argv = legacy_argv(s, host, ep, history, group, topic)
    argv[argv.index("--handler") + 1] = "gevent"
    argv += ["--no-fetch", "--names", ",".join(names)]
    return MemberService(f"legacy_zk:{host}", argv, history, logs / f"{host}.log", launcher).start()


def start_coordinator_host(
    s: Scenario,
    host: str,
    names: Sequence[str],
    ep: Endpoints,
    events: Path,
    logs: Path,
    group: str,
    topic: str,
    launcher: Launcher | None = None,
    impl: str = "coordinator",
) -> MemberService:
    """Start one process ``host`` running the coordinator members ``names`` (a client that hosts:
    ``group.coordinator.members_per_host``, or ``group.consumer``'s for ``impl`` consumer; one client per
    thread), each writing under its own name to
    ``<events>/<host>.jsonl``; its log is ``<logs>/<host>.log``. Their settings as for
    :func:`coordinator_argv` (static members: ``--static``, each its name as group.instance.id). Returns
    at once; the service is ready when its first member wrote ``ready``."""
    if not names:
        raise ValueError(f"host {host} has no member")
    history = events / f"{host}.jsonl"
    argv = coordinator_argv(s, host, ep, history, group, topic, impl)
    if "--group-instance-id" in argv:
        at = argv.index("--group-instance-id")
        argv[at : at + 2] = ["--static"]
    argv += ["--names", ",".join(names)]
    return MemberService(f"{impl}:{host}", argv, history, logs / f"{host}.log", launcher).start()


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
    props: Mapping[str, str] | None = None,
    hold: Path | None = None,
) -> MemberService:
    """Start one member of ``impl`` named ``name`` (a child process, or through ``launcher``); it
    returns at once: wait on :meth:`MemberService.ready` (or the history) for the member to boot.
    ``props``: 0.8 properties a legacy member gets on top of the scenario's (ignored for coordinator and
    consumer, whose members are coordinator-kind: :func:`coordinator_argv`).
    ``hold``: the member starts up, then waits until that file exists before it joins
    (``--hold-until``, :mod:`harness.members.release`)."""
    history = events / f"{name}.jsonl"
    if impl in ("coordinator", "consumer"):
        argv = coordinator_argv(s, name, ep, history, group, topic, impl)
    else:
        argv = legacy_argv(s, name, ep, history, group, topic, props)
    if hold is not None:
        argv += ["--hold-until", str(hold)]
    return MemberService(f"{impl}:{name}", argv, history, logs / f"{name}.log", launcher).start()


def start_producer(s: Scenario, bootstrap: str, events: Path, logs: Path, topic: str) -> ChildProcess:
    argv = PY + ["produce", "--bootstrap", bootstrap, "--topic", topic, "--rate", str(s.workload.rate)]
    argv += ["--record-size", str(s.workload.record_size), "--history", str(events / "producer.jsonl")]
    for name, value in s.workload.properties.items():  # [workload.properties], checked by the scenario
        argv += ["-X", f"{name}={property_string(value)}"]
    return spawn(argv, name="producer", log_path=logs / "producer.log")
