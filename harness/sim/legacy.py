"""The simulated legacy_zk group: legacy_zk's own rebalance code against an in-memory ZooKeeper, in
virtual time.

Contract
--------
:func:`make_group` returns a :class:`SimLegacyGroup` (a :class:`harness.sim.group.SimGroup`). What runs
is the code a real member runs, wired as :class:`legacy_zk.member.LegacyZkMember` wires it:
:class:`legacy_zk.attempt.Rebalancer` (synced rebalance and attempts), :class:`legacy_zk.reads.GroupReader`,
the assignors through :func:`legacy_zk.plan.plan_rebalance`, :class:`legacy_zk.registry.Registry`,
:class:`legacy_zk.offsets.OffsetStore` (zookeeper storage), :class:`legacy_zk.watches.GroupWatches` with
ZkClient's :class:`legacy_zk.listeners.EventThread` / ``Subscriptions``; only the IO shell is the
simulator's (:class:`SimLegacyMember`, the counterpart of ``LegacyZkMember``'s kazoo session, threads and
fetcher). Each member's configuration is the one a real member gets (``harness.run.launch.legacy_argv``'s
properties, parsed by ``legacy_zk.config``), with ``consumer.id`` = ``sim-<virtual start ms>-<name>``: ordered by start time as 0.8's
``host-millis-uuid`` ids of one host are (the assignors sort consumers, so who gets which partition
follows the same order; members started in the same millisecond are ordered by name, where a real
run's order among them is random).

The model (every delay from :class:`harness.sim.model.DelayModel`):

* ZooKeeper is one :class:`legacy_zk.memzk.MemZk` tree holding the 0.8 layout a real broker writes
  (broker 1 under ``/brokers/ids``, the topic's replica assignment under ``/brokers/topics``), served one
  request at a time: a request costs ``zk_client_s`` + ``network_one_way_s``, then waits in a FIFO queue
  for ``zk_service_s`` of service (the change and any watches it fires happen when served), then
  ``network_one_way_s`` back (:class:`SimZkPort`); the client work of all members shares
  ``client_cores`` cores (:class:`harness.sim.cpu.ClientCpu`), a core that frees serving a waiting
  member drawn at random (``zk_client_random_order``); a member's requests (``zk_client_s``) wait by its
  share, which it draws when a watch wakes it to rebalance and keeps through that wake's attempts
  (``zk_client_share_sigma``: real members go at uneven paces), its other work (connect, watch
  handling, applying an assignment) at share 1;
* a watch notification reaches its member ``network_one_way_s`` after the change and costs it
  ``zk_watch_client_s``, one at a time per member (kazoo's single event thread), before ZkClient's
  listener code runs (which re-arms with two requests and sets the rebalance flag);
* the rebalance thread, backoff and takeover waits are legacy_zk's own, on virtual time; the thread
  wakes ``watch_wake_spread_s`` x uniform(0, 1) after a watch set its flag (0: at once);
* a member's session opens with one request's round trip; a clean stop is 0.8's shutdown (commit,
  revoke, close the session: its ephemerals vanish when the close is served); a crash ends the member's
  tasks at once and the server expires its session ``zookeeper.session.timeout.ms`` after it last heard
  from it (its last request's arrival or kazoo's last ping, every third of the session timeout);
* members fetch from the :class:`harness.sim.workload.SimTopic` and write ``record`` events: a fetch
  round trip is ``network_one_way_s`` + ``broker_service_s`` + ``network_one_way_s``; with no record
  available the fetcher waits for its partitions' next record (kafka-python's long poll would return
  empty every ``fetch.max.wait.ms`` and be sent again: round trips that write and move nothing);
* stopping the fetcher (a rebalance's ``closeFetchers``, a clean stop) waits, as the real member waits
  for its fetcher thread's acknowledgement, until the fetcher's kafka-python poll in progress returns:
  the fetch in flight, else the next multiple of ``fetch_poll_s`` (``legacy_zk.fetcher.POLL_MS``, 100 ms) after the
  fetcher went idle, or its partitions' next record (back ``network_one_way_s`` after it was
  appended), whichever is first (:meth:`SimLegacyMember._await_poll`). This is where a real leave or
  crash gets its uneven releases: members whose poll returns early release, read and claim before
  others have released, and conflict;
* from ``options["fluid_from"]`` initial members on (default :data:`FLUID_FROM`) the server is the fluid
  one (:class:`harness.sim.fluid.FluidServer`): every request, and a member's burst of registration
  reads (:meth:`SimZkPort.get_many`) as one job, is served processor-shared at the rate its contract
  states; a burst's reads all see the tree at its end, and the members share the result list while the
  directory is unchanged (:meth:`SimZkServer.read_many`), so they share the view built on it
  (:class:`legacy_zk.reads.ViewMemo`): the same requests are counted, at a cost per burst, not per
  request;
* ``zk_request`` events are one per request, as a real member writes them, unless the group has at
  least ``options["aggregate_from"]`` members (default :data:`AGGREGATE_FROM`): then a member's requests
  of one op on one path class (``*`` for the varying last segment under a directory of ids, owners,
  offsets or brokers) are written as one event with ``count``, when the member next writes any other
  event (its next step: watch, rebalance end, claim...) or makes a request :data:`AGGREGATE_SPAN_NS`
  (1 s) or more after the first one aggregated, stamped then (so a long attempt's requests fall
  into the trigger window they were made in, to within 1 s).

Departures from a real member: no fetcher restart cost beyond ``member_apply_s`` per assignment; no
connection loss, session expiry of a live member, or reconnect; ``offsets.storage = kafka`` is refused
(the simulator has no offset manager); a member is ``ready`` when started (the driver starts a held joiner late
by its release, ``member_release_poll_s``, and a member a step starts by its process boot,
``member_boot_*``).
"""

