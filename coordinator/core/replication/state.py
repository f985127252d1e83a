# pyright: strict
"""The 0.9 ZooKeeper payloads of replication and the conditional-update rule, as bytes in and out.

Sources (apache/kafka 0.9.0.1):

* ``/brokers/topics/<t>/partitions/<p>/state`` (``ZkUtils.getTopicPartitionLeaderAndIsrPath``) holds
  ``ZkUtils.leaderAndIsrZkData``: ``{"controller_epoch":E,"leader":L,"version":1,"leader_epoch":N,"isr":[..]}``.
  :func:`encode_partition_state` writes those keys in the order a 0.9 broker's ``Json.encode`` of its
  five-entry Scala ``HashMap`` prints them (the order seen in real 0.9 clusters), compact. The znode's
  zkVersion is not in the payload: it is the znode's ``Stat`` version, kept beside the state.
  ``ReplicationUtils.parseLeaderAndIsr`` reads ``leader``, ``leader_epoch``, ``isr`` and ``controller_epoch``;
  :func:`decode_partition_state` requires those and ``version`` 1, and refuses anything else with
  :class:`~coordinator.core.replication.errors.MalformedState` naming the path.
* ``/controller`` (``ZookeeperLeaderElector.elect``) is an ephemeral znode holding
  ``{"version":1,"brokerid":B,"timestamp":"<ms>"}`` (a three-entry Scala map keeps insertion order).
  ``KafkaController.parseControllerId`` reads ``brokerid`` and, failing JSON, a bare integer (the pre-0.8.2
  format); :func:`decode_controller` does the same.
* ``/controller_epoch`` is a persistent znode holding the epoch as a bare decimal integer
  (``KafkaController.incrementControllerEpoch`` writes ``newControllerEpoch.toString``); the first
  controller creates it with 1 (``InitialControllerEpoch``).
* The conditional update (``ZkUtils.conditionalUpdatePersistentPath``): ZooKeeper's ``setData`` with an
  expected version succeeds only when the znode's version equals it, and then the version becomes
  ``version + 1``; a mismatch is ``BadVersion`` and ZkUtils returns ``(false, -1)``
  (:func:`conditional_update`). For partition state, ``ReplicationUtils.updateLeaderAndIsr`` passes the
  checker ``checkLeaderAndIsrZkData``: on BadVersion, if the znode already holds exactly the leader, leader
  epoch, ISR and controller epoch being written (a retried write that had landed), the update counts as
  done at the znode's current version (:func:`update_leader_and_isr`).
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from typing import Any

from coordinator.core.replication.errors import MalformedState

__all__ = [
    "CONTROLLER_EPOCH_PATH",
    "CONTROLLER_PATH",
    "INITIAL_CONTROLLER_EPOCH",
    "ConditionalResult",
    "PartitionState",
    "conditional_update",
    "decode_controller",
    "decode_controller_epoch",
    "decode_partition_state",
    "encode_controller",
    "encode_controller_epoch",
    "encode_partition_state",
    "partition_state_path",
    "update_leader_and_isr",
]

CONTROLLER_PATH = "/controller"
CONTROLLER_EPOCH_PATH = "/controller_epoch"
INITIAL_CONTROLLER_EPOCH = 1


def partition_state_path(topic: str, partition: int) -> str:
    """``/brokers/topics/<topic>/partitions/<partition>/state``."""
    return f"/brokers/topics/{topic}/partitions/{partition}/state"


@dataclass(frozen=True)
class PartitionState:
    """The payload of a partition's state znode (0.9 ``LeaderIsrAndControllerEpoch`` without the zkVersion).

    ``isr`` keeps the order it is written in; ``controller_epoch`` is the epoch of the controller that made the
    leadership decision (a leader's own ISR writes keep it, ``ReplicationUtils.updateLeaderAndIsr``).
    """

    leader: int
    leader_epoch: int
    isr: tuple[int, ...]
    controller_epoch: int


@dataclass(frozen=True)
class ConditionalResult:
    """The outcome of a conditional write: ``succeeded`` and the znode's version after it (-1 when it lost)."""

    succeeded: bool
    version: int


def conditional_update(current_version: int, expected_version: int) -> ConditionalResult:
    """ZooKeeper's versioned ``setData`` as ZkUtils sees it: a write expecting a stale zkVersion loses.

    ``current_version`` is the znode's version now; the write succeeds iff ``expected_version`` equals it, and the
    znode's version is then ``current_version + 1``. A loss returns ``ConditionalResult(False, -1)``.
    """
    if expected_version == current_version:
        return ConditionalResult(True, current_version + 1)
    return ConditionalResult(False, -1)


def update_leader_and_isr(
    current: PartitionState, current_version: int, new: PartitionState, expected_version: int
) -> ConditionalResult:
    """``ReplicationUtils.updateLeaderAndIsr``: a conditional write whose BadVersion is forgiven only when the
    znode already holds exactly ``new`` (``checkLeaderAndIsrZkData``); then it succeeds at ``current_version``.
    """
    result = conditional_update(current_version, expected_version)
    if result.succeeded or current != new:
        return result
    return ConditionalResult(True, current_version)


def encode_partition_state(state: PartitionState) -> bytes:
    """The state znode's bytes exactly as a 0.9 broker writes them."""
    isr = ",".join(str(b) for b in state.isr)
    return (
        f'{{"controller_epoch":{state.controller_epoch},"leader":{state.leader},"version":1,'
        f'"leader_epoch":{state.leader_epoch},"isr":[{isr}]}}'
    ).encode()


def _json_object(path: str, data: bytes) -> dict[str, Any]:
    try:
        value: object = json.loads(data)
    except (ValueError, UnicodeDecodeError) as exc:
        raise MalformedState(path, f"not JSON ({exc})", data) from None
    if not isinstance(value, dict):
        raise MalformedState(path, "not a JSON object", data)
    return dict(value)  # pyright: ignore[reportUnknownArgumentType]


def _int_field(path: str, obj: dict[str, Any], key: str, data: bytes) -> int:
    value = obj.get(key)
    if value is None:
        raise MalformedState(path, f'no "{key}"', data)
    if isinstance(value, bool) or not isinstance(value, int):
        raise MalformedState(path, f'"{key}" is not an integer', data)
    return value


def decode_partition_state(path: str, data: bytes) -> PartitionState:
    """Parse a state znode; raise :class:`MalformedState` (naming ``path``) unless it is a version 1 state."""
    obj = _json_object(path, data)
    version = _int_field(path, obj, "version", data)
    if version != 1:
        raise MalformedState(path, f"version {version}, expected 1", data)
    isr_value: object = obj.get("isr")
    if not isinstance(isr_value, list):
        raise MalformedState(path, '"isr" is not a list', data)
    isr: list[int] = []
    for item in isr_value:  # pyright: ignore[reportUnknownVariableType]
        if isinstance(item, bool) or not isinstance(item, int):
            raise MalformedState(path, '"isr" holds a non-integer', data)
        isr.append(item)
    return PartitionState(
        leader=_int_field(path, obj, "leader", data),
        leader_epoch=_int_field(path, obj, "leader_epoch", data),
        isr=tuple(isr),
        controller_epoch=_int_field(path, obj, "controller_epoch", data),
    )


def encode_controller(broker_id: int, timestamp_ms: int) -> bytes:
    """``/controller``'s bytes as ``ZookeeperLeaderElector.elect`` writes them (timestamp is a string)."""
    return f'{{"version":1,"brokerid":{broker_id},"timestamp":"{timestamp_ms}"}}'.encode()


def decode_controller(data: bytes, path: str = CONTROLLER_PATH) -> int:
    """The controller's broker id (``parseControllerId``: JSON ``brokerid``, else a bare integer)."""
    try:
        value: object = json.loads(data)
    except (ValueError, UnicodeDecodeError):
        raise MalformedState(path, "neither controller JSON nor an integer", data) from None
    if isinstance(value, int) and not isinstance(value, bool):
        return value
    if not isinstance(value, dict):
        raise MalformedState(path, "neither controller JSON nor an integer", data)
    return _int_field(path, dict(value), "brokerid", data)  # pyright: ignore[reportUnknownArgumentType]


def encode_controller_epoch(epoch: int) -> bytes:
    """``/controller_epoch``'s bytes: the decimal epoch."""
    return str(epoch).encode()


def decode_controller_epoch(data: bytes, path: str = CONTROLLER_EPOCH_PATH) -> int:
    """Parse ``/controller_epoch``; an epoch is a decimal integer of at least 1 (``InitialControllerEpoch``)."""
    text = data.decode("ascii", errors="replace").strip()
    if not text.isdigit():
        raise MalformedState(path, "not a decimal integer", data)
    epoch = int(text)
    if epoch < INITIAL_CONTROLLER_EPOCH:
        raise MalformedState(path, f"epoch {epoch} below {INITIAL_CONTROLLER_EPOCH}", data)
    return epoch
