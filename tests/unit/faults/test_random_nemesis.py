"""Seeded random fault schedules: drawn as a pure function, merged into the timeline, replayed from the
manifest."""

from __future__ import annotations

from pathlib import Path

import pytest

from harness.cli.run import replay_file
from harness.kernel.errors import ConfigError
from harness.run.manifest import replay_scenario, write_manifest
from harness.run.plan import make_plan
from harness.run.runner import planned_cases
from harness.scenario.loading import load_scenario
from harness.scenario.model import RandomNemesis, Scenario
from harness.scenario.random_nemesis import draw, replay_data, resolve


def _scenario(**nemesis: object) -> Scenario:
    spec = {
        "kind": "random",
        "actions": ["crash", "latency", "pause", "restart_zk"],
        "rate": 4.0,
        "seed": 7,
        "duration": ["1s", "4s"],
        "start": "5s",
        "stop": "120s",
        **nemesis,
    }
    return Scenario.model_validate(
        {
            "name": "random-test",
            "group": {"members": 40},
            "timeline": [{"action": "join", "at": "1s"}],
            "nemesis": [spec],
        }
    )


def test_the_same_seed_draws_the_same_schedule() -> None:
    s = _scenario()
    first, second = draw(s.nemesis[0], s), draw(s.nemesis[0], _scenario())
    assert first == second
    assert len(first) >= 3  # 115 s at 4 a minute: a schedule, not an empty one


def test_a_different_seed_draws_a_different_schedule() -> None:
    a = _scenario(seed=7)
    b = _scenario(seed=8)
    assert draw(a.nemesis[0], a) != draw(b.nemesis[0], b)


def test_the_scenario_seed_is_the_default_seed() -> None:
    s = _scenario(seed=None)
    same = s.model_copy(update={"seed": s.seed})
    other = s.model_copy(update={"seed": s.seed + 1})
    assert draw(s.nemesis[0], s) == draw(same.nemesis[0], same)
    assert draw(s.nemesis[0], s) != draw(other.nemesis[0], other)


def test_drawn_faults_stay_in_bounds_one_at_a_time() -> None:
    s = _scenario()
    drawn = draw(s.nemesis[0], s)
    ends = []
    for e in drawn:
        assert 5.0 <= e["at"] < 120.0
        assert e["action"] in ("crash", "latency", "pause", "restart_zk")
        length = e.get("duration", e.get("downtime", 0.0))
        if e["action"] != "crash":
            assert 1.0 <= length <= 4.0
        ends.append((e["at"], e["at"] + length))
    for (_, end), (start, _) in zip(ends, ends[1:], strict=False):
        assert start >= end + s.settle_window - 1e-9  # the previous fault ended and the window passed


def test_the_rate_is_faults_per_minute_with_the_settle_window_as_dead_time() -> None:
    # zero-length faults (an expire) 3 s apart at least: each gap is max(X, 3) with X ~ Exp(mean 10 s)
    # at 6 a minute, whose mean is 3 + 10 * e^-0.3 = 10.408 s; 6000 s hold about 576.5 of them
    s = _scenario(actions=["expire"], rate=6.0, start=0, stop="6000s", duration=[0, 0])
    counts = [len(draw(s.nemesis[0].model_copy(update={"seed": seed}), s)) for seed in range(5)]
    assert sum(counts) / len(counts) == pytest.approx(6000 / 10.408, rel=0.05)


def test_resolve_merges_the_draws_into_the_timeline_once() -> None:
    s = _scenario()
    resolved, drawn = resolve(s)
    assert resolved.nemesis == []
    assert [a.action for a in resolved.timeline] == [
        e["action"] for e in sorted([{"action": "join", "at": 1.0}, *drawn], key=lambda e: e["at"])
    ]
    assert resolve(resolved) == (resolved, [])  # nothing left to draw
    # the plan of the resolved scenario has the drawn steps, the same for every implementation
    plan = make_plan(resolved, 40)
    assert {st.kind for st in plan.steps} >= {"join", *(e["action"] for e in drawn)}


def test_a_drawn_action_the_scenario_refuses_is_one_config_error() -> None:
    s = _scenario(actions=["kill_coordinator"])  # needs cluster.brokers > 1
    with pytest.raises(
        ConfigError, match=r"nemesis entry 1 .*drawn kill_coordinator at .*cluster.brokers > 1"
    ):
        resolve(s)
    with pytest.raises(ConfigError, match="drawn latency"):
        resolve(_scenario(actions=["latency"], params={"latency": {"latencyy": 5}}))


