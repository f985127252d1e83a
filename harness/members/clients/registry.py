"""The client libraries a member can run on: one table, client name -> how to make its member.

Contract
--------
* :data:`CLIENT_SPECS` maps each client name (the names are :data:`harness.kernel.events.CLIENTS`, then
  :data:`harness.kernel.events.LEGACY_CLIENTS`, the lists of them; a unit test checks the table against
  them) to its :data:`ClientSpec`:

  - :class:`PythonClient`: a Python member, a :class:`~harness.members.clients.base.ClientMemberBase`
    subclass that ``load()`` imports (only then: a member process loads only its client's modules and
    library, e.g. no asyncio for kafka-python) and ``library``, the top-level module of the client library,
    imported before a held member's release (:mod:`harness.members.release`). The Python clients are the
    coordinator kind: ``kafka-python`` (:mod:`~harness.members.clients.kafka_python`), ``librdkafka``
    (:mod:`~harness.members.clients.librdkafka`, confluent-kafka) and ``aiokafka``
    (:mod:`~harness.members.clients.aiokafka`).
  - ``java``: Kafka's own ``KafkaConsumer`` in a program of ours, a coordinator-kind :class:`ChildClient`
    whose command is :func:`harness.members.java_dist.command` (built at set-up per client version).
  - ``kafka-0.8.2.2``: Kafka 0.8.2.2's own ZooKeeper consumer in a program of ours, a legacy_zk-kind
    :class:`ChildClient` whose command is :func:`harness.members.legacy08_dist.command` (built at set-up;
    one member per JVM). ``group.legacy_zk.client`` "python", herdlab's own legacy member, is no entry
    here: it runs in the member process itself (:mod:`harness.members.legacy_zk`).
  - :class:`ChildClient`: a member in another language (a JVM or Go program), run by the subprocess adapter
    :class:`~harness.members.child.ChildMember`: ``command`` is the start of its command line, ``env`` the
    variables set over the adapter's, ``kind`` its member kind (``coordinator``: its lines go through
    :class:`~harness.members.child.CoordinatorSink`; ``legacy_zk``: :class:`~harness.members.child.LegacySink`).
    The adapter appends the member's arguments (:func:`child_argv`), and the child holds itself
    (``--hold-until``), so its runtime has started before it is released.

* Adding a client: its name to :data:`harness.kernel.events.CLIENTS` and its entry here. For a member in
  another language that is, e.g. ``"franz-go": ChildClient(("herdlab-franz-go",), kind="coordinator")``: a
  program that takes :func:`child_argv`'s arguments and prints the JSON lines
  :mod:`harness.members.child` describes.

* A host: :func:`make_host` runs several members of a :class:`ChildClient` with ``hosts`` (java) in one
  child process (:class:`~harness.members.child_host.ChildHost`; its command line :func:`host_argv`), each
  writing under its own name into the one history.

* :func:`make_member` builds the member of ``config.client``; ``on_change(what, partitions, generation)``
  is called after each assignment change (the CLI prints it); ``hold_until``: the release file of a held
  member, passed to a child (a Python member is held by its command: :func:`hold`). An unknown client is a
  ValueError naming it, as is a property the client cannot take.
  :class:`~harness.members.interface.ClientMember` (in :mod:`harness.members.interface`) is what it
  returns: :meth:`run` joins and consumes until :meth:`stop`; every member runs the life cycle of
  :class:`~harness.members.template.MemberTemplate`.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Literal

from harness.history.writer import History
from harness.kernel.events import CLIENTS, LEGACY_CLIENTS
from harness.members.child import ChildMember, ChildSpec, CoordinatorSink, EventSink, LegacySink
from harness.members.child_host import ChildHost, SourcedHistory
from harness.members.clients.base import ClientMemberBase
from harness.members.interface import ClientMember, OnChange
from harness.members.recorder import MemberConfig, MemberRecorder
from harness.members.release import preload, wait_for_release

__all__ = [
    "CLIENTS",
    "LEGACY_CLIENTS",
    "CLIENT_SPECS",
    "ChildClient",
    "ClientMember",
    "ClientSpec",
    "MemberKind",
    "OnChange",
    "PythonClient",
    "child_argv",
    "built_clients",
    "client_spec",
    "clients_of",
    "hold",
    "host_argv",
    "make_host",
    "make_member",
    "member_class",
    "missing_for",
]

#: The two member kinds (:data:`harness.kernel.events.MEMBER_KINDS`).
MemberKind = Literal["coordinator", "legacy_zk"]


@dataclass(frozen=True)
class PythonClient:
    """A Python member of the coordinator kind: ``load()`` imports and returns its class; ``library`` is
    the client library's top-level module."""

    load: Callable[[], type[ClientMemberBase]]
    library: str
    kind: MemberKind = "coordinator"


