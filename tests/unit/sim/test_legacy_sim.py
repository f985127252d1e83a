"""The simulator's driver and legacy group without any server: one unit of a small scenario in virtual
time, its markers and nemesis pairs, its herd counts worked out by hand, its determinism, the aggregated
zk_request events and the actions it does not model."""

from __future__ import annotations

import itertools
import json
from dataclasses import replace
from pathlib import Path
from typing import Any

import pytest

from harness.run.runner import Unit, planned_cases
from harness.scenario import load_scenario
from harness.sim.driver import NOT_SIMULATED, SimUnitRunner
from harness.sim.model import DelayModel
from harness.sim.validate import read_unit, unit_counts
from tests.support.sim_units import ON_TIME, machine_model

SCENARIO = """
name = "sim-unit"
implementations = ["legacy_zk"]
repetitions = 1
settle_window = "1s"
stable_timeout = "60s"
drain = "10s"

[topic]
name = "herd"
partitions = "members"

[workload]
rate = 40

[group]
id = "herd"
members = 4
assignor = "range"

[group.legacy_zk]
zookeeper_session_timeout_ms = 3000
auto_commit_interval_ms = 500

[[timeline]]
at = "1s"
action = "join"
count = 1

[[timeline]]
at = "4s"
action = "crash"
count = 1
select = "oldest"

[[timeline]]
at = "10s"
action = "pause"
count = 1
duration = "1s"
"""


#: The members in lockstep (no wake-up spread, fetchers stop at once): the herd counts below are worked
#: out for it.
LOCKSTEP = machine_model(watch_wake_spread_s=0.0, fetch_poll_s=0.0)


def simulate(
    tmp_path: Path,
    name: str,
    options: dict[str, Any] | None = None,
    delays: DelayModel = LOCKSTEP,
    scenario: str = SCENARIO,
) -> tuple[dict[str, Any], Path]:
    path = tmp_path / "sim-unit.toml"
    path.write_text(scenario)
    s = load_scenario(str(path))
    case = planned_cases(s)[0]
    unit = Unit(0, case, "legacy_zk", 0, tmp_path / name / "c0-legacy_zk-r0")
    outcome = SimUnitRunner(s, unit, delays, epoch_ns=10**18, options=options).run()
    return outcome, unit.dir


@pytest.fixture(scope="module")
def unit_a(tmp_path_factory: pytest.TempPathFactory) -> tuple[dict[str, Any], Path]:
    """One simulation shared by the tests that only read it."""
    return simulate(tmp_path_factory.mktemp("sim"), "a")


def test_a_unit_writes_the_runners_markers_and_nemesis_pairs(unit_a: tuple[dict[str, Any], Path]) -> None:
    outcome, d = unit_a
    assert not outcome.get("failed") and outcome["settled_at_end"] and outcome["drained"]
    events = read_unit(d)
    marks = [
        (e["kind"], e.get("action"), e.get("action_id"))
        for e in events
        if e["role"] in ("nemesis", "harness") and e["kind"] != "zk_mntr"
    ]
    assert marks == [
        ("unit_start", None, None),
        ("stable", None, None),
        ("invoke", "join", 1),
        ("complete", "join", 1),
        ("invoke", "crash", 2),
        ("complete", "crash", 2),
        ("invoke", "pause", 3),
        ("skipped", "pause", 3),
        ("invoke", "resume", 4),
        ("skipped", "resume", 4),
        ("settling_end", None, None),
        ("drained", None, None),
    ]
    skipped = [e for e in events if e["kind"] == "skipped"]
    assert {e["reason"] for e in skipped} == {NOT_SIMULATED}
    join = next(e for e in events if e["kind"] == "complete" and e["action"] == "join")
    ready = next(e for e in events if e["kind"] == "ready" and e["source"] == "j0")
    assert join["ready_ns"] == {"j0": ready["ts_ns"]}
    # every record produced was processed, and the producer's count says how many were sent
    produced = {(e["partition"], e["offset"]) for e in events if e["kind"] == "produced"}
    processed = {(e["partition"], e["offset"]) for e in events if e["kind"] == "record"}
    assert produced and produced <= processed


