"""The controller: elected through ``/controller``, it writes every partition's state znode.

Sources (apache/kafka 0.9.0.1, ``core/src/main/scala/kafka/``):

* Election, ``server/ZookeeperLeaderElector.scala``: every broker watches ``/controller`` (``LeaderChangeListener``)
  and tries to create it as an ephemeral znode ``{"version":1,"brokerid":N,"timestamp":"<ms>"}`` at start and
  whenever it is deleted (``handleDataDeleted``); ``ZkNodeExistsException`` means another broker won. The
  winner runs ``onControllerFailover``, whose first step is ``incrementControllerEpoch``: ``/controller_epoch``
  is read and rewritten with epoch + 1 *conditionally on the zkVersion read* (created with 1 by the first
  controller); a lost write is ``ControllerMovedException`` and, as ``elect`` does with any error, the broker
  resigns and deletes ``/controller`` (``resign``). A broker that sees ``/controller`` now held by another while
  it thinks it is controller resigns (``handleDataChange``); on session expiry a controller resigns
  (``SessionExpirationListener.handleNewSession``: ``onControllerResignation`` then ``elect``). A lost
  connection during the election (the create of ``/controller`` landed or not) runs the election again a little
  later, as ``elect``'s catch-all (resign, re-elect) and ZkClient's ``retryUntilConnected`` do; a ``/controller``
  naming this broker while it holds no epoch makes it run again too (a landed create whose answer was lost is then
  found as its own session's znode and the election goes on). Events:
  ``controller`` with ``phase`` ``elected`` / ``resigned``.
* Duties, ``controller/KafkaController.scala``, ``PartitionStateMachine.scala``, ``ReplicaStateMachine.scala``:

  - on failover the controller reads the live brokers (``/brokers/ids``) and every topic's assignment, and
    re-reads every partition state (``initializeControllerContext`` / ``initializePartitionState``) and
    continues from them: partitions without a live leader are elected (``triggerOnlinePartitionStateChange``),
    every state it writes carries *its* controller epoch;
  - ``BrokerChangeListener``: ``/brokers/ids`` children: ``broker_change`` with ``live`` / ``dead`` / ``added``
    (also once at failover: ``dead`` are the brokers gone since the previous controller was seen, itself
    included, so the death of a controller is detected by its successor's event);
    ``onBrokerFailure`` and ``onBrokerStartup`` become one pass over every partition with
    :func:`coordinator.core.replication.decisions.after_broker_change` (new leader from the live ISR, leader -1 when
    none, dead followers out of the ISR, offline partitions elected again when a broker returns);
  - ``TopicChangeListener`` / ``PartitionModificationsListener``: a new topic or partition gets its first state
    (:func:`~coordinator.core.replication.decisions.initial_state`), written with ``create`` (an existing znode: the
    state is decided from what is there instead, never overwritten blindly);
  - every write to an existing state znode is a ``set`` conditional on the zkVersion just read
    (``ReplicationUtils.updateLeaderAndIsr``); a lost write is re-read and decided again; a state written by a
    newer controller aborts the decision (``StateChangeFailedException``). Each write emits ``partition_state``
    with its ``reason`` and the version after it.
  - a decision writes nothing once its term is over or the client is on another session than the one the broker
    was elected under (a session lost mid-decision; 0.9 has that hole: :meth:`Controller._may_write`).

DECIDED deviations (see also :mod:`coordinator.zookeeper.registration`): no LeaderAndIsr / UpdateMetadata requests (kio has no
schema for them): brokers watch the state znodes themselves. 0.9 makes one write per dead replica; this makes one
per partition per broker change (same final state, :mod:`coordinator.core.replication.decisions`). No partition
reassignment, preferred replica election, controlled shutdown or topic deletion.

Threads: all controller work runs in order on one worker thread of its own (ZooKeeper watch callbacks only hand
work to it), so decisions never interleave. Watches set up by one term as controller stop at their next firing
once the broker resigned (the term is a generation number).
"""

from __future__ import annotations

import concurrent.futures
import contextlib
import logging
import threading
import time
from collections.abc import Callable
from typing import Any

from kazoo.client import KazooClient
from kazoo.exceptions import BadVersionError, ConnectionLoss, KazooException, NodeExistsError, NoNodeError
from kazoo.handlers.threading import KazooTimeoutError

