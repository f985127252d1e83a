"""A broker with a data directory replays its group log at start; meanwhile groups answer LOAD_IN_PROGRESS."""

from __future__ import annotations

import asyncio
from pathlib import Path

from kafka.protocol.consumer import HeartbeatRequest, JoinGroupRequest, OffsetFetchRequest

from coordinator.config import BrokerConfig
from coordinator.group.records import OffsetCommitRecord
from coordinator.group_log import GroupLog
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
        assert await loading == 6000
        offsets = client.call(OffsetFetchRequest(group_id="g", topics=None), 5)
        assert offsets.error_code == 0
        got = {p.partition_index: p.committed_offset for t in offsets.topics for p in t.partitions}
        assert len(got) == 6000 and got[5999] == 59990

    asyncio.run(scenario())
