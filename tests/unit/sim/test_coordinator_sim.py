"""The coordinator's simulated group: the real GroupCoordinator machine with simulated kafka-python members.

Expected values are worked out by hand from kafka-python 3.0.12's request sequence
(harness/sim/coordinator_member.py cites it) and the range assignor.
"""

from __future__ import annotations

import json
from collections import Counter
from itertools import pairwise
from pathlib import Path
from typing import Any

import pytest

from coordinator.core.group.api import GroupState
from harness.scenario.loading import load_scenario
from harness.scenario.model import Scenario
from harness.sim.clock import NS_PER_S, VirtualScheduler
from harness.sim.coordinator import SimCoordinatorGroup, make_group
from harness.sim.group import SimContext
from harness.sim.history import EventSink, SimHistory
from harness.sim.model import DelayModel
from harness.sim.workload import SimProducer
from tests.support.sim_units import (
    ON_TIME,
    api_counts,
    history_text,
    machine_model,
    simulate_unit,
    trigger_counts,
    unit_events,
)

SESSION_MS, HEARTBEAT_MS = 6000, 500


def _scenario(members: int, timeline: list[dict[str, Any]] | None = None) -> Scenario:
    """herd-small at ``members`` coordinator members, short sessions, ``timeline`` instead of its own."""
    sets = [
        f"group.members={members}",
        'implementations=["coordinator"]',
        f"group.coordinator.session_timeout_ms={SESSION_MS}",
        f"group.coordinator.heartbeat_interval_ms={HEARTBEAT_MS}",
        # no periodic metadata refresh inside these short runs: every Metadata is the sequence's own
        'group.coordinator.properties={"metadata.max.age.ms" = 600000}',
    ]
    if timeline is not None:
        steps = ", ".join(
            "{" + ", ".join(f"{k} = {json.dumps(v)}" for k, v in t.items()) + "}" for t in timeline
        )
        sets.append(f"timeline=[{steps}]")
    return load_scenario("herd-small", sets)


