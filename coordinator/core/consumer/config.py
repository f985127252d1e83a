# pyright: strict
"""Broker settings of consumer groups (Kafka 4's ``GroupCoordinatorConfig``, the ``group.consumer.*`` keys)."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass

__all__ = ["ASSIGNOR_NAMES", "MIGRATION_POLICIES", "ConsumerGroupConfig"]

#: The server-side assignors herdlab has (Kafka's ``UniformAssignor`` and ``RangeAssignor`` names).
ASSIGNOR_NAMES = ("uniform", "range")

#: ``group.consumer.migration.policy`` values (Kafka ``ConsumerGroupMigrationPolicy``): whether a non-empty classic
#: group is converted when a consumer-protocol member joins (upgrade) and a consumer group whose last
#: consumer-protocol member leaves is converted back while classic members remain (downgrade).
MIGRATION_POLICIES = ("disabled", "upgrade", "downgrade", "bidirectional")

_PROPERTY_NAMES = {
    "group.consumer.heartbeat.interval.ms": "heartbeat_interval_ms",
    "group.consumer.min.heartbeat.interval.ms": "min_heartbeat_interval_ms",
    "group.consumer.max.heartbeat.interval.ms": "max_heartbeat_interval_ms",
    "group.consumer.session.timeout.ms": "session_timeout_ms",
    "group.consumer.min.session.timeout.ms": "min_session_timeout_ms",
    "group.consumer.max.session.timeout.ms": "max_session_timeout_ms",
    "group.consumer.max.size": "max_size",
}


@dataclass(slots=True, frozen=True)
class ConsumerGroupConfig:
    """Consumer-group settings; defaults and checks are Kafka 4's (``GroupCoordinatorConfig``).

    * ``heartbeat_interval_ms``: ``group.consumer.heartbeat.interval.ms`` (5000), sent in every heartbeat answer;
      within ``[min_heartbeat_interval_ms, max_heartbeat_interval_ms]`` (5000, 15000) and below the session timeout.
    * ``session_timeout_ms``: ``group.consumer.session.timeout.ms`` (45000), how long a member lives without a
      heartbeat; within ``[min_session_timeout_ms, max_session_timeout_ms]`` (45000, 60000).
    * ``max_size``: ``group.consumer.max.size`` (>= 1, default unbounded); a new member beyond it gets
      GROUP_MAX_SIZE_REACHED.
    * ``assignors``: ``group.consumer.assignors`` by name, a non-empty subset of :data:`ASSIGNOR_NAMES`; the
      first is the default, a member may ask for any of them (``server_assignor``), others get UNSUPPORTED_ASSIGNOR.
    * ``offset_metadata_max_bytes``: ``offset.metadata.max.bytes``, for a machine that makes its own offsets.
    * ``migration_policy``: ``group.consumer.migration.policy``, one of :data:`MIGRATION_POLICIES` (lower case;
      Kafka 4's default ``bidirectional``); read by the facade holding both group types
      (:mod:`coordinator.core.groups`).

    ``ValueError`` for values Kafka's ``require`` checks refuse.
    """

    heartbeat_interval_ms: int = 5000
    min_heartbeat_interval_ms: int = 5000
    max_heartbeat_interval_ms: int = 15000
    session_timeout_ms: int = 45000
    min_session_timeout_ms: int = 45000
    max_session_timeout_ms: int = 60000
    max_size: int = 2**31 - 1
    assignors: tuple[str, ...] = ASSIGNOR_NAMES
    offset_metadata_max_bytes: int = 4096
    migration_policy: str = "bidirectional"

    def __post_init__(self) -> None:
        for name in (
            "heartbeat_interval_ms",
            "min_heartbeat_interval_ms",
            "max_heartbeat_interval_ms",
            "session_timeout_ms",
            "min_session_timeout_ms",
            "max_session_timeout_ms",
            "max_size",
        ):
            if getattr(self, name) < 1:
                raise ValueError(f"{name} must be >= 1")
        if self.max_heartbeat_interval_ms < self.min_heartbeat_interval_ms:
            raise ValueError("group.consumer.max.heartbeat.interval.ms must be >= the min")
        if not self.min_heartbeat_interval_ms <= self.heartbeat_interval_ms <= self.max_heartbeat_interval_ms:
            raise ValueError("group.consumer.heartbeat.interval.ms must lie within its min and max")
        if self.max_session_timeout_ms < self.min_session_timeout_ms:
            raise ValueError("group.consumer.max.session.timeout.ms must be >= the min")
        if not self.min_session_timeout_ms <= self.session_timeout_ms <= self.max_session_timeout_ms:
            raise ValueError("group.consumer.session.timeout.ms must lie within its min and max")
        if self.heartbeat_interval_ms >= self.session_timeout_ms:
            raise ValueError(
                "group.consumer.heartbeat.interval.ms must be below group.consumer.session.timeout.ms"
            )
        if self.migration_policy not in MIGRATION_POLICIES:
            raise ValueError(
                f"group.consumer.migration.policy must be one of {', '.join(MIGRATION_POLICIES)}, "
                f"not {self.migration_policy!r}"
            )
        if not self.assignors:
            raise ValueError("group.consumer.assignors must name at least one assignor")
        for name in self.assignors:
            if name not in ASSIGNOR_NAMES:
                raise ValueError(
                    f"unknown server-side assignor {name!r} (known: {', '.join(ASSIGNOR_NAMES)})"
                )

    @property
    def default_assignor(self) -> str:
        return self.assignors[0]

    @property
    def upgrade_enabled(self) -> bool:
        """Kafka ``ConsumerGroupMigrationPolicy.isUpgradeEnabled``."""
        return self.migration_policy in ("upgrade", "bidirectional")

    @property
    def downgrade_enabled(self) -> bool:
        """Kafka ``ConsumerGroupMigrationPolicy.isDowngradeEnabled``."""
        return self.migration_policy in ("downgrade", "bidirectional")

    @classmethod
    def from_properties(cls, props: Mapping[str, object]) -> ConsumerGroupConfig:
        """Build from Kafka property names (``group.consumer.migration.policy`` case-insensitively, as Kafka's
        validator); ``group.consumer.assignors`` is a comma-separated list of names (or
        of Kafka's class names, whose simple name ``UniformAssignor`` / ``RangeAssignor`` is mapped); unknown keys
        are ignored."""
        kwargs: dict[str, object] = {}
        for key, value in props.items():
            if key in _PROPERTY_NAMES:
                kwargs[_PROPERTY_NAMES[key]] = int(str(value))
            elif key == "group.consumer.migration.policy":
                kwargs["migration_policy"] = str(value).strip().lower()
            elif key == "group.consumer.assignors":
                kwargs["assignors"] = tuple(_assignor_name(v) for v in str(value).split(",") if v.strip())
        return cls(**kwargs)  # pyright: ignore[reportArgumentType]


def _assignor_name(text: str) -> str:
    simple = text.strip().rsplit(".", 1)[-1]
    return {"UniformAssignor": "uniform", "RangeAssignor": "range"}.get(simple, simple)
