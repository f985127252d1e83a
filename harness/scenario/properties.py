"""Kafka client properties in scenarios: Kafka's own dotted names, checked against each client.

Contract
--------
* :data:`CLIENTS` are the client libraries a coordinator member can run on (``group.coordinator.client``):
  ``kafka-python`` (unmodified kafka-python), ``librdkafka`` (confluent-kafka, the C client),
  ``aiokafka``, ``java`` (Kafka's own ``KafkaConsumer``, :mod:`harness.members.java_dist`), and the Go
  clients ``kafka-go`` (segmentio/kafka-go) and ``franz-go`` (twmb/franz-go), each a small Go program of
  herdlab's (:mod:`harness.members.go_dist`). :data:`ASSIGNORS` names, per client, the assignors it has
  (Kafka's names: range, roundrobin, sticky, cooperative-sticky); :data:`STATIC_MEMBERSHIP` the clients
  with ``group.instance.id`` (KIP-345). :data:`CLIENT_VERSIONS` names the clients that come in several
  versions (``group.coordinator.client_version``; java: kafka-clients of Kafka's lines,
  :mod:`harness.kernel.kafka_versions`, default ``3.9``); :func:`check_client_version` refuses a version for
  any other client.
* :func:`check_client_properties` checks a ``[group.coordinator.properties]`` table for one client:
  every name must be a property that client knows (Kafka's dotted name; kafka-python and aiokafka take
  them as ``snake_case`` keyword arguments, so ``session.timeout.ms`` is ``session_timeout_ms``; java
  checks them against ``ConsumerConfig.configNames()`` of its version, dumped when the member was built,
  :func:`java_config_names`, so no JVM starts here; a version not built yet has its names checked when a
  run has built it, before anything starts), not one
  the harness sets itself (:data:`HARNESS_PROPERTIES`), with a value of the right kind. A ValueError
  names the first bad name and the client.
* The Go clients take **their own option names**, not Kafka's: kafka-go's ``ConsumerGroupConfig`` /
  ``ReaderConfig`` field names, franz-go's ``kgo`` option function names (``SessionTimeout = "10s"``),
  with values in Go's syntax (durations such as ``500ms``; balancers as Kafka's protocol names joined by
  commas). The names, types and defaults are the client's option table (:func:`go_option_table`:
  ``harness/members/go/<program>/options.json``, the same file the program embeds and prints with
  ``--options``). Kafka's dotted names are taken only where the table maps them: the typed shorthands
  (``session.timeout.ms`` -> ``SessionTimeout``, ``max.poll.interval.ms`` -> ``RebalanceTimeout``,
  ``partition.assignment.strategy``, ``metadata.max.age.ms``, ``auto.offset.reset``) and the member's
  commit policy; a client's own name wins over the dotted name mapped to the same option (so a table's
  ``SessionTimeout`` overrides the typed ``session_timeout_ms``). Any other name is unknown. :func:`check_producer_properties` does the same for the
  workload's kafka-python producer (``[workload.properties]``).
* :func:`client_cannot_run` says why a client cannot run a group's assignor or static membership: in a
  scenario without a matrix that is an error; a matrix case it concerns is left out of the run and said in
  the report (:func:`harness.scenario.loading.expand`).
* :func:`coordinator_properties` is the one place the typed ``[group.coordinator]`` keys become Kafka
  properties (the shorthands): the member gets the typed values, then the properties table over them.
  A property given both as a typed key and in the table is an error naming both (:func:`check_shorthands`) (it would be ambiguous
  which one a reader of the scenario should believe).
* Java under the consumer group protocol (KIP-848, ``group.protocol=consumer``): the client refuses
  :data:`CLASSIC_ONLY` (the broker's ``group.consumer.*`` settings govern them), so
  :func:`coordinator_properties` leaves the typed shorthands of those out for it
  (:func:`without_classic_only`), and :func:`check_client_properties` refuses them given in the table.
* The ``consumer`` implementation (KIP-848's protocol as a design of its own, ``[group.consumer]``): its
  members run on :data:`CONSUMER_CLIENTS`; :func:`consumer_protocol` is what makes a client speak the
  protocol with the group's server-side assignor (librdkafka and java: ``group.protocol=consumer`` and
  ``group.remote.assignor``; franz-go: its ``ServerSideBalancer`` option with ``Balancers`` naming the
  assignor it asks for, cooperative-sticky -> uniform, range -> range), set by the harness
  (:data:`CONSUMER_HARNESS`); :data:`CONSUMER_REFUSED` are the names each client refuses (or ignores)
  under it; :func:`consumer_properties` is every property a member gets, :func:`check_consumer_properties`
  the one-line refusals. :func:`without_classic_only` drops a client's refused names from the typed
  shorthands of a member that speaks the protocol (:func:`speaks_consumer`).
* Commit policy: ``enable.auto.commit`` and ``auto.commit.interval.ms`` are carried out by the member
  itself, the same way on every client (interval commits of what was processed, a synchronous commit
  before partitions are revoked and on a clean close), so every commit's outcome is recorded from the
  client's own return value or callback. The client's own auto-commit stays off.
"""

