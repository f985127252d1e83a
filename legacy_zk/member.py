"""One ZooKeeper-era consumer group member (``ZookeeperConsumerConnector`` of Kafka 0.8.2).

Contract
--------
:class:`LegacyZkMember` ``start()`` connects a kazoo session (``Unreachable`` when ZooKeeper does not
answer within ``zookeeper.connection.timeout.ms``), registers the ephemeral
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
* offsets are committed to ``/consumers/<g>/offsets/<t>/<p>`` as the next offset to read (1.12),
  or, with ``offsets.commit.fenced``, only while the owner znode belongs to this session, by a
  ``multi`` of (check owner version, set offset at the version last read/written); a commit refused
  because someone else wrote the offset znode re-reads its version, so the next commit can succeed;
* with ``takeover.delay.ms``, an attempt that would take over partitions of a vanished owner waits
  that long, then reads the group again and claims on that fresh view.

Every ZooKeeper request, watch notification, attempt, conflict, claim, release, record and commit
is an event in the history (``impl: legacy_zk``, ``group``, ``member`` on each).

The member runs on kazoo's threading handler (default; can fetch records) or on its gevent handler
(many members per process; coordination only, see :mod:`legacy_zk.host`). All its own concurrency
uses the handler's primitives, so the same code serves both.

Decisions where 0.8.2 and a port differ (and why):

* registration NodeExists: 0.8.2 backs off a session timeout and retries while the node exists
  (ZOOKEEPER-1740 work-around), even when the node is its *own* from the current session, which
  loops forever (KAFKA-1387). Here a node whose ``ephemeralOwner`` is this session counts as
  registered (the 0.10 ``ZKCheckedEphemeral`` rule); any other node is waited out as in 0.8.2;
* the shutting-down flag is checked before every attempt (0.10) and backoff sleeps end early at
  shutdown, so closing never waits for a whole retry loop; nothing else changes;
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

import contextlib
import json
import logging
import threading
import time
from collections.abc import Callable, Iterable
from dataclasses import dataclass
from typing import Any

from kazoo.client import KazooClient
from kazoo.exceptions import (
    BadVersionError,
    KazooException,
    NodeExistsError,
    NoNodeError,
)
from kazoo.protocol.states import KazooState, KeeperState

from harness.kernel.errors import ConfigError, Unreachable
from harness.kernel.history import History, NullHistory
from legacy_zk import paths
from legacy_zk.assignors import AssignmentError, View
from legacy_zk.config import ConsumerConfig
from legacy_zk.fetcher import RecordFetcher
from legacy_zk.ids import ThreadId, TopicPartition, java_string_key, make_consumer_id
from legacy_zk.listeners import EventThread, Subscriptions
from legacy_zk.plan import RebalancePlan, plan_rebalance
from legacy_zk.reconnect import JavaReconnectPolicy, install
from legacy_zk.zkclient import CountingZk

log = logging.getLogger("legacy_zk")

IMPL = "legacy_zk"


@dataclass
class OwnedPartition:
    """``PartitionTopicInfo``: one owned partition and where consumption stands."""

    thread: ThreadId
    consumed: int  # next offset to read; -1 = not known yet (auto.offset.reset pending)
    offset_version: int | None  # version of the offset znode last read/written (None: no znode)


class _Signal:
    """0.8's ``isWatcherTriggered`` flag + condition, built from the handler's primitives."""

    def __init__(self, handler: Any) -> None:
        self._event = handler.event_object()
        self._lock = threading.Lock()  # held without yielding: safe for threads and greenlets
        self._reasons: list[str] = []

    def set(self, reason: str) -> None:
        with self._lock:
            if reason not in self._reasons:
                self._reasons.append(reason)
        self._event.set()

    def wait_and_clear(self, timeout: float) -> list[str]:
        """Wait up to ``timeout`` for ``set``; return (and clear) the reasons seen, [] if none."""
        self._event.wait(timeout)
        with self._lock:
            reasons, self._reasons = self._reasons, []
            self._event.clear()
        return reasons


class LegacyZkMember:
    """One 0.8 high-level consumer (see the module docstring for the contract)."""

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
        self.handler_name = handler
        self.group = config.group_id
        self.id = make_consumer_id(config.group_id, config.consumer_id)
        self.history: History = history or NullHistory()
        self.on_assignment = on_assignment
        self.strategy = config.partition_assignment_strategy

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
            interrupted=lambda: self._stopping_client,  # a reconnect wait must not delay stop()
        )
        install(self._client, self.reconnect_policy)
        self.zk = CountingZk(self._client, self._on_zk_request, self._on_zk_retry)
        self.handler = h
        self._events = EventThread(h, f"{self.id}_zk_event_thread")
        self._subs = Subscriptions(
            self.zk,
            self._events,
            on_notification=self._notified,
            on_children=self._children_changed,
            on_data=self._data_changed,
            active=lambda: not (self._quiesced or self._closed),
        )

        # 0.8's rebalanceLock; everything that rebalances, re-registers or shuts down holds it.
        self._rebalance_lock = h.rlock_object()
        self._commit_lock = h.lock_object()
        self._registry_lock = threading.Lock()  # never held across a yield
        self._signal = _Signal(h)
        self._shutdown_event = h.event_object()
        self._registry: dict[TopicPartition, OwnedPartition] = {}
        self._checkpointed: dict[TopicPartition, int] = {}
        self._previous_view: View | None = None
        self._brokers: list[tuple[int, str, int]] = []
        self._malformed_seen: set[tuple[str, int]] = set()
        self._rebalance_seq = 0
        self._shutting_down = False
        self._quiesced = False
        self._closed = False
        self._stopping_client = False
        self._started = False
        self._session_lost = False
        self.gave_up = False
        self.stats: dict[str, int] = {
            k: 0
            for k in (
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
        }
        self._fetcher: RecordFetcher | None = None
        if config.fetch:
            self._fetcher = RecordFetcher(
                bootstrap=self._bootstrap_servers,
                auto_offset_reset=config.auto_offset_reset,
                on_record=self.record_processed,
                on_position=self._on_position,
                on_error=lambda msg: self._emit("fetch_error", error=msg),
                client_id=config.client_id or self.id,
                name=f"{self.id}_fetcher",
            )

    # -- history and logging --------------------------------------------------------------------
    def _emit(self, kind: str, **fields: Any) -> None:
        self.history.emit(
            kind, source=self.config.name or self.id, impl=IMPL, group=self.group, member=self.id, **fields
        )

    def _emit_each(self, kind: str, tps: Iterable[TopicPartition], **fields: Any) -> None:
        """``assigned`` / ``revoked``: one event per partition (topic, partition), as both member kinds
        record them, each carrying the whole list too (``all``)."""
        tps = sorted(tps)
        listed = _tp_list(tps)
        for tp in tps:
            self._emit(kind, topic=tp.topic, partition=tp.partition, all=listed, **fields)

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

    def _tag(self, rid: int | None = None, attempt: int | None = None) -> str:
        s = f"group={self.group} member={self.id}"
        if rid is not None:
            s += f" rebalance={rid}"
        if attempt is not None:
            s += f" attempt={attempt}"
        return s

    # -- public state ---------------------------------------------------------------------------
    def owned(self) -> frozenset[TopicPartition]:
        """Partitions this member owns now (owner znodes created by its last successful attempt)."""
        with self._registry_lock:
            return frozenset(self._registry)

    def consumed_offsets(self) -> dict[TopicPartition, int]:
        """Next offset to read per owned partition (-1 while auto.offset.reset is pending)."""
        with self._registry_lock:
            return {tp: o.consumed for tp, o in self._registry.items()}

    @property
    def session_id(self) -> int | None:
        return self.zk.session_id()

    # -- life cycle -----------------------------------------------------------------------------
    def start(self) -> bool:
        """Connect, register, watch, rebalance once (see the module docstring). True = converged."""
        if self._started:
            raise RuntimeError("a member starts once")
        self._started = True
        self._emit("ready")  # booted, about to connect: t0 of a join (harness.kernel.events)
        timeout_s = self.config.connection_timeout_ms / 1000.0
        try:
            self._client.start(timeout=timeout_s)
        except Exception as e:  # kazoo raises handler-specific timeout classes
            self._stopping_client = True
            self._client.stop()
            self._client.close()
            if self._fetcher is not None:
                self._fetcher.close()
            raise Unreachable(
                f"ZooKeeper at {self.config.zookeeper_connect} did not answer within "
                f"{self.config.connection_timeout_ms} ms (zookeeper.connection.timeout.ms): {e.__class__.__name__}"
            ) from None
        self._client.add_listener(self._on_state)
        self._emit(
            "started",
            topics=self.config.topics,
            session_id=self.session_id,
            handler=self.handler_name,
            fetch=self.config.fetch,
            config=self.config.as_properties(),
        )
        log.info("%s: connected (session 0x%x), registering", self._tag(), self.session_id or 0)
        self._events.start()
        self._register()
        # reinitializeConsumer: subscribe to the ids children and to each topic's data
        self._subs.subscribe_children(paths.ids_dir(self.group))
        for t in sorted(self.config.topics):
            self._subs.subscribe_data(paths.topic_path(t))
        self.handler.spawn(self._watcher_executor)
        if self.config.auto_commit_enable:
            self.handler.spawn(self._auto_committer)
        return self._synced_rebalance(["start"])

    def quiesce(self) -> None:
        """Stop re-arming watches and starting rebalances (before a group is torn down: no teardown herd)."""
        self._quiesced = True
        self._signal.set("quiesce")

    def close(self) -> None:
        """0.8 shutdown order: stop watches, auto commit, fetcher; commit; close the session."""
        if self._closed:
            return
        self._closed = True
        self.quiesce()
        self._shutting_down = True
        self._shutdown_event.set()
        self._signal.set("shutdown")
        if not self._started:
            if self._fetcher is not None:
                self._fetcher.close()
            return
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
                if self._client.connected:
                    self._commit_offsets("shutdown")
                else:
                    log.warning(
                        "%s: not connected to ZooKeeper: offsets not committed at shutdown", self._tag()
                    )
            owned = self._clear_registry()
            if owned:
                self._emit_each("revoked", owned, reason="shutdown")
            self._stopping_client = True
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
        self._emit("stopped", stats=dict(self.stats))
        log.info("%s: stopped", self._tag())

    # -- registration ---------------------------------------------------------------------------
    def _register(self) -> None:
        """Create the ephemeral id znode (``registerConsumerInZK``), see the module docstring."""
        path = paths.id_path(self.group, self.id)
        data = paths.encode_registration(self.config.topics, int(time.time() * 1000))
        while True:
            try:
                self._create_ephemeral(path, data)
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

    def _create_ephemeral(self, path: str, data: bytes) -> None:
        """``createEphemeralPath``: create; on NoNode create the parents, then create again."""
        try:
            self.zk.create(path, data, ephemeral=True)
        except NoNodeError:
            self.zk.create_parents(paths.parent(path))
            self.zk.create(path, data, ephemeral=True)

    # -- events from ZooKeeper ------------------------------------------------------------------
    def _notified(self, path: str, etype: str, via: str) -> None:
        """A watch notification reached this member (kazoo's callback thread, or the event thread
        for one replayed after a reconnect): one ``watch`` event."""
        self.stats["watches"] += 1
        self._emit("watch", path=path, type=str(etype), via=via)

    def _children_changed(self, path: str, children: list[str] | None, reason: str) -> None:
        """``ZKRebalancerListener.handleChildChange`` (ids, or brokers after "no brokers"): trigger."""
        if not self._quiesced:
            self._signal.set(reason)

    def _data_changed(self, path: str, exists: bool, reason: str) -> None:
        """``ZKTopicPartitionChangeListener``: a changed topic triggers; a deleted one only warns."""
        if not exists:
            log.warning("%s: topic znode %s was deleted; not rebalancing", self._tag(), path)
            return
        if not self._quiesced:
            self._signal.set(reason)

    def _on_state(self, state: str) -> None:
        """kazoo connection listener (runs on kazoo's connection thread: never blocks)."""
        self._emit("zk_state", state=str(state), session_id=self.session_id)
        if self._closed:
            return
        if state == KazooState.LOST:
            self._session_lost = True
            self.stats["session_expiries"] += 1
            log.warning("%s: ZooKeeper session expired", self._tag())
            # ZkClient.process(Expired): handleNewSession on the event thread, then fireAllEvents()
            self._events.send("new session", self._handle_new_session)
            self._subs.fire_all("new_session")
        elif state == KazooState.SUSPENDED:
            log.info("%s: ZooKeeper connection suspended; still fetching (as 0.8 did)", self._tag())
        elif state == KazooState.CONNECTED:
            if self._session_lost:
                self._session_lost = False  # the new session: the queued events go ahead now
            elif not self._quiesced:
                self._subs.resync()  # same session: re-arm (kazoo dropped its watches)

    # -- the rebalance thread -------------------------------------------------------------------
    def _watcher_executor(self) -> None:
        """``<id>_watcher_executor``: wait up to 1000 ms for the flag, then rebalance once."""
        log.debug("%s: watcher executor started", self._tag())
        while not self._shutting_down:
            try:
                reasons = self._signal.wait_and_clear(1.0)
                if self._shutting_down:
                    break
                if self._quiesced:
                    continue
                real = [r for r in reasons if r not in ("quiesce", "shutdown")]
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
        if self._shutting_down or self._quiesced:
            return
        log.info("%s: session expired: releasing ownership, re-registering", self._tag())
        owned = self._clear_registry()  # resetState: the owner znodes died with the session
        if owned:
            self._emit_each("revoked", owned, reason="session_expired")
            self._assignment_changed("revoked", [])
        self._register()
        self._synced_rebalance(["new_session"])

    # -- synced rebalance -----------------------------------------------------------------------
    def _synced_rebalance(self, reasons: list[str]) -> bool:
        """Up to ``rebalance.max.retries`` attempts with backoff; False = gave up (spec 1.8)."""
        with self._rebalance_lock:
            if self._shutting_down:
                return False
            self._rebalance_seq += 1
            rid = self._rebalance_seq
            self.stats["rebalances"] += 1
            retries = self.config.rebalance_max_retries
            for attempt in range(retries):
                if self._shutting_down:
                    return False
                log.info("%s: begin rebalancing (%s)", self._tag(rid, attempt), ",".join(reasons))
                self._emit("rebalance_begin", rebalance=rid, attempt=attempt, reason=",".join(reasons))
                self.stats["attempts"] += 1
                t0 = time.monotonic()
                detail = ""
                try:
                    outcome = self._rebalance_attempt(rid, attempt)
                except (KazooException, AssignmentError, paths.MalformedZnode) as e:
                    outcome, detail = "error", f"{e.__class__.__name__}: {e}"
                    log.info("%s: exception during rebalance: %s", self._tag(rid, attempt), detail)
                except Exception as e:  # noqa: BLE001 - 0.8 catches Throwable here too
                    outcome, detail = "error", f"{e.__class__.__name__}: {e}"
                    log.warning(
                        "%s: unexpected error during rebalance", self._tag(rid, attempt), exc_info=True
                    )
                if outcome == "error" and self._shutting_down:
                    outcome = "shutdown"  # closing ended a request that waited for ZooKeeper
                ok = outcome in ("ok", "no_brokers")
                stopping = outcome == "shutdown"
                last = not ok and not stopping and attempt == retries - 1
                if not ok and not stopping:
                    self.stats["failed_attempts"] += 1
                self._emit(
                    "rebalance_end",
                    rebalance=rid,
                    attempt=attempt,
                    outcome=outcome,
                    duration_ms=round((time.monotonic() - t0) * 1000.0, 3),
                    gave_up=last,
                    owned=_tp_list(self.owned()),
                    **({"detail": detail} if detail else {}),
                )
                if ok:
                    self.gave_up = False
                    return True
                if stopping:
                    return False
                log.info("%s: rebalancing attempt failed (%s)", self._tag(rid, attempt), outcome)
                self._close_fetchers()
                self._shutdown_event.wait(self.config.backoff_ms / 1000.0)
            self.gave_up = True
            self.stats["gave_up"] += 1
            log.error(
                "%s: can't rebalance after %d retries; registered but owning nothing until the next change",
                self._tag(rid),
                retries,
            )
            self._assignment_changed("gave_up", [])
            return False

    def _rebalance_attempt(self, rid: int, attempt: int) -> str:
        """One attempt (spec 1.9). Returns ``ok`` / ``no_brokers`` / ``conflict`` / ``shutdown``."""
        self._read_cluster()  # getCluster(zkClient) in syncedRebalance
        self._read_registration(self.id, own=True)  # TopicCount.constructTopicCount(me)
        self._read_cluster()  # getAllBrokersInCluster
        if not self._brokers:
            log.warning("%s: no brokers found when trying to rebalance", self._tag(rid, attempt))
            # subscribeChildChanges(BrokerIdsPath): exists + getChildren, every time (ZkClient's
            # listener set keeps one listener); the exists watch fires when /brokers/ids is created
            self._subs.subscribe_children(paths.BROKER_IDS)
            return "no_brokers"
        owned_before = self.owned()
        self._close_fetchers()
        self._release_ownership(rid, attempt)
        view = self._read_view()
        plan = plan_rebalance(view, self.id, self.strategy, owned_before, self._previous_view)
        self._warn_idle_threads(plan, rid, attempt)
        if plan.takeover and self.config.takeover_delay_ms > 0:
            self._emit(
                "takeover_wait",
                rebalance=rid,
                attempt=attempt,
                partitions=_tp_list(plan.takeover),
                delay_ms=self.config.takeover_delay_ms,
            )
            log.info(
                "%s: waiting %d ms before taking over %s from vanished owners",
                self._tag(rid, attempt),
                self.config.takeover_delay_ms,
                _tp_text(plan.takeover),
            )
            if self._shutdown_event.wait(self.config.takeover_delay_ms / 1000.0):
                return "shutdown"
            # the group may have changed while we waited: claim on a fresh view, not the old one
            waited_for = plan.takeover
            view = self._read_view()
            plan = plan_rebalance(view, self.id, self.strategy, owned_before, self._previous_view)
            self._emit(
                "takeover_reread",
                rebalance=rid,
                attempt=attempt,
                consumers=len(view.consumers),
                claim=_tp_list(plan.claim),
                takeover=_tp_list(plan.takeover),
                waited_for=_tp_list(waited_for),
            )
        offsets = self._fetch_offsets(plan.claim)
        if self._shutting_down:
            return "shutdown"
        if not self._reflect_ownership(plan, rid, attempt):
            return "conflict"
        with self._registry_lock:
            self._registry = {
                tp: OwnedPartition(tid, offsets[tp][0], offsets[tp][1]) for tp, tid in plan.claim.items()
            }
        for tp, (off, _v) in offsets.items():
            self._checkpointed[tp] = off
        self._previous_view = view
        owned = sorted(plan.claim)
        log.info("%s: selected partitions %s", self._tag(rid, attempt), _tp_text(owned))
        self._emit_each(
            "assigned",
            owned,
            rebalance=rid,
            attempt=attempt,
            threads={str(tp): str(t) for tp, t in plan.claim.items()},
            gained=_tp_list(plan.gained),
            lost=_tp_list(plan.lost),
            consumers=len(view.consumers),
        )
        if self._fetcher is not None:
            self._fetcher.start({tp: off for tp, (off, _v) in offsets.items()})
        self._assignment_changed("assigned", owned)
        return "ok"

    def _warn_idle_threads(self, plan: RebalancePlan, rid: int, attempt: int) -> None:
        busy = set(plan.claim.values())
        for topic, streams in self.config.topics.items():
            for n in range(streams):
                if ThreadId(self.id, n) not in busy:
                    log.debug(
                        "%s: no broker partitions consumed by consumer thread %s-%d for topic %s",
                        self._tag(rid, attempt),
                        self.id,
                        n,
                        topic,
                    )

    # -- reads ----------------------------------------------------------------------------------
    def _malformed(self, err: paths.MalformedZnode, version: int = -1) -> None:
        key = (err.path, version)
        if key in self._malformed_seen:
            return
        self._malformed_seen.add(key)
        log.warning("%s: %s; skipped", self._tag(), err)
        self._emit("malformed", path=err.path, error=str(err))

    def _read_cluster(self) -> None:
        """``getCluster`` / ``getAllBrokersInCluster``: children of /brokers/ids and each payload."""
        try:
            ids = self.zk.get_children(paths.BROKER_IDS)
        except NoNodeError:
            ids = []
        brokers = []
        for bid in sorted(ids):
            path = paths.broker_path(bid)
            try:
                data, stat = self.zk.get(path)
            except NoNodeError:
                continue
            try:
                host, port = paths.decode_broker(path, data)
                brokers.append((int(bid), host, port))
            except (paths.MalformedZnode, ValueError) as e:
                self._malformed(
                    e if isinstance(e, paths.MalformedZnode) else paths.MalformedZnode(path, str(e)),
                    stat.mzxid,
                )
        self._brokers = brokers

    def _bootstrap_servers(self) -> str | None:
        if self.config.bootstrap_servers:
            return self.config.bootstrap_servers
        return ",".join(f"{h}:{p}" for _i, h, p in self._brokers) or None

    def _read_registration(self, consumer: str, own: bool = False) -> paths.Registration | None:
        """Read one ``ids/<consumer>``. NoNode propagates (0.8's readData threw: the attempt fails).

        A malformed peer registration is reported and yields None; a malformed *own* one is an error.
        """
        path = paths.id_path(self.group, consumer)
        data, stat = self.zk.get(path)
        try:
            return paths.decode_registration(path, data)
        except paths.MalformedZnode as e:
            if own:
                raise
            self._malformed(e, stat.mzxid)
            return None

    def _read_topic_partitions(self, topic: str) -> tuple[int, ...]:
        path = paths.topic_path(topic)
        try:
            data, stat = self.zk.get(path)
        except NoNodeError:
            return ()
        try:
            return tuple(paths.decode_topic_partitions(path, data))
        except paths.MalformedZnode as e:
            self._malformed(e, stat.mzxid)
            return ()

    def _read_view(self) -> View:
        """``new AssignmentContext(...)``: own registration, my topics' partitions, every consumer."""
        all_topics: list[str] | None = None

        def topics_of(reg: paths.Registration) -> dict[str, int]:
            nonlocal all_topics
            if reg.pattern != paths.STATIC and all_topics is None:
                try:
                    all_topics = sorted(self.zk.get_children(paths.BROKER_TOPICS))
                except NoNodeError:
                    all_topics = []
            return reg.topics(all_topics, self.config.exclude_internal_topics)

        mine = self._read_registration(self.id, own=True)  # myTopicThreadIds
        assert mine is not None
        partitions = {t: self._read_topic_partitions(t) for t in sorted(topics_of(mine))}
        subscriptions: dict[str, dict[str, int]] = {}
        for consumer in self.zk.get_children(paths.ids_dir(self.group)):  # getConsumersPerTopic
            reg = self._read_registration(consumer, own=consumer == self.id)
            if reg is None:
                continue
            try:
                subscriptions[consumer] = topics_of(reg)
            except ValueError as e:  # a peer's wildcard that does not compile
                self._malformed(paths.MalformedZnode(paths.id_path(self.group, consumer), str(e)))
        consumers = self.zk.get_children(paths.ids_dir(self.group))  # getConsumersInGroup
        return View(
            consumers=tuple(sorted(consumers, key=java_string_key)),
            subscriptions=subscriptions,
            partitions=partitions,
        )

    def _fetch_offsets(
        self, claim: dict[TopicPartition, ThreadId]
    ) -> dict[TopicPartition, tuple[int, int | None]]:
        """``fetchOffsets`` from ZooKeeper: (next offset or -1, offset znode version or None)."""
        out: dict[TopicPartition, tuple[int, int | None]] = {}
        for tp in claim:
            path = paths.offset_path(self.group, tp.topic, tp.partition)
            try:
                data, stat = self.zk.get(path)
            except NoNodeError:
                out[tp] = (-1, None)
                continue
            try:
                out[tp] = (paths.decode_offset(path, data), stat.version)
            except paths.MalformedZnode as e:
                self._malformed(e, stat.mzxid)
                out[tp] = (-1, stat.version)
        return out

    # -- ownership ------------------------------------------------------------------------------
    def _clear_registry(self) -> list[TopicPartition]:
        with self._registry_lock:
            owned = sorted(self._registry)
            self._registry = {}
        return owned

    def _release_ownership(self, rid: int, attempt: int) -> None:
        """``releasePartitionOwnership``: delete every owner znode held, then clear the registry."""
        with self._registry_lock:
            owned = sorted(self._registry)
        if not owned:
            return
        log.info("%s: releasing partition ownership %s", self._tag(rid, attempt), _tp_text(owned))
        for tp in owned:
            with contextlib.suppress(NoNodeError):  # "deleted during connection loss; this is ok"
                self.zk.delete(paths.owner_path(self.group, tp.topic, tp.partition))
            self.stats["releases"] += 1
            self._emit("release", rebalance=rid, attempt=attempt, topic=tp.topic, partition=tp.partition)
            with self._registry_lock:
                self._registry.pop(tp, None)
        self._emit_each("revoked", owned, rebalance=rid, attempt=attempt, reason="rebalance")

    def _reflect_ownership(self, plan: RebalancePlan, rid: int, attempt: int) -> bool:
        """``reflectPartitionOwnershipDecision``: create every owner znode; any conflict rolls back."""
        created: list[TopicPartition] = []
        failed = 0
        try:
            for tp, tid in plan.claim.items():
                path = paths.owner_path(self.group, tp.topic, tp.partition)
                data = str(tid).encode()
                try:
                    self._create_ephemeral(path, data)
                    recovered = False
                except NodeExistsError:
                    try:
                        stored, _ = self.zk.get(path)
                    except NoNodeError:
                        stored = None  # vanished between create and read: still a failure
                    if stored != data:
                        failed += 1
                        self.stats["conflicts"] += 1
                        holder = stored.decode(errors="replace") if stored is not None else None
                        log.info(
                            "%s: waiting for the partition ownership to be deleted: %s (held by %s)",
                            self._tag(rid, attempt),
                            tp,
                            holder,
                        )
                        self._emit(
                            "conflict",
                            rebalance=rid,
                            attempt=attempt,
                            topic=tp.topic,
                            partition=tp.partition,
                            holder=holder,
                        )
                        continue
                    recovered = True  # our create succeeded before a connection loss
                created.append(tp)
                self.stats["claims"] += 1
                self._emit(
                    "claim",
                    rebalance=rid,
                    attempt=attempt,
                    topic=tp.topic,
                    partition=tp.partition,
                    thread=str(tid),
                    **({"recovered": True} if recovered else {}),
                )
        except BaseException:
            self._rollback(created, rid, attempt)
            raise
        if failed:
            self._rollback(created, rid, attempt)
            return False
        return True

    def _rollback(self, created: Iterable[TopicPartition], rid: int, attempt: int) -> None:
        for tp in created:
            try:
                self.zk.delete(paths.owner_path(self.group, tp.topic, tp.partition))
            except NoNodeError:
                pass
            except KazooException as e:
                log.warning("%s: could not roll back claim of %s: %s", self._tag(rid, attempt), tp, e)
                continue
            self.stats["releases"] += 1
            self._emit(
                "release",
                rebalance=rid,
                attempt=attempt,
                topic=tp.topic,
                partition=tp.partition,
                rollback=True,
            )

    def _close_fetchers(self) -> None:
        """``closeFetchersForQueues``: stop fetching (drop what is queued), then commit (auto commit)."""
        if self._fetcher is not None:
            self._fetcher.stop()
        if self.config.auto_commit_enable:
            self._commit_offsets("rebalance")

    def _assignment_changed(self, what: str, partitions: list[TopicPartition]) -> None:
        if self.on_assignment is not None:
            try:
                self.on_assignment(self, what, partitions)
            except Exception:  # noqa: BLE001 - a printing callback must not break the protocol
                log.exception("assignment callback failed")

    # -- records and offsets --------------------------------------------------------------------
    def record_processed(self, tp: TopicPartition, offset: int, value: bytes | None) -> None:
        """The fetcher's callback: record ``offset`` of ``tp`` was handed to the application.

        Advances the consumed position (next offset = ``offset + 1``) when the partition is owned and
        writes a ``record`` event (``owned: false`` when it is not: a fetch that outlived ownership).
        """
        with self._registry_lock:
            info = self._registry.get(tp)
            if info is not None:
                info.consumed = offset + 1
        self.stats["records"] += 1
        fields: dict[str, Any] = {"topic": tp.topic, "partition": tp.partition, "offset": offset}
        seq = _sequence(value)
        if seq is not None:
            fields["seq"] = seq
        if info is None:
            fields["owned"] = False  # still fetching a partition this member no longer owns
        self._emit("record", **fields)

    def _on_position(self, tp: TopicPartition, position: int) -> None:
        with self._registry_lock:
            info = self._registry.get(tp)
            if info is not None and info.consumed < 0:
                info.consumed = position

    def _auto_committer(self) -> None:
        interval = self.config.auto_commit_interval_ms / 1000.0
        while not self._shutdown_event.wait(interval):
            try:
                self._commit_offsets("auto")
            except Exception:  # noqa: BLE001 - 0.8: "exception during autoCommit", let it go
                log.exception("%s: exception during autoCommit", self._tag())

    def commit_offsets(self) -> int:
        """Commit every owned partition's position now (``commitOffsets``); returns commits written."""
        return self._commit_offsets("manual")

    def _commit_offsets(self, reason: str) -> int:
        written = 0
        with self._commit_lock:
            with self._registry_lock:
                todo = [(tp, info, info.consumed) for tp, info in self._registry.items()]
            for tp, info, offset in sorted(todo):
                if offset < 0 or self._checkpointed.get(tp) == offset:
                    continue  # "No updates to offsets since last commit"
                try:
                    if self.config.offsets_commit_fenced:
                        ok = self._fenced_commit(tp, info, offset, reason)
                    else:
                        self._update_persistent(paths.offset_path(self.group, tp.topic, tp.partition), offset)
                        ok = True
                except KazooException as e:
                    log.warning("%s: committing %s failed: %s", self._tag(), tp, e.__class__.__name__)
                    break
                if ok:
                    self._checkpointed[tp] = offset
                    written += 1
                    self.stats["commits"] += 1
                    self._emit("commit", topic=tp.topic, partition=tp.partition, offset=offset, reason=reason)
        return written

    def _update_persistent(self, path: str, offset: int) -> None:
        """``updatePersistentPath``: set; on NoNode create parents and create; on NodeExists set."""
        data = paths.encode_offset(offset)
        try:
            self.zk.set(path, data)
        except NoNodeError:
            self.zk.create_parents(paths.parent(path))
            try:
                self.zk.create(path, data)
            except NodeExistsError:
                self.zk.set(path, data)

    def _fenced_commit(self, tp: TopicPartition, info: OwnedPartition, offset: int, reason: str) -> bool:
        """Mitigation (b): commit only if the owner znode is ours in this session, at a known version."""
        opath = paths.owner_path(self.group, tp.topic, tp.partition)
        path = paths.offset_path(self.group, tp.topic, tp.partition)

        def reject(why: str) -> bool:
            self.stats["commits_rejected"] += 1
            log.warning("%s: fenced commit of %s@%d refused: %s", self._tag(), tp, offset, why)
            self._emit(
                "commit_rejected",
                topic=tp.topic,
                partition=tp.partition,
                offset=offset,
                reason=why,
                trigger=reason,
            )
            return False

        try:
            owner_data, owner_stat = self.zk.get(opath)
        except NoNodeError:
            return reject("owner znode missing")
        if owner_stat.ephemeralOwner != self.session_id or owner_data != str(info.thread).encode():
            return reject("owner znode belongs to another session")
        data = paths.encode_offset(offset)
        if info.offset_version is None:
            self.zk.create_parents(paths.offsets_dir(self.group, tp.topic))
            ops = [("check", opath, owner_stat.version), ("create", path, data)]
        else:
            ops = [("check", opath, owner_stat.version), ("set", path, (data, info.offset_version))]
        results = self.zk.multi(ops)
        check, write = results[0], results[1]  # a failed op's error; the other op: rolled back
        if isinstance(check, (BadVersionError, NoNodeError)):
            return reject("owner znode changed during the commit")
        if isinstance(write, (BadVersionError, NodeExistsError)):
            # Someone else wrote the offset znode since we last read or wrote it. Refuse this commit,
            # but learn the znode's version now: the next commit (still fenced by the owner check)
            # overwrites it, instead of being refused until the next rebalance.
            stat = self.zk.exists(path)
            info.offset_version = stat.version if stat is not None else None
            return reject("offset znode was written by someone else since we read it")
        errors = [r for r in results if isinstance(r, Exception)]
        if errors:
            kinds = {type(e) for e in errors}
            return reject(f"transaction failed: {', '.join(sorted(k.__name__ for k in kinds))}")
        new_version = 0 if info.offset_version is None else results[1].version
        info.offset_version = new_version
        return True


def _tp_list(tps: Iterable[TopicPartition]) -> list[list[Any]]:
    return [[tp.topic, tp.partition] for tp in sorted(tps)]


def _tp_text(tps: Iterable[TopicPartition]) -> str:
    return ",".join(f"{tp.topic}-{tp.partition}" for tp in sorted(tps)) or "(none)"


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
