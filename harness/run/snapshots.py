# pyright: strict
"""The harness's ``offsets_snapshot`` events: what the group's coordinator returns, read from outside.

Contract
--------
* :meth:`OffsetsSnapshots.take` starts one OffsetFetch of the group's committed offsets of the workload
  topic through FindCoordinator (client id ``herdlab-harness``; :func:`harness.faults.kafka_probe.fetch_offsets`)
  on a thread of its own, so the timeline never waits for it, and writes one ``offsets_snapshot`` event
  (:mod:`harness.kernel.events`: ``group``, ``label``, ``broker_id``, ``offsets``, ``error``) stamped when the
  answer came. A coordinator that does not answer within ``timeout`` gives ``error`` = the last error name
  and ``broker_id`` null.
* :meth:`OffsetsSnapshots.join` waits (bounded) for every snapshot started; the runner calls it before the
  cluster stops, so no snapshot asks a stopped cluster and none is written after the history closes.

The runner takes one after each coordinator fault's end step once the group settled (``after:<action_id>``)
and one at the unit's end (``end``), for the coordinator implementation only.
"""

from __future__ import annotations

import threading
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from typing import Any, Protocol

from harness.faults.kafka_probe import OffsetsAnswer, fetch_offsets
from harness.kernel.events import Kind, Role

#: How long one snapshot may ask for the coordinator's answer.
SNAPSHOT_TIMEOUT_S = 15.0

Fetch = Callable[[str, str, str, int, float], OffsetsAnswer]


class Emitter(Protocol):
    def emit(self, kind: str, **fields: Any) -> None: ...


@dataclass
class OffsetsSnapshots:
    """Snapshots of one unit's group (see the module contract). ``bootstrap`` is asked at each snapshot
    (the cluster's brokers now); ``now_ns`` stamps the events; ``context`` is the unit's fields."""

    history: Emitter
    now_ns: Callable[[], int]
    bootstrap: Callable[[], str]
    group: str
    topic: str
    partitions: int
    context: Mapping[str, Any] = field(default_factory=dict[str, Any])
    fetch: Fetch = fetch_offsets
    timeout: float = SNAPSHOT_TIMEOUT_S
    _threads: list[threading.Thread] = field(default_factory=list[threading.Thread])

    def take(self, label: str) -> None:
        """Start the snapshot ``label`` (``after:<action_id>`` or ``end``); returns at once."""
        bootstrap = self.bootstrap()
        t = threading.Thread(
            target=self._snapshot, args=(label, bootstrap), name=f"snapshot-{label}", daemon=True
        )
        self._threads.append(t)
        t.start()

    def _snapshot(self, label: str, bootstrap: str) -> None:
        try:
            answer = self.fetch(bootstrap, self.group, self.topic, self.partitions, self.timeout)
        except Exception as e:  # noqa: BLE001 - a snapshot must not end the unit; its error is recorded
            answer = OffsetsAnswer(None, error=type(e).__name__)
        self.history.emit(
            Kind.OFFSETS_SNAPSHOT,
            ts_ns=self.now_ns(),
            role=Role.HARNESS,
            group=self.group,
            label=label,
            broker_id=answer.broker_id,
            offsets=answer.offsets,
            error=answer.error,
            **self.context,
        )

    def join(self, timeout: float | None = None) -> None:
        """Wait for every snapshot started (at most ``timeout`` seconds, default a snapshot's timeout
        plus a margin, in all)."""
        import time

        deadline = time.monotonic() + (self.timeout + 5.0 if timeout is None else timeout)
        for t in self._threads:
            t.join(max(0.0, deadline - time.monotonic()))
        self._threads = [t for t in self._threads if t.is_alive()]
