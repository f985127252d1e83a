"""The coordinator rebalance bench's figures come from the trigger windows: a hand-made history in the
shape the bench writes (nemesis pairs, members, broker), expected figures worked out by hand (ms)."""

from __future__ import annotations

from typing import Any

from harness.bench.rebalance import Change, RebalanceBench, _rebalance_rows, measure, member_argv

MS = 1_000_000
W = 1000 * MS


def ev(ms: int, kind: str, source: str, role: str = "member", **kw: Any) -> dict[str, Any]:
    return {"ts_ns": ms * MS, "kind": kind, "source": source, "role": role, **kw}


def pair(ms: int, kind: str, action: str, aid: int, **kw: Any) -> dict[str, Any]:
    return ev(
        ms, kind, "nemesis", "nemesis", action=action, action_id=aid, targets=["j0"], trigger=True, **kw
    )


def history(leave_settles: bool) -> list[dict[str, Any]]:
    # P = 2; m0 owns both from 100. j0 is invoked at 1000 and ready at 1500 (start-up 500); the
    # broker reacts at 1600 (j0's JoinGroup); m0 revokes both at 1700, gets p0 back at 1900; j0
    # gets p1 at 1950 and is live at 2000 (t1: owned once, nothing changes for W until 5000).
    # j0 leaves at 5000 (stopped 5080, complete 5100); the broker reacts at 5050; m0 gets p1 at
    # 5300 (t1 of the leave) and the settling ends at 9000, or only at 6000 (< 5300 + W: never).
    return [
        ev(0, "unit_start", "nemesis", "harness", partitions=2),
        ev(0, "ready", "m0"),
        ev(100, "assigned", "m0", partition=0),
        ev(100, "assigned", "m0", partition=1),
        ev(100, "rebalance_end", "m0", outcome="ok"),
        pair(1000, "invoke", "join", 1),
        ev(1500, "ready", "j0"),
        pair(1510, "complete", "join", 1, ready_ns={"j0": 1500 * MS}),
        ev(1550, "rebalance_begin", "j0"),  # the joiner's own events are no reaction
        ev(1600, "rebalance_begin", "broker-0", "broker"),
        ev(1700, "revoked", "m0", partition=0),
        ev(1700, "revoked", "m0", partition=1),
        ev(1900, "assigned", "m0", partition=0),
        ev(1900, "rebalance_end", "m0", outcome="ok"),
        ev(1950, "assigned", "j0", partition=1),
        ev(2000, "rebalance_end", "j0", outcome="ok"),
        pair(5000, "invoke", "leave", 2),
        ev(5050, "rebalance_begin", "broker-0", "broker"),
        ev(5080, "stopped", "j0"),
        pair(5100, "complete", "leave", 2, exit_code=0),
        ev(5300, "assigned", "m0", partition=1),
        ev(5300, "rebalance_end", "m0", outcome="ok"),
        ev(9000 if leave_settles else 6000, "settling_end", "nemesis", "harness"),
    ]


def test_latency_is_t1_minus_t0_with_detection_convergence_and_startup_apart() -> None:
    join, leave = measure(history(leave_settles=True), W)
    assert join == Change("join", "j0", "settled", 500.0, 100.0, 400.0, 500.0)
    assert leave == Change("leave", "j0", "settled", 300.0, 50.0, 250.0, None)


def test_a_change_that_does_not_settle_counts_as_never_in_the_statistics() -> None:
    join, leave = measure(history(leave_settles=False), W)
    assert join.latency_ms == 500.0
    assert leave == Change("leave", "j0", "never", None, None, None, None)
    rows = dict(_rebalance_rows(3, [join, leave]))
    assert rows["N=3, one member joins: rebalance latency median / max (n=1)"] == "500 / 500 ms"
    assert rows["    start-up (t0 - invoke: the joiner booting), median"] == "500 ms"
    assert rows["N=3, one member leaves: rebalance latency median / max (n=1, 1 never)"] == "never / never"
    # over three joins, one never: the median is the middle finite one, the max is never
    slow = Change("join", "j1", "settled", 900.0, 100.0, 800.0, 400.0)
    rows = dict(_rebalance_rows(3, [join, slow, Change("join", "j2", "never", None, None, None, 600.0)]))
    assert rows["N=3, one member joins: rebalance latency median / max (n=3, 1 never)"] == "900 ms / never"
    assert rows["    convergence (t1 - first reaction), median"] == "800 ms"  # 400, 800, never
    assert rows["    start-up (t0 - invoke: the joiner booting), median"] == "500 ms"  # 400, 500, 600


def test_members_run_as_the_harness_runs_them(tmp_path) -> None:
    from harness.cli.members import coordinator as member_command

    b = RebalanceBench(
        members=3, reps=1, workdir=tmp_path, session_timeout_ms=7000, heartbeat_interval_ms=400
    )
    argv = member_argv(b, "127.0.0.1:9092", "g", "t", "j0", tmp_path / "j0.jsonl")
    assert argv[1:5] == ["-m", "harness", "member", "coordinator"]
    params = member_command.make_context("coordinator", argv[5:]).params  # the member's own parser
    assert (params["name"], params["history"], params["group"], params["topic"]) == (
        "j0",
        str(tmp_path / "j0.jsonl"),
        "g",
        "t",
    )
    assert (params["session_timeout_ms"], params["heartbeat_interval_ms"]) == (7000, 400)
