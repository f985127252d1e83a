"""Broker processes in tests: the type of the ``broker_factory`` fixture (``tests/integration/conftest.py``)."""

from __future__ import annotations

from collections.abc import Callable

from harness.cluster.broker import BrokerProcess

BrokerFactory = Callable[..., BrokerProcess]
"""``broker_factory(broker_id=0, zookeeper=None, extra_args=(), persistent=True, timeout=30.0)``: a started
broker (``python -m coordinator``) with its own data directory, history and log under the test's ``tmp_path``,
stopped when the test ends."""
