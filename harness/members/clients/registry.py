"""The client libraries a member can run on: one table, client name -> how to make its member.

Contract
--------
* :data:`CLIENT_SPECS` maps each client name (the names are :data:`harness.kernel.events.CLIENTS`, the one
  list of them; a unit test checks the table against it) to its :data:`ClientSpec`:

  - :class:`PythonClient`: a Python member, a :class:`~harness.members.clients.base.ClientMemberBase`
    subclass that ``load()`` imports (only then: a member process loads only its client's modules and
    library, e.g. no asyncio for kafka-python) and ``library``, the top-level module of the client library,
    imported before a held member's release (:mod:`harness.members.release`). The Python clients are the
    coordinator kind: ``kafka-python`` (:mod:`~harness.members.clients.kafka_python`), ``librdkafka``
    (:mod:`~harness.members.clients.librdkafka`, confluent-kafka) and ``aiokafka``
    (:mod:`~harness.members.clients.aiokafka`).
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
from harness.kernel.events import CLIENTS
from harness.members.child import ChildMember, ChildSpec, CoordinatorSink, EventSink, LegacySink
from harness.members.clients.base import ClientMemberBase
from harness.members.interface import ClientMember, OnChange
from harness.members.recorder import MemberConfig, MemberRecorder
from harness.members.release import preload, wait_for_release

__all__ = [
    "CLIENTS",
    "CLIENT_SPECS",
    "ChildClient",
    "ClientMember",
    "ClientSpec",
    "MemberKind",
    "OnChange",
    "PythonClient",
    "child_argv",
    "client_spec",
    "clients_of",
    "hold",
    "make_member",
    "member_class",
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

    def command_for(self, config: MemberConfig) -> Sequence[str]:
        """The start of the command line of the member ``config``."""
        return self.command(config) if callable(self.command) else self.command


ClientSpec = PythonClient | ChildClient


def _kafka_python() -> type[ClientMemberBase]:
    # deferred: start-up: a member process loads only the client library it runs
    from harness.members.clients.kafka_python import KafkaPythonMember

    return KafkaPythonMember


def _librdkafka() -> type[ClientMemberBase]:
    # deferred: start-up: a member process loads only the client library it runs
    from harness.members.clients.librdkafka import LibrdkafkaMember

    return LibrdkafkaMember


def _aiokafka() -> type[ClientMemberBase]:
    # deferred: start-up: a member process loads only the client library it runs
    from harness.members.clients.aiokafka import AiokafkaMember

    return AiokafkaMember


def _go_command(config: MemberConfig) -> Sequence[str]:
    # deferred: only a Go member's process needs its build's location
    from harness.members.go_dist import command

    return command(config)


#: Each client's spec, by name (see the module contract).
CLIENT_SPECS: dict[str, ClientSpec] = {
    "kafka-python": PythonClient(_kafka_python, library="kafka"),
    "librdkafka": PythonClient(_librdkafka, library="confluent_kafka"),
    "aiokafka": PythonClient(_aiokafka, library="aiokafka"),
    # Go programs of herdlab's, built at set-up (harness.members.go_dist)
    "kafka-go": ChildClient(_go_command, kind="coordinator"),
    "franz-go": ChildClient(_go_command, kind="coordinator"),
}


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