from __future__ import annotations

import contextlib
import logging
from collections import Counter
from collections.abc import Callable, Mapping, Sequence
from pathlib import Path
from typing import Any

from harness.kernel.errors import ConfigError
from harness.kernel.history import History
from harness.run.launch import Endpoints, legacy_argv
from harness.sim.clock import NS_PER_S, Event, Task, VirtualScheduler, next_tick, to_ns
from harness.sim.cpu import ClientCpu
from harness.sim.fluid import FluidServer
from harness.sim.group import SimContext
from harness.sim.handler import SimHandler, SimLock
from harness.sim.model import DelayModel
from harness.sim.workload import SimTopic
from legacy_zk import paths
from legacy_zk.attempt import Rebalancer, emit_each
from legacy_zk.config import ConsumerConfig, parse_properties
from legacy_zk.ids import TopicPartition, make_consumer_id
from legacy_zk.listeners import EventThread
from legacy_zk.member import STAT_NAMES
from legacy_zk.memzk import MemZk, MemZkSession
from legacy_zk.offsets import OffsetStore
from legacy_zk.reads import GroupReader, MalformedLog, ViewMemo
from legacy_zk.registry import Registry
from legacy_zk.watches import WAKE_ONLY, GroupWatches
from legacy_zk.zkport import MultiOp, Watcher, create_persistent, get_each

__all__ = [
    "AGGREGATE_FROM",
    "FLUID_FROM",
    "SimLegacyGroup",
    "SimLegacyMember",
    "SimZkPort",
    "SimZkServer",
    "make_group",
    "round_s",
]

log = logging.getLogger("harness.sim")

IMPL = "legacy_zk"
#: From this many initial members on, a member's zk_request events are aggregated (module contract).
AGGREGATE_FROM = 200
#: From this many initial members on, ZooKeeper is the fluid server (:mod:`harness.sim.fluid`; module
#: contract), which makes the per-request server's requests at a cost per burst.
FLUID_FROM = 1000
#: An aggregated zk_request event covers at most this span of virtual time (ns): a long attempt's requests
#: are written as they go, so they fall into the trigger window they were made in (to within this span).
AGGREGATE_SPAN_NS = 1_000_000_000
#: kafka-python's max.poll.records default: records handed over per fetch.
FETCH_MAX_RECORDS = 500
#: kazoo's ping jitter, in hundredths of a second (``random.randint(1, 40) / 100``).
KAZOO_PING_JITTER_CS = (1, 40)
BROKER_ID = 1


class SimZkServer:
    """One ZooKeeper server: the tree and its FIFO request queue (one request served at a time), or, with
    ``fluid``, the :class:`harness.sim.fluid.FluidServer` serving whole bursts processor-shared."""

    def __init__(self, sched: VirtualScheduler, delays: DelayModel, fluid: bool = False) -> None:
        self.sched = sched
        self.delays = delays
        self.tree = MemZk()
        self._free_at = 0
        self.requests = 0
        self.fluid = FluidServer(sched, delays) if fluid else None
        #: the last burst's results per directory (fluid): directory -> (names, children zxid, results)
        self._reads: dict[str, tuple[tuple[str, ...], int, list[Any]]] = {}

    def read_many(self, session: MemZkSession, directory: str, names: Sequence[str]) -> list[Any]:
        """The results of ``get`` of each ``directory/name`` now (a fluid burst's end), in order; the first
        missing node raises ``NoNodeError``. While neither the children of ``directory`` nor their data
        changed (:meth:`MemZk.children_zxid`), the same names get the *same* result list, which every
        reader treats as read-only (so :class:`legacy_zk.reads.ViewMemo` shares the views built on it)."""
        zxid = self.tree.children_zxid(directory)
        key = tuple(names)
        last = self._reads.get(directory)
        if last is not None and last[1] == zxid and last[0] == key:
            self.tree.check_live(session.id)
            return last[2]
        out = session.get_many(directory, names)
        self._reads[directory] = (key, zxid, out)
        return out

    def admit(self, arrival_ns: int) -> int:
        """A request arriving at ``arrival_ns``: the virtual ns at which it has been served (requests are
        queued in the order they are admitted: see :meth:`SimZkPort._round_trip`)."""
        start = max(arrival_ns, self._free_at)
        self._free_at = start + to_ns(self.delays.zk_service_s)
        self.requests += 1
        return self._free_at


