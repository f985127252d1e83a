"""The broker process: asyncio TCP server, per-connection framing, dispatch, lifecycle.

Contract
--------
* One :class:`Broker` per process. :meth:`Broker.start` opens the data directory, binds
  ``host:port`` (port 0: any free port, see :attr:`Broker.port`), registers in ZooKeeper when
  configured, starts loading the group log in the background (group APIs answer
  COORDINATOR_LOAD_IN_PROGRESS until it is done; damaged lines are skipped, see
  :mod:`coordinator.groups.log`) and finally writes the ready file.
* Connections are served concurrently; each one serves **one request at a time**, as Kafka's muted
  channel does (spec 2.19): the next request of a connection is read and decoded only after the
  response to the previous one was written (or, for Produce with acks=0, found to be none). A
  JoinGroup parked in the join barrier or a long-polling Fetch therefore holds back everything the
  client pipelined behind it on that connection: a LeaveGroup or OffsetCommit sent behind a parked
  JoinGroup takes effect after the join is answered, never before. Responses go out in request
  order.
* Bad input never affects other connections and never half-applies a change:

  - a frame size below 8 bytes or above ``max_request_bytes``, undecodable bytes, an API key kio
    does not know: the connection is closed;
  - a version kio knows but the broker does not advertise: UNSUPPORTED_VERSION if that response
    has a top-level error code, else the connection is closed; ApiVersions of an unknown version is
    answered as v0 with UNSUPPORTED_VERSION and the full version list (clients then retry lower);
  - a handler that raises: UNKNOWN_SERVER_ERROR where the response can carry it, else close.

* **Advertised address.** Metadata, FindCoordinator and DescribeCluster name the address the
  client connected through, so a member that reached the broker through a proxy keeps using it:
  host = ``advertised_host`` when configured, else the connection's peer IP when that is a loopback
  address (the harness's proxies listen on the broker's port on a loopback IP of their own and
  connect upstream from it), else the connection's local IP; port = the connection's local port.
  A connection may also start with a PROXY protocol v1 line (``PROXY TCP4 <src> <dst> <sport>
  <dport>\\r\\n``, as HAProxy sends it); its destination is then advertised on that connection.
  (A Kafka frame cannot start with ``PROX``: that size exceeds any allowed frame.)
* **Request counters.** Every decoded request is counted by API. Every ``metrics_interval_s``
  (and at shutdown) the counts since the previous event go to the history as one
  ``broker_request`` event: ``{"impl": "coordinator", "broker_id": 0, "interval_s": 1.0,
  "requests": {"Heartbeat": 12, ...}, "total": 12, "handling_us": {"Heartbeat": 150, ...},
  "rejected": {"malformed": 1, ...}}`` (``handling_us``: summed synchronous handling time -- decode
  and handler, not the wait of a parked request; ``rejected``: connections closed or requests
  refused, by reason; ``group_failure`` counts groups reset after an internal error, see
  :mod:`coordinator.groups.runner`). Nothing is written for an interval without requests. Cheap: two counter
  increments per request.
* **Coordination events.** Every decoded request of a coordination API
  (:data:`harness.kernel.events.COORDINATION_APIS`) is one ``group_request`` history event, written as it is
  dispatched; a ConsumerGroupHeartbeat's is written by the consumer group type once its answer is known (it
  carries the answer's epoch, error and whether the exchange carried a change: :mod:`coordinator.groups.consumer`).
* **Replication** (``replication.enabled``): the broker runs a
  :class:`~coordinator.replicas.manager.ReplicaManager` (the data path of every partition: leader or follower)
  with its :class:`~coordinator.replicas.fetcher.FetcherManager`; the ZooKeeper registration is built with the
  manager as its partition-state sink and the history, and is the manager's ISR writer and the data
  plane's topic creator; the group coordinator gets the manager as its replicated log. :meth:`Broker.stop`
  stops the fetchers, then the manager (led partitions resigned: leadership listeners told ``on_resigned``, parked
  produces answered; the high-watermark checkpoint written), then the registration.
"""

