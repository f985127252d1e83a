"""A kafka-python group member for the broker's group tests: ``python -m tests.integration.coordinator.member``.

It subscribes one topic, polls, and after every poll writes its current assignment (and the
generation kafka-python holds) to ``--state`` as JSON, replacing the file atomically. SIGTERM:
``close()`` (a dynamic member sends LeaveGroup), exit 0. ``--commit-every-poll`` commits the
positions after every poll that returned records (so offsets can be checked after a restart).
"""

from __future__ import annotations

import argparse
import json
import logging
import os
import signal
import sys
import time

from kafka import KafkaConsumer
from kafka.coordinator.assignors.cooperative_sticky import CooperativeStickyAssignor
from kafka.coordinator.assignors.range import RangePartitionAssignor
from kafka.coordinator.assignors.roundrobin import RoundRobinPartitionAssignor
from kafka.coordinator.assignors.sticky.sticky_assignor import StickyPartitionAssignor

ASSIGNORS = {
    "range": RangePartitionAssignor,
    "roundrobin": RoundRobinPartitionAssignor,
    "sticky": StickyPartitionAssignor,
    "cooperative-sticky": CooperativeStickyAssignor,
}


def main() -> None:
    p = argparse.ArgumentParser()
    p.add_argument("--bootstrap", required=True)
    p.add_argument("--group", required=True)
    p.add_argument("--topic", required=True)
    p.add_argument("--state", required=True)
    p.add_argument("--assignor", default="range", choices=sorted(ASSIGNORS))
    p.add_argument("--instance-id", default=None)
    p.add_argument("--commit-every-poll", action="store_true")
    args = p.parse_args()
    logging.basicConfig(level=logging.WARNING, format="%(asctime)s %(levelname)s %(name)s: %(message)s")

    stopping = False

    def on_term(_sig: int, _frame: object) -> None:
        nonlocal stopping
        stopping = True

    signal.signal(signal.SIGTERM, on_term)
    consumer = KafkaConsumer(
        args.topic,
        bootstrap_servers=args.bootstrap,
        group_id=args.group,
        group_instance_id=args.instance_id,
        client_id=args.instance_id or f"member-{os.getpid()}",
        session_timeout_ms=6000,
        heartbeat_interval_ms=500,
        max_poll_interval_ms=30000,
        auto_offset_reset="earliest",
        enable_auto_commit=False,
        partition_assignment_strategy=[ASSIGNORS[args.assignor]],
    )
    # The topic's metadata before the first JoinGroup: a first member that joins without it leads a
    # generation that assigns nothing and then rejoins, a rejoin kafka-python 3.0.12 can lose (see
    # tests/integration/coordinator/test_kafka_python_rejoin.py).
    consumer.partitions_for_topic(args.topic)
    last = None
    while not stopping:
        records = consumer.poll(timeout_ms=100)
        if records and args.commit_every_poll:
            consumer.commit()
        generation = consumer._coordinator._generation  # test introspection only
        state = {
            "pid": os.getpid(),
            "assignment": sorted(tp.partition for tp in consumer.assignment()),
            "generation": generation.generation_id,
            "member_id": generation.member_id,
            "consumed": sum(len(v) for v in records.values()),
        }
        key = (tuple(state["assignment"]), state["generation"], state["member_id"])
        if key != last or state["consumed"]:
            last = key
            state["ts"] = time.time()
            tmp = args.state + ".tmp"
            with open(tmp, "w") as f:
                json.dump(state, f)
            os.replace(tmp, args.state)
    consumer.close()
    sys.exit(0)


if __name__ == "__main__":
    main()