class _Unit:
    """One simulated unit: a group on its own scheduler, history to ``path``."""

    def __init__(self, members: int, path: Path, delays: DelayModel | None = None) -> None:
        self.sched = VirtualScheduler()
        self.sink = EventSink(path)
        self.path = path
        self.scenario = _scenario(members)
        delays = delays or machine_model()

        def history(source: str, role: str) -> SimHistory:
            return SimHistory(self.sched, self.sink, source, role, 0)

        self.group: SimCoordinatorGroup = make_group(
            SimContext(self.sched, delays, self.scenario, members, history, delays.rng())
        )
        for i in range(members):
            self.group.start_member(f"m{i}")
        self.producer = SimProducer(
            self.sched, self.group.topic, delays, history("producer", "producer"), self.scenario.workload.rate
        )
        self.producer.start()

    def run_until_stable(self, limit_s: float = 30.0) -> None:
        while not self.stable():
            assert self.sched.now_ns < limit_s * NS_PER_S, "the group never became stable"
            self.sched.run(until_ns=self.sched.now_ns + NS_PER_S // 20)

    def stable(self) -> bool:
        g = self.group.broker.machine.group(self.scenario.group.id)
        if g is None or g.state is not GroupState.STABLE:
            return False
        return all(self.group.member(n).rec.generation == g.generation_id for n in self.group.members())

    def close(self) -> list[dict[str, Any]]:
        self.producer.stop()
        self.group.close()  # every live member stops cleanly, then the broker
        while self.group.members():
            self.sched.run(until_ns=self.sched.now_ns + NS_PER_S // 20)
        self.sched.run(until_ns=self.sched.now_ns + NS_PER_S // 20)
        self.sched.close()
        self.sink.close()
        with open(self.path, encoding="utf-8") as f:
            return sorted((json.loads(line) for line in f if line.strip()), key=lambda e: int(e["ts_ns"]))


def test_a_group_of_three_forms_in_one_generation_with_every_partition_owned_once(tmp_path: Path) -> None:
    unit = _Unit(3, tmp_path / "h.jsonl")
    unit.run_until_stable()
    owners = {n: sorted(unit.group.member(n).assignment) for n in unit.group.members()}
    events = unit.close()
    # range over 3 partitions and 3 members (ids sort as m0 < m1 < m2): one partition each
    assert owners == {"m0": [0], "m1": [1], "m2": [2]}
    ends = [e for e in events if e["kind"] == "rebalance_end" and e["role"] == "broker"]
    # generation 1 with all three; the run's end (every member leaves) empties it as generation 2
    assert [(e["generation"], e["members"]) for e in ends] == [(1, 3), (2, 0)]
    assigned = Counter(e["partition"] for e in events if e["kind"] == "assigned")
    assert assigned == {0: 1, 1: 1, 2: 1}
    started = {e["source"] for e in events if e["role"] == "member" and e["kind"] == "started"}
    stopped = {e["source"] for e in events if e["role"] == "member" and e["kind"] == "stopped"}
    assert started == stopped == {"m0", "m1", "m2"}
    assert [e["kind"] for e in events if e["source"] == "broker-0"][-1] == "stopped"


def test_a_join_costs_kafka_pythons_request_sequence(tmp_path: Path) -> None:
    """A fourth member joins a stable group of three (three partitions), worked out by hand:
    the joiner: Metadata twice (bootstrap, topics()), FindCoordinator, JoinGroup twice (MEMBER_ID_REQUIRED,
    then with its id), SyncGroup; each of the three: JoinGroup and SyncGroup once (the Heartbeat's
    REBALANCE_IN_PROGRESS); the leader one Metadata after assigning. Range over 4 members, 3 partitions
    (j0 < m0 < m1 < m2): j0 p0, m0 p1, m1 p2, m2 nothing: j0, m0 and m1 get a partition they did not have,
    so three OffsetFetch; m2 none."""
    sc = _scenario(3, timeline=[{"at": "2s", "action": "join", "count": 1}])
    simulate_unit(sc, "coordinator", tmp_path / "u")
    (row,) = trigger_counts(tmp_path / "u", sc)
    assert (row.label, row.outcome) == ("join j0", "settled")
    assert api_counts(row) == {
        "FindCoordinator": 1, "JoinGroup": 2 + 3, "Metadata": 2 + 1, "OffsetFetch": 3, "SyncGroup": 1 + 3,
    }  # fmt: skip


def test_a_crashed_member_is_expired_after_the_session_timeout_not_before(tmp_path: Path) -> None:
    unit = _Unit(3, tmp_path / "h.jsonl")
    unit.run_until_stable()
    unit.sched.run(until_ns=unit.sched.now_ns + 2 * NS_PER_S)
    victim = unit.group.member("m1")
    member_id = victim.member_id
    crash_ns = unit.sched.now_ns
    unit.group.crash_member("m1")
    machine = unit.group.broker.machine
    # its last heartbeat was sent at most one heartbeat interval before the crash: the session runs at
    # least session - interval from the crash
    unit.sched.run(until_ns=crash_ns + (SESSION_MS - HEARTBEAT_MS) * 1_000_000 - 1)
    group = machine.group(unit.scenario.group.id)
    assert group is not None and member_id in group.members
    unit.sched.run(until_ns=crash_ns + (SESSION_MS + 100) * 1_000_000)
    assert member_id not in group.members
    events = unit.close()
    (removed,) = [e for e in events if e["kind"] == "member_removed" and e["member"] == member_id]
    assert removed["reason"] == "expired"
    assert (
        crash_ns + (SESSION_MS - HEARTBEAT_MS) * 1_000_000
        <= removed["ts_ns"]
        <= crash_ns + SESSION_MS * 1_000_000
    )
    leaves = [e for e in events if e.get("api") == "LeaveGroup" and e["client"] == "m1"]
    assert not leaves, "a crash sends no LeaveGroup"


def test_two_runs_write_identical_histories(tmp_path: Path) -> None:
    timeline = [
        {"at": "1s", "action": "join", "count": 1},
        {"at": "4s", "action": "leave", "count": 1},
        {"at": "7s", "action": "crash", "count": 1},
    ]
    sc = _scenario(4, timeline=timeline)
    simulate_unit(sc, "coordinator", tmp_path / "a")
    simulate_unit(sc, "coordinator", tmp_path / "b")
    a = history_text(tmp_path / "a")
    assert a == history_text(tmp_path / "b")
    assert '"kind":"member_removed"' in a


def test_a_leave_sends_leavegroup_after_committing_and_revoking(tmp_path: Path) -> None:
    unit = _Unit(2, tmp_path / "h.jsonl")
    unit.run_until_stable()
    unit.sched.run(until_ns=unit.sched.now_ns + NS_PER_S)
    unit.group.stop_member("m0")
    unit.sched.run(until_ns=unit.sched.now_ns + NS_PER_S)
    events = unit.close()
    tail = [
        (e["kind"], e.get("api"))
        for e in events
        if (e["source"] == "m0" and e["kind"] in ("commit", "revoked", "stopped"))
        or (e["kind"] == "group_request" and e["client"] == "m0" and e["api"] == "LeaveGroup")
    ]
    # the last commit of what it processed, the revoke, LeaveGroup, then stopped
    assert tail[-4:] == [
        ("commit", None),
        ("revoked", None),
        ("group_request", "LeaveGroup"),
        ("stopped", None),
    ]


def test_an_unsupported_client_is_a_clear_error(tmp_path: Path) -> None:
    sc = load_scenario("herd-small", ["group.members=2", "group.coordinator.client=aiokafka"])
    sched = VirtualScheduler()
    sink = EventSink(tmp_path / "h.jsonl")
    delays = machine_model()
    group = make_group(
        SimContext(sched, delays, sc, 2, lambda s, r: SimHistory(sched, sink, s, r, 0), delays.rng())
    )
    with pytest.raises(ValueError, match="kafka-python"):
        group.start_member("m0")


def _timed_unit(
    tmp_path: Path,
    rate: float,
    metadata_age_ms: int = 600000,
    delays: DelayModel | None = None,
    timeline: str = '[{at = "2s", action = "join", count = 1}]',
) -> list[dict[str, Any]]:
    """Three members, a join at 2 s (or ``timeline``), the workload at ``rate`` records a second."""
    sc = load_scenario(
        "herd-small",
        [
            "group.members=3",
            'implementations=["coordinator"]',
            f"group.coordinator.session_timeout_ms={SESSION_MS}",
            f"group.coordinator.heartbeat_interval_ms={HEARTBEAT_MS}",
            f'group.coordinator.properties={{"metadata.max.age.ms" = {metadata_age_ms}}}',
            f"workload.rate={rate}",
            f"timeline={timeline}",
        ],
    )
    simulate_unit(sc, "coordinator", tmp_path / "u", delays)
    return unit_events(tmp_path / "u")


def _rejoins(events: list[dict[str, Any]], after_ns: int) -> dict[str, tuple[int, int, int]]:
    """Per member of the group before ``after_ns`` that got a REBALANCE_IN_PROGRESS heartbeat answer in the
    3 s after it: the first such answer's time, its next ``rebalance_begin`` and its last
    ``rebalance_end`` before ``after_ns``."""
    ids = {
        e["member"]: e["source"]
        for e in events
        if e["kind"] == "rebalance_end" and e["role"] == "member" and e["ts_ns"] < after_ns
    }
    errors: dict[str, int] = {}
    for e in events:
        if (
            e["kind"] == "heartbeat_error"
            and after_ns < e["ts_ns"] < after_ns + 3 * NS_PER_S
            and e.get("error") == "REBALANCE_IN_PROGRESS"
            and e["member"] in ids
        ):
            errors.setdefault(e["member"], e["ts_ns"])
    out = {}
    for member_id, err_ns in errors.items():
        mine = [e for e in events if e["source"] == ids[member_id]]
        begin = next(e["ts_ns"] for e in mine if e["kind"] == "rebalance_begin" and e["ts_ns"] > after_ns)
        last_end = max(e["ts_ns"] for e in mine if e["kind"] == "rebalance_end" and e["ts_ns"] < after_ns)
        out[ids[member_id]] = (err_ns, begin, last_end)
    return out


def test_a_rebalance_is_seen_when_the_poll_window_ends_when_the_main_thread_checked_before_the_answer(
    tmp_path: Path,
) -> None:
    """kafka-python's heartbeat answer REBALANCE_IN_PROGRESS only sets a flag. The main thread checks it at
    that heartbeat's deadline (its poll wait is capped there), on time here, so before the answer; then it
    rejoins when its poll(timeout_ms=200) window ends (a record ends one early: none here, the workload is
    one record in 100 s). So each member's rebalance_begin comes after its heartbeat's error, at most
    200 ms later, and at a multiple of 200 ms from its last wake-up, which with no records and no commit
    due is the end of its previous join: its ``rebalance_end``."""
    on_time_check = machine_model(kafka_main_check_late_s=0.0, kafka_main_check_late_per_member_s=0.0)
    events = _timed_unit(tmp_path, rate=0.01, delays=on_time_check)
    t0 = next(e["ts_ns"] for e in events if e["kind"] == "invoke")
    delays = []
    for name, (err_ns, begin, last_end) in _rejoins(events, t0).items():
        assert 0 < begin - err_ns <= 200_000_000, (name, begin - err_ns)
        assert (begin - last_end) % 200_000_000 < 1_000_000, (name, begin - last_end)
        delays.append(begin - err_ns)
    assert len(delays) == 3 and max(delays) > 20_000_000, delays


def test_a_main_thread_that_checks_after_the_heartbeats_answer_rejoins_at_that_check(tmp_path: Path) -> None:
    """The main thread's check at a heartbeat's deadline 20 ms late (every draw exactly its mean), the
    heartbeat sent on time: its answer (under a millisecond: the client's cost, the network and the
    broker's service) comes before the check, so each member rejoins at its heartbeat's deadline plus 20
    ms, 19-20 ms after the broker answered, whatever its poll window."""
    late_check = machine_model(**{**ON_TIME, "kafka_main_check_late_s": 0.02}, kafka_poll_gap_cv=0.0)
    events = _timed_unit(tmp_path, rate=0.01, delays=late_check)
    t0 = next(e["ts_ns"] for e in events if e["kind"] == "invoke")
    rejoins = _rejoins(events, t0)
    assert len(rejoins) == 3
    for name, (err_ns, begin, _) in rejoins.items():
        assert 19_000_000 <= begin - err_ns <= 20_000_000, (name, begin - err_ns)


def test_a_member_with_no_partition_sleeps_retry_backoff_from_its_heartbeats_send(tmp_path: Path) -> None:
    """Three partitions, a fourth member joins at 2 s and gets none; one member leaves at 5.5 s. The idle
    member's fetcher has nothing in flight, so kafka-python sleeps ``min(timeout, time_to_next_poll,
    retry_backoff_ms)`` between its checks. Every draw off: its check at the heartbeat's deadline comes at
    the heartbeat's send, before the answer (the client's cost, the network, the broker's service: under a
    millisecond), and its next sleep of 100 ms starts there. Its poll window (200 ms windows chained from
    its join's ``rebalance_end``: no records come) ends a millisecond after that sleep here (the
    heartbeat's timer starts ``member_apply_s``, 1 ms, before ``rebalance_end``, and this leave's heartbeat
    is an odd number of 500 ms intervals after it). So it rejoins 100 ms after the send: 99-100 ms after the
    broker's answer (the window's end would be just over 100 ms; a sleep chained from the window's start
    would end a millisecond after the answer)."""
    events = _timed_unit(
        tmp_path,
        rate=0.01,
        delays=machine_model(**ON_TIME),
        timeline='[{at = "2s", action = "join", count = 1}, {at = "5.5s", action = "leave", count = 1}]',
    )
    leave = [e["ts_ns"] for e in events if e["kind"] == "invoke"][1]
    last_gen = {}
    for e in events:
        if e["kind"] == "rebalance_end" and e["role"] == "member" and e["ts_ns"] < leave:
            last_gen[e["source"]] = e.get("partitions")
    idle = [n for n, ps in last_gen.items() if not ps]
    assert len(idle) == 1, last_gen
    err_ns, begin, _ = _rejoins(events, leave)[idle[0]]
    assert 99_000_000 <= begin - err_ns < 100_000_000, begin - err_ns


def test_a_metadata_refresh_waits_behind_the_parked_fetch(tmp_path: Path) -> None:
    """With metadata.max.age.ms = 1.2 s and no records (one in 100 s), a member with partitions always has
    a Fetch parked at the broker, answered empty every fetch.max.wait.ms (500 ms) and sent again at once;
    a refresh due behind it is read when it is answered. By hand: a refresh answered at a Fetch's answer
    is due 1.2 s later, 0.2 s into the third Fetch since, and goes at that Fetch's answer, 1.5 s after
    the last refresh (without the wait: 1.2 s and a round trip). (The leader's refresh after it assigned
    is answered off that grid, so a member's first gap may differ.)"""
    events = _timed_unit(tmp_path, rate=0.01, metadata_age_ms=1200)
    t0 = next(e["ts_ns"] for e in events if e["kind"] == "invoke")
    gaps = []
    for m in ("m0", "m1", "m2"):
        md = [
            e["ts_ns"]
            for e in events
            if e.get("api") == "Metadata" and e.get("client") == m and e["ts_ns"] < t0
        ]
        gaps.append(md[-1] - md[-2])  # the last: the one before was answered at a Fetch's answer too
    assert len(gaps) == 3 and all(abs(g - 1_500_000_000) < 1_000_000 for g in gaps), gaps


def test_the_joiners_second_metadata_waits_retry_backoff(tmp_path: Path) -> None:
    """consumer.topics() asks for a metadata update right after the bootstrap one; kafka-python sends it
    no sooner than retry.backoff.ms (100 ms) after the last refresh."""
    events = _timed_unit(tmp_path, rate=0.01)
    md = [e["ts_ns"] for e in events if e.get("api") == "Metadata" and e.get("client") == "j0"]
    assert 100_000_000 <= md[1] - md[0] <= 101_000_000, md[:2]


def _gap_ends_ms(sched: VirtualScheduler, gaps: Any, times_ms: list[int]) -> dict[int, int | None]:
    """Run the loop to each time (ms, ascending) and read there when the main thread polls again (ms), or
    None inside a window."""
    got: dict[int, int | None] = {}
    for t in times_ms:
        sched.run(until_ns=t * 1_000_000)
        end = gaps.gap_end(t * 1_000_000)
        got[t] = None if end is None else end // 1_000_000
    return got


def test_the_main_thread_picks_a_join_up_only_inside_a_poll_window() -> None:
    """A join's poll windows from its start at 0, by hand, 200 ms windows and 12 ms between them (not
    queued on the client cores): windows [0, 200), [212, 412), [424, 624); between them [200, 212) and
    [412, 424). A join completing in one of those is picked up when the next window starts."""
    from harness.sim.cpu import ClientCpu
    from harness.sim.kafka_python30 import PollGaps

    ms = 1_000_000
    sched = VirtualScheduler()
    delays = machine_model()
    gaps = PollGaps(sched, ClientCpu(sched, delays, delays.rng()), 200 * ms, lambda: 0.012, cv=0.0)
    expected = {150: None, 205: 212, 211: 212, 212: None, 300: None, 413: 424, 500: None}
    assert _gap_ends_ms(sched, gaps, list(expected)) == expected
    gaps.stop()  # the join completed: no window ends are booked any more (624 would open [624, 636))
    sched.run(until_ns=630 * ms)
    assert gaps.gap_end(630 * ms) is None
    # without a gap the main thread never misses a completed join
    none = PollGaps(sched, ClientCpu(sched, delays, delays.rng()), 200 * ms, lambda: 0.0, cv=0.0)
    sched.run(until_ns=1000 * ms)
    assert none.gap_end(830 * ms) is None and none.gap_end(1000 * ms) is None


def test_the_gaps_between_polls_are_gamma_draws_of_the_units_random_source() -> None:
    """cv 1: each gap an exponential draw of mean 12 ms (gamma, shape 1) from the unit's random source, in
    the order the windows end: windows [0, 200), [200 + g1, 400 + g1), ...; the gap after the k-th window
    is [its end, its end + g_k). Checked at each gap's middle and just after it."""
    import random

    from harness.sim.cpu import ClientCpu
    from harness.sim.kafka_python30 import PollGaps

    sched = VirtualScheduler()
    delays = machine_model(seed=7)
    gaps = PollGaps(sched, ClientCpu(sched, delays, delays.rng()), 200_000_000, lambda: 0.012, cv=1.0)
    draws = random.Random(7)
    start = 200_000_000
    lengths = []
    for _ in range(5):
        g = round(draws.expovariate(1 / 0.012) * 1e9)
        lengths.append(g)
        sched.run(until_ns=start + g // 2)
        assert gaps.gap_end(start + g // 2) == start + g
        sched.run(until_ns=start + g + 1)
        assert gaps.gap_end(start + g + 1) is None
        start += g + 200_000_000
    gaps.stop()
    assert len(set(lengths)) == 5  # they do differ


def test_the_mean_gap_between_polls_grows_with_the_members_sharing_a_core(tmp_path: Path) -> None:
    """0.48 ms per member (the default): 6 live members on 2 client cores wait 3 x 0.48 = 1.44 ms on
    average; after a crash 5 of them, 2.5 x 0.48 = 1.2 ms."""
    unit = _Unit(6, tmp_path / "h.jsonl")
    unit.run_until_stable()
    m0 = unit.group.member("m0")
    assert m0.threads.poll_gap_s() == pytest.approx(0.00144)
    unit.group.crash_member("m5")
    assert m0.threads.poll_gap_s() == pytest.approx(0.0012)
    unit.close()


def test_a_join_completed_between_two_polls_is_sent_again_in_the_same_generation(tmp_path: Path) -> None:
    """190 ms between the 200 ms polls (0.19 s per member, every member a core of its own). The joiner j0
    starts its join (a poll) just before its first JoinGroup (~102 ms after the invoke): its window ends
    200 ms later, its next poll starts 190 ms after that. The group's SyncGroup answers come at ~412 ms,
    when the other three members' last JoinGroup came (each in a window of its own), but inside j0's
    gap: j0's next poll, 390 ms after its join began, finds the join done and sends JoinGroup and
    SyncGroup again; a follower with unchanged metadata gets the current generation back (2 both
    times), and j0 is assigned once."""
    sc = _scenario(3, timeline=[{"at": "2s", "action": "join", "count": 1}])
    simulate_unit(
        sc,
        "coordinator",
        tmp_path / "u",
        machine_model(**ON_TIME, kafka_poll_gap_per_member_s=0.19, kafka_poll_gap_cv=0.0, client_cores=0),
    )
    events = unit_events(tmp_path / "u")
    t0 = next(e["ts_ns"] for e in events if e["kind"] == "invoke")
    after = [e for e in events if e["ts_ns"] > t0]
    sent: dict[str, list[tuple[str, int, Any]]] = {}
    for e in after:
        if e["kind"] == "group_request" and e.get("api") in ("JoinGroup", "SyncGroup"):
            sent.setdefault(e["client"], []).append((e["api"], e["ts_ns"], e.get("generation")))
    # j0: MEMBER_ID_REQUIRED, JoinGroup with its id, SyncGroup; then both again in generation 2
    assert [(api, gen) for api, _, gen in sent["j0"]] == [
        ("JoinGroup", None), ("JoinGroup", None), ("SyncGroup", 2), ("JoinGroup", None), ("SyncGroup", 2),
    ]  # fmt: skip
    first_join, _, sync, again, _ = (t for _, t, _ in sent["j0"])
    assert 389_000_000 <= again - first_join <= 392_000_000, again - first_join  # 200 ms + 190 ms
    assert first_join + 200_000_000 < sync < again  # answered while j0 was between two polls
    for m in ("m0", "m1", "m2"):  # the others picked their join up: one JoinGroup, one SyncGroup each
        assert [api for api, _, _ in sent[m]] == ["JoinGroup", "SyncGroup"], sent[m]
    # range over 4 members and 3 partitions: j0 p0, m0 p1, m1 p2, m2 none (no assigned event); j0 once,
    # although it synced twice
    assigned = Counter(e["source"] for e in after if e["kind"] == "assigned" and e["role"] == "member")
    assert assigned == {"m0": 1, "m1": 1, "j0": 1}


def _j0_joins_with_a_late_pickup(
    tmp_path: Path, gap_s: float = 0.19, late_s: float = 0.03, late_per_member_s: float = 0.005
) -> list[tuple[str, int]]:
    """The unit of the tests below: three members, j0 joins at 2 s; 200 ms poll windows, ``gap_s`` gaps
    (every member a core of its own, cv 0), the next poll's join run ``late_s`` + ``late_per_member_s`` a
    member per core late (``kafka_rejoin_late_cv`` 0: exactly the mean; by default 4 live members, 1 per
    core: 35 ms). j0's JoinGroups and SyncGroups (api, ts) from the join's invoke until it is first
    assigned (it must be)."""
    sc = _scenario(3, timeline=[{"at": "2s", "action": "join", "count": 1}])
    delays = machine_model(
        **{**ON_TIME, "kafka_rejoin_late_s": late_s, "kafka_rejoin_late_per_member_s": late_per_member_s},
        kafka_poll_gap_per_member_s=gap_s,
        kafka_poll_gap_cv=0.0,
        kafka_rejoin_late_cv=0.0,
        client_cores=0,
    )
    simulate_unit(sc, "coordinator", tmp_path / "u", delays)
    events = unit_events(tmp_path / "u")
    t0 = next(e["ts_ns"] for e in events if e["kind"] == "invoke")
    assigned = next((e["ts_ns"] for e in events if e["kind"] == "assigned" and e["source"] == "j0"), None)
    assert assigned is not None, "j0 was never assigned"
    return [
        (e["api"], e["ts_ns"])
        for e in events
        if t0 < e["ts_ns"] < assigned and e["kind"] == "group_request" and e.get("client") == "j0"
        and e.get("api") in ("JoinGroup", "SyncGroup")
    ]  # fmt: skip


def test_a_join_found_done_is_sent_again_when_the_io_thread_runs_the_next_poll(tmp_path: Path) -> None:
    """As above (200 ms windows, 190 ms gaps, j0's SyncGroup sent and answered in its gap), with the IO
    thread running the next poll's join 35 ms late (kafka-python 3.0.12: the main thread hands
    ``join_group_async`` to the IO thread, which finds the task done and sends a new JoinGroup), so the
    second JoinGroup leaves 200 + 190 + 35 = 425 ms after the first, not 390."""
    sent = _j0_joins_with_a_late_pickup(tmp_path)
    # MEMBER_ID_REQUIRED, the join with its id, its SyncGroup (answered in the gap), the join sent again
    assert [api for api, _ in sent] == ["JoinGroup", "JoinGroup", "SyncGroup", "JoinGroup", "SyncGroup"]
    first, again = sent[0][1], sent[3][1]
    assert first + 200_000_000 < sent[2][1] < first + 390_000_000  # the SyncGroup in j0's gap
    assert 424_000_000 <= again - first <= 427_000_000, again - first


def _fail_j0s_first_sync(monkeypatch: pytest.MonkeyPatch) -> list[int]:
    """Make the group machine answer j0's first SyncGroup REBALANCE_IN_PROGRESS at once (every other
    request as it would); the list it returns gets the machine's time of that answer."""
    from coordinator.core.group import api as g
    from coordinator.core.group.errors import ErrorCode
    from coordinator.core.group.machine import GroupCoordinator

    real_sync = GroupCoordinator.sync_group
    failed: list[int] = []

    def sync_group(self: GroupCoordinator, now: int, reply: Any, req: g.SyncGroupRequest) -> Any:
        if req.member_id.startswith("j0-") and not failed:
            failed.append(now)
            return [g.Respond(reply, g.SyncGroupResponse(ErrorCode.REBALANCE_IN_PROGRESS))]
        return real_sync(self, now, reply, req)

    monkeypatch.setattr(GroupCoordinator, "sync_group", sync_group)
    return failed


def test_a_join_failed_between_two_polls_is_replaced_only_when_the_io_thread_runs_the_next_poll(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """As above, with j0's first SyncGroup, sent in its gap, answered REBALANCE_IN_PROGRESS at once
    (injected at the machine). kafka-python 3.0.12 does not retry a failed task by itself:
    ``join_group_async`` retries only what it awaits inside a window; a task found done by the next poll
    is replaced whatever its result. So j0's next JoinGroup leaves 200 + 190 + 35 = 425 ms after its
    first one, not at the error's answer (inside its gap, before 390 ms); it is assigned after that
    SyncGroup."""
    failed = _fail_j0s_first_sync(monkeypatch)
    sent = _j0_joins_with_a_late_pickup(tmp_path)
    assert len(failed) == 1
    assert [api for api, _ in sent] == ["JoinGroup", "JoinGroup", "SyncGroup", "JoinGroup", "SyncGroup"]
    first, again = sent[0][1], sent[3][1]
    assert first + 200_000_000 < sent[2][1] < first + 390_000_000  # the failing SyncGroup in j0's gap
    assert 424_000_000 <= again - first <= 427_000_000, again - first


def test_a_join_picked_up_late_is_awaited_in_a_window_from_the_pickup(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Through the member's join: 300 ms gaps, the next poll's join run 250 ms late (longer than a
    window). j0's first JoinGroup at f (~102 ms after the invoke) starts the windows [f, f + 200) and the
    gap [f + 200, f + 500); its first SyncGroup, sent in that gap, is answered REBALANCE_IN_PROGRESS
    there; the poll at f + 500 finds it done and the IO thread sends the JoinGroup again at
    f + 500 + 250 = f + 750, its window [f + 750, f + 950) (kafka-python times it on the IO thread). The
    member's own generation is unchanged, so that JoinGroup and its SyncGroup are answered at once,
    inside that window: j0 is assigned after them, five requests in all. (Were the window still timed
    from f, that answer would fall in the gap [f + 700, f + 1000) and j0 would join again at
    f + 1000 + 250, each time.)"""
    failed = _fail_j0s_first_sync(monkeypatch)
    sent = _j0_joins_with_a_late_pickup(tmp_path, gap_s=0.3, late_s=0.25, late_per_member_s=0.0)
    assert len(failed) == 1
    assert [api for api, _ in sent] == ["JoinGroup", "JoinGroup", "SyncGroup", "JoinGroup", "SyncGroup"]
    first, sync, again = sent[0][1], sent[2][1], sent[3][1]
    assert first + 200_000_000 < sync < first + 500_000_000  # the failing SyncGroup in j0's gap
    assert 749_000_000 <= again - first <= 752_000_000, again - first


def test_the_window_after_a_late_pickup_starts_at_the_pickup() -> None:
    """kafka-python's poll window is timed on its IO thread, from when that thread runs the poll's join.
    By hand, 200 ms windows and 12 ms gaps (cv 0): [0, 200), gap [200, 212); a pickup at 230 ms (18 ms
    late) starts the window [230, 430), then the gap [430, 442), not the old chain's [412, 424)."""
    from harness.sim.cpu import ClientCpu
    from harness.sim.kafka_python30 import PollGaps

    ms = 1_000_000
    sched = VirtualScheduler()
    delays = machine_model()
    gaps = PollGaps(sched, ClientCpu(sched, delays, delays.rng()), 200 * ms, lambda: 0.012, cv=0.0)
    sched.run(until_ns=205 * ms)
    assert gaps.gap_end(205 * ms) == 212 * ms
    sched.run(until_ns=230 * ms)
    gaps.restart(230 * ms)
    expected = {231: None, 415: None, 423: None, 429: None, 431: 442, 441: 442, 442: None, 500: None}
    assert _gap_ends_ms(sched, gaps, list(expected)) == expected
    gaps.stop()


def test_a_joining_member_is_ready_within_its_release_poll_whatever_its_boot(tmp_path: Path) -> None:
    """A join's member was started held with the initial members (as UnitRig.prestart_member does): the
    driver releases it and it is ready within ``member_release_poll_s`` of the join's invoke, which the
    pair's complete names; a process boot (``member_boot_*``, here 2 s) does not delay it. With a poll of
    0 it is ready at the invoke; two seeds draw different releases, each inside [0, 10 ms]."""
    sc = _scenario(3, timeline=[{"at": "2s", "action": "join", "count": 1}])

    def release_s(delays: DelayModel, name: str) -> float:
        simulate_unit(sc, "coordinator", tmp_path / name, delays)
        events = unit_events(tmp_path / name)
        (invoke,) = [e for e in events if e["kind"] == "invoke"]
        (ready,) = [e for e in events if e["kind"] == "ready" and e["source"] == "j0"]
        (complete,) = [e for e in events if e["kind"] == "complete"]
        # the pair completes when the driver's poll (the runner's) sees the ready, and names its time
        assert complete["ready_ns"] == {"j0": ready["ts_ns"]} and complete["ts_ns"] >= ready["ts_ns"]
        return (ready["ts_ns"] - invoke["ts_ns"]) / NS_PER_S

    slow_boot = {**ON_TIME, "member_boot_s": 2.0}
    assert release_s(machine_model(**slow_boot, member_boot_cv=0.0), "at-once") == 0.0
    drawn = [
        release_s(
            machine_model(**{**slow_boot, "member_release_poll_s": 0.01}, member_boot_cv=0.0, seed=s),
            f"seed{s}",
        )
        for s in (1, 2)
    ]
    assert drawn[0] != drawn[1] and all(0.0 <= x <= 0.01 for x in drawn), drawn


def test_a_restarted_member_is_ready_after_its_process_booted(tmp_path: Path) -> None:
    """A ``start_member`` step (a rolling restart's second half) starts a process, as the real runner does:
    the driver starts the member after a boot time drawn from the model. With cv 0 the boot is exactly the
    mean: 0.2 s + 0.05 s per live member per client core; when m0 restarts, m1 and m2 are live (m0 stopped
    a second before), on the default 2 cores: 0.2 + 0.05 * 2 / 2 = 0.25 s from the step's invoke to m0's
    ready, which the pair's complete names. With cv 0.4 two seeds draw different boots."""
    sc = _scenario(
        3, timeline=[{"at": "2s", "action": "rolling_restart", "downtime": "1s", "interval": "3s"}]
    )

    def boot_s(delays: DelayModel, name: str) -> float:
        simulate_unit(sc, "coordinator", tmp_path / name, delays)
        events = unit_events(tmp_path / name)
        invoke = next(e for e in events if e["kind"] == "invoke" and e["action"] == "start_member")
        assert invoke["targets"] == ["m0"]
        ready = next(
            e
            for e in events
            if e["kind"] == "ready" and e["source"] == "m0" and e["ts_ns"] >= invoke["ts_ns"]
        )
        complete = next(
            e for e in events if e["kind"] == "complete" and e["action_id"] == invoke["action_id"]
        )
        assert complete["ready_ns"] == {"m0": ready["ts_ns"]} and complete["ts_ns"] >= ready["ts_ns"]
        return (ready["ts_ns"] - invoke["ts_ns"]) / NS_PER_S

    exact = machine_model(
        **{**ON_TIME, "member_boot_s": 0.2, "member_boot_per_member_s": 0.05}, member_boot_cv=0.0
    )
    assert boot_s(exact, "exact") == pytest.approx(0.25, abs=1e-6)
    assert boot_s(machine_model(**ON_TIME), "none") == 0.0
    drawn = [boot_s(machine_model(member_boot_cv=0.4, seed=s), f"seed{s}") for s in (1, 2)]
    assert drawn[0] != drawn[1] and all(x > 0 for x in drawn)


def test_a_leaving_members_leavegroup_follows_its_revoke_by_the_closes_hand_offs(tmp_path: Path) -> None:
    """kafka-python's close revokes, then hands the LeaveGroup to its IO thread: the model's
    ``kafka_close_leave_s`` (cv 0: exactly) between the leaving member's ``revoked`` and its LeaveGroup at
    the broker. By hand: the same unit with 30 ms and with 0 differs by exactly 30 ms there, and the
    revoke itself is not moved."""
    sc = _scenario(3, timeline=[{"at": "2s", "action": "leave", "count": 1}])

    def revoke_and_leave(close_s: float, name: str) -> tuple[int, int]:
        delays = machine_model(**{**ON_TIME, "kafka_close_leave_s": close_s}, kafka_close_leave_cv=0.0)
        simulate_unit(sc, "coordinator", tmp_path / name, delays)
        events = unit_events(tmp_path / name)
        (invoke,) = [e for e in events if e["kind"] == "invoke"]
        (leaver,) = invoke["targets"]
        revoked = next(
            e["ts_ns"]
            for e in events
            if e["kind"] == "revoked" and e["source"] == leaver and e["ts_ns"] >= invoke["ts_ns"]
        )
        # the first LeaveGroup: the leaver's (the others leave when the unit closes, seconds later)
        leave = next(e["ts_ns"] for e in events if e["kind"] == "group_request" and e["api"] == "LeaveGroup")
        return revoked, leave

    revoked0, leave0 = revoke_and_leave(0.0, "at-once")
    revoked30, leave30 = revoke_and_leave(0.030, "30ms")
    assert revoked30 == revoked0
    assert leave0 - revoked0 < 1_000_000  # a request's own cost: under a millisecond
    assert (leave30 - revoked30) - (leave0 - revoked0) == 30_000_000


@pytest.mark.parametrize(("late_s", "interval_s"), [(0.0, 0.5), (0.1, 0.6)])
def test_a_late_heartbeat_delays_every_later_one(tmp_path: Path, late_s: float, interval_s: float) -> None:
    """kafka-python times the next heartbeat from the last one's send: with each sent ``late_s`` late
    (cv 0: exactly) a member heartbeats every 0.5 s + ``late_s``. By hand: 3 members over 12 s of a stable
    group make 3 * 12 / 0.5 = 72 heartbeats on time, 3 * 12 / 0.6 = 60 with 100 ms each, give or take one
    per member at the interval's ends."""
    delays = machine_model(
        **{**ON_TIME, "kafka_heartbeat_late_s": late_s},
        kafka_poll_gap_cv=0.0,
        kafka_poll_gap_per_member_s=0.0,
    )
    unit = _Unit(3, tmp_path / "h.jsonl", delays)
    unit.run_until_stable()
    start = unit.sched.now_ns + 2 * NS_PER_S  # past the snapshot interval the stable moment fell in
    unit.sched.run(until_ns=start + 12 * NS_PER_S)
    events = unit.close()
    snaps = [
        e for e in events if e["kind"] == "broker_request" and start < e["ts_ns"] <= start + 12 * NS_PER_S
    ]
    beats = sum(int((e.get("requests") or {}).get("Heartbeat", 0)) for e in snaps)
    window_s = sum(float(e["interval_s"]) for e in snaps)
    assert window_s == pytest.approx(12.0, abs=1.01)
    assert abs(beats - 3 * window_s / interval_s) <= 3, (beats, window_s)


def test_the_runner_performs_a_step_late_by_the_drawn_time(tmp_path: Path) -> None:
    """A step's invoke comes ``at`` after ``stable`` plus the runner's lateness: with cv 0 exactly 30 ms +
    2 ms per live member per client core, 3 members on 2 cores: 30 + 2 * 3 / 2 = 33 ms; on time, none."""
    sc = _scenario(3, timeline=[{"at": "2s", "action": "join", "count": 1}])

    def late_s(delays: DelayModel, name: str) -> float:
        simulate_unit(sc, "coordinator", tmp_path / name, delays)
        events = unit_events(tmp_path / name)
        (stable,) = [e for e in events if e["kind"] == "stable"]
        (invoke,) = [e for e in events if e["kind"] == "invoke"]
        return (invoke["ts_ns"] - stable["ts_ns"]) / NS_PER_S - 2.0

    late = {**ON_TIME, "runner_step_late_s": 0.03, "runner_step_late_per_member_s": 0.002}
    assert late_s(machine_model(**late, runner_step_late_cv=0.0), "late") == pytest.approx(0.033, abs=1e-6)
    assert late_s(machine_model(**ON_TIME), "on-time") == pytest.approx(0.0, abs=1e-6)


def test_a_rounds_syncgroups_leave_spread_by_the_members_work_on_the_joingroup_answer(tmp_path: Path) -> None:
    """The broker answers a round's JoinGroups at once; each member works on its answer
    (``kafka_join_answer_s``, here 10 ms and nothing per member) on the shared client cores before its
    SyncGroup leaves. A fourth member joins three: generation 2's four SyncGroups on one core reach the
    broker at least 10 ms apart (the core serves one member's 10 ms after another's, 30 ms from first to
    last at least); with a core per member (``client_cores`` 0) all four leave 10 ms after the answers,
    within a millisecond of each other."""
    sc = _scenario(3, timeline=[{"at": "2s", "action": "join", "count": 1}])
    model = {
        **ON_TIME,
        "kafka_join_answer_s": 0.010,
        "kafka_join_answer_per_member_s": 0.0,
        "kafka_assign_per_member_s": 0.0,
        "kafka_assign_per_member_per_core_s": 0.0,
        "kafka_poll_gap_per_member_s": 0.0,
    }

    def syncs(cores: int) -> list[int]:
        unit = tmp_path / f"cores{cores}"
        simulate_unit(sc, "coordinator", unit, machine_model(**model, client_cores=cores))
        events = unit_events(unit)
        return sorted(
            e["ts_ns"]
            for e in events
            if e["kind"] == "group_request" and e.get("api") == "SyncGroup" and e.get("generation") == 2
        )

    one = syncs(1)
    assert len(one) == 4
    gaps = [b - a for a, b in pairwise(one)]
    assert min(gaps) >= 10_000_000, gaps
    assert one[-1] - one[0] >= 30_000_000
    own = syncs(0)
    assert len(own) == 4
    assert own[-1] - own[0] < 1_000_000, own


def test_the_broker_sends_parked_answers_one_after_another_and_serves_the_next_request_after(
    tmp_path: Path,
) -> None:
    """A request whose call answers itself and three parked requests (as the last JoinGroup of a round
    does): with 1 ms + 0.5 ms a member per core for each parked answer (3 answers on 2 cores: 1.75 ms),
    0.05 ms of network and 0.1 ms of service, 0.5 ms of client cost, by hand: the request issued at 0
    is served at 0.5 + 0.05 + 0.1 = 0.65 ms, its own answer arrives at 0.70; the parked ones leave at
    0.65 + 1.75 = 2.40, 4.15 and 5.90 ms and arrive 0.05 ms later; a request issued at 0.80 ms (arriving
    at 1.35, while the loop sends) is served after the last, at 5.90 + 0.1 = 6.00 ms. With none of that
    cost every answer arrives at 0.70 and the second request is served at 1.45."""
    from coordinator.core.group import api as g
    from harness.sim.coordinator_broker import SimBroker
    from harness.sim.workload import SimTopic

    def run(response_s: float, per_member_s: float) -> tuple[dict[str, int], int]:
        sched = VirtualScheduler()
        delays = machine_model(
            network_one_way_s=0.00005, broker_service_s=0.0001, kafka_client_s=0.0005, client_cores=2,
            broker_response_s=response_s, broker_response_per_member_s=per_member_s,
        )  # fmt: skip
        sink = EventSink(tmp_path / f"h{response_s}.jsonl")
        broker = SimBroker(
            sched,
            delays,
            SimHistory(sched, sink, "broker-0", "broker", 0),
            _scenario(3),
            SimTopic(sched, "t", 3),
        )
        arrived: dict[str, int] = {}

        def reply(name: str) -> Any:
            return lambda _response: arrived.setdefault(name, sched.now_ns)

        parked = [reply(n) for n in ("p1", "p2", "p3")]

        def completing(_now_ms: int, own: Any) -> list[g.Effect]:
            return [g.Respond(t, None) for t in (own, *parked)]  # type: ignore[arg-type]

        served: list[int] = []

        def later(_now_ms: int, _own: Any) -> list[g.Effect]:
            served.append(sched.now_ns)
            return []

        broker.send("Heartbeat", "a", completing, reply("own"))
        sched.call_at(800_000, broker.send, "Heartbeat", "b", later, reply("b"))
        sched.run(until_ns=20_000_000)
        sink.close()
        return arrived, served[0]

    arrived, second = run(0.001, 0.0005)
    assert arrived == {"own": 700_000, "p1": 2_450_000, "p2": 4_200_000, "p3": 5_950_000}
    assert second == 6_000_000
    arrived, second = run(0.0, 0.0)
    assert arrived == {"own": 700_000, "p1": 700_000, "p2": 700_000, "p3": 700_000}
    assert second == 1_450_000