from __future__ import annotations

import asyncio
import concurrent.futures
import contextlib
import inspect
import ipaddress
import json
import logging
import os
import signal
import time
from collections import Counter
from collections.abc import Callable
from pathlib import Path
from typing import Any, Protocol

from kio.schema.api_versions.v0.response import ApiVersion as ApiVersionV0
from kio.schema.api_versions.v0.response import ApiVersionsResponse as ApiVersionsResponseV0
from kio.schema.errors import ErrorCode

from coordinator.api_keys import ApiKey
from coordinator.cluster import ClusterView
from coordinator.config import BrokerConfig
from coordinator.context import RequestContext
from coordinator.core.consumer.api import TopicsImage
from coordinator.core.consumer.machine import ConsumerGroupCoordinator
from coordinator.core.group.machine import GroupCoordinator
from coordinator.core.group.offsets import OffsetManager
from coordinator.dataplane import DATA_VERSIONS, DataPlane
from coordinator.dataplane.local import LocalBackend
from coordinator.dataplane.replicated import ReplicatedBackend
from coordinator.groups import GROUP_VERSIONS, GroupApis
from coordinator.groups.consumer import ConsumerMachine
from coordinator.groups.log import GroupLog
from coordinator.groups.runner import GroupFailure
from coordinator.replicas.fetcher import FetcherManager
from coordinator.replicas.manager import ReplicaManager
from coordinator.topics import TopicStore
from coordinator.wire import (
    ZERO_TD,
    CloseConnection,
    FrameTooLarge,
    MalformedRequest,
    UnknownApi,
    VersionNotServed,
    check_frame_size,
    decode_request,
    encode_response,
    error_response,
    make,
    nested,
    response_class,
)
from harness.kernel.events import COORDINATION_APIS
from harness.kernel.history import History, NullHistory

__all__ = ["API_NAMES", "Broker", "CloseConnection", "Peer", "SERVED_VERSIONS", "run_broker"]

log = logging.getLogger("coordinator")

_WRITE_HIGH_WATER = 4 * 1024 * 1024
_PROXY_MAX = 107  # longest PROXY v1 line, CRLF included

#: API key -> Kafka's name of the API (history events and log lines).
API_NAMES: dict[int, str] = {k: k.title for k in ApiKey}

#: Everything this broker advertises in ApiVersions: API key -> (min, max).
SERVED_VERSIONS: dict[int, tuple[int, int]] = {ApiKey.API_VERSIONS: (0, 4), **DATA_VERSIONS, **GROUP_VERSIONS}


def _advertised_host(local_ip: str, peer_ip: str) -> str:
    """The host to advertise on a connection: the peer's IP if it is a loopback address, else ours.

    A fault-injection proxy (:mod:`harness.faults.proxy`) listens on the broker's port on a loopback
    IP of its own and connects upstream *from* that IP; advertising the peer IP sends the member
    back through the proxy.
    """
    try:
        if ipaddress.ip_address(peer_ip).is_loopback:
            return peer_ip
    except ValueError:
        pass
    return local_ip


class Peer(Protocol):
    """What the broker needs to know about the other end of a connection."""

    client_host: str
    advertised_host: str
    advertised_port: int


