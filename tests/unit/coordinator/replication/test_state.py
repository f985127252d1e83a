"""The 0.9 znode payloads of replication and the zkVersion conditional update (coordinator.core.replication.state)."""

from __future__ import annotations

import pytest

from coordinator.core.replication.errors import MalformedState
from coordinator.core.replication.state import (
    ConditionalResult,
    PartitionState,
    conditional_update,
    decode_controller,
    decode_controller_epoch,
    decode_partition_state,
    encode_controller,
    encode_controller_epoch,
    encode_partition_state,
    partition_state_path,
    update_leader_and_isr,
)

PATH = "/brokers/topics/__consumer_offsets/partitions/7/state"


def test_the_state_path_is_the_0_9_layout() -> None:
    assert partition_state_path("__consumer_offsets", 7) == PATH


def test_partition_state_is_written_as_a_0_9_broker_writes_it() -> None:
    state = PartitionState(leader=2, leader_epoch=4, isr=(2, 0, 1), controller_epoch=3)
    assert encode_partition_state(state) == (
        b'{"controller_epoch":3,"leader":2,"version":1,"leader_epoch":4,"isr":[2,0,1]}'
    )


@pytest.mark.parametrize(
    "state",
    [
        PartitionState(0, 0, (0,), 1),
        PartitionState(2, 17, (2, 0, 1), 9),
        PartitionState(-1, 5, (), 2),  # an offline partition's state: leader -1
    ],
)
def test_partition_state_round_trips(state: PartitionState) -> None:
    assert decode_partition_state(PATH, encode_partition_state(state)) == state


def test_partition_state_reads_any_key_order_and_spacing() -> None:
    data = b'{ "isr": [1, 2], "leader_epoch": 6, "version": 1, "leader": 1, "controller_epoch": 2 }'
    assert decode_partition_state(PATH, data) == PartitionState(1, 6, (1, 2), 2)


@pytest.mark.parametrize(
    ("data", "problem"),
    [
        (b"not json", "not JSON"),
        (b"[1,2]", "not a JSON object"),
        (b'{"version":1,"leader_epoch":0,"isr":[0],"controller_epoch":1}', 'no "leader"'),
        (b'{"version":1,"leader":0,"leader_epoch":0,"isr":0,"controller_epoch":1}', '"isr" is not a list'),
        (b'{"version":1,"leader":0,"leader_epoch":0,"isr":["0"],"controller_epoch":1}', "non-integer"),
        (b'{"version":2,"leader":0,"leader_epoch":0,"isr":[0],"controller_epoch":1}', "version 2"),
        (b'{"version":1,"leader":true,"leader_epoch":0,"isr":[0],"controller_epoch":1}', "not an integer"),
        (b'{"version":1,"leader":0,"isr":[0],"controller_epoch":1}', 'no "leader_epoch"'),
        (b"\xff\xfe", "not JSON"),
    ],
)
def test_a_malformed_partition_state_is_an_error_naming_path_and_cause(data: bytes, problem: str) -> None:
    with pytest.raises(
        MalformedState, match="malformed znode /brokers/topics/__consumer_offsets/partitions/7/state"
    ) as err:
        decode_partition_state(PATH, data)
    assert problem in err.value.problem


def test_controller_znode_is_the_elector_json_and_parses_back_to_the_broker_id() -> None:
    data = encode_controller(3, 1700000000123)
    assert data == b'{"version":1,"brokerid":3,"timestamp":"1700000000123"}'
    assert decode_controller(data) == 3


def test_controller_znode_in_the_old_bare_integer_format_is_read_as_parseControllerId_does() -> None:
    assert decode_controller(b"5") == 5


@pytest.mark.parametrize("data", [b'{"version":1}', b"garbage", b'"3"', b'{"brokerid":"3"}'])
def test_a_malformed_controller_znode_is_an_error(data: bytes) -> None:
    with pytest.raises(MalformedState, match="malformed znode /controller"):
        decode_controller(data)


def test_controller_epoch_is_a_bare_decimal() -> None:
    assert encode_controller_epoch(7) == b"7"
    assert decode_controller_epoch(b"7") == 7


@pytest.mark.parametrize("data", [b"0", b"-1", b"x", b"", b"1.5"])
def test_a_malformed_controller_epoch_is_an_error(data: bytes) -> None:
    with pytest.raises(MalformedState, match="malformed znode /controller_epoch"):
        decode_controller_epoch(data)


def test_a_conditional_update_with_the_current_zk_version_wins_and_bumps_it() -> None:
    assert conditional_update(current_version=5, expected_version=5) == ConditionalResult(True, 6)


@pytest.mark.parametrize("expected", [4, 6, 0])
def test_a_conditional_update_with_another_zk_version_loses(expected: int) -> None:
    assert conditional_update(current_version=5, expected_version=expected) == ConditionalResult(False, -1)


def test_a_stale_isr_write_loses_unless_the_znode_already_holds_exactly_that_state() -> None:
    written = PartitionState(leader=1, leader_epoch=3, isr=(1, 2), controller_epoch=2)
    # A retried write that had landed (znode at version 8 already holds it): done, at version 8.
    assert update_leader_and_isr(written, 8, written, expected_version=7) == ConditionalResult(True, 8)
    # The znode holds another state (a new controller elected broker 2): the deposed leader's write loses.
    elected = PartitionState(leader=2, leader_epoch=4, isr=(2,), controller_epoch=3)
    assert update_leader_and_isr(elected, 8, written, expected_version=7) == ConditionalResult(False, -1)
    # The expected version matches: an ordinary conditional write.
    assert update_leader_and_isr(elected, 8, written, expected_version=8) == ConditionalResult(True, 9)