def test_params_fix_keys_of_drawn_actions() -> None:
    s = _scenario(actions=["latency"], params={"latency": {"latency": 300, "jitter": 20, "stream": "both"}})
    _, drawn = resolve(s)
    assert drawn and all((e["latency"], e["jitter"], e["stream"]) == (300, 20, "both") for e in drawn)


def test_schedule_bounds_are_checked() -> None:
    with pytest.raises(ValueError, match="min <= max"):
        RandomNemesis.model_validate(
            {"kind": "random", "actions": ["crash"], "rate": 1, "stop": 10, "duration": [5, 1]}
        )
    with pytest.raises(ValueError, match="stop must be after"):
        RandomNemesis.model_validate(
            {"kind": "random", "actions": ["crash"], "rate": 1, "start": 10, "stop": 5}
        )
    with pytest.raises(ValueError, match="not in nemesis.actions"):
        RandomNemesis.model_validate(
            {"kind": "random", "actions": ["crash"], "rate": 1, "stop": 5, "params": {"latency": {}}}
        )


def test_planned_cases_draw_the_schedule_first() -> None:
    s = _scenario(actions=["crash"], rate=30.0, stop="600s", duration=[0, 0])  # far more crashes than members
    with pytest.raises(ConfigError, match="wants 1 members but only 0 are present"):
        planned_cases(s)


def test_the_drawn_timeline_round_trips_through_the_manifest(tmp_path: Path) -> None:
    s = _scenario()
    resolved, drawn = resolve(s)
    write_manifest(
        tmp_path / "manifest.json",
        drawn_timeline=drawn,
        replay_scenario=replay_data(resolved),
        versions={},
        git_commit=None,
        machine={},
    )
    assert replay_scenario(tmp_path)["timeline"] == [a.model_dump(mode="json") for a in resolved.timeline]
    with replay_file(tmp_path) as path:
        assert path is not None
        replayed = load_scenario(path)
    assert replayed.timeline == resolved.timeline
    assert replayed.nemesis == []
    assert make_plan(replayed, 40).steps == make_plan(resolved, 40).steps


def test_replay_keeps_a_properties_table_beside_typed_keys(tmp_path: Path) -> None:
    # a full dump would set every typed coordinator key, refused beside a property naming the same thing
    s = Scenario.model_validate(
        {
            "name": "props",
            "group": {"coordinator": {"properties": {"session.timeout.ms": 9000}}},
            "nemesis": [{"kind": "random", "actions": ["crash"], "rate": 2, "stop": "40s", "seed": 3}],
        }
    )
    resolved, _ = resolve(s)
    write_manifest(
        tmp_path / "manifest.json",
        replay_scenario=replay_data(resolved),
        versions={},
        git_commit=None,
        machine={},
    )
    with replay_file(tmp_path) as path:
        assert path is not None
        assert load_scenario(path).group.coordinator.properties == {"session.timeout.ms": 9000}


def test_replay_of_a_directory_without_a_manifest_is_one_config_error(tmp_path: Path) -> None:
    with pytest.raises(ConfigError, match="no manifest.json there"):
        replay_scenario(tmp_path)
    (tmp_path / "manifest.json").write_text("{}")
    with pytest.raises(ConfigError, match="has no replay_scenario"):
        replay_scenario(tmp_path)


def test_run_takes_a_scenario_or_a_replay_directory_not_both(tmp_path: Path) -> None:
    from click.testing import CliRunner

    from harness.cli.run import run

    neither = CliRunner().invoke(run, [])
    both = CliRunner().invoke(run, ["herd", "--replay", str(tmp_path)])
    assert neither.exit_code == both.exit_code == 2  # click's usage error
    assert "give SCENARIO or --replay RUN_DIR" in neither.output
    assert "give SCENARIO or --replay RUN_DIR" in both.output
    empty = CliRunner().invoke(run, ["--replay", str(tmp_path)])
    assert isinstance(empty.exception, ConfigError)  # main() prints it as one line, exit status 2
    assert "no manifest.json there" in str(empty.exception)
