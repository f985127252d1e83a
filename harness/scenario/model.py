"""The scenario schema: what one scenario file may say, with types, bounds and defaults.

A scenario names the workload, the group settings, the membership timeline and the faults once; the
harness runs it against each implementation (``legacy_zk``: the ZooKeeper-era consumer; ``coordinator``:
the classic group protocol's members; ``consumer``: coordinator-kind members on KIP-848's consumer group
protocol, ``[group.consumer]``) with repetitions.
Every model forbids unknown keys, so a typo is an error that names the key, never a silent default.

Durations are written as strings with a unit (``"500ms"``, ``"5s"``, ``"2m"``) or as a number of
seconds; they are held as float seconds. Matrix axes are lists: ``group.members = [10, 25, 50]``
or any dotted key under ``[matrix]``; a key naming several dotted keys joined by commas is one axis whose
values are lists, one value per key (see :func:`harness.scenario.loading.expand`).
"""

from __future__ import annotations

import re
from typing import Annotated, Literal

from pydantic import AfterValidator, BaseModel, BeforeValidator, ConfigDict, Field, model_validator

from harness.kernel import actions
from harness.scenario.properties import (
    CONSUMER_CLIENTS,
    CONSUMER_SHORTHANDS,
    COORDINATOR_SHORTHANDS,
    KAFKA_METADATA_MAX_AGE_MS,
    check_client_properties,
    check_client_version,
    check_consumer_client,
    check_consumer_properties,
    check_producer_properties,
    check_shorthands,
    client_cannot_run,
    consumer_properties,
    coordinator_properties,
    metadata_refresh_ms,
)
from legacy_zk.config import PROPERTIES

#: Every implementation (design) a unit runs: the ZooKeeper-era consumer, the classic group protocol, and
#: KIP-848's consumer group protocol (coordinator-kind members with ``group.protocol=consumer``).
IMPLEMENTATIONS = ("legacy_zk", "coordinator", "consumer")
#: A scenario's ``implementations`` when it names none: the two designs every built-in scenario compares
#: (``consumer`` is named where wanted: its units need a broker that serves the protocol).
DEFAULT_IMPLEMENTATIONS = ("legacy_zk", "coordinator")
#: Kafka's bounds of the consumer protocol's broker settings (``group.consumer.*``): the defaults of the
#: minimums (which the harness lowers to a scenario's shorter value) and of the maximums (the scenario's
#: upper bounds, so herdlab's broker and Apache Kafka 4 take the same values).
CONSUMER_MIN_HEARTBEAT_INTERVAL_MS, CONSUMER_MAX_HEARTBEAT_INTERVAL_MS = 5000, 15000
CONSUMER_MIN_SESSION_TIMEOUT_MS, CONSUMER_MAX_SESSION_TIMEOUT_MS = 45000, 60000

_DURATION = re.compile(r"^\s*(\d+(?:\.\d+)?)\s*(ms|s|m|min|h)?\s*$")
_UNIT = {"ms": 0.001, "s": 1.0, None: 1.0, "m": 60.0, "min": 60.0, "h": 3600.0}


def parse_duration(value: object) -> float:
    """``"500ms"`` -> 0.5, ``"5s"`` / ``5`` -> 5.0, ``"2m"`` -> 120.0; ValueError otherwise."""
    if isinstance(value, bool):
        raise ValueError("expected a duration like '5s' or '500ms'")
    if isinstance(value, int | float):
        if value < 0:
            raise ValueError("a duration cannot be negative")
        return float(value)
    if isinstance(value, str):
        m = _DURATION.match(value)
        if m:
            return float(m.group(1)) * _UNIT[m.group(2)]
    raise ValueError("expected a duration like '5s' or '500ms'")


Duration = Annotated[float, BeforeValidator(parse_duration)]


def duration_text(seconds: float) -> str:
    """``45 s``, ``3 min``, ``1 h 20 min``: a duration rounded for reading."""
    if seconds < 90:
        return f"{round(seconds)} s"
    minutes = round(seconds / 60)
    return f"{minutes} min" if minutes < 60 else f"{minutes // 60} h {minutes % 60} min"


#: A property value in a scenario's properties tables (Kafka's dotted names).
PropertyValue = str | int | float | bool


def _members(value: object) -> int | list[int]:
    def ok(v: object) -> bool:
        return isinstance(v, int) and not isinstance(v, bool) and v >= 1

    if ok(value) or (isinstance(value, list) and value and all(ok(v) for v in value)):
        return value  # type: ignore[return-value]
    raise ValueError("expected a positive integer or a non-empty list of them")


def _partitions(value: object) -> int | str:
    if value == "members" or (isinstance(value, int) and not isinstance(value, bool) and value >= 1):
        return value  # type: ignore[return-value]
    raise ValueError("expected a positive integer or 'members'")


class Strict(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True)


class Topic(Strict):
    """The topic every member subscribes to."""

    name: str = Field(default="herd", pattern=r"^[A-Za-z0-9._-]{1,200}$")
    partitions: Annotated[int | Literal["members"], BeforeValidator(_partitions)] = Field(
        default="members", description="partition count, or 'members' for as many partitions as members"
    )


#: The offset-storage properties of 0.8.2.2's ConsumerConfig that the legacy member takes
#: (accepted here even before :data:`legacy_zk.config.PROPERTIES` lists them, so scenarios load either way).
PENDING_PROPERTIES: dict[str, type] = {
    "dual.commit.enabled": bool,
    "offsets.commit.max.retries": int,
    "offsets.channel.backoff.ms": int,
    "offsets.channel.socket.timeout.ms": int,
}
#: Properties the harness sets for every member itself (identity and addresses): not for a timeline.
HARNESS_PROPERTIES = ("group.id", "consumer.id", "client.id", "zookeeper.connect", "bootstrap.servers")


def property_string(value: PropertyValue) -> str:
    """The string form a 0.8 property gets on the member's command line (``true``, ``1000``, ``kafka``)."""
    return str(value).lower() if isinstance(value, bool) else str(value)


def _check_properties(props: dict[str, PropertyValue]) -> dict[str, PropertyValue]:
    """Every name a legacy_zk property (:data:`legacy_zk.config.PROPERTIES` or
    :data:`PENDING_PROPERTIES`) not owned by the harness, every value parseable; ValueError naming it."""
    for name, value in props.items():
        if name in HARNESS_PROPERTIES:
            raise ValueError(f"property {name!r} is set by the harness for every member")
        if name in PENDING_PROPERTIES:  # checked the same way once PROPERTIES lists them too
            kind = PENDING_PROPERTIES[name]
            if kind is bool and property_string(value).lower() not in ("true", "false"):
                raise ValueError(f"property {name!r} must be true or false (got {value!r})")
            parse = str if kind is bool else int
        elif name in PROPERTIES:
            parse = PROPERTIES[name][1]
        else:
            raise ValueError(f"unknown legacy_zk property {name!r}")
        try:
            parse(property_string(value))
        except ValueError:
            raise ValueError(f"property {name!r}: bad value {value!r}") from None
    if props.get("offsets.storage", "zookeeper") not in ("zookeeper", "kafka"):
        raise ValueError(
            f"property 'offsets.storage' must be zookeeper or kafka (got {props['offsets.storage']!r})"
        )
    return props


