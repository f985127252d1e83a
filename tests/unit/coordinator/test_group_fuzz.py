"""Seeded random operation sequences against the machine, checking invariants after every step.

Clients behave roughly like kafka-python (keep member id / generation from responses, leader assigns, static
members never leave) but also misbehave (stale generations, lost responses, silence, restarts). Invariants:

* bookkeeping is consistent (awaiting counter, static map, protocol counts, leader, pending-sync);
* every member has a way out (a session timer, or a parked request that a timer will resolve);
* PreparingRebalance always has a join timer; a pending-sync set always has a sync timer;
* at the end, after everyone goes silent, every group drains to Empty, no timer is left, and every token
  was answered (the driver also checks that no token is answered twice).
"""

from __future__ import annotations

import random
from dataclasses import dataclass

import pytest

from coordinator.core.group import ErrorCode, GroupConfig, GroupState
from tests.support.group_driver import Driver, G

S = GroupState


@dataclass
class Client:
    name: str
    instance: str | None
    version: int
    member_id: str = ""
    generation: int = -1
    join_token: int | None = None
    sync_token: int | None = None
    session: int = 8000
    rebalance: int = 60_000
    protocols: tuple = (("range", b"R"), ("roundrobin", b"RR"))


def _check_invariants(d: Driver) -> None:
    g = d.c.group(G)
    if g is None:
        return
    members = g.members
    assert g.num_awaiting_join == sum(m.awaiting_join for m in members.values())
    assert g.static_members == {m.group_instance_id: mid for mid, m in members.items() if m.is_static}
    counts: dict[str, int] = {}
    for m in members.values():
        assert m.member_id in members and members[m.member_id] is m
        for name, _ in m.protocols:
            counts[name] = counts.get(name, 0) + 1
    assert counts == g.supported_protocols
    assert (g.leader_id is None) == (not members) or g.state is S.EMPTY
    if members:
        assert g.leader_id in members
    assert not set(g.pending_members) & set(members)
    if g.state is S.EMPTY:
        assert not members
    if g.state is S.PREPARING_REBALANCE:
        assert ("join", G) in d.timers
    else:
        assert ("join", G) not in d.timers
    if g.pending_sync and g.state in (S.COMPLETING_REBALANCE, S.STABLE):
        assert ("sync", G, g.generation_id) in d.timers
    for mid, m in members.items():
        assert ("heartbeat", G, mid) in d.timers or m.awaiting_join or m.awaiting_sync, mid
        if m.awaiting_sync:
            assert g.state is S.COMPLETING_REBALANCE
    for pid in g.pending_members:
        assert ("pending", G, pid) in d.timers


def _step(d: Driver, rng: random.Random, clients: list[Client], issued: list[int]) -> None:
    c = rng.choice(clients)
    op = rng.random()
    if op < 0.25:  # (re)join
        if rng.random() < 0.1:
            c.member_id = ""  # restart / lost id
        protocols = list(c.protocols)
        if rng.random() < 0.05:
            protocols = [("roundrobin", b"RR")]
        tok = d.join(
            c.member_id,
            instance=c.instance,
            version=c.version,
            protocols=protocols,
            client_id=c.name,
            session=c.session,
            rebalance=c.rebalance,
        )
        issued.append(tok)
        c.join_token = tok
    elif op < 0.4:  # sync
        assign = {}
        g = d.c.group(G)
        if g is not None and g.leader_id == c.member_id and rng.random() < 0.9:
            assign = {m: b"x" for m in g.members}
        tok = d.sync(c.member_id, c.generation, assign, instance=c.instance)
        issued.append(tok)
        c.sync_token = tok
    elif op < 0.6:
        d.hb(c.member_id, c.generation if rng.random() < 0.9 else c.generation - 1, instance=c.instance)
    elif op < 0.65:
        if c.member_id:
            d.leave((c.member_id, c.instance))
    elif op < 0.7:
        d.leave(("", rng.choice(["s0", "s1", "nobody"])))
    elif op < 0.8:
        d.commit(
            c.member_id, c.generation, [("t", rng.randrange(3), rng.randrange(100))], instance=c.instance
        )
    elif op < 0.98:
        d.advance(rng.choice([1, 100, 1000, 3000, 5000, 9000]))
    else:  # coordinator restart: replay the log into a fresh machine
        d.apply(d.c.begin_loading())
        for rec in list(d.log):
            d.c.load(rec)
        d.apply(d.c.finish_loading(d.now))
    # clients learn from their answers
    for cl in clients:
        if cl.join_token is not None and (r := d.resp(cl.join_token)) is not None:
            cl.join_token = None
            if r.error in (ErrorCode.NONE, ErrorCode.MEMBER_ID_REQUIRED):
                cl.member_id = r.member_id
                cl.generation = r.generation_id
            elif r.error == ErrorCode.UNKNOWN_MEMBER_ID:
                cl.member_id, cl.generation = "", -1
        if cl.sync_token is not None and d.resp(cl.sync_token) is not None:
            cl.sync_token = None


@pytest.mark.parametrize("seed", range(25))
def test_random_operations_keep_invariants_and_drain(seed: int) -> None:
    rng = random.Random(seed)
    config = GroupConfig(initial_rebalance_delay_ms=rng.choice([0, 3000]), max_size=rng.choice([3, 100]))
    d = Driver(config)
    clients = [Client(f"d{i}", None, rng.choice([3, 4, 7])) for i in range(4)] + [
        Client(f"s{i}", f"s{i}", 7) for i in range(2)
    ]
    for c in clients:
        c.session = rng.choice([6000, 30_000])
        c.rebalance = rng.choice([6000, 20_000, 60_000])
    issued: list[int] = []
    for _ in range(250):
        _step(d, rng, clients, issued)
        _check_invariants(d)
    # everyone goes silent: the group must drain to Empty and every parked request must be answered
    for _ in range(10):
        d.advance(400_000)
    _check_invariants(d)
    assert d.state() in (None, S.EMPTY)
    assert d.members() == []
    assert d.timers == {}
    assert all(t in d.responses for t in issued)
