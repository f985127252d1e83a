"""The Go clients as coordinator members (kafka-go, franz-go): their programs built with ``go build`` (a
session fixture), run on herdlab's broker through the member command and the subprocess adapter.

* the group's life (``herdlab member coordinator --client``): two members join and split the partitions,
  a third joins, one leaves (SIGTERM), one crashes (SIGKILL); each time every partition ends owned by
  exactly one live member; every commit is recorded with its outcome and the last accepted one per
  partition is what the broker returns; the options reach the client (``started.effective``);
* the same actions give a Go member's history the same event kinds with the same field names as a
  kafka-python member's;
* a stall (``{"cmd":"stall"}`` on the child's stdin): neither client has a poll timer, so a stalled
  member goes on heart-beating and the group does not change. When another member joins, kafka-go's
  stalled member rejoins at once and keeps its membership (its record handler runs outside the
  generation, as a Reader user's does), its generation's final commit accepted; franz-go's cannot take
  part in the rebalance (its hooks wait for the poll loop to allow the rebalance), so the broker removes
  it after the rebalance timeout, and once unstalled it finds itself fenced (its commit of what it
  processed is rejected with Kafka's error name and code) and joins again;
* an unknown option is a one-line error naming it and the client, in the member command and in the
  program; the program's ``--options`` is the table Python checks against.
"""

from __future__ import annotations

import json
import shutil
import signal
import subprocess
import threading
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from harness.cluster.broker import BrokerProcess
from harness.history.writer import HistoryWriter, read_events
from harness.members import go_dist
from harness.members.child import ChildMember
from harness.members.clients.registry import make_member
from harness.members.recorder import MemberConfig
from harness.run.launch import MEMBER_PY
from harness.run.tail import HistoryTail
from harness.scenario.properties import GO_PROGRAMS
from harness.workload.producer import Producer, ProducerConfig
from tests.support.brokers import BrokerFactory
from tests.support.client_members import FAST_BROKER, ClientGroup, committed_offsets, create_topic
from tests.support.recording import RecordingHistory
from tests.support.waiting import wait_until

pytestmark = pytest.mark.clients

GO = ["kafka-go", "franz-go"]
PARTITIONS = 6
#: Fast sessions and frequent commits: the tests are about what happens, not about the defaults.
OPTIONS = (
    "--session-timeout-ms",
    "2000",
    "--heartbeat-interval-ms",
    "300",
    "--auto-commit-interval-ms",
    "200",
)
#: A short fetch wait: kafka-go ends a generation only once every partition reader's fetch returned
#: (its MaxWait, 10 s by default), and franz-go's fetch wait bounds how soon a poll sees new records.
FETCH_WAIT = {"kafka-go": "MaxWait", "franz-go": "FetchMaxWait"}


@pytest.fixture(scope="session")
def go_members() -> dict[str, Path]:
    """Both Go members, built into herdlab's cache (idempotent: a built one is not built again)."""
    return {client: go_dist.build(client) for client in GO}


def _produce(bootstrap: str, topic: str, tmp: Path, count: int, name: str) -> set[tuple[int, int]]:
    """Produce ``count`` records now; (partition, offset) of each acknowledged one."""
    path = tmp / f"{name}.jsonl"
    with HistoryWriter(path, name) as h:
        Producer(ProducerConfig(bootstrap=bootstrap, topic=topic, rate=1000, max_records=count), h).run()
    return {(e["partition"], e["offset"]) for e in read_events(path) if e["kind"] == "produced"}


def _kinds(events: list[dict[str, Any]], kind: str) -> list[dict[str, Any]]:
    return [e for e in events if e["kind"] == kind]