class Connection:
    """One client connection: one request at a time, as Kafka's muted channel.

    Kafka 3.7.0 ``SocketServer.Processor.processCompletedReceives`` mutes a channel after it read
    one request (``selector.mute``) and ``processCompletedSends`` / ``processNewResponses`` (a
    ``NoOpResponse``) unmute it once that request's response was sent or was found to need none.
    Here the same holds by construction: :meth:`_serve` is one loop that reads a frame, dispatches
    it, waits for its response (a parked JoinGroup or SyncGroup, a long-polling Fetch) and writes
    it, and only then reads the next frame. Requests a client pipelines wait, undecoded, in the
    stream buffer (``GroupCoordinator.addMemberAndRebalance`` relies on this: "sockets are muted
    while the JoinGroup is in purgatory").
    """

    def __init__(self, broker: Broker, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        self.broker = broker
        self.reader = reader
        self.writer = writer
        sock = writer.get_extra_info("sockname") or ("127.0.0.1", broker.port)
        peer = writer.get_extra_info("peername") or ("?", 0)
        self.advertised_host: str = broker.config.advertised_host or _advertised_host(sock[0], peer[0])
        self.advertised_port: int = sock[1]
        self.peer = f"{peer[0]}:{peer[1]}"
        self.client_host = f"/{peer[0]}"
        #: Done once the broker closes this connection (a response being awaited is then dropped).
        self.closed: asyncio.Future[None] = asyncio.get_running_loop().create_future()

    def close(self) -> None:
        """Stop serving: abort the socket and wake a wait for a parked response."""
        if not self.closed.done():
            self.closed.set_result(None)
        with contextlib.suppress(Exception):
            self.writer.transport.abort()

    async def serve(self) -> None:
        try:
            await self._serve()
        except (asyncio.IncompleteReadError, ConnectionError):
            pass
        except CloseConnection as e:
            self.broker.rejected[str(e).split(":", 1)[0]] += 1
            log.warning("closing connection from %s: %s", self.peer, e)
        except asyncio.CancelledError:
            raise
        except Exception:
            log.exception("connection from %s failed", self.peer)
        finally:
            self.close()

    async def _serve(self) -> None:
        reader = self.reader
        writer = self.writer
        max_size = self.broker.config.max_request_bytes
        head = await reader.readexactly(4)
        if head == b"PROX":
            await self._proxy_header()
            head = await reader.readexactly(4)
        while True:
            size = int.from_bytes(head, "big", signed=True)
            try:
                check_frame_size(size, max_size)
            except FrameTooLarge as e:
                raise CloseConnection(f"bad_frame_size: {e}") from None
            frame = await reader.readexactly(size)
            out = self.broker.dispatch(frame, self)
            if out is not None:  # None: Produce acks=0, no response (Kafka's NoOpResponse)
                correlation_id, api_key, version, result = out
                if inspect.isawaitable(result):
                    result = await self._response_of(api_key, version, result)
                    if result is None:
                        return
                try:
                    data = encode_response(correlation_id, result)
                except Exception:
                    log.exception(
                        "cannot encode %s v%d response for %s", API_NAMES.get(api_key), version, self.peer
                    )
                    return
                writer.write(data)
                if writer.transport.get_write_buffer_size() > _WRITE_HIGH_WATER:
                    await writer.drain()
            head = await reader.readexactly(4)

    async def _response_of(self, api_key: int, version: int, awaitable: Any) -> Any:
        """Wait for a parked response; None if the connection must close instead."""
        fut = asyncio.ensure_future(awaitable)
        try:
            await asyncio.wait((fut, self.closed), return_when=asyncio.FIRST_COMPLETED)
        finally:
            if not fut.done():
                fut.cancel()
        if self.closed.done() or fut.cancelled():
            return None
        exc = fut.exception()
        if exc is None:
            return fut.result()
        log.error("%s v%d from %s failed", API_NAMES.get(api_key), version, self.peer, exc_info=exc)
        return error_response(api_key, version, ErrorCode.unknown_server_error)

    async def _proxy_header(self) -> None:
        try:
            rest = await self.reader.readuntil(b"\r\n")
        except (asyncio.LimitOverrunError, asyncio.IncompleteReadError):
            raise CloseConnection("bad_proxy_header: no CRLF") from None
        line = (b"PROX" + rest).decode("ascii", "replace").strip()
        parts = line.split(" ")
        if len(line) + 2 > _PROXY_MAX or len(parts) < 2 or parts[0] != "PROXY":
            raise CloseConnection(f"bad_proxy_header: {line[:40]!r}")
        if parts[1] in ("TCP4", "TCP6") and len(parts) == 6:
            try:
                port = int(parts[5])
            except ValueError:
                raise CloseConnection(f"bad_proxy_header: {line!r}") from None
            if not 0 < port < 65536:
                raise CloseConnection(f"bad_proxy_header: {line!r}")
            self.client_host = f"/{parts[2]}"
            if self.broker.config.advertised_host is None:
                self.advertised_host = parts[3]
            self.advertised_port = port
        elif parts[1] != "UNKNOWN":
            raise CloseConnection(f"bad_proxy_header: {line!r}")


class Broker:
    """The broker: storage, handlers, server, metrics, ZooKeeper registration."""

    def __init__(
        self,
        config: BrokerConfig,
        *,
        history: History | None = None,
        machine: GroupCoordinator | None = None,
        cluster: ClusterView | None = None,
        zk_factory: Callable[..., Any] | None = None,
        consumer_machine: Callable[[TopicsImage, OffsetManager], ConsumerMachine] | None = None,
    ) -> None:
        """``history`` receives ``broker_request`` counters and group events (the harness passes its
        writer, source ``broker-<id>``, role ``broker``); None drops them. The broker closes it at stop.

        ``cluster`` and ``zk_factory`` (called as :class:`coordinator.zookeeper.registration.ZkRegistration`
        is) replace the cluster view and the ZooKeeper registration: tests of the replicated data path feed
        partition states themselves. ``consumer_machine(topics, offsets)`` makes the consumer group type's machine
        over the broker's topics and the classic machine's offsets (default: ``ConsumerGroupCoordinator`` with
        ``config.consumer``; tests give a fake one)."""
        self.config = config
        self.history: History = history if history is not None else NullHistory()
        data_dir = Path(config.data_dir) if config.data_dir is not None else None
        self.store = TopicStore(data_dir)
        replicated = config.replication.enabled
        if cluster is None:
            if replicated:
                cluster = ClusterView(config.broker_id, config.offsets_partitions, replicated=True)
            else:
                cluster = ClusterView(config.broker_id, config.offsets_partitions)
        self.cluster = cluster
        self._zk_factory = zk_factory
        self.replicas: ReplicaManager | None = None
        self.fetchers: FetcherManager | None = None
        group_extra: dict[str, Any] = {}
        self.partitions: LocalBackend | ReplicatedBackend
        if replicated:
            self.replicas = ReplicaManager(config, self.store, self.cluster, self.history)
            self.fetchers = FetcherManager(config, self.replicas, self.cluster)
            self.partitions = ReplicatedBackend(config, self.store, self.cluster, self.replicas)
            group_extra = {"replicated": self.replicas, "replication": config.replication}
        else:
            self.partitions = LocalBackend(config, self.store, self.cluster)
        self.data = DataPlane(config, self.store, self.cluster, self.partitions)
        self.group_log = GroupLog(data_dir / "groups") if data_dir is not None else None
        self.machine = machine or GroupCoordinator(config.group)
        self.rejected: Counter[str] = Counter()
        self.groups = GroupApis(
            self.machine,
            self.cluster,
            self.store,
            self.history,
            self.group_log,
            broker_id=config.broker_id,
            known_topic=self._known_topic,
            rejected=self.rejected,
            consumer=lambda topics: (consumer_machine or self._consumer_machine)(
                topics, self.machine.offsets
            ),
            **group_extra,
        )
        self.served = {ApiKey.API_VERSIONS: SERVED_VERSIONS[ApiKey.API_VERSIONS], **DATA_VERSIONS}
        self.served.update(self.groups.versions())
        self.handlers: dict[int, Callable[[RequestContext, Any], Any]] = {
            ApiKey.API_VERSIONS: self.api_versions,
            **self.data.handlers(),
            **self.groups.handlers(),
        }
        self.requests: Counter[int] = Counter()
        # ConsumerGroupHeartbeat's event needs its answer: the consumer group type writes it (coordinator.groups.consumer)
        self._coordination_keys = frozenset(
            k for k, n in API_NAMES.items() if n in COORDINATION_APIS and k != ApiKey.CONSUMER_GROUP_HEARTBEAT
        )
        self.handling_ns: Counter[int] = Counter()
        self._reported: Counter[int] = Counter()
        self._reported_rejected: Counter[str] = Counter()
        self._reported_ns: Counter[int] = Counter()
        self._last_report = time.monotonic()
        self.zk: Any = None
        #: Runs the ZooKeeper shell's blocking calls (start, create_topic), never the loop's default executor: while
        #: ZooKeeper is unreachable they wait until the shell's session is closed.
        self._zk_executor: concurrent.futures.ThreadPoolExecutor | None = None
        self.port = config.port
        self._server: asyncio.Server | None = None
        self._connections: dict[asyncio.Task[None], Connection] = {}
        self._bg: set[asyncio.Task[Any]] = set()
        self._stopped = asyncio.Event()
        self.loaded = asyncio.Event()

    def _consumer_machine(self, topics: TopicsImage, offsets: OffsetManager) -> ConsumerMachine:
        """The consumer group protocol's machine over ``topics``, sharing the classic machine's ``offsets``."""
        return ConsumerGroupCoordinator(self.config.consumer, topics, offsets=offsets)

    def _known_topic(self, name: str) -> bool:
        if self.store.get(name) is not None:
            return True
        return self.zk is not None and self.zk.knows_topic(name)

    # ------------------------------------------------------------------ ApiVersions

    def _api_keys(self, cls: type) -> tuple[Any, ...]:
        return tuple(
            make(cls, api_key=k, min_version=lo, max_version=hi)
            for k, (lo, hi) in sorted(self.served.items())
        )

    def api_versions(self, ctx: RequestContext, req: Any) -> Any:
        cls = response_class(ApiKey.API_VERSIONS, ctx.api_version)
        return make(
            cls,
            error_code=ErrorCode.none,
            api_keys=self._api_keys(nested(cls, "api_keys")),
            throttle_time=ZERO_TD,
        )

    def api_versions_error(self) -> Any:
        """ApiVersions v0 with UNSUPPORTED_VERSION (the answer to a version the broker cannot parse)."""
        self.rejected["unsupported_version"] += 1
        return ApiVersionsResponseV0(
            error_code=ErrorCode.unsupported_version, api_keys=self._api_keys(ApiVersionV0)
        )

    # ------------------------------------------------------------------ dispatch

    def dispatch(self, frame: bytes, peer: Peer) -> tuple[int, int, int, Any] | None:
        """Decode and handle one request frame from ``peer`` (no socket IO).

        Returns ``(correlation_id, api_key, api_version, result)`` where ``result`` is a kio
        response, a future or coroutine of one (write it when done), or None when nothing must be
        answered (Produce acks=0). Raises :class:`CloseConnection` when the connection must close.
        """
        t0 = time.perf_counter_ns()
        try:
            req = decode_request(frame, self.served)
        except VersionNotServed as e:
            if e.api_key == ApiKey.API_VERSIONS:
                return e.correlation_id, ApiKey.API_VERSIONS, 0, self.api_versions_error()
            resp = error_response(e.api_key, e.api_version, ErrorCode.unsupported_version)
            if resp is None:
                raise CloseConnection(f"unsupported_version: {e}") from None
            self.rejected["unsupported_version"] += 1
            return e.correlation_id, e.api_key, e.api_version, resp
        except UnknownApi as e:
            if e.api_key == ApiKey.API_VERSIONS:
                return e.correlation_id, ApiKey.API_VERSIONS, 0, self.api_versions_error()
            raise CloseConnection(f"unknown_api: {e}") from None
        except MalformedRequest as e:
            raise CloseConnection(f"malformed: {e}") from None
        api_key = req.api_key
        self.requests[api_key] += 1
        if api_key in self._coordination_keys:
            # Coordination traffic is counted exactly, one event per request (the herd); the
            # steady-state APIs only through the periodic broker_request counters.
            self.history.emit(
                "group_request",
                impl="coordinator",
                broker_id=self.config.broker_id,
                api=API_NAMES.get(api_key),
                client=req.client_id,
                group=getattr(req.body, "group_id", None) or getattr(req.body, "key", None),
                # JoinGroup / SyncGroup / LeaveGroup: who asked, and in which generation
                member=getattr(req.body, "member_id", None),
                generation=getattr(req.body, "generation_id", None),
                # SyncGroup: how many assignments it carries (the leader's, one per member; a
                # follower's is empty): one leader SyncGroup per rebalance round
                assignments=assignment_count(req.body),
            )
        ctx = RequestContext(
            api_key,
            req.api_version,
            req.correlation_id,
            req.client_id,
            peer.client_host,
            peer.advertised_host,
            peer.advertised_port,
        )
        try:
            result = self.handlers[api_key](ctx, req.body)
        except CloseConnection:
            raise
        except Exception as e:
            if isinstance(e, GroupFailure):  # the shell logged the traceback and reset the group
                log.error(
                    "%s v%d from %s failed: %s", API_NAMES.get(api_key), req.api_version, peer.client_host, e
                )
            else:
                log.exception(
                    "%s v%d from %s failed", API_NAMES.get(api_key), req.api_version, peer.client_host
                )
            result = error_response(api_key, req.api_version, ErrorCode.unknown_server_error)
            if result is None:
                raise CloseConnection(f"handler_error: {API_NAMES.get(api_key)}") from None
        self.handling_ns[api_key] += time.perf_counter_ns() - t0
        if result is None:
            return None
        return req.correlation_id, api_key, req.api_version, result

    # ------------------------------------------------------------------ lifecycle

    async def start(self) -> None:
        """Bind, register, start loading groups, write the ready file (see the module docstring)."""
        cfg = self.config
        self._server = await asyncio.start_server(self._on_client, cfg.host, cfg.port, backlog=1024)
        self.port = self._server.sockets[0].getsockname()[1]
        self._spawn(self._load_groups())
        if self.replicas is not None:
            self.replicas.start()
        if cfg.zookeeper:
            loop = asyncio.get_running_loop()
            factory: Callable[..., Any] | None = self._zk_factory
            if factory is None:
                # deferred: start-up: kazoo loads only for a broker registered in ZooKeeper
                from coordinator.zookeeper.registration import ZkRegistration

                factory = ZkRegistration
            zk: Any
            if self.replicas is not None:
                zk = factory(
                    cfg, self.store, self.cluster, self.port, loop, sink=self.replicas, history=self.history
                )
            else:
                zk = factory(cfg, self.store, self.cluster, self.port, loop)
            self._zk_executor = concurrent.futures.ThreadPoolExecutor(4, thread_name_prefix="zk-calls")
            await loop.run_in_executor(self._zk_executor, zk.start)
            self.zk = zk
            if self.replicas is not None:
                self.replicas.isr_writer = zk
            self.partitions.attach(zk, self._zk_executor)
        if cfg.metrics_interval_s > 0:
            self._spawn(self._report_loop())
        self.history.emit(
            "started", impl="coordinator", broker_id=cfg.broker_id, host=cfg.host, port=self.port
        )
        log.info(
            "broker %d listening on %s:%d (data dir %s)", cfg.broker_id, cfg.host, self.port, cfg.data_dir
        )
        if cfg.ready_file is not None:
            path = Path(cfg.ready_file)
            tmp = path.with_name(path.name + ".tmp")
            tmp.write_text(json.dumps({"port": self.port, "pid": os.getpid(), "broker_id": cfg.broker_id}))
            os.replace(tmp, path)

    def _spawn(self, coro: Any) -> None:
        task = asyncio.ensure_future(coro)
        self._bg.add(task)
        task.add_done_callback(self._bg.discard)

    async def _load_groups(self) -> None:
        t0 = time.monotonic()
        try:
            count, skipped = await self.groups.load()
        except Exception:
            groups = len(self.machine.group_ids())
            log.exception(
                "reading the group log failed; serving the %d groups loaded before the error", groups
            )
        else:
            log.info(
                "group log loaded: %d records (%d skipped) in %.3fs", count, skipped, time.monotonic() - t0
            )
        finally:
            self.loaded.set()

    async def _on_client(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        task = asyncio.current_task()
        assert task is not None
        conn = Connection(self, reader, writer)
        self._connections[task] = conn
        try:
            await conn.serve()
        finally:
            self._connections.pop(task, None)

    def request_stop(self) -> None:
        self._stopped.set()

    async def wait_stopped(self) -> None:
        await self._stopped.wait()

    async def stop(self) -> None:
        """Stop serving and release everything; idempotent enough for signal + finally."""
        if self._server is not None:
            self._server.close()
        # Close the connections rather than cancel their tasks: their loops then end normally
        # (asyncio logs an error for a cancelled client-connected callback), also one waiting for
        # a parked response.
        for conn in list(self._connections.values()):
            conn.close()
        if self._connections:
            await asyncio.wait(list(self._connections), timeout=2.0)
        for task in list(self._connections) + list(self._bg):
            task.cancel()
        await asyncio.gather(*self._connections, *self._bg, return_exceptions=True)
        if self.fetchers is not None:
            await self.fetchers.stop()
        if self.replicas is not None:
            await self.replicas.stop()
        self.groups.cancel_timers()
        self.report()
        if self.zk is not None:
            # on a thread of its own: every ZooKeeper executor thread may be waiting on an unreachable ZooKeeper,
            # and closing the session (zk.stop) is what fails those waits
            stopper = concurrent.futures.ThreadPoolExecutor(1, thread_name_prefix="zk-stop")
            try:
                await asyncio.get_running_loop().run_in_executor(stopper, self.zk.stop)
            finally:
                stopper.shutdown(wait=False)
            self.zk = None
        if self._zk_executor is not None:
            self._zk_executor.shutdown(wait=False, cancel_futures=True)
            self._zk_executor = None
        if self.group_log is not None:
            self.group_log.close()
        self.store.close()
        self.history.emit("stopped", impl="coordinator", broker_id=self.config.broker_id)
        self.history.close()
        log.info("broker %d stopped", self.config.broker_id)

    # ------------------------------------------------------------------ metrics

    def report(self) -> None:
        """Emit one ``broker_request`` event with the counts since the previous one (if any)."""
        now = time.monotonic()
        delta = self.requests - self._reported
        rejected = self.rejected - self._reported_rejected
        if not delta and not rejected:
            self._last_report = now
            return
        handling = self.handling_ns - self._reported_ns
        self.history.emit(
            "broker_request",
            impl="coordinator",
            broker_id=self.config.broker_id,
            interval_s=round(now - self._last_report, 3),
            requests={API_NAMES.get(k, str(k)): n for k, n in sorted(delta.items())},
            total=sum(delta.values()),
            handling_us={API_NAMES.get(k, str(k)): round(ns / 1000) for k, ns in sorted(handling.items())},
            rejected=dict(rejected),
        )
        self._reported = Counter(self.requests)
        self._reported_rejected = Counter(self.rejected)
        self._reported_ns = Counter(self.handling_ns)
        self._last_report = now

    async def _report_loop(self) -> None:
        while True:
            await asyncio.sleep(self.config.metrics_interval_s)
            self.report()


async def run_broker(config: BrokerConfig, history: History | None = None) -> None:
    """Run a broker until SIGTERM / SIGINT, then stop it cleanly; events go to ``history``."""
    broker = Broker(config, history=history)
    loop = asyncio.get_running_loop()
    for sig in (signal.SIGTERM, signal.SIGINT):
        loop.add_signal_handler(sig, broker.request_stop)
    try:
        await broker.start()
        await broker.wait_stopped()
    finally:
        await broker.stop()


def assignment_count(body: object) -> int | None:
    """The number of member assignments a SyncGroup request carries (None for other requests)."""
    assignments = getattr(body, "assignments", None)
    return None if assignments is None else len(assignments)