def test_the_herd_of_a_join_and_of_a_crash_worked_out_by_hand(unit_a: tuple[dict[str, Any], Path]) -> None:
    _, d = unit_a
    join, crash, *_ = unit_counts(read_unit(d), 1.0)
    # join, 4 members over 4 partitions (range): the joiner sorts last and gets nothing, so every member
    # keeps its partition: 4 notifications, 4 + 1 attempts, 4 releases, 4 claims + 1 registration
    assert (join.outcome, join.watches, join.attempts, join.conflicts) == ("settled", 4, 5, 0)
    assert (join.zk_requests["delete"], join.zk_requests["create"]) == (4, 5)
    # crash of m0 (the oldest): its session expires on the server, the other 4 are notified and
    # rebalance; m0's partition moves, nobody else held it any more: 4 attempts, 4 claims
    assert (crash.outcome, crash.watches, crash.attempts, crash.conflicts) == ("settled", 4, 4, 0)
    # the session expires zookeeper.session.timeout.ms (3 s) after the server last heard from m0:
    # its last ping, at most a third of that (1 s) before the crash
    assert crash.latency_s is not None and 2.0 <= crash.latency_s <= 3.5


def wake_delays_s(d: Path, action: str) -> list[float]:
    """Per member notified of ``action``'s change: its first rebalance_begin minus its first watch (s)."""
    events = sorted(read_unit(d), key=lambda e: e["ts_ns"])
    t0 = next(e["ts_ns"] for e in events if e["kind"] == "invoke" and e["action"] == action)
    watched: dict[str, int] = {}
    began: dict[str, int] = {}
    for e in events:
        if e["ts_ns"] < t0 or e["role"] != "member":
            continue
        m = e["member"]
        if e["kind"] == "watch":
            watched.setdefault(m, e["ts_ns"])
        elif e["kind"] == "rebalance_begin" and m in watched:
            began.setdefault(m, e["ts_ns"])
    return [(began[m] - watched[m]) / 1e9 for m in began]


def test_members_wake_to_a_watch_spread_as_the_model_says(
    tmp_path: Path, unit_a: tuple[dict[str, Any], Path]
) -> None:
    # lockstep: each notified member (the 4 and the joiner, notified of its own registration) begins
    # its attempt once ZkClient's listener has re-armed its watch: two requests, a few ms of client CPU
    _, lockstep = unit_a
    at_once = wake_delays_s(lockstep, "join")
    assert len(at_once) == 5 and max(at_once) < 0.01
    # a spread of 0.2 s: each member's rebalance thread wakes a further uniform(0, 0.2 s) later, not
    # all at the same time
    _, spread = simulate(tmp_path, "spread", delays=machine_model(watch_wake_spread_s=0.2))
    delays = wake_delays_s(spread, "join")
    assert len(delays) == 5 and all(0 <= x <= 0.21 for x in delays), delays
    assert max(delays) - min(delays) > 0.02, delays


def test_a_simulation_is_deterministic(tmp_path: Path, unit_a: tuple[dict[str, Any], Path]) -> None:
    _, a = unit_a
    _, b = simulate(tmp_path, "b")
    assert read_unit(a) == read_unit(b)


def test_aggregated_zk_requests_count_the_same_requests(
    tmp_path: Path, unit_a: tuple[dict[str, Any], Path]
) -> None:
    _, plain = unit_a
    _, grouped = simulate(tmp_path, "grouped", {"aggregate_from": 1})
    requests = [e for e in read_unit(grouped) if e["kind"] == "zk_request"]
    assert requests and all("count" in e for e in requests)
    assert any(e["path"].endswith("/*") for e in requests)
    by_op_plain = [(t.label, dict(t.zk_requests)) for t in unit_counts(read_unit(plain), 1.0)]
    by_op_grouped = [(t.label, dict(t.zk_requests)) for t in unit_counts(read_unit(grouped), 1.0)]
    assert by_op_grouped == by_op_plain
    # fewer events: a member's requests of one op on one path class between two of its other events
    assert len(requests) < sum(1 for e in read_unit(plain) if e["kind"] == "zk_request")


def test_the_sink_is_json_lines(unit_a: tuple[dict[str, Any], Path]) -> None:
    _, d = unit_a
    lines = (d / "events" / "sim.jsonl").read_text().splitlines()
    assert all(json.loads(x)["ts_ns"] >= 10**18 for x in lines)