@dataclass(frozen=True)
class ChildClient:
    """A member in another language run as a child process (see the module contract). ``command`` is the
    start of its command line, or a function of the member's config giving it (a program built at set-up,
    whose path depends on ``config.client_version``; it raises ConfigError when the program is not built)."""

    command: Sequence[str] | Callable[[MemberConfig], Sequence[str]]
    kind: MemberKind
    env: Mapping[str, str] = field(default_factory=dict[str, str])
    #: the program can run several members in one process (:func:`host_argv`'s ``--member``, lines with ``m``)
    hosts: bool = False
    #: builds the program of a version (None: its default) into herdlab's cache, idempotent, progress lines
    #: through the callable given; returns where it is (None: nothing to build)
    build: Callable[[str | None, Progress | None], Path] | None = None
    #: what this machine lacks to run or build a version (a short sentence), or None
    missing: Callable[[str | None], str | None] | None = None

    def command_for(self, config: MemberConfig) -> Sequence[str]:
        """The start of the command line of the member ``config``."""
        return self.command(config) if callable(self.command) else self.command


ClientSpec = PythonClient | ChildClient
#: a progress callback: one line of text per long step
Progress = Callable[[str], None]


def _kafka_python() -> type[ClientMemberBase]:
    # deferred: start-up: a member process loads only the client library it runs
    from harness.members.clients.kafka_python import KafkaPythonMember

    return KafkaPythonMember


def _librdkafka() -> type[ClientMemberBase]:
    # deferred: start-up: a member process loads only the client library it runs
    from harness.members.clients.librdkafka import LibrdkafkaMember

    return LibrdkafkaMember


def _java(config: MemberConfig) -> Sequence[str]:
    # deferred: start-up: only a java member's adapter needs the build's paths and the JVM options
    from harness.members.java_dist import command

    return command(config)


def _java_build(version: str | None, progress: Progress | None) -> Path:
    # deferred: start-up: only a set-up loads the build's module
    from harness.members import java_dist

    return java_dist.build("java", version, progress=progress)


def _java_missing(version: str | None) -> str | None:
    # deferred: start-up: only a check loads the build's module
    from harness.members import java_dist

    return java_dist.missing("java", version)


def _legacy08(config: MemberConfig) -> Sequence[str]:
    # deferred: start-up: only an original legacy member's adapter needs the build's paths
    from harness.members.legacy08_dist import command

    return command(config)


def _legacy08_build(version: str | None, progress: Progress | None) -> Path:
    # deferred: start-up: only a set-up loads the build's module
    from harness.members import legacy08_dist

    return legacy08_dist.build(legacy08_dist.CLIENT, version, progress=progress)


def _legacy08_missing(version: str | None) -> str | None:
    # deferred: start-up: only a check loads the build's module
    from harness.members import legacy08_dist

    return legacy08_dist.missing(legacy08_dist.CLIENT, version)


def _aiokafka() -> type[ClientMemberBase]:
    # deferred: start-up: a member process loads only the client library it runs
    from harness.members.clients.aiokafka import AiokafkaMember

    return AiokafkaMember


def _go_command(config: MemberConfig) -> Sequence[str]:
    # deferred: only a Go member's process needs its build's location
    from harness.members.go_dist import command

    return command(config)


def _go_build(client: str) -> Callable[[str | None, Progress | None], Path]:
    def build(version: str | None, progress: Progress | None) -> Path:
        # deferred: start-up: only a set-up loads the build's module
        from harness.members import go_dist

        return go_dist.build(client, version, progress=progress)

    return build


def _go_missing(client: str) -> Callable[[str | None], str | None]:
    def missing(version: str | None) -> str | None:
        # deferred: start-up: only a check loads the build's module
        from harness.members import go_dist

        return go_dist.missing(client, version)

    return missing


#: Each client's spec, by name (see the module contract).
CLIENT_SPECS: dict[str, ClientSpec] = {
    "kafka-python": PythonClient(_kafka_python, library="kafka"),
    "librdkafka": PythonClient(_librdkafka, library="confluent_kafka"),
    "aiokafka": PythonClient(_aiokafka, library="aiokafka"),
    "java": ChildClient(_java, kind="coordinator", hosts=True, build=_java_build, missing=_java_missing),
    # Go programs of herdlab's, built at set-up (harness.members.go_dist)
    "kafka-go": ChildClient(
        _go_command, kind="coordinator", build=_go_build("kafka-go"), missing=_go_missing("kafka-go")
    ),
    "franz-go": ChildClient(
        _go_command, kind="coordinator", build=_go_build("franz-go"), missing=_go_missing("franz-go")
    ),
    # Kafka 0.8.2.2's own ZooKeeper consumer, a program of herdlab's built at set-up (legacy08_dist)
    "kafka-0.8.2.2": ChildClient(
        _legacy08, kind="legacy_zk", build=_legacy08_build, missing=_legacy08_missing
    ),
}


def built_clients() -> tuple[str, ...]:
    """The clients whose program is built at set-up (``herdlab clients build``), in the table's order."""
    return tuple(n for n, s in CLIENT_SPECS.items() if isinstance(s, ChildClient) and s.build is not None)


def missing_for(client: str, version: str | None = None) -> str | None:
    """What this machine lacks to run ``client`` at ``version`` (a sentence naming the client), or None: a
    Python client lacks nothing here (its library is a dependency of herdlab)."""
    spec = client_spec(client)
    if isinstance(spec, ChildClient) and spec.missing is not None and (why := spec.missing(version)):
        return f"client {client!r} cannot run here: {why}"
    return None


