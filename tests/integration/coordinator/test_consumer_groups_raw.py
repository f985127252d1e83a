"""Bad ConsumerGroupHeartbeats over raw sockets to a broker process: each gets the answer Apache Kafka 4.1.1 gives
(asked over the wire with the same requests), and the group keeps serving its member after each: its steady
heartbeat is answered at its epoch, without a change. Every exchange is one ``group_request`` event."""

from __future__ import annotations

import json
import struct
import uuid
from collections.abc import Iterator
from typing import Any

import pytest
from kafka.admin import KafkaAdminClient, NewTopic
from kio.schema.errors import ErrorCode as E

from harness.cluster.broker import BrokerProcess
from tests.support.brokers import BrokerFactory
from tests.support.kio_wire import KioClient, cgh, request_frame

HB = 68
FAST = [
    "--consumer-heartbeat-interval-ms",
    "500",
    "--consumer-min-heartbeat-interval-ms",
    "500",
    "--consumer-session-timeout-ms",
    "30000",
    "--consumer-min-session-timeout-ms",
    "1000",
]


class Group:
    """Member ``a`` of group ``g`` (topic ``t``, 2 partitions), joined over its own connection."""

    def __init__(self, broker: BrokerProcess) -> None:
        admin = KafkaAdminClient(bootstrap_servers=broker.bootstrap)
        admin.create_topics([NewTopic("t", 2, 1)])  # pyright: ignore[reportUnknownMemberType]
        admin.close()
        host, _, port = broker.bootstrap.rpartition(":")
        self.host, self.port = host, int(port)
        self.member = KioClient(host, self.port)
        self.a = str(uuid.uuid4())
        joined = self.member.call(
            HB, 1, cgh(1, "g", self.a, 0, topics=("t",), owned=(), rebalance_timeout_ms=30000)
        )
        assert (joined.error_code, joined.member_epoch) == (E.none, 1)
        self.epoch = joined.member_epoch
        self.history = broker.history_path
        self.sent = 1

    def ask(self, version: int, body: Any, client: KioClient | None = None) -> Any:
        self.sent += 1
        return (client or self.member).call(HB, version, body)

    def still_served(self) -> None:
        """``a``'s steady heartbeat: its epoch back, no assignment (nothing changed for it)."""
        r = self.ask(1, cgh(1, "g", self.a, self.epoch))
        assert (r.error_code, r.member_epoch, r.assignment) == (E.none, self.epoch, None)

    def events(self) -> list[dict[str, Any]]:
        assert self.history is not None
        lines = self.history.read_text().splitlines()
        events = [json.loads(x) for x in lines if x.endswith("}")]
        return [e for e in events if e["kind"] == "group_request" and e["api"] == "ConsumerGroupHeartbeat"]


@pytest.fixture
def group(broker_factory: BrokerFactory) -> Iterator[Group]:
    grp = Group(broker_factory(extra_args=FAST))
    yield grp
    grp.member.close()


def test_an_empty_group_id_is_an_invalid_request(group: Group) -> None:
    r = group.ask(1, cgh(1, "", str(uuid.uuid4()), 0, topics=("t",), owned=(), rebalance_timeout_ms=30000))
    assert (r.error_code, r.error_message) == (E.invalid_request, "GroupId can't be empty.")
    group.still_served()


def test_a_join_without_subscriptions_is_an_invalid_request(group: Group) -> None:
    r = group.ask(1, cgh(1, "g", str(uuid.uuid4()), 0, owned=(), rebalance_timeout_ms=30000))
    assert r.error_code == E.invalid_request
    assert (
        r.error_message
        == "Either SubscribedTopicNames or SubscribedTopicRegex must be non-null when (re-)joining."
    )
    group.still_served()


def test_an_unknown_member_is_unknown_member_id(group: Group) -> None:
    r = group.ask(1, cgh(1, "g", str(uuid.uuid4()), 3))
    assert (r.error_code, r.member_epoch, r.member_id) == (E.unknown_member_id, 0, None)
    group.still_served()