def test_the_fluid_server_makes_the_same_requests_and_latencies_close_to_the_per_request_model(
    tmp_path: Path,
) -> None:
    # the fluid server changes when requests are served, not which: every trigger's counts are the
    # per-request model's; a burst's reads happen at its end, so latencies differ a little. It serves
    # every member at one pace (processor sharing, no drawn shares), so the per-request model it is held
    # to has equal shares too (zk_client_share_sigma 0): the shares' own effect is not the fluid's error
    equal = replace(LOCKSTEP, zk_client_share_sigma=0.0)
    _, plain = simulate(tmp_path, "plain", delays=equal)
    outcome, fluid = simulate(tmp_path, "fluid", {"fluid_from": 1}, delays=equal)
    assert not outcome.get("failed") and outcome["settled_at_end"]
    per_request = unit_counts(read_unit(plain), 1.0)
    fluid_counts = unit_counts(read_unit(fluid), 1.0)
    assert [(t.label, t.outcome, t.counts()) for t in fluid_counts] == [
        (t.label, t.outcome, t.counts()) for t in per_request
    ]
    settled = [(a, b) for a, b in zip(per_request, fluid_counts, strict=True) if a.outcome == "settled"]
    assert [a.label for a, _ in settled] == ["join j0", "crash m0"]
    for a, b in settled:
        assert a.latency_s is not None and b.latency_s is not None
        assert abs(a.latency_s - b.latency_s) <= 0.1 * a.latency_s, (a.label, a.latency_s, b.latency_s)
    # a fluid run writes its ZooKeeper requests aggregated, every one with its count
    assert all("count" in e for e in read_unit(fluid) if e["kind"] == "zk_request")


WAIT_SCENARIO = """
name = "sim-wait"
implementations = ["legacy_zk"]
repetitions = 1
settle_window = "1s"
stable_timeout = "600s"
drain = "10s"

[topic]
name = "herd"
partitions = "members"

[workload]
rate = 10

[group]
id = "herd"
members = 4
assignor = "range"

[[timeline]]
at = "1s"
action = "join"
count = 1

[[timeline]]
at = "2.5s"
action = "leave"
count = 1
"""


@pytest.mark.parametrize("wait", [0, 1])
def test_wait_settled_holds_a_step_until_the_previous_trigger_settled(tmp_path: Path, wait: int) -> None:
    # a slow server (50 ms a request): the join's rebalance (5 members, ~20 requests each, one at a
    # time) takes seconds, longer than the 1.5 s to the leave
    path = tmp_path / "sim-wait.toml"
    path.write_text(WAIT_SCENARIO)
    s = load_scenario(str(path))
    unit = Unit(0, planned_cases(s)[0], "legacy_zk", 0, tmp_path / f"w{wait}" / "c0-legacy_zk-r0")
    slow = machine_model(**ON_TIME, zk_service_s=0.05, watch_wake_spread_s=0.0)
    outcome = SimUnitRunner(s, unit, slow, epoch_ns=10**18, options={"wait_settled": wait}).run()
    assert not outcome.get("failed")
    events = read_unit(unit.dir)
    invokes = {e["action"]: e["ts_ns"] for e in events if e["kind"] == "invoke"}
    join, leave = unit_counts(events, 1.0)[:2]
    gap_s = (invokes["leave"] - invokes["join"]) / 1e9
    if wait:
        # the leave waited for the join's window to settle: the join settled, the leave came after
        assert join.outcome == "settled" and join.latency_s is not None
        assert gap_s >= join.latency_s > 1.5
    else:
        # at the scenario's times the leave cuts the join's window before it settled
        assert gap_s == pytest.approx(1.5, abs=1e-6)
        assert join.outcome != "settled"