@pytest.mark.parametrize("client", GO)
def test_join_rebalance_leave_and_crash_keep_one_live_owner_per_partition_and_commits_match_the_broker(
    go_members: dict[str, Path], broker_factory: BrokerFactory, tmp_path: Path, client: str
) -> None:
    broker = broker_factory(extra_args=FAST_BROKER)
    create_topic(broker, "t", PARTITIONS)
    options = (*OPTIONS, "-X", f"{FETCH_WAIT[client]}=200ms", "-X", "SessionTimeout=2500ms")
    g = ClientGroup(
        broker, tmp_path, f"g-{client}", "t", PARTITIONS, client, (*options, "--assignor", "range")
    )
    try:
        g.start("m0")
        g.start("m1")
        assert set(g.wait_balanced("after two joins")) == {"m0", "m1"}

        # the options reached the client: its own name over the typed key, a typed key, an own name
        (started,) = _kinds(g.events("m0"), "started")
        assert started["library"] == client
        eff = started["effective"]
        assert eff["SessionTimeout"] == "2.5s"  # SessionTimeout=2500ms over --session-timeout-ms 2000
        assert eff["HeartbeatInterval"] == "300ms"  # --heartbeat-interval-ms, a typed key
        assert eff[FETCH_WAIT[client]] == "200ms"
        assert eff["GroupBalancers" if client == "kafka-go" else "Balancers"] == "range"

        produced = _produce(broker.bootstrap, "t", tmp_path, 120, "producer")
        assert len(produced) == 120

        def processed() -> set[tuple[int, int]]:
            return {
                (e["partition"], e["offset"]) for n in ("m0", "m1") for e in _kinds(g.events(n), "record")
            }

        wait_until(lambda: processed() >= produced, timeout=30, what="every record processed")

        g.start("m2")
        assert set(g.wait_balanced("after a third join")) == {"m0", "m1", "m2"}
        g.leave("m1")
        assert set(g.wait_balanced("after a clean leave")) == {"m0", "m2"}
        g.kill("m2")
        assert set(g.wait_balanced("after a crash (session expiry)")) == {"m0"}
        g.leave("m0")
    finally:
        g.stop_all()

    for name in ("m0", "m1"):  # the clean leaves
        (stopped,) = _kinds(g.events(name), "stopped")
        assert stopped["clean"] is True and stopped["close_ms"] >= 0
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
    assert committed_offsets(broker, g.group) == ends


class Members:
    """Members of one group made in this process through the registry (so the test can write to a child's
    stdin as the adapter's stall does), each folded into its assignment; the broker's group state."""

    def __init__(self, broker: BrokerProcess, group: str) -> None:
        self.broker, self.group = broker, group
        self.histories: dict[str, RecordingHistory] = {}
        self.members: dict[str, ChildMember | Any] = {}
        self.threads: dict[str, threading.Thread] = {}
        assert broker.history_path is not None
        self._tail = HistoryTail(broker.history_path)
        self.stable: tuple[int, int] | None = None
        self.state = ""

    def start(self, name: str, client: str, **props: str) -> Any:
        config = MemberConfig(
            bootstrap=self.broker.bootstrap,
            group=self.group,
            topic="t",
            name=name,
            client=client,
            properties={
                "session.timeout.ms": "2000",
                "heartbeat.interval.ms": "300",
                "auto.commit.interval.ms": "200",
                "partition.assignment.strategy": "range",
                **props,
            },
        )
        history = RecordingHistory(stamp=True)
        member = make_member(config, history)  # pyright: ignore[reportArgumentType]
        t = threading.Thread(target=member.run, name=name)
        self.histories[name], self.members[name], self.threads[name] = history, member, t
        t.start()
        return member

    def stop(self, name: str) -> None:
        self.members[name].stop(clean=True)
        self.threads[name].join(60)
        assert not self.threads[name].is_alive()

    def stop_all(self) -> None:
        for name, t in self.threads.items():
            if t.is_alive():
                self.members[name].stop(clean=True)
                t.join(60)

    def assignment(self, name: str) -> set[int]:
        owned: set[int] = set()
        for e in self.histories[name].events:
            if e["kind"] == "assigned":
                owned.add(e["partition"])
            elif e["kind"] == "revoked":
                owned.discard(e["partition"])
        return owned

    def update(self) -> None:
        for e in self._tail.poll():
            if e["kind"] == "group_state" and e.get("group") == self.group:
                self.state = e["to_state"]
                if e["to_state"] == "Stable":
                    self.stable = (e["generation"], e["members"])

    def owned_by(self, owners: dict[str, set[int]], members: int) -> bool:
        """Whether the broker's group is Stable with ``members`` members and each of ``owners`` owns
        exactly its partitions."""
        self.update()
        return (
            self.state == "Stable"
            and self.stable is not None
            and self.stable[1] == members
            and all(self.assignment(n) == ps for n, ps in owners.items())
        )

    def split(self, names: tuple[str, ...]) -> bool:
        """Whether ``names`` own every partition between them, each some, and the group is Stable with them."""
        self.update()
        owned = [self.assignment(n) for n in names]
        flat = sorted(p for ps in owned for p in ps)
        ok_broker = self.state == "Stable" and self.stable is not None and self.stable[1] == len(names)
        return ok_broker and flat == list(range(PARTITIONS)) and all(owned)


