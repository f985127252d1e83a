"""The workload producer on the real broker: partitions added to its topic receive records promptly.

The contract (harness.workload.producer): the client refreshes its metadata every
``metadata_refresh_s`` and the partition list is read from it before every record, so an added
partition receives records within ``metadata_refresh_s`` plus one Metadata round trip and one record
interval. The e2e partition-growth run relies on this: the run stops the producer a few seconds
after the partitions are added.
"""

from __future__ import annotations

import threading
import time
from pathlib import Path
from typing import Any

from kafka.admin import KafkaAdminClient, NewPartitions, NewTopic

from harness.cluster.broker import BrokerProcess
from harness.history.writer import HistoryWriter, read_events
from harness.workload.producer import Producer, ProducerConfig
from tests.support.waiting import wait_until

TOPIC = "grow"
SLACK_S = 1.0  # a loaded 2-core machine: scheduling, the broker's append, the ack's way back


def _produced(path: Path) -> list[dict[str, Any]]:
    return [e for e in read_events(path) if e["kind"] == "produced"] if path.exists() else []


def _seqs_past_first_new(path: Path) -> int:
    """How many sequence numbers were acknowledged from the first record on an added partition on."""
    produced = _produced(path)
    new = [e["seq"] for e in produced if e["partition"] >= 2]
    return max(e["seq"] for e in produced) - min(new) if new else -1


def test_added_partitions_receive_records_within_the_metadata_refresh_bound(
    tmp_path: Path, broker: BrokerProcess
) -> None:
    admin = KafkaAdminClient(bootstrap_servers=broker.bootstrap, client_id="test")
    try:
        admin.create_topics([NewTopic(TOPIC, 2, 1)])
        config = ProducerConfig(bootstrap=broker.bootstrap, topic=TOPIC, rate=200)
        path = tmp_path / "producer.jsonl"
        history = HistoryWriter(path, source="producer", role="producer")
        producer = Producer(config, history)
        runner = threading.Thread(target=producer.run, name="producer", daemon=True)
        runner.start()
        try:
            wait_until(
                lambda: {e["partition"] for e in _produced(path)} == {0, 1},
                timeout=30,
                what="records on both initial partitions",
            )
            admin.create_partitions({TOPIC: NewPartitions(4)})
            added_ns = time.time_ns()  # the broker has the 4 partitions from here on
            wait_until(
                lambda: _seqs_past_first_new(path) >= 8,
                timeout=30,
                what="8 records from the first one on an added partition on",
            )
        finally:
            producer.stop()
            runner.join(60)
            history.close()
        assert not runner.is_alive()
    finally:
        admin.close()

    produced = _produced(path)
    first_on_new = min((e for e in produced if e["partition"] >= 2), key=lambda e: e["seq"])
    # Bound by hand: metadata age 0.5 s (the default), then the next record (5 ms apart at 200/s)
    # goes to a new partition once its Metadata response is in; SLACK_S covers the rest.
    assert config.metadata_refresh_s == 0.5
    lag_s = (first_on_new["ts_ns"] - added_ns) / 1e9
    assert lag_s <= config.metadata_refresh_s + SLACK_S, (
        f"first record on an added partition after {lag_s:.2f}s"
    )
    # From then on the records go round all four partitions: seq s goes to partition s % 4 (the
    # producer flushed on stop, so every record it sent is acknowledged).
    s0 = first_on_new["seq"]
    after = {e["seq"]: e["partition"] for e in produced if s0 <= e["seq"] < s0 + 8}
    assert after == {s: s % 4 for s in range(s0, s0 + 8)}
    assert all(e["kind"] != "produce_error" for e in read_events(path))
