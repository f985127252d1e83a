"""One ZooKeeper-era consumer group member (``ZookeeperConsumerConnector`` of Kafka 0.8.2).

Contract
--------
:class:`LegacyZkMember` ``start()`` writes ``ready``, connects a kazoo session (``Unreachable`` when
ZooKeeper does not answer within ``zookeeper.connection.timeout.ms``), writes ``started``, with
``offsets.storage=kafka`` locates the group's offset manager (0.8.2.2's constructor called
``ensureOffsetManagerConnected()`` before registering: retried every ``offsets.channel.backoff.ms``,
one log line per failure; a member that never finds one never registers, and a shutdown meanwhile
makes ``start()`` return False), registers the ephemeral
``/consumers/<g>/ids/<id>`` with the 0.8 JSON, subscribes to the children of ``/consumers/<g>/ids``
and to the data of ``/brokers/topics/<t>`` per topic, starts the rebalance thread and the auto
committer, and runs the first synced rebalance on the caller (spec 1.5). It returns True when that
rebalance succeeded and False when it gave up (0.8 threw ``ConsumerRebalanceFailedException`` to the
application here; the connector itself stayed registered and reacting, and so does this member).

Then, until :meth:`close`:

* ZooKeeper is reached as the 0.8.2 consumer reached it, through ZkClient 0.3 (spec 1.15): every
  request waits out a connection loss or an expiry and is reissued (``retryUntilConnected``, see
  :mod:`legacy_zk.zkclient`), so a blip stalls a rebalance attempt or a commit and fails neither;
  notifications are handled on one event thread (``ZkEventThread``) that re-arms each watch with
  two requests before calling the listener (:mod:`legacy_zk.listeners`); the session reconnects
  with the ZooKeeper 3.4.6 Java client's timing (:mod:`legacy_zk.reconnect`);
* a watch notification sets a flag; the rebalance thread (``<id>_watcher_executor``) waits for it
  up to 1000 ms and runs one synced rebalance per wake-up, so bursts coalesce (spec 1.6);
* a synced rebalance (1.8) makes up to ``rebalance.max.retries`` attempts, each (1.9): read the own
  registration and the brokers; stop fetching and commit (auto commit); delete the owner znodes it
  holds; read ids, subscriptions and partitions; assign on this view; read the start offsets; create
  the owner znodes. A ``NodeExists`` fails the attempt and rolls back its claims (1.11). A failed
  attempt stops fetching, commits, sleeps ``rebalance.backoff.ms``. When all attempts failed the
  member gives up: registered, owning nothing, until the next watch event (log + history);
* session expiry (1.7, 1.15): ``handleNewSession`` runs on the event thread as soon as the expiry is
  known, outside the rebalance lock: forget ownership (the znodes died with the session), re-register
  (once a new session is connected), then a synced rebalance, which alone waits for the lock (a
  rebalance in flight finishes first, in the new session). ZkClient then re-fires every listener,
  so a second (coalesced) rebalance follows;
* a plain disconnect changes nothing: the fetcher keeps fetching (the split-brain ingredient);
* offsets are stored as 0.8.2.2 stored them (:mod:`legacy_zk.offsets`): ``offsets.storage=zookeeper``
  (default) commits to ``/consumers/<g>/offsets/<t>/<p>`` as the next offset to read (1.12);
  ``offsets.storage=kafka`` commits with OffsetCommit to the group's offset manager (a broker, found
  with FindCoordinator: :mod:`legacy_zk.offset_channel`), and with ``dual.commit.enabled`` also to
  ZooKeeper for each partition the broker accepted; start offsets are fetched from the storage (the
  larger of both with dual commit), one ``offset_fetch`` event per partition; the shutdown commit
  retries ``offsets.commit.max.retries`` times (0.8.2.2's rule); ZooKeeper writes are plain, or, with
  ``offsets.commit.fenced``, only while the owner znode belongs to this session, by a
  ``multi`` of (check owner version, set offset at the version last read/written); a commit refused
  because someone else wrote the offset znode re-reads its version, so the next commit can succeed;
* with ``takeover.delay.ms``, an attempt that would take over partitions of a vanished owner waits
  that long, then reads the group again and claims on that fresh view.

Every ZooKeeper request, watch notification, attempt, conflict, claim, release, record and commit
is an event in the history (``impl: legacy_zk``, ``group``, ``member`` on each).

Where each part lives: the member's life is a :class:`legacy_zk.states.Lifecycle` machine (checked
transitions); the synced rebalance and its attempts are :class:`legacy_zk.attempt.Rebalancer`
(against the :class:`legacy_zk.zkport.ZkPort` this member's :class:`legacy_zk.zkclient.CountingZk`
implements); watches are :mod:`legacy_zk.watches`; offsets :mod:`legacy_zk.offsets`; owned
partitions :mod:`legacy_zk.registry`. This module keeps the IO shell: the kazoo session, threads,
registration, session expiry and shutdown.

The member runs on kazoo's threading handler (default; can fetch records) or on its gevent handler
(many members per process; coordination only, see :mod:`harness.members.legacy_host`). All its own concurrency
uses the handler's primitives, so the same code serves both.

Decisions where 0.8.2 and a port differ (and why):

* registration NodeExists: 0.8.2 backs off a session timeout and retries while the node exists
  (ZOOKEEPER-1740 work-around), even when the node is its *own* from the current session, which
  loops forever (KAFKA-1387). Here a node whose ``ephemeralOwner`` is this session counts as
  registered (the 0.10 ``ZKCheckedEphemeral`` rule); any other node is waited out as in 0.8.2, with one
  read of it per loop where 0.8.2.2 made two (``ZkUtils.createEphemeralPathExpectConflict``'s ``readData``,
  then ``readDataMaybeNull`` in ``createEphemeralPathExpectConflictHandleZKBug``);
* the shutting-down flag is checked before every attempt (0.10) and backoff sleeps end early at
  shutdown, so closing never waits for a whole retry loop (0.8.2.2's ``syncedRebalance`` looks at it only
  before its first attempt, so a leave during a rebalance made every remaining attempt first); nothing
  else changes;
* a ZooKeeper error other than NodeExists while claiming: 0.8 propagated it and left the claims of
  that attempt behind (owned by a live session, invisible to its own release step); here they are
  rolled back best-effort before the attempt fails;
* an exception out of the rebalance after a session expiry (spec 1.8, UNVERIFIED): ZkClient's event
  thread catches listener exceptions and logs them (``ZkEventThread.run``: "Error handling event"),
  so the consumer stays registered without partitions; this member does the same (gave_up);
* kazoo forgets its watches on every disconnect, where the Java client replayed them to the server
  (``SetWatches``) and got the events it had missed: after a reconnect within the session every
  subscription is re-armed (the same two requests) and a change missed meanwhile is delivered as a
  notification with ``via: reconnect`` (:mod:`legacy_zk.listeners`);
* closing ends every wait for a connection (retryUntilConnected would wait for an unreachable
  ZooKeeper forever, and 0.8's shutdown waited for the rebalance lock): an attempt ended so has the
  outcome ``shutdown``, not a failure;
* malformed znodes written by someone else are reported (``malformed`` event, once per version)
  and skipped: a peer registration that does not parse is left out of the view, an unparsable topic
  znode counts as no partitions, an unparsable offset as no offset. 0.8 threw on the first and
  failed every attempt.
"""

