"""The scenario schema: what one scenario file may say, with types, bounds and defaults.

A scenario names the workload, the group settings, the membership timeline and the faults once; the
harness runs it against each implementation (``legacy_zk``, ``coordinator``) with repetitions.
Every model forbids unknown keys, so a typo is an error that names the key, never a silent default.

Durations are written as strings with a unit (``"500ms"``, ``"5s"``, ``"2m"``) or as a number of
seconds; they are held as float seconds. Matrix axes are lists: ``group.members = [10, 25, 50]``
or any dotted key under ``[matrix]`` (see :mod:`harness.scenario.matrix`).
"""

from __future__ import annotations

import re
from typing import Annotated, Literal

from pydantic import BaseModel, BeforeValidator, ConfigDict, Field, model_validator

IMPLEMENTATIONS = ("legacy_zk", "coordinator")

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


class Workload(Strict):
    """The producer: sequence-numbered records at a steady rate."""

    rate: float = Field(default=200.0, gt=0, description="records per second, all partitions together")
    record_size: int = Field(default=100, ge=16, le=1_000_000, description="bytes per record value")


class LegacySettings(Strict):
    """Settings of the ZooKeeper-era consumer, named after the 0.8 properties."""

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


class CoordinatorSettings(Strict):
    """Settings of the kafka-python members and of the broker's group coordinator."""

    session_timeout_ms: int = Field(default=6000, ge=1)
    heartbeat_interval_ms: int = Field(default=500, ge=1)
    max_poll_interval_ms: int = Field(default=30000, ge=1)
    auto_commit_interval_ms: int = Field(default=5000, ge=10)
    static_membership: bool = False
    initial_rebalance_delay_ms: int = Field(
        default=3000, ge=0, description="broker: group.initial.rebalance.delay.ms"
    )
    min_session_timeout_ms: int = Field(
        default=6000, ge=1, description="broker: group.min.session.timeout.ms"
    )

    @model_validator(mode="after")
    def _heartbeat_below_session(self) -> CoordinatorSettings:
        if self.heartbeat_interval_ms >= self.session_timeout_ms:
            raise ValueError("group.coordinator.heartbeat_interval_ms must be below session_timeout_ms")
        return self


class Group(Strict):
    """The consumer group: size, assignor and per-implementation settings."""

    id: str = Field(default="herd-group", pattern=r"^[A-Za-z0-9._-]{1,200}$")
    members: Annotated[int | list[int], BeforeValidator(_members)] = Field(
        default=5, description="members at the start; a list is a matrix axis"
    )
    assignor: Literal["range", "roundrobin"] = "range"
    legacy_zk: LegacySettings = LegacySettings()
    coordinator: CoordinatorSettings = CoordinatorSettings()


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


Action = Annotated[
    Join | Leave | Crash | Pause | Cut | Expire | RollingRestart | AddPartitions | RestartBroker,
    Field(discriminator="action"),
]


class Scenario(Strict):
    """One scenario file."""

    name: str = Field(pattern=r"^[A-Za-z0-9._-]{1,100}$")
    description: str = ""
    implementations: list[Literal["legacy_zk", "coordinator"]] = Field(
        default=list(IMPLEMENTATIONS), min_length=1
    )
    repetitions: int = Field(default=1, ge=1, le=1000)
    seed: int = 1
    topic: Topic = Topic()
    workload: Workload = Workload()
    group: Group = Group()
    timeline: list[Action] = Field(default_factory=list)
    settle_window: Duration = Field(default=3.0, description="no ownership change for this long = settled")
    stable_timeout: Duration = Field(default=120.0, description="give up if the group never becomes stable")
    drain: Duration = Field(default=10.0, description="after the timeline: time to process what was produced")
    matrix: dict[str, list[int | float | bool | str]] = Field(
        default_factory=dict, description="dotted key -> values; the run covers every combination"
    )

    @model_validator(mode="after")
    def _check(self) -> Scenario:
        if len(set(self.implementations)) != len(self.implementations):
            raise ValueError("implementations lists an implementation twice")
        for key, values in self.matrix.items():
            if not values:
                raise ValueError(f"matrix.{key} is an empty list")
        return self