from __future__ import annotations

import functools
import inspect
import json
import re
from collections.abc import Mapping
from pathlib import Path
from typing import Any

from harness.kernel.cache import cache_dir
from harness.kernel.errors import ConfigError
from harness.kernel.events import CLIENTS
from harness.kernel.kafka_versions import LINES, resolve_version

ALL_ASSIGNORS = ("range", "roundrobin", "sticky", "cooperative-sticky")
ASSIGNORS: dict[str, tuple[str, ...]] = {
    "kafka-python": ALL_ASSIGNORS,
    # librdkafka 2.x: range, roundrobin, cooperative-sticky (no eager sticky assignor)
    "librdkafka": ("range", "roundrobin", "cooperative-sticky"),
    # aiokafka 0.14: range, roundrobin, sticky (no cooperative protocol)
    "aiokafka": ("range", "roundrobin", "sticky"),
    # Kafka's KafkaConsumer: all four (its own classes; the member maps the names)
    "java": ALL_ASSIGNORS,
    # kafka-go 0.4.51: RangeGroupBalancer, RoundRobinGroupBalancer (no sticky balancer at all)
    "kafka-go": ("range", "roundrobin"),
    "franz-go": ALL_ASSIGNORS,
}
# kafka-go has no group.instance.id
STATIC_MEMBERSHIP = ("kafka-python", "librdkafka", "aiokafka", "java", "franz-go")
#: Clients with several versions and the versions a scenario names (others have one: the installed or
#: pinned one). java: Kafka's lines (an exact kafka-clients version works as well).
CLIENT_VERSIONS: dict[str, tuple[str, ...]] = {"java": tuple(LINES)}
#: Clients whose program runs several members in one process (``[group.coordinator] members_per_host``)
HOSTING_CLIENTS = ("java",)
#: Properties Kafka's Java client refuses under ``group.protocol=consumer`` (see the module contract).
CLASSIC_ONLY = ("session.timeout.ms", "heartbeat.interval.ms", "partition.assignment.strategy")
#: The clients whose members speak the consumer group protocol (KIP-848): librdkafka (2.12 on), Kafka's
#: Java client (kafka-clients 4) and franz-go; kafka-python, aiokafka and kafka-go do not.
CONSUMER_CLIENTS = ("librdkafka", "java", "franz-go")
#: Per client, the names it refuses (librdkafka's and Java's own configuration checks) or ignores
#: (franz-go's group options, which the broker's settings replace) under the consumer group protocol.
CONSUMER_REFUSED: dict[str, tuple[str, ...]] = {
    # librdkafka 2.x: "`<name>` is not supported for `group.protocol=consumer`" (rdkafka_conf.c)
    "librdkafka": (*CLASSIC_ONLY, "group.protocol.type"),
    "java": CLASSIC_ONLY,
    "franz-go": (*CLASSIC_ONLY, "SessionTimeout", "HeartbeatInterval", "Balancers"),
}
#: Names the harness sets for a member of the ``consumer`` implementation (:func:`consumer_protocol`).
CONSUMER_HARNESS = ("group.protocol", "group.remote.assignor", "ServerSideBalancer")
#: The typed ``[group.consumer]`` keys that are shorthands of client properties.
CONSUMER_SHORTHANDS = {
    "max_poll_interval_ms": "max.poll.interval.ms",
    "auto_commit_interval_ms": "auto.commit.interval.ms",
    "fetch_max_wait_ms": "fetch.max.wait.ms",
}
#: Where a built Java member lives: ``<cache>/java-member/<exact version>`` (its ``libs``, ``classes`` and
#: :data:`JAVA_CONFIG_NAMES`, the client's consumer property names as a JSON array).
JAVA_MEMBER_DIR = "java-member"
JAVA_CONFIG_NAMES = "config-names.json"

