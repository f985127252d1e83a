"""The librdkafka member (`herdlab member coordinator --client librdkafka`, unmodified confluent-kafka) against
herdlab's broker: joins, rebalances on a join, a leave and a crash, commits with outcomes, cooperative-sticky,
static membership, property passthrough. What happened is read from the members' and the broker's histories."""

from __future__ import annotations

import signal
import subprocess
import threading
from collections.abc import Iterator
from pathlib import Path

import pytest

from harness.cluster.broker import BrokerProcess
from harness.history.writer import HistoryWriter
from harness.procs import ChildProcess
from harness.workload.producer import Producer, ProducerConfig
from tests.support.brokers import BrokerFactory
from tests.support.librdkafka_members import (
    HERDLAB,
    broker_events,
    committed,
    create_topic,
    events,
    group_assignor,
    ownership,
    processed,
    produce,
    start_member,
)
from tests.support.waiting import wait_until

PARTITIONS = 4
#: the broker allows short sessions so that a crashed member is expired in seconds
BROKER_ARGS = ("--group-initial-rebalance-delay-ms", "0", "--group-min-session-timeout-ms", "1000")


@pytest.fixture
def rdk_broker(broker_factory: BrokerFactory) -> BrokerProcess:
    b = broker_factory(extra_args=BROKER_ARGS, persistent=False)
    create_topic(b, PARTITIONS)
    return b


@pytest.fixture
def members() -> Iterator[list[ChildProcess]]:
    started: list[ChildProcess] = []
    yield started
    for m in started:
        m.stop()


def _owned_once_by(tmp: Path, names: set[str], partitions: int = PARTITIONS) -> bool:
    """Every partition owned by exactly one live member, and the live owners are exactly ``names``."""
    view = ownership(tmp, partitions, "m0", "m1", "m2", "s0")
    owners = view.owners()
    return view.owned_once() and {o[0] for o in owners.values()} == names and view.live == names


def test_two_members_split_the_partitions_commit_with_outcomes_and_a_clean_leave_hands_over(
    rdk_broker: BrokerProcess, tmp_path: Path, members: list[ChildProcess]
) -> None:
    members += [start_member(rdk_broker, tmp_path, "m0"), start_member(rdk_broker, tmp_path, "m1")]
    wait_until(
        lambda: _owned_once_by(tmp_path, {"m0", "m1"}), timeout=30, what="m0 and m1 to split the partitions"
    )
    produced = produce(rdk_broker, tmp_path, 200)
    assert len(produced) == 200
    wait_until(
        lambda: processed(tmp_path, ["m0", "m1"]) >= produced, timeout=20, what="every record processed"
    )

    members[1].signal(signal.SIGTERM, group=False)  # clean: commit in on_revoke / close, LeaveGroup
    assert members[1].wait(20) == 0, members[1].log_tail()
    wait_until(
        lambda: _owned_once_by(tmp_path, {"m0"}), timeout=20, what="m0 to own everything after m1 left"
    )
    members[0].signal(signal.SIGTERM, group=False)
    assert members[0].wait(20) == 0, members[0].log_tail()

    evs = events(tmp_path, "m0", "m1")
    assert not [e for e in evs if e["kind"] == "commit_rejected"]
    last_commit: dict[int, int] = {}
    for e in evs:
        if e["kind"] == "commit":
            assert e["library"] == "librdkafka" and e["member"]  # the broker-assigned member id
            last_commit[e["partition"]] = e["offset"]
    # Every record was processed and both members committed on their way out: the last accepted commit
    # of each partition is the next offset to read after the last produced record there.
    expected = {p: max(o for q, o in produced if q == p) + 1 for p in range(PARTITIONS)}
    assert last_commit == expected
    assert committed(rdk_broker, PARTITIONS) == expected
    m1_stopped = [e for e in evs if e["source"] == "m1" and e["kind"] == "stopped"]
    assert len(m1_stopped) == 1 and m1_stopped[0]["clean"] is True
    # Identity: each member's rounds carry a generation the broker completed with members (read from
    # librdkafka's consumer_group_metadata()), not -1; m0's last round is the broker's last one with members
    # (m1's leave; the generation after it is the empty group's, after m0's own leave).
    completed = [e["generation"] for e in broker_events(rdk_broker, "rebalance_end") if e["members"] > 0]
    for name in ("m0", "m1"):
        rounds = [e["generation"] for e in evs if e["source"] == name and e["kind"] == "rebalance_end"]
        assert rounds and set(rounds) <= set(completed), (name, rounds, completed)
    m0_rounds = [e["generation"] for e in evs if e["source"] == "m0" and e["kind"] == "rebalance_end"]
    assert m0_rounds[-1] == completed[-1], (m0_rounds, completed)