Properties = Annotated[dict[str, PropertyValue], AfterValidator(_check_properties)]


class Workload(Strict):
    """The producer: sequence-numbered records at a steady rate."""

    rate: float = Field(default=200.0, gt=0, description="records per second, all partitions together")
    record_size: int = Field(default=100, ge=16, le=1_000_000, description="bytes per record value")
    properties: dict[str, PropertyValue] = Field(
        default_factory=dict[str, PropertyValue],
        description="Kafka producer properties (dotted names) of the workload's kafka-python producer",
    )

    @model_validator(mode="after")
    def _check_producer_properties(self) -> Workload:
        check_producer_properties(self.properties)
        return self


class LegacySettings(Strict):
    """Settings of the ZooKeeper-era consumer, named after the 0.8 properties."""

    client: Literal["python", "kafka-0.8.2.2"] = Field(
        default="python",
        description="the legacy members: herdlab's own (python) or Kafka 0.8.2.2's own ZooKeeper consumer "
        "(kafka-0.8.2.2, one JVM per member; needs cluster.broker = 'apache-kafka' with kafka_version 3.9)",
    )
    zookeeper_session_timeout_ms: int = Field(default=6000, ge=400)
    rebalance_max_retries: int = Field(default=4, ge=1)
    rebalance_backoff_ms: int = Field(default=2000, ge=0)
    auto_commit_enable: bool = True
    auto_commit_interval_ms: int = Field(default=60000, ge=10)
    auto_offset_reset: Literal["smallest", "largest"] = "smallest"
    takeover_delay_ms: int = Field(default=0, ge=0, description="mitigation (a): wait before taking over")
    fenced_commits: bool = Field(
        default=False, description="mitigation (b): conditional, owner-checked commits"
    )
    reconnect_delay_ms: int = Field(
        default=1000, ge=0, description="ZooKeeper 3.4.6 client: wait between reconnect attempts (one host)"
    )
    reconnect_random_ms: int = Field(
        default=1000, ge=0, description="ZooKeeper 3.4.6 client: random extra wait before a reconnect"
    )
    offsets_storage: Literal["zookeeper", "kafka"] = Field(
        default="zookeeper", description="0.8.2 offsets.storage: where offsets are committed and read"
    )
    dual_commit_enabled: bool | None = Field(
        default=None, description="0.8.2 dual.commit.enabled; unset = 0.8.2's default (storage == kafka)"
    )
    offsets_commit_max_retries: int = Field(default=5, ge=0, description="0.8.2 offsets.commit.max.retries")
    offsets_channel_backoff_ms: int = Field(
        default=1000, ge=0, description="0.8.2 offsets.channel.backoff.ms"
    )
    properties: dict[str, PropertyValue] = Field(
        default_factory=dict[str, PropertyValue],
        description="0.8 consumer properties (dotted names), over the typed keys above",
    )
    members: int | None = Field(
        default=None, ge=1, description="initial members of the legacy_zk units; unset = group.members"
    )
    members_per_host: int = Field(
        default=0,
        ge=0,
        description="run the untargeted initial members on gevent, this many per process, "
        "coordination-only (no record fetcher); 0 = every member in its own process",
    )

    @model_validator(mode="after")
    def _check_legacy_properties(self) -> LegacySettings:
        _check_properties(self.properties)
        return self


class CoordinatorSettings(Strict):
    """Settings of the coordinator members (their client library and its Kafka properties) and of the
    broker's group coordinator. The typed client keys are shorthands of Kafka properties
    (:data:`harness.scenario.properties.COORDINATOR_SHORTHANDS`)."""

    client: Literal["kafka-python", "librdkafka", "aiokafka", "java", "kafka-go", "franz-go"] = Field(
        default="kafka-python", description="the members' Kafka client library"
    )
    client_version: str | None = Field(
        default=None,
        description="the client's version, for a client that has several (java: kafka-clients of the 3.9 "
        "or 4 line, or an exact version); unset = the client's default (java: 3.9)",
    )
    properties: dict[str, PropertyValue] = Field(
        default_factory=dict[str, PropertyValue],
        description="Kafka consumer properties (dotted names; the Go clients: their own option names), "
        "checked against the client's own",
    )

    session_timeout_ms: int = Field(default=6000, ge=1)
    heartbeat_interval_ms: int = Field(default=500, ge=1)
    max_poll_interval_ms: int = Field(default=30000, ge=1)
    auto_commit_interval_ms: int = Field(default=5000, ge=10)
    metadata_max_age_ms: int = Field(
        default=KAFKA_METADATA_MAX_AGE_MS,
        ge=0,
        description="metadata.max.age.ms: Kafka's default, 5 minutes; shorten it where the members must "
        "notice new partitions (partition-growth). Every refresh inside a trigger window counts in its herd",
    )
    fetch_max_wait_ms: int | None = Field(
        default=None,
        ge=0,
        description="fetch.max.wait.ms, named as each client names it (librdkafka fetch.wait.max.ms, "
        "kafka-go MaxWait, franz-go FetchMaxWait): how long the broker holds an empty fetch; unset: each "
        "client's own default (500 ms; kafka-go 10 s, franz-go 5 s). Set it to compare clients alike",
    )
    static_membership: bool = False
    initial_rebalance_delay_ms: int = Field(
        default=3000, ge=0, description="broker: group.initial.rebalance.delay.ms"
    )
    min_session_timeout_ms: int = Field(
        default=6000, ge=1, description="broker: group.min.session.timeout.ms"
    )
    members: int | None = Field(
        default=None, ge=1, description="initial members of the coordinator units; unset = group.members"
    )
    members_per_host: int = Field(
        default=0,
        ge=0,
        description="clients that host several members (java): run the untargeted initial members this many "
        "per JVM, one KafkaConsumer per thread (they share the JVM's collector pauses, CPU and fate); other "
        "clients and 0: every member in its own process",
    )

    @model_validator(mode="after")
    def _heartbeat_below_session(self) -> CoordinatorSettings:
        if self.heartbeat_interval_ms >= self.session_timeout_ms:
            raise ValueError("group.coordinator.heartbeat_interval_ms must be below session_timeout_ms")
        # the properties are checked once, with the assignor, by the group (Group._assignor_of_client)
        return self

    def member_properties(self, assignor: str) -> dict[str, str]:
        """The Kafka properties every member gets (typed shorthands, the assignor, then the table)."""
        typed = {k: getattr(self, k) for k in COORDINATOR_SHORTHANDS}
        return coordinator_properties(typed, self.properties, assignor, self.client)


