"""The one definition of live, owned once, settled and trigger windows (harness.kernel): hand-made
histories, expected values worked out by hand in each test (times in ms from an origin)."""

from __future__ import annotations

from typing import Any

from harness.kernel.ownership import GroupView
from harness.kernel.windows import evaluate

MS = 1_000_000
W = 1000 * MS  # settle window: 1 s


class H:
    """A unit's events in the contract's shape (role, invoke/complete pairs)."""

    def __init__(self, partitions: int) -> None:
        self.ev: list[dict[str, Any]] = []
        self.aid = 0
        self.at(0, "unit_start", "nemesis", role="harness", partitions=partitions)

    def at(self, ms: int, kind: str, source: str, role: str = "member", **kw: Any) -> H:
        self.ev.append({"ts_ns": ms * MS, "kind": kind, "source": source, "role": role, **kw})
        return self

    def joined(self, ms: int, m: str, *parts: int) -> H:
        for p in parts:
            self.at(ms, "assigned", m, partition=p)
        return self.at(ms, "rebalance_end", m, outcome="ok")

    def action(self, ms: int, action: str, targets: list[str], done: int | None = None, **kw: Any) -> H:
        self.aid += 1
        pair = {
            "action": action,
            "action_id": self.aid,
            "targets": targets,
            "trigger": kw.pop("trigger", True),
        }
        self.at(ms, "invoke", "nemesis", role="nemesis", **pair, **kw)
        if "skipped" in kw:
            return self.at(ms, "skipped", "nemesis", role="nemesis", reason=kw["skipped"], **pair)
        return self.at(ms if done is None else done, "complete", "nemesis", role="nemesis", **pair, **kw)

    def end(self, ms: int) -> H:
        return self.at(ms, "settling_end", "nemesis", role="harness")


def test_a_member_is_live_from_its_first_completed_rebalance_until_paused_and_again_after_resume() -> None:
    v = GroupView()
    h = H(1).at(0, "ready", "a").at(10, "assigned", "a", partition=0)
    v.apply_all(h.ev)
    assert v.live == set() and not v.owned_once()  # claimed, but no completed rebalance yet
    v.apply({"ts_ns": 20 * MS, "kind": "rebalance_end", "source": "a", "role": "member", "outcome": "ok"})
    assert v.live == {"a"} and v.owned_once() and v.last_change_ns == 20 * MS
    v.apply({"ts_ns": 30 * MS, "kind": "complete", "role": "nemesis", "action": "pause", "targets": ["a"]})
    assert v.live == set() and not v.owned_once()
    v.apply({"ts_ns": 40 * MS, "kind": "complete", "role": "nemesis", "action": "resume", "targets": ["a"]})
    assert v.live == {"a"} and v.owned_once()
    # a failed attempt is not a completed rebalance; the producer is not a member
    v.apply(
        {"ts_ns": 50 * MS, "kind": "rebalance_end", "source": "b", "role": "member", "outcome": "gave_up"}
    )
    v.apply({"ts_ns": 50 * MS, "kind": "started", "source": "producer", "role": "producer"})
    assert v.live == {"a"}
    assert v.settled(1040 * MS, 1.0) and not v.settled(1039 * MS, 1.0)


def test_a_new_process_of_a_member_starts_with_no_claims_and_not_live() -> None:
    v = GroupView()
    v.apply_all(H(1).joined(10, "a", 0).at(100, "stopped", "a").at(200, "ready", "a").ev)
    assert v.live == set() and v.claims.get("a") is None


def test_join_t0_is_the_joiner_ready_and_latency_runs_to_the_handover() -> None:
    # a owns p0, p1. j is started at 2000 and ready at 3500; the broker reacts at 3600 (j's
    # JoinGroup); a revokes both at 3700; a gets p0 and j gets p1 at 3900; settling ends at 6000.
    h = H(2).at(0, "ready", "a").joined(100, "a", 0, 1).at(1000, "stable", "nemesis", role="harness")
    h.action(2000, "join", ["j"], done=3500).at(3500, "ready", "j")
    h.at(3600, "group_state", "broker-0", role="broker")
    h.at(3700, "revoked", "a", partition=0).at(3700, "revoked", "a", partition=1)
    h.joined(3900, "a", 0).joined(3900, "j", 1).end(6000)
    (t,) = evaluate(h.ev, W).triggers
    assert (t.outcome, t.t0_ns, t.startup_ns) == ("settled", 3500 * MS, 1500 * MS)
    assert (t.react_ns, t.t1_ns, t.end_ns) == (3600 * MS, 3900 * MS, 6000 * MS)


