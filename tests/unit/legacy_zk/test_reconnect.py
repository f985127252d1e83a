"""The reconnect timing of the ZooKeeper 3.4.6 Java client (legacy_zk.reconnect), with a fake sleep."""

from __future__ import annotations

import random

import pytest
from kazoo.client import KazooClient
from kazoo.exceptions import ConnectionClosedError
from kazoo.retry import ForceRetryError

from legacy_zk.reconnect import JavaReconnectPolicy, install


class Attempts:
    """A connect loop that fails ``failures`` times, then returns ``"connected"``."""

    def __init__(self, failures: int, error: type[Exception] = ForceRetryError) -> None:
        self.failures = failures
        self.error = error
        self.calls = 0

    def __call__(self) -> str:
        self.calls += 1
        if self.calls <= self.failures:
            raise self.error("reconnecting")
        return "connected"


def test_first_attempt_at_once_then_one_second_plus_up_to_one_random_second() -> None:
    slept: list[float] = []
    policy = JavaReconnectPolicy(sleep_func=slept.append, rng=random.Random(7))
    attempts = Attempts(failures=5)
    assert policy(attempts) == "connected" and attempts.calls == 6
    # r.nextInt(1000) ms, then StaticHostProvider's 1000 ms spin: [1.000, 1.999] s, in whole ms
    expected_rng = random.Random(7)
    assert policy.sleeps == [(1000 + expected_rng.randrange(1000)) / 1000 for _ in range(5)]
    assert all(1.0 <= s <= 1.999 for s in policy.sleeps)
    assert sum(slept) == pytest.approx(sum(policy.sleeps))
    assert max(slept) <= 0.05  # slept in slices, so a close is noticed quickly


def test_configured_delays() -> None:
    policy = JavaReconnectPolicy(random_ms=0, delay_ms=300, sleep_func=lambda _s: None)
    policy(Attempts(failures=3))
    assert policy.sleeps == [0.3, 0.3, 0.3]
    policy = JavaReconnectPolicy(random_ms=0, delay_ms=0, sleep_func=lambda _s: None)
    policy(Attempts(failures=2))
    assert policy.sleeps == [0.0, 0.0]


def test_after_an_expired_session_the_new_session_is_tried_at_once() -> None:
    expired = {"now": True}
    policy = JavaReconnectPolicy(sleep_func=lambda _s: None, expired=lambda: expired["now"])
    policy(Attempts(failures=1))
    assert policy.sleeps == [0.0]  # ZkClient's new ZooKeeper object: no random wait, no spin delay


def test_an_interrupt_ends_the_wait_early() -> None:
    slept: list[float] = []
    policy = JavaReconnectPolicy(random_ms=0, delay_ms=1000, sleep_func=slept.append)
    policy.interrupted = lambda: len(slept) >= 3
    policy(Attempts(failures=1))
    assert sum(slept) == pytest.approx(0.15)


def test_a_closed_connection_is_not_retried() -> None:
    policy = JavaReconnectPolicy(sleep_func=lambda _s: None)
    attempts = Attempts(failures=1, error=ConnectionClosedError)
    with pytest.raises(ConnectionClosedError):
        policy(attempts)
    assert attempts.calls == 1


def test_copies_keep_the_settings() -> None:
    policy = JavaReconnectPolicy(random_ms=10, delay_ms=20, sleep_func=lambda _s: None)
    twin = policy.copy()
    assert isinstance(twin, JavaReconnectPolicy) and (twin.random_ms, twin.delay_ms) == (10, 20)


def test_negative_delays_are_refused() -> None:
    with pytest.raises(ValueError, match=">= 0"):
        JavaReconnectPolicy(delay_ms=-1)


def test_install_reaches_the_connection_loop_of_kazoo() -> None:
    """kazoo's connection loop copies ``retry_sleeper`` at every start: the policy must be there."""
    client = KazooClient(hosts="127.0.0.1:1")
    policy = JavaReconnectPolicy(sleep_func=client.handler.sleep_func)
    install(client, policy)
    assert client._connection.retry_sleeper is policy
    assert isinstance(client._connection.retry_sleeper.copy(), JavaReconnectPolicy)