class ConsumerSettings(Strict):
    """Settings of the ``consumer`` implementation's units: its members (coordinator-kind, on a client that
    speaks KIP-848's consumer group protocol, run with ``group.protocol=consumer``) and the broker's
    ``group.consumer.*`` settings, which under this protocol replace the members' session timeout,
    heartbeat interval and assignor. The client properties the protocol refuses are an error here."""

    client: str = Field(
        default="librdkafka",
        description="the members' Kafka client library: librdkafka (confluent-kafka), java (kafka-clients "
        "of the 4 line by default) or franz-go; kafka-python, aiokafka and kafka-go do not speak the protocol",
        json_schema_extra={"enum": list(CONSUMER_CLIENTS)},
    )
    client_version: str | None = Field(
        default=None,
        description="the client's version, for a client that has several (java: 3.9, 4 or an exact "
        "kafka-clients version); unset = the client's default (java: 4)",
    )
    properties: dict[str, PropertyValue] = Field(
        default_factory=dict[str, PropertyValue],
        description="client properties (dotted names; franz-go: its own option names), checked against the "
        "client's own; the names the protocol refuses (session.timeout.ms, heartbeat.interval.ms, "
        "partition.assignment.strategy; librdkafka also group.protocol.type; franz-go SessionTimeout, "
        "HeartbeatInterval, Balancers) and those the harness sets (group.protocol, group.remote.assignor, "
        "ServerSideBalancer) are errors",
    )
    assignor: Literal["uniform", "range"] | None = Field(
        default=None,
        description="the server-side assignor the members ask for (group.remote.assignor; franz-go: its "
        "balancer, cooperative-sticky for uniform); unset = the broker's default, uniform",
    )
    heartbeat_interval_ms: int = Field(
        default=500,
        ge=1,
        le=CONSUMER_MAX_HEARTBEAT_INTERVAL_MS,
        description="broker: group.consumer.heartbeat.interval.ms (herdlab's broker: "
        "--consumer-heartbeat-interval-ms), the interval the broker gives its members; its minimum is "
        "lowered to it when below Kafka's 5000",
    )
    session_timeout_ms: int = Field(
        default=6000,
        ge=1,
        le=CONSUMER_MAX_SESSION_TIMEOUT_MS,
        description="broker: group.consumer.session.timeout.ms (herdlab's broker: "
        "--consumer-session-timeout-ms); its minimum is lowered to it when below Kafka's 45000",
    )
    max_poll_interval_ms: int = Field(
        default=30000,
        ge=1,
        description="max.poll.interval.ms: the member's poll timer, sent as its rebalance timeout (how long "
        "the broker waits for it to revoke)",
    )
    auto_commit_interval_ms: int = Field(
        default=5000, ge=10, description="auto.commit.interval.ms, carried out by the member's commit policy"
    )
    fetch_max_wait_ms: int | None = Field(
        default=None,
        ge=0,
        description="fetch.max.wait.ms as each client names it (librdkafka fetch.wait.max.ms, franz-go "
        "FetchMaxWait); unset: the client's own default",
    )
    static_membership: bool = Field(
        default=False, description="members with group.instance.id (their name), as for coordinator"
    )
    members: int | None = Field(
        default=None, ge=1, description="initial members of the consumer units; unset = group.members"
    )
    members_per_host: int = Field(
        default=0,
        ge=0,
        description="java: run the untargeted initial members this many per JVM (as for coordinator); other "
        "clients and 0: every member in its own process",
    )

    @model_validator(mode="after")
    def _check_consumer(self) -> ConsumerSettings:
        check_consumer_client(self.client)
        check_client_version(self.client, self.client_version)
        if self.heartbeat_interval_ms >= self.session_timeout_ms:
            raise ValueError("group.consumer.heartbeat_interval_ms must be below session_timeout_ms")
        # the properties are checked by a scenario whose implementations name consumer
        # (Scenario._check_consumer): a client's own check costs a client instance
        return self

    @property
    def effective_version(self) -> str | None:
        """The client version the members run: ``client_version``, else java's ``4`` line (kafka-clients
        speaks the protocol GA from 4.0), else None (the client's one version)."""
        if self.client_version is None and self.client == "java":
            return "4"
        return self.client_version

    def member_properties(self) -> dict[str, str]:
        """Every property a member gets (:func:`harness.scenario.properties.consumer_properties`)."""
        typed = {k: getattr(self, k) for k in CONSUMER_SHORTHANDS}
        return consumer_properties(typed, self.properties, self.assignor, self.client)

    def check_properties(self) -> None:
        """The properties table and every property a member gets, checked for the client; ValueError."""
        check_consumer_properties(
            self.client, self.properties, self.member_properties(), self.effective_version
        )

    def broker_settings(self) -> dict[str, str]:
        """The broker's ``group.consumer.*`` settings of these keys (Kafka's names): the heartbeat interval
        and session timeout with their minimums lowered to them where Kafka's defaults are higher."""
        hb, session = self.heartbeat_interval_ms, self.session_timeout_ms
        return {
            "group.consumer.heartbeat.interval.ms": str(hb),
            "group.consumer.min.heartbeat.interval.ms": str(min(hb, CONSUMER_MIN_HEARTBEAT_INTERVAL_MS)),
            "group.consumer.session.timeout.ms": str(session),
            "group.consumer.min.session.timeout.ms": str(min(session, CONSUMER_MIN_SESSION_TIMEOUT_MS)),
        }


class Group(Strict):
    """The consumer group: size, assignor and per-implementation settings."""

    id: str = Field(default="herd-group", pattern=r"^[A-Za-z0-9._-]{1,200}$")
    members: Annotated[int | list[int], BeforeValidator(_members)] = Field(
        default=5, description="members at the start; a list is a matrix axis"
    )
    assignor: Literal["range", "roundrobin", "sticky", "cooperative-sticky"] = Field(
        default="range",
        description="range and roundrobin for both implementations; sticky and cooperative-sticky "
        "(KIP-54, KIP-429) for coordinator clients that have them",
    )
    legacy_zk: LegacySettings = LegacySettings()
    coordinator: CoordinatorSettings = CoordinatorSettings()
    consumer: ConsumerSettings = Field(
        default=ConsumerSettings(),
        description="the consumer implementation (KIP-848's consumer group protocol): its members and the "
        "broker's group.consumer.* settings",
    )

    @model_validator(mode="after")
    def _assignor_of_client(self) -> Group:
        client = self.coordinator.client
        if (why := client_cannot_run(client, self.assignor, self.coordinator.static_membership)) is not None:
            raise ValueError(why)
        # every property a member gets, typed shorthands included: a client checks them against each
        # other (librdkafka: max.poll.interval.ms >= session.timeout.ms)
        check_client_version(client, self.coordinator.client_version)
        check_client_properties(
            client, self.coordinator.member_properties(self.assignor), self.coordinator.client_version
        )
        check_shorthands(set(self.coordinator.model_fields_set), self.coordinator.properties)
        return self

    @model_validator(mode="after")
    def _members_per_implementation(self) -> Group:
        given = [k for k in IMPLEMENTATIONS if getattr(self, k).members is not None]
        if given and isinstance(self.members, list):
            raise ValueError(
                f"group.{given[0]}.members cannot be combined with a list of group.members (a matrix axis)"
            )
        return self

    def members_for(self, impl: str) -> int:
        """The initial member count of ``impl``'s units: ``[group.<impl>] members`` when set, else
        ``group.members`` (a single value here:
        a case's scenario, after the matrix substitution)."""
        kind = (
            self.legacy_zk
            if impl == "legacy_zk"
            else self.consumer
            if impl == "consumer"
            else self.coordinator
        )
        if kind.members is not None:
            return kind.members
        assert isinstance(self.members, int), "a case's group.members is one value"
        return self.members