#: The Go clients: client name -> its program's directory under harness/members/go.
GO_PROGRAMS = {"kafka-go": "kafkago", "franz-go": "franzgo"}
_GO_SOURCES = Path(__file__).resolve().parent.parent / "members" / "go"

#: Properties the harness sets for every member itself (identity, addresses, subscription).
HARNESS_PROPERTIES = (
    "group.id",
    "client.id",
    "bootstrap.servers",
    "group.instance.id",
    "key.deserializer",
    "value.deserializer",
    "key.serializer",
    "value.serializer",
)
#: Carried out by the member the same way on every client (see the module contract).
MEMBER_POLICY_PROPERTIES = ("enable.auto.commit", "auto.commit.interval.ms")

PropertyValue = str | int | float | bool


def snake(name: str) -> str:
    """Kafka's dotted name as kafka-python's / aiokafka's keyword: ``session.timeout.ms`` -> ``session_timeout_ms``."""
    return name.replace(".", "_").replace("-", "_")


@functools.cache
def _kafka_python_consumer() -> dict[str, Any]:
    from kafka import KafkaConsumer

    return dict(KafkaConsumer.DEFAULT_CONFIG)


@functools.cache
def _kafka_python_producer() -> dict[str, Any]:
    from kafka import KafkaProducer

    return dict(KafkaProducer.DEFAULT_CONFIG)


@functools.cache
def _aiokafka_consumer() -> dict[str, Any]:
    from aiokafka import AIOKafkaConsumer

    params = inspect.signature(AIOKafkaConsumer.__init__).parameters
    return {k: p.default for k, p in params.items() if k not in ("self", "topics", "loop")}


def client_defaults(client: str) -> dict[str, Any]:
    """The consumer keyword arguments of a Python client (``kafka-python`` or ``aiokafka``) with their
    defaults: what its properties are checked and converted against."""
    return dict(_kafka_python_consumer() if client == "kafka-python" else _aiokafka_consumer())


def _converted(client: str, name: str, value: PropertyValue, default: Any) -> Any:
    """``value`` as the type of the client's ``default`` (bool: true/false; int; float; a None default
    takes an integer as an int, e.g. aiokafka's ``max_poll_records``; anything else keeps the string):
    the one rule both the checks and the members' keyword arguments use. ValueError naming the property."""
    text = property_value(value)
    try:
        if isinstance(default, bool):
            if text.lower() not in ("true", "false"):
                raise ValueError(text)
            return text.lower() == "true"
        if isinstance(default, int | float) and isinstance(value, bool):
            raise ValueError(text)
        if isinstance(default, int):
            return int(text)
        if isinstance(default, float):
            return float(text)
    except ValueError:
        raise ValueError(
            f"{client} property {name!r}: bad value {value!r} (expected like {default!r})"
        ) from None
    if default is None and text.lstrip("-").isdigit():
        return int(text)
    return text