from coordinator.config import ReplicationConfig
from coordinator.core.replication.decisions import after_broker_change, initial_state
from coordinator.core.replication.election import ControllerMoved, StateChangeFailed
from coordinator.core.replication.errors import MalformedState
from coordinator.core.replication.state import (
    CONTROLLER_EPOCH_PATH,
    CONTROLLER_PATH,
    PartitionState,
    decode_controller,
    decode_controller_epoch,
    decode_partition_state,
    encode_controller,
    encode_controller_epoch,
    encode_partition_state,
    partition_state_path,
)
from harness.kernel.history import History
from legacy_zk.paths import BROKER_IDS, BROKER_TOPICS, MalformedZnode, decode_topic_replicas, topic_path

__all__ = ["Controller"]

log = logging.getLogger("coordinator")

#: How often a decision is re-read and retried after its conditional write lost (each loss means another
#: writer moved the znode in between: the partition's leader writing its ISR).
MAX_WRITE_ATTEMPTS = 20
#: How often a new controller's failover reads are retried after a lost connection before it resigns.
FAILOVER_ATTEMPTS = 5
#: Back-off before running for controller again when giving up ``/controller`` failed (connection down).
ELECTION_RETRY_S = 0.5

_ZK_ERRORS = (KazooException, KazooTimeoutError)


