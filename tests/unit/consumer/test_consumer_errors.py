"""Kafka 4's error answers to malformed or refused ConsumerGroupHeartbeats
(``throwIfConsumerGroupHeartbeatRequestIsInvalid``, ``throwIfConsumerGroupIsFull``); each leaves the group as it was
and the group keeps serving its members."""

from __future__ import annotations

import pytest

from coordinator.core.consumer.api import ConsumerGroupHeartbeatRequest, TopicPartitions
from coordinator.core.consumer.config import ConsumerGroupConfig
from coordinator.core.group.api import Persist
from coordinator.core.group.errors import ErrorCode
from tests.support.consumer_core import Driver, tid


def _join(**changes: object) -> ConsumerGroupHeartbeatRequest:
    req = ConsumerGroupHeartbeatRequest(
        "g", "m9", 0, rebalance_timeout_ms=1000, subscribed_topic_names=("t",), topic_partitions=()
    )
    for name, value in changes.items():
        setattr(req, name, value)
    return req


@pytest.mark.parametrize(
    ("req", "message"),
    [
        (_join(group_id=""), "GroupId can't be empty."),
        (_join(group_id="  "), "GroupId can't be empty."),
        (_join(member_id=""), "MemberId can't be empty."),  # v1: the member chooses its id
        (_join(member_id="", member_epoch=3, api_version=0), "MemberId can't be empty."),
        (_join(member_id="", member_epoch=-1, api_version=0), "MemberId can't be empty."),
        (_join(instance_id=""), "InstanceId can't be empty."),
        (_join(rack_id=" "), "RackId can't be empty."),
        (_join(rebalance_timeout_ms=-1), "RebalanceTimeoutMs must be provided in first request."),
        (_join(topic_partitions=None), "TopicPartitions must be empty when (re-)joining."),
        (
            _join(topic_partitions=(TopicPartitions(tid(1), (0,)),)),
            "TopicPartitions must be empty when (re-)joining.",
        ),
        (
            _join(subscribed_topic_names=None),
            "Either SubscribedTopicNames or SubscribedTopicRegex must be non-null when (re-)joining.",
        ),
        (_join(member_epoch=-2), "InstanceId can't be null."),
        (_join(member_epoch=-3), "MemberEpoch is invalid."),
    ],
)
def test_invalid_requests_get_invalid_request_and_change_nothing(
    req: ConsumerGroupHeartbeatRequest, message: str
) -> None:
    d = Driver()
    d.topics.add("t", 2)
    d.join("m1", ["t"])
    r = d.send(req)
    assert (r.error, r.error_message) == (ErrorCode.INVALID_REQUEST, message)
    assert (r.member_id, r.member_epoch, r.heartbeat_interval_ms, r.assignment) == (None, 0, 0, None)
    assert not any(isinstance(e, Persist) for e in d.effects)
    group = d.machine.group("g")
    assert group is not None and list(group.members) == ["m1"] and group.group_epoch == 1
    assert d.hb("m1", 1, {tid(1): [0, 1]}).error is ErrorCode.NONE


def test_an_empty_subscription_is_a_member_without_partitions() -> None:
    d = Driver()
    d.topics.add("t", 2)
    r = d.join("m1", [])
    assert (r.error, r.member_epoch, r.assignment) == (ErrorCode.NONE, 1, ())


def test_an_assignor_the_broker_does_not_have_is_unsupported() -> None:
    d = Driver()
    d.topics.add("t", 2)
    r = d.join("m1", ["t"], assignor="sticky")
    assert r.error is ErrorCode.UNSUPPORTED_ASSIGNOR
    assert r.error_message == "ServerAssignor sticky is not supported. Supported assignors: uniform, range."
    assert d.machine.group("g") is None
    assert d.join("m1", ["t"], assignor="range").error is ErrorCode.NONE


def test_a_full_group_refuses_new_members_and_serves_its_own() -> None:
    d = Driver(config=ConsumerGroupConfig(max_size=1))
    d.topics.add("t", 2)
    assert d.join("m1", ["t"]).error is ErrorCode.NONE
    r = d.join("m2", ["t"])
    assert (r.error, r.error_message) == (
        ErrorCode.GROUP_MAX_SIZE_REACHED,
        "The consumer group has reached its maximum capacity of 1 members.",
    )
    assert d.hb("m1", 1, {tid(1): [0, 1]}).error is ErrorCode.NONE


def test_the_broker_settings_follow_kafkas_bounds() -> None:
    assert ConsumerGroupConfig() == ConsumerGroupConfig(
        heartbeat_interval_ms=5000,
        session_timeout_ms=45000,
        max_size=2**31 - 1,
        assignors=("uniform", "range"),
    )
    with pytest.raises(ValueError, match="session.timeout"):
        ConsumerGroupConfig(session_timeout_ms=30_000)
    with pytest.raises(ValueError, match="below"):
        ConsumerGroupConfig(
            heartbeat_interval_ms=10_000, session_timeout_ms=10_000, min_session_timeout_ms=6000
        )
    small = ConsumerGroupConfig.from_properties(
        {
            "group.consumer.min.session.timeout.ms": "6000",
            "group.consumer.session.timeout.ms": "6000",
            "group.consumer.min.heartbeat.interval.ms": "500",
            "group.consumer.heartbeat.interval.ms": "500",
            "group.consumer.assignors": "org.apache.kafka.coordinator.group.assignor.RangeAssignor",
        }
    )
    assert (small.session_timeout_ms, small.heartbeat_interval_ms, small.default_assignor) == (
        6000,
        500,
        "range",
    )
