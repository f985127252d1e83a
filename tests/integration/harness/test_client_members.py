"""`herdlab member coordinator --client kafka-python | aiokafka` on herdlab's broker, read back from the
members' histories (the librdkafka member has its own file; the helpers are tests/support/client_members.py).

* the group's life: two members join and split the partitions, a third joins, one leaves (SIGTERM),
  one crashes (SIGKILL); every time each partition ends owned by exactly one live member; commits are
  recorded with outcomes and the last accepted one per partition is what the broker returns;
* a member that lost its membership (expired while it was stopped) records its revoke lost and commits
  nothing (aiokafka);
* cooperative-sticky (kafka-python): across a join the partitions that stay with their owner are never
  revoked and keep being processed;
* static membership: a restart within the session timeout causes no rebalance;
* property passthrough: ``-X`` reaches the client (``started.effective``); an unknown ``-X`` is a
  one-line error with a non-zero exit;
* ``stop()`` from another thread (as the CLI's signal handler) ends the member cleanly, also (aiokafka)
  while the broker is gone: the last commit is given up after ``request.timeout.ms``.

Default run: the life-cycle test, the cooperative join and the quick ones (about 30 s together);
the fenced commit and the static restart are ``long``.
"""

from __future__ import annotations

import os
import signal
import subprocess
import threading
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from harness.history.writer import HistoryWriter, read_events
from harness.members.clients.registry import make_member
from harness.members.recorder import MemberConfig
from harness.run.launch import PY
from harness.workload.producer import Producer, ProducerConfig
from tests.support.brokers import BrokerFactory
from tests.support.client_members import FAST_BROKER, ClientGroup, committed_offsets, create_topic
from tests.support.recording import RecordingHistory
from tests.support.waiting import wait_until

CLIENTS = ["kafka-python", "aiokafka"]
PARTITIONS = 6
#: Fast sessions and frequent commits: the tests are about what happens, not about Kafka's defaults.
OPTIONS = (
    "--session-timeout-ms",
    "2000",
    "--heartbeat-interval-ms",
    "300",
    "--auto-commit-interval-ms",
    "200",
)


def _produce(
    broker_bootstrap: str, topic: str, tmp: Path, count: int, name: str = "producer"
) -> set[tuple[int, int]]:
    """Produce ``count`` records now; (partition, offset) of each acknowledged one."""
    path = tmp / f"{name}.jsonl"
    with HistoryWriter(path, name) as h:
        Producer(
            ProducerConfig(bootstrap=broker_bootstrap, topic=topic, rate=1000, max_records=count), h
        ).run()
    return {(e["partition"], e["offset"]) for e in read_events(path) if e["kind"] == "produced"}


def _kinds(events: list[dict[str, Any]], kind: str) -> list[dict[str, Any]]:
    return [e for e in events if e["kind"] == kind]


@pytest.fixture
def group_of(broker_factory: BrokerFactory, tmp_path: Path) -> Iterator[Any]:
    groups: list[ClientGroup] = []

    def make(client: str, assignor: str = "range", topic: str = "t") -> ClientGroup:
        broker = broker_factory(extra_args=FAST_BROKER)
        create_topic(broker, topic, PARTITIONS)
        g = ClientGroup(
            broker, tmp_path, f"g-{client}", topic, PARTITIONS, client, (*OPTIONS, "--assignor", assignor)
        )
        groups.append(g)
        return g

    yield make
    for g in groups:
        g.stop_all()


@pytest.mark.parametrize("client", CLIENTS)
def test_join_rebalance_leave_and_crash_keep_one_live_owner_per_partition_and_commits_match_the_broker(
    group_of: Any, tmp_path: Path, client: str
) -> None:
    g: ClientGroup = group_of(client)
    g.start("m0")
    g.start("m1")
    split = g.wait_balanced("after two joins")
    assert set(split) == {"m0", "m1"}

    produced = _produce(g.broker.bootstrap, g.topic, tmp_path, 120)
    assert len(produced) == 120

    def processed() -> set[tuple[int, int]]:
        return {(e["partition"], e["offset"]) for n in ("m0", "m1") for e in _kinds(g.events(n), "record")}

    wait_until(lambda: processed() >= produced, timeout=30, what="every record processed")

    g.start("m2")
    assert set(g.wait_balanced("after a third join")) == {"m0", "m1", "m2"}
    g.leave("m1")
    assert set(g.wait_balanced("after a clean leave")) == {"m0", "m2"}
    g.kill("m2")
    assert set(g.wait_balanced("after a crash (session expiry)")) == {"m0"}
    g.leave("m0")

    # Every commit of every member has an outcome; the last accepted one per partition is what the
    # broker returns (m1's and m0's clean leaves committed everything they processed).
    commits = sorted(
        (e for n in ("m0", "m1", "m2") for e in g.events(n) if e["kind"] in ("commit", "commit_rejected")),
        key=lambda e: e["ts_ns"],
    )
    accepted = [e for e in commits if e["kind"] == "commit"]
    assert accepted, "no commit recorded"
    assert all(e["library"] == client and e["store"] == "kafka" for e in commits)
    last: dict[int, int] = {}
    for e in accepted:
        last[e["partition"]] = e["offset"]
    # every produced record was processed before m2 joined: each partition's end offset was committed
    ends = {p: max(o for q, o in produced if q == p) + 1 for p in {q for q, _ in produced}}
    assert last == ends
    assert committed_offsets(g.broker, g.group) == ends