def _command(member: ChildMember, cmd: str) -> None:
    """Write one command line to the child's stdin, as the adapter's stall and unstall do."""
    stdin = member.consumer.stdin
    stdin.write(json.dumps({"cmd": cmd}).encode() + b"\n")
    stdin.flush()


@pytest.fixture
def group(broker_factory: BrokerFactory) -> Iterator[Members]:
    broker = broker_factory(extra_args=FAST_BROKER)
    create_topic(broker, "t", PARTITIONS)
    m = Members(broker, "g")
    yield m
    m.stop_all()


def _stall_quietly(
    group: Members, m0: Any, produced: set[tuple[int, int]], tmp_path: Path
) -> set[tuple[int, int]]:
    """Stall m0 and produce more: over several session timeouts (2 s) neither client's stalled member
    is removed and the group does not change (neither has a poll timer; the heartbeat goes on), nor
    does it process the new records. The records produced during the stall."""
    generation = group.stable
    _command(m0, "stall")
    later = _produce(group.broker.bootstrap, "t", tmp_path, 30, "during")
    window_s = 3 * 2.0
    t_end = time.monotonic() + window_s
    while time.monotonic() < t_end:
        group.update()
        assert group.state == "Stable" and group.stable == generation, "the stalled member's group changed"
        time.sleep(0.1)  # not a synchronisation: the broker's history is watched over the whole window
    assert len(group.histories["m0"].of("record")) == len(produced)
    return later


def _ends(records: set[tuple[int, int]]) -> dict[int, int]:
    """Each partition's next offset after ``records`` (what a commit of all of them carries)."""
    return {p: max(o for q, o in records if q == p) + 1 for p in {q for q, _ in records}}


def test_a_stalled_kafka_go_member_keeps_its_membership_through_a_rebalance(
    go_members: dict[str, Path], group: Members, tmp_path: Path
) -> None:
    """kafka-go's generation ends as soon as one of its goroutines returns and the next one waits only
    for those goroutines (consumergroup.go: Generation.Start, close, nextGeneration); the member's
    record handler runs outside the generation, as a Reader user's loop does (reader.go: the generation's
    goroutines are commitLoop and the unsubscribe waiter; the partition readers select on ctx). So when
    another member joins, the stalled member's heartbeat gets REBALANCE_IN_PROGRESS and returns, which
    ends the generation; its fetchers stop (they select on the generation's ctx), its commit goroutine
    makes the final commit of what was processed (accepted: the generation is not bumped before the
    rebalance completes) and it rejoins at once, under the same member id, still stalled. The group
    settles with both members, split, and nothing is removed or fenced; once unstalled the member
    processes what its new partitions hold."""
    client = "kafka-go"
    rebalance_timeout_ms = 3000
    fetch = {FETCH_WAIT[client]: "200ms"}
    # m0 commits only at its generation's end (a long interval): the final commit is what is looked at
    m0 = group.start(
        "m0",
        client,
        **fetch,
        **{"max.poll.interval.ms": str(rebalance_timeout_ms), "auto.commit.interval.ms": "600000"},
    )
    wait_until(lambda: group.owned_by({"m0": set(range(PARTITIONS))}, 1), timeout=30, what="m0 alone")
    produced = _produce(group.broker.bootstrap, "t", tmp_path, 30, "before")
    h0 = group.histories["m0"]
    wait_until(lambda: len(h0.of("record")) >= len(produced), timeout=30, what="m0 processed the records")
    assert not h0.of("commit")

    later = _stall_quietly(group, m0, produced, tmp_path)

    group.start("m1", client, **fetch, **{"max.poll.interval.ms": str(rebalance_timeout_ms)})
    wait_until(lambda: group.split(("m0", "m1")), timeout=30, what="m0 (stalled) and m1 splitting the group")
    assert len(h0.of("record")) == len(produced)  # still stalled
    # the first generation's final commit: every record processed before the stall, accepted
    assert {e["partition"]: e["offset"] for e in h0.of("commit")} == _ends(produced)
    assert not h0.of("commit_rejected")
    assert sorted(e["partition"] for e in h0.of("revoked")) == list(range(PARTITIONS))
    assert all(e["lost"] is False for e in h0.of("revoked"))
    # one member throughout: the same member id in both generations, the second one later
    joins = h0.of("rebalance_end")
    assert len(joins) == 2
    assert joins[0]["member"] == joins[1]["member"] != ""
    assert joins[1]["generation"] > joins[0]["generation"]

    _command(m0, "unstall")
    h1 = group.histories["m1"]
    wait_until(
        lambda: {(e["partition"], e["offset"]) for h in (h0, h1) for e in h.of("record")} >= later,
        timeout=30,
        what="the records produced during the stall processed",
    )
    # each by the member that owns its partition now, m0 included
    mine = group.assignment("m0")
    assert {(e["partition"], e["offset"]) for e in h0.of("record")} - produced == {
        x for x in later if x[0] in mine
    }
    assert not h0.of("commit_rejected")
    group.stop("m1")
    group.stop("m0")


