# pyright: strict
"""Leader election for an offline partition, the controller's election and epoch, and the epoch refusal rules.

Sources (apache/kafka 0.9.0.1):

* :func:`elect_leader` is ``controller/PartitionLeaderSelector.scala`` ``OfflinePartitionLeaderSelector``:
  the live ISR members are ``isr`` filtered by ``live`` (in ISR order); when one exists the leader is the
  first *assigned* replica (assignment order) that is in the live ISR, and the new ISR is the live ISR.
  When none is alive: with unclean election off (``unclean.leader.election.enable=false``; 0.9's default
  is *true*, herdlab's default is off) it raises :class:`NoReplicaOnline`; with it on the
  leader is the first live assigned replica and the new ISR is that leader alone (possible data loss); with
  no live assigned replica at all it raises :class:`NoReplicaOnline` either way.
* :func:`next_partition_state` is what ``PartitionStateMachine.electLeaderForPartition`` writes: leader
  epoch + 1, the electing controller's epoch; it aborts (``StateChangeFailedException``) when the znode was
  already written by a controller of a newer epoch (a deposed controller must not overwrite it). Its write
  is conditional on the zkVersion read (``ReplicationUtils.updateLeaderAndIsr``).
* :class:`ControllerElection` is ``server/ZookeeperLeaderElector.scala`` plus
  ``KafkaController.incrementControllerEpoch`` as ZooKeeper sees them: ``/controller`` is an ephemeral
  znode created by the first broker that tries (the others read who holds it); the winner then reads
  ``/controller_epoch`` and writes epoch + 1 conditionally on the version it read (the first controller
  creates it with 1); a lost conditional write is ``ControllerMovedException`` (the winner resigns). The
  ephemeral znode vanishes when its holder's session ends, which starts the next election.
* :func:`stale_controller_epoch` is ``ReplicaManager.becomeLeaderOrFollower`` / ``stopReplicas`` (and
  ``KafkaApis`` for UpdateMetadata): a request whose controller epoch is *older* than the newest the broker
  has seen is refused with ``STALE_CONTROLLER_EPOCH``; the same epoch is accepted (one controller sends many
  requests) and a newer one is accepted and remembered (:class:`ControllerEpochGate`).
* :func:`stale_leader_epoch` is the per-partition check of ``becomeLeaderOrFollower``: a LeaderAndIsr partition
  state is applied only when its leader epoch is *strictly newer* than the one the broker holds; an equal or
  older one is refused with ``STALE_LEADER_EPOCH`` (13) for that partition and the partition is left as it
  was. 0.9 has no leader epoch on produce or fetch: a deposed leader that has not yet received the
  LeaderAndIsr still answers them; it is fenced by the zkVersion (its ISR writes lose, so its high watermark
  cannot pass what the old ISR holds) and by truncation to its high watermark when it becomes a follower.
  Later Kafka's ``FENCED_LEADER_EPOCH`` (KIP-320) for fetches is not modelled.
"""

from __future__ import annotations

from collections.abc import Collection, Sequence
from dataclasses import dataclass

from coordinator.core.replication.errors import STALE_CONTROLLER_EPOCH, NoReplicaOnline, ReplicationError
from coordinator.core.replication.state import INITIAL_CONTROLLER_EPOCH, PartitionState, conditional_update

__all__ = [
    "ControllerElection",
    "ControllerEpochGate",
    "ControllerMoved",
    "LeaderChoice",
    "StateChangeFailed",
    "elect_leader",
    "next_partition_state",
    "stale_controller_epoch",
    "stale_leader_epoch",
]


@dataclass(frozen=True)
class LeaderChoice:
    """The elected leader, the new ISR, and whether the choice was unclean (outside the ISR)."""

    leader: int
    isr: tuple[int, ...]
    unclean: bool


def elect_leader(
    assigned: Sequence[int], isr: Sequence[int], live: Collection[int], unclean: bool = False
) -> LeaderChoice:
    """``OfflinePartitionLeaderSelector.selectLeader``; raises :class:`NoReplicaOnline` when no leader can be had.

    ``assigned`` is the partition's replica list in assignment order, ``isr`` the ISR from its state znode,
    ``live`` the broker ids registered under ``/brokers/ids``.
    """
    if not assigned:
        raise NoReplicaOnline("the partition has no assigned replicas")
    live_assigned = [r for r in assigned if r in live]
    live_isr = tuple(r for r in isr if r in live)
    if live_isr:
        leader = next((r for r in live_assigned if r in live_isr), None)
        if leader is None:  # an ISR member that is not assigned: 0.9 would fail on .head too
            raise NoReplicaOnline(
                f"no live ISR member {list(live_isr)} is an assigned replica {list(assigned)}"
            )
        return LeaderChoice(leader, live_isr, unclean=False)
    if not unclean:
        raise NoReplicaOnline(
            f"no broker in ISR {list(isr)} is alive (live brokers {sorted(live)}) and unclean election is off"
        )
    if not live_assigned:
        raise NoReplicaOnline(f"no assigned replica {list(assigned)} is alive (live brokers {sorted(live)})")
    return LeaderChoice(live_assigned[0], (live_assigned[0],), unclean=True)