def test_a_crash_of_a_member_that_owned_nothing_settles_only_after_the_reaction() -> None:
    # a owns p0; c owns nothing. c is killed at 4000 (complete 4050): the group is owned once all
    # along, but nobody reacted until a's watch at 10000; a revokes (10100) and claims again (10300).
    # Before the fix this "settled" at t0 with latency 0.
    h = H(1).joined(100, "a", 0).joined(100, "c")
    h.action(4000, "crash", ["c"], done=4050)
    h.at(10000, "watch", "a").at(10000, "rebalance_begin", "a")
    h.at(10100, "revoked", "a", partition=0).at(10300, "assigned", "a", partition=0).end(12000)
    (t,) = evaluate(h.ev, W).triggers
    assert (t.outcome, t.react_ns, t.t1_ns) == ("settled", 10000 * MS, 10300 * MS)


def test_skipped_and_no_effect_are_outcomes_not_latencies() -> None:
    # expire on the coordinator is skipped; a pause whose session outlives the window draws no
    # reaction before the settling ends: no_effect, not "settled at t0".
    h = H(1).joined(100, "a", 0).joined(100, "b")
    h.action(2000, "expire", ["b"], skipped="ZooKeeper sessions exist only on the legacy side")
    h.action(4000, "pause", ["a"], done=4010)
    h.action(5000, "resume", ["a"], trigger=False).end(7000)
    skipped, paused = evaluate(h.ev, W).triggers
    assert (skipped.outcome, skipped.reason, skipped.end_ns) == (
        "skipped",
        "ZooKeeper sessions exist only on the legacy side",
        4000 * MS,
    )
    assert (paused.outcome, paused.react_ns, paused.t1_ns) == ("no_effect", None, None)


def test_a_trigger_that_cannot_settle_before_the_next_one_is_never() -> None:
    # The reaction comes at 2500, ownership changes at 2600 and 3200; the next trigger at 3900
    # leaves less than the 1 s window after the last change: never.
    h = H(1).joined(100, "a", 0).joined(100, "b")
    h.action(2000, "leave", ["a"], done=2400).at(2300, "stopped", "a")
    h.at(2500, "group_state", "broker-0", role="broker").at(2600, "assigned", "b", partition=0)
    h.at(3200, "revoked", "b", partition=0).at(3200, "assigned", "b", partition=0)
    h.action(3900, "add_partitions", [], partitions=1).end(9000)
    first, second = evaluate(h.ev, W).triggers
    assert (first.outcome, first.end_ns) == ("never", 3900 * MS)
    assert second.outcome == "no_effect"


def test_the_window_ends_at_settling_end_so_teardown_changes_belong_to_no_trigger() -> None:
    # The crash's reaction comes only at 9500, after the settling phase ended at 9000.
    h = H(1).joined(100, "a", 0).joined(100, "b")
    h.action(2000, "crash", ["a"], done=2010).end(9000)
    h.at(9500, "group_state", "broker-0", role="broker").at(9600, "assigned", "b", partition=0)
    (t,) = evaluate(h.ev, W).triggers
    assert (t.outcome, t.end_ns) == ("no_effect", 9000 * MS)


def test_a_rolling_restart_is_measured_from_the_stop_until_the_restarted_member_is_live() -> None:
    # Static membership: a stops at 2000 (stopped 2100, complete 2150) and nobody else reacts; its
    # restart (not a trigger) is ready at 5000 and gets p0 back at 5300 without a group rebalance.
    h = H(2).joined(100, "a", 0).joined(100, "b", 1)
    h.action(2000, "stop_member", ["a"], done=2150).at(2100, "stopped", "a")
    h.action(4000, "start_member", ["a"], done=5000, trigger=False).at(5000, "ready", "a")
    h.joined(5300, "a", 0).end(9000)
    (t,) = evaluate(h.ev, W).triggers
    assert (t.outcome, t.t0_ns, t.react_ns, t.t1_ns) == ("settled", 2000 * MS, 5300 * MS, 5300 * MS)


def test_processing_intervals_close_at_the_effect_of_a_pause_not_at_its_invoke() -> None:
    h = H(1).joined(100, "a", 0)
    h.action(2000, "pause", ["a"], done=2100).at(2500, "revoked", "a", partition=0).end(3000)
    f = evaluate(h.ev, W)
    assert ("a", -1, 2100 * MS) in f.closes and ("a", 0, 2500 * MS) in f.closes
    assert f.owned == [("a", 0, 100 * MS, 2100 * MS, 100 * MS)]
    assert f.claims == [("a", 0, 100 * MS, 2500 * MS)]
    assert f.away == [("a", 2100 * MS, None)]