def _check_snake(client: str, known: Mapping[str, Any], props: Mapping[str, PropertyValue]) -> None:
    for name, value in props.items():
        key = snake(name)
        if key not in known:
            raise ValueError(f"unknown {client} property {name!r}")
        _converted(client, name, value, known[key])


def _check_librdkafka(props: Mapping[str, PropertyValue]) -> None:
    """librdkafka checks its own configuration when a client is made (no connection without
    ``bootstrap.servers``): one throwaway consumer with every property together, since librdkafka checks
    them against each other too (``max.poll.interval.ms`` must be at least ``session.timeout.ms``, whose
    default is 45 s); the error names the property librdkafka names."""
    from confluent_kafka import Consumer, KafkaException

    conf: dict[str, Any] = {"group.id": "herdlab-check", "log_level": 0}
    conf.update({name: property_value(value) for name, value in props.items()})
    try:
        Consumer(conf).close()
        return
    except (KafkaException, ValueError, TypeError) as e:
        err: Any = e.args[0] if e.args else e
        text = str(err.str() if hasattr(err, "str") else err)  # a KafkaError's own message
    unknown = re.search(r'No such configuration property: "([^"]+)"', text)
    if unknown:
        raise ValueError(f"unknown librdkafka property {unknown.group(1)!r}")
    bad = re.search(r'configuration property "([^"]+)"', text)
    if bad and bad.group(1) in props:
        name = bad.group(1)
        raise ValueError(f"librdkafka property {name!r}: bad value {props[name]!r} ({text[:200]})")
    raise ValueError(
        f"librdkafka properties refused: {text.removeprefix('Failed to create consumer: ')[:200]}"
    )


def python_kwargs(
    props: Mapping[str, PropertyValue], defaults: Mapping[str, Any], client: str = "client"
) -> dict[str, Any]:
    """``props`` (dotted names) as keyword arguments of a Python client (kafka-python, aiokafka): snake-case
    names, each value converted by the checks' own rule (:func:`_converted`). A name not in ``defaults``
    or a bad value is a ValueError naming it."""
    out: dict[str, Any] = {}
    for name, value in props.items():
        key = snake(name)
        if key not in defaults:
            raise ValueError(f"unknown {client} property {name!r}")
        out[key] = _converted(client, name, value, defaults[key])
    return out


def property_value(value: PropertyValue) -> str:
    """The string form of a property value (``true``, ``1000``, ``earliest``): what a member's ``-X`` gets."""
    return str(value).lower() if isinstance(value, bool) else str(value)


def check_client_version(client: str, version: str | None) -> None:
    """``version`` (``group.coordinator.client_version``) for ``client``: None always; else ``client`` must
    have several (:data:`CLIENT_VERSIONS`) and ``version`` be one of them (java: a line or an exact
    version). ValueError saying which."""
    if version is None:
        return
    if client not in CLIENT_VERSIONS:
        raise ValueError(f"client {client!r} has one version: group.coordinator.client_version is not for it")
    if client == "java":
        java_version(version)


def java_version(version: str | None) -> str:
    """The exact kafka-clients version of a java member's ``version`` (None: the ``3.9`` line);
    ValueError when it is none."""
    try:
        return resolve_version(version)
    except ConfigError:
        raise ValueError(
            f"java client version {version!r}: expected {', '.join(LINES)} or an exact kafka-clients "
            f"version such as {LINES['4']}"
        ) from None


def java_member_dir(version: str) -> Path:
    """Where the java member of the exact kafka-clients ``version`` is built (see :data:`JAVA_MEMBER_DIR`)."""
    return cache_dir() / JAVA_MEMBER_DIR / version