def path_class(path: str) -> str:
    """The class of ``path`` for aggregated zk_request events: ``<dir>/*`` for a node directly under a
    directory of many (ids, owners of a topic, offsets of a topic, brokers), else the path itself."""
    up = paths.parent(path)
    if up.endswith("/ids") or "/owners/" in up + "/" and up.count("/") >= 4 or "/offsets/" in up + "/":
        return f"{up}/*"
    return path


class SimZkPort:
    """One member's ZooKeeper session in virtual time (a :class:`legacy_zk.zkport.ZkPort`; module contract)."""

    def __init__(self, member: SimLegacyMember, server: SimZkServer) -> None:
        self.member = member
        self.server = server
        self.sched = server.sched
        self.delays = server.delays
        self.session: MemZkSession | None = None
        self.counts: Counter[str] = Counter()
        self.last_heard_ns = 0
        self.opened_ns = 0
        self._wrapped: dict[Any, Watcher] = {}

    # -- the session ----------------------------------------------------------------------------
    def open(self) -> None:
        """Connect: ``zk_connect_s`` of client work, then one round trip and one service slot."""
        self.member.group.cpu.work(self.delays.zk_connect_s)
        self._round_trip(lambda: None)
        self.session = self.server.tree.session()
        self.opened_ns = self.last_heard_ns = self.sched.now_ns

    def close(self) -> None:
        """Close the session: served as one request; its ephemerals vanish then (watches fire)."""
        if self.session is None:
            return
        session = self.session
        self._round_trip(session.expire)
        self.session = None

    def session_id(self) -> int | None:
        return self.session.id if self.session is not None else None

    def _round_trip(self, request: Callable[[], Any], n: int = 1) -> Any:
        """``n`` requests' round trips (``n`` > 1 only on the fluid server: a burst); the result of
        ``request()``, run on the loop when the server serves the request (the last of the burst).

        Per request, the whole timeline is booked when it is issued (one wake-up of the member, the
        batching that keeps large groups fast): its client CPU (when the client cores serve in random
        order, spent first: its turn is known only when it comes), the network, its place in the server's
        queue (queued in issue order: a request issued earlier is served earlier even if a later one
        would arrive first, at most one client cost apart), the change applied when served, the network
        back. On the fluid server: :meth:`_fluid_trip`."""
        if self.server.fluid is not None:
            return self._fluid_trip(request, n)
        d = self.delays
        cpu = self.member.group.cpu
        if cpu.books_ahead:
            arrive = cpu.reserve(d.zk_client_s) + to_ns(cpu.cost(d.network_one_way_s))
        else:  # the member's turn on a client core is known only when it comes
            cpu.work(d.zk_client_s, self.member.cpu_share)
            arrive = self.sched.now_ns + to_ns(cpu.cost(d.network_one_way_s))
        done = self.server.admit(arrive)
        back = done + to_ns(cpu.cost(d.network_one_way_s))
        self.last_heard_ns = arrive
        box: list[Any] = []

        def serve() -> None:
            try:
                box.append((True, request()))
            except Exception as e:  # noqa: BLE001 - handed to the member, as the client raises it
                box.append((False, e))

        self.sched.call_at(done, serve)
        self.sched.sleep((back - self.sched.now_ns) / NS_PER_S)
        ok, value = box[0]
        if not ok:
            raise value
        return value

    def _fluid_trip(self, request: Callable[[], Any], n: int) -> Any:
        """One job of ``n`` requests on the :class:`~harness.sim.fluid.FluidServer`: ``request()`` runs
        when it completes, and the member goes on at that instant (the round trips are in its rate)."""
        assert self.server.fluid is not None
        box: list[Any] = []
        served = Event(self.sched)

        def serve() -> None:
            self.last_heard_ns = self.sched.now_ns
            try:
                box.append((True, request()))
            except Exception as e:  # noqa: BLE001 - handed to the member, as the client raises it
                box.append((False, e))
            served.set()

        self.last_heard_ns = self.sched.now_ns
        self.server.fluid.submit(n, serve)
        served.wait()
        ok, value = box[0]
        if not ok:
            raise value
        return value

    def _call(self, op: str, path: str, request: Callable[[MemZkSession], Any]) -> Any:
        session = self.session
        if session is None:
            raise RuntimeError(f"{self.member.name}: a ZooKeeper request with no session")
        self.counts[op] += 1
        self.member.on_zk_request(op, path)
        return self._round_trip(lambda: request(session))

    def _watch(self, watch: Watcher | None) -> Watcher | None:
        """The watcher the tree keeps: delivers to the member ``network_one_way_s`` later (one per
        original watcher, so the tree keeps one registration per (watcher, path) as ZooKeeper does)."""
        if watch is None:
            return None
        w = self._wrapped.get(watch)
        if w is None:

            def deliver(event: Any, original: Watcher = watch) -> None:
                self.sched.call_later(self.delays.network_one_way_s, self.member.notify, original, event)

            w = self._wrapped[watch] = deliver
        return w

    # -- ZkPort ---------------------------------------------------------------------------------
    def create(self, path: str, value: bytes = b"", ephemeral: bool = False) -> str:
        return self._call("create", path, lambda s: s.create(path, value, ephemeral))

    def get(self, path: str, watch: Watcher | None = None) -> Any:
        w = self._watch(watch)
        return self._call("get", path, lambda s: s.get(path, w))

    def get_children(self, path: str, watch: Watcher | None = None) -> list[str]:
        w = self._watch(watch)
        return self._call("get_children", path, lambda s: s.get_children(path, w))

    def get_many(self, directory: str, names: Sequence[str]) -> Sequence[Any]:
        """Per request as a loop of ``get`` (:func:`legacy_zk.zkport.get_each`), or on the fluid server
        one burst of ``len(names)`` requests whose reads all happen at its end (shared results)."""
        if self.server.fluid is None or not names:
            return get_each(self.get, directory, names)
        session = self.session
        if session is None:
            raise RuntimeError(f"{self.member.name}: a ZooKeeper request with no session")
        n = len(names)
        self.counts["get"] += n
        self.member.on_zk_requests("get", path_class(f"{directory}/{names[0]}"), n)
        return self._round_trip(lambda: self.server.read_many(session, directory, names), n)

    def exists(self, path: str, watch: Watcher | None = None) -> Any:
        w = self._watch(watch)
        return self._call("exists", path, lambda s: s.exists(path, w))

    def set(self, path: str, value: bytes, version: int = -1) -> Any:
        return self._call("set", path, lambda s: s.set(path, value, version))

    def delete(self, path: str, version: int = -1) -> None:
        self._call("delete", path, lambda s: s.delete(path, version))

    def multi(self, ops: Sequence[MultiOp]) -> list[Any]:
        return self._call("multi", ops[0][1] if ops else "", lambda s: s.multi(ops))

    def create_parents(self, path: str) -> None:
        create_persistent(self.create, path)


