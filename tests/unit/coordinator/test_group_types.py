"""The group APIs shared by every group type go to the type holding the group (a second type, faked here, is
a module beside the classic one, not a branch in it); requests answered through the broker in process."""

from __future__ import annotations

import asyncio
from collections.abc import Callable, Iterator
from typing import Any

import pytest
from kafka.protocol.admin import DeleteGroupsRequest, DescribeGroupsRequest, ListGroupsRequest
from kafka.protocol.consumer import OffsetFetchRequest

from coordinator.config import BrokerConfig
from coordinator.core.group import api as g
from coordinator.core.group.errors import ErrorCode
from coordinator.core.group.machine import GroupCoordinator
from coordinator.groups.types import GroupTypes, Handler
from coordinator.inprocess import InProcessClient
from coordinator.server import Broker

NONE, GROUP_ID_NOT_FOUND = 0, 69


class FakeType:
    """A second group type holding the groups it is given, answering with fixed values."""

    name = "consumer"

    def __init__(self, held: set[str]) -> None:
        self.held = held
        self.deleted: list[list[str]] = []

    def handlers(self) -> dict[int, Handler]:
        return {}

    def holds(self, group_id: str) -> bool:
        return group_id in self.held

    def offset_commit(
        self, req: g.OffsetCommitRequest, convert: Callable[[g.OffsetCommitResponse], Any]
    ) -> Any:
        raise AssertionError("not asked in these tests")

    def offset_fetch(self, req: g.OffsetFetchRequest) -> g.OffsetFetchResponse:
        return g.OffsetFetchResponse(ErrorCode.NONE, [g.OffsetFetchPartition("t", 0, 77, metadata="fake")])

    def describe_groups(self, group_ids: list[str]) -> list[g.DescribedGroup]:
        return [g.DescribedGroup(gid, ErrorCode.NONE, "Stable", "consumer", "uniform") for gid in group_ids]

    def list_groups(self, states: list[str] | None) -> g.ListGroupsResponse:
        return g.ListGroupsResponse(
            ErrorCode.NONE, [g.ListedGroup(gid, "consumer", "Stable") for gid in sorted(self.held)]
        )

    def delete_groups(self, group_ids: list[str], convert: Callable[[g.DeleteGroupsResponse], Any]) -> Any:
        self.deleted.append(group_ids)
        return convert(g.DeleteGroupsResponse([g.DeletedGroup(gid, ErrorCode.NONE) for gid in group_ids]))


@pytest.fixture
def client() -> Iterator[tuple[InProcessClient, FakeType]]:
    loop = asyncio.new_event_loop()
    broker = Broker(BrokerConfig(), machine=GroupCoordinator())
    loop.run_until_complete(broker.groups.load())
    fake = FakeType({"cg-1", "cg-2"})
    broker.groups.types.types.append(fake)
    yield InProcessClient(broker), fake
    loop.close()


def test_for_group_is_the_holding_type_and_the_first_type_takes_the_rest() -> None:
    classic, fake = object(), FakeType({"cg"})
    types = GroupTypes([classic, fake])  # type: ignore[list-item]
    assert types.for_group("cg") is fake
    assert types.for_group("anything-else") is classic
    assert types.split(["a", "cg", "b"]) == [(classic, ["a", "b"]), (fake, ["cg"])]
    assert types.split([]) == []
    with pytest.raises(ValueError):
        GroupTypes([])


def test_list_groups_tags_each_group_with_its_type_and_filters_by_type(
    client: tuple[InProcessClient, FakeType],
) -> None:
    c, _fake = client
    c.broker.machine.offset_commit(  # an Empty classic group, made as a simple consumer's commit makes it
        0, None, g.OffsetCommitRequest("classic-1", [g.OffsetCommitPartition("t", 0, 1)], -1, "")
    )
    every = c.call(ListGroupsRequest(states_filter=[], types_filter=[]), 5)
    assert sorted((x.group_id, x.group_type) for x in every.groups) == [
        ("cg-1", "consumer"),
        ("cg-2", "consumer"),
        ("classic-1", "classic"),
    ]
    only = c.call(ListGroupsRequest(states_filter=[], types_filter=["Consumer"]), 5)
    assert [(x.group_id, x.group_type) for x in only.groups] == [("cg-1", "consumer"), ("cg-2", "consumer")]


def test_describe_groups_asks_each_type_for_its_groups_in_request_order(
    client: tuple[InProcessClient, FakeType],
) -> None:
    c, _fake = client
    r = c.call(
        DescribeGroupsRequest(groups=["cg-2", "unknown", "cg-1"], include_authorized_operations=False), 5
    )
    assert [(d.group_id, d.error_code, d.group_state, d.protocol_data) for d in r.groups] == [
        ("cg-2", NONE, "Stable", "uniform"),
        ("unknown", NONE, "Dead", ""),  # the classic type describes a group it does not have as Dead
        ("cg-1", NONE, "Stable", "uniform"),
    ]


def test_delete_groups_merges_the_answers_of_every_type(client: tuple[InProcessClient, FakeType]) -> None:
    c, fake = client
    r = c.call(DeleteGroupsRequest(groups_names=["unknown", "cg-1"]), 2)
    assert [(x.group_id, x.error_code) for x in r.results] == [
        ("unknown", GROUP_ID_NOT_FOUND),
        ("cg-1", NONE),
    ]
    assert fake.deleted == [["cg-1"]]


def test_offset_fetch_goes_to_the_type_holding_the_group(client: tuple[InProcessClient, FakeType]) -> None:
    c, _fake = client
    topics = [OffsetFetchRequest.OffsetFetchRequestTopic(name="t", partition_indexes=[0])]
    r = c.call(OffsetFetchRequest(group_id="cg-1", topics=topics, require_stable=False), 5)
    assert [(p.partition_index, p.committed_offset, p.metadata) for p in r.topics[0].partitions] == [
        (0, 77, "fake")
    ]