def test_property_passthrough_reaches_the_broker(
    broker_factory: BrokerFactory, tmp_path: Path, members: list[ChildProcess]
) -> None:
    # The broker refuses sessions over 8 s: a member given session.timeout.ms=9000 is refused with
    # INVALID_SESSION_TIMEOUT (code 26), the one given 7000 joins, with the assignor given as -X.
    broker = broker_factory(
        extra_args=(*BROKER_ARGS, "--group-max-session-timeout-ms", "8000"), persistent=False
    )
    create_topic(broker, PARTITIONS)
    members.append(start_member(broker, tmp_path, "m2", "-X", "session.timeout.ms=9000"))
    members.append(
        start_member(
            broker,
            tmp_path,
            "m0",
            "-X",
            "session.timeout.ms=7000",
            "-X",
            "partition.assignment.strategy=roundrobin",
        )
    )
    wait_until(lambda: _owned_once_by(tmp_path, {"m0"}), timeout=30, what="m0 to own every partition")
    wait_until(
        lambda: any(e["kind"] == "heartbeat_error" for e in events(tmp_path, "m2")),
        timeout=20,
        what="m2's JoinGroup to be refused",
    )
    refused = [e for e in events(tmp_path, "m2") if e["kind"] == "heartbeat_error"]
    assert {e["code"] for e in refused} == {26}  # INVALID_SESSION_TIMEOUT: the broker saw 9000 > 8000
    assert not [e for e in events(tmp_path, "m2") if e["kind"] == "assigned"]

    (started,) = [e for e in events(tmp_path, "m0") if e["kind"] == "started"]
    assert started["effective"]["session.timeout.ms"] == "7000"
    assert started["effective"]["partition.assignment.strategy"] == "roundrobin"
    assert started["effective"]["enable.auto.commit"] == "false"  # the member commits itself

    assert group_assignor(broker) == "roundrobin"  # the protocol the broker chose from m0's JoinGroup


def test_an_unknown_property_is_a_one_line_error(tmp_path: Path) -> None:
    argv = member_argv_without_broker(tmp_path) + ["-X", "no.such.property=1"]
    done = subprocess.run(argv, capture_output=True, text=True, timeout=60)
    assert done.returncode != 0
    errors = [line for line in done.stderr.splitlines() if line.startswith("herdlab: error:")]
    assert errors == ["herdlab: error: Invalid value for -X: unknown librdkafka property 'no.such.property'"]
    assert "Traceback" not in done.stderr


def member_argv_without_broker(tmp: Path) -> list[str]:
    """A member command line whose bootstrap address is never contacted (the property check comes first)."""
    return [HERDLAB, "member", "coordinator", "--client", "librdkafka", "--bootstrap", "127.0.0.1:9"] + [
        "--group",
        "g",
        "--topic",
        "t",
        "--history",
        str(tmp / "x.jsonl"),
    ]