from __future__ import annotations

import json
import logging
import time
from collections.abc import Callable, Mapping
from typing import Any

from kazoo.client import KazooClient
from kazoo.protocol.states import KazooState, KeeperState

from harness.kernel.errors import ConfigError, Unreachable
from harness.kernel.history import History, NullHistory
from legacy_zk import paths
from legacy_zk.attempt import Rebalancer, emit_each
from legacy_zk.config import ConsumerConfig
from legacy_zk.fetcher import RecordFetcher
from legacy_zk.ids import TopicPartition, make_consumer_id
from legacy_zk.listeners import EventThread
from legacy_zk.offset_channel import KafkaOffsetChannel
from legacy_zk.offsets import OffsetChannelClosed, OffsetStore
from legacy_zk.reads import GroupReader, MalformedLog
from legacy_zk.reconnect import JavaReconnectPolicy, install
from legacy_zk.registry import OwnedPartition, Registry
from legacy_zk.states import (
    ACTIVE,
    CLIENT_STOPPING,
    LIFECYCLE_TRANSITIONS,
    SHUTTING_DOWN,
    Lifecycle,
    StateMachine,
)
from legacy_zk.watches import WAKE_ONLY, GroupWatches
from legacy_zk.zkclient import CountingZk
from legacy_zk.zkport import NodeExistsError, NoNodeError

