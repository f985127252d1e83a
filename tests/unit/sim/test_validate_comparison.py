"""The validation's verdicts on one trigger, from hand-made counts: real repetitions against several
simulated ones (the model's random parts make them differ), and the median simulated latency against
the real range."""

from __future__ import annotations

import json
from collections.abc import Sequence
from pathlib import Path

import pytest

from harness.bench.simulator import format_comparison, tally
from harness.sim.validate import Comparison, compare_runs, run_counts, unit_counts, unsettled

NO_CONFLICT = {"watches": 10, "attempts": 10, "zk:create": 10}
ONE_CONFLICT = {"watches": 10, "attempts": 11, "conflicts": 1, "failed_attempts": 1, "zk:create": 11}
TWO_CONFLICTS = {"watches": 10, "attempts": 12, "conflicts": 2, "failed_attempts": 2, "zk:create": 12}


def row(
    real: list[dict[str, int]], sims: list[dict[str, int]], real_s: list[float], sim_s: Sequence[float | None]
) -> Comparison:
    return Comparison("legacy_zk", "group.members=10", 10, "#2 leave m2", real, sims, real_s, list(sim_s))


def test_real_counts_among_the_simulated_ones_are_equal() -> None:
    r = row(
        [ONE_CONFLICT, NO_CONFLICT], [NO_CONFLICT, NO_CONFLICT, ONE_CONFLICT], [2.1, 0.2], [0.2, 0.2, 2.1]
    )
    assert r.counts_equal
    line = format_comparison([r])[1]
    # both real herds shown, and how many simulated repetitions made one of them (all 3)
    assert "real among simulated (3 of 3 alike)" in line
    assert "attempts=11, conflicts=1" in line and "attempts=10, zk:create=10" in line


def test_a_real_outcome_no_simulation_produced_differs_and_says_which_counts() -> None:
    r = row([TWO_CONFLICTS], [NO_CONFLICT, ONE_CONFLICT], [2.2], [0.2, 2.1])
    assert not r.counts_equal
    line = format_comparison([r])[1]
    # the values each side took: conflicts 2 (real) against 0 and 1 (simulated)
    assert "conflicts real 2 sim 0/1" in line and "attempts real 12 sim 10/11" in line


def test_a_simulation_that_makes_one_real_herd_but_not_another_says_so() -> None:
    # real: no conflict, then two; simulated: none, none, one. The first two simulated equal the first
    # real repetition; the second real repetition's two conflicts were never simulated
    r = row([NO_CONFLICT, TWO_CONFLICTS], [NO_CONFLICT, NO_CONFLICT, ONE_CONFLICT], [0.2, 2.2], [0.2] * 3)
    assert not r.counts_equal and r.alike == [0, 1]
    line = format_comparison([r])[1]
    assert "2 of 3 simulated equal a real repetition; DIFFER: " in line
    assert "conflicts real 0/2 sim 0/1" in line


def test_one_deterministic_simulation_must_equal_every_real_repetition() -> None:
    assert row([NO_CONFLICT, NO_CONFLICT], [NO_CONFLICT], [0.2, 0.3], [0.25]).counts_equal
    assert not row([NO_CONFLICT, ONE_CONFLICT], [NO_CONFLICT], [0.2, 2.1], [0.25]).counts_equal


def test_the_median_simulated_latency_is_judged_against_the_real_range() -> None:
    # one herd throughout: simulated 0.2, 0.3, 2.1, median 0.3, inside the real [0.25, 0.4]
    inside = row([NO_CONFLICT], [NO_CONFLICT] * 3, [0.25, 0.4], [2.1, 0.2, 0.3])
    assert inside.simulated_latency_s == 0.3 and inside.latency_inside is True
    # an even number: the mean of the middle two, (0.3 + 2.1) / 2 = 1.2, outside [0.25, 0.4]
    outside = row([NO_CONFLICT], [NO_CONFLICT] * 4, [0.25, 0.4], [0.2, 0.3, 2.1, 2.2])
    assert outside.simulated_latency_s == 1.2 and outside.latency_inside is False
    # nothing settled on one side: no verdict
    assert row([NO_CONFLICT], [NO_CONFLICT], [], [0.3]).latency_inside is None
    assert row([NO_CONFLICT], [NO_CONFLICT], [0.3], [None]).simulated_latency_s is None


