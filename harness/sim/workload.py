"""The simulated workload: one topic's partition logs and a paced producer, in virtual time.

Contract
--------
* :class:`SimTopic` holds, per partition, the virtual time each offset was acknowledged (the log); offsets
  start at 0. :meth:`SimTopic.append` is the broker accepting one record. :meth:`SimTopic.fetch` returns the
  offsets in ``[from_offset, end)`` available now, at most ``max_records``; :meth:`SimTopic.wait_data` blocks
  a task until a record arrives on any of the given partitions or ``timeout`` passes (a Fetch's long poll).
* :class:`SimProducer` produces as :mod:`harness.workload.producer` does: ``rate`` records per second,
  record ``seq`` to partition ``seq % partitions``, from ``start(after_s)`` on, one ``started`` (role
  producer) and per acknowledged record one ``produced`` event (topic, partition, offset, seq) at ``network + broker service + network``
  after the send; ``stop()`` ends it with ``stopped`` (sent, acked, failed = 0).
* Members process what they fetch and write ``record`` events (topic, partition, offset, seq) themselves:
  ``seq`` is :meth:`SimTopic.seq` of the offset.
"""

from __future__ import annotations

from harness.kernel.history import History
from harness.sim.clock import Event, VirtualScheduler
from harness.sim.model import DelayModel

__all__ = ["SimProducer", "SimTopic"]


class SimTopic:
    """Partition logs of one topic (see the module contract)."""

    def __init__(self, sched: VirtualScheduler, name: str, partitions: int) -> None:
        self.sched = sched
        self.name = name
        self._acked_ns: list[list[int]] = [[] for _ in range(partitions)]
        self._seqs: list[list[int]] = [[] for _ in range(partitions)]
        self._arrival = Event(sched)
        self._part_arrival: dict[int, Event] = {}

    @property
    def partitions(self) -> int:
        return len(self._acked_ns)

    def add_partitions(self, total: int) -> None:
        """Grow to ``total`` partitions (never shrinks)."""
        while len(self._acked_ns) < total:
            self._acked_ns.append([])
            self._seqs.append([])

    def append(self, partition: int, seq: int) -> int:
        """The broker accepts one record now; returns its offset and wakes waiting fetchers."""
        self._acked_ns[partition].append(self.sched.now_ns)
        self._seqs[partition].append(seq)
        ev, self._arrival = self._arrival, Event(self.sched)
        ev.set()
        pev = self._part_arrival.pop(partition, None)
        if pev is not None:
            pev.set()
        return len(self._acked_ns[partition]) - 1

    def end(self, partition: int) -> int:
        """The log end offset of ``partition``."""
        return len(self._acked_ns[partition])

    def seq(self, partition: int, offset: int) -> int:
        return self._seqs[partition][offset]

    def fetch(self, partition: int, from_offset: int, max_records: int = 500) -> range:
        """Offsets of ``partition`` in ``[from_offset, end)``, at most ``max_records``."""
        end = len(self._acked_ns[partition])
        start = max(0, from_offset)
        return range(start, min(end, start + max_records))

    def wait_data(self, timeout: float) -> bool:
        """Block the calling task until any record is appended or ``timeout``; True when one was."""
        return self._arrival.wait(timeout)

    def wait_partitions(self, partitions: list[int], timeout: float | None) -> bool:
        """Block the calling task until a record is appended to one of ``partitions`` or ``timeout``;
        True when one was (a fetch's long poll on its own partitions: only its fetcher wakes). ``None``
        waits for the record however long it takes."""
        if len(partitions) == 1:
            ev = self._part_arrival.get(partitions[0])
            if ev is None:
                ev = self._part_arrival[partitions[0]] = Event(self.sched)
            return ev.wait(timeout)
        return self._arrival.wait(timeout)


class SimProducer:
    """The paced producer of the workload (see the module contract)."""

    def __init__(
        self, sched: VirtualScheduler, topic: SimTopic, delays: DelayModel, history: History, rate: float
    ) -> None:
        self.sched = sched
        self.topic = topic
        self.delays = delays
        self.history = history
        self.rate = rate
        self.sent = 0
        self.acked = 0
        self._stopped = False

    def start(self, after_s: float = 0.0) -> None:
        """Start producing ``after_s`` virtual seconds from now (``started``, then the first record)."""
        self.sched.call_later(after_s, self._begin)

    def _begin(self) -> None:
        if self._stopped:
            return
        self.history.emit("started", topic=self.topic.name, rate=self.rate, partitions=self.topic.partitions)
        self._send()

    def _send(self) -> None:
        if self._stopped:
            return
        seq = self.sent
        p = seq % self.topic.partitions
        self.sent += 1
        d = self.delays
        self.sched.call_later(d.network_one_way_s + d.broker_service_s, self._accept, p, seq)
        self.sched.call_later(1.0 / self.rate, self._send)

    def _accept(self, partition: int, seq: int) -> None:
        offset = self.topic.append(partition, seq)
        self.sched.call_later(self.delays.network_one_way_s, self._ack, partition, offset, seq)

    def _ack(self, partition: int, offset: int, seq: int) -> None:
        self.acked += 1
        self.history.emit("produced", topic=self.topic.name, partition=partition, offset=offset, seq=seq)

    def stop(self) -> None:
        if not self._stopped:
            self._stopped = True
            self.history.emit("stopped", sent=self.sent, acked=self.acked, failed=0)
