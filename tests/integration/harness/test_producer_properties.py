"""`herdlab produce -X NAME=VALUE`: Kafka producer properties reach the workload's kafka-python producer
(its ``started`` event carries the client's effective values); an unknown one is a one-line error."""

from __future__ import annotations

import subprocess
from pathlib import Path

from harness.history.writer import read_events
from harness.run.launch import PY
from tests.support.brokers import BrokerFactory
from tests.support.client_members import create_topic


def test_producer_properties_reach_the_client(broker_factory: BrokerFactory, tmp_path: Path) -> None:
    broker = broker_factory()
    create_topic(broker, "t", 2)
    history = tmp_path / "producer.jsonl"
    argv = [*PY, "produce", "--bootstrap", broker.bootstrap, "--topic", "t", "--count", "4"]
    argv += ["--history", str(history), "-X", "linger.ms=7", "-X", "acks=1", "-X", "compression.type=gzip"]
    r = subprocess.run(argv, capture_output=True, text=True, timeout=60)
    assert r.returncode == 0, r.stderr
    events = read_events(history)
    started = [e for e in events if e["kind"] == "started"]
    assert started[0]["effective"] == {"linger.ms": 7, "acks": 1, "compression.type": "gzip"}
    assert len([e for e in events if e["kind"] == "produced"]) == 4


def test_an_unknown_producer_property_is_a_one_line_error() -> None:
    argv = [*PY, "produce", "--bootstrap", "127.0.0.1:1", "--topic", "t", "-X", "no.such.property=1"]
    r = subprocess.run(argv, capture_output=True, text=True, timeout=60)
    assert r.returncode != 0
    errors = [line for line in r.stderr.splitlines() if line.startswith("herdlab: error:")]
    assert len(errors) == 1 and "no.such.property" in errors[0], r.stderr