def client_spec(client: str) -> ClientSpec:
    """The spec of ``client`` (ValueError naming it when there is none)."""
    spec = CLIENT_SPECS.get(client)
    if spec is None:
        raise ValueError(f"unknown client {client!r} (known: {', '.join(CLIENT_SPECS)})")
    return spec


def clients_of(kind: MemberKind) -> tuple[str, ...]:
    """The names of the clients of member kind ``kind``, in the table's order."""
    return tuple(name for name, spec in CLIENT_SPECS.items() if spec.kind == kind)


def member_class(client: str) -> type[ClientMemberBase]:
    """The member class of the Python client ``client`` (ValueError when it has none)."""
    spec = client_spec(client)
    if not isinstance(spec, PythonClient):
        raise ValueError(f"client {client!r} is a child process, not a Python member class")
    return spec.load()


def child_argv(command: Sequence[str], config: MemberConfig, hold_until: Path | None = None) -> list[str]:
    """A child's command line: ``command``, then ``--bootstrap``, ``--group``, ``--topic``, ``--name``,
    ``--group-instance-id`` (a static member only), ``-X NAME=VALUE`` per property (in ``config``'s
    order) and ``--hold-until FILE`` (a held member only). A legacy_zk child's ``--bootstrap`` is its
    ZooKeeper connect string."""
    argv = [*command, "--bootstrap", config.bootstrap, "--group", config.group, "--topic", config.topic]
    argv += ["--name", config.name]
    if config.group_instance_id is not None:
        argv += ["--group-instance-id", config.group_instance_id]
    for name, value in config.properties.items():
        argv += ["-X", f"{name}={value}"]
    if hold_until is not None:
        argv += ["--hold-until", str(hold_until)]
    return argv


def host_argv(
    command: Sequence[str], configs: Sequence[MemberConfig], hold_until: Path | None = None
) -> list[str]:
    """A host's command line: as :func:`child_argv`, with ``--member NAME`` (``NAME=INSTANCE_ID`` for a
    static member) per member, in slot order, instead of ``--name`` and ``--group-instance-id``. The
    members share the first one's addresses, group, topic and properties."""
    first = configs[0]
    argv = [*command, "--bootstrap", first.bootstrap, "--group", first.group, "--topic", first.topic]
    for c in configs:
        argv += ["--member", c.name if c.group_instance_id is None else f"{c.name}={c.group_instance_id}"]
    for name, value in first.properties.items():
        argv += ["-X", f"{name}={value}"]
    if hold_until is not None:
        argv += ["--hold-until", str(hold_until)]
    return argv


def make_host(
    configs: Sequence[MemberConfig],
    history: History,
    on_change: Callable[[str], OnChange | None] | None = None,
    hold_until: Path | None = None,
) -> ClientMember:
    """The members ``configs`` (one client, group, topic and properties) in one child process of a client
    that hosts (ValueError otherwise); ``on_change(name)``: the callback of member ``name``."""
    if not configs:
        raise ValueError("a host needs at least one member")
    first = configs[0]
    spec = client_spec(first.client)
    if not (isinstance(spec, ChildClient) and spec.hosts and spec.kind == "coordinator"):
        raise ValueError(f"client {first.client!r} cannot run several members in one process")
    differ = [
        c.name
        for c in configs
        if (c.client, c.bootstrap, c.group, c.topic, dict(c.properties), c.client_version)
        != (
            first.client,
            first.bootstrap,
            first.group,
            first.topic,
            dict(first.properties),
            first.client_version,
        )
    ]
    if differ:
        raise ValueError(
            f"hosted members must share client, group, topic and properties: {differ[0]} differs"
        )
    sinks: list[EventSink] = [
        CoordinatorSink(
            MemberRecorder(c, SourcedHistory(history, c.name)), on_change(c.name) if on_change else None
        )
        for c in configs
    ]
    return ChildHost(ChildSpec(host_argv(spec.command_for(first), configs, hold_until), spec.env), sinks)


def hold(client: str, hold_until: Path) -> None:
    """Hold a member of ``client`` made with ``hold_until`` until its release: a Python client's library
    is imported, then the release awaited here; a child holds itself (nothing to do here)."""
    spec = client_spec(client)
    if isinstance(spec, PythonClient):
        preload(spec.library)
        wait_for_release(hold_until)


def make_member(
    config: MemberConfig,
    history: History,
    on_change: OnChange | None = None,
    hold_until: Path | None = None,
) -> ClientMember:
    """The member of ``config.client`` (see the module contract)."""
    spec = client_spec(config.client)
    if isinstance(spec, PythonClient):
        return spec.load()(config, history, on_change)
    sink: EventSink
    if spec.kind == "coordinator":
        sink = CoordinatorSink(MemberRecorder(config, history), on_change)
    else:
        sink = LegacySink(history, config.name, config.group)
    return ChildMember(ChildSpec(child_argv(spec.command_for(config), config, hold_until), spec.env), sink)
