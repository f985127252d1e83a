# pyright: strict
"""Per-member state of a classic group (Kafka ``MemberMetadata``)."""

from __future__ import annotations

from typing import Any

__all__ = ["Member"]


class Member:
    """One member of a group.

    Parked requests: ``join_token`` / ``sync_token`` hold the shell's token while ``awaiting_join`` /
    ``awaiting_sync`` is true (tokens themselves may be any value, ``None`` included, hence the flags).

    Liveness: ``heartbeat_deadline_ms`` is the deadline of the member's current ``("heartbeat", group, member)``
    timer; a firing earlier than that is stale and ignored. ``is_new`` is true from the member's first JoinGroup
    until its first join phase completes.
    """

    __slots__ = (
        "member_id",
        "group_instance_id",
        "client_id",
        "client_host",
        "rebalance_timeout_ms",
        "session_timeout_ms",
        "protocol_type",
        "protocols",
        "assignment",
        "awaiting_join",
        "join_token",
        "awaiting_sync",
        "sync_token",
        "is_new",
        "heartbeat_deadline_ms",
        "heartbeat_key",
    )

    def __init__(
        self,
        group_id: str,
        member_id: str,
        group_instance_id: str | None,
        client_id: str,
        client_host: str,
        rebalance_timeout_ms: int,
        session_timeout_ms: int,
        protocol_type: str,
        protocols: list[tuple[str, bytes]],
        assignment: bytes = b"",
    ) -> None:
        self.member_id = member_id
        self.group_instance_id = group_instance_id
        self.client_id = client_id
        self.client_host = client_host
        self.rebalance_timeout_ms = rebalance_timeout_ms
        self.session_timeout_ms = session_timeout_ms
        self.protocol_type = protocol_type
        self.protocols = protocols
        self.assignment = assignment
        self.awaiting_join = False
        self.join_token: Any = None
        self.awaiting_sync = False
        self.sync_token: Any = None
        self.is_new = False
        self.heartbeat_deadline_ms = -1
        self.heartbeat_key: tuple[str, str, str] = ("heartbeat", group_id, member_id)

    def rename(self, group_id: str, member_id: str) -> None:
        """Give the member a new id (static-member replacement); the heartbeat key follows."""
        self.member_id = member_id
        self.heartbeat_key = ("heartbeat", group_id, member_id)

    @property
    def is_static(self) -> bool:
        return self.group_instance_id is not None

    def has_satisfied_heartbeat(self) -> bool:
        """Whether an expiring session timer leaves this member alone (Kafka ``hasSatisfiedHeartbeat``).

        A new member never counts as satisfied: its own ``heartbeatSatisfied`` flag, which Kafka raises and lowers
        again inside every reschedule, is always false when a timer fires. Any other member with a parked
        JoinGroup or SyncGroup is satisfied (it is waiting on the coordinator, not the other way round).
        """
        if self.is_new:
            return False
        return self.awaiting_join or self.awaiting_sync

    def protocol_names(self) -> dict[str, None]:
        """The distinct protocol names, in preference order (a name listed twice appears once)."""
        return dict.fromkeys(name for name, _ in self.protocols)

    def metadata(self, protocol: str) -> bytes:
        """Subscription metadata for ``protocol`` (its first entry, as Kafka's ``MemberMetadata.metadata``
        finds it); ``KeyError`` if the member does not support it."""
        for name, data in self.protocols:
            if name == protocol:
                return data
        raise KeyError(protocol)

    def matches(self, protocols: list[tuple[str, bytes]]) -> bool:
        """Same protocols, same order, same bytes (Kafka ``MemberMetadata.matches``)."""
        return self.protocols == protocols

    def vote(self, candidates: set[str] | dict[str, int]) -> str:
        """The first protocol in this member's preference order that is among ``candidates``."""
        for name, _ in self.protocols:
            if name in candidates:
                return name
        raise ValueError(f"member {self.member_id} supports none of {sorted(candidates)}")

    def __repr__(self) -> str:
        return (
            f"Member(id={self.member_id!r}, instance={self.group_instance_id!r}, client={self.client_id!r}, "
            f"session={self.session_timeout_ms}, rebalance={self.rebalance_timeout_ms}, "
            f"protocols={[p for p, _ in self.protocols]})"
        )
