"""When a member reconnects to ZooKeeper: the timing of the ZooKeeper 3.4.6 Java client (spec 1.15).

Contract
--------
The 0.8.2 consumer used ZooKeeper 3.4.6's Java client through ZkClient 0.3. With one server in the
connect string its ``ClientCnxn.SendThread`` waits, before every connection attempt but the first
of a ``ZooKeeper`` object, a random ``0..999`` ms (``r.nextInt(1000)``), and then
``StaticHostProvider.next(1000)`` waits 1000 ms because it has already tried its only host: 1-2 s
between attempts. After a session expiry ZkClient makes a new ``ZooKeeper`` object, whose first
attempt waits for neither.

:class:`JavaReconnectPolicy` reproduces that for kazoo: the first call runs at once; after each
failed attempt it sleeps ``delay_ms + uniform[0, random_ms)`` (defaults 1000 and 1000), except when
``expired()`` says the last attempt ended in an expired session (a new session starts at once).
A sleep ends early when ``interrupted()`` turns true (the member is closing). kazoo's own default
(50 ms doubling with +-40 % jitter, capped) is not what 0.8 did.

kazoo 2.10/2.11 accepts a custom ``connection_retry`` only when its type is exactly ``KazooRetry``
and hands a copy to its ``ConnectionHandler`` in the client's constructor; :func:`install` therefore
puts the policy on that handler (``retry_sleeper``), which ``zk_loop`` copies at every ``start()``.
"""

from __future__ import annotations

import random
import time
from collections.abc import Callable
from typing import Any

from kazoo.exceptions import ConnectionClosedError
from kazoo.retry import KazooRetry

_SLICE_S = 0.05  # longest uninterrupted piece of a sleep: how late a close may notice


class JavaReconnectPolicy(KazooRetry):
    """kazoo connection-retry object with the Java client's reconnect timing (module contract)."""

    def __init__(
        self,
        random_ms: int = 1000,
        delay_ms: int = 1000,
        sleep_func: Callable[[float], Any] = time.sleep,
        expired: Callable[[], bool] = lambda: False,
        interrupted: Callable[[], bool] = lambda: False,
        rng: random.Random | None = None,
    ) -> None:
        if random_ms < 0 or delay_ms < 0:
            raise ValueError("reconnect delays must be >= 0")
        super().__init__(
            max_tries=-1, delay=delay_ms / 1000.0, backoff=1, max_jitter=0, sleep_func=sleep_func
        )
        self.random_ms = random_ms
        self.delay_ms = delay_ms
        self.expired = expired
        self.interrupted = interrupted
        self.rng = rng or random.Random()
        #: seconds slept before each attempt after the first, in order (for tests and logs)
        self.sleeps: list[float] = []

    def copy(self) -> JavaReconnectPolicy:
        return JavaReconnectPolicy(
            self.random_ms, self.delay_ms, self.sleep_func, self.expired, self.interrupted, self.rng
        )

    def next_sleep(self) -> float:
        """Seconds to wait before the next attempt (0 right after an expired session)."""
        if self.expired():
            return 0.0
        jitter_ms = self.rng.randrange(self.random_ms) if self.random_ms > 0 else 0
        return (self.delay_ms + jitter_ms) / 1000.0

    def __call__(self, func: Callable[..., Any], *args: Any, **kwargs: Any) -> Any:
        """Call ``func`` until it returns; after each retryable failure wait :meth:`next_sleep`."""
        self.reset()
        while True:
            try:
                return func(*args, **kwargs)
            except ConnectionClosedError:
                raise
            except self.retry_exceptions:
                self._attempts += 1
                pause = self.next_sleep()
                self.sleeps.append(pause)
                self._sleep(pause)

    def _sleep(self, seconds: float) -> None:
        left = seconds
        while left > 0 and not self.interrupted():
            piece = min(_SLICE_S, left)
            self.sleep_func(piece)
            left -= piece


def install(client: Any, policy: JavaReconnectPolicy) -> None:
    """Make ``client`` (a ``KazooClient`` not started yet) reconnect with ``policy``."""
    handler = getattr(client, "_connection", None)
    if handler is None or not hasattr(handler, "retry_sleeper"):
        raise RuntimeError(
            "this kazoo version has no ConnectionHandler.retry_sleeper: cannot set reconnect timing"
        )
    handler.retry_sleeper = policy
    client._conn_retry = policy