def test_latency_is_compared_among_repetitions_that_made_the_same_herd() -> None:
    # the real leave had one conflict (a retry 2 s later); of 4 simulated repetitions two had none
    # (0.16, 0.17 s) and two had one (2.10, 2.14 s): the median of those two, 2.12, against [2.07, 2.18]
    r = row(
        [ONE_CONFLICT],
        [NO_CONFLICT, ONE_CONFLICT, NO_CONFLICT, ONE_CONFLICT],
        [2.07, 2.18],
        [0.16, 2.10, 0.17, 2.14],
    )
    assert r.alike == [1, 3]
    assert r.simulated_latency_s == pytest.approx(2.12) and r.latency_inside is True
    # no simulated repetition made the real herd: the median of all of them, (0.17 + 2.10) / 2 = 1.135
    r = row(
        [TWO_CONFLICTS],
        [NO_CONFLICT, ONE_CONFLICT, NO_CONFLICT, ONE_CONFLICT],
        [4.1],
        [0.16, 2.10, 0.17, 2.14],
    )
    assert r.alike == [] and r.simulated_latency_s == pytest.approx(1.135)
    # an alike repetition that did not settle is left out
    r = row([ONE_CONFLICT], [ONE_CONFLICT, ONE_CONFLICT, NO_CONFLICT], [2.1], [None, 2.11, 0.16])
    assert r.simulated_latency_s == 2.11


def _at(t: int, kind: str, source: str, role: str = "member", **kw: object) -> dict[str, object]:
    """One hand-made event at ``t`` ms."""
    return {"ts_ns": t * 1_000_000, "kind": kind, "source": source, "role": role, **kw}


def _join_at_2000() -> list[dict[str, object]]:
    """A unit's start by hand: a owns p0 and is stable at 1000 ms; j joins at 2000 ms (the nemesis's pair
    and j's ready)."""
    pair = {"action": "join", "action_id": 1, "targets": ["j"], "trigger": True}
    return [
        _at(0, "unit_start", "nemesis", role="harness", partitions=1),
        _at(0, "ready", "a"),
        _at(100, "assigned", "a", partition=0),
        _at(100, "rebalance_end", "a", outcome="ok"),
        _at(1000, "stable", "nemesis", role="harness"),
        _at(2000, "invoke", "nemesis", role="nemesis", **pair),
        _at(2000, "complete", "nemesis", role="nemesis", **pair),
        _at(2000, "ready", "j"),
    ]


def test_the_workloads_own_broker_requests_are_not_the_groups() -> None:
    """As the herd analysis counts (WORKLOAD_CLIENTS): in a join window the producer's and the
    harness's Metadata requests are left out, the members' counted. By hand: a owns p0; j joins at 2000
    (ready at 2000); broker requests inside the window: a's JoinGroup, j's JoinGroup, j's Metadata and
    the producer's two Metadata and the harness's one; the window ends at settling_end (5000)."""
    at = _at  # the events after the shared start, by hand
    events = [
        *_join_at_2000(),
        at(2100, "group_request", "broker-0", role="broker", api="Metadata", client="herdlab-producer"),
        at(2200, "group_request", "broker-0", role="broker", api="Metadata", client="j"),
        at(2300, "group_request", "broker-0", role="broker", api="JoinGroup", client="j"),
        at(2400, "group_request", "broker-0", role="broker", api="JoinGroup", client="a"),
        at(2500, "revoked", "a", partition=0),
        at(2600, "group_request", "broker-0", role="broker", api="Metadata", client="herdlab-producer"),
        at(2700, "group_request", "broker-0", role="broker", api="Metadata", client="herdlab-harness"),
        at(2800, "assigned", "j", partition=0),
        at(2800, "rebalance_end", "j", outcome="ok"),
        at(2800, "rebalance_end", "a", outcome="ok"),
        at(5000, "settling_end", "nemesis", role="harness"),
    ]
    (t,) = unit_counts(events, 1.0)
    assert dict(t.group_requests) == {"Metadata": 1, "JoinGroup": 2}