def java_config_names(version: str | None) -> frozenset[str] | None:
    """The consumer property names of the java client ``version`` (``ConsumerConfig.configNames()``, dumped
    when the member was built); None when it is not built here (a run builds it, then checks again)."""
    path = java_member_dir(java_version(version)) / JAVA_CONFIG_NAMES
    try:
        names = json.loads(path.read_text())
    except (OSError, ValueError):
        return None
    return frozenset(str(n) for n in names)


def _check_java(props: Mapping[str, PropertyValue], version: str | None) -> None:
    known = java_config_names(version)
    for name in props:
        if known is not None and name not in known:
            raise ValueError(f"unknown java property {name!r}")
    if str(props.get("group.protocol", "")).lower() == "consumer":
        for name in CLASSIC_ONLY:
            if name in props:
                raise ValueError(
                    f"java property {name!r} cannot be set with group.protocol=consumer (the broker's "
                    "group.consumer.* settings govern it)"
                )


def speaks_consumer(client: str, given: Mapping[str, PropertyValue]) -> bool:
    """Whether a member of ``client`` with the properties ``given`` (by name) runs the consumer group
    protocol: ``group.protocol=consumer`` (librdkafka, java), ``ServerSideBalancer=true`` (franz-go)."""
    if client == "franz-go":
        return property_value(given.get("ServerSideBalancer", False)) == "true"
    return str(given.get("group.protocol", "")).lower() == "consumer"


def without_classic_only(
    props: dict[str, str], client: str, given: Mapping[str, PropertyValue]
) -> dict[str, str]:
    """``props`` (a member's typed shorthands) without the names ``client`` refuses under the consumer
    group protocol (:data:`CONSUMER_REFUSED`; java: :data:`CLASSIC_ONLY`) when ``given`` (the properties
    given by name) makes it speak that protocol (:func:`speaks_consumer`); else unchanged."""
    if speaks_consumer(client, given):
        for name in CONSUMER_REFUSED.get(client, CLASSIC_ONLY):
            props.pop(name, None)
    return props


def consumer_protocol(client: str, assignor: str | None) -> dict[str, str]:
    """The properties that make a member of ``client`` speak the consumer group protocol and ask for the
    server-side ``assignor`` (``uniform`` | ``range``; None: the broker's default, which is uniform): see
    the module contract. franz-go always names one (its balancer is the request's assignor)."""
    if client == "franz-go":
        return {
            "ServerSideBalancer": "true",
            "Balancers": "range" if assignor == "range" else "cooperative-sticky",
        }
    out = {"group.protocol": "consumer"}
    if assignor is not None:
        out["group.remote.assignor"] = assignor
    return out


def consumer_properties(
    typed: Mapping[str, Any], table: Mapping[str, PropertyValue], assignor: str | None, client: str
) -> dict[str, str]:
    """The properties a member of the ``consumer`` implementation gets: the typed shorthands
    (``typed``: :data:`CONSUMER_SHORTHANDS`' key -> value, None = the client's default) as ``client``
    names them, the ``table`` over them, then :func:`consumer_protocol`."""
    out = {
        prop: property_value(typed[key])
        for key, prop in CONSUMER_SHORTHANDS.items()
        if typed.get(key) is not None
    }
    out = client_metadata_names(out, client)
    out.update({k: property_value(v) for k, v in table.items()})
    out.update(consumer_protocol(client, assignor))
    return out


#: Why a refused name cannot be set under the consumer group protocol (else :data:`_BROKER_GOVERNS`).
_CONSUMER_REFUSAL = {
    "partition.assignment.strategy": "the broker assigns: group.consumer.assignor names its assignor",
    "Balancers": "the broker assigns: group.consumer.assignor names its assignor",
    "group.protocol.type": "librdkafka refuses it there",
}
_BROKER_GOVERNS = "the broker's group.consumer.* settings govern it: group.consumer.session_timeout_ms and heartbeat_interval_ms"