def test_a_stalled_franz_go_member_heartbeats_on_until_a_rebalance_then_is_removed_and_rejoins_when_unstalled(
    go_members: dict[str, Path], group: Members, tmp_path: Path
) -> None:
    """franz-go with BlockRebalanceOnPoll: the stalled poll loop holds the rebalance gate, so the
    member's revoke waits for it while its heartbeat goes on; the broker removes it at the rebalance
    timeout (the largest of the members': both have 3 s) and the newcomer gets every partition. Once
    unstalled it finds itself fenced (its commit of what it processed is rejected with Kafka's
    UNKNOWN_MEMBER_ID) and joins again."""
    client = "franz-go"
    rebalance_timeout_ms = 3000
    fetch = {FETCH_WAIT[client]: "200ms"}
    # m0 commits only when its partitions are revoked (a long interval): what it processed before the
    # stall is still to commit when it is fenced
    m0 = group.start(
        "m0",
        client,
        **fetch,
        **{"max.poll.interval.ms": str(rebalance_timeout_ms), "auto.commit.interval.ms": "600000"},
    )
    wait_until(lambda: group.owned_by({"m0": set(range(PARTITIONS))}, 1), timeout=30, what="m0 alone")
    produced = _produce(group.broker.bootstrap, "t", tmp_path, 30, "before")
    h0 = group.histories["m0"]
    wait_until(lambda: len(h0.of("record")) >= len(produced), timeout=30, what="m0 processed the records")

    later = _stall_quietly(group, m0, produced, tmp_path)

    t_join = time.monotonic()
    group.start("m1", client, **fetch, **{"max.poll.interval.ms": str(rebalance_timeout_ms)})
    wait_until(
        lambda: group.owned_by({"m1": set(range(PARTITIONS))}, 1),
        timeout=rebalance_timeout_ms / 1000 + 20,
        what="m1 alone after the stalled m0 was removed",
    )
    assert time.monotonic() - t_join >= rebalance_timeout_ms / 1000
    assert len(h0.of("record")) == len(produced)  # still stalled

    _command(m0, "unstall")
    wait_until(lambda: group.split(("m0", "m1")), timeout=40, what="m0 back in the group with m1")
    rejected = h0.of("commit_rejected")
    assert rejected, "the fenced member's commit was not rejected"
    # the broker no longer knows the member: Kafka's UNKNOWN_MEMBER_ID, from the client's own result
    assert {(e["error"], e["code"]) for e in rejected} == {("UNKNOWN_MEMBER_ID", 25)}, rejected
    # every record produced during the stall is processed, by m1 or by m0 once back
    h1 = group.histories["m1"]
    wait_until(
        lambda: {(e["partition"], e["offset"]) for h in (h0, h1) for e in h.of("record")} >= later,
        timeout=30,
        what="the records produced during the stall processed",
    )
    group.stop("m1")
    group.stop("m0")