def _unit_events(settled_ms: int, conflict: bool) -> list[dict[str, object]]:
    """A hand-made legacy unit: a owns p0, j joins at 2000 ms (invoke and ready), both end their
    rebalance at ``settled_ms``; with ``conflict`` j first fails one attempt on a conflict."""
    at = _at  # the events after the shared start, by hand
    events = [
        *_join_at_2000(),
        at(2010, "watch", "a"),
        at(2020, "rebalance_begin", "a"),
        at(2020, "rebalance_begin", "j"),
        at(2030, "revoked", "a", partition=0),
    ]
    if conflict:
        events += [at(2040, "conflict", "j", partition=0), at(2050, "rebalance_begin", "j")]
    events += [
        at(settled_ms, "assigned", "j", partition=0),
        at(settled_ms, "rebalance_end", "j", outcome="ok"),
        at(settled_ms, "rebalance_end", "a", outcome="ok"),
        at(8000, "settling_end", "nemesis", role="harness"),
    ]
    return events


def _run_dir(
    root: Path, name: str, units: list[list[dict[str, object]]], reps: list[int] | None = None
) -> Path:
    """A run directory as the runner writes one: ``manifest.json`` with one 2-member case and a unit
    directory ``c0-legacy_zk-r<k>`` (events/*.jsonl) per repetition, numbered ``reps`` (default 1, 2, ...)."""
    d = root / name
    d.mkdir()
    (d / "manifest.json").write_text(json.dumps({"cases": [{"index": 0, "label": "m2", "members": 2}]}))
    for k, events in zip(reps or range(1, len(units) + 1), units, strict=True):
        e = d / "units" / f"c0-legacy_zk-r{k}" / "events"
        e.mkdir(parents=True)
        (e / "m.jsonl").write_text("".join(json.dumps(x) + "\n" for x in events))
    return d


def test_several_real_runs_pool_their_repetitions(tmp_path: Path) -> None:
    # real run A: one repetition settled at 2800 ms (0.8 s after the join's 2000 ms), no conflict; real
    # run B: one at 3100 ms (1.1 s) with a conflict (2 attempts of j's, 1 of a's: 3); the simulation: one
    # repetition without conflict settled at 2900 ms (0.9 s)
    a = _run_dir(tmp_path, "a", [_unit_events(2800, conflict=False)])
    b = _run_dir(tmp_path, "b", [_unit_events(3100, conflict=True)])
    sim = _run_dir(tmp_path, "sim", [_unit_events(2900, conflict=False)])
    (alone,) = compare_runs(a, sim, 1.0)
    assert alone.real_latency_s == [pytest.approx(0.8)] and alone.latency_inside is False
    assert alone.counts_equal and alone.real[0]["attempts"] == 2
    (pooled,) = compare_runs([a, b], sim, 1.0)
    # both runs' repetitions, in the order given: 0.9 s is inside [0.8, 1.1]; B's conflict was never
    # simulated, so the counts are no longer equal, though a simulated repetition equals A's
    assert pooled.real_latency_s == [pytest.approx(0.8), pytest.approx(1.1)]
    assert pooled.latency_inside is True
    assert [r.get("conflicts", 0) for r in pooled.real] == [0, 1] and pooled.real[1]["attempts"] == 3
    assert not pooled.counts_equal and pooled.alike == [0]
    assert tally([pooled]) == (
        "0/1 triggers with equal counts (every real repetition's counts made by a simulated one); 0/1 with "
        "equal protocol counts (the clients' repeated joins taken out of both sides); 1/1 where a "
        "simulated repetition's counts equal a real repetition's; 1/1 simulated latencies inside the real range"
    )


