"""A malformed JoinGroup must not deny service to a group, and an internal error is loud, never a wedge.

Machine level (fake clock): a member listing a protocol name twice counts once (Kafka 3.7 counts entries and
then shuts every later member out with INCONSISTENT_GROUP_PROTOCOL, and ``selectProtocol`` throws inside the
join barrier); :meth:`GroupCoordinator.reset_group` answers what is parked and restarts the group Empty.

Shell level (in-process broker, real asyncio timers): an exception in a timer, in a request or in applying an
effect is logged with its traceback, counted, and resets the group, whose members can then join again; a group
left in PreparingRebalance without an armed join timer is detected the same way.
"""

from __future__ import annotations

import asyncio
import logging
from pathlib import Path
from typing import Any

import pytest
from kafka.protocol.consumer import HeartbeatRequest, JoinGroupRequest, SyncGroupRequest

from coordinator.config import BrokerConfig
from coordinator.core.group import (
    ErrorCode,
    GroupConfig,
    GroupMetadataRecord,
    GroupState,
    JoinGroupResponse,
    OffsetFetchRequest,
)
from coordinator.core.group.group import Group
from coordinator.core.group.machine import GroupCoordinator
from coordinator.groups.runner import GroupFailure
from coordinator.inprocess import InProcessClient
from coordinator.server import Broker
from harness.history.writer import HistoryWriter, read_events
from tests.support.group_driver import Driver, G

DUPLICATE = [("range", b"first"), ("range", b"second")]


# ====================================================================================== machine


def test_a_member_listing_a_protocol_twice_does_not_shut_out_the_next_member() -> None:
    d = Driver()
    x, tx = d.join_new(protocols=DUPLICATE, client_id="x")
    y, ty = d.join_new(protocols=[("range", b"y")], client_id="y")
    assert d.resp(ty) is None  # parked in the barrier, not INCONSISTENT_GROUP_PROTOCOL
    assert d.c.group(G).supported_protocols == {"range": 2}  # two members support "range"
    # y arrived during the first 3 s window of the initial delay: the barrier waits a second window.
    d.advance(2 * d.config.initial_rebalance_delay_ms)
    rx, ry = d.resp(tx), d.resp(ty)
    assert (rx.error, rx.generation_id, rx.protocol_name, rx.leader) == (ErrorCode.NONE, 1, "range", x)
    assert (ry.error, ry.generation_id, ry.protocol_name) == (ErrorCode.NONE, 1, "range")
    # The leader sees each member's metadata for "range"; for x its first entry, as Kafka's metadata().
    assert [(m.member_id, m.metadata) for m in rx.members] == [(x, b"first"), (y, b"y")]
    d.leave((x, None))
    assert d.c.group(G).supported_protocols == {"range": 1}


def test_a_lone_member_listing_a_protocol_twice_completes_its_join() -> None:
    d = Driver()
    _, tok = d.join_new(protocols=DUPLICATE)
    d.advance(d.config.initial_rebalance_delay_ms)
    r = d.resp(tok)
    assert (r.error, r.generation_id, r.protocol_name) == (ErrorCode.NONE, 1, "range")
    assert d.state() is GroupState.COMPLETING_REBALANCE
    assert d.c.wedged(G) is None


def test_reset_group_answers_parked_requests_and_restarts_the_group_empty() -> None:
    d = Driver()
    a, b = d.stable_group(2)  # generation 1, a leads
    assert d.commit(a, 1, [("t", 0, 7)]) == [ErrorCode.NONE]
    c, tc = d.join_new(client_id="c3")  # generation 1 -> PreparingRebalance, c parked
    ta = d.join(a)  # a rejoins: parked too
    assert d.state() is GroupState.PREPARING_REBALANCE
    persisted = len(d.log)
    d.apply(d.c.reset_group(d.now, G, "test"))
    assert d.resp(tc) == JoinGroupResponse(ErrorCode.UNKNOWN_MEMBER_ID, member_id="")
    assert d.resp(ta) == JoinGroupResponse(ErrorCode.UNKNOWN_MEMBER_ID, member_id="")
    assert [k for k in d.timers if k[1] == G] == []
    group = d.c.group(G)
    assert (group.state, group.generation_id, group.members, group.protocol_type) == (
        GroupState.EMPTY,
        2,
        {},
        "consumer",
    )
    assert d.log[persisted:] == [GroupMetadataRecord(G, 2, "consumer", None, None, d.now, ())]
    assert sorted(e["member"] for e in d.kinds("member_removed") if e["reason"] == "reset") == sorted(
        [a, b, c]
    )
    assert d.kinds("group_state")[-1] == {
        "group": G,
        "from_state": "PreparingRebalance",
        "to_state": "Empty",
        "generation": 2,
        "members": 0,
        "reason": "test",
    }
    # Offsets stay; old members learn they are gone; a new member forms generation 3.
    assert [(p.topic, p.offset) for p in d.c.offset_fetch(d.now, OffsetFetchRequest(G, None)).partitions] == [
        ("t", 7)
    ]
    assert d.hb(b, 1) == ErrorCode.UNKNOWN_MEMBER_ID
    _, tok = d.join_new()
    d.advance(d.config.initial_rebalance_delay_ms)
    assert (d.resp(tok).error, d.resp(tok).generation_id) == (ErrorCode.NONE, 3)


