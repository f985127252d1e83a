"""The coordinator as a fault target: the ``[cluster]`` keys, the coordinator actions, their
validation and plan, and the nemesis classes driven with a fake cluster (real processes:
``tests/integration/harness/test_coordinator_faults.py``)."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import pytest

from harness.faults.actions import (
    NEEDS_BROKER_FAULTS,
    NO_COORDINATOR,
    OFFSETS_PARTITIONS,
    REGISTRY,
    nemesis_for,
)
from harness.faults.nemesis import ActionFailed, ActionPair, FaultControls
from harness.kernel.errors import ConfigError
from harness.kernel.events import ACTIONS, COORDINATOR_END_ACTIONS, COORDINATOR_FAULT_ACTIONS
from harness.run.plan import Step, check_spacing, make_plan
from harness.run.runner import RunOptions, planned_cases, run_scenario
from harness.scenario import load_scenario
from harness.scenario.model import (
    ClusterSettings,
    CutCoordinator,
    KillCoordinator,
    PauseCoordinator,
    Scenario,
)
from tests.support.recording import RecordingHistory as Recorded

REASON = "a legacy group has no coordinating broker (its counterpart is the ZooKeeper leader's fault)"


def _scenario(timeline: str, *more: str) -> Scenario:
    return load_scenario("herd", ["matrix={}", "group.members=3", f"timeline={timeline}", *more])


# -- the [cluster] keys ---------------------------------------------------------------------------------------
def test_cluster_defaults_are_one_broker_without_replication_and_no_broker_flags() -> None:
    c = _scenario("[]").cluster
    assert (c.brokers, c.replication, c.replicated) == (1, None, False)
    assert c.broker_args() == ()


def test_several_brokers_replicate_by_default_and_pass_the_replication_flags() -> None:
    c = _scenario(
        "[]", "cluster.brokers=3", "cluster.min_insync_replicas=2", "cluster.replica_lag_time_max_ms=4000"
    ).cluster
    assert (c.brokers, c.replicated) == (3, True)
    assert c.broker_args() == (
        "--replication",
        "--no-unclean-leader-election",
        "--min-insync-replicas",
        "2",
        "--replica-lag-time-max-ms",
        "4000",
    )
    unclean = ClusterSettings(brokers=3, unclean_leader_election=True).broker_args()
    assert "--unclean-leader-election" in unclean and "--no-unclean-leader-election" not in unclean


def test_replication_can_be_turned_off_with_several_brokers_and_on_with_one() -> None:
    assert _scenario("[]", "cluster.brokers=3", "cluster.replication=false").cluster.broker_args() == ()
    assert _scenario("[]", "cluster.replication=true").cluster.broker_args()[0] == "--replication"


def _write(tmp_path: Path, text: str) -> Path:
    p = tmp_path / "bad.toml"
    p.write_text(text)
    return p


KILL_AT_5 = '[[timeline]]\nat = "5s"\naction = "kill_coordinator"\n'


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ('name = "x"\n[cluster]\nbrokers = 6\n', "cluster.brokers"),
        ('name = "x"\n[cluster]\nbrokers = 0\n', "cluster.brokers"),
        ('name = "x"\n[cluster]\nbrokerz = 3\n', "cluster.brokerz: unknown key"),
        (
            'name = "x"\n[cluster]\nbroker = 3\n',
            "cluster.broker: Input should be 'herdlab', 'tansu', 'apache-kafka' or 'external'",
        ),
        ('name = "x"\n[cluster]\nmin_insync_replicas = 0\n', "cluster.min_insync_replicas"),
        (
            'name = "x"\n' + KILL_AT_5,
            "kill_coordinator at 5s needs cluster.brokers > 1 (the coordinator must be able to move; "
            "cluster.brokers = 1)",
        ),
        (
            'name = "x"\n[cluster]\nbrokers = 3\n[[timeline]]\nat = "5s"\naction = "pause_coordinator"\n',
            "timeline entry 1, duration: required key is missing",
        ),
        (
            'name = "x"\n[cluster]\nbrokers = 3\n[[timeline]]\nat = "5s"\naction = "kill_coordinator"\n'
            'downtime = "10s"\n[[timeline]]\nat = "12s"\naction = "cut_coordinator"\nduration = "1s"\n',
            "cut_coordinator at 12s starts before the kill_coordinator at 5s ended (15s): "
            "one coordinator fault at a time",
        ),
    ],
)
def test_malformed_cluster_keys_and_coordinator_faults_give_one_line_naming_them(
    tmp_path: Path, text: str, expected: str
) -> None:
    path = _write(tmp_path, text)
    with pytest.raises(ConfigError) as info:
        load_scenario(path)
    message = str(info.value)
    assert "\n" not in message and message.startswith(str(path)) and expected in message


def test_a_coordinator_fault_and_a_zookeeper_leader_fault_may_overlap() -> None:
    s = _scenario(
        '[{at="5s",action="kill_coordinator",downtime="10s"},{at="8s",action="kill_zk_leader"}]',
        "cluster.brokers=3",
        "zookeeper.servers=3",
    )
    assert [a.action for a in s.timeline] == ["kill_coordinator", "kill_zk_leader"]


def test_a_matrix_over_brokers_is_checked_per_case_one_broker_failing() -> None:
    s = _scenario('[{at="5s",action="kill_coordinator"}]', 'matrix={"cluster.brokers"=[1, 3]}')
    with pytest.raises(ConfigError) as info:
        planned_cases(s)
    assert "\n" not in str(info.value) and "needs cluster.brokers > 1" in str(info.value)
    assert "{'cluster.brokers': 1}" in str(info.value)


def test_coordinator_actions_load_with_their_defaults() -> None:
    s = _scenario(
        '[{at="10s",action="kill_coordinator"},{at="30s",action="pause_coordinator",duration="8s"},'
        '{at="50s",action="cut_coordinator",duration="9s"}]',
        "cluster.brokers=3",
    )
    kill, pause, cut = s.timeline
    assert isinstance(kill, KillCoordinator) and (kill.at, kill.downtime) == (10.0, 5.0)
    assert isinstance(pause, PauseCoordinator) and (pause.at, pause.duration) == (30.0, 8.0)
    assert isinstance(cut, CutCoordinator) and (cut.at, cut.duration) == (50.0, 9.0)


# -- the plan -----------------------------------------------------------------------------------------------
def test_each_coordinator_fault_is_a_trigger_followed_by_its_end_step() -> None:
    s = _scenario(
        '[{at="10s",action="kill_coordinator",downtime="3s"},{at="20s",action="pause_coordinator",'
        'duration="8s"},{at="40s",action="cut_coordinator",duration="9s"}]',
        "cluster.brokers=3",
    )
    plan = make_plan(s, 3)
    assert [(st.at, st.kind, st.targets, st.value, st.trigger) for st in plan.steps] == [
        (10.0, "kill_coordinator", (), 3.0, True),
        (13.0, "restart_coordinator", (), None, False),
        (20.0, "pause_coordinator", (), 8.0, True),
        (28.0, "resume_coordinator", (), None, False),
        (40.0, "cut_coordinator", (), 9.0, True),
        (49.0, "heal_coordinator", (), None, False),
    ]
    assert not plan.isolated and not plan.proxied  # no member is hit
    check_spacing(plan, 3.0)


def test_every_planned_coordinator_step_is_an_action_of_the_event_contract_with_one_nemesis() -> None:
    assert {*COORDINATOR_FAULT_ACTIONS, *COORDINATOR_END_ACTIONS} <= set(ACTIONS)
    assert sorted(REGISTRY) == sorted(ACTIONS)


@pytest.mark.parametrize(
    ("backend", "more"),
    [
        ("containers", ["cluster.brokers=3"]),
        ("external", ["cluster.brokers=2"]),
        ("containers", ['matrix={"cluster.brokers"=[1, 3]}']),
    ],
)
def test_several_brokers_off_the_local_backend_are_refused_before_anything_starts(
    tmp_path: Path, backend: str, more: list[str]
) -> None:
    s = load_scenario("herd", ["group.members=3", *more])
    options = RunOptions(out=tmp_path, backend=backend, zookeeper="127.0.0.1:1", bootstrap="127.0.0.1:1")
    with pytest.raises(ConfigError) as info:
        run_scenario(s, options)
    assert str(info.value) == f"cluster brokers > 1 needs --backend local (not {backend}) for now"
    assert not any(tmp_path.iterdir())


# -- the nemesis classes --------------------------------------------------------------------------------------


@dataclass
class FakeBrokers:
    """A cluster with broker faults (the local backend's API); ``fail`` makes pause/resume time out."""

    zookeeper_connect: str = "127.0.0.1:2181"
    bootstrap: str = "127.0.0.1:9092"
    brokers_down: set[int] = field(default_factory=set)
    brokers_paused: set[int] = field(default_factory=set)
    brokers_cut: set[int] = field(default_factory=set)
    calls: list[str] = field(default_factory=list)
    fail: bool = False

    def stop_broker(self, index: int = 0) -> None:
        self.calls.append(f"stop {index}")

    def start_broker(self, index: int = 0) -> None:
        self.calls.append(f"start {index}")
        self.brokers_down.discard(index)

    def kill_broker(self, broker_id: int) -> None:
        self.calls.append(f"kill {broker_id}")
        self.brokers_down.add(broker_id)

    def pause_broker(self, broker_id: int, timeout: float = 10.0) -> None:
        if self.fail:
            raise RuntimeError(f"broker {broker_id} not stopped after 10s")
        self.calls.append(f"pause {broker_id}")
        self.brokers_paused.add(broker_id)

    def resume_broker(self, broker_id: int, timeout: float = 10.0) -> None:
        self.calls.append(f"resume {broker_id}")
        self.brokers_paused.discard(broker_id)

    def cut_broker_zookeeper(self, broker_id: int) -> None:
        self.calls.append(f"cut {broker_id}")
        self.brokers_cut.add(broker_id)

    def heal_broker_zookeeper(self, broker_id: int) -> None:
        self.calls.append(f"heal {broker_id}")
        self.brokers_cut.discard(broker_id)

    def fault_controls(self) -> FaultControls:
        return FaultControls(brokers=self)


@dataclass
class PlainCluster:
    """A cluster without broker faults (the external backend)."""

    zookeeper_connect: str = "127.0.0.1:2181"
    bootstrap: str = "127.0.0.1:9092"

    def stop_broker(self, index: int = 0) -> None: ...

    def start_broker(self, index: int = 0) -> None: ...

    def fault_controls(self) -> FaultControls:
        return FaultControls()


@dataclass
class FakeContext:
    """A NemesisContext whose FindCoordinator answers ``coordinator_now`` (None: nobody names one)."""

    impl: str = "coordinator"
    unit_key: str = "c0-coordinator-r0"
    logs_dir: Path = Path("/logs")
    stable_timeout: float = 5.0
    topic: str = "herd"
    group: str = "a"  # Java "a".hashCode() = 97, so partitionFor = 97 mod 50 = 47
    cluster: Any = field(default_factory=FakeBrokers)
    proxies: None = None
    members: dict[str, Any] = field(default_factory=dict)
    coordinator_now: int | None = 2
    asked: list[float] = field(default_factory=list)
    now_ns: int = 1_000_000_000_000

    def start_member(self, name: str, kind: str | None = None, props: Any = None) -> None:
        raise AssertionError("a coordinator fault starts no member")

    def frozen(self, member: Any) -> bool:
        return False

    def wait(self, seconds: float, until: Callable[[], bool] | None = None) -> bool:
        return True

    def ready_ns(self, name: str) -> int:
        return 0

    def registration(self, name: str) -> tuple[int, str] | None:
        return None

    def time_ns(self) -> int:
        return self.now_ns

    def coordinator(self, timeout: float) -> int | None:
        self.asked.append(timeout)
        return self.coordinator_now


def _perform(kind: str, ctx: FakeContext, value: float | None = None) -> list[dict[str, Any]]:
    step = Step.of(10.0, kind, value=value)
    history = Recorded()
    nemesis_for(step).run(ActionPair(step, 7, history, ctx.time_ns, {"impl": ctx.impl}), ctx)
    return history.events


def test_the_offsets_partition_of_a_group_is_java_partition_for_over_fifty() -> None:
    assert OFFSETS_PARTITIONS == 50
    events = _perform("kill_coordinator", FakeContext(group="a"))
    assert events[0]["offsets_partition"] == 47  # "a".hashCode() = 97; 97 mod 50


@pytest.mark.parametrize(
    ("fault", "end", "calls"),
    [
        ("kill_coordinator", "restart_coordinator", ["kill 2", "start 2"]),
        ("pause_coordinator", "resume_coordinator", ["pause 2", "resume 2"]),
        ("cut_coordinator", "heal_coordinator", ["cut 2", "heal 2"]),
    ],
)
def test_a_fault_hits_the_broker_find_coordinator_names_and_its_end_that_same_broker(
    fault: str, end: str, calls: list[str]
) -> None:
    ctx = FakeContext(coordinator_now=2)
    struck = _perform(fault, ctx, value=5.0)
    ctx.coordinator_now = 0  # the coordinator moved meanwhile: the end still hits the broker the fault holds
    ended = _perform(end, ctx)
    assert ctx.cluster.calls == calls
    assert len(ctx.asked) == 1  # only the fault asks FindCoordinator
    for events in (struck, ended):
        assert [e["kind"] for e in events] == ["invoke", "complete"]
        for e in events:
            assert (e["broker_id"], e["offsets_partition"], e["group"], e["targets"]) == (2, 47, "a", [])
    assert struck[0]["trigger"] is True and ended[0]["trigger"] is False
    assert not (ctx.cluster.brokers_down | ctx.cluster.brokers_paused | ctx.cluster.brokers_cut)


@pytest.mark.parametrize("action", [*COORDINATOR_FAULT_ACTIONS, *COORDINATOR_END_ACTIONS])
def test_coordinator_actions_are_skipped_for_legacy_zk_with_the_reason_and_touch_nothing(action: str) -> None:
    ctx = FakeContext(impl="legacy_zk", unit_key="c0-legacy_zk-r0")
    events = _perform(action, ctx)
    assert [e["kind"] for e in events] == ["invoke", "skipped"]
    assert events[1]["reason"] == NO_COORDINATOR == REASON
    assert events[1]["broker_id"] is None and events[1]["group"] == "a"
    assert ctx.cluster.calls == [] and ctx.asked == []
    assert nemesis_for_kind(action).applicable("coordinator") is None


def nemesis_for_kind(action: str) -> Any:
    return nemesis_for(Step.of(0.0, action))


@pytest.mark.parametrize(
    ("end", "reason"),
    [
        ("restart_coordinator", "no broker is down"),
        ("resume_coordinator", "no broker is paused"),
        ("heal_coordinator", "no broker is cut from ZooKeeper"),
    ],
)
def test_an_end_with_no_broker_held_is_skipped(end: str, reason: str) -> None:
    events = _perform(end, FakeContext())
    assert [e["kind"] for e in events] == ["invoke", "skipped"] and events[1]["reason"] == reason


def test_a_cluster_without_broker_faults_skips_them() -> None:
    events = _perform("kill_coordinator", FakeContext(cluster=PlainCluster()))
    assert [e["kind"] for e in events] == ["invoke", "skipped"] and events[1]["reason"] == NEEDS_BROKER_FAULTS


def test_no_coordinator_named_fails_the_unit_before_any_event() -> None:
    ctx = FakeContext(coordinator_now=None)
    history = Recorded()
    step = Step.of(10.0, "kill_coordinator", value=5.0)
    with pytest.raises(ActionFailed, match="no broker named a coordinator of a within 30s"):
        nemesis_for(step).run(ActionPair(step, 7, history, ctx.time_ns, {}), ctx)
    assert history.events == [] and ctx.cluster.calls == []


def test_a_pause_that_never_takes_effect_fails_the_unit_with_the_invoke_left_open() -> None:
    ctx = FakeContext(cluster=FakeBrokers(fail=True))
    history = Recorded()
    step = Step.of(10.0, "pause_coordinator", value=8.0)
    with pytest.raises(ActionFailed, match="pause_coordinator of broker 2: broker 2 not stopped"):
        nemesis_for(step).run(ActionPair(step, 7, history, ctx.time_ns, {}), ctx)
    assert [e["kind"] for e in history.events] == ["invoke"]


# -- the built-in scenario ------------------------------------------------------------------------------------
def test_the_coordinator_failover_scenario_runs_every_fault_on_three_servers_and_three_brokers() -> None:
    s = load_scenario("coordinator-failover")
    assert (s.zookeeper.servers, s.cluster.brokers, s.cluster.replicated) == (3, 3, True)
    assert s.implementations == ["legacy_zk", "coordinator"]
    (case,) = planned_cases(s)
    assert (case.members, case.partitions) == (3, 6)
    plan = make_plan(case.scenario, case.members)
    assert [(st.kind, st.trigger) for st in plan.steps] == [
        ("kill_coordinator", True),
        ("restart_coordinator", False),
        ("pause_coordinator", True),
        ("resume_coordinator", False),
        ("cut_coordinator", True),
        ("heal_coordinator", False),
        ("kill_zk_leader", True),
        ("restart_zk_server", False),
        ("pause_zk_leader", True),
        ("resume_zk_server", False),
    ]
    pause = next(a for a in s.timeline if isinstance(a, PauseCoordinator))
    assert pause.duration > 6.0  # longer than the broker's ZooKeeper session: it is deposed meanwhile
    # each fault's end leaves at least one session timeout (6 s) and a settle window before the next fault
    ends = {st.at for st in plan.steps if not st.trigger}
    faults = [st.at for st in plan.steps if st.trigger]
    assert all(min(f - e for f in faults if f > e) >= 6.0 + s.settle_window for e in ends if e < max(faults))
    assert plan.end + s.drain < 120.0