@pytest.mark.long
@pytest.mark.parametrize("others", [0, 1])
def test_a_member_that_lost_its_membership_records_the_revoke_lost_and_commits_nothing(
    group_of: Any, tmp_path: Path, others: int
) -> None:
    """m0 (aiokafka) is stopped (SIGSTOP) past its session timeout while it has processed but not
    committed records; the broker expires it (the group moves on to m1, or is left empty). Resumed, m0's
    heartbeat is answered UNKNOWN_MEMBER_ID and aiokafka resets its generation and calls the revoke
    listener before rejoining: m0 records the revoke ``lost`` and commits nothing, and no commit of m0
    reaches the broker after the resume. (Before: m0 committed there with generation -1 and no member id;
    with m1 in the group the broker rejected it, UNKNOWN_MEMBER_ID; with the group empty it accepted it as
    an admin commit, a commit by a member that owned nothing.)

    Only aiokafka: kafka-python 3.0.12 runs its heartbeat on its IO thread, which after the resume races
    the member's next commit (its own ``on_partitions_lost`` when the heartbeat wins); a test of it would
    be flaky."""
    g: ClientGroup = group_of("aiokafka")
    # long interval: the records stay uncommitted until the resume
    g.options = (*g.options, "--auto-commit-interval-ms", "600000")
    g.start("m0")
    g.wait_balanced("m0 alone")
    names = ["m0"]
    if others:
        g.start("m1")
        g.wait_balanced("m0 and m1")
        names.append("m1")
    produced = _produce(g.broker.bootstrap, g.topic, tmp_path, 60)
    wait_until(
        lambda: (
            {(e["partition"], e["offset"]) for n in names for e in _kinds(g.events(n), "record")} >= produced
        ),
        timeout=30,
        what="every record processed",
    )
    m0 = g.procs["m0"]
    m0.signal(signal.SIGSTOP)
    try:
        wait_until(
            lambda: [e for e in g.broker_events("member_removed") if e["member"].startswith("m0-")],
            timeout=30,
            what=f"the broker to expire m0: {g.describe()}",
        )
    finally:
        resumed_ns = time.time_ns()
        m0.signal(signal.SIGCONT)
    lost = wait_until(
        lambda: [e for e in _kinds(g.events("m0"), "revoked") if e["ts_ns"] >= resumed_ns],
        timeout=30,
        what="m0's revoke after the resume",
    )
    assert lost and all(e["lost"] is True for e in lost), lost
    g.wait_balanced(f"m0 rejoined with {others} other")
    after = [e for e in g.events("m0") if e["ts_ns"] >= resumed_ns]
    assert not [e for e in after if e["kind"] in ("commit", "commit_rejected")], after
    # the broker: no commit from a process that is no member (generation -1), accepted or rejected
    broker_commits = g.broker_events("commit") + g.broker_events("commit_rejected")
    assert not [e for e in broker_commits if e.get("generation") == -1], broker_commits