def check_consumer_client(client: str) -> None:
    """ValueError (one line, naming the clients that do) when ``client`` does not speak the consumer
    group protocol."""
    if client not in CONSUMER_CLIENTS:
        raise ValueError(
            f"client {client!r} does not speak the consumer group protocol (KIP-848): "
            f"group.consumer.client is one of {', '.join(CONSUMER_CLIENTS)}"
        )


def check_consumer_properties(
    client: str, table: Mapping[str, PropertyValue], props: Mapping[str, PropertyValue], version: str | None
) -> None:
    """Check a ``[group.consumer.properties]`` ``table`` of ``client`` and every property its members get
    (``props``, :func:`consumer_properties`); ValueError naming the first refused or bad one."""
    check_consumer_client(client)
    for name in table:
        if name in CONSUMER_HARNESS:
            raise ValueError(
                f"property {name!r} is set by the harness for consumer units "
                "(the server-side assignor: group.consumer.assignor)"
            )
        if name in CONSUMER_REFUSED[client]:
            why = _CONSUMER_REFUSAL.get(name, _BROKER_GOVERNS)
            raise ValueError(
                f"{client} property {name!r} cannot be set under the consumer group protocol ({why})"
            )
    check_client_properties(client, props, version)


@functools.cache
def go_option_table(client: str) -> dict[str, Any]:
    """The option table of the Go client ``client`` (its program's ``options.json``): ``options`` (name ->
    ``type``, ``default``, ``values``, ``doc``), ``kafka`` (Kafka's dotted name -> ``option``, and ``unit``
    ``ms`` or a ``values`` map), ``policy`` and ``harness`` (names carried out or set by herdlab)."""
    return json.loads((_GO_SOURCES / GO_PROGRAMS[client] / "options.json").read_text())


#: A Go duration (time.ParseDuration's syntax; a bare number only for zero).
_GO_DURATION = re.compile(r"^([0-9]+(\.[0-9]+)?(ns|us|µs|ms|s|m|h))+$|^0$")


_GO_UNITS_NS = {"ns": 1, "us": 1_000, "µs": 1_000, "ms": 1_000_000, "s": 1_000_000_000, "m": 60_000_000_000}
_GO_UNITS_NS["h"] = 60 * _GO_UNITS_NS["m"]


def go_duration_ms(text: str) -> float | None:
    """A Go duration (``1m30s``, ``250ms``) in milliseconds; None when ``text`` is not one."""
    if not _GO_DURATION.match(text):
        return None
    if text == "0":
        return 0.0
    parts = re.findall(r"([0-9]+(?:\.[0-9]+)?)(ns|us|µs|ms|s|m|h)", text)
    return sum(float(n) * _GO_UNITS_NS[u] for n, u in parts) / 1e6


def _go_value_error(option: Mapping[str, Any], value: str) -> str | None:
    """Why ``value`` is not a value of the Go option ``option`` (None: it is)."""
    kind = option["type"]
    if kind == "duration" and not _GO_DURATION.match(value):
        return "expected a Go duration such as 10s or 500ms"
    if kind == "int" and not value.lstrip("-").isdigit():
        return "expected an integer"
    if kind == "bool" and value not in ("true", "false"):
        return "expected true or false"
    if kind in ("balancers", "enum"):
        parts = value.split(",") if kind == "balancers" else [value]
        for part in (p.strip() for p in parts):
            if part not in option["values"]:
                return f"{part!r} is not one of {', '.join(option['values'])}"
    return None


