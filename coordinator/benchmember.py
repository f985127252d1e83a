"""One kafka-python group member for ``herdlab bench coordinator rebalance`` (``python -m coordinator.benchmember``).

Subscribes ``--topic`` in ``--group`` with the benchmark's settings (heartbeat 500 ms, session 6 s)
and polls until SIGTERM, then closes (LeaveGroup). It records nothing: the benchmark reads the
broker's history, so the figures are the coordinator's own timestamps.
"""

from __future__ import annotations

import argparse
import signal

from kafka import KafkaConsumer


def main() -> None:
    p = argparse.ArgumentParser()
    p.add_argument("--bootstrap", required=True)
    p.add_argument("--group", required=True)
    p.add_argument("--topic", required=True)
    p.add_argument("--heartbeat-ms", type=int, default=500)
    p.add_argument("--session-ms", type=int, default=6000)
    args = p.parse_args()
    stopping = False

    def on_term(_sig: int, _frame: object) -> None:
        nonlocal stopping
        stopping = True

    signal.signal(signal.SIGTERM, on_term)
    consumer = KafkaConsumer(
        args.topic,
        bootstrap_servers=args.bootstrap,
        group_id=args.group,
        session_timeout_ms=args.session_ms,
        heartbeat_interval_ms=args.heartbeat_ms,
        enable_auto_commit=False,
        auto_offset_reset="latest",
    )
    while not stopping:
        consumer.poll(timeout_ms=100)
    consumer.close()


if __name__ == "__main__":
    main()
