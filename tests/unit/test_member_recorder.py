"""The coordinator members' shared parts, without a broker: :class:`CommitPolicy` (pure, time passed in),
:class:`MemberConfig`, :class:`MemberRecorder`'s events, :func:`error_of`, and the clients' property
mappings (kafka-python and aiokafka consumers, the workload's producer)."""

from __future__ import annotations

from typing import Any

import aiokafka.errors as aioerrors
import kafka.errors as kerrors
import pytest

from harness.members.clients.aiokafka import consumer_kwargs as aiokafka_kwargs
from harness.members.clients.kafka_python import consumer_kwargs as kafka_python_kwargs
from harness.members.clients.kafka_python import effective_config
from harness.members.recorder import CommitPolicy, MemberConfig, MemberRecorder, error_of
from harness.workload.producer import ProducerConfig, producer_kwargs
from tests.support.recording import RecordingHistory

# -- CommitPolicy ----------------------------------------------------------------------------------


def test_nothing_is_due_before_an_interval_passed_then_once_per_interval() -> None:
    policy = CommitPolicy(interval_s=5.0, now=100.0)
    assert not policy.due(104.9)
    assert policy.due(105.0)  # the first interval ends at 100 + 5
    assert not policy.due(109.9)  # the next one is scheduled at 105 + 5
    assert policy.due(110.0)


def test_pending_gives_the_next_offset_to_read_of_each_processed_partition() -> None:
    policy = CommitPolicy(interval_s=1.0)
    policy.processed(0, 10)
    policy.processed(0, 11)
    policy.processed(2, 4)
    policy.processed(0, 7)  # a smaller offset (re-delivered) does not move the position back
    assert policy.pending() == {0: 12, 2: 5}
    assert policy.pending([2, 3]) == {2: 5}  # only those asked, and only if processed


def test_a_committed_position_is_not_pending_again_until_more_is_processed() -> None:
    policy = CommitPolicy(interval_s=1.0)
    policy.processed(1, 3)
    policy.done({1: 4})
    assert policy.pending() == {}
    policy.processed(1, 4)
    assert policy.pending() == {1: 5}


def test_a_failed_commit_stays_pending() -> None:
    policy = CommitPolicy(interval_s=1.0)
    policy.processed(1, 3)
    assert policy.pending() == {1: 4}  # attempted, not done (rejected): still pending
    assert policy.pending() == {1: 4}


def test_forgotten_partitions_are_not_pending() -> None:
    policy = CommitPolicy(interval_s=1.0)
    policy.processed(0, 1)
    policy.processed(1, 1)
    policy.forget([0])
    assert policy.pending() == {1: 2}


def test_a_disabled_policy_commits_nothing_and_is_never_due() -> None:
    policy = CommitPolicy(interval_s=1.0, enabled=False)
    policy.processed(0, 1)
    assert not policy.due(1e9)
    assert policy.pending() == {}


# -- MemberConfig ----------------------------------------------------------------------------------


def _config(**props: str) -> MemberConfig:
    return MemberConfig(bootstrap="127.0.0.1:1", group="g", topic="t", name="m0", properties=props)


def test_member_config_defaults_are_kafkas() -> None:
    c = _config()
    assert c.assignor == "range"
    assert c.auto_commit is True
    assert c.auto_commit_interval_s == 5.0  # auto.commit.interval.ms 5000


def test_member_config_reads_its_policy_from_the_properties() -> None:
    c = _config(
        **{
            "enable.auto.commit": "False",
            "auto.commit.interval.ms": "250",
            "partition.assignment.strategy": "sticky",
        }
    )
    assert c.auto_commit is False  # case-insensitive, as Kafka's boolean parsing
    assert c.auto_commit_interval_s == 0.25
    assert c.assignor == "sticky"
    assert c.prop("session.timeout.ms", "6000") == "6000"


# -- MemberRecorder ----------------------------------------------------------------------------------


def test_the_recorder_writes_the_vocabulary_with_identity_and_library() -> None:
    h = RecordingHistory()
    rec = MemberRecorder(_config(), h)  # pyright: ignore[reportArgumentType]
    rec.joined(3, "m-1")
    rec.assigned([2, 0])
    rec.record(0, 7, b'{"seq": 41}')
    rec.commit_result(0, 8)
    rec.commit_result(2, 1, error="ILLEGAL_GENERATION", code=22)
    rec.revoked([0], lost=True)
    kinds = [(e["kind"], e.get("partition")) for e in h.events]
    assert kinds == [
        ("assigned", 0),
        ("assigned", 2),
        ("rebalance_end", None),
        ("record", 0),
        ("commit", 0),
        ("commit_rejected", 2),
        ("rebalance_begin", None),
        ("revoked", 0),
    ]
    assert all(
        e["impl"] == "coordinator" and e["library"] == "kafka-python" and e["member"] == "m-1"
        for e in h.events
    )
    assert all(e["generation"] == 3 for e in h.events)
    assert h.events[2]["partitions"] == [0, 2]
    assert h.events[3]["seq"] == 41
    assert h.events[5]["code"] == 22 and h.events[5]["offset"] == 1
    assert h.events[7]["lost"] is True and rec.assignment == {2}