def _shape(history: RecordingHistory) -> dict[str, set[str]]:
    """Each event kind with the set of its field names (the timestamps of the test's history aside)."""
    out: dict[str, set[str]] = {}
    for e in history.events:
        out.setdefault(e["kind"], set()).update(k for k in e if k != "t")
    return out


@pytest.mark.parametrize("client", GO)
def test_a_go_members_history_has_the_kinds_and_fields_of_a_kafka_python_members_for_the_same_actions(
    go_members: dict[str, Path], broker_factory: BrokerFactory, tmp_path: Path, client: str
) -> None:
    broker = broker_factory(extra_args=FAST_BROKER)
    create_topic(broker, "t", PARTITIONS)
    shapes: dict[str, dict[str, set[str]]] = {}
    for c in ("kafka-python", client):
        group = Members(broker, f"g-{c}")
        extra = {FETCH_WAIT[client]: "200ms"} if c == client else {}
        try:
            # the same actions: join alone, process and commit, a second member joins, both leave
            group.start("m0", c, **extra)
            wait_until(lambda g=group: g.owned_by({"m0": set(range(PARTITIONS))}, 1), timeout=30, what="m0")
            produced = _produce(broker.bootstrap, "t", tmp_path, 12, f"p-{c}")
            h0 = group.histories["m0"]
            wait_until(
                lambda h=h0, want=produced: (
                    {(e["partition"], e["offset"]) for e in h.of("record")} >= want and h.of("commit")
                ),
                timeout=30,
                what="processed and committed",
            )
            group.start("m1", c, **extra)
            wait_until(lambda g=group: g.split(("m0", "m1")), timeout=30, what="m0 and m1")
            group.stop("m1")
            group.stop("m0")
        finally:
            group.stop_all()
        shapes[c] = _shape(group.histories["m0"])
    acted = {
        "ready",
        "started",
        "assigned",
        "rebalance_end",
        "record",
        "commit",
        "rebalance_begin",
        "revoked",
    }
    # a rejected commit depends on timing (an interval commit in flight when the group rebalances), so it
    # may appear in one client's run only; where it appears it has the accepted commit's fields and the error
    for shape in shapes.values():
        if "commit_rejected" in shape:
            assert shape.pop("commit_rejected") == shape["commit"] | {"error", "code"}
    assert acted | {"stopped"} <= set(shapes["kafka-python"])
    assert set(shapes[client]) == set(shapes["kafka-python"])
    for kind, fields in shapes["kafka-python"].items():
        assert shapes[client][kind] == fields, kind


@pytest.mark.parametrize("client", GO)
def test_an_unknown_option_is_a_one_line_error_naming_it_and_the_client(
    go_members: dict[str, Path], tmp_path: Path, client: str
) -> None:
    # the member command as the runs start it (the full CLI adds a usage line to every -X error)
    cli = [*MEMBER_PY, "coordinator", "--client", client, "--bootstrap", "127.0.0.1:1"]
    cli += ["--group", "g", "--topic", "t", "-X", "NoSuchOption=1"]
    done = subprocess.run(cli, capture_output=True, text=True, timeout=60, check=False)
    assert done.returncode == 2
    (line,) = done.stderr.strip().splitlines()
    assert f"unknown {client} option 'NoSuchOption'" in line

    program = [str(go_members[client] / go_dist.PROGRAM), "--bootstrap", "127.0.0.1:1", "--group", "g"]
    program += ["--topic", "t", "-X", "NoSuchOption=1"]
    done = subprocess.run(program, capture_output=True, text=True, timeout=60, check=False)
    assert (done.returncode, done.stdout) == (2, "")
    assert done.stderr.strip() == f'{client} member: error: unknown {client} option "NoSuchOption"'


@pytest.mark.parametrize("client", GO)
def test_the_programs_option_table_is_the_one_python_checks_against(
    go_members: dict[str, Path], client: str
) -> None:
    built = json.loads((go_members[client] / "options.json").read_text())
    source = json.loads((go_dist.SOURCES / GO_PROGRAMS[client] / "options.json").read_text())
    assert built == source