def test_cooperative_sticky_keeps_the_untouched_partitions_consuming_across_a_join(
    group_of: Any, tmp_path: Path
) -> None:
    g: ClientGroup = group_of("kafka-python", "cooperative-sticky")
    g.start("m0")
    g.start("m1")
    before = g.wait_balanced("two cooperative members")
    with HistoryWriter(tmp_path / "producer.jsonl", "producer") as h:
        producer = Producer(ProducerConfig(bootstrap=g.broker.bootstrap, topic=g.topic, rate=300), h)
        t = threading.Thread(target=producer.run)
        t.start()
        try:
            wait_until(
                lambda: (
                    len(_kinds(g.events("m0"), "record")) > 20 and len(_kinds(g.events("m1"), "record")) > 20
                ),
                timeout=30,
                what="both members consuming",
            )
            join_ns = time.time_ns()
            g.start("m2")
            after = g.wait_balanced("after m2's join")
            end_ns = time.time_ns()
        finally:
            producer.stop()
            t.join(30)
    kept = {n: before[n] & after[n] for n in ("m0", "m1")}
    moved = {n: before[n] - after[n] for n in ("m0", "m1")}
    assert after["m2"] and sum(len(ps) for ps in moved.values()) == len(after["m2"])
    for n in ("m0", "m1"):
        assert kept[n], f"{n} kept nothing: {before} -> {after}"
        events = [e for e in g.events(n) if join_ns <= e["ts_ns"] <= end_ns]
        revoked = {e["partition"] for e in _kinds(events, "revoked")}
        assert revoked == moved[n], f"{n} revoked {revoked}, moved {moved[n]}"
        consumed = {e["partition"] for e in _kinds(events, "record")}
        assert kept[n] <= consumed, f"{n} did not consume {kept[n] - consumed} during the rebalance"


def test_a_cooperative_member_that_gets_nothing_still_records_its_completed_join(
    broker_factory: BrokerFactory, tmp_path: Path
) -> None:
    """One partition, two cooperative-sticky kafka-python members: the second joins and gets nothing, so
    kafka-python calls no listener for it; its completed join is still recorded (a ``rebalance_end`` with
    the round's generation and no partitions), so the checker counts it as live."""
    broker = broker_factory(extra_args=FAST_BROKER)
    create_topic(broker, "one", 1)
    g = ClientGroup(
        broker, tmp_path, "g-quiet", "one", 1, "kafka-python", (*OPTIONS, "--assignor", "cooperative-sticky")
    )
    try:
        g.start("m0")
        g.wait_balanced("m0 alone")
        g.start("m1")

        def m1_joined() -> list[dict[str, Any]]:
            return _kinds(g.events("m1"), "rebalance_end")

        (end, *_) = wait_until(m1_joined, timeout=30, what="m1's completed join")
        assert end["partitions"] == [] and end["generation"] >= 2 and end["member"]
        assert not _kinds(g.events("m1"), "assigned")  # it was given nothing
        assert {e["partition"] for e in _kinds(g.events("m0"), "assigned")} == {0}
        assert not _kinds(g.events("m0"), "revoked")  # cooperative: m0 kept p0 throughout
    finally:
        g.stop_all()


@pytest.mark.long
@pytest.mark.parametrize("client", CLIENTS)
def test_a_static_member_restart_within_the_session_timeout_causes_no_rebalance(
    group_of: Any, client: str
) -> None:
    g: ClientGroup = group_of(client)
    g.options = (*g.options, "--session-timeout-ms", "6000")
    g.start("s0", "--group-instance-id", "i0")
    g.start("s1", "--group-instance-id", "i1")
    before = g.wait_balanced("two static members")
    rebalances = len(g.broker_events("rebalance_begin"))
    generation = g.stable
    g.kill("s1")
    g.start("s1", "--group-instance-id", "i1")  # back well within the 6 s session
    after = g.wait_balanced("after the static restart")
    assert after == before
    assert g.stable == generation
    assert len(g.broker_events("rebalance_begin")) == rebalances


@pytest.mark.parametrize("client", CLIENTS)
def test_a_property_given_with_X_reaches_the_client(group_of: Any, client: str) -> None:
    g: ClientGroup = group_of(client)
    g.start("m0", "-X", "fetch.max.wait.ms=123", "-X", "max.partition.fetch.bytes=65536")
    started = wait_until(lambda: _kinds(g.events("m0"), "started"), timeout=30, what="m0 started")
    effective = started[0]["effective"]
    assert effective["fetch.max.wait.ms"] == 123
    assert effective["max.partition.fetch.bytes"] == 65536
    assert effective["session.timeout.ms"] == 2000  # a typed option is a property too
    assert started[0]["library"] == client


@pytest.mark.parametrize("client", CLIENTS)
def test_an_unknown_property_is_a_one_line_error(client: str) -> None:
    argv = [*PY, "member", "coordinator", "--client", client, "--bootstrap", "127.0.0.1:1", "--group", "g"]
    argv += ["--topic", "t", "-X", "no.such.property=1"]
    r = subprocess.run(argv, capture_output=True, text=True, timeout=60, env={**os.environ, "NO_COLOR": "1"})
    assert r.returncode != 0
    errors = [line for line in r.stderr.splitlines() if line.startswith("herdlab: error:")]
    assert len(errors) == 1 and "no.such.property" in errors[0], r.stderr