def test_a_stall_past_the_poll_timer_settles_in_its_own_window_while_the_member_is_still_stalled() -> None:
    # a owns p0, b owns p1. a is stalled at 2000 (complete 2000: the signal was sent). a's poll timer
    # makes it leave; the broker reacts at 5300 (PreparingRebalance); b revokes p1 at 5400 and gets
    # p0 and p1 at 5500. a is unstalled at 8000: live again with its stale claim of p0 (p0 doubled)
    # until its first poll reports p0 lost at 8100; it rejoins: b revokes both at 8400, a gets p0 and
    # b p1 at 8600. Settling ends at 12000.
    h = H(2).joined(100, "a", 0).joined(100, "b", 1).at(1000, "stable", "nemesis", role="harness")
    h.action(2000, "stall", ["a"], value=6.0)
    h.at(5300, "group_state", "broker-0", role="broker")
    h.at(5400, "rebalance_begin", "b").at(5400, "revoked", "b", partition=1)
    h.joined(5500, "b", 0, 1)
    h.action(8000, "unstall", ["a"], trigger=False)
    h.at(8100, "revoked", "a", partition=0, lost=True).at(8300, "rebalance_begin", "a")
    h.at(8400, "rebalance_begin", "b").at(8400, "revoked", "b", partition=0).at(
        8400, "revoked", "b", partition=1
    )
    h.joined(8600, "a", 0).joined(8600, "b", 1).end(12000)
    # while stalled, a does not count: after b's handover the group is owned once by b alone
    v = GroupView()
    v.apply_all(e for e in h.ev if e["ts_ns"] <= 5500 * MS)
    assert v.live == {"b"} and v.owned_once() and v.owners() == {0: ["b"], 1: ["b"]}
    v.apply_all(e for e in h.ev if 5500 * MS < e["ts_ns"] <= 8000 * MS)
    assert v.live == {"a", "b"} and not v.owned_once() and v.owners()[0] == ["a", "b"]
    f = evaluate(h.ev, W)
    (t,) = f.triggers  # the unstall ends the fault: not a trigger, no window of its own
    # the reaction is the broker's at 5300 (detection 3300 ms); the group is not owned once at 5300
    # (b still has only p1) nor at 5400 (b has nothing); at 5500 it is, and the next change point
    # (the unstall at 8000) is 2500 ms > W later: t1 = 5500, latency 3500 ms, inside the stall
    assert (t.action, t.targets, t.outcome, t.t0_ns, t.end_ns) == (
        "stall",
        ["a"],
        "settled",
        2000 * MS,
        12000 * MS,
    )
    assert (t.react_ns, t.t1_ns, t.partitions_at_t1) == (5300 * MS, 5500 * MS, 2)
    assert ("a", -1, 2000 * MS) in f.closes  # a's processing intervals close at the stall's effect
    assert ("a", 2000 * MS, 8000 * MS) in f.away


def test_a_stall_shorter_than_the_poll_timer_draws_no_reaction() -> None:
    # a is stalled at 2000 for 2 s, less than its poll timer: nobody else reacts before settling ends
    h = H(2).joined(100, "a", 0).joined(100, "b", 1)
    h.action(2000, "stall", ["a"], value=2.0)
    h.action(4000, "unstall", ["a"], trigger=False).end(7000)
    (t,) = evaluate(h.ev, W).triggers
    assert (t.action, t.outcome, t.react_ns, t.t1_ns) == ("stall", "no_effect", None, None)


def test_a_member_between_rebalance_begin_and_end_is_rebalancing() -> None:
    # the runner's first stable wait insists no initial member is still joining (a lost rejoin)
    v = GroupView()
    v.apply_all(H(1).joined(10, "a", 0).at(20, "rebalance_begin", "a").ev)
    assert v.rebalancing == {"a"} and v.owned_once()  # owned once, but a is still rebalancing
    v.apply({"ts_ns": 30 * MS, "kind": "rebalance_end", "source": "a", "role": "member", "outcome": "ok"})
    assert v.rebalancing == set()


def test_the_kept_live_set_and_owned_once_follow_the_definition_on_a_random_history() -> None:
    """GroupView keeps ``live`` and the claim counts incrementally (linear fold); after every event they
    must equal the definition evaluated from scratch: live = rebalanced - suspended, owned once = each of
    0..P-1 claimed by exactly one live member and nothing else claimed by a live member."""
    import random

    rng = random.Random(16)
    members = [f"m{i}" for i in range(5)]
    v = GroupView()
    for i in range(3000):
        m = rng.choice(members)
        r = rng.random()
        if r < 0.05:
            e = {"kind": "unit_start", "role": "harness", "partitions": rng.randint(2, 6)}
        elif r < 0.10:
            e = {
                "kind": "complete",
                "role": "nemesis",
                "action": rng.choice(["pause", "resume", "stall", "unstall", "crash"]),
                "targets": [m],
            }
        elif r < 0.15:
            e = {"kind": "ready", "role": "member", "source": m}
        elif r < 0.30:
            e = {"kind": "rebalance_end", "role": "member", "source": m, "outcome": "ok"}
        else:
            kind = "assigned" if rng.random() < 0.6 else "revoked"
            e = {"kind": kind, "role": "member", "source": m, "partition": rng.randint(0, 7)}
        v.apply({"ts_ns": i, **e})
        live = v.rebalanced - v.suspended
        assert v.live == live
        claimed = [p for x in live for p in v.claims.get(x, ())]
        expected = v.partitions > 0 and sorted(claimed) == list(range(v.partitions))
        assert v.owned_once() == expected, (i, e)