def go_options(client: str, props: Mapping[str, PropertyValue]) -> dict[str, str]:
    """The Go client's own options that ``props`` set (see the module contract): Kafka's dotted names the
    table maps become their option (milliseconds as a Go duration, mapped values), then the client's own
    names over them; the member policy's names are left out. A ValueError names the first bad name."""
    table = go_option_table(client)
    mapped: dict[str, str] = {}
    own: dict[str, str] = {}
    for name, raw in props.items():
        value = property_value(raw)
        if name in table["harness"]:
            raise ValueError(f"property {name!r} is set by the harness for every member")
        if name in table["policy"]:
            continue
        kafka = table["kafka"].get(name)
        if kafka is not None:
            option = kafka["option"]
            if kafka.get("unit") == "ms":
                if not value.isdigit():
                    raise ValueError(f"{client} property {name!r}: bad value {raw!r} (expected an integer)")
                converted = f"{value}ms"
            elif "values" in kafka:
                if value not in kafka["values"]:
                    raise ValueError(
                        f"{client} property {name!r}: bad value {raw!r} "
                        f"(expected one of {', '.join(sorted(kafka['values']))})"
                    )
                converted = kafka["values"][value]
            else:
                converted = value
            why = _go_value_error(table["options"][option], converted)
            if why is not None:
                if name == "partition.assignment.strategy":
                    raise ValueError(
                        f"{client} has no assignor {value!r} (it has: {', '.join(ASSIGNORS[client])})"
                    )
                raise ValueError(f"{client} property {name!r}: bad value {raw!r} ({why})")
            mapped[option] = converted
            continue
        option_spec = table["options"].get(name)
        if option_spec is None:
            raise ValueError(f"unknown {client} option {name!r} (its options: {', '.join(table['options'])})")
        why = _go_value_error(option_spec, value)
        if why is not None:
            raise ValueError(f"{client} option {name!r}: bad value {raw!r} ({why})")
        own[name] = value
    return {**mapped, **own}


def check_client_properties(
    client: str, props: Mapping[str, PropertyValue], version: str | None = None
) -> None:
    """Check ``props`` for ``client`` (``version``: its ``client_version``, for a client with several; see
    the module contract); ValueError naming the first bad one."""
    for name in props:
        if name in HARNESS_PROPERTIES:
            raise ValueError(f"property {name!r} is set by the harness for every member")
    own = {k: v for k, v in props.items() if k not in MEMBER_POLICY_PROPERTIES}
    for name in MEMBER_POLICY_PROPERTIES:
        if name in props:
            default: Any = True if name == "enable.auto.commit" else 5000
            _converted(client, name, props[name], default)
    if client == "kafka-python":
        _check_snake(client, _kafka_python_consumer(), own)
    elif client == "aiokafka":
        _check_snake(client, _aiokafka_consumer(), own)
    elif client == "librdkafka":
        _check_librdkafka(own)
    elif client == "java":
        _check_java(props, version)
    elif client in GO_PROGRAMS:
        go_options(client, own)
    else:
        raise ValueError(f"unknown client {client!r} (known: {', '.join(CLIENTS)})")


def client_cannot_run(client: str, assignor: str, static_membership: bool) -> str | None:
    """Why members of ``client`` cannot run with the group's ``assignor`` (and static membership when
    ``static_membership``), or None when they can: the one rule a scenario's group is checked by and a
    matrix leaves a case out by."""
    if assignor not in ASSIGNORS[client]:
        return (
            f"group.assignor {assignor!r} is not an assignor of client {client!r} "
            f"(it has {', '.join(ASSIGNORS[client])})"
        )
    if static_membership and client not in STATIC_MEMBERSHIP:
        return f"client {client!r} has no static membership (group.instance.id)"
    return None


def check_producer_properties(props: Mapping[str, PropertyValue]) -> None:
    """Check ``[workload.properties]`` against the workload's kafka-python producer."""
    for name in props:
        if name in ("bootstrap.servers", "client.id", "key.serializer", "value.serializer"):
            raise ValueError(f"property {name!r} is set by the harness for the producer")
    # acks is an int in kafka-python's defaults (-1) but Kafka's own spelling of -1 is "all"
    rest = {k: v for k, v in props.items() if not (k == "acks" and str(v).lower() == "all")}
    _check_snake("kafka-python producer", _kafka_python_producer(), rest)