@pytest.mark.long
def test_rebalances_on_a_join_a_leave_and_a_crash(
    rdk_broker: BrokerProcess, tmp_path: Path, members: list[ChildProcess]
) -> None:
    short = ("--session-timeout-ms", "2000", "--heartbeat-interval-ms", "300")
    m0, m1 = (
        start_member(rdk_broker, tmp_path, "m0", *short),
        start_member(rdk_broker, tmp_path, "m1", *short),
    )
    members += [m0, m1]
    wait_until(lambda: _owned_once_by(tmp_path, {"m0", "m1"}), timeout=30, what="m0 and m1 to split")

    m2 = start_member(rdk_broker, tmp_path, "m2", *short)
    members.append(m2)
    wait_until(lambda: _owned_once_by(tmp_path, {"m0", "m1", "m2"}), timeout=30, what="m2's join rebalance")

    m1.signal(signal.SIGTERM, group=False)
    assert m1.wait(20) == 0, m1.log_tail()
    wait_until(lambda: _owned_once_by(tmp_path, {"m0", "m2"}), timeout=30, what="the rebalance after m1 left")

    m2_id = next(e["member"] for e in events(tmp_path, "m2") if e["kind"] == "assigned")
    m2.signal(signal.SIGKILL, group=False)  # a crash: no commit, no LeaveGroup, no history event
    assert m2.wait(10) is not None
    # m2 is gone (only live members' histories are folded): m0 owns m2's partitions once the broker
    # expires m2's session (2 s) and rebalances.
    wait_until(
        lambda: (
            ownership(tmp_path, PARTITIONS, "m0", "m1").owners() == {p: ["m0"] for p in range(PARTITIONS)}
        ),
        timeout=30,
        what="m0 to own everything after m2 crashed",
    )
    reasons = {e["member"]: e["reason"] for e in broker_events(rdk_broker, "member_removed")}
    assert reasons[m2_id] == "expired"
    m1_id = next(e["member"] for e in events(tmp_path, "m1") if e["kind"] == "assigned")
    assert reasons[m1_id] == "leave"


def test_cooperative_sticky_keeps_untouched_partitions_consuming_across_a_join(
    broker_factory: BrokerFactory, tmp_path: Path, members: list[ChildProcess]
) -> None:
    partitions = 6
    broker = broker_factory(extra_args=BROKER_ARGS, persistent=False)
    create_topic(broker, partitions)
    coop = ("--assignor", "cooperative-sticky")
    members += [start_member(broker, tmp_path, "m0", *coop), start_member(broker, tmp_path, "m1", *coop)]
    wait_until(
        lambda: _owned_once_by(tmp_path, {"m0", "m1"}, partitions), timeout=30, what="a stable 2-member group"
    )
    before = {m: set(ps) for m, ps in ownership(tmp_path, partitions, "m0", "m1").claims.items()}

    with HistoryWriter(tmp_path / "producer.jsonl", "producer") as h:
        producer = Producer(ProducerConfig(bootstrap=broker.bootstrap, topic="t", rate=100), h)
        thread = threading.Thread(target=producer.run, daemon=True)
        thread.start()
        try:
            wait_until(
                lambda: len(processed(tmp_path, ["m0", "m1"])) >= 50, timeout=20, what="records flowing"
            )
            members.append(start_member(broker, tmp_path, "m2", *coop))
            wait_until(
                lambda: _owned_once_by(tmp_path, {"m0", "m1", "m2"}, partitions),
                timeout=30,
                what="m2 to get its share",
            )
            (m2_ready,) = [e["ts_ns"] for e in events(tmp_path, "m2") if e["kind"] == "ready"]
            settled = max(e["ts_ns"] for e in events(tmp_path, "m2") if e["kind"] == "assigned")
            after = {m: set(ps) for m, ps in ownership(tmp_path, partitions, "m0", "m1", "m2").claims.items()}
            kept = {m: before[m] & after[m] for m in ("m0", "m1")}
            # 6 partitions over 3 members: each old member gives 1 of its 3 (sticky) and keeps 2.
            assert {m: len(ps) for m, ps in kept.items()} == {"m0": 2, "m1": 2}

            def consumed_after(member: str, partition: int) -> bool:
                return any(
                    e["kind"] == "record" and e["partition"] == partition and e["ts_ns"] > settled
                    for e in events(tmp_path, member)
                )

            wait_until(
                lambda: all(consumed_after(m, p) for m, ps in kept.items() for p in ps),
                timeout=20,
                what="the kept partitions to be consumed after the join",
            )
        finally:
            producer.stop()
            thread.join(10)

    for m in ("m0", "m1"):
        evs = events(tmp_path, m)
        revoked_after_join = {e["partition"] for e in evs if e["kind"] == "revoked" and e["ts_ns"] > m2_ready}
        assert revoked_after_join == before[m] - kept[m], m  # only what moved was revoked
        # and the kept partitions were consumed without a gap in their offsets across the join
        for p in kept[m]:
            offsets = sorted(e["offset"] for e in evs if e["kind"] == "record" and e["partition"] == p)
            assert offsets == list(range(offsets[0], offsets[0] + len(offsets)))


