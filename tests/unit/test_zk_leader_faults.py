"""The ZooKeeper-leader faults: the ``[zookeeper]`` key, the timeline actions, their plan and
the cluster spec's backend rule (the nemesis classes are tested in ``test_nemesis.py``)."""

from __future__ import annotations

from pathlib import Path

import pytest

from harness.cluster.base import ClusterSpec, make_cluster
from harness.cluster.local import LocalCluster
from harness.kernel.errors import ConfigError
from harness.kernel.events import ACTIONS
from harness.run.plan import check_spacing, make_plan
from harness.run.runner import RunOptions, run_scenario
from harness.scenario import load_scenario
from harness.scenario.model import KillZkLeader, PauseZkLeader, Scenario


def _scenario(timeline: str, *more: str) -> Scenario:
    return load_scenario("herd", ["matrix={}", "group.members=3", f"timeline={timeline}", *more])


# -- the scenario key and actions ---------------------------------------------------------------------------
def test_zookeeper_servers_defaults_to_one_and_takes_three() -> None:
    assert _scenario("[]").zookeeper.servers == 1
    assert _scenario("[]", "zookeeper.servers=3").zookeeper.servers == 3


def test_zk_leader_actions_load_with_their_defaults() -> None:
    s = _scenario('[{at="10s",action="kill_zk_leader"},{at="30s",action="pause_zk_leader",duration="4s"}]')
    kill, pause = s.timeline
    assert isinstance(kill, KillZkLeader) and kill.at == 10.0 and kill.downtime == 5.0
    assert isinstance(pause, PauseZkLeader) and pause.at == 30.0 and pause.duration == 4.0


def _write(tmp_path: Path, text: str) -> Path:
    p = tmp_path / "bad.toml"
    p.write_text(text)
    return p


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ('name = "x"\n[zookeeper]\nservers = 2\n', "zookeeper.servers"),
        (
            'name = "x"\n[zookeeper]\nserver = 3\n',
            "line 3: zookeeper.server: unknown key; did you mean 'servers'? (allowed: servers)",
        ),
        (
            'name = "x"\n[[timeline]]\nat = "5s"\naction = "pause_zk_leader"\n',
            "line 2: timeline entry 1, duration: required key is missing",
        ),
        (
            'name = "x"\n[[timeline]]\nat = "5s"\naction = "kill_zk_leader"\ndowntime = "10s"\n'
            '[[timeline]]\nat = "12s"\naction = "pause_zk_leader"\nduration = "1s"\n',
            "pause_zk_leader at 12s starts before the kill_zk_leader at 5s ended (15s)",
        ),
    ],
)
def test_malformed_zookeeper_keys_give_one_line_naming_them(tmp_path: Path, text: str, expected: str) -> None:
    path = _write(tmp_path, text)
    with pytest.raises(ConfigError) as info:
        load_scenario(path)
    message = str(info.value)
    assert "\n" not in message and message.startswith(str(path)) and expected in message


# -- the plan -----------------------------------------------------------------------------------------------
def test_a_leader_kill_is_a_trigger_followed_by_the_restart_after_its_downtime() -> None:
    s = _scenario(
        '[{at="10s",action="kill_zk_leader",downtime="3s"},{at="20s",action="pause_zk_leader",duration="2s"}]'
    )
    plan = make_plan(s, 3)
    assert [(st.at, st.kind, st.targets, st.value, st.trigger) for st in plan.steps] == [
        (10.0, "kill_zk_leader", (), 3.0, True),
        (13.0, "restart_zk_server", (), None, False),
        (20.0, "pause_zk_leader", (), 2.0, True),
        (22.0, "resume_zk_server", (), None, False),
    ]
    assert not plan.isolated and not plan.proxied  # no member is hit
    check_spacing(plan, 3.0)  # triggers 10 s apart: measurable
    with pytest.raises(ValueError, match="kill_zk_leader at 10s and pause_zk_leader at 20s"):
        check_spacing(plan, 11.0)


def test_every_planned_zk_step_is_an_action_of_the_event_contract() -> None:
    assert {"kill_zk_leader", "restart_zk_server", "pause_zk_leader", "resume_zk_server"} <= set(ACTIONS)


# -- the cluster spec ---------------------------------------------------------------------------------------
def test_three_zookeeper_servers_make_a_local_ensemble_and_one_stays_a_single_server() -> None:
    three = make_cluster(ClusterSpec(zookeeper_servers=3))
    one = make_cluster(ClusterSpec())
    assert isinstance(three, LocalCluster) and isinstance(one, LocalCluster)
    assert three.zookeeper_ensemble is not None and three.zookeeper_ensemble.n == 3
    assert one.zookeeper_ensemble is None


@pytest.mark.parametrize("backend", ["external"])  # containers runs an ensemble too
def test_three_zookeeper_servers_on_another_backend_are_a_one_line_config_error(backend: str) -> None:
    with pytest.raises(ConfigError) as info:
        make_cluster(ClusterSpec(backend=backend, zookeeper_servers=3))
    assert "\n" not in str(info.value)
    assert str(info.value) == (
        f"zookeeper servers = 3 needs --backend local "
        f"(the {backend} backend runs one ZooKeeper server for now)"
    )


@pytest.mark.parametrize(
    ("backend", "more"),
    [  # the containers backend runs an ensemble too
        ("external", ["zookeeper.servers=3"]),
        ("external", ['matrix={"zookeeper.servers"=[1, 3]}']),
    ],
)
def test_a_run_with_three_zookeeper_servers_off_the_local_backend_is_refused_before_anything_starts(
    tmp_path: Path, backend: str, more: list[str]
) -> None:
    s = load_scenario("herd", ["group.members=3", *more])
    options = RunOptions(out=tmp_path, backend=backend, zookeeper="127.0.0.1:1", bootstrap="127.0.0.1:1")
    with pytest.raises(ConfigError) as info:
        run_scenario(s, options)
    assert str(info.value) == f"zookeeper servers = 3 needs --backend local (not {backend}) for now"
    assert not any(tmp_path.iterdir())
