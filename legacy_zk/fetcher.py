"""The record fetcher: kafka-python with manual assignment, one thread per member.

Contract
--------
* :meth:`RecordFetcher.start` replaces the fetched set with exactly the given partitions. Each is
  positioned at its offset when it is >= 0 (the offset stored in ZooKeeper: the next one to read);
  at -1 it is resolved with ``auto.offset.reset`` (``smallest`` -> earliest, ``largest`` ->
  latest) and the resolved position is reported once through ``on_position``.
* Every record is handed to ``on_record(tp, offset, value)`` on the fetcher's thread, in offset
  order per partition.
* :meth:`RecordFetcher.stop` returns only when no further ``on_record`` call can happen until the
  next :meth:`start`; records fetched but not yet handed over are dropped (0.8 cleared its chunk
  queues the same way), so "processed" always means "handed to on_record".
* The ``KafkaConsumer`` is created lazily on the first :meth:`start` (no group id: nothing of
  kafka-python's group machinery runs) and re-created after errors; errors go to ``on_error`` and
  are retried after ``retry_s``. :meth:`close` stops the thread and closes the client.

kafka-python is thread-based: a fetcher only runs next to kazoo's *threading* handler. Members
hosted many-per-process on gevent run without a fetcher (coordination-only; see
:mod:`harness.members.legacy_host`).
"""

from __future__ import annotations

import logging
import threading
from collections.abc import Callable, Mapping
from typing import Any, Literal, cast

from legacy_zk.ids import TopicPartition

log = logging.getLogger("legacy_zk")

RecordCallback = Callable[[TopicPartition, int, bytes | None], None]


#: The fetcher thread's kafka-python ``poll`` timeout: a stop (``closeFetchers``) is acknowledged when
#: the poll in progress returns, at the latest this long after it began.
POLL_MS = 100
#: The fetch's long poll (0.8's ``fetch.wait.max.ms`` default): how long the broker holds a Fetch of
#: partitions with nothing new.
FETCH_MAX_WAIT_MS = 100