class SimLegacyMember:
    """One simulated 0.8 consumer (module contract): the IO shell around legacy_zk's own parts, with
    the shell's steps in :class:`legacy_zk.member.LegacyZkMember`'s order."""

    def __init__(self, group: SimLegacyGroup, name: str, config: ConsumerConfig, history: History) -> None:
        self.group = group
        self.name = name
        self.sched = group.sched
        self.delays = group.delays
        self.config = config
        self.id = make_consumer_id(config.group_id, config.consumer_id)
        self.history = history
        self.handler = SimHandler(self.sched, name)
        self.zk = SimZkPort(self, group.server)
        self.stats: dict[str, int] = {}

        self.stats = dict.fromkeys(STAT_NAMES, 0)
        self.active = False
        self.closing = False
        self.dead = False
        self.ready_ns: int | None = None
        self.stopped = False
        self._pending: Counter[tuple[str, str]] = Counter()
        self._pending_since = 0
        self._aggregate = group.aggregate
        self._events = EventThread(self.handler, f"{self.id}_zk_event_thread")
        self._notifications = self.handler.queue_impl()
        self.watches = GroupWatches(
            self.zk,
            self._events,
            self.handler,
            config.group_id,
            config.topics,
            emit=self.emit,
            stats=self.stats,
            active=lambda: self.active,
            tag=self._tag,
        )
        self._rebalance_lock: SimLock = self.handler.rlock_object()
        self._shutdown = self.handler.event_object()
        self.registry = Registry()
        self.offsets = OffsetStore(
            self.zk,
            config.group_id,
            self.registry,
            fenced=config.offsets_commit_fenced,
            emit=self.emit,
            stats=self.stats,
            lock=self.handler.lock_object(),
            tag=self._tag,
            storage=config.offsets_storage,
            dual=config.dual_commit,
            max_retries=config.offsets_commit_max_retries,
            backoff_ms=config.offsets_channel_backoff_ms,
            shutting_down=lambda: self.closing,
            sleep=self.sched.sleep,
        )
        self.rebalancer = Rebalancer(
            zk=self.zk,
            group=config.group_id,
            member_id=self.id,
            strategy=config.partition_assignment_strategy,
            topics=config.topics,
            max_retries=config.rebalance_max_retries,
            backoff_ms=config.backoff_ms,
            takeover_delay_ms=config.takeover_delay_ms,
            reader=GroupReader(
                self.zk,
                config.group_id,
                self.id,
                config.exclude_internal_topics,
                MalformedLog(self._malformed),
                memo=group.views,
            ),
            registry=self.registry,
            offsets=self.offsets,
            hooks=self,
            emit=self.emit,
            stats=self.stats,
            clock=self.sched.now_s,
            offsets_storage=config.offsets_storage,
            dual_commit=config.dual_commit,
        )
        self._fetch_generation = 0
        #: The running fetcher's partitions (None: not fetching) and its poll: in flight until
        #: ``_poll_busy_ns``, then idle polls of ``fetch_poll_s`` chained from ``_poll_anchor_ns``.
        self._fetch_parts: list[int] | None = None
        self._poll_busy_ns = 0
        self._poll_anchor_ns = 0
        self.main: Task | None = None
        #: This member's share of the client cores in random order (``DelayModel.zk_client_share_sigma``),
        #: drawn each time a watch wakes it to rebalance.
        self.cpu_share = 1.0

    # -- history --------------------------------------------------------------------------------
    def emit(self, kind: str, /, **fields: Any) -> None:
        if self.dead:
            return
        if self._pending:
            self.flush_requests()
        self.history.emit(kind, impl=IMPL, group=self.config.group_id, member=self.id, **fields)

    def on_zk_requests(self, op: str, cls: str, n: int) -> None:
        """``n`` requests of one op on the path class ``cls`` at once (a fluid burst; always aggregated)."""
        now = self.sched.now_ns
        if self._pending and now - self._pending_since >= AGGREGATE_SPAN_NS:
            self.flush_requests()
        if not self._pending:
            self._pending_since = now
        self._pending[(op, cls)] += n

    def on_zk_request(self, op: str, path: str) -> None:
        if self._aggregate:
            now = self.sched.now_ns
            if self._pending and now - self._pending_since >= AGGREGATE_SPAN_NS:
                self.flush_requests()
            if not self._pending:
                self._pending_since = now
            self._pending[(op, path_class(path))] += 1
        else:
            self.emit("zk_request", op=op, path=path)

    def flush_requests(self) -> None:
        pending, self._pending = self._pending, Counter()
        for (op, cls), n in pending.items():
            self.history.emit(
                "zk_request", impl=IMPL, group=self.config.group_id, member=self.id, op=op, path=cls, count=n
            )

    def _malformed(self, err: paths.MalformedZnode) -> None:
        self.emit("malformed", path=err.path, error=str(err))

    def _tag(self) -> str:
        return f"group={self.config.group_id} member={self.id}"

    # -- watch notifications (kazoo's event thread, one at a time) ------------------------------
    def notify(self, watcher: Watcher, event: Any) -> None:
        """A notification reached this member (on the loop): queued for its event thread."""
        if not self.dead and self.session_alive():
            self._notifications.put((watcher, event))

    def session_alive(self) -> bool:
        return self.zk.session is not None

    def _deliver(self) -> None:
        while True:
            watcher, event = self._notifications.get()
            self.group.cpu.work(self.delays.zk_watch_client_s)
            watcher(event)

    # -- AttemptHooks ---------------------------------------------------------------------------
    def shutting_down(self) -> bool:
        return self.closing

    def wait(self, seconds: float) -> bool:
        return self._shutdown.wait(seconds)

    def close_fetchers(self) -> None:
        """``closeFetchers``: stop the fetcher (:meth:`_stop_fetcher`), then commit (auto commit)."""
        self._stop_fetcher()
        if self.config.auto_commit_enable:
            self.offsets.commit("rebalance")

    def _stop_fetcher(self) -> None:
        """``RecordFetcher.stop``: the real member's fetcher thread acknowledges when its kafka-python
        poll in progress returns (:meth:`_await_poll`); fetching ends then."""
        parts, self._fetch_parts = self._fetch_parts, None
        if parts is not None and self.delays.fetch_poll_s > 0:
            self._await_poll(parts)
        self._fetch_generation += 1

    def _await_poll(self, parts: list[int]) -> None:
        """Wait as ``RecordFetcher.stop`` waits for the fetcher's acknowledgement: until the fetch in
        flight returns, else until the idle poll in progress ends, at the next multiple of ``fetch_poll_s``
        after the fetcher went idle (kafka-python's empty polls follow each other) or when a record for
        its partitions comes back (``network_one_way_s`` after it was appended), whichever is first. The
        idle polls themselves are not simulated (they write and move nothing): their phase is computed."""
        now = self.sched.now_ns
        if now < self._poll_busy_ns:
            self.sched.sleep((self._poll_busy_ns - now) / NS_PER_S)
            return
        end = next_tick(self._poll_anchor_ns, now, to_ns(self.delays.fetch_poll_s))
        topic = self.group.topic
        ends = [topic.end(p) for p in parts]
        while self.sched.now_ns < end:
            topic.wait_partitions(parts, (end - self.sched.now_ns) / NS_PER_S)
            if [topic.end(p) for p in parts] != ends:
                self.sched.sleep(self.delays.network_one_way_s)
                return

    def start_fetching(self, offsets: Mapping[TopicPartition, int]) -> None:
        self._fetch_generation += 1
        if self.config.fetch and offsets:
            self._fetch_parts = sorted(tp.partition for tp in offsets)
            self._poll_anchor_ns = self._poll_busy_ns = self.sched.now_ns
            self.handler.spawn(self._fetch, self._fetch_generation, dict(offsets))

    def watch_brokers(self) -> None:
        self.watches.watch_brokers()

    def find_leaders(self, read_brokers: Callable[[], object]) -> None:
        """The leader finder's one pass, a task of its own (as :meth:`legacy_zk.member.LegacyZkMember.find_leaders`)."""

        def finder() -> None:
            with contextlib.suppress(Exception):
                read_brokers()

        self.handler.spawn(finder)

    def assignment_changed(self, what: str, partitions: list[TopicPartition]) -> None:
        if what == "assigned":
            self.group.cpu.work(self.delays.member_apply_s)

    # -- life -----------------------------------------------------------------------------------
    def start(self) -> None:
        """``LegacyZkMember.start`` in virtual time (runs as the member's main task)."""
        self.ready_ns = self.sched.now_ns
        self.emit("ready")
        self.zk.open()
        self.active = True
        self.emit(
            "started",
            topics=self.config.topics,
            session_id=self.zk.session_id(),
            handler="sim",
            fetch=self.config.fetch,
            config=self.config.as_properties(),
        )
        self.handler.spawn(self._events._run)  # noqa: SLF001 - EventThread.start spawns exactly this
        self.handler.spawn(self._deliver)
        self._register()
        self.watches.subscribe()
        self.handler.spawn(self._watcher_executor)
        if self.config.auto_commit_enable:
            self.handler.spawn(self._auto_committer)
        with self._rebalance_lock:
            self.rebalancer.synced_rebalance(["start"])

    def _register(self) -> None:
        path = paths.id_path(self.config.group_id, self.id)
        data = paths.encode_registration(self.config.topics, self.sched.now_ns // 1_000_000)
        self.rebalancer.create_ephemeral(path, data)
        self.emit("registered", path=path, session_id=self.zk.session_id(), session_password="")

    def _watcher_executor(self) -> None:
        # 0.8's watcherExecutorThread also wakes every second to look at the flag; those idle wake-ups
        # change nothing, so the simulated thread waits for the flag itself (quiesce and shutdown set it)
        while not self.closing:
            reasons = self.watches.signal.wait_and_clear(None)
            if self.closing:
                break
            if not self.active:
                continue
            real = [r for r in reasons if r not in WAKE_ONLY]
            if real:
                spread = self.delays.watch_wake_spread_s
                rng = self.group.cpu.rng
                if spread > 0:
                    self.sched.sleep(rng.uniform(0.0, spread))
                if self.group.draws_shares:
                    self.cpu_share = rng.lognormvariate(0.0, self.delays.zk_client_share_sigma)
                with self._rebalance_lock:
                    self.rebalancer.synced_rebalance(real)

    def _auto_committer(self) -> None:
        interval = self.config.auto_commit_interval_ms / 1000.0
        while not self._shutdown.wait(interval):
            self.offsets.commit("auto")

    def _fetch(self, generation: int, start: dict[TopicPartition, int]) -> None:
        """The record fetcher of one ownership (ends when a later one starts or fetching stops)."""
        topic = self.group.topic
        d = self.delays
        positions: dict[TopicPartition, int] = {}
        for tp, off in start.items():
            if off < 0:
                off = 0 if self.config.auto_offset_reset == "smallest" else topic.end(tp.partition)
                self.registry.position_known(tp, off)
            positions[tp] = off
        while generation == self._fetch_generation and not self.dead:
            self._poll_busy_ns = self.sched.now_ns + to_ns(2 * d.network_one_way_s + d.broker_service_s)
            self.sched.sleep(2 * d.network_one_way_s + d.broker_service_s)
            if generation != self._fetch_generation or self.dead:
                return
            got = 0
            for tp in sorted(positions):
                for off in topic.fetch(tp.partition, positions[tp], FETCH_MAX_RECORDS):
                    owned = self.registry.advance(tp, off + 1)
                    self.stats["records"] += 1
                    fields: dict[str, Any] = {
                        "topic": tp.topic,
                        "partition": tp.partition,
                        "offset": off,
                        "seq": topic.seq(tp.partition, off),
                    }
                    if not owned:
                        fields["owned"] = False
                    self.emit("record", **fields)
                    positions[tp] = off + 1
                    got += 1
            if not got:
                # kafka-python's long poll returns empty after fetch.max.wait.ms and is sent again; those
                # empty round trips write nothing and move nothing, so the fetcher waits for its
                # partitions' next record instead (idle members cost no events at 10^4); a stop
                # computes where the idle polls are (_await_poll)
                self._poll_anchor_ns = self.sched.now_ns
                topic.wait_partitions([tp.partition for tp in positions], None)

    def quiesce(self) -> None:
        if self.active:
            self.active = False
            self.watches.signal.set("quiesce")

    def close(self) -> None:
        """0.8's shutdown (``LegacyZkMember.close``): commit, revoke, close the session, ``stopped``."""
        if self.closing or self.dead:
            return
        self.closing = True
        self.active = False
        self._shutdown.set()
        self.watches.signal.set("quiesce")
        self.watches.signal.set("shutdown")
        got = self._rebalance_lock.acquire(
            timeout=max(2.0, self.config.zookeeper_session_timeout_ms / 1000.0)
        )
        try:
            self._stop_fetcher()
            if self.config.auto_commit_enable and self.zk.session is not None:
                self.offsets.commit("shutdown")
            owned = self.registry.clear()
            if owned:
                emit_each(self.emit, "revoked", owned, reason="shutdown")
            self.zk.close()
        finally:
            if got:
                self._rebalance_lock.release()
        self.emit("stopped", stats=dict(self.stats))
        self.flush_requests()
        self.stopped = True
        self.kill_tasks()

    def crash(self) -> None:
        """SIGKILL: every task ends now; the session stays until the server expires it."""
        self.flush_requests()
        self.dead = True
        self.active = False
        self.kill_tasks()
        session = self.zk.session
        if session is None:
            return
        timeout_ns = to_ns(self.config.zookeeper_session_timeout_ms / 1000.0)
        self.sched.call_at(
            self.group.expiry_ns(self._last_heard_by_server(timeout_ns) + timeout_ns), session.expire
        )

    def _last_heard_by_server(self, timeout_ns: int) -> int:
        """When the server last heard from this (now dead) member: its last request, or a later ping.
        kazoo (``ConnectionHandler._connect_attempt``) pings when nothing was sent for read_timeout / 2 -
        jitter, read_timeout = 2/3 of the session timeout and jitter = ``randint(1, 40) / 100`` s drawn
        anew each time; pings are not simulated while the member lives, so their instants since its last
        request are drawn here (from the unit's random source)."""
        rng = self.group.cpu.rng
        heard, now, third = self.zk.last_heard_ns, self.sched.now_ns, timeout_ns // 3
        while True:
            jitter = to_ns(rng.randint(*KAZOO_PING_JITTER_CS) / 100)
            ping = heard + max(third - jitter, jitter)
            if ping > now:
                return heard
            heard = ping

    def kill_tasks(self) -> None:
        me = self.sched.current() if self.sched.in_task() else None
        for task in list(self.handler.tasks):
            if task is not me and not task.done:
                self.sched.kill(task)
        if self.main is not None and self.main is not me and not self.main.done:
            self.sched.kill(self.main)


class SimLegacyGroup:
    """The simulated legacy_zk group of one unit (a :class:`harness.sim.group.SimGroup`)."""

    impl = IMPL

    def __init__(self, ctx: SimContext) -> None:
        s = ctx.scenario
        if s.group.legacy_zk.offsets_storage == "kafka":
            raise ConfigError(
                "the simulator has no offset manager: offsets_storage = 'kafka' is not simulated"
            )
        self.ctx = ctx
        self.sched = ctx.sched
        self.delays = ctx.delays
        self.scenario = s
        self.group_id = s.group.id
        self.partitions = ctx.members if s.topic.partitions == "members" else int(s.topic.partitions)
        self.fluid = ctx.members >= int(ctx.options.get("fluid_from", FLUID_FROM))
        self.aggregate = self.fluid or ctx.members >= int(ctx.options.get("aggregate_from", AGGREGATE_FROM))
        self.server = SimZkServer(ctx.sched, ctx.delays, fluid=self.fluid)
        self.views = ViewMemo()
        self.cpu = ClientCpu(
            ctx.sched, ctx.delays, ctx.rng, random_order=bool(ctx.delays.zk_client_random_order)
        )
        #: Whether members draw their share of the client cores: only where it is spent (requests on a
        #: client core in random order, not the fluid server's bursts), so other models keep their draws.
        self.draws_shares = (
            ctx.delays.zk_client_share_sigma > 0 and not self.fluid and not self.cpu.books_ahead
        )
        self._tick_ns = to_ns(ctx.delays.zk_tick_s)
        self._tick_phase_ns = int(ctx.rng.uniform(0, self._tick_ns)) if self._tick_ns > 0 else 0
        self.topic = ctx.topic or SimTopic(ctx.sched, s.topic.name, self.partitions)
        self._layout()
        self._members: dict[str, SimLegacyMember] = {}
        self._props: dict[str, Mapping[str, str] | None] = {}

    def expiry_ns(self, deadline_ns: int) -> int:
        """When the server expires a session due at ``deadline_ns`` (last heard + timeout): the first
        tick boundary after it (ZooKeeper's ``ExpiryQueue.roundToNextInterval``; the boundaries' phase
        drawn once per unit); ``zk_tick_s`` 0: at the deadline."""
        tick = self._tick_ns
        if tick <= 0:
            return deadline_ns
        return next_tick(self._tick_phase_ns, deadline_ns, tick)

    def _layout(self) -> None:
        """What a real broker writes before members start: broker 1 and the topic's replicas."""
        admin = self.server.tree.session()
        admin.create_parents(paths.BROKER_IDS)
        admin.create(paths.broker_path(BROKER_ID), paths.encode_broker("127.0.0.1", 9092, 0), ephemeral=True)
        admin.create_parents(paths.BROKER_TOPICS)
        admin.create(
            paths.topic_path(self.topic.name),
            paths.encode_topic({p: [BROKER_ID] for p in range(self.partitions)}),
        )

    def config_for(self, name: str, props: Mapping[str, str] | None = None) -> ConsumerConfig:
        """The member's configuration: the real member's ``-X`` properties (``legacy_argv``), parsed as
        the real member parses them."""

        argv = legacy_argv(
            self.scenario, name, Endpoints("sim", "sim"), Path("-"), self.group_id, self.topic.name, props
        )
        raw = dict(argv[i + 1].split("=", 1) for i, a in enumerate(argv) if a == "-X")
        attrs = parse_properties(raw)
        # as 0.8's host-millis-uuid: ordered by start time (a joiner sorts after the members before it)
        cid = f"sim-{self.sched.now_ns // 1_000_000:013d}-{name}"
        attrs.update(group_id=self.group_id, zookeeper_connect="sim", name=name, consumer_id=cid)
        return ConsumerConfig(**attrs, topics={self.topic.name: 1}).validate()

    # -- SimGroup -------------------------------------------------------------------------------
    def start_member(
        self, name: str, kind: str | None = None, props: Mapping[str, str] | None = None
    ) -> None:
        if kind not in (None, IMPL):
            raise ConfigError(f"the simulator cannot start a {kind} member in a legacy_zk unit (migration)")
        if props is None:
            props = self._props.get(name)
        self._props[name] = props
        old = self._members.get(name)
        if old is not None and not (old.stopped or old.dead):
            raise RuntimeError(f"member {name} is running already")
        m = SimLegacyMember(self, name, self.config_for(name, props), self.ctx.history(name, "member"))
        self._members[name] = m
        m.main = self.sched.spawn(m.start, name=f"{name}:start")

    def stop_member(self, name: str) -> None:
        m = self._members.get(name)
        if m is not None:
            self.sched.spawn(m.close, name=f"{name}:close")

    def crash_member(self, name: str) -> None:
        m = self._members.get(name)
        if m is not None:
            m.crash()

    def ready_ns(self, name: str) -> int | None:
        m = self._members.get(name)
        return m.ready_ns if m is not None else None

    def members(self) -> list[str]:
        return [n for n, m in self._members.items() if not (m.stopped or m.dead)]

    def quiesce(self) -> None:
        for m in self._members.values():
            m.quiesce()

    def close(self) -> None:
        """Quiesce every member (no teardown herd), then stop each cleanly; returns once spawned."""
        self.quiesce()
        for name in self.members():
            self.stop_member(name)


def round_s(members: int, delays: DelayModel) -> float:
    """At least how long one rebalance round of ``members`` takes (virtual seconds): each member reads
    every member's registration, ``members``² reads through the one ZooKeeper server, served no faster
    than ``zk_service_s`` each nor than the client cores issue them (``zk_client_s`` / ``client_cores``)."""
    per_read = max(
        delays.zk_service_s, delays.zk_client_s / delays.client_cores if delays.client_cores else 0.0
    )
    return members * members * per_read


def make_group(ctx: SimContext) -> SimLegacyGroup:
    """The simulated legacy_zk group of one unit (module contract)."""
    return SimLegacyGroup(ctx)