@pytest.mark.parametrize("program", ["common", *(GO_PROGRAMS[c] for c in GO)])
def test_the_go_programs_pure_parts_pass_their_own_go_tests(
    go_members: dict[str, Path], program: str
) -> None:
    """The Go programs' ``_test.go`` files (error names and codes, the cooperative decision, the hold),
    run with ``go test`` in the environment the build uses (the modules are in Go's cache once built)."""
    go = shutil.which("go")
    assert go is not None
    done = subprocess.run(
        [go, "test", "-count=1", "."],
        cwd=go_dist.SOURCES / program,
        env=go_dist.go_env(),
        capture_output=True,
        text=True,
        timeout=600,
        check=False,
    )
    assert done.returncode == 0, done.stdout + done.stderr


@pytest.mark.parametrize("client", GO)
def test_stdin_at_end_of_file_ends_the_program_at_once_and_an_unknown_command_is_ignored(
    go_members: dict[str, Path], broker_factory: BrokerFactory, client: str
) -> None:
    broker = broker_factory(extra_args=FAST_BROKER)
    create_topic(broker, "t", PARTITIONS)
    argv = [str(go_members[client] / go_dist.PROGRAM), "--bootstrap", broker.bootstrap, "--group", "g"]
    proc = subprocess.Popen(
        [*argv, "--topic", "t", "--name", "m0"],
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
    )
    assert proc.stdin is not None and proc.stdout is not None and proc.stderr is not None
    try:
        kinds = []
        while "assigned" not in kinds:
            kinds.append(json.loads(proc.stdout.readline())["kind"])
        proc.stdin.write(b'{"cmd":"bogus"}\n')
        proc.stdin.flush()
        proc.stdin.close()
        assert proc.wait(10) == 0
        assert proc.stdout.read() == b""  # no commit, no revoke, no stopped
        assert b"ignoring an unknown command" in proc.stderr.read()
    finally:
        if proc.poll() is None:
            proc.send_signal(signal.SIGKILL)
            proc.wait()


@pytest.mark.parametrize("client", GO)
def test_a_program_stopped_while_held_exits_0_having_printed_nothing(
    go_members: dict[str, Path], tmp_path: Path, client: str
) -> None:
    argv = [str(go_members[client] / go_dist.PROGRAM), "--bootstrap", "127.0.0.1:1", "--group", "g"]
    argv += ["--topic", "t", "--name", "m0", "--hold-until", str(tmp_path / "release")]
    proc = subprocess.Popen(argv, stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=subprocess.PIPE)
    assert proc.stdout is not None and proc.stderr is not None
    try:
        # the hold says so once the program's signal handler is installed
        assert b"held until" in proc.stderr.readline()
        proc.send_signal(signal.SIGTERM)
        assert proc.wait(10) == 0
        assert proc.stdout.read() == b""  # no ready, no stopped
        assert not (tmp_path / "release").exists()
    finally:
        if proc.poll() is None:
            proc.send_signal(signal.SIGKILL)
            proc.wait()


@pytest.fixture
def franz_group(go_members: dict[str, Path], broker_factory: BrokerFactory, tmp_path: Path) -> Iterator[Any]:
    groups: list[ClientGroup] = []

    def make(assignor: str, *extra: str) -> ClientGroup:
        broker = broker_factory(extra_args=FAST_BROKER)
        create_topic(broker, "t", PARTITIONS)
        options = (*OPTIONS, "-X", "FetchMaxWait=200ms", "--assignor", assignor, *extra)
        g = ClientGroup(broker, tmp_path, "g-franz", "t", PARTITIONS, "franz-go", options)
        groups.append(g)
        return g

    yield make
    for g in groups:
        g.stop_all()


def test_franz_go_cooperative_sticky_revokes_only_the_partitions_that_move_on_a_join(
    franz_group: Any, tmp_path: Path
) -> None:
    g: ClientGroup = franz_group("cooperative-sticky")
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
        assert all(not e["lost"] for e in _kinds(events, "revoked"))


def test_a_franz_go_static_member_restart_within_the_session_timeout_causes_no_rebalance(
    franz_group: Any,
) -> None:
    g: ClientGroup = franz_group("range", "--session-timeout-ms", "6000")
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
    (started, _) = _kinds(g.events("s1"), "started")
    assert started["static"] is True