class RecordFetcher:
    """Fetches the member's partitions from the broker (see module docstring)."""

    def __init__(
        self,
        bootstrap: Callable[[], str | None],
        auto_offset_reset: str,
        on_record: RecordCallback,
        on_position: Callable[[TopicPartition, int], None] | None = None,
        on_error: Callable[[str], None] | None = None,
        client_id: str = "herdlab-legacy-zk",
        name: str = "fetcher",
        poll_ms: int = POLL_MS,
        retry_s: float = 1.0,
    ) -> None:
        self._bootstrap = bootstrap
        self._reset: Literal["earliest", "latest"] = (
            "earliest" if auto_offset_reset == "smallest" else "latest"
        )
        self._on_record = on_record
        self._on_position = on_position
        self._on_error = on_error
        self._client_id = client_id
        self._poll_ms = poll_ms
        self._retry_s = retry_s
        self._cond = threading.Condition()
        self._target: dict[TopicPartition, int] = {}
        self._gen = 0
        self._acked = 0
        self._closed = False
        self._consumer: Any = None  # a kafka.KafkaConsumer, only touched by the fetcher thread
        self._thread = threading.Thread(target=self._run, name=name, daemon=True)
        self._thread.start()

    # -- control (any thread) -------------------------------------------------------------------
    def start(self, positions: Mapping[TopicPartition, int]) -> None:
        """Fetch exactly ``positions`` (partition -> next offset, or -1 for auto.offset.reset)."""
        with self._cond:
            self._target = dict(positions)
            self._gen += 1
            self._cond.notify_all()

    def stop(self, timeout: float = 30.0) -> bool:
        """Stop fetching; True once the thread acknowledged (no more ``on_record`` calls)."""
        with self._cond:
            if self._closed:
                return True
            self._target = {}
            self._gen += 1
            gen = self._gen
            self._cond.notify_all()
            if threading.current_thread() is self._thread:
                return True
            return self._cond.wait_for(lambda: self._acked >= gen or self._closed, timeout)

    def close(self, timeout: float = 10.0) -> None:
        """Stop the thread and close the kafka-python client. Idempotent."""
        with self._cond:
            self._closed = True
            self._gen += 1
            self._cond.notify_all()
        if threading.current_thread() is not self._thread:
            self._thread.join(timeout)

    # -- the fetcher thread ---------------------------------------------------------------------
    def _current(self) -> tuple[int, dict[TopicPartition, int], bool]:
        with self._cond:
            return self._gen, dict(self._target), self._closed

    def _ack(self, gen: int) -> None:
        with self._cond:
            self._acked = max(self._acked, gen)
            self._cond.notify_all()

    def _ensure_consumer(self):  # noqa: ANN202 - kafka.KafkaConsumer
        if self._consumer is None:
            from kafka import KafkaConsumer

            servers = self._bootstrap()
            if not servers:
                raise RuntimeError("no broker address known yet (no bootstrap.servers, none in /brokers/ids)")
            self._consumer = KafkaConsumer(
                bootstrap_servers=servers.split(","),
                group_id=None,
                enable_auto_commit=False,
                auto_offset_reset=self._reset,
                client_id=self._client_id,
                fetch_max_wait_ms=FETCH_MAX_WAIT_MS,
            )
        return self._consumer

    def _drop_consumer(self) -> None:
        c, self._consumer = self._consumer, None
        if c is not None:
            try:
                c.close(autocommit=False, timeout_ms=2000)
            except Exception:  # noqa: BLE001 - closing a broken client
                log.debug("closing kafka-python consumer failed", exc_info=True)

    def _apply(self, target: dict[TopicPartition, int]) -> None:
        from kafka.structs import TopicPartition as KTP

        consumer = self._ensure_consumer()
        if not target:
            assigned = consumer.assignment()
            if assigned:
                consumer.pause(*assigned)
            return
        ktps = {tp: KTP(tp.topic, tp.partition) for tp in target}
        consumer.assign(list(ktps.values()))
        consumer.resume(*ktps.values())
        unresolved = []
        for tp, offset in target.items():
            if offset >= 0:
                consumer.seek(ktps[tp], offset)
            else:
                unresolved.append(tp)
        if unresolved:
            ks = [ktps[tp] for tp in unresolved]
            if self._reset == "earliest":
                consumer.seek_to_beginning(*ks)
            else:
                consumer.seek_to_end(*ks)
            for tp in unresolved:
                pos = consumer.position(ktps[tp], timeout_ms=10_000)
                if pos is None:
                    raise RuntimeError(f"no position for {tp} within 10 s (auto.offset.reset)")
                if self._on_position is not None:
                    self._on_position(tp, pos)

    def _report(self, what: str, exc: BaseException) -> None:
        msg = f"{what}: {exc.__class__.__name__}: {exc}"
        log.warning("fetcher %s", msg)
        if self._on_error is not None:
            self._on_error(msg)

    def _run(self) -> None:
        applied = 0
        target: dict[TopicPartition, int] = {}
        progress: dict[TopicPartition, int] = {}  # next offset per partition, from handed-over records
        failed = False
        while True:
            gen, want, closed = self._current()
            if closed:
                break
            if gen != applied or failed:
                if gen != applied:
                    target, applied, progress = want, gen, {}
                try:
                    if target or self._consumer is not None:
                        # after an error, resume where handing over stopped, not at the start offsets
                        self._apply({tp: progress.get(tp, off) for tp, off in target.items()})
                    failed = False
                except Exception as e:  # noqa: BLE001 - broker down, metadata errors: retry
                    self._report("cannot assign partitions", e)
                    self._drop_consumer()
                    failed = True
                self._ack(gen)
            if failed:
                with self._cond:
                    self._cond.wait_for(lambda a=applied: self._closed or self._gen != a, self._retry_s)
                continue
            if not target:
                with self._cond:
                    self._cond.wait_for(lambda a=applied: self._closed or self._gen != a, 1.0)
                continue
            try:
                batches = cast(Any, self._consumer).poll(timeout_ms=self._poll_ms)
            except Exception as e:  # noqa: BLE001
                self._report("poll failed", e)
                self._drop_consumer()
                failed = True
                continue
            for ktp, records in batches.items():
                tp = TopicPartition(ktp.topic, ktp.partition)
                for r in records:
                    with self._cond:
                        if self._gen != applied:
                            break  # stop() or start() arrived: drop what was not handed over
                    self._on_record(tp, r.offset, r.value)
                    progress[tp] = r.offset + 1
        self._drop_consumer()
        self._ack(self._gen)