def test_reset_group_answers_a_parked_sync() -> None:
    d = Driver()
    a, b = d.stable_group(2)
    ta, tb = d.join(a), d.join(b)
    d.advance(0)
    gen = d.resp(ta).generation_id
    assert d.state() is GroupState.COMPLETING_REBALANCE
    ts = d.sync(b, gen)  # the follower waits for the leader
    assert d.resp(ts) is None and d.resp(tb).error == ErrorCode.NONE
    d.apply(d.c.reset_group(d.now, G, "test"))
    assert d.resp(ts).error == ErrorCode.UNKNOWN_MEMBER_ID


def test_wedged_names_a_preparing_group_without_a_join_barrier() -> None:
    d = Driver()
    d.join_new()
    assert d.c.wedged(G) is None
    d.c.group(G).join_deadline_ms = None  # what a swallowed exception in the barrier leaves behind
    assert d.c.wedged(G) == "PreparingRebalance without a join barrier"
    assert d.c.wedged("unknown") is None


# ====================================================================================== shell


def _broker(tmp_path: Path) -> Broker:
    group = GroupConfig(initial_rebalance_delay_ms=20, min_session_timeout_ms=1000)
    return Broker(
        BrokerConfig(data_dir=tmp_path / "data", group=group),
        history=HistoryWriter(tmp_path / "history.jsonl", "broker-0", role="broker"),
    )


def _join(member_id: str = "", metadata: bytes = b"m") -> JoinGroupRequest:
    return JoinGroupRequest(
        group_id=G,
        session_timeout_ms=6000,
        rebalance_timeout_ms=1000,
        member_id=member_id,
        protocol_type="consumer",
        protocols=[JoinGroupRequest.JoinGroupRequestProtocol(name="range", metadata=metadata)],
    )


async def _started(broker: Broker) -> InProcessClient:
    await broker.start()
    await asyncio.wait_for(broker.loaded.wait(), 5)
    return InProcessClient(broker)


def _failures(caplog: pytest.LogCaptureFixture) -> list[logging.LogRecord]:
    return [r for r in caplog.records if r.levelno >= logging.ERROR and "resetting" in r.getMessage()]


def test_an_exception_in_the_join_barrier_is_loud_and_the_group_recovers(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, caplog: pytest.LogCaptureFixture
) -> None:
    real = Group.select_protocol
    calls = []

    def fails_once(self: Group) -> str:
        calls.append(self.group_id)
        if len(calls) == 1:
            raise RuntimeError("boom in selectProtocol")
        return real(self)

    monkeypatch.setattr(Group, "select_protocol", fails_once)

    async def scenario() -> None:
        broker = _broker(tmp_path)
        client = await _started(broker)
        try:
            first = await asyncio.wait_for(client.acall(_join(), 3), 5)  # the barrier's timer raises
            assert (first.error_code, first.member_id) == (ErrorCode.UNKNOWN_MEMBER_ID, "")
            assert broker.rejected["group_failure"] == 1
            assert broker.machine.group(G).state is GroupState.EMPTY
            # Generation 1 was taken by the failed completion, 2 by the reset: the next join forms 3.
            again = await asyncio.wait_for(client.acall(_join(), 3), 5)
            assert (again.error_code, again.generation_id, again.leader) == (0, 3, again.member_id)
        finally:
            await broker.stop()

    with caplog.at_level(logging.ERROR, logger="coordinator"):
        asyncio.run(scenario())
    [record] = _failures(caplog)
    assert record.exc_info is not None and "boom in selectProtocol" in str(record.exc_info[1])
    states = [e for e in read_events(tmp_path / "history.jsonl") if e["kind"] == "group_state"]
    assert [(e["from_state"], e["to_state"], e["generation"]) for e in states if "reason" in e] == [
        ("PreparingRebalance", "Empty", 2)
    ]


