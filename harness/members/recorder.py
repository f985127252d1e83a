"""What every coordinator member records, whatever its client library: one vocabulary, one commit policy.

Contract
--------
* :class:`MemberConfig` is what a member needs: addresses, group, topic, its name, the client library
  (``kafka-python`` | ``librdkafka`` | ``aiokafka`` | ``java``) and Kafka properties by their dotted names (checked
  by :mod:`harness.scenario.properties`; each client adapter maps them to its own configuration).
* :class:`MemberRecorder` writes the history events of :mod:`harness.kernel.events` for one member;
  every event carries ``impl="coordinator"``, ``library`` (the client library), ``group``, ``member`` (the broker-assigned id,
  ``""`` before the first join) and ``generation`` (-1 before it). Adapters call it from the client's own
  callbacks and results only (rebalance callbacks, commit callbacks or return values, error codes),
  never from log text:

  - :meth:`~MemberRecorder.ready` once, before connecting (t0 of a join); :meth:`~MemberRecorder.started`
    once the client object exists (``assignor``: the member's; under KIP-848's consumer group protocol the
    server-side assignor it asks for, ``uniform`` when it names none, with ``group_protocol`` ``consumer``);
  - :meth:`~MemberRecorder.joined` whenever the client reports a completed join (generation, member id),
    before the assignment callbacks of that join;
  - :meth:`~MemberRecorder.revoked` / :meth:`~MemberRecorder.assigned` from the rebalance callbacks, one
    call per callback with the partitions it names (eager: the whole assignment; cooperative: what
    changed). ``revoked`` writes ``rebalance_begin`` (``lost``) then one ``revoked`` per partition;
    ``assigned`` one ``assigned`` per partition then ``rebalance_end`` (outcome ``ok``, the whole
    assignment). A cooperative round that changes nothing of this member may call ``assigned([])``:
    it still writes ``rebalance_end`` with the generation, so rounds are visible per member;
  - :meth:`~MemberRecorder.record` per processed record; :meth:`~MemberRecorder.commit_result` per
    partition of every commit attempt, with the client's error (None when accepted): ``commit`` or
    ``commit_rejected`` (``error``, and ``code`` when the client gives a Kafka error code);
  - :meth:`~MemberRecorder.heartbeat_error` when the client reports a failed heartbeat or a fatal group
    error through an error callback; :meth:`~MemberRecorder.stopped` once at the end.
* :class:`CommitPolicy` is the commit policy the member carries out itself, the same on every client
  (:mod:`harness.scenario.properties`): pure, time passed in. :meth:`~CommitPolicy.processed` notes a
  record; :meth:`~CommitPolicy.due` says whether an interval commit is due at ``now``;
  :meth:`~CommitPolicy.pending` gives the offsets to commit (next offset to read, Kafka's convention)
  for the partitions asked, only those not yet committed at that position; :meth:`~CommitPolicy.done`
  records a commit's success; :meth:`~CommitPolicy.forget` drops revoked partitions.
* The member template of the coordinator kind, which every client's member runs and which uses these, is
  :class:`harness.members.clients.base.ClientMemberBase`.
"""

from __future__ import annotations

import json
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from typing import Any

from harness.history.writer import History
from harness.scenario.processing import MEMBER_POLL_TIMEOUT_MS
from harness.scenario.properties import speaks_consumer


@dataclass(frozen=True)
class MemberConfig:
    """What a coordinator member needs (see the module contract)."""

    bootstrap: str
    group: str
    topic: str
    name: str
    client: str = "kafka-python"
    #: Kafka properties by dotted name, string values (``session.timeout.ms`` -> ``"6000"``).
    properties: Mapping[str, str] = field(default_factory=dict[str, str])
    group_instance_id: str | None = None
    poll_timeout_ms: int = MEMBER_POLL_TIMEOUT_MS
    #: the client's version where a client has several (None: its default)
    client_version: str | None = None

    def prop(self, name: str, default: str) -> str:
        """A property's value, or ``default``."""
        return self.properties.get(name, default)

    @property
    def assignor(self) -> str:
        return self.prop("partition.assignment.strategy", "range")

    @property
    def consumer_protocol(self) -> bool:
        """Whether the member runs KIP-848's consumer group protocol (``group.protocol=consumer``; franz-go:
        ``ServerSideBalancer=true``)."""
        return speaks_consumer(self.client, self.properties)

    @property
    def server_assignor(self) -> str:
        """Under the consumer group protocol, the server-side assignor the member asks for
        (``group.remote.assignor``; franz-go: its balancer, range or else uniform); ``uniform``, the
        broker's default, when it names none."""
        if self.client == "franz-go":
            return "range" if self.prop("Balancers", "") == "range" else "uniform"
        return self.prop("group.remote.assignor", "uniform")

    @property
    def auto_commit(self) -> bool:
        """The member's commit policy is on (``enable.auto.commit``, default true)."""
        return self.prop("enable.auto.commit", "true").lower() == "true"

    @property
    def auto_commit_interval_s(self) -> float:
        return int(self.prop("auto.commit.interval.ms", "5000")) / 1000


