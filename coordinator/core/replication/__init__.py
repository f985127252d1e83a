# pyright: strict
"""The replication and controller rules of Kafka 0.9, as a pure core.

No sockets, threads, clocks or ZooKeeper client: time is passed in and ZooKeeper writes are returned for the
caller to make. The ZooKeeper shell (:mod:`coordinator.zookeeper.registration`, :mod:`coordinator.zookeeper.controller`,
:mod:`coordinator.zookeeper.states`) makes those writes; the replica manager applies the partition rules.

Modules (each docstring names its apache/kafka 0.9.0.1 sources):

* :mod:`~coordinator.core.replication.partition` -- one partition on one broker: leader or follower, ISR
  expansion and shrink (``replica.lag.time.max.ms``), log end offsets, the high watermark, acks=-1 and
  ``min.insync.replicas``, LeaderAndIsr with the leader-epoch check;
* :mod:`~coordinator.core.replication.election` -- offline partition leader election (clean, or unclean as an
  option), the controller election through ``/controller`` and ``/controller_epoch``, epoch refusal rules;
* :mod:`~coordinator.core.replication.state` -- the znode payloads (partition state, ``/controller``,
  ``/controller_epoch``) and the zkVersion conditional update;
* :mod:`~coordinator.core.replication.errors` -- Kafka error codes and exceptions;
* :mod:`~coordinator.core.replication.assignment` -- ``AdminUtils.assignReplicasToBrokers`` (fixed start);
* :mod:`~coordinator.core.replication.decisions` -- the controller's per-partition writes (new partition, broker
  failure and startup).
"""

from coordinator.core.replication.assignment import assign_replicas
from coordinator.core.replication.decisions import NO_LEADER, Decision, after_broker_change, initial_state
from coordinator.core.replication.election import (
    ControllerElection,
    ControllerEpochGate,
    ControllerMoved,
    LeaderChoice,
    StateChangeFailed,
    elect_leader,
    next_partition_state,
    stale_controller_epoch,
    stale_leader_epoch,
)
from coordinator.core.replication.errors import (
    InvalidReplicationFactor,
    MalformedState,
    NoReplicaOnline,
    NotAssignedReplica,
    ReplicationError,
)
from coordinator.core.replication.partition import (
    UNKNOWN_OFFSET,
    AcksCheck,
    Append,
    IsrChange,
    Partition,
    Transition,
)
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

__all__ = [
    "NO_LEADER",
    "UNKNOWN_OFFSET",
    "AcksCheck",
    "Append",
    "ConditionalResult",
    "ControllerElection",
    "ControllerEpochGate",
    "ControllerMoved",
    "Decision",
    "InvalidReplicationFactor",
    "IsrChange",
    "LeaderChoice",
    "MalformedState",
    "NoReplicaOnline",
    "NotAssignedReplica",
    "Partition",
    "PartitionState",
    "ReplicationError",
    "StateChangeFailed",
    "Transition",
    "after_broker_change",
    "assign_replicas",
    "conditional_update",
    "decode_controller",
    "decode_controller_epoch",
    "decode_partition_state",
    "elect_leader",
    "initial_state",
    "encode_controller",
    "encode_controller_epoch",
    "encode_partition_state",
    "next_partition_state",
    "partition_state_path",
    "stale_controller_epoch",
    "stale_leader_epoch",
    "update_leader_and_isr",
]
