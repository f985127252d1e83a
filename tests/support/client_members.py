"""Coordinator members of any client library in tests: ``herdlab member coordinator --client C``
processes (:class:`harness.run.launch.MemberService`) on a real broker, read back from their histories.

:class:`ClientGroup` starts, stops and kills members of one group and folds each member's history since
its process started into its assignment (``assigned`` / ``revoked``); :meth:`ClientGroup.balanced` is
the condition tests wait on: every partition owned by exactly one live member and the broker's group
Stable with exactly the live members. Shared by the per-client member tests (kafka-python, aiokafka,
librdkafka).
"""

from __future__ import annotations

import signal
from pathlib import Path
from typing import Any

from kafka.admin import KafkaAdminClient, NewTopic

from harness.cluster.broker import BrokerProcess
from harness.history.writer import read_events
from harness.run.launch import PY, MemberService
from harness.run.tail import HistoryTail
from tests.support.waiting import wait_until

#: The tests are not about the initial delay or the minimum session: make them fast.
FAST_BROKER = ["--group-initial-rebalance-delay-ms", "100", "--group-min-session-timeout-ms", "1000"]


def create_topic(broker: BrokerProcess, name: str, partitions: int) -> None:
    admin = KafkaAdminClient(bootstrap_servers=broker.bootstrap)
    try:
        admin.create_topics([NewTopic(name, partitions, 1)])
    finally:
        admin.close()


def committed_offsets(broker: BrokerProcess, group: str) -> dict[int, int]:
    """What the broker returns for ``group`` (OffsetFetch through kafka-python's admin client):
    partition -> committed offset."""
    admin = KafkaAdminClient(bootstrap_servers=broker.bootstrap)
    try:
        offsets = admin.list_group_offsets({group: None})[group]  # pyright: ignore[reportAttributeAccessIssue] (stubs predate 3.0)
    finally:
        admin.close()
    return {tp.partition: om.offset for tp, om in offsets.items() if om.offset >= 0}


def member_argv(
    broker: BrokerProcess, group: str, topic: str, name: str, history: Path, client: str, *extra: str
) -> list[str]:
    """The command line of one member (``extra``: more options, e.g. ``-X name=value``)."""
    argv = [*PY, "member", "coordinator", "--client", client, "--bootstrap", broker.bootstrap]
    return [*argv, "--group", group, "--topic", topic, "--name", name, "--history", str(history), *extra]


class ClientGroup:
    """Member processes of one group on one client library (see the module docstring)."""

    def __init__(
        self,
        broker: BrokerProcess,
        tmp: Path,
        group: str,
        topic: str,
        partitions: int,
        client: str,
        options: tuple[str, ...] = (),
    ) -> None:
        self.broker, self.tmp, self.group, self.topic = broker, tmp, group, topic
        self.partitions, self.client, self.options = partitions, client, options
        self.procs: dict[str, MemberService] = {}
        self._assignment: dict[str, set[int]] = {}
        self._tails: dict[str, HistoryTail] = {}
        self._since: dict[str, int] = {}
        assert broker.history_path is not None, "the broker must write a history"
        self.broker_history = broker.history_path
        self._broker_tail = HistoryTail(broker.history_path)
        self.group_state = ""
        self.stable: tuple[int, int] | None = None  # (generation, members) of the broker's latest Stable

    def history(self, name: str) -> Path:
        return self.tmp / f"{name}.jsonl"

    def start(self, name: str, *extra: str) -> MemberService:
        """Start member ``name`` with the group's options and ``extra``; wait until it is ready."""
        argv = member_argv(
            self.broker, self.group, self.topic, name, self.history(name), self.client, *self.options, *extra
        )
        proc = MemberService(name, argv, self.history(name), self.tmp / f"{name}.log").start(timeout=60)
        self.procs[name] = proc
        self._assignment[name] = set()
        self._tails[name] = HistoryTail(self.history(name))
        self._since[name] = proc.started_ns
        return proc

    def leave(self, name: str) -> None:
        """SIGTERM: the member commits and closes its client (LeaveGroup for a dynamic member)."""
        proc = self.procs.pop(name)
        proc.signal(signal.SIGTERM)
        assert proc.wait(30) == 0, proc.log_tail()
        proc.stop()

    def kill(self, name: str) -> None:
        """SIGKILL: no commit, no leave; the broker expires the member after its session timeout."""
        proc = self.procs.pop(name)
        proc.signal(signal.SIGKILL)
        proc.wait(10)
        proc.stop()

    def _update(self) -> None:
        for e in self._broker_tail.poll():
            if e["kind"] == "group_state" and e.get("group") == self.group:
                self.group_state = e["to_state"]
                if e["to_state"] == "Stable":
                    self.stable = (e["generation"], e["members"])
        for name, tail in self._tails.items():
            for e in tail.poll():
                if e["ts_ns"] < self._since[name]:
                    continue  # an earlier process of the same name
                if e["kind"] == "assigned":
                    self._assignment[name].add(e["partition"])
                elif e["kind"] == "revoked":
                    self._assignment[name].discard(e["partition"])

    def assignments(self) -> dict[str, set[int]]:
        """Each live member's assignment as its history says now."""
        self._update()
        return {n: set(self._assignment[n]) for n in self.procs}

    def balanced(self) -> dict[str, set[int]] | None:
        """The live members' assignments if every partition is owned by exactly one of them, each owns
        something, and the broker's group is Stable with exactly these members; else None."""
        owned = self.assignments()
        flat = sorted(p for ps in owned.values() for p in ps)
        if flat != list(range(self.partitions)) or any(not ps for ps in owned.values()):
            return None
        if self.group_state != "Stable" or self.stable is None or self.stable[1] != len(owned):
            return None
        return owned

    def wait_balanced(self, what: str, timeout: float = 30.0) -> dict[str, set[int]]:
        """Wait until :meth:`balanced` and return the assignments."""
        return wait_until(  # pyright: ignore[reportReturnType] (wait_until returns only a truthy value)
            self.balanced, timeout, interval=0.05, what=f"a balanced group {what}: {self.describe()}"
        )

    def describe(self) -> str:
        return f"broker {self.group_state} {self.stable}; members {self.assignments()}"

    def events(self, name: str) -> list[dict[str, Any]]:
        """Every event of ``name``'s history (all its processes)."""
        p = self.history(name)
        return read_events(p) if p.exists() else []

    def broker_events(self, kind: str) -> list[dict[str, Any]]:
        return [
            e for e in read_events(self.broker_history) if e["kind"] == kind and e.get("group") == self.group
        ]

    def stop_all(self) -> None:
        for proc in self.procs.values():
            proc.stop()
        self.procs.clear()