class StateChangeFailed(ReplicationError):
    """The partition state was written by a newer controller: this controller was deposed (0.9
    ``StateChangeFailedException``)."""

    code = STALE_CONTROLLER_EPOCH


def next_partition_state(
    current: PartitionState, choice: LeaderChoice, controller_epoch: int
) -> PartitionState:
    """The state znode a controller of ``controller_epoch`` writes for ``choice``: leader epoch + 1.

    Raises :class:`StateChangeFailed` when ``current`` was written by a newer controller epoch. The caller
    writes it conditionally on the zkVersion it read ``current`` at.
    """
    if current.controller_epoch > controller_epoch:
        raise StateChangeFailed(
            f"partition state written by controller epoch {current.controller_epoch}, "
            f"newer than this controller's {controller_epoch}"
        )
    return PartitionState(choice.leader, current.leader_epoch + 1, choice.isr, controller_epoch)


def stale_controller_epoch(request_epoch: int, current: int) -> bool:
    """True when a controller request must be refused with ``STALE_CONTROLLER_EPOCH``: its epoch is older."""
    return request_epoch < current


def stale_leader_epoch(request_epoch: int, current: int) -> bool:
    """True when a LeaderAndIsr partition state must be refused with ``STALE_LEADER_EPOCH``: not strictly newer."""
    return request_epoch <= current


class ControllerEpochGate:
    """A broker's newest known controller epoch (``ReplicaManager.controllerEpoch``, starting at 0): 0.9's
    broker-wide check of a controller *request*. The replica manager does not use it for state znodes (each
    carries its last writer's epoch; :class:`~coordinator.core.replication.partition.Partition` checks per partition)."""

    def __init__(self) -> None:
        self.epoch = INITIAL_CONTROLLER_EPOCH - 1

    def admit(self, request_epoch: int) -> bool:
        """Admit a controller request of ``request_epoch`` (remembering it) or refuse it (False) when stale."""
        if stale_controller_epoch(request_epoch, self.epoch):
            return False
        self.epoch = request_epoch
        return True


class ControllerMoved(ReplicationError):
    """Another broker became controller between this one's election and its epoch write (0.9
    ``ControllerMovedException``)."""

    code = STALE_CONTROLLER_EPOCH


class ControllerElection:
    """``/controller`` and ``/controller_epoch`` as ZooKeeper holds them, and the moves brokers make on them.

    ``holder`` is the broker id in ``/controller`` (None: absent); ``epoch`` and ``epoch_version`` are
    ``/controller_epoch``'s value and zkVersion (``epoch`` 0 and version -1: not created yet).
    """

    def __init__(self) -> None:
        self.holder: int | None = None
        self.epoch = 0
        self.epoch_version = -1

    def try_create(self, broker_id: int) -> bool:
        """A broker's attempt to create the ephemeral ``/controller``; True when it now holds it.

        When another broker holds it, nothing changes (``ZkNodeExistsException``: the broker reads the holder).
        """
        if self.holder is None:
            self.holder = broker_id
            return True
        return self.holder == broker_id

    def read_epoch(self) -> tuple[int, int]:
        """``/controller_epoch``'s (epoch, zkVersion) as ``readControllerEpochFromZookeeper`` reads them."""
        return self.epoch, self.epoch_version

    def increment_epoch(self, broker_id: int, seen_epoch: int, seen_version: int) -> int:
        """``incrementControllerEpoch`` by the broker that won ``/controller``, from the epoch it read.

        Creates the znode with 1 when it does not exist; otherwise writes ``seen_epoch + 1`` conditionally on
        ``seen_version``. Returns the new epoch; raises :class:`ControllerMoved` when the write loses or
        ``broker_id`` no longer holds ``/controller``.
        """
        if self.holder != broker_id:
            raise ControllerMoved(f"broker {broker_id} does not hold /controller (holder {self.holder})")
        if self.epoch_version < 0:
            if seen_version >= 0:
                raise ControllerMoved("/controller_epoch vanished after it was read")
            self.epoch, self.epoch_version = INITIAL_CONTROLLER_EPOCH, 0
            return self.epoch
        result = conditional_update(self.epoch_version, seen_version)
        if not result.succeeded:
            raise ControllerMoved(
                f"/controller_epoch moved past version {seen_version} (now {self.epoch_version}, epoch {self.epoch})"
            )
        self.epoch, self.epoch_version = seen_epoch + 1, result.version
        return self.epoch

    def elect(self, broker_id: int) -> int | None:
        """A whole election by ``broker_id``: create ``/controller``, then increment the epoch it reads.

        Returns the new controller epoch, or None when another broker holds ``/controller``.
        """
        if self.holder is not None:
            return None
        self.try_create(broker_id)
        seen_epoch, seen_version = self.read_epoch()
        return self.increment_epoch(broker_id, seen_epoch, seen_version)

    def session_lost(self, broker_id: int) -> None:
        """``broker_id``'s ZooKeeper session ended: its ephemeral ``/controller`` (if it held it) is deleted."""
        if self.holder == broker_id:
            self.holder = None
