# pyright: strict
"""Broker-side configuration of the group coordinator (spec 2.1)."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import SupportsIndex, SupportsInt

__all__ = ["GroupConfig", "NEW_MEMBER_JOIN_TIMEOUT_MS"]

#: Kafka's ``GroupCoordinator.NewMemberJoinTimeoutMs`` (KAFKA-7610): a member that joined but never
#: completed a join phase is expired after this long, since it cannot heartbeat yet.
NEW_MEMBER_JOIN_TIMEOUT_MS = 300_000

_PROPERTY_NAMES = {
    "group.min.session.timeout.ms": "min_session_timeout_ms",
    "group.max.session.timeout.ms": "max_session_timeout_ms",
    "group.initial.rebalance.delay.ms": "initial_rebalance_delay_ms",
    "group.max.size": "max_size",
    "offset.metadata.max.bytes": "offset_metadata_max_bytes",
}


@dataclass(slots=True, frozen=True)
class GroupConfig:
    """Coordinator settings; defaults are Kafka 3.7's.

    * ``min_session_timeout_ms`` / ``max_session_timeout_ms``: ``group.min/max.session.timeout.ms``; a JoinGroup
      whose session timeout lies outside ``[min, max]`` (both bounds valid) gets INVALID_SESSION_TIMEOUT.
    * ``initial_rebalance_delay_ms``: ``group.initial.rebalance.delay.ms``, the InitialDelayedJoin window used when
      a rebalance starts from Empty.
    * ``max_size``: ``group.max.size`` (>= 1); joins beyond it get GROUP_MAX_SIZE_REACHED.
    * ``offset_metadata_max_bytes``: ``offset.metadata.max.bytes``; longer commit metadata gets
      OFFSET_METADATA_TOO_LARGE for that partition.
    * ``new_member_join_timeout_ms``: Kafka's constant ``NewMemberJoinTimeoutMs`` (not a broker property), the
      session used for a member between its first JoinGroup and the end of its first join phase.
    """

    min_session_timeout_ms: int = 6000
    max_session_timeout_ms: int = 1_800_000
    initial_rebalance_delay_ms: int = 3000
    max_size: int = 2**31 - 1
    offset_metadata_max_bytes: int = 4096
    new_member_join_timeout_ms: int = NEW_MEMBER_JOIN_TIMEOUT_MS

    def __post_init__(self) -> None:
        if self.max_size < 1:
            raise ValueError(f"group.max.size must be >= 1, got {self.max_size}")
        if self.min_session_timeout_ms > self.max_session_timeout_ms:
            raise ValueError("group.min.session.timeout.ms must not exceed group.max.session.timeout.ms")
        if self.initial_rebalance_delay_ms < 0:
            raise ValueError("group.initial.rebalance.delay.ms must be >= 0")

    @classmethod
    def from_properties(cls, props: Mapping[str, object]) -> GroupConfig:
        """Build from Kafka property names (``group.max.size`` ...); unknown keys are ignored."""
        kwargs = {_PROPERTY_NAMES[k]: _as_int(v) for k, v in props.items() if k in _PROPERTY_NAMES}
        return cls(**kwargs)


def _as_int(value: object) -> int:
    """``int(value)`` for what ``int`` accepts (numbers, numeric text); ``TypeError`` for anything else."""
    if isinstance(value, (str, bytes, bytearray, SupportsInt, SupportsIndex)):
        return int(value)
    raise TypeError(
        f"int() argument must be a string, a bytes-like object or a real number, not {type(value).__name__!r}"
    )
