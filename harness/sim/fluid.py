# pyright: strict
"""A fluid model of many ZooKeeper clients sharing one server: bursts of requests, processor-shared.

Why
---
The per-request model (:class:`harness.sim.legacy.SimZkServer`) runs every ZooKeeper request of every
member through the event loop. The herd effect makes that quadratic: one rebalance round of ``N``
legacy members is ``N`` bursts of ``N`` registration reads, 10^8 requests at 10^4 members. This model
books a member's burst as one job.

Contract
--------
:class:`FluidServer` serves *jobs* of ``n`` requests each (a burst of reads, or one request). While
``k`` jobs are in service, each advances at the same rate, in requests per second::

    rate(k) = min(1 / (c + 2 d + s), 1 / (k * max(s, c / C)))

with ``c`` = ``zk_client_s`` (a request's client CPU), ``d`` = ``network_one_way_s``, ``s`` =
``zk_service_s`` (the server's time per request) and ``C`` = ``client_cores`` (0: every client has a
core of its own, the ``c / C`` term drops). The first term is one client alone, issuing its next
request when the last one returns (its round trip); the second is the shared bottleneck, the server (or
the clients' shared cores) divided equally among the ``k`` clients with a request outstanding, which is
what the per-request model's FIFO queue gives each of ``k`` clients that always have one request in it.
A job submitted at ``t`` completes when it has received ``n`` requests' worth; its ``done`` callback then
runs on the loop (where the caller applies the reads or the change: every request of a burst sees the
tree as it is at the burst's end). Jobs complete in the order of their finish points (ties: submission
order). The implementation is the classic virtual-time one: ``v`` grows at ``rate(k)``; a job submitted
at ``v0`` finishes when ``v`` reaches ``v0 + n``; one timer stands for the earliest finish.

Departures from the per-request model, by construction: a burst's reads all see the tree at its end
(where the real member reads registration ``i`` at its ``i``-th round trip); the model has no jitter;
the client cost is in the rate, not booked on the simulator's shared client cores.
"""

from __future__ import annotations

import heapq
import itertools
import math
from collections.abc import Callable

from harness.sim.clock import NS_PER_S, Timer, VirtualScheduler
from harness.sim.model import DelayModel

__all__ = ["FluidServer"]

#: Finish points within this many requests of ``v`` are due (float rounding of the timer's instant).
EPSILON = 1e-6


class FluidServer:
    """Processor-shared bursts of requests (module contract)."""

    def __init__(self, sched: VirtualScheduler, delays: DelayModel) -> None:
        self.sched = sched
        self._cycle = delays.zk_client_s + 2 * delays.network_one_way_s + delays.zk_service_s
        per = delays.zk_service_s
        if delays.client_cores > 0:
            per = max(per, delays.zk_client_s / delays.client_cores)
        self._per = per
        self._v = 0.0
        self._at_ns = sched.now_ns
        self._jobs: list[tuple[float, int, Callable[[], None]]] = []
        self._seq = itertools.count()
        self._timer: Timer | None = None
        self.requests = 0
        self.jobs = 0

    def rate(self, k: int) -> float:
        """Requests per second each of ``k`` jobs in service receives (module contract)."""
        if k <= 0:
            return 0.0
        return min(1.0 / self._cycle, 1.0 / (k * self._per))

    def in_service(self) -> int:
        return len(self._jobs)

    def submit(self, n: int, done: Callable[[], None]) -> None:
        """A job of ``n`` >= 1 requests from now; ``done()`` runs on the loop when it is served."""
        if n < 1:
            raise ValueError(f"a job has at least one request, got {n}")
        self._advance()
        heapq.heappush(self._jobs, (self._v + n, next(self._seq), done))
        self.requests += n
        self.jobs += 1
        self._arm()

    def _advance(self) -> None:
        now = self.sched.now_ns
        if self._jobs and now > self._at_ns:
            self._v += (now - self._at_ns) / NS_PER_S * self.rate(len(self._jobs))
        self._at_ns = now

    def _arm(self) -> None:
        if self._timer is not None:
            self._timer.cancel()
            self._timer = None
        if self._jobs:
            left = max(0.0, self._jobs[0][0] - self._v)
            ns = math.ceil(left / self.rate(len(self._jobs)) * NS_PER_S) if left > EPSILON else 0
            self._timer = self.sched.call_at(self.sched.now_ns + ns, self._complete)

    def _complete(self) -> None:
        self._timer = None
        self._advance()
        due: list[Callable[[], None]] = []
        while self._jobs and self._jobs[0][0] <= self._v + EPSILON:
            due.append(heapq.heappop(self._jobs)[2])
        self._arm()
        for done in due:
            done()