Select = Literal["random", "newest", "oldest"]


class _Action(Strict):
    at: Duration = Field(description="time after the group first became stable")


class Join(_Action):
    action: Literal["join"]
    count: int = Field(default=1, ge=1)


class Leave(_Action):
    action: Literal["leave"]
    count: int = Field(default=1, ge=1)
    select: Select = "random"


class Crash(_Action):
    action: Literal["crash"]
    count: int = Field(default=1, ge=1)
    select: Select = "random"


class Pause(_Action):
    action: Literal["pause"]
    count: int = Field(default=1, ge=1)
    select: Select = "random"
    duration: Duration


class Stall(_Action):
    """Stall members' processing for ``duration`` (coordinator members; skipped for legacy_zk): a member
    stops polling, as a slow record handler would, while its client's heartbeat goes on. Past the
    client's ``max.poll.interval.ms`` its poll timer makes it leave the group (kafka-python, librdkafka,
    aiokafka, Java; kafka-go and franz-go have no such timer); it rejoins when it polls again, after the
    stall."""

    action: Literal["stall"]
    count: int = Field(default=1, ge=1)
    select: Select = "random"
    duration: Duration


class Cut(_Action):
    action: Literal["cut"]
    count: int = Field(default=1, ge=1)
    select: Select = "random"
    target: Literal["zookeeper", "broker"] = Field(description="what the member is cut off from")
    duration: Duration


class Expire(_Action):
    """Expire the ZooKeeper session of members (legacy_zk only; skipped for coordinator)."""

    action: Literal["expire"]
    count: int = Field(default=1, ge=1)
    select: Select = "random"


class RollingRestart(_Action):
    action: Literal["rolling_restart"]
    interval: Duration = Field(default=5.0, description="time between one member's restart and the next")
    downtime: Duration = Field(default=1.0, description="how long each member stays down")


class AddPartitions(_Action):
    action: Literal["add_partitions"]
    to: int = Field(ge=1, description="the new partition count")


class RestartBroker(_Action):
    action: Literal["restart_broker"]
    downtime: Duration = 1.0


class KillZkLeader(_Action):
    """SIGKILL the ZooKeeper leader (needs ``[zookeeper] servers = 3``; skipped with one server)."""

    action: Literal["kill_zk_leader"]
    downtime: Duration = Field(default=5.0, description="how long the killed server stays down")


class PauseZkLeader(_Action):
    """SIGSTOP the ZooKeeper leader for ``duration`` (needs ``[zookeeper] servers = 3``)."""

    action: Literal["pause_zk_leader"]
    duration: Duration


class KillCoordinator(_Action):
    """SIGKILL the broker that coordinates the scenario's group (needs ``[cluster] brokers`` > 1); it is
    started again (same id, port and data directory) ``downtime`` later."""

    action: Literal["kill_coordinator"]
    downtime: Duration = Field(default=5.0, description="how long the killed broker stays down")


class PauseCoordinator(_Action):
    """SIGSTOP the group's coordinating broker for ``duration`` (a zombie coordinator), then SIGCONT."""

    action: Literal["pause_coordinator"]
    duration: Duration


class CutCoordinator(_Action):
    """Cut the group's coordinating broker from ZooKeeper (both directions, connections dropped) for
    ``duration``, then heal the cut."""

    action: Literal["cut_coordinator"]
    duration: Duration


#: The coordinator-side faults of the timeline (each is one trigger and, later, the step that ends it):
#: the registry's (:mod:`harness.kernel.actions`).
COORDINATOR_FAULTS = actions.COORDINATOR_FAULT_ACTIONS

# -- degraded networks (toxiproxy's toxics), ZooKeeper restarts, broker-ZooKeeper cuts ------------------
Stream = Literal["upstream", "downstream", "both"]


class ToxicAction(_Action):
    """A degraded network on chosen members' proxies to ``target`` for ``duration`` (as ``cut`` picks
    them), named and parametrised as toxiproxy's toxic of the same name (:mod:`harness.faults.toxics`)."""

    count: int = Field(default=1, ge=1)
    select: Select = "random"
    target: Literal["zookeeper", "broker"] = Field(description="which of the member's links is degraded")
    duration: Duration
    stream: Stream = Field(
        default="downstream", description="upstream: member -> server; downstream: server -> member"
    )

    def toxic_attributes(self) -> dict[str, int | str]:
        """The toxic's kind, stream and attributes (:class:`harness.faults.toxics.Toxic`'s fields)."""
        own = {k: getattr(self, k) for k in type(self).model_fields if k in _TOXIC_FIELDS}
        return {"kind": self.action, "stream": self.stream, **own}  # type: ignore[attr-defined]


_TOXIC_FIELDS = ("latency", "jitter", "rate", "timeout", "delay", "bytes")


class Latency(ToxicAction):
    action: Literal["latency"]
    latency: int = Field(default=100, ge=0, description="ms added to each chunk")
    jitter: int = Field(default=0, ge=0, description="ms: the delay varies uniformly by up to this much")

    @model_validator(mode="after")
    def _jitter_within_latency(self) -> Latency:
        if self.jitter > self.latency:
            raise ValueError("latency: jitter cannot exceed latency")
        return self


class Bandwidth(ToxicAction):
    action: Literal["bandwidth"]
    rate: int = Field(default=100, ge=1, description="KB/s (1 KB = 1000 bytes)")


class ResetPeer(ToxicAction):
    action: Literal["reset_peer"]
    timeout: int = Field(default=0, ge=0, description="ms after which each connection is reset (RST)")


class SlowClose(ToxicAction):
    action: Literal["slow_close"]
    delay: int = Field(default=1000, ge=0, description="ms by which an end-of-stream is delayed")


class Timeout(ToxicAction):
    action: Literal["timeout"]
    timeout: int = Field(default=0, ge=0, description="ms after which each connection is closed (0: never)")