def parse_seq(value: bytes | None) -> int | None:
    """The workload's sequence number from a record value (JSON with ``"seq"``), or None."""
    if not value or value[:1] != b"{":
        return None
    try:
        seq = json.loads(value).get("seq")
    except (ValueError, AttributeError):
        return None
    return seq if isinstance(seq, int) else None


def error_of(error: BaseException) -> tuple[str, int | None]:
    """A client exception's Kafka error name and code: the exception's own ``errno`` / ``message``
    (kafka-python's and aiokafka's broker errors), else those of the error it wraps (kafka-python's
    ``CommitFailedError(IllegalGenerationError())``, aiokafka's ``raise CommitFailedError from ...``);
    otherwise the exception's class name and no code."""
    seen: list[BaseException] = [error]
    arg = error.args[0] if error.args else None
    if isinstance(arg, BaseException):
        seen.append(arg)
    if error.__cause__ is not None:
        seen.append(error.__cause__)
    for e in seen:
        code = getattr(e, "errno", None)
        if isinstance(code, int) and not isinstance(code, bool):
            message = getattr(e, "message", None)
            return (message if isinstance(message, str) and message else type(e).__name__), code
    return type(error).__name__, None


class MemberRecorder:
    """The history events of one coordinator member (see the module contract)."""

    def __init__(self, config: MemberConfig, history: History) -> None:
        self.config = config
        self.history = history
        self.member_id = ""
        self.generation = -1
        self.assignment: set[int] = set()
        self.records = 0

    def emit(self, kind: str, **fields: Any) -> None:
        self.history.emit(
            kind,
            impl="coordinator",
            library=self.config.client,
            group=self.config.group,
            member=self.member_id,
            generation=self.generation,
            **fields,
        )

    def ready(self) -> None:
        self.emit("ready")

    def started(self, **fields: Any) -> None:
        c = self.config
        if c.consumer_protocol:
            fields = {"assignor": c.server_assignor, "group_protocol": "consumer", **fields}
        else:
            fields = {"assignor": c.assignor, **fields}
        self.emit("started", name=c.name, static=c.group_instance_id is not None, **fields)

    def joined(self, generation: int, member_id: str) -> None:
        self.generation = generation
        self.member_id = member_id

    def revoked(self, partitions: Iterable[int], lost: bool = False) -> list[int]:
        ps = sorted(set(partitions))
        self.emit("rebalance_begin", lost=lost)
        for p in ps:
            self.emit("revoked", topic=self.config.topic, partition=p, lost=lost)
            self.assignment.discard(p)
        return ps

    def assigned(self, partitions: Iterable[int]) -> list[int]:
        ps = sorted(set(partitions))
        for p in ps:
            self.emit("assigned", topic=self.config.topic, partition=p)
            self.assignment.add(p)
        self.emit("rebalance_end", outcome="ok", partitions=sorted(self.assignment))
        return ps

    def record(self, partition: int, offset: int, value: bytes | None) -> None:
        self.records += 1
        self.emit("record", topic=self.config.topic, partition=partition, offset=offset, seq=parse_seq(value))

    def commit_result(
        self, partition: int, offset: int, error: str | None = None, code: int | None = None
    ) -> None:
        """One partition of a commit attempt: accepted (``error`` None) or rejected."""
        if error is None:
            self.emit("commit", topic=self.config.topic, partition=partition, offset=offset, store="kafka")
        else:
            self.emit(
                "commit_rejected",
                topic=self.config.topic,
                partition=partition,
                offset=offset,
                error=error[:300],
                code=code,
                store="kafka",
            )

    def heartbeat_error(self, error: str, code: int | None = None) -> None:
        self.emit("heartbeat_error", error=error[:300], code=code)

    def stopped(self, clean: bool, **fields: Any) -> None:
        self.emit("stopped", clean=clean, records=self.records, **fields)


class CommitPolicy:
    """The member's own commit policy (see the module contract); pure, ``now`` in seconds."""

    def __init__(self, interval_s: float, enabled: bool = True, now: float = 0.0) -> None:
        self.interval_s = interval_s
        self.enabled = enabled
        self._next = now + interval_s
        self._position: dict[int, int] = {}  # next offset to read, per partition
        self._committed: dict[int, int] = {}

    def processed(self, partition: int, offset: int) -> None:
        self._position[partition] = max(self._position.get(partition, 0), offset + 1)

    def due(self, now: float) -> bool:
        """Whether an interval commit is due (and, if so, the next one is scheduled an interval later)."""
        if not self.enabled or now < self._next:
            return False
        self._next = now + self.interval_s
        return True

    def pending(self, partitions: Iterable[int] | None = None) -> dict[int, int]:
        """Offsets to commit for ``partitions`` (all processed ones when None) not yet committed there."""
        if not self.enabled:
            return {}
        ps = (
            self._position
            if partitions is None
            else {p: self._position[p] for p in partitions if p in self._position}
        )
        return {p: o for p, o in sorted(ps.items()) if self._committed.get(p) != o}

    def done(self, offsets: Mapping[int, int]) -> None:
        self._committed.update(offsets)

    def forget(self, partitions: Iterable[int]) -> None:
        for p in partitions:
            self._position.pop(p, None)
            self._committed.pop(p, None)