@pytest.mark.parametrize("delta", [5, -1])
def test_a_wrong_epoch_is_fenced(group: Group, delta: int) -> None:
    if group.epoch + delta < 1:  # a member at epoch 1 asking with epoch 0 would be joining again
        delta = 5
    r = group.ask(1, cgh(1, "g", group.a, group.epoch + delta))
    assert r.error_code == E.fenced_member_epoch
    # Kafka fences the request, not the member: it is still at its epoch
    group.still_served()


def test_a_leave_of_an_unknown_member_is_unknown_member_id(group: Group) -> None:
    r = group.ask(1, cgh(1, "g", str(uuid.uuid4()), -1))
    assert r.error_code == E.unknown_member_id
    group.still_served()


def test_a_subscription_to_topics_that_do_not_exist_joins_with_nothing_assigned(group: Group) -> None:
    b = str(uuid.uuid4())
    r = group.ask(1, cgh(1, "g", b, 0, topics=("absent",), owned=(), rebalance_timeout_ms=30000))
    # as Kafka 4.1.1: the member joins (a new group epoch: 2) and is given nothing; a's assignment is unchanged
    assert (r.error_code, r.member_epoch) == (E.none, 2)
    assert r.assignment is not None and r.assignment.topic_partitions == ()
    a = group.ask(1, cgh(1, "g", group.a, group.epoch))
    assert (a.error_code, a.member_epoch) == (E.none, 2)  # a moves to the new epoch, keeping both partitions
    group.epoch = 2
    group.still_served()


def test_an_unsupported_assignor_is_refused(group: Group) -> None:
    r = group.ask(
        1,
        cgh(
            1,
            "g",
            str(uuid.uuid4()),
            0,
            topics=("t",),
            owned=(),
            assignor="sticky",
            rebalance_timeout_ms=30000,
        ),
    )
    assert (r.error_code, r.error_message) == (
        E.unsupported_assignor,
        "ServerAssignor sticky is not supported. Supported assignors: uniform, range.",
    )
    group.still_served()


def test_a_truncated_heartbeat_closes_its_connection_only(group: Group) -> None:
    other = KioClient(group.host, group.port)
    frame = request_frame(HB, 1, 9, cgh(1, "g", group.a, group.epoch))[:-6]
    other.raw.send_bytes(struct.pack(">i", len(frame)) + frame)
    assert other.raw.is_closed_by_peer(10)  # as Kafka 4.1.1: the connection is closed, nothing is answered
    other.close()
    group.still_served()


def test_every_exchange_is_one_event_and_only_changes_are_changes(group: Group) -> None:
    group.ask(1, cgh(1, "g", str(uuid.uuid4()), 3))  # unknown member
    group.still_served()
    group.still_served()
    events = group.events()
    assert len(events) == group.sent == 4
    join, unknown, steady1, steady2 = events
    assert (join["member_epoch"], join["epoch"], join["change"]) == (0, 1, True)
    assert (unknown["error"], unknown["change"]) == ("UNKNOWN_MEMBER_ID", True)
    assert [(e["member"], e["change"], "error" in e) for e in (steady1, steady2)] == [
        (group.a, False, False)
    ] * 2


def test_a_v0_member_is_given_its_member_id_and_a_is_asked_to_revoke_first(group: Group) -> None:
    r = group.ask(0, cgh(0, "g", "", 0, topics=("t",), owned=(), rebalance_timeout_ms=30000))
    # by hand: the new member bumps the group epoch to 2; the target splits t's 2 partitions, one each, but
    # the one it is to get is still a's, so it is given nothing yet
    assert r.error_code == E.none and r.member_id and r.member_epoch == 2
    assert r.assignment is not None and r.assignment.topic_partitions == ()
    a = group.ask(1, cgh(1, "g", group.a, group.epoch))
    # a must revoke before b gets it: it stays at epoch 1, its assignment now one partition
    assert (a.error_code, a.member_epoch) == (E.none, 1)
    assert a.assignment is not None and [len(tp.partitions) for tp in a.assignment.topic_partitions] == [1]