class LimitData(ToxicAction):
    action: Literal["limit_data"]
    bytes: int = Field(default=0, ge=0, description="bytes through a connection before it is closed")


#: The degraded-network actions of the timeline (toxiproxy's toxic names; the registry's).
TOXIC_ACTIONS = actions.TOXIC_ACTIONS


class RestartZk(_Action):
    """Stop a ZooKeeper server process, keep it down ``downtime``, start it again on the same data
    directory and ports (local backend). ``server``: its 0-based index in the ensemble, or ``random``
    (drawn from the scenario's seed); with one server, that one."""

    action: Literal["restart_zk"]
    server: int | Literal["random"] = Field(default="random", description="0-based server index, or random")
    downtime: Duration = Field(default=1.0, description="how long the server stays down")

    @model_validator(mode="after")
    def _server_index(self) -> RestartZk:
        if isinstance(self.server, int) and self.server < 0:
            raise ValueError("restart_zk: server must be a 0-based index or 'random'")
        return self


class CutBrokerZk(_Action):
    """Cut broker ``broker`` (0-based id) from every ZooKeeper server for ``duration`` (its own ZooKeeper
    session goes through proxies that blackhole and drop its connections), then heal the cut."""

    action: Literal["cut_broker_zk"]
    broker: int = Field(default=0, ge=0, description="the broker's id (0-based index)")
    duration: Duration


#: Actions a ``[[nemesis]] kind = "random"`` schedule may draw (each with count 1, select random):
#: the registry's (:mod:`harness.kernel.actions`); :data:`RandomAction` is their typed form.
RANDOM_ACTIONS = actions.RANDOM_ACTIONS
RandomAction = Literal[
    "join",
    "leave",
    "crash",
    "pause",
    "cut",
    "expire",
    "latency",
    "bandwidth",
    "reset_peer",
    "slow_close",
    "timeout",
    "limit_data",
    "restart_broker",
    "restart_zk",
    "cut_broker_zk",
    "kill_zk_leader",
    "pause_zk_leader",
    "kill_coordinator",
    "pause_coordinator",
    "cut_coordinator",
]


class RandomNemesis(Strict):
    """A seeded random fault schedule (``[[nemesis]] kind = "random"``), drawn into concrete timeline
    actions before the run (:func:`harness.scenario.random_nemesis.draw`) and merged with the timeline."""

    kind: Literal["random"]
    actions: list[RandomAction] = Field(min_length=1, description="the actions drawn from, uniformly")
    rate: float = Field(gt=0, description="mean faults per minute while none is on")
    seed: int | None = Field(default=None, description="the draw's seed; unset: the scenario's seed")
    duration: list[Duration] = Field(
        default=[2.0, 10.0],
        min_length=2,
        max_length=2,
        description="[min, max] of each fault's duration or downtime, drawn uniformly",
    )
    start: Duration = Field(default=0.0, description="no fault before this time")
    stop: Duration = Field(description="no fault starts at or after this time")
    targets: list[Literal["zookeeper", "broker"]] = Field(
        default=["zookeeper", "broker"], min_length=1, description="what a drawn cut or toxic hits, drawn"
    )
    params: dict[str, dict[str, PropertyValue]] = Field(
        default_factory=dict[str, dict[str, PropertyValue]],
        description="action -> fixed keys of every drawn action of it (e.g. latency = {latency = 300})",
    )

    @model_validator(mode="after")
    def _bounds(self) -> RandomNemesis:
        if self.duration[0] > self.duration[1]:
            raise ValueError("nemesis.duration: [min, max] with min <= max")
        if self.stop <= self.start:
            raise ValueError("nemesis.stop must be after nemesis.start")
        unknown = sorted(set(self.params) - set(self.actions))
        if unknown:
            raise ValueError(f"nemesis.params names actions not in nemesis.actions: {', '.join(unknown)}")
        return self


class ZooKeeper(Strict):
    """The ``[zookeeper]`` table: how many ZooKeeper servers the cluster runs (local backend)."""

    servers: Literal[1, 3] = Field(
        default=1, description="1: one standalone server; 3: an ensemble whose leader can fail"
    )


SwitchMode = Literal["all_at_once", "rolling"]


class SetProperty(_Action):
    """Migration: a rolling restart of every present legacy member with these 0.8 properties."""

    action: Literal["set_property"]
    properties: Properties = Field(min_length=1, description="0.8 property name -> value")
    interval: Duration = Field(default=3.0, description="time between one member's restart and the next")
    downtime: Duration = Field(default=0.5, description="how long each member stays down")


class Switch(_Action):
    """Migration: replace every present legacy member by a coordinator member of the same group (``to =
    "coordinator"``, a legacy_zk unit), or every present classic-protocol coordinator member by a member of the
    same client with ``group.protocol=consumer`` (``to = "consumer"``, a coordinator unit: Kafka 4's online
    migration of the group from the classic to the consumer protocol)."""

    action: Literal["switch"]
    to: Literal["coordinator", "consumer"] = Field(
        default="coordinator", description="the members it starts: coordinator (classic protocol) or consumer"
    )
    mode: SwitchMode = "all_at_once"
    interval: Duration = Field(default=3.0, description="rolling: time between one replacement and the next")
    downtime: Duration = Field(default=0.5, description="time between a stop and its replacement's start")


class Rollback(_Action):
    """Migration: the reverse switch: replace every present coordinator member by a legacy member (``to =
    "legacy_zk"``), or every present consumer-protocol member by a classic-protocol coordinator member (``to =
    "coordinator"``, a coordinator unit)."""

    action: Literal["rollback"]
    to: Literal["legacy_zk", "coordinator"] = Field(
        default="legacy_zk", description="the members it starts: legacy_zk, or coordinator (classic protocol)"
    )
    mode: SwitchMode = "all_at_once"
    interval: Duration = Field(default=3.0, description="rolling: time between one replacement and the next")
    downtime: Duration = Field(default=0.5, description="time between a stop and its replacement's start")
    properties: Properties = Field(
        default_factory=dict[str, PropertyValue], description="0.8 properties of the legacy members"
    )


MIGRATION_ACTIONS = actions.MIGRATION_ACTIONS


def is_protocol_migration(action: object) -> bool:
    """Whether ``action`` migrates a coordinator group between the classic and the consumer protocol (``switch``
    to consumer, ``rollback`` to coordinator) rather than a legacy_zk group."""
    return (isinstance(action, Switch) and action.to == "consumer") or (
        isinstance(action, Rollback) and action.to == "coordinator"
    )


#: What serves the Kafka protocol (``cluster.broker``): herdlab's broker, tansu (a third-party broker with
#: its own group coordinator, the ``tansu`` extra), Apache Kafka's own broker (``herdlab kafka fetch``),
#: or the cluster at ``--bootstrap``.
BROKERS = ("herdlab", "tansu", "apache-kafka", "external")


