"""A broker with a data directory replays its group log at start; meanwhile groups answer LOAD_IN_PROGRESS."""

from __future__ import annotations

import asyncio
import logging
from pathlib import Path

import pytest
from kafka.protocol.consumer import HeartbeatRequest, JoinGroupRequest, OffsetFetchRequest

from coordinator.config import BrokerConfig
from coordinator.core.group.records import GroupMetadataRecord, MemberRecord, OffsetCommitRecord
from coordinator.groups.log import LOG_NAME, GroupLog
from coordinator.inprocess import InProcessClient
from coordinator.server import Broker

LOAD_IN_PROGRESS = 14


def test_group_apis_answer_load_in_progress_until_the_log_is_replayed(tmp_path: Path) -> None:
    log = GroupLog(tmp_path / "groups")
    log.append([OffsetCommitRecord("g", "t", p, p * 10, -1, "", 1000) for p in range(6000)])
    log.close()

    async def scenario() -> None:
        broker = Broker(BrokerConfig(data_dir=tmp_path))
        client = InProcessClient(broker)
        broker.store.create("t", 1)
        loading = asyncio.ensure_future(broker.groups.load())
        await asyncio.sleep(0)  # the load yields to the loop between chunks of records
        assert broker.groups.loading
        join = JoinGroupRequest(
            group_id="g2", session_timeout_ms=6000, member_id="", protocol_type="consumer", protocols=[]
        )
        assert (await client.acall(join, 5)).error_code == LOAD_IN_PROGRESS
        fetch = OffsetFetchRequest(group_id="g", topics=None)
        assert client.call(fetch, 5).error_code == LOAD_IN_PROGRESS
        hb = HeartbeatRequest(group_id="g", generation_id=1, member_id="m")
        assert client.call(hb, 3).error_code == 0  # Kafka answers heartbeats blindly while loading
        assert await loading == (6000, 0)
        offsets = client.call(OffsetFetchRequest(group_id="g", topics=None), 5)
        assert offsets.error_code == 0
        got = {p.partition_index: p.committed_offset for t in offsets.topics for p in t.partitions}
        assert len(got) == 6000 and got[5999] == 59990

    asyncio.run(scenario())


def test_a_record_the_machine_rejects_is_skipped_with_its_line(
    tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    twice = MemberRecord("m-1", None, "c", "/h", 30000, 6000, b"s", b"a")
    log = GroupLog(tmp_path / "groups")
    log.append(
        [
            OffsetCommitRecord("g", "t", 0, 5, -1, "", 1000),
            GroupMetadataRecord("bad", 3, "consumer", "range", "m-1", 1000, (twice, twice)),
            GroupMetadataRecord("h", 2, "consumer", None, None, 1000, ()),
        ]
    )
    log.close()

    async def scenario() -> tuple[int, int]:
        broker = Broker(BrokerConfig(data_dir=tmp_path))
        return await broker.groups.load()

    with caplog.at_level(logging.WARNING, logger="coordinator"):
        assert asyncio.run(scenario()) == (2, 1)
    [warning] = [r.getMessage() for r in caplog.records if r.levelno == logging.WARNING]
    assert "line 2 skipped" in warning and "a member id appears twice" in warning


def test_an_unreadable_group_log_still_ends_loading_and_says_so(
    tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    (tmp_path / "groups" / LOG_NAME).mkdir(parents=True)  # reading it fails (IsADirectoryError)

    async def scenario() -> None:
        broker = Broker(BrokerConfig(data_dir=tmp_path, metrics_interval_s=0))
        await broker.start()
        try:
            await asyncio.wait_for(broker.loaded.wait(), 5)
            assert not broker.groups.loading and not broker.machine.loading
        finally:
            await broker.stop()

    with caplog.at_level(logging.ERROR, logger="coordinator"):
        asyncio.run(scenario())
    [error] = [r.getMessage() for r in caplog.records if r.levelno == logging.ERROR]
    assert error == "reading the group log failed; serving the 0 groups loaded before the error"