def test_a_repetition_with_a_trigger_that_did_not_settle_is_left_out_and_named(tmp_path: Path) -> None:
    # real: r2 settled at 2800 ms without conflict; r9's joiner never rebalanced (no member reacted in
    # the join's window: the trigger did not settle, so its window holds no herd of its own); r10 settled
    # at 3100 ms with a conflict. Repetitions are taken in number order (r2, r9, r10; by name r10 would
    # come first), r9 left out. The simulation: r1 like r2, r2 like r9 (left out too)
    no_effect = [*_join_at_2000(), _at(8000, "settling_end", "nemesis", role="harness")]
    real = _run_dir(
        tmp_path,
        "real",
        [_unit_events(2800, conflict=False), no_effect, _unit_events(3100, conflict=True)],
        reps=[2, 9, 10],
    )
    sim = _run_dir(tmp_path, "sim", [_unit_events(2900, conflict=False), no_effect])
    (row_,) = compare_runs(real, sim, 1.0)
    assert [r.get("conflicts", 0) for r in row_.real] == [0, 1]
    assert row_.real_latency_s == [pytest.approx(0.8), pytest.approx(1.1)]
    assert len(row_.simulated_reps) == 1 and row_.simulated_latencies_s == [pytest.approx(0.9)]
    (line,) = unsettled(real, run_counts(real, 1.0))
    assert line.startswith("c0-legacy_zk-r9 (#1 join j: ") and "settled" not in line
    (line,) = unsettled(sim, run_counts(sim, 1.0))
    assert line.startswith("c0-legacy_zk-r2 (#1 join j: ")


def test_a_saved_simulation_is_judged_again_without_simulating(tmp_path: Path) -> None:
    """``--sim DIR``: the comparison reads the given simulated run (its manifest names the model) and
    simulates nothing; a run that is not a simulation, or of other cases, is a one-line error."""
    from harness.bench.simulator import validate
    from harness.kernel.errors import ConfigError

    real = _run_dir(tmp_path, "real", [_unit_events(2800, conflict=False)])
    sim = _run_dir(tmp_path, "sim", [_unit_events(2900, conflict=False)])
    with pytest.raises(ConfigError, match=r"^--sim .*/sim: not a simulated run"):
        validate("herd-small", "2", impls="legacy_zk", out=tmp_path / "o", real_dirs=(real,), sim_dir=sim)
    manifest = json.loads((sim / "manifest.json").read_text())
    manifest.update(
        simulated=True, repetitions=1, delay_model_text="virtual time; by hand",
        scenario={"name": "herd-small"}, finished="2026-11-29T11:00:00+00:00", interrupted=False,
    )  # fmt: skip
    for change, error in [
        ({"cases": [{"index": 0, "members": 3}]}, r"its cases have \[3\] members, --members asks for \[2\]"),
        ({"scenario": {"name": "herd"}}, r"a simulation of 'herd', not of 'herd-small'"),
        ({"interrupted": True}, r"the simulation did not finish"),
    ]:
        (sim / "manifest.json").write_text(json.dumps({**manifest, **change}))
        with pytest.raises(ConfigError, match=rf"^--sim .*/sim: {error}"):
            validate("herd-small", "2", impls="legacy_zk", out=tmp_path / "o", real_dirs=(real,), sim_dir=sim)
    (sim / "manifest.json").write_text(json.dumps(manifest))
    with pytest.raises(ConfigError, match=r"^--delay is not used with --sim"):
        validate("herd-small", "2", impls="legacy_zk", delays=("jitter=0.1",), real_dirs=(real,), sim_dir=sim)
    lines = validate("herd-small", "2", impls="legacy_zk", out=tmp_path / "o", real_dirs=(real,), sim_dir=sim)
    assert lines[0] == f"real run {real} (given), simulation {sim} (given, 1 repetitions)"
    assert lines[1] == "model: virtual time; by hand"
    assert "1/1 where a simulated repetition's counts equal a real repetition's" in lines[-1]
    assert not (tmp_path / "o" / "sim").exists()  # nothing simulated