def test_a_rebalance_waits_for_the_fetchers_poll_to_return(tmp_path: Path) -> None:
    """0.8's closeFetchers waits for the fetcher thread; herdlab's acknowledges when its kafka-python poll
    returns: at the next multiple of POLL_MS (100 ms) after the fetcher went idle (0.2 ms after it handed
    over its last record: the empty fetch's round trip), or when its partition's next record comes back
    (the ``produced`` acknowledgement's instant), whichever is first. Each member's ``release`` follows
    that instant by the offset commit's round trip (a few ms), not its ``rebalance_begin``. The stop
    begins after the attempt's reads of the brokers and of its own registration (0.8's ``rebalance``
    reads them before ``closeFetchers``), so the poll's end is the first after the last of those reads."""
    _, d = simulate(
        tmp_path,
        "poll",
        delays=machine_model(**ON_TIME, watch_wake_spread_s=0.0),
        scenario=SCENARIO.replace("rate = 40", "rate = 8"),
    )
    events = sorted(read_unit(d), key=lambda e: e["ts_ns"])
    t0 = next(e["ts_ns"] for e in events if e["kind"] == "invoke" and e["action"] == "join")
    produced = [(e["ts_ns"], e["partition"]) for e in events if e["kind"] == "produced"]
    waits = []
    for m in sorted({e["member"] for e in events if e["kind"] == "rebalance_begin" and e["ts_ns"] > t0}):
        mine = [e for e in events if e.get("member") == m or e.get("source") == m]
        begin = next(e["ts_ns"] for e in mine if e["kind"] == "rebalance_begin" and e["ts_ns"] > t0)
        release = next((e for e in mine if e["kind"] == "release" and e["ts_ns"] > begin), None)
        if release is None:
            continue  # the joiner owned nothing
        # its last record before the release (one fetched after the rebalance began, before the stop,
        # counts: the fetcher went idle after it)
        records = [e for e in mine if e["kind"] == "record" and e["ts_ns"] < release["ts_ns"]]
        assert records, m
        idle_since = records[-1]["ts_ns"] + 200_000
        reads = [
            e["ts_ns"]
            for e in mine
            if e["kind"] == "zk_request"
            and e["op"] in ("exists", "get", "get_children")
            and begin <= e["ts_ns"] < release["ts_ns"]
        ]
        after = max(reads[-1], idle_since)
        boundary = idle_since + ((after - idle_since) // 100_000_000 + 1) * 100_000_000
        partition = release["partition"]
        arrival = min((t for t, p in produced if p == partition and t > after), default=boundary)
        ack = min(boundary, arrival)
        assert ack <= release["ts_ns"] <= ack + 5_000_000, (m, begin, ack, release["ts_ns"])
        waits.append(release["ts_ns"] - begin)
    assert len(waits) == 4
    assert max(waits) > 10_000_000 and max(waits) - min(waits) > 5_000_000, waits


def test_the_initial_members_boot_for_times_of_their_own_in_each_repetition(tmp_path: Path) -> None:
    # a real run starts the initial members at once and each process boots for a time of its own: the
    # simulated ones are ready at times drawn over member_start_spread_s from the unit's random source,
    # so two repetitions start differently (evenly spaced in start order, every repetition was alike)
    path = tmp_path / "sim-unit.toml"
    path.write_text(SCENARIO)
    s = load_scenario(str(path))
    case = planned_cases(s)[0]
    spread = 1.0

    def ready_offsets(repetition: int) -> list[float]:
        d = tmp_path / f"r{repetition}" / f"c0-legacy_zk-r{repetition}"
        unit = Unit(0, case, "legacy_zk", repetition, d)
        SimUnitRunner(s, unit, machine_model(member_start_spread_s=spread), epoch_ns=10**18).run()
        events = read_unit(d)
        start = min(e["ts_ns"] for e in events if e["kind"] == "unit_start")
        initial = [f"m{i}" for i in range(4)]
        return [
            (e["ts_ns"] - start) / 1e9
            for e in sorted(events, key=lambda e: e["source"])
            if e["kind"] == "ready" and e["source"] in initial
        ]

    first, second = ready_offsets(0), ready_offsets(1)
    assert len(first) == len(second) == 4
    assert first != second
    for offsets in (first, second):
        # each within the spread (plus the session's connect: well under a second here)
        assert all(0 <= x < spread + 0.5 for x in offsets), offsets
    gaps = [round(b - a, 3) for a, b in itertools.pairwise(sorted(first))]
    assert gaps != [0.25] * 3  # not evenly spaced in start order
