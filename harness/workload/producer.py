"""The workload producer: sequence-numbered records at a steady rate, each one recorded.

Contract
--------
* Records go to the partitions of one topic in turn (explicit partition numbers, so every partition
  gets its share whatever the key hashing would do).
* **Added partitions receive records promptly**: the client refreshes its metadata every
  ``metadata_refresh_s`` (Kafka's ``metadata.max.age.ms``, default 0.5 s here instead of Kafka's
  5 minutes) and the partition list is read from that cached metadata before every record (a dict
  look-up, no request). So a partition added to the topic at time t receives records from at most
  t + ``metadata_refresh_s`` + one Metadata round trip + one record interval on. The bound is below
  the shortest settling phase of a run (a settle window of 1 s, a session timeout of 3 s in the tests),
  so records on added partitions exist before the run stops the producer. (Re-reading on a timer of
  its own, as before, let two equal periods beat against each other: the lag was 1.3 s or, when the
  read came just before the refresh, up to 4 s.) The cost is one Metadata request per
  ``metadata_refresh_s`` from client id ``herdlab-producer``.
* The value is JSON ``{"seq": N, "p": PARTITION, "pad": "..."}`` padded to ``record_size`` bytes;
  ``seq`` counts from 0 over the whole run.
* Every acknowledged record is a ``produced`` event (topic, partition, offset, seq); a failed send is
  a ``produce_error`` event (seq, error). The analysis proves loss and duplicates from these.
* :meth:`Producer.stop` flushes what was sent, so every record that counts as produced was
  acknowledged by the broker.
* ``properties`` (``[workload.properties]``: Kafka producer properties by dotted name, checked by
  :func:`harness.scenario.properties.check_producer_properties`) pass through to ``KafkaProducer`` as
  snake-case keywords, each value converted to the type of ``KafkaProducer.DEFAULT_CONFIG[key]``
  (``acks`` also takes ``all``) (:func:`producer_kwargs`). They override the producer's own settings
  (``acks`` from :class:`ProducerConfig`, ``linger.ms`` 5, ``metadata.max.age.ms`` from
  ``metadata_refresh_s``) except the client id, which stays ``herdlab-producer`` (the analysis and the
  broker's request counts know the producer by it), and the bootstrap addresses. The producer's
  ``started`` event carries ``effective``: the client's value (``producer.config``) of each property given.
"""

from __future__ import annotations

import json
import logging
import threading
import time
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any, Literal

from harness.history.writer import History
from harness.scenario.properties import python_kwargs, snake

log = logging.getLogger("harness.producer")


@dataclass(frozen=True)
class ProducerConfig:
    bootstrap: str
    topic: str
    rate: float = 200.0
    record_size: int = 100
    acks: int | Literal["all"] = "all"
    metadata_refresh_s: float = 0.5
    max_records: int | None = None
    #: Kafka producer properties by dotted name, string values (see the module contract).
    properties: Mapping[str, str] = field(default_factory=dict[str, str])


def make_value(seq: int, partition: int, size: int) -> bytes:
    """The record value for ``seq``: JSON padded with ``x`` to ``size`` bytes (never shorter than the JSON)."""
    head = json.dumps({"seq": seq, "p": partition, "pad": ""}, separators=(",", ":"))
    pad = max(0, size - len(head))
    return (head[:-2] + "x" * pad + '"}').encode()


def _plain(value: Any) -> Any:
    """A config value as JSON can hold it."""
    return value if value is None or isinstance(value, bool | int | float | str) else str(value)


def producer_kwargs(config: ProducerConfig) -> dict[str, Any]:
    """The ``KafkaProducer`` keyword arguments of ``config`` (see the module contract)."""
    from kafka import KafkaProducer

    props = dict(config.properties)
    acks = props.pop("acks", None)
    kwargs: dict[str, Any] = {
        "acks": config.acks,
        "linger_ms": 5,
        "metadata_max_age_ms": int(config.metadata_refresh_s * 1000),  # see added partitions promptly
    }
    kwargs.update(python_kwargs(props, KafkaProducer.DEFAULT_CONFIG))
    if acks is not None:
        kwargs["acks"] = "all" if acks.lower() == "all" else int(acks)
    kwargs["bootstrap_servers"] = config.bootstrap.split(",")
    kwargs["client_id"] = "herdlab-producer"
    return kwargs


class Producer:
    """A paced kafka-python producer (see the module contract)."""

    def __init__(self, config: ProducerConfig, history: History) -> None:
        self.config = config
        self.history = history
        self._stop = threading.Event()
        self.sent = 0
        self.acked = 0
        self.failed = 0

    def _on_ack(self, seq: int, md: Any) -> None:
        self.acked += 1
        self.history.emit("produced", topic=md.topic, partition=md.partition, offset=md.offset, seq=seq)

    def _on_error(self, seq: int, partition: int, exc: BaseException) -> None:
        self.failed += 1
        self.history.emit(
            "produce_error", topic=self.config.topic, partition=partition, seq=seq, error=repr(exc)[:300]
        )

    def run(self) -> None:
        """Produce until :meth:`stop` (or ``max_records``); flush before returning."""
        from kafka import KafkaProducer

        c = self.config
        producer = KafkaProducer(**producer_kwargs(c))
        try:
            partitions = self._partitions(producer)
            effective = {name: _plain(producer.config.get(snake(name))) for name in c.properties}
            self.history.emit(
                "started",
                role="producer",
                topic=c.topic,
                rate=c.rate,
                partitions=len(partitions),
                effective=effective,
            )
            interval = 1.0 / c.rate
            next_at = time.monotonic()
            seq = 0
            while not self._stop.is_set() and (c.max_records is None or seq < c.max_records):
                now = time.monotonic()
                if now < next_at:
                    self._stop.wait(min(next_at - now, 0.05))  # pacing, not synchronisation
                    continue
                partitions = self._known_partitions(producer, partitions)
                p = partitions[seq % len(partitions)]
                fut = producer.send(c.topic, value=make_value(seq, p, c.record_size), partition=p)
                fut.add_callback(self._on_ack_cb(seq))
                fut.add_errback(self._on_err_cb(seq, p))
                self.sent += 1
                seq += 1
                next_at += interval
                if next_at < now - 1.0:  # fell behind by more than a second: do not burst to catch up
                    next_at = now
        finally:
            producer.flush(timeout=30)
            producer.close(timeout=10)
            self.history.emit(
                "stopped", role="producer", sent=self.sent, acked=self.acked, failed=self.failed
            )

    def _on_ack_cb(self, seq: int) -> Any:
        return lambda md: self._on_ack(seq, md)

    def _on_err_cb(self, seq: int, partition: int) -> Any:
        return lambda exc: self._on_error(seq, partition, exc)

    def _known_partitions(self, producer: Any, previous: list[int]) -> list[int]:
        """The topic's partitions in the client's cached metadata (no request); ``previous`` when the
        cache has none (the list only grows: Kafka never removes partitions)."""
        parts = producer.partitions_for(self.config.topic)
        if not parts or len(parts) == len(previous):
            return previous
        log.info("topic %s: writing to %d partitions (was %d)", self.config.topic, len(parts), len(previous))
        return sorted(parts)

    def _partitions(self, producer: Any) -> list[int]:
        deadline = time.monotonic() + 30
        while True:
            parts = producer.partitions_for(self.config.topic)
            if parts:
                return sorted(parts)
            if time.monotonic() > deadline:
                raise RuntimeError(f"topic {self.config.topic} has no partitions after 30s")
            time.sleep(0.1)

    def stop(self) -> None:
        self._stop.set()