def _version_text(value: object) -> object:
    """A version written as a TOML number (``3.9``, ``4``) as the string it reads as."""
    if isinstance(value, int | float) and not isinstance(value, bool):
        return f"{value:g}"
    return value


class ClusterSettings(Strict):
    """The ``[cluster]`` table: which broker, how many brokers the cluster runs and how they replicate
    (local backend for more than one broker)."""

    broker: Literal["herdlab", "tansu", "apache-kafka", "external"] = Field(
        default="herdlab",
        description="herdlab's broker; tansu (a third-party coordinator, local backend); apache-kafka (Apache "
        "Kafka's own broker, local backend: `herdlab kafka fetch`); external (--bootstrap)",
    )
    kafka_version: Annotated[str, BeforeValidator(_version_text)] = Field(
        default="3.9",
        pattern=r"^(3\.9|4|\d+\.\d+\.\d+)$",
        description="with broker = 'apache-kafka': 3.9 (ZooKeeper mode), 4 (KRaft) or an exact version",
    )

    brokers: int = Field(default=1, ge=1, le=5, description="broker processes (more than 1: local backend)")
    replication: bool | None = Field(
        default=None, description="the brokers' 0.9 replication (--replication); unset: on when brokers > 1"
    )
    unclean_leader_election: bool = Field(
        default=False, description="broker: unclean.leader.election.enable (with replication)"
    )
    min_insync_replicas: int = Field(default=1, ge=1, description="broker: min.insync.replicas")
    replica_lag_time_max_ms: int = Field(default=10_000, ge=1, description="broker: replica.lag.time.max.ms")
    zookeeper_tap: bool | None = Field(
        default=None,
        description="legacy members reach ZooKeeper through one ZooKeeper tap per unit, which writes what the "
        "server saw (role zookeeper: requests by op, watches, conflicts, sessions) and gives the herd's ZooKeeper "
        "figures for every client alike; brokers and the harness's own ZooKeeper clients connect directly. "
        "Unset: on with group.legacy_zk.client = 'kafka-0.8.2.2' (which reports no ZooKeeper request of its "
        "own), else off",
    )

    @property
    def replicated(self) -> bool:
        """Whether the brokers run replication: the key when set, else whether there are several brokers."""
        return self.brokers > 1 if self.replication is None else self.replication

    def broker_args(self) -> tuple[str, ...]:
        """The broker command-line options these settings give (none without replication)."""
        if not self.replicated:
            return ()
        unclean = (
            "--unclean-leader-election" if self.unclean_leader_election else "--no-unclean-leader-election"
        )
        return (
            "--replication",
            unclean,
            "--min-insync-replicas",
            str(self.min_insync_replicas),
            "--replica-lag-time-max-ms",
            str(self.replica_lag_time_max_ms),
        )


Action = Annotated[
    Join
    | Leave
    | Crash
    | Pause
    | Stall
    | Cut
    | Expire
    | RollingRestart
    | AddPartitions
    | RestartBroker
    | KillZkLeader
    | PauseZkLeader
    | KillCoordinator
    | PauseCoordinator
    | CutCoordinator
    | Latency
    | Bandwidth
    | ResetPeer
    | SlowClose
    | Timeout
    | LimitData
    | RestartZk
    | CutBrokerZk
    | SetProperty
    | Switch
    | Rollback,
    Field(discriminator="action"),
]


class Migration(Strict):
    """What a migration scenario expects the checker's proof to say."""

    expect: Literal["clean", "replay", "overlap"] = Field(
        default="clean", description="the expected verdict (a negative control expects replay or overlap)"
    )


def _fault_end(
    a: KillZkLeader | PauseZkLeader | KillCoordinator | PauseCoordinator | CutCoordinator,
) -> float:
    """When a ZooKeeper-leader or coordinator fault ends (its restart, resume or heal)."""
    return a.at + (a.downtime if isinstance(a, KillZkLeader | KillCoordinator) else a.duration)


def _check_zk_leader_faults(timeline: list[Action]) -> None:
    """One ZooKeeper server out at a time: with 3 servers a second one down loses the quorum, which is
    another experiment than a leader failure. ValueError naming both actions."""
    faults = sorted((a for a in timeline if isinstance(a, KillZkLeader | PauseZkLeader)), key=lambda a: a.at)
    for a, b in zip(faults, faults[1:], strict=False):
        end = _fault_end(a)
        if b.at < end:
            raise ValueError(
                f"{b.action} at {b.at:g}s starts before the {a.action} at {a.at:g}s ended ({end:g}s): "
                "one ZooKeeper server may be out at a time"
            )


def _check_coordinator_faults(timeline: list[Action], brokers: int) -> None:
    """One coordinator fault at a time (its end names the broker the fault hit), and only where the
    coordinator can move (``brokers`` > 1). ValueError naming the action(s)."""
    faults = sorted(
        (a for a in timeline if isinstance(a, KillCoordinator | PauseCoordinator | CutCoordinator)),
        key=lambda a: a.at,
    )
    if faults and brokers < 2:
        raise ValueError(
            f"{faults[0].action} at {faults[0].at:g}s needs cluster.brokers > 1 (the coordinator must be "
            f"able to move; cluster.brokers = {brokers})"
        )
    for a, b in zip(faults, faults[1:], strict=False):
        end = _fault_end(a)
        if b.at < end:
            raise ValueError(
                f"{b.action} at {b.at:g}s starts before the {a.action} at {a.at:g}s ended ({end:g}s): "
                "one coordinator fault at a time"
            )


def _check_network_faults(s: Scenario) -> None:
    """The cluster faults: a ``restart_zk`` server and a ``cut_broker_zk`` broker that exist, a ZooKeeper
    restart never while another ZooKeeper fault is on (one server out at a time), one broker-ZooKeeper
    cut at a time and never during a ``cut_coordinator``, and both only with herdlab's broker (they need
    the local backend's processes and proxies). ValueError naming the action."""
    restarts = [a for a in s.timeline if isinstance(a, RestartZk)]
    for a in restarts:
        if (
            isinstance(a.server, int)
            and a.server >= s.zookeeper.servers
            and "zookeeper.servers" not in s.matrix_keys
        ):
            raise ValueError(
                f"restart_zk at {a.at:g}s: server {a.server} does not exist (zookeeper.servers = {s.zookeeper.servers})"
            )
    zk_out = sorted(
        [(a.at, a.at + a.downtime, a.action) for a in restarts]
        + [(a.at, _fault_end(a), a.action) for a in s.timeline if isinstance(a, KillZkLeader | PauseZkLeader)]
    )
    cuts = [a for a in s.timeline if isinstance(a, CutBrokerZk)]
    for a in cuts:
        if a.broker >= s.cluster.brokers and "cluster.brokers" not in s.matrix_keys:
            raise ValueError(
                f"cut_broker_zk at {a.at:g}s: broker {a.broker} does not exist (cluster.brokers = {s.cluster.brokers})"
            )
    broker_cuts = sorted(
        [(a.at, a.at + a.duration, a.action) for a in cuts]
        + [(a.at, a.at + a.duration, a.action) for a in s.timeline if isinstance(a, CutCoordinator)]
    )
    for faults, what in (
        (zk_out, "one ZooKeeper server may be out at a time"),
        (broker_cuts, "one broker cut at a time"),
    ):
        for (a_at, a_end, a_name), (b_at, _, b_name) in zip(faults, faults[1:], strict=False):
            ours = {a_name, b_name} & {"restart_zk", "cut_broker_zk"}  # the older pairs are checked above
            if b_at < a_end and ours:
                raise ValueError(
                    f"{b_name} at {b_at:g}s starts before the {a_name} at {a_at:g}s ended ({a_end:g}s): {what}"
                )
    if (restarts or cuts) and s.cluster.broker != "herdlab":
        raise ValueError(
            f"timeline actions restart_zk and cut_broker_zk need cluster.broker = 'herdlab' (not {s.cluster.broker!r})"
        )


