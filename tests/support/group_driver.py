"""A fake-clock shell for the pure GroupCoordinator, used by the ``test_group_*`` modules.

:class:`Driver` applies effects exactly as a real shell must: Respond (each token answered exactly once), timers
in a dict keyed like the machine's keys, Persist records appended to a list (and round-tripped through the JSON
encoding), Emit events collected. ``advance(ms)`` moves the clock and fires due timers in deadline order.
"""

from __future__ import annotations

import itertools
from typing import Any

from coordinator.core.group import (
    CancelTimer,
    Effect,
    Emit,
    ErrorCode,
    GroupConfig,
    GroupCoordinator,
    GroupState,
    HeartbeatRequest,
    JoinGroupRequest,
    JoinGroupResponse,
    LeaveGroupRequest,
    OffsetCommitPartition,
    OffsetCommitRequest,
    Persist,
    Record,
    Respond,
    SetTimer,
    SyncGroupRequest,
    decode_record,
    encode_record,
)

G = "g1"
PROTOCOLS: list[tuple[str, bytes]] = [("range", b"R"), ("roundrobin", b"RR")]


class Driver:
    """Drives one coordinator with a fake clock starting at ``t=0``."""

    def __init__(self, config: GroupConfig | None = None, *, emit_events: bool = True) -> None:
        self.now = 0
        self._uuids = itertools.count(1)
        self._tokens = itertools.count(1)
        self.config = config or GroupConfig()
        self.c = GroupCoordinator(
            self.config, new_uuid=lambda: f"u{next(self._uuids)}", emit_events=emit_events
        )
        self.timers: dict[tuple, int] = {}
        self.responses: dict[Any, Any] = {}
        self.log: list[Record] = []
        self.events: list[Emit] = []

    # ------------------------------------------------------------------ effects

    def apply(self, effects: list[Effect]) -> list[Effect]:
        for e in effects:
            if isinstance(e, Respond):
                assert e.token not in self.responses, f"token {e.token} answered twice"
                self.responses[e.token] = e.response
            elif isinstance(e, SetTimer):
                assert e.deadline_ms >= self.now
                self.timers[e.key] = e.deadline_ms
            elif isinstance(e, CancelTimer):
                self.timers.pop(e.key, None)
            elif isinstance(e, Persist):
                assert decode_record(encode_record(e.record)) == e.record
                self.log.append(e.record)
            elif isinstance(e, Emit):
                assert "group" in e.fields
                self.events.append(e)
            else:  # pragma: no cover
                raise AssertionError(f"unknown effect {e!r}")
        return effects

    def token(self) -> int:
        return next(self._tokens)

    def resp(self, token: Any) -> Any:
        """The response for ``token`` (``None`` if still parked)."""
        return self.responses.get(token)

    def advance(self, ms: int) -> None:
        """Move the clock by ``ms``, firing due timers in deadline order at their deadlines."""
        target = self.now + ms
        while True:
            due = [(d, repr(k), k) for k, d in self.timers.items() if d <= target]
            if not due:
                break
            deadline, _, key = min(due)
            self.now = deadline
            del self.timers[key]
            self.apply(self.c.on_timer(self.now, key))
        self.now = target

    def advance_to(self, t: int) -> None:
        self.advance(t - self.now)

    # ------------------------------------------------------------------ requests

    def join(
        self,
        member_id: str = "",
        *,
        group: str = G,
        session: int = 10_000,
        rebalance: int = 60_000,
        version: int = 7,
        instance: str | None = None,
        protocols: list[tuple[str, bytes]] | None = None,
        protocol_type: str = "consumer",
        client_id: str = "c",
    ) -> int:
        tok = self.token()
        req = JoinGroupRequest(
            group_id=group,
            member_id=member_id,
            session_timeout_ms=session,
            rebalance_timeout_ms=rebalance,
            protocol_type=protocol_type,
            protocols=list(PROTOCOLS if protocols is None else protocols),
            api_version=version,
            group_instance_id=instance,
            client_id=client_id,
            client_host="/127.0.0.1",
        )
        self.apply(self.c.join_group(self.now, tok, req))
        return tok

    def join_new(self, **kw: Any) -> tuple[str, int]:
        """A dynamic member's full first join (v4+: MEMBER_ID_REQUIRED, then the rejoin). Returns (member id,
        token of the parked rejoin)."""
        t1 = self.join(**kw)
        r1 = self.resp(t1)
        assert r1.error == ErrorCode.MEMBER_ID_REQUIRED, r1
        t2 = self.join(r1.member_id, **kw)
        return r1.member_id, t2

    def sync(
        self,
        member_id: str,
        generation: int,
        assignments: dict[str, bytes] | None = None,
        *,
        group: str = G,
        instance: str | None = None,
        protocol_type: str | None = None,
        protocol_name: str | None = None,
    ) -> int:
        tok = self.token()
        req = SyncGroupRequest(
            group_id=group,
            generation_id=generation,
            member_id=member_id,
            assignments=list((assignments or {}).items()),
            group_instance_id=instance,
            protocol_type=protocol_type,
            protocol_name=protocol_name,
        )
        self.apply(self.c.sync_group(self.now, tok, req))
        return tok

    def hb(
        self, member_id: str, generation: int, *, group: str = G, instance: str | None = None
    ) -> ErrorCode:
        tok = self.token()
        self.apply(self.c.heartbeat(self.now, tok, HeartbeatRequest(group, generation, member_id, instance)))
        return self.resp(tok).error

    def leave(self, *members: tuple[str, str | None], group: str = G) -> Any:
        tok = self.token()
        self.apply(self.c.leave_group(self.now, tok, LeaveGroupRequest(group, list(members))))
        return self.resp(tok)

    def commit(
        self,
        member_id: str = "",
        generation: int = -1,
        offsets: list[tuple[str, int, int]] | None = None,
        *,
        group: str = G,
        instance: str | None = None,
        metadata: str = "",
    ) -> list[ErrorCode]:
        tok = self.token()
        parts = [OffsetCommitPartition(t, p, o, metadata) for t, p, o in (offsets or [("t", 0, 1)])]
        self.apply(
            self.c.offset_commit(
                self.now, tok, OffsetCommitRequest(group, parts, generation, member_id, instance)
            )
        )
        return [p.error for p in self.resp(tok).partitions]

    # ------------------------------------------------------------------ inspection

    def state(self, group: str = G) -> GroupState | None:
        g = self.c.group(group)
        return None if g is None else g.state

    def generation(self, group: str = G) -> int:
        g = self.c.group(group)
        assert g is not None
        return g.generation_id

    def members(self, group: str = G) -> list[str]:
        g = self.c.group(group)
        return [] if g is None else list(g.members)

    def kinds(self, kind: str) -> list[dict[str, Any]]:
        return [e.fields for e in self.events if e.kind == kind]

    # ------------------------------------------------------------------ scenarios

    def stable_group(self, n: int, *, group: str = G, **kw: Any) -> list[str]:
        """Form a Stable group of ``n`` dynamic members (v7 joins, initial delay, leader assigns ``b"a-<id>"``).
        Returns the member ids in join order; the first is the leader."""
        ids, tokens = [], []
        for i in range(n):
            mid, tok = self.join_new(group=group, client_id=f"c{i}", **kw)
            ids.append(mid)
            tokens.append(tok)
        self.advance(self.config.initial_rebalance_delay_ms * (n + 1))
        gen = self.generation(group)
        leader = None
        for tok in tokens:
            r: JoinGroupResponse = self.resp(tok)
            assert r is not None and r.error == ErrorCode.NONE, r
            leader = r.leader
        assert leader is not None
        follower_tokens = [self.sync(m, gen, group=group) for m in ids if m != leader]
        lt = self.sync(leader, gen, {m: f"a-{m}".encode() for m in ids}, group=group)
        assert self.resp(lt).error == ErrorCode.NONE
        assert all(self.resp(t).error == ErrorCode.NONE for t in follower_tokens)
        assert self.state(group) is GroupState.STABLE
        return ids
