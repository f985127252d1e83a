# pyright: strict
"""What the controller writes to a partition's state znode, decided from what it read (0.9 controller rules).

Sources (apache/kafka 0.9.0.1, ``core/src/main/scala/kafka/controller/``):

* :func:`initial_state` is ``PartitionStateMachine.initializeLeaderAndIsrForPartition`` (NewPartition ->
  OnlinePartition): the live assigned replicas in assignment order; the first is the leader, all of them are the
  ISR, leader epoch 0, the controller's epoch. No live assigned replica: nothing is written (0.9 raises
  ``StateChangeFailedException`` and the partition stays NewPartition until a replica starts; so does the
  controller here: it retries on every broker change).
* :func:`after_broker_change` is ``KafkaController.onBrokerFailure`` / ``onBrokerStartup`` for one partition:

  - its leader is dead or absent (-1): ``OfflinePartitionLeaderSelector`` (:func:`elect_leader`) picks a leader
    from the live ISR (unclean: from the live assigned replicas, only when enabled) and the state gets leader
    epoch + 1 (:func:`next_partition_state`). Reason ``offline`` when the leader had just died, ``broker_startup``
    when the partition was offline (leader -1) and a returning broker makes an election possible, ``unclean``
    when the choice is outside the ISR;
  - no leader can be had: ``ReplicaStateMachine`` moves the dead replicas to OfflineReplica, whose
    ``KafkaController.removeReplicaFromIsr`` writes leader -1 (``LeaderAndIsr.NoLeader``) when the removed
    replica led, the ISR without the dead replicas and leader epoch + 1; with unclean election off the *last*
    ISR member is retained ("Retaining last ISR ... since unclean leader election is disabled") so that it can
    lead again when it returns;
  - its leader lives but dead followers are in the ISR: ``removeReplicaFromIsr`` again: same leader, the ISR
    without them, leader epoch + 1 (0.9 bumps the leader epoch even for an ISR-only change).

  0.9 makes one conditional write per dead replica (and one per election); this makes one per partition per
  broker change, with the same final state (the order in which 0.9 removes several dead replicas from an ISR
  that all of them leave is its iteration order; here the retained last member is the last of the old ISR).
* Every decision refuses a state written by a newer controller (``StateChangeFailedException``:
  :class:`StateChangeFailed`), and is written conditionally on the zkVersion read (the caller's job; a lost write
  is re-read and decided again).
"""

from __future__ import annotations

from collections.abc import Collection, Sequence
from dataclasses import dataclass

from coordinator.core.replication.election import StateChangeFailed, elect_leader, next_partition_state
from coordinator.core.replication.errors import NoReplicaOnline
from coordinator.core.replication.state import PartitionState

__all__ = ["NO_LEADER", "Decision", "after_broker_change", "initial_state"]

#: ``LeaderAndIsr.NoLeader``: the leader of an offline partition.
NO_LEADER = -1


@dataclass(frozen=True)
class Decision:
    """A state the controller must write and why (a ``partition_state`` event's ``reason``)."""

    state: PartitionState
    reason: str


def initial_state(
    assigned: Sequence[int], live: Collection[int], controller_epoch: int
) -> PartitionState | None:
    """The first state of a new partition, or None while none of its assigned replicas is live."""
    live_assigned = tuple(r for r in assigned if r in live)
    if not live_assigned:
        return None
    return PartitionState(live_assigned[0], 0, live_assigned, controller_epoch)


def after_broker_change(
    assigned: Sequence[int],
    current: PartitionState,
    live: Collection[int],
    controller_epoch: int,
    unclean: bool = False,
) -> Decision | None:
    """The write a controller of ``controller_epoch`` makes to a partition in state ``current`` when the live
    brokers are ``live`` (None: nothing to change). Raises :class:`StateChangeFailed` when ``current`` was
    written by a newer controller."""
    if current.controller_epoch > controller_epoch:
        raise StateChangeFailed(
            f"partition state written by controller epoch {current.controller_epoch}, "
            f"newer than this controller's {controller_epoch}"
        )
    live_isr = tuple(r for r in current.isr if r in live)
    if current.leader != NO_LEADER and current.leader in live:
        if live_isr == current.isr:
            return None
        return Decision(
            PartitionState(current.leader, current.leader_epoch + 1, live_isr, controller_epoch), "offline"
        )
    try:
        choice = elect_leader(assigned, current.isr, live, unclean)
    except NoReplicaOnline:
        isr = live_isr if live_isr or unclean else current.isr[-1:]
        if current.leader == NO_LEADER and isr == current.isr:
            return None
        return Decision(PartitionState(NO_LEADER, current.leader_epoch + 1, isr, controller_epoch), "offline")
    if choice.unclean:
        reason = "unclean"
    elif current.leader == NO_LEADER:
        reason = "broker_startup"
    else:
        reason = "offline"
    return Decision(next_partition_state(current, choice, controller_epoch), reason)