class Scenario(Strict):
    """One scenario file."""

    name: str = Field(pattern=r"^[A-Za-z0-9._-]{1,100}$")
    description: str = ""
    implementations: list[Literal["legacy_zk", "coordinator", "consumer"]] = Field(
        default=list(DEFAULT_IMPLEMENTATIONS),
        min_length=1,
        description="the designs compared, one column each: legacy_zk (ZooKeeper-era), coordinator (the "
        "classic group protocol), consumer (KIP-848's consumer group protocol: not run unless named)",
    )
    repetitions: int = Field(default=1, ge=1, le=1000)
    seed: int = 1
    topic: Topic = Topic()
    workload: Workload = Workload()
    group: Group = Group()
    zookeeper: ZooKeeper = ZooKeeper()
    cluster: ClusterSettings = ClusterSettings()
    timeline: list[Action] = Field(default_factory=list)
    settle_window: Duration = Field(default=3.0, description="no ownership change for this long = settled")
    timeline_jitter: Duration = Field(
        default=0.0,
        description="each timeline entry of a repetition starts up to this much later (seeded by the scenario's "
        "seed and the repetition, the same for every implementation and case): a trigger then meets the "
        "members' periodic work (heartbeats, polls) at a random phase, not the one the spacing fixes",
    )
    stable_timeout: Duration = Field(default=120.0, description="give up if the group never becomes stable")
    drain: Duration = Field(default=10.0, description="after the timeline: time to process what was produced")
    split_brain_gap: Duration | None = Field(
        default=None,
        gt=0,
        description="the longest silence inside a member's processing interval of a partition (split "
        "brain); unset = derived per implementation from the workload's rate and the members' fetch "
        "wait and poll window (harness.scenario.processing)",
    )
    matrix: dict[str, list[int | float | bool | str | list[int | float | bool | str]]] = Field(
        default_factory=dict,
        description="dotted key -> values; the run covers every combination. A key of several dotted keys "
        'joined by commas ("group.coordinator.client,group.assignor") is one axis whose values are lists, '
        "one value per key: only the combinations listed",
    )
    migration: Migration = Migration()
    nemesis: list[RandomNemesis] = Field(
        default_factory=list[RandomNemesis],
        description="seeded random fault schedules, drawn into the timeline before the run",
    )

    @property
    def matrix_keys(self) -> list[str]:
        """Every dotted key the matrix varies (a joint axis's keys one by one)."""
        return [k.strip() for key in self.matrix for k in key.split(",")]

    @model_validator(mode="after")
    def _check(self) -> Scenario:
        if len(set(self.implementations)) != len(self.implementations):
            raise ValueError("implementations lists an implementation twice")
        for key, values in self.matrix.items():
            if not values:
                raise ValueError(f"matrix.{key} is an empty list")
            width = len(key.split(","))
            for v in values:
                joint = isinstance(v, list)
                if (width > 1) != joint or (isinstance(v, list) and len(v) != width):
                    raise ValueError(
                        f"matrix.{key}: {v!r} is not "
                        + (f"a list of {width} values, one per key" if width > 1 else "a single value")
                    )
        _check_zk_leader_faults(self.timeline)
        ats = sorted({a.at for a in self.timeline})
        gap = min((b - a for a, b in zip(ats, ats[1:], strict=False)), default=None)
        if self.timeline_jitter and gap is not None and self.timeline_jitter >= gap:
            raise ValueError(
                f"timeline_jitter ({self.timeline_jitter:g}s) must be shorter than the shortest time between two "
                f"timeline entries ({gap:g}s), or the entries could swap"
            )
        # a matrix over cluster.brokers is checked per case (expand validates each case again)
        brokers = 2 if "cluster.brokers" in self.matrix_keys else self.cluster.brokers
        _check_coordinator_faults(self.timeline, brokers)
        self._check_broker()
        if "legacy_zk" in self.implementations:
            self._check_legacy_client()
        if "consumer" in self.implementations:
            self.group.consumer.check_properties()
        _check_network_faults(self)
        self._check_partition_discovery()
        migrations = [a for a in self.timeline if a.action in MIGRATION_ACTIONS]
        protocol = [a for a in migrations if is_protocol_migration(a)]
        if protocol and len(protocol) != len(migrations):
            raise ValueError(
                "a timeline migrates either a legacy_zk group (set_property, switch, rollback to legacy_zk) or "
                'a classic group to the consumer protocol (switch to = "consumer", rollback to = "coordinator"), '
                "not both"
            )
        if protocol and "consumer" not in self.implementations:
            self.group.consumer.check_properties()  # the members a switch to the consumer protocol starts
        if protocol and self.implementations != ["coordinator"]:
            raise ValueError(
                'timeline actions switch to = "consumer" / rollback to = "coordinator" migrate a coordinator '
                'group between the classic and the consumer protocol: they need implementations = ["coordinator"]'
            )
        if migrations and not protocol and self.implementations != ["legacy_zk"]:
            names = sorted({a.action for a in migrations})
            raise ValueError(
                f"timeline actions {', '.join(names)} migrate a legacy_zk group: they need "
                'implementations = ["legacy_zk"]'
            )
        return self

    def _check_partition_discovery(self) -> None:
        """Coordinator members notice added partitions only by a periodic metadata refresh: an
        ``add_partitions`` whose window (to the next step, or ``stable_timeout`` after the last) is not
        longer than the members' refresh interval would have no effect, and the new partitions' records
        would stay unconsumed. A one-line error naming the key, not a run that fails at its drain."""
        if "coordinator" not in self.implementations:
            return

        c = self.group.coordinator
        refresh_s = metadata_refresh_ms(c.member_properties(self.group.assignor), c.client) / 1000
        steps = sorted(self.timeline, key=lambda a: a.at)
        for i, a in enumerate(steps):
            if a.action != "add_partitions":
                continue
            window_s = steps[i + 1].at - a.at if i + 1 < len(steps) else self.stable_timeout
            if refresh_s >= window_s:
                raise ValueError(
                    f"timeline add_partitions at {a.at:g}s: coordinator members refresh metadata every "
                    f"{refresh_s:g} s (group.coordinator.metadata_max_age_ms), not within its {window_s:g} s "
                    "window, so they would not see the new partitions; set it lower (partition-growth: 5000)"
                )

    def _check_legacy_client(self) -> None:
        """The original 0.8.2.2 consumer (``group.legacy_zk.client = "kafka-0.8.2.2"``) needs a broker that
        still serves 0.8 clients (FetchRequest v0: Apache Kafka 3.9, not herdlab's broker) and has none of
        herdlab's mitigations nor its Kafka offset storage (this member commits to ZooKeeper)."""
        c = self.group.legacy_zk
        if c.client == "python":
            return
        if self.cluster.zookeeper_tap is False:
            raise ValueError(
                f"group.legacy_zk.client = {c.client!r} needs cluster.zookeeper_tap: the original reports no "
                "ZooKeeper request of its own, so its herd is counted on the wire (leave the key unset or true)"
            )
        version = self.cluster.kafka_version
        if self.cluster.broker != "apache-kafka" or not (version == "3.9" or version.startswith("3.9.")):
            shown = f"{self.cluster.broker!r}" + (
                f" {version}" if self.cluster.broker == "apache-kafka" else ""
            )
            raise ValueError(
                f"group.legacy_zk.client = {c.client!r} needs cluster.broker = 'apache-kafka' with kafka_version "
                f"3.9, a broker that still serves 0.8 clients (not {shown})"
            )
        herdlab_only = [
            ("takeover_delay_ms", c.takeover_delay_ms != 0),
            ("fenced_commits", c.fenced_commits),
            ("offsets_storage = 'kafka'", c.offsets_storage != "zookeeper"),
        ]
        for what, on in herdlab_only:
            if on:
                raise ValueError(
                    f"group.legacy_zk.{what} is herdlab's own: group.legacy_zk.client = {c.client!r} has "
                    "no such setting (set it back or use client = 'python')"
                )
        if self.has_migration:
            names = sorted({a.action for a in self.timeline if a.action in MIGRATION_ACTIONS})
            raise ValueError(
                f"timeline actions {', '.join(names)} migrate herdlab's legacy members: group.legacy_zk.client "
                f"= {c.client!r} runs the original, which herdlab does not migrate (use client = 'python')"
            )

    def _check_broker(self) -> None:
        """What a third-party broker cannot do here: ZooKeeper registration (legacy members read the
        brokers from ZooKeeper), herdlab's eager and sticky legacy assignors aside, one broker only, no
        broker restarts (tansu keeps its data in memory) and no coordinator faults."""
        broker = self.cluster.broker
        c = self.group.coordinator
        consumer_protocol = str(c.properties.get("group.protocol", "classic")).lower() == "consumer"
        kraft = broker == "apache-kafka" and int(self.cluster.kafka_version.split(".")[0]) >= 4
        if "consumer" in self.implementations and not (kraft or broker in ("herdlab", "external")):
            version = f" {self.cluster.kafka_version}" if broker == "apache-kafka" else ""
            raise ValueError(
                f"implementation 'consumer' (KIP-848's consumer group protocol) needs a broker that serves it: "
                f"herdlab's, 'apache-kafka' with kafka_version 4, or 'external' (not {broker!r}{version})"
            )
        if (
            "coordinator" in self.implementations
            and consumer_protocol
            and not (kraft or broker == "external")
        ):
            raise ValueError(
                f"group.protocol = 'consumer' (KIP-848) needs a broker that serves it: cluster.broker = "
                f"'apache-kafka' with kafka_version 4, or 'external' (not {broker!r} "
                f"{self.cluster.kafka_version if broker == 'apache-kafka' else ''})".replace(" )", ")")
            )
        if "legacy_zk" in self.implementations and self.group.assignor not in ("range", "roundrobin"):
            raise ValueError(
                f"group.assignor {self.group.assignor!r} is a coordinator-side assignor: legacy_zk has "
                'range and roundrobin (set implementations = ["coordinator"])'
            )
        if broker == "herdlab":
            return
        zk_broker = broker == "apache-kafka" and int(self.cluster.kafka_version.split(".")[0]) < 4
        if "legacy_zk" in self.implementations and not zk_broker:
            raise ValueError(
                f"cluster.broker = {broker!r} serves only the coordinator implementation: legacy_zk members "
                "find brokers in ZooKeeper, which herdlab's broker and Apache Kafka 3.9 (ZooKeeper mode) "
                'register in (set implementations = ["coordinator"])'
            )
        if self.cluster.brokers != 1:
            raise ValueError(f"cluster.brokers > 1 needs cluster.broker = 'herdlab' (not {broker!r})")
        kept = ("restart_broker",) if broker == "apache-kafka" else ()  # Apache Kafka keeps its data on disk
        faults = ("restart_broker", *COORDINATOR_FAULTS)
        bad = sorted({a.action for a in self.timeline if a.action in faults and a.action not in kept})
        if bad:
            raise ValueError(
                f"timeline actions {', '.join(bad)} need cluster.broker = 'herdlab' (not {broker!r})"
            )
        # a member reaches a third-party broker at the address the broker advertises (the tap), not
        # through its own proxy: a broker-side network fault would not reach it
        cut = sorted(
            {a.action for a in self.timeline if isinstance(a, Cut | ToxicAction) and a.target == "broker"}
        )
        if cut:
            raise ValueError(
                f"timeline actions {', '.join(cut)} with target = 'broker' need cluster.broker = 'herdlab' "
                f"(not {broker!r}): members reach it at the address it advertises, not through their proxies"
            )

    @property
    def zookeeper_tapped(self) -> bool:
        """Whether legacy members reach ZooKeeper through the ZooKeeper tap: ``cluster.zookeeper_tap`` when
        set, else whether they run Kafka 0.8.2.2's own consumer."""
        tap = self.cluster.zookeeper_tap
        return self.group.legacy_zk.client != "python" if tap is None else tap

    @property
    def has_migration(self) -> bool:
        """Whether the timeline has a migration action (set_property, switch, rollback)."""
        return any(a.action in MIGRATION_ACTIONS for a in self.timeline)

    @property
    def has_protocol_migration(self) -> bool:
        """Whether the timeline migrates a coordinator group between the classic and the consumer protocol
        (:func:`is_protocol_migration`): its broker then gets ``[group.consumer]``'s broker settings too."""
        return any(is_protocol_migration(a) for a in self.timeline)