#: Kafka's consumer default of ``metadata.max.age.ms`` (5 minutes; kafka-python's and aiokafka's too): a
#: member refreshes its metadata this long after the last refresh. herdlab's coordinator members use it
#: unless a scenario shortens it (``partition-growth``, where the refresh is how the coordinator side
#: notices new partitions): a periodic refresh is steady-state traffic, and with a short age every
#: member's refreshes would fall into every trigger window and be counted in the herd as Metadata.
KAFKA_METADATA_MAX_AGE_MS = 300_000

#: The typed ``[group.coordinator]`` keys that are shorthands of Kafka client properties.
COORDINATOR_SHORTHANDS = {
    "session_timeout_ms": "session.timeout.ms",
    "heartbeat_interval_ms": "heartbeat.interval.ms",
    "max_poll_interval_ms": "max.poll.interval.ms",
    "auto_commit_interval_ms": "auto.commit.interval.ms",
    "metadata_max_age_ms": "metadata.max.age.ms",
    "fetch_max_wait_ms": "fetch.max.wait.ms",
}
#: librdkafka's name of Kafka's ``fetch.max.wait.ms``.
LIBRDKAFKA_FETCH_WAIT = "fetch.wait.max.ms"


#: librdkafka's periodic metadata refresh is ``topic.metadata.refresh.interval.ms`` (default 300000); its
#: ``metadata.max.age.ms`` is only the cache's age, by default three times the refresh interval.
LIBRDKAFKA_REFRESH = "topic.metadata.refresh.interval.ms"


def client_metadata_names(props: dict[str, str], client: str) -> dict[str, str]:
    """``props`` with its ``metadata.max.age.ms`` (the refresh interval, as Kafka's Java client and
    kafka-python mean it) named as ``client`` names it: librdkafka's refresh interval is
    :data:`LIBRDKAFKA_REFRESH`, and its ``metadata.max.age.ms`` (the cache's age) becomes three times it;
    its ``fetch.max.wait.ms`` is :data:`LIBRDKAFKA_FETCH_WAIT`."""
    if client == "librdkafka" and "metadata.max.age.ms" in props:
        age = int(props["metadata.max.age.ms"])
        props[LIBRDKAFKA_REFRESH] = str(age)
        props["metadata.max.age.ms"] = str(3 * age)
    if client == "librdkafka" and "fetch.max.wait.ms" in props:
        props[LIBRDKAFKA_FETCH_WAIT] = props.pop("fetch.max.wait.ms")
    return props


def metadata_refresh_ms(props: Mapping[str, str], client: str) -> int:
    """How often a member of ``client`` with the Kafka properties ``props`` refreshes its metadata."""
    name = LIBRDKAFKA_REFRESH if client == "librdkafka" else "metadata.max.age.ms"
    return int(props.get(name, KAFKA_METADATA_MAX_AGE_MS))


def coordinator_properties(
    typed: Mapping[str, Any], table: Mapping[str, PropertyValue], assignor: str, client: str = "kafka-python"
) -> dict[str, str]:
    """The Kafka properties a coordinator member gets: the typed shorthands (``typed``: key -> value) as
    ``client`` names them (:func:`client_metadata_names`), ``partition.assignment.strategy`` from the
    group's assignor, then ``table`` over them."""
    out = {  # an unset optional key (None) leaves the client's own default
        prop: property_value(typed[key])
        for key, prop in COORDINATOR_SHORTHANDS.items()
        if typed.get(key) is not None
    }
    out = client_metadata_names(out, client)
    out["partition.assignment.strategy"] = assignor
    out = without_classic_only(out, client, table)
    out.update({k: property_value(v) for k, v in table.items()})
    return out


def check_shorthands(explicit: set[str], table: Mapping[str, PropertyValue]) -> None:
    """``explicit``: the typed keys a scenario set itself; one also in ``table`` is a ValueError naming both."""
    for key, prop in COORDINATOR_SHORTHANDS.items():
        if key in explicit and prop in table:
            raise ValueError(f"group.coordinator.{key} and group.coordinator.properties.{prop!r} both given")
