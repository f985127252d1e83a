"""A librdkafka consumer with ``group.protocol=consumer`` (KIP-848) as a process of its own, for tests of a broker's
consumer groups; ``python -m tests.support.kip848_member BOOTSTRAP GROUP TOPIC OUT [--assignor NAME] [--commit]
[--protocol classic|consumer]`` (``--protocol classic``: the same consumer with ``group.protocol=classic`` and the
cooperative-sticky assignor, whose callbacks are incremental too).

It writes one JSON object a line to ``OUT`` (flushed at once): ``ready``; ``assigned`` / ``revoked`` / ``lost``
with ``partitions`` (librdkafka's incremental callbacks: only what changes) and ``member`` (its member id); with ``--commit``, after each record a synchronous commit of
its next offset and ``committed`` with ``partition`` and ``offset`` (or ``commit_failed`` with ``error``);
``closed`` after a clean close (SIGTERM: the member leaves the group). SIGKILL leaves nothing: its session expires.
librdkafka refuses ``session.timeout.ms``, ``heartbeat.interval.ms`` and ``partition.assignment.strategy`` with
this protocol: the broker's settings rule them.
"""

from __future__ import annotations

import argparse
import json
import signal
import sys
import time
from pathlib import Path
from typing import Any

from confluent_kafka import Consumer, KafkaException, TopicPartition

from harness.procs import ChildProcess, spawn


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("bootstrap")
    parser.add_argument("group")
    parser.add_argument("topic")
    parser.add_argument("out", type=Path)
    parser.add_argument("--assignor", default=None)
    parser.add_argument("--commit", action="store_true")
    parser.add_argument("--protocol", choices=("classic", "consumer"), default="consumer")
    args = parser.parse_args()
    out = args.out.open("a")

    def write(kind: str, **fields: Any) -> None:
        out.write(json.dumps({"kind": kind, "ts_ns": time.time_ns(), **fields}) + "\n")
        out.flush()

    stop = False

    def on_term(_sig: int, _frame: object) -> None:
        nonlocal stop
        stop = True

    signal.signal(signal.SIGTERM, on_term)
    conf: dict[str, Any] = {
        "bootstrap.servers": args.bootstrap,
        "group.id": args.group,
        "group.protocol": args.protocol,
        "client.id": args.out.stem,
        "enable.auto.commit": False,
        "auto.offset.reset": "earliest",
    }
    if args.assignor:
        conf["group.remote.assignor"] = args.assignor
    if args.protocol == "classic":
        conf["partition.assignment.strategy"] = "cooperative-sticky"
    consumer = Consumer(conf)

    def parts(ps: list[TopicPartition]) -> list[int]:
        return sorted(p.partition for p in ps)

    def member() -> str:
        return consumer.memberid() or ""

    consumer.subscribe(
        [args.topic],
        on_assign=lambda _c, ps: write("assigned", partitions=parts(ps), member=member()),
        on_revoke=lambda _c, ps: write("revoked", partitions=parts(ps), member=member()),
        on_lost=lambda _c, ps: write("lost", partitions=parts(ps), member=member()),
    )
    write("ready")
    while not stop:
        msg = consumer.poll(0.1)
        if msg is None or msg.error() is not None or not args.commit:
            continue
        try:
            done = consumer.commit(message=msg, asynchronous=False)
        except KafkaException as e:
            write("commit_failed", partition=msg.partition(), error=e.args[0].name())
            continue
        for tp in done or ():
            write("committed", partition=tp.partition, offset=tp.offset, member=member())
    consumer.close()
    write("closed")


class Kip848Members:
    """Member processes of one consumer group (see the module docstring), each observed through its file."""

    def __init__(self, bootstrap: str, group: str, topic: str, tmp: Path, *extra: str) -> None:
        self.bootstrap, self.group, self.topic, self.tmp, self.extra = bootstrap, group, topic, tmp, extra
        self.procs: dict[str, ChildProcess] = {}
        self.gone: set[str] = set()  # killed: their claims no longer count

    def start(self, name: str, *extra: str) -> ChildProcess:
        """Start member ``name`` (``extra``: arguments for it alone, e.g. ``--protocol classic``)."""
        argv = [sys.executable, "-m", "tests.support.kip848_member", self.bootstrap, self.group, self.topic]
        argv += [str(self.tmp / f"{name}.jsonl"), *self.extra, *extra]
        proc = spawn(argv, name=name, log_path=self.tmp / f"{name}.log", cwd=Path(__file__).parents[2])
        self.procs[name] = proc
        return proc

    def events(self, name: str) -> list[dict[str, Any]]:
        path = self.tmp / f"{name}.jsonl"
        if not path.exists():
            return []
        return [json.loads(line) for line in path.read_text().splitlines() if line.endswith("}")]

    def owned(self, name: str) -> set[int]:
        """What ``name`` owns after the callbacks it reported (incremental: assigned adds, revoked and lost
        remove); nothing once it was killed or closed."""
        if name in self.gone:
            return set()
        owns: set[int] = set()
        for e in self.events(name):
            if e["kind"] == "assigned":
                owns |= set(e["partitions"])
            elif e["kind"] in ("revoked", "lost"):
                owns -= set(e["partitions"])
            elif e["kind"] == "closed":
                owns = set()
        return owns

    def member_id(self, name: str) -> str | None:
        ids = [e["member"] for e in self.events(name) if e.get("member")]
        return ids[-1] if ids else None

    def owned_once(self, partitions: int, names: list[str]) -> bool:
        """Every partition ``0..partitions-1`` is owned by exactly one of ``names``, each owning at least one."""
        owned = [self.owned(n) for n in names]
        return all(owned) and sorted(p for o in owned for p in o) == list(range(partitions))

    def kill(self, name: str) -> None:
        """SIGKILL: no leave, the broker must expire its session."""
        self.procs[name].signal(signal.SIGKILL)
        self.procs[name].wait(10)
        self.gone.add(name)

    def stop(self, name: str) -> None:
        """SIGTERM: a clean close (the member leaves the group)."""
        self.procs[name].signal(signal.SIGTERM, group=False)
        self.procs[name].wait(30)

    def stop_all(self) -> None:
        for name, proc in self.procs.items():
            if proc.alive():
                self.stop(name)


if __name__ == "__main__":
    main()