@pytest.mark.long
def test_a_static_member_restarted_within_its_session_causes_no_rebalance(
    rdk_broker: BrokerProcess, tmp_path: Path, members: list[ChildProcess]
) -> None:
    static = ("--group-instance-id", "s0-instance", "--session-timeout-ms", "20000")
    members += [start_member(rdk_broker, tmp_path, "m0"), start_member(rdk_broker, tmp_path, "s0", *static)]
    wait_until(lambda: _owned_once_by(tmp_path, {"m0", "s0"}), timeout=30, what="m0 and s0 to split")
    wait_until(
        lambda: bool(broker_events(rdk_broker, "rebalance_end")),
        timeout=10,
        what="the broker's rebalance_end",
    )
    begins_before = broker_events(rdk_broker, "rebalance_begin")
    generations_before = {e["generation"] for e in broker_events(rdk_broker, "rebalance_end")}
    s0_before = ownership(tmp_path, PARTITIONS, "s0").claims["s0"]

    members[1].signal(signal.SIGTERM, group=False)  # a static member sends no LeaveGroup on close
    assert members[1].wait(20) == 0, members[1].log_tail()
    members.append(start_member(rdk_broker, tmp_path, "s0", *static))
    wait_until(lambda: _owned_once_by(tmp_path, {"m0", "s0"}), timeout=30, what="s0 back with its partitions")
    assert ownership(tmp_path, PARTITIONS, "s0").claims["s0"] == s0_before

    added = broker_events(rdk_broker, "member_added")
    assert [e for e in added if e.get("instance_id") == "s0-instance" and e.get("replaces")]
    assert {e["generation"] for e in broker_events(rdk_broker, "rebalance_end")} == generations_before
    assert broker_events(rdk_broker, "rebalance_begin") == begins_before


@pytest.mark.long
def test_a_fenced_static_member_ends_with_its_fatal_error(
    rdk_broker: BrokerProcess, tmp_path: Path, members: list[ChildProcess]
) -> None:
    same = ("--group-instance-id", "same-instance")
    members.append(start_member(rdk_broker, tmp_path, "m0", *same))
    wait_until(lambda: _owned_once_by(tmp_path, {"m0"}), timeout=30, what="m0 to own every partition")
    members.append(start_member(rdk_broker, tmp_path, "m1", *same))  # replaces m0: m0 is fenced (KIP-345)
    assert members[0].wait(30) == 1, members[0].log_tail()
    assert "herdlab: error: member m0: LibrdkafkaFatal: m0: librdkafka fatal error" in members[0].log_tail(5)
    assert "Traceback" not in members[0].log_tail(50)
    *_, error, stopped = events(tmp_path, "m0")
    assert error["kind"] == "heartbeat_error" and "fenced" in error["error"]
    assert stopped["kind"] == "stopped" and stopped["clean"] is False and stopped["fatal"]
    wait_until(lambda: _owned_once_by(tmp_path, {"m1"}), timeout=30, what="m1 to own every partition")


@pytest.mark.long
def test_a_commit_the_broker_never_gets_is_recorded_as_rejected_with_its_code(
    broker_factory: BrokerFactory, tmp_path: Path, members: list[ChildProcess]
) -> None:
    broker = broker_factory(extra_args=BROKER_ARGS, persistent=True)
    create_topic(broker, PARTITIONS)
    # No interval commit within the test: the only commit is the one on close, with the broker down.
    members.append(start_member(broker, tmp_path, "m0", "--auto-commit-interval-ms", "600000"))
    wait_until(lambda: _owned_once_by(tmp_path, {"m0"}), timeout=30, what="m0 to own every partition")
    produced = produce(broker, tmp_path, 40)
    wait_until(lambda: processed(tmp_path, ["m0"]) >= produced, timeout=20, what="every record processed")
    broker.kill()
    members[0].signal(signal.SIGTERM, group=False)
    assert members[0].wait(60) == 0, members[0].log_tail()

    evs = events(tmp_path, "m0")
    assert not [e for e in evs if e["kind"] == "commit"]
    rejected = {e["partition"]: e for e in evs if e["kind"] == "commit_rejected"}
    expected = {p: max(o for q, o in produced if q == p) + 1 for p in {q for q, _ in produced}}
    assert {p: e["offset"] for p, e in rejected.items()} == expected
    assert all(isinstance(e["code"], int) and e["error"] for e in rejected.values())
    broker.restart()
    assert committed(broker, PARTITIONS) == {}  # indeed none of them reached the broker