def test_a_group_left_preparing_without_a_timer_is_detected_and_reset(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, caplog: pytest.LogCaptureFixture
) -> None:
    def loses_the_barrier(self: GroupCoordinator, group: Group, now_ms: int, out: list[Any]) -> None:
        group.join_deadline_ms = None  # a bug that neither completes nor re-arms the barrier

    monkeypatch.setattr(GroupCoordinator, "_on_join_timer", loses_the_barrier)

    async def scenario() -> None:
        broker = _broker(tmp_path)
        client = await _started(broker)
        try:
            r = await asyncio.wait_for(client.acall(_join(), 3), 5)
            assert r.error_code == ErrorCode.UNKNOWN_MEMBER_ID
            assert broker.machine.group(G).state is GroupState.EMPTY
            assert broker.groups.timer_count == 0
        finally:
            await broker.stop()

    with caplog.at_level(logging.ERROR, logger="coordinator"):
        asyncio.run(scenario())
    [record] = _failures(caplog)
    assert "wedged" in str(record.exc_info[1])


def test_a_request_whose_machine_call_raises_gets_unknown_server_error(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, caplog: pytest.LogCaptureFixture
) -> None:
    async def scenario() -> None:
        broker = _broker(tmp_path)
        client = await _started(broker)
        try:
            r = await asyncio.wait_for(client.acall(_join(), 3), 5)
            member, generation = r.member_id, r.generation_id

            def raises(*_a: Any) -> Any:
                raise KeyError("broken bookkeeping")

            monkeypatch.setattr(broker.machine, "heartbeat", raises)
            hb = HeartbeatRequest(group_id=G, generation_id=generation, member_id=member)
            assert client.call(hb, 3).error_code == ErrorCode.UNKNOWN_SERVER_ERROR
            assert broker.machine.group(G).members == {}  # reset: the member must join again
        finally:
            await broker.stop()

    with caplog.at_level(logging.ERROR, logger="coordinator"):
        asyncio.run(scenario())
    assert len(_failures(caplog)) == 1


def test_a_failed_group_write_answers_every_waiting_sync_and_resets(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, caplog: pytest.LogCaptureFixture
) -> None:
    async def scenario() -> None:
        broker = _broker(tmp_path)
        client_a, client_b = await _started(broker), InProcessClient(broker)
        try:
            ja, jb = client_a.acall(_join(metadata=b"a"), 3), client_b.acall(_join(metadata=b"b"), 3)
            ra, rb = await asyncio.wait_for(asyncio.gather(ja, jb), 5)
            leader, follower = (ra, rb) if ra.leader == ra.member_id else (rb, ra)
            gen = ra.generation_id
            follower_req = SyncGroupRequest(
                group_id=G, generation_id=gen, member_id=follower.member_id, assignments=[]
            )
            sent = client_b.send(follower_req, 3)
            assert sent is not None
            follower_cid, follower_sync = sent
            assert isinstance(follower_sync, asyncio.Future) and not follower_sync.done()  # parked

            def disk_full(_records: Any) -> None:
                raise OSError(28, "No space left on device")

            assert broker.group_log is not None
            monkeypatch.setattr(broker.group_log, "append", disk_full)
            assignments = [
                SyncGroupRequest.SyncGroupRequestAssignment(member_id=m.member_id, assignment=b"x")
                for m in (leader, follower)
            ]
            leader_sync = SyncGroupRequest(
                group_id=G, generation_id=gen, member_id=leader.member_id, assignments=assignments
            )
            assert client_a.call(leader_sync, 3).error_code == ErrorCode.UNKNOWN_SERVER_ERROR
            # The follower's answer was due after the failed write: it fails, which the server's
            # connection answers UNKNOWN_SERVER_ERROR.
            with pytest.raises(GroupFailure):
                await asyncio.wait_for(follower_sync, 5)
            assert broker.machine.group(G).state is GroupState.EMPTY
        finally:
            await broker.stop()

    with caplog.at_level(logging.ERROR, logger="coordinator"):
        asyncio.run(scenario())
    assert "No space left" in str(_failures(caplog)[0].exc_info[1])