log = logging.getLogger("legacy_zk")

IMPL = "legacy_zk"

__all__ = ["IMPL", "STAT_NAMES", "LegacyZkMember", "OwnedPartition"]

STAT_NAMES = (
    "watches",
    "rebalances",
    "attempts",
    "failed_attempts",
    "gave_up",
    "conflicts",
    "claims",
    "releases",
    "records",
    "commits",
    "commits_rejected",
    "session_expiries",
    "zk_retries",
)


class LegacyZkMember:
    """One 0.8 high-level consumer (see the module docstring for the contract).

    Its life is :attr:`lifecycle` (:class:`legacy_zk.states.Lifecycle`, transitions checked); its
    synced rebalance is :attr:`rebalancer` (:class:`legacy_zk.attempt.Rebalancer`, whose state is a
    :class:`legacy_zk.states.RebalanceState`).
    """

    def __init__(
        self,
        config: ConsumerConfig,
        history: History | None = None,
        handler: str = "threading",
        on_assignment: Callable[[LegacyZkMember, str, list[TopicPartition]], None] | None = None,
    ) -> None:
        self.config = config.validate()
        if handler not in ("threading", "gevent"):
            raise ConfigError(f"unknown kazoo handler {handler!r} (threading or gevent)")
        if handler == "gevent" and config.fetch:
            raise ConfigError(
                "a gevent-hosted member runs coordination-only (kafka-python is thread-based): set herdlab.fetch=false"
            )
        if handler == "gevent" and config.offsets_storage == "kafka":
            raise ConfigError(
                "offsets.storage=kafka: a gevent-hosted member cannot reach the broker (kafka-python is thread-based)"
            )
        self.handler_name = handler
        self.group = config.group_id
        self.id = make_consumer_id(config.group_id, config.consumer_id)
        self.history: History = history or NullHistory()
        self.on_assignment = on_assignment
        self.strategy = config.partition_assignment_strategy
        self.lifecycle: StateMachine[Lifecycle] = StateMachine(
            f"member {self.id}", Lifecycle.NEW, LIFECYCLE_TRANSITIONS
        )
        #: kazoo reported the session lost; the next CONNECTED is a new session (not a resync)
        self._session_lost = False

        if handler == "gevent":
            from kazoo.handlers.gevent import SequentialGeventHandler

            h = SequentialGeventHandler()
        else:
            from kazoo.handlers.threading import SequentialThreadingHandler

            h = SequentialThreadingHandler()
        session_s = config.zookeeper_session_timeout_ms / 1000.0
        self._client = KazooClient(hosts=config.zookeeper_connect, timeout=session_s, handler=h)
        self.reconnect_policy = JavaReconnectPolicy(
            random_ms=config.zk_reconnect_random_ms,
            delay_ms=config.zk_reconnect_delay_ms,
            sleep_func=h.sleep_func,
            expired=lambda: self._client.client_state == KeeperState.EXPIRED_SESSION,
            interrupted=lambda: (
                self.lifecycle.state in CLIENT_STOPPING
            ),  # a reconnect wait must not delay stop()
        )
        install(self._client, self.reconnect_policy)
        self.zk = CountingZk(self._client, self._on_zk_request, self._on_zk_retry)
        self.handler = h
        self.stats: dict[str, int] = {k: 0 for k in STAT_NAMES}
        self._events = EventThread(h, f"{self.id}_zk_event_thread")
        self.watches = GroupWatches(
            self.zk,
            self._events,
            h,
            self.group,
            config.topics,
            emit=self._emit,
            stats=self.stats,
            active=self._active,
            tag=self._tag,
        )

        # 0.8's rebalanceLock; everything that rebalances, re-registers or shuts down holds it.
        self._rebalance_lock = h.rlock_object()
        self._shutdown_event = h.event_object()
        self.registry = Registry()
        #: the offsets channel to the group's offset manager (offsets.storage=kafka only)
        self.offset_channel: KafkaOffsetChannel | None = None
        if config.offsets_storage == "kafka":
            self.offset_channel = KafkaOffsetChannel(
                group=self.group,
                bootstrap=self._offset_manager_servers,
                client_id=config.client_id or self.id,
                socket_timeout_ms=config.offsets_channel_socket_timeout_ms,
                backoff_ms=config.offsets_channel_backoff_ms,
                stopping=self.shutting_down,
                wait=self.wait,
                tag=self._tag,
                sleep=h.sleep_func,
            )
        self.offsets = OffsetStore(
            self.zk,
            self.group,
            self.registry,
            fenced=config.offsets_commit_fenced,
            emit=self._emit,
            stats=self.stats,
            lock=h.lock_object(),
            tag=self._tag,
            storage=config.offsets_storage,
            dual=config.dual_commit,
            manager=self.offset_channel,
            max_retries=config.offsets_commit_max_retries,
            backoff_ms=config.offsets_channel_backoff_ms,
            shutting_down=self.shutting_down,
            sleep=h.sleep_func,
        )
        malformed = MalformedLog(self._report_malformed)
        self.rebalancer = Rebalancer(
            zk=self.zk,
            group=self.group,
            member_id=self.id,
            strategy=self.strategy,
            topics=config.topics,
            max_retries=config.rebalance_max_retries,
            backoff_ms=config.backoff_ms,
            takeover_delay_ms=config.takeover_delay_ms,
            reader=GroupReader(self.zk, self.group, self.id, config.exclude_internal_topics, malformed),
            registry=self.registry,
            offsets=self.offsets,
            hooks=self,
            emit=self._emit,
            stats=self.stats,
            offsets_storage=config.offsets_storage,
            dual_commit=config.dual_commit,
            offset_manager=self.offset_channel,
            offsets_backoff_ms=config.offsets_channel_backoff_ms,
        )
        self._fetcher: RecordFetcher | None = None
        if config.fetch:
            self._fetcher = RecordFetcher(
                bootstrap=self._bootstrap_servers,
                auto_offset_reset=config.auto_offset_reset,
                on_record=self.record_processed,
                on_position=self.registry.position_known,
                on_error=lambda msg: self._emit("fetch_error", error=msg),
                client_id=config.client_id or self.id,
                name=f"{self.id}_fetcher",
            )

    # -- history and logging --------------------------------------------------------------------
    def _emit(self, kind: str, /, **fields: Any) -> None:
        self.history.emit(
            kind, source=self.config.name or self.id, impl=IMPL, group=self.group, member=self.id, **fields
        )

    def _on_zk_request(self, op: str, path: str) -> None:
        self._emit("zk_request", op=op, path=path)

    def _on_zk_retry(self, op: str, path: str, error: BaseException) -> None:
        """A request failed for want of a connection; it is reissued once connected (retryUntilConnected)."""
        self.stats["zk_retries"] += 1
        log.info(
            "%s: %s %s interrupted (%s); reissuing once connected",
            self._tag(),
            op,
            path,
            error.__class__.__name__,
        )
        self._emit("zk_retry", op=op, path=path, error=error.__class__.__name__)

    def _report_malformed(self, err: paths.MalformedZnode) -> None:
        log.warning("%s: %s; skipped", self._tag(), err)
        self._emit("malformed", path=err.path, error=str(err))

    def _tag(self) -> str:
        return f"group={self.group} member={self.id}"

    # -- public state ---------------------------------------------------------------------------
    def owned(self) -> frozenset[TopicPartition]:
        """Partitions this member owns now (owner znodes created by its last successful attempt)."""
        return self.registry.owned()

    def consumed_offsets(self) -> dict[TopicPartition, int]:
        """Next offset to read per owned partition (-1 while auto.offset.reset is pending)."""
        return self.registry.consumed()

    @property
    def gave_up(self) -> bool:
        """True from a synced rebalance giving up until one succeeds."""
        return self.rebalancer.gave_up

    @property
    def session_id(self) -> int | None:
        return self.zk.session_id()

    def _active(self) -> bool:
        """Watches are re-armed and notifications start rebalances (not quiesced, not closing)."""
        return self.lifecycle.state in ACTIVE

    # -- AttemptHooks (legacy_zk.attempt) -------------------------------------------------------
    def shutting_down(self) -> bool:
        """True once :meth:`close` began (0.8's ``isShuttingDown``)."""
        return self.lifecycle.state in SHUTTING_DOWN

    def wait(self, seconds: float) -> bool:
        """Sleep up to ``seconds``; True when closing ended the sleep."""
        return bool(self._shutdown_event.wait(seconds))

    def close_fetchers(self) -> None:
        """``closeFetchersForQueues``: stop fetching (drop what is queued), then commit (auto commit)."""
        if self._fetcher is not None:
            self._fetcher.stop()
        if self.config.auto_commit_enable:
            self.offsets.commit("rebalance")

    def start_fetching(self, offsets: Mapping[TopicPartition, int]) -> None:
        if self._fetcher is not None:
            self._fetcher.start(dict(offsets))

    def watch_brokers(self) -> None:
        self.watches.watch_brokers()

    def find_leaders(self, read_brokers: Callable[[], object]) -> None:
        """The leader finder's one pass (:meth:`legacy_zk.attempt.AttemptHooks.find_leaders`) on a thread
        of its own. Only its ZooKeeper reads are kept: the record fetcher finds the partitions' leaders
        through kafka-python's metadata. A read that fails (the member closing) is logged."""

        def finder() -> None:
            try:
                read_brokers()
            except Exception as e:  # noqa: BLE001 - a leader finder's failure never stops the member
                log.info("%s: leader finder: %s", self._tag(), e.__class__.__name__)

        self._client.handler.spawn(finder)

    def assignment_changed(self, what: str, partitions: list[TopicPartition]) -> None:
        if self.on_assignment is not None:
            try:
                self.on_assignment(self, what, partitions)
            except Exception:  # noqa: BLE001 - a printing callback must not break the protocol
                log.exception("assignment callback failed")

    # -- life cycle -----------------------------------------------------------------------------
    def start(self) -> bool:
        """Connect, register, watch, rebalance once (see the module docstring). True = converged."""
        if not self.lifecycle.advance(Lifecycle.NEW, Lifecycle.STARTING):
            raise RuntimeError(
                f"a member starts once, before it is closed (it is {self.lifecycle.state.name})"
            )
        self._emit("ready")  # booted, about to connect: t0 of a join (harness.kernel.events)
        timeout_s = self.config.connection_timeout_ms / 1000.0
        try:
            self._client.start(timeout=timeout_s)
        except Exception as e:  # kazoo raises handler-specific timeout classes
            self.lifecycle.advance(Lifecycle.STARTING, Lifecycle.FAILED)
            self._client.stop()
            self._client.close()
            if self._fetcher is not None:
                self._fetcher.close()
            raise Unreachable(
                f"ZooKeeper at {self.config.zookeeper_connect} did not answer within "
                f"{self.config.connection_timeout_ms} ms (zookeeper.connection.timeout.ms): {e.__class__.__name__}"
            ) from None
        self.lifecycle.advance(Lifecycle.STARTING, Lifecycle.RUNNING)
        self._client.add_listener(self._on_state)
        self._emit(
            "started",
            topics=self.config.topics,
            session_id=self.session_id,
            handler=self.handler_name,
            fetch=self.config.fetch,
            config=self.config.as_properties(),
        )
        self._events.start()
        if self.offset_channel is not None:
            # 0.8.2.2's constructor: ensureOffsetManagerConnected() before registering in ZooKeeper and
            # before the auto committer: a member that finds no offset manager never joins the group
            try:
                self.offset_channel.connect()
            except OffsetChannelClosed as e:
                log.info("%s: not registered: %s", self._tag(), e)
                return False
        log.info("%s: connected (session 0x%x), registering", self._tag(), self.session_id or 0)
        self._register()
        self.watches.subscribe()  # reinitializeConsumer
        self.handler.spawn(self._watcher_executor)
        if self.config.auto_commit_enable:
            self.handler.spawn(self._auto_committer)
        return self._synced_rebalance(["start"])

    def quiesce(self) -> None:
        """Stop re-arming watches and starting rebalances (before a group is torn down: no teardown herd).

        Idempotent; does nothing to a member not started, or already quiesced or closing.
        """
        if self.lifecycle.advance(frozenset({Lifecycle.STARTING, Lifecycle.RUNNING}), Lifecycle.QUIESCED):
            self.watches.signal.set("quiesce")

    def close(self) -> None:
        """0.8 shutdown order: stop watches, auto commit, fetcher; commit; close the session."""
        if self.lifecycle.advance(Lifecycle.NEW, Lifecycle.CLOSED):
            if self._fetcher is not None:
                self._fetcher.close()
            return
        if not self.lifecycle.advance(
            frozenset({Lifecycle.STARTING, Lifecycle.RUNNING, Lifecycle.QUIESCED, Lifecycle.FAILED}),
            Lifecycle.CLOSING,
        ):
            return  # closing or closed already
        self._shutdown_event.set()
        self.watches.signal.set("quiesce")
        self.watches.signal.set("shutdown")
        # 0.8 waits for a rebalance in progress (rebalanceLock). A request waiting for ZooKeeper to
        # come back would wait forever (retryUntilConnected): end such waits now, so the rebalance
        # ends; one that is merely slow is waited for a bounded time, then the session is closed
        # under it (its pending requests fail and it ends).
        self.zk.shutdown()
        got = self._rebalance_lock.acquire(
            timeout=max(2.0, self.config.zookeeper_session_timeout_ms / 1000.0)
        )
        try:
            if not got:
                log.warning(
                    "%s: a rebalance in progress did not finish; closing the session under it", self._tag()
                )
            if self._fetcher is not None:
                self._fetcher.stop()
            if self.config.auto_commit_enable:
                if self._client.connected or self.config.offsets_storage == "kafka":
                    self.offsets.commit("shutdown")
                else:
                    log.warning(
                        "%s: not connected to ZooKeeper: offsets not committed at shutdown", self._tag()
                    )
            owned = self.registry.clear()
            if owned:
                emit_each(self._emit, "revoked", owned, reason="shutdown")
            self.lifecycle.transition(Lifecycle.STOPPING)
            try:
                self._client.stop()
            finally:
                self._client.close()
        finally:
            if got:
                self._rebalance_lock.release()
        self._events.stop()
        if self._fetcher is not None:
            self._fetcher.close()
        if self.offset_channel is not None:
            self.offset_channel.disconnect()
        self.lifecycle.transition(Lifecycle.CLOSED)
        self._emit("stopped", stats=dict(self.stats))
        log.info("%s: stopped", self._tag())

    # -- registration ---------------------------------------------------------------------------
    def _register(self) -> None:
        """Create the ephemeral id znode (``registerConsumerInZK``), see the module docstring."""
        path = paths.id_path(self.group, self.id)
        data = paths.encode_registration(self.config.topics, int(time.time() * 1000))
        while True:
            try:
                self.rebalancer.create_ephemeral(path, data)
                break
            except NodeExistsError:
                try:
                    _, stat = self.zk.get(path)
                except NoNodeError:
                    continue  # vanished meanwhile: retry at once (0.8.2 does the same)
                if stat.ephemeralOwner == self.session_id:
                    break  # our own create survived a connection loss
                log.info(
                    "%s: id znode still held by session 0x%x; waiting %d ms for it to expire",
                    self._tag(),
                    stat.ephemeralOwner,
                    self.config.zookeeper_session_timeout_ms,
                )
                if self._shutdown_event.wait(self.config.zookeeper_session_timeout_ms / 1000.0):
                    return
        # The password lets the harness's nemesis expire this session from outside (as a test tool
        # would: attach to the session, then close it); the run's history stays on this machine.
        self._emit(
            "registered", path=path, session_id=self.session_id, session_password=self.zk.session_password()
        )
        log.info("%s: registered %s", self._tag(), path)

    # -- events from ZooKeeper ------------------------------------------------------------------
    def _on_state(self, state: str) -> None:
        """kazoo connection listener (runs on kazoo's connection thread: never blocks)."""
        self._emit("zk_state", state=str(state), session_id=self.session_id)
        if self.shutting_down():
            return
        if state == KazooState.LOST:
            self._session_lost = True
            self.stats["session_expiries"] += 1
            log.warning("%s: ZooKeeper session expired", self._tag())
            # ZkClient.process(Expired): handleNewSession on the event thread, then fireAllEvents()
            self._events.send("new session", self._handle_new_session)
            self.watches.fire_all("new_session")
        elif state == KazooState.SUSPENDED:
            log.info("%s: ZooKeeper connection suspended; still fetching (as 0.8 did)", self._tag())
        elif state == KazooState.CONNECTED:
            if self._session_lost:
                self._session_lost = False  # the new session: the queued events go ahead now
            elif self._active():
                self.watches.resync()  # same session: re-arm (kazoo dropped its watches)

    # -- the rebalance thread -------------------------------------------------------------------
    def _watcher_executor(self) -> None:
        """``<id>_watcher_executor``: wait up to 1000 ms for the flag, then rebalance once."""
        log.debug("%s: watcher executor started", self._tag())
        while not self.shutting_down():
            try:
                reasons = self.watches.signal.wait_and_clear(1.0)
                if self.shutting_down():
                    break
                if not self._active():
                    continue
                real = [r for r in reasons if r not in WAKE_ONLY]
                if real:
                    self._synced_rebalance(real)
            except Exception:  # noqa: BLE001 - 0.8: "error during syncedRebalance", keep looping
                log.exception("%s: error during syncedRebalance", self._tag())
        log.debug("%s: watcher executor stopped", self._tag())

    def _handle_new_session(self) -> None:
        """``ZKSessionExpireListener.handleNewSession``, on the event thread (spec 1.7, 1.15).

        ``resetState`` and the re-registration run at once, outside the rebalance lock (the
        registration's create waits for the new session); only the synced rebalance waits for the
        lock, behind a rebalance in flight. Errors propagate to the event thread, which logs them.
        """
        if not self._active():
            return
        log.info("%s: session expired: releasing ownership, re-registering", self._tag())
        owned = self.registry.clear()  # resetState: the owner znodes died with the session
        if owned:
            emit_each(self._emit, "revoked", owned, reason="session_expired")
            self.assignment_changed("revoked", [])
        self._register()
        self._synced_rebalance(["new_session"])

    def _synced_rebalance(self, reasons: list[str]) -> bool:
        """Up to ``rebalance.max.retries`` attempts with backoff, under the rebalance lock (spec 1.8)."""
        with self._rebalance_lock:
            return self.rebalancer.synced_rebalance(reasons)

    def _offset_manager_servers(self) -> str | None:
        """Where to look for the offset manager: ``bootstrap.servers``, else the brokers registered
        under ``/brokers/ids`` now (``channelToAnyBroker``), else the last ones read (at shutdown)."""
        if self.config.bootstrap_servers:
            return self.config.bootstrap_servers
        brokers = self.rebalancer.brokers
        if not self.shutting_down():
            brokers = self.rebalancer.reader.read_cluster() or brokers
        return ",".join(f"{h}:{p}" for _i, h, p in brokers) or None

    def _bootstrap_servers(self) -> str | None:
        if self.config.bootstrap_servers:
            return self.config.bootstrap_servers
        return ",".join(f"{h}:{p}" for _i, h, p in self.rebalancer.brokers) or None

    # -- records and offsets --------------------------------------------------------------------
    def record_processed(self, tp: TopicPartition, offset: int, value: bytes | None) -> None:
        """The fetcher's callback: record ``offset`` of ``tp`` was handed to the application.

        Advances the consumed position (next offset = ``offset + 1``) when the partition is owned and
        writes a ``record`` event (``owned: false`` when it is not: a fetch that outlived ownership).
        """
        owned = self.registry.advance(tp, offset + 1)
        self.stats["records"] += 1
        fields: dict[str, Any] = {"topic": tp.topic, "partition": tp.partition, "offset": offset}
        seq = _sequence(value)
        if seq is not None:
            fields["seq"] = seq
        if not owned:
            fields["owned"] = False  # still fetching a partition this member no longer owns
        self._emit("record", **fields)

    def _auto_committer(self) -> None:
        interval = self.config.auto_commit_interval_ms / 1000.0
        while not self._shutdown_event.wait(interval):
            try:
                self.offsets.commit("auto")
            except Exception:  # noqa: BLE001 - 0.8: "exception during autoCommit", let it go
                log.exception("%s: exception during autoCommit", self._tag())

    def commit_offsets(self) -> int:
        """Commit every owned partition's position now (``commitOffsets``); returns commits written."""
        return self.offsets.commit("manual")


def _sequence(value: bytes | None) -> int | None:
    """The ``seq`` of a JSON record value, if any (the workload producer writes one)."""
    if not value or value[:1] != b"{":
        return None
    try:
        obj = json.loads(value)
    except (ValueError, UnicodeDecodeError):
        return None
    seq = obj.get("seq") if isinstance(obj, dict) else None
    return seq if isinstance(seq, int) else None