@pytest.mark.parametrize("client", CLIENTS)
def test_stop_from_another_thread_ends_the_member_cleanly(broker_factory: BrokerFactory, client: str) -> None:
    """The CLI's signal handler, or any thread, calls ``stop()``: ``run()`` returns, after committing
    and leaving (a clean stop)."""
    broker = broker_factory(extra_args=FAST_BROKER)
    create_topic(broker, "t", 2)
    history = RecordingHistory()
    config = MemberConfig(
        bootstrap=broker.bootstrap, group=f"g-{client}", topic="t", name="m0", client=client
    )
    member = make_member(config, history)  # pyright: ignore[reportArgumentType]
    t = threading.Thread(target=member.run)
    t.start()
    try:
        wait_until(lambda: history.of("rebalance_end"), timeout=30, what="m0 to join")
    finally:
        member.stop()
        t.join(20)
    assert not t.is_alive()
    assert [e["clean"] for e in history.of("stopped")] == [True]


def test_an_assignor_the_client_lacks_is_a_one_line_error() -> None:
    argv = [
        *PY,
        "member",
        "coordinator",
        "--client",
        "aiokafka",
        "--bootstrap",
        "127.0.0.1:1",
        "--group",
        "g",
    ]
    argv += ["--topic", "t", "--assignor", "cooperative-sticky"]  # aiokafka 0.14 has no cooperative protocol
    r = subprocess.run(argv, capture_output=True, text=True, timeout=60)
    assert r.returncode != 0
    errors = [line for line in r.stderr.splitlines() if line.startswith("herdlab: error:")]
    assert len(errors) == 1 and "cooperative-sticky" in errors[0], r.stderr


@pytest.mark.parametrize("client", CLIENTS)
def test_stop_during_a_broker_outage_ends_within_the_request_timeout(
    broker_factory: BrokerFactory, client: str
) -> None:
    """The member processed records it has not committed yet; the broker dies; ``stop()`` (the CLI's
    SIGTERM) commits, which cannot reach a coordinator: each commit attempt is given up after the client's
    ``request.timeout.ms`` and recorded rejected for the positions processed, then the client closes and
    ``run()`` returns, a clean stop. (aiokafka's ``commit`` looks for a coordinator until one answers or
    the consumer is closing, so without the member's bound it never ended while the broker was away;
    kafka-python bounds its blocking commit itself and may try twice: at stop, then in the revoke of its
    close. librdkafka is not here: its synchronous commit waits for a coordinator until its session
    times out, see harness/members/clients/librdkafka.py.)"""
    broker = broker_factory(extra_args=FAST_BROKER)
    create_topic(broker, "t", 2)
    history = RecordingHistory()
    request_timeout_ms = 2000
    props = {"request.timeout.ms": str(request_timeout_ms), "auto.commit.interval.ms": "600000"}
    config = MemberConfig(
        bootstrap=broker.bootstrap, group="g-stop", topic="t", name="m0", client=client, properties=props
    )
    member = make_member(config, history)  # pyright: ignore[reportArgumentType]
    t = threading.Thread(target=member.run, daemon=True)  # daemon: a hung member must not hang pytest
    t.start()
    try:
        wait_until(lambda: history.of("rebalance_end"), timeout=30, what="m0 to join")
        with HistoryWriter(Path(os.devnull), "producer") as h:
            Producer(
                ProducerConfig(bootstrap=broker.bootstrap, topic="t", rate=1000, max_records=20), h
            ).run()
        wait_until(lambda: len(history.of("record")) >= 20, timeout=30, what="m0 to process the records")
        broker.kill()
    finally:
        t0 = time.monotonic()
        member.stop()
        t.join(4 * request_timeout_ms / 1000 + 5)
    assert not t.is_alive(), f"m0 still running {time.monotonic() - t0:.1f} s after stop()"
    assert [e["clean"] for e in history.of("stopped")] == [True]
    assert not history.of("commit")
    processed = {}
    for e in history.of("record"):
        processed[e["partition"]] = max(processed.get(e["partition"], 0), e["offset"] + 1)
    # every partition's processed position was attempted, and each attempt rejected
    assert {e["partition"]: e["offset"] for e in history.of("commit_rejected")} == processed