class Controller:
    """One broker's part in the controller election and, while it holds ``/controller``, the controller's duties.

    ``controller_epoch`` is this broker's epoch as controller, None when it is not the controller;
    ``controller_id`` is the holder of ``/controller`` as last seen (None: absent). Call :meth:`start` once the
    broker is registered, :meth:`session_lost` when its ZooKeeper session expires and :meth:`stop` before
    closing the client.
    """

    def __init__(
        self,
        client: KazooClient,
        broker_id: int,
        config: ReplicationConfig,
        history: History,
        clock_ms: Callable[[], int] = lambda: int(time.time() * 1000),
    ) -> None:
        self.client = client
        self.broker_id = broker_id
        self.config = config
        self.history = history
        self.clock_ms = clock_ms
        self.controller_epoch: int | None = None
        self.controller_id: int | None = None
        self._generation = 0
        #: The ZooKeeper session id this broker became controller under (writes under another are refused).
        self._term_session: int | None = None
        self._stopping = False
        self._work = concurrent.futures.ThreadPoolExecutor(1, thread_name_prefix="zk-controller")
        self._lock = threading.Lock()
        #: ``/brokers/ids`` as this broker last saw it (maintained whether controller or not), so a new controller
        #: can tell which brokers died since (``broker_change`` at failover).
        self._seen_live: set[int] = set()
        #: ``/brokers/ids`` as seen while the last controller held ``/controller`` (itself included): a new
        #: controller's ``dead`` is what left since, the old controller first among them, whichever of the two
        #: watches (``/brokers/ids``, ``/controller``) fired first when it died.
        self._live_under_holder: set[int] = set()
        # controller context (valid while controller_epoch is not None; only the worker thread touches it)
        self._live: set[int] = set()
        self._assignments: dict[str, dict[int, tuple[int, ...]]] = {}

    # ------------------------------------------------------------------ life cycle

    def start(self) -> None:
        """Watch ``/controller`` (and ``/brokers/ids``) and run for controller."""
        self.client.ChildrenWatch(BROKER_IDS, self._remember_live)
        self.client.DataWatch(CONTROLLER_PATH, self._on_controller_znode)

    def session_lost(self) -> None:
        """The ZooKeeper session expired: the ephemeral ``/controller`` is gone, so resign (0.9 handleNewSession)."""
        self._submit(self._resign, "session lost")

    def stop(self) -> None:
        """Stop taking decisions, without waiting for one under way (it may be blocked on a ZooKeeper request
        while disconnected); the caller then closes the session, which frees ``/controller`` and fails such a
        request, and calls :meth:`join`."""
        self._stopping = True
        self._submit(self._resign, "shutdown")
        self._work.shutdown(wait=False, cancel_futures=False)

    def join(self) -> None:
        """Wait for the worker thread to finish (after the session was closed)."""
        self._work.shutdown(wait=True)

    def wait_idle(self, timeout: float = 10.0) -> None:
        """Block until the work queued so far is done (tests and shutdown)."""
        self._work.submit(lambda: None).result(timeout)

    def _submit(self, fn: Callable[..., Any], *args: Any) -> None:
        if self._stopping and fn != self._resign:
            return
        with contextlib.suppress(RuntimeError):  # shut down
            self._work.submit(self._guarded, fn, *args)

    def _guarded(self, fn: Callable[..., Any], *args: Any) -> None:
        try:
            fn(*args)
        except _ZK_ERRORS as e:
            log.warning("controller work of broker %d interrupted: %r", self.broker_id, e)
        except Exception:
            log.exception("controller work of broker %d failed", self.broker_id)

    def _emit(self, kind: str, **fields: Any) -> None:
        self.history.emit(kind, impl="coordinator", broker_id=self.broker_id, **fields)

    # ------------------------------------------------------------------ election

    def _remember_live(self, children: list[str]) -> bool:
        with self._lock:
            self._seen_live = {int(c) for c in children if c.isdigit()}
        return not self._stopping

    def _on_controller_znode(self, data: bytes | None, _stat: Any) -> bool:
        if self._stopping:
            return False
        if data is None:
            self.controller_id = None
            self._submit(self._elect)
            return True
        try:
            holder = decode_controller(data)
        except MalformedState as e:
            log.warning("%s", e)
            return True
        self.controller_id = holder
        if holder != self.broker_id:
            with self._lock:
                self._live_under_holder = self._seen_live | {holder}
            self._submit(self._resign_if_controller, holder)
        elif self.controller_epoch is None:
            # /controller names this broker but it took no epoch: a create whose answer was lost, or a znode of
            # an earlier session of this broker; _elect tells them apart by the znode's ephemeral owner
            self._submit(self._elect)
        return True

    def _elect(self) -> None:
        """``ZookeeperLeaderElector.elect`` (worker thread).

        A lost connection while creating or reading ``/controller`` (the create may or may not have landed) is
        not the end of the election: 0.9's ``elect`` catches any error, resigns and runs again, and its ZkClient
        retries every request until connected (``ZkClient.retryUntilConnected``). Here the election runs again
        after :data:`ELECTION_RETRY_S`; a create that had landed is then found as this session's own znode and
        the election continues from the epoch step (no controller is left unelected)."""
        if self._stopping or self.controller_epoch is not None:
            return
        try:
            self.client.create(
                CONTROLLER_PATH, encode_controller(self.broker_id, self.clock_ms()), ephemeral=True
            )
        except NodeExistsError:
            try:
                data, stat = self.client.get(CONTROLLER_PATH)
            except NoNodeError:
                return  # the holder just resigned: its deletion fires the watch again
            except _ZK_ERRORS as e:
                self._elect_later(e)
                return
            session = self.client.client_id
            if session is None or stat.ephemeralOwner != session[0]:
                self.controller_id = decode_controller(data)
                return
            # ours already: a create retried after a connection loss had landed
        except _ZK_ERRORS as e:
            self._elect_later(e)
            return
        try:
            epoch = self._increment_epoch()
        except (ControllerMoved, *_ZK_ERRORS) as e:
            # 0.9 elect: any error while becoming controller -> resign(), which deletes /controller
            log.warning("broker %d lost the controller election: %r", self.broker_id, e)
            self._give_up_controller_znode()
            return
        session = self.client.client_id
        self._term_session = session[0] if session is not None else None
        self.controller_id = self.broker_id
        self.controller_epoch = epoch
        self._generation += 1
        log.info("broker %d is the controller (epoch %d)", self.broker_id, epoch)
        self._emit("controller", phase="elected", controller_epoch=epoch)
        for attempt in range(FAILOVER_ATTEMPTS):
            try:
                self._on_failover(self._generation)
                return
            except ConnectionLoss:
                log.warning(
                    "controller failover of broker %d: connection lost (attempt %d)", self.broker_id, attempt
                )
        self._resign("failover failed")
        self._give_up_controller_znode()

    def _give_up_controller_znode(self) -> None:
        """Delete ``/controller`` if this session holds it; when that fails too (still disconnected), run for
        controller again a little later: finding its own znode, it then takes the epoch step again."""
        try:
            self._delete_own_controller_znode()
        except _ZK_ERRORS as e:
            log.warning("broker %d could not delete its /controller: %r", self.broker_id, e)
            self._elect_later(e)

    def _elect_later(self, error: BaseException) -> None:
        """Run for controller again after :data:`ELECTION_RETRY_S` (the connection is down: ``error``)."""
        if self._stopping:
            return
        log.warning("broker %d: controller election interrupted (%r); retrying", self.broker_id, error)
        timer = threading.Timer(ELECTION_RETRY_S, self._submit, (self._elect,))
        timer.daemon = True
        timer.start()

    def _increment_epoch(self) -> int:
        """``KafkaController.incrementControllerEpoch``: epoch + 1, conditional on the version read."""
        try:
            data, stat = self.client.get(CONTROLLER_EPOCH_PATH)
        except NoNodeError:
            try:
                self.client.create(CONTROLLER_EPOCH_PATH, encode_controller_epoch(1))
            except NodeExistsError:
                raise ControllerMoved(
                    "/controller_epoch was created by another controller meanwhile"
                ) from None
            return 1
        seen = decode_controller_epoch(data)
        try:
            self.client.set(CONTROLLER_EPOCH_PATH, encode_controller_epoch(seen + 1), version=stat.version)
        except BadVersionError:
            raise ControllerMoved(f"/controller_epoch moved past version {stat.version}") from None
        return seen + 1

    def _delete_own_controller_znode(self) -> None:
        """``ZookeeperLeaderElector.resign``: delete ``/controller`` if this session holds it."""
        try:
            _, stat = self.client.get(CONTROLLER_PATH)
            session = self.client.client_id
            if session is not None and stat.ephemeralOwner == session[0]:
                self.client.delete(CONTROLLER_PATH, version=stat.version)
        except (NoNodeError, BadVersionError):
            pass

    def _resign_if_controller(self, holder: int) -> None:
        if self.controller_epoch is not None:
            self._resign(f"/controller now held by broker {holder}")

    def _resign(self, why: str) -> None:
        """``onControllerResignation``: stop acting (the watches of this term stop at their next firing)."""
        if self.controller_epoch is None:
            return
        epoch, self.controller_epoch = self.controller_epoch, None
        self._generation += 1
        self._assignments.clear()
        log.info("broker %d resigned as controller (epoch %d): %s", self.broker_id, epoch, why)
        self._emit("controller", phase="resigned", controller_epoch=epoch)

    def _current(self, generation: int) -> bool:
        return not self._stopping and self.controller_epoch is not None and generation == self._generation

    def _may_write(self, generation: int) -> bool:
        """Whether a state write of term ``generation`` may go out now: the term is current *and* the client is
        still on the session the broker was elected under. A session lost in the middle of a decision is only
        seen by the worker after it (its resignation is queued behind the decision), and kazoo then writes on the
        new session; 0.9 has the same hole. Checked before every write; a session lost between
        the check and the write is not covered (a ZooKeeper multi with a check of ``/controller_epoch``'s
        zkVersion, as later Kafka versions do, would close it)."""
        session = self.client.client_id
        return self._current(generation) and session is not None and session[0] == self._term_session

    # ------------------------------------------------------------------ duties

    def _on_failover(self, generation: int) -> None:
        """``onControllerFailover``: the live brokers, then every topic (each re-read and continued)."""
        live = {int(c) for c in self.client.get_children(BROKER_IDS) if c.isdigit()}
        with self._lock:
            before = set(self._live_under_holder or self._seen_live)
        self._live = live
        self._emit_broker_change(live, before - live, live - before)
        self.client.ChildrenWatch(BROKER_IDS, self._watch(generation, self._on_brokers))
        self.client.ChildrenWatch(BROKER_TOPICS, self._watch(generation, self._on_topics))

    def _watch(self, generation: int, handler: Callable[..., None]) -> Callable[..., bool]:
        """A watch callback of this term: hands ``handler`` to the worker; stops once the term is over."""

        def callback(*args: Any) -> bool:
            if not self._current(generation):
                return False
            self._submit(self._in_term, generation, handler, *args)
            return True

        return callback

    def _in_term(self, generation: int, handler: Callable[..., None], *args: Any) -> None:
        if self._current(generation):
            handler(generation, *args)

    def _emit_broker_change(self, live: set[int], dead: set[int], added: set[int]) -> None:
        assert self.controller_epoch is not None
        self._emit(
            "broker_change",
            live=sorted(live),
            dead=sorted(dead),
            added=sorted(added),
            controller_epoch=self.controller_epoch,
        )

    def _on_brokers(self, generation: int, children: list[str]) -> None:
        """``BrokerChangeListener``: ``onBrokerFailure`` / ``onBrokerStartup`` for every partition."""
        live = {int(c) for c in children if c.isdigit()}
        dead, added = self._live - live, live - self._live
        if not dead and not added:
            return
        self._live = live
        log.info("controller %d: brokers %s died, %s started", self.broker_id, sorted(dead), sorted(added))
        self._emit_broker_change(live, dead, added)
        for topic, parts in list(self._assignments.items()):
            for p, assigned in sorted(parts.items()):
                if not self._current(generation):
                    return
                self._decide(generation, topic, p, assigned)

    def _on_topics(self, generation: int, children: list[str]) -> None:
        """``TopicChangeListener``: watch each new topic's assignment."""
        for name in children:
            if name not in self._assignments:
                self._assignments[name] = {}
                self.client.DataWatch(topic_path(name), self._watch(generation, self._topic_data(name)))

    def _topic_data(self, name: str) -> Callable[..., None]:
        def on_assignment(generation: int, data: bytes | None, *_stat_event: Any) -> None:
            if data is None:
                self._assignments.pop(name, None)
                return
            try:
                parts = decode_topic_replicas(topic_path(name), data)
            except MalformedZnode as e:
                log.warning("controller: %s", e)
                return
            known = self._assignments.setdefault(name, {})
            for p, replicas in sorted(parts.items()):
                assigned = tuple(replicas)
                if known.get(p) == assigned:
                    continue
                known[p] = assigned
                if not self._current(generation):
                    return
                self._decide(generation, name, p, assigned)

        return on_assignment

    def _decide(self, generation: int, topic: str, partition: int, assigned: tuple[int, ...]) -> None:
        """Read the partition's state and write what the rules decide, conditionally; retried on a lost write."""
        epoch = self.controller_epoch
        assert epoch is not None
        path = partition_state_path(topic, partition)
        for _ in range(MAX_WRITE_ATTEMPTS):
            try:
                if self._decide_once(generation, topic, partition, assigned, path, epoch):
                    return
            except ConnectionLoss:
                # the request may or may not have landed: re-read and decide again (every write is conditional,
                # so a landed one makes the next decision None)
                log.info("controller: connection lost while deciding %s; re-reading", path)
        log.warning("controller: gave up on %s after %d attempts", path, MAX_WRITE_ATTEMPTS)

    def _decide_once(
        self, generation: int, topic: str, partition: int, assigned: tuple[int, ...], path: str, epoch: int
    ) -> bool:
        """One read-decide-write round; False when the conditional write lost (decide again). Nothing is written
        once the term is over or the session changed (:meth:`_may_write`)."""
        try:
            data, stat = self.client.get(path)
        except NoNodeError:
            state = initial_state(assigned, self._live, epoch)
            if state is None:
                log.info("controller: no live replica of %s-%d among %s yet", topic, partition, assigned)
                return True
            if not self._may_write(generation):
                log.info("controller %d: term over or session changed; not creating %s", self.broker_id, path)
                return True
            try:
                self.client.create(path, encode_partition_state(state), makepath=True)
            except NodeExistsError:
                return False  # someone created it meanwhile: decide from what is there
            self._emitted_write(topic, partition, state, 0, "new_partition")
            return True
        try:
            current = decode_partition_state(path, data)
            decision = after_broker_change(
                assigned, current, self._live, epoch, self.config.unclean_leader_election
            )
        except MalformedState as e:
            log.warning("controller: %s", e)
            return True
        except StateChangeFailed as e:
            log.warning("controller %d (epoch %d) deposed? %s", self.broker_id, epoch, e)
            return True
        if decision is None:
            return True
        if not self._may_write(generation):
            log.info("controller %d: term over or session changed; not writing %s", self.broker_id, path)
            return True
        try:
            new_stat = self.client.set(path, encode_partition_state(decision.state), version=stat.version)
        except BadVersionError:
            log.info("controller: %s moved past version %d; re-reading", path, stat.version)
            return False
        self._emitted_write(topic, partition, decision.state, new_stat.version, decision.reason)
        return True

    def _emitted_write(
        self, topic: str, partition: int, state: PartitionState, version: int, reason: str
    ) -> None:
        log.info(
            "controller %d: %s-%d leader %d epoch %d isr %s (%s, zkVersion %d)",
            self.broker_id,
            topic,
            partition,
            state.leader,
            state.leader_epoch,
            list(state.isr),
            reason,
            version,
        )
        self._emit(
            "partition_state",
            topic=topic,
            partition=partition,
            leader=state.leader,
            leader_epoch=state.leader_epoch,
            isr=list(state.isr),
            controller_epoch=state.controller_epoch,
            zk_version=version,
            reason=reason,
        )
