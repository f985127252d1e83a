"""A broker restarted over its data directory keeps its consumer groups (members, epochs, assignments) and their
offsets beside its classic groups: the consumer machine's records go to the one group log and are replayed into it
(in process, over the real machines)."""

from __future__ import annotations

import asyncio
from pathlib import Path
from typing import Any

from kio.index import load_request_schema
from kio.schema.errors import ErrorCode as KioError

from coordinator.api_keys import ApiKey
from coordinator.config import BrokerConfig
from coordinator.server import Broker
from coordinator.wire import nested
from tests.support.kio_wire import cgh, dispatch


def _broker(data: Path, loop: asyncio.AbstractEventLoop) -> Broker:
    broker = Broker(BrokerConfig(data_dir=data))
    loop.run_until_complete(broker.groups.load())
    return broker


def _commit(
    broker: Broker,
    loop: asyncio.AbstractEventLoop,
    member: str,
    epoch: int,
    offset: int,
    group: str = "cg",
    p: int = 0,
) -> Any:
    cls: Any = load_request_schema(8, 9)
    topic_cls = nested(cls, "topics")
    part_cls = nested(topic_cls, "partitions")
    body = cls(
        group_id=group,
        generation_id_or_member_epoch=epoch,
        member_id=member,
        group_instance_id=None,
        topics=(
            topic_cls(
                name="t",
                partitions=(
                    part_cls(
                        partition_index=p,
                        committed_offset=offset,
                        committed_leader_epoch=-1,
                        committed_metadata="",
                    ),
                ),
            ),
        ),
    )
    return dispatch(broker, ApiKey.OFFSET_COMMIT, 9, body, loop)


def test_consumer_groups_epochs_and_offsets_survive_a_restart(tmp_path: Path) -> None:
    loop = asyncio.new_event_loop()
    try:
        first = _broker(tmp_path, loop)
        first.store.create("t", 2)
        joined = dispatch(
            first, 68, 1, cgh(1, "cg", "m-1", 0, topics=("t",), owned=(), rebalance_timeout_ms=30000), loop
        )
        # by hand: the first member of a new group joins at group epoch 1 and is given both partitions
        assert (joined.error_code, joined.member_epoch) == (KioError.none, 1)
        assert [tuple(tp.partitions) for tp in joined.assignment.topic_partitions] == [(0, 1)]
        assert _commit(first, loop, "m-1", 1, 42).topics[0].partitions[0].error_code == KioError.none
        # a classic group beside it (a simple consumer's commit makes an Empty one)
        assert (
            _commit(first, loop, "", -1, 7, group="classic", p=1).topics[0].partitions[0].error_code
            == KioError.none
        )
        first.groups.cancel_timers()
        assert first.group_log is not None
        first.group_log.close()

        second = _broker(tmp_path, loop)
        consumer = second.groups.consumer
        assert consumer is not None and consumer.holds("cg") and second.groups.classic.holds("classic")
        assert not second.groups.classic.holds(
            "cg"
        )  # its offsets went to the consumer machine, not a new group
        # the member is still at epoch 1 with its partitions: a steady heartbeat changes nothing
        steady = dispatch(second, 68, 1, cgh(1, "cg", "m-1", 1), loop)
        assert (steady.error_code, steady.member_epoch, steady.assignment) == (KioError.none, 1, None)
        offsets = second.machine.offsets
        assert offsets.group_offsets("cg")[("t", 0)].offset == 42
        assert offsets.group_offsets("classic")[("t", 1)].offset == 7
        # and the epoch still fences: a commit at another epoch is stale
        assert (
            _commit(second, loop, "m-1", 2, 43).topics[0].partitions[0].error_code
            == KioError.stale_member_epoch
        )
        second.groups.cancel_timers()
    finally:
        loop.close()