def test_started_names_the_server_side_assignor_of_a_member_on_the_consumer_protocol() -> None:
    def started(client: str, props: dict[str, str]) -> dict[str, Any]:
        h = RecordingHistory()
        config = MemberConfig(
            bootstrap="b:1", group="g", topic="t", name="m0", client=client, properties=props
        )
        MemberRecorder(config, h).started()  # pyright: ignore[reportArgumentType]
        (e,) = h.events
        return {k: e.get(k) for k in ("assignor", "group_protocol")}

    # classic: the client-side assignor, no protocol field (as before)
    assert started("librdkafka", {}) == {"assignor": "range", "group_protocol": None}
    # consumer protocol: the assignor asked for, else the broker's default
    consumer = {"group.protocol": "consumer"}
    assert started("librdkafka", consumer) == {"assignor": "uniform", "group_protocol": "consumer"}
    ranged = {**consumer, "group.remote.assignor": "range"}
    assert started("java", ranged) == {"assignor": "range", "group_protocol": "consumer"}
    franz = {"ServerSideBalancer": "true", "Balancers": "range"}
    assert started("franz-go", franz) == {"assignor": "range", "group_protocol": "consumer"}


# -- error_of --------------------------------------------------------------------------------------


def test_error_of_finds_the_kafka_error_a_commit_failure_wraps() -> None:
    # kafka-python: CommitFailedError(IllegalGenerationError())
    assert error_of(kerrors.CommitFailedError(kerrors.IllegalGenerationError())) == ("ILLEGAL_GENERATION", 22)
    assert error_of(kerrors.CoordinatorNotAvailableError()) == ("COORDINATOR_NOT_AVAILABLE", 15)
    # aiokafka: raise CommitFailedError(...) from UnknownMemberIdError
    try:
        try:
            raise aioerrors.UnknownMemberIdError()
        except aioerrors.KafkaError as inner:
            raise aioerrors.CommitFailedError("rebalanced") from inner
    except aioerrors.KafkaError as e:
        assert error_of(e) == ("UNKNOWN_MEMBER_ID", 25)
    assert error_of(RuntimeError("boom")) == ("RuntimeError", None)


# -- property mappings -------------------------------------------------------------------------------


def test_kafka_python_gets_typed_snake_case_keywords_and_its_auto_commit_off() -> None:
    kwargs = kafka_python_kwargs(
        {
            "fetch.max.wait.ms": "123",
            "check.crcs": "false",
            "auto.offset.reset": "earliest",
            "enable.auto.commit": "true",  # the member's policy, not the client's
            "auto.commit.interval.ms": "100",
            "partition.assignment.strategy": "roundrobin,range",
        }
    )
    strategy = kwargs.pop("partition_assignment_strategy")
    assert [a.name for a in strategy] == ["roundrobin", "range"]
    assert kwargs == {
        "fetch_max_wait_ms": 123,
        "check_crcs": False,
        "auto_offset_reset": "earliest",
        "enable_auto_commit": False,
    }


def test_the_effective_config_names_each_given_property_by_its_dotted_name() -> None:
    from kafka.coordinator.assignors.sticky.sticky_assignor import StickyPartitionAssignor

    config: dict[str, Any] = {
        "fetch_max_wait_ms": 123,
        "partition_assignment_strategy": [StickyPartitionAssignor],
    }
    props = {
        "fetch.max.wait.ms": "123",
        "partition.assignment.strategy": "sticky",
        "auto.commit.interval.ms": "1",
    }
    assert effective_config(config, props) == {
        "fetch.max.wait.ms": 123,
        "partition.assignment.strategy": "sticky",
    }


def test_aiokafka_gets_typed_keywords_including_an_optional_number() -> None:
    kwargs = aiokafka_kwargs(
        {"max.poll.records": "50", "session.timeout.ms": "6000", "enable.auto.commit": "true"}
    )
    assert kwargs == {"max_poll_records": 50, "session_timeout_ms": 6000, "enable_auto_commit": False}


@pytest.mark.parametrize("assignor", ["cooperative-sticky", "nonesuch"])
def test_an_assignor_a_client_does_not_have_is_an_error_naming_it(assignor: str) -> None:
    with pytest.raises(ValueError, match=assignor):
        aiokafka_kwargs({"partition.assignment.strategy": assignor})


def test_the_producer_keeps_its_client_id_and_takes_acks_and_other_properties() -> None:
    base = ProducerConfig(bootstrap="127.0.0.1:1,127.0.0.1:2", topic="t", acks=1, metadata_refresh_s=0.5)
    assert producer_kwargs(base) == {
        "acks": 1,
        "linger_ms": 5,
        "metadata_max_age_ms": 500,
        "bootstrap_servers": ["127.0.0.1:1", "127.0.0.1:2"],
        "client_id": "herdlab-producer",
    }
    given = ProducerConfig(
        bootstrap="127.0.0.1:1",
        topic="t",
        properties={
            "acks": "all",
            "linger.ms": "20",
            "compression.type": "gzip",
            "enable.idempotence": "true",
        },
    )
    kwargs = producer_kwargs(given)
    assert kwargs["acks"] == "all" and kwargs["linger_ms"] == 20
    assert kwargs["compression_type"] == "gzip" and kwargs["enable_idempotence"] is True
    assert kwargs["client_id"] == "herdlab-producer"
