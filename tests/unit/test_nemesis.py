"""The nemesis classes: which action applies where, and the events each writes, driven with fakes."""

from __future__ import annotations

import signal
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import pytest

from harness.faults.actions import NEEDS_ENSEMBLE, NO_POLL_TIMER, REGISTRY, nemesis_for
from harness.faults.nemesis import ActionFailed, ActionPair, FaultControls
from harness.faults.steps import Membership
from harness.kernel.errors import ConfigError
from harness.kernel.events import ACTIONS
from harness.run.plan import Step
from tests.support.recording import RecordingHistory as Recorded

IMPLS = ("legacy_zk", "coordinator")
NO_ZK = "coordinator members do not use ZooKeeper"
NO_SESSION = "ZooKeeper sessions exist only on the legacy side"


# -- fakes ---------------------------------------------------------------------------------------------


@dataclass
class FakeProcess:
    signals: list[tuple[int, bool]] = field(default_factory=list)
    waits: list[float | None] = field(default_factory=list)
    stopped: bool = False
    frozen: bool = False

    def alive(self) -> bool:
        return not self.stopped

    def signal(self, sig: int, group: bool = True) -> None:
        self.signals.append((sig, group))

    def wait(self, timeout: float | None = None) -> int | None:
        self.waits.append(timeout)
        return 0

    def stop(self, grace: float = 5.0) -> None:
        self.stopped = True


@dataclass
class FakeProxies:
    calls: list[tuple[str, str]] = field(default_factory=list)

    def cut(self, name: str) -> None:
        self.calls.append(("cut", name))

    def restore(self, name: str) -> None:
        self.calls.append(("restore", name))


@dataclass
class FakeCluster:
    calls: list[str] = field(default_factory=list)
    zookeeper_connect: str = "127.0.0.1:2181"
    bootstrap: str = "127.0.0.1:9092"

    def stop_broker(self, index: int = 0) -> None:
        self.calls.append(f"stop {index}")

    def start_broker(self, index: int = 0) -> None:
        self.calls.append(f"start {index}")

    def fault_controls(self) -> FaultControls:
        return FaultControls()


@dataclass
class FakeContext:
    """A NemesisContext on a fake clock: ``wait`` advances it in 0.1 s polls, running ``on_poll``."""

    impl: str = "legacy_zk"
    unit_key: str = "c0-legacy_zk-r0"
    logs_dir: Path = Path("/logs")
    stable_timeout: float = 5.0
    topic: str = "herd"
    members: dict[str, FakeProcess] = field(default_factory=dict)
    cluster: FakeCluster = field(default_factory=FakeCluster)
    proxies: FakeProxies | None = field(default_factory=FakeProxies)
    now_ns: int = 1_000_000_000_000
    ready: dict[str, int] = field(default_factory=dict)
    registrations: dict[str, tuple[int, str]] = field(default_factory=dict)
    started: list[str] = field(default_factory=list)
    started_as: list[tuple[str, str | None, dict[str, str] | None]] = field(default_factory=list)
    waited: list[float] = field(default_factory=list)
    on_poll: Callable[[FakeContext], None] = lambda ctx: None

    def start_member(
        self, name: str, kind: str | None = None, props: Mapping[str, str] | None = None
    ) -> None:
        self.started.append(name)
        self.started_as.append((name, kind, None if props is None else dict(props)))
        self.members[name] = FakeProcess()

    def frozen(self, member: Any) -> bool:
        return bool(member.frozen)

    def wait(self, seconds: float, until: Callable[[], bool] | None = None) -> bool:
        self.waited.append(seconds)
        end = self.now_ns + int(seconds * 1e9)
        while True:
            self.on_poll(self)
            if until is not None and until():
                return True
            if self.now_ns >= end:
                return False
            self.now_ns = min(end, self.now_ns + 100_000_000)

    def ready_ns(self, name: str) -> int:
        return self.ready.get(name, 0)

    def registration(self, name: str) -> tuple[int, str] | None:
        return self.registrations.get(name)

    def time_ns(self) -> int:
        return self.now_ns


def _perform(step: Step, ctx: FakeContext) -> list[dict[str, Any]]:
    history = Recorded()
    pair = ActionPair(step, 7, history, ctx.time_ns, {"impl": ctx.impl})
    nemesis_for(step).run(pair, ctx)
    return history.events


# -- the registry and the skip rules --------------------------------------------------------------------
def test_every_action_of_the_event_contract_has_exactly_one_nemesis() -> None:
    assert sorted(REGISTRY) == sorted(ACTIONS)
    for action in ACTIONS:
        assert nemesis_for(Step.of(0.0, action)).action == action


def test_an_unknown_action_is_a_config_error_naming_it() -> None:
    with pytest.raises(ConfigError, match="unknown nemesis action 'explode'"):
        nemesis_for(Step(0.0, Membership("explode", ())))


@pytest.mark.parametrize(
    ("action", "target", "expected"),
    [
        # ZooKeeper cuts exist only where members talk to ZooKeeper
        ("cut", "zookeeper", {"legacy_zk": None, "coordinator": NO_ZK}),
        ("heal", "zookeeper", {"legacy_zk": None, "coordinator": NO_ZK}),
        # broker cuts apply to both (a third-party broker, which members do not reach through their
        # proxies, is refused with them when the scenario is loaded: tests/unit/test_broker_axis.py)
        ("cut", "broker", {"legacy_zk": None, "coordinator": None}),
        ("heal", "broker", {"legacy_zk": None, "coordinator": None}),
        ("expire", None, {"legacy_zk": None, "coordinator": NO_SESSION}),
    ],
)
def test_skip_rules(action: str, target: str | None, expected: dict[str, str | None]) -> None:
    nemesis = nemesis_for(Step.of(0.0, action, ("m0",), target=target))
    assert {impl: nemesis.applicable(impl) for impl in IMPLS} == expected


@pytest.mark.parametrize(
    "action",
    [
        "join",
        "start_member",
        "leave",
        "stop_member",
        "crash",
        "pause",
        "resume",
        "add_partitions",
        "restart_broker",
    ],
)
def test_membership_process_and_topic_actions_apply_to_every_implementation(action: str) -> None:
    nemesis = nemesis_for(Step.of(0.0, action, ("m0",)))
    assert [nemesis.applicable(impl) for impl in IMPLS] == [None, None]


# -- what each writes and does ----------------------------------------------------------------------------
def test_a_zookeeper_cut_on_the_coordinator_is_invoked_then_skipped_and_touches_no_proxy() -> None:
    ctx = FakeContext(impl="coordinator", unit_key="c0-coordinator-r0")
    events = _perform(Step.of(35.0, "cut", ("m0",), target="zookeeper", value=10.0), ctx)
    assert [e["kind"] for e in events] == ["invoke", "skipped"]
    invoke, skipped = events
    assert skipped["reason"] == NO_ZK
    assert invoke == {
        "kind": "invoke",
        "ts_ns": ctx.now_ns,
        "action": "cut",
        "action_id": 7,
        "targets": ["m0"],
        "target": "zookeeper",
        "value": 10.0,
        "trigger": True,
        "partitions": None,
        "impl": "coordinator",
    }
    assert {k: v for k, v in skipped.items() if k != "reason"} == {**invoke, "kind": "skipped"}
    assert ctx.proxies is not None and ctx.proxies.calls == []


def test_cut_and_heal_work_the_targets_proxies_to_that_target() -> None:
    ctx = FakeContext()
    cut = _perform(Step.of(1.0, "cut", ("m0", "m2"), target="zookeeper", value=8.0), ctx)
    heal = _perform(Step.of(9.0, "heal", ("m0", "m2"), target="zookeeper"), ctx)
    assert [e["kind"] for e in cut + heal] == ["invoke", "complete", "invoke", "complete"]
    assert ctx.proxies is not None
    assert ctx.proxies.calls == [
        ("cut", "m0-zookeeper"),
        ("cut", "m2-zookeeper"),
        ("restore", "m0-zookeeper"),
        ("restore", "m2-zookeeper"),
    ]


def test_expiring_a_member_without_a_registered_session_is_skipped_with_its_name() -> None:
    events = _perform(Step.of(1.0, "expire", ("m1",)), FakeContext())
    assert [e["kind"] for e in events] == ["invoke", "skipped"]
    assert events[1]["reason"] == "m1 has no ZooKeeper session registered yet"


def test_join_completes_when_every_joiner_wrote_ready_since_the_invoke() -> None:
    ctx = FakeContext()
    ctx.ready["j1"] = ctx.now_ns - 1  # an older process of j1: its ready does not count
    t0 = ctx.now_ns

    def boot(c: FakeContext) -> None:  # j0 is ready after 0.3 s, j1 after 0.5 s
        if c.now_ns - t0 >= 300_000_000 and "j0" not in c.ready:
            c.ready["j0"] = c.now_ns
        if c.now_ns - t0 >= 500_000_000 and c.ready["j1"] < t0:
            c.ready["j1"] = c.now_ns

    ctx.on_poll = boot
    events = _perform(Step.of(5.0, "join", ("j0", "j1")), ctx)
    assert ctx.started == ["j0", "j1"]
    assert [e["kind"] for e in events] == ["invoke", "complete"]
    assert events[0]["ts_ns"] == t0
    assert events[1]["ts_ns"] == t0 + 500_000_000  # complete = the moment the last one was seen ready
    assert events[1]["ready_ns"] == {"j0": t0 + 300_000_000, "j1": t0 + 500_000_000}


def test_a_joiner_that_never_becomes_ready_fails_the_unit_after_the_stable_timeout() -> None:
    ctx = FakeContext(stable_timeout=2.0, logs_dir=Path("/run/logs"))
    t0 = ctx.now_ns
    with pytest.raises(ActionFailed, match=r"^c0-legacy_zk-r0: j0 not ready to join; see /run/logs$"):
        _perform(Step.of(5.0, "join", ("j0",)), ctx)
    assert ctx.now_ns - t0 == 2_000_000_000


def test_leave_terminates_the_process_itself_and_crash_kills_its_group() -> None:
    ctx = FakeContext(members={"m0": FakeProcess(), "m1": FakeProcess()})
    _perform(Step.of(1.0, "leave", ("m0",)), ctx)
    _perform(Step.of(5.0, "crash", ("m1",)), ctx)
    m0, m1 = ctx.members["m0"], ctx.members["m1"]
    assert (m0.signals, m0.waits, m0.stopped) == ([(signal.SIGTERM, False)], [30], True)
    assert (m1.signals, m1.waits, m1.stopped) == ([(signal.SIGKILL, True)], [10], False)


def test_pause_completes_only_once_the_target_is_seen_frozen() -> None:
    ctx = FakeContext(members={"m0": FakeProcess()})
    t0 = ctx.now_ns

    def freeze_late(c: FakeContext) -> None:  # the stop shows 0.2 s after the signal
        if c.now_ns - t0 >= 200_000_000:
            c.members["m0"].frozen = True

    ctx.on_poll = freeze_late
    events = _perform(Step.of(1.0, "pause", ("m0",), value=8.0), ctx)
    assert ctx.members["m0"].signals == [(signal.SIGSTOP, True)]
    assert events[1]["kind"] == "complete" and events[1]["ts_ns"] == t0 + 200_000_000


def test_a_pause_that_never_takes_effect_fails_after_ten_seconds() -> None:
    ctx = FakeContext(members={"m0": FakeProcess()})
    with pytest.raises(ActionFailed, match="pause of m0 did not take effect"):
        _perform(Step.of(1.0, "pause", ("m0",), value=8.0), ctx)
    assert ctx.waited == [10]


def test_resume_sends_sigcont_and_waits_for_the_target_to_run() -> None:
    ctx = FakeContext(members={"m0": FakeProcess(frozen=True)})
    ctx.on_poll = lambda c: setattr(c.members["m0"], "frozen", False)
    events = _perform(Step.of(9.0, "resume", ("m0",)), ctx)
    assert ctx.members["m0"].signals == [(signal.SIGCONT, True)]
    assert [e["kind"] for e in events] == ["invoke", "complete"] and events[0]["trigger"] is False


def test_a_stall_is_skipped_for_legacy_zk_members_which_have_no_poll_timer() -> None:
    for action in ("stall", "unstall"):
        nemesis = nemesis_for(Step.of(0.0, action, ("m0",)))
        assert {impl: nemesis.applicable(impl) for impl in IMPLS} == {
            "legacy_zk": NO_POLL_TIMER,
            "coordinator": None,
        }
    ctx = FakeContext(members={"m0": FakeProcess()})
    events = _perform(Step.of(3.0, "stall", ("m0",), value=5.0), ctx)
    assert [e["kind"] for e in events] == ["invoke", "skipped"] and events[1]["reason"] == NO_POLL_TIMER
    assert ctx.members["m0"].signals == []


def test_stall_and_unstall_signal_each_target_process_itself_and_complete_once_sent() -> None:
    ctx = FakeContext(
        impl="coordinator",
        unit_key="c0-coordinator-r0",
        members={"m0": FakeProcess(), "m1": FakeProcess(), "m2": FakeProcess()},
    )
    t0 = ctx.now_ns
    stall = _perform(Step.of(4.0, "stall", ("m0", "m2"), value=6.0), ctx)
    unstall = _perform(Step.of(10.0, "unstall", ("m0", "m2")), ctx)
    # SIGUSR2 then SIGUSR1 to the process itself (group=False: a child member hears it from its
    # adapter), never to m1; nothing waited on
    assert ctx.members["m0"].signals == [(signal.SIGUSR2, False), (signal.SIGUSR1, False)]
    assert ctx.members["m2"].signals == [(signal.SIGUSR2, False), (signal.SIGUSR1, False)]
    assert ctx.members["m1"].signals == [] and ctx.waited == []
    assert [(e["kind"], e["action"], e["trigger"], e["value"], e["ts_ns"]) for e in stall + unstall] == [
        ("invoke", "stall", True, 6.0, t0),
        ("complete", "stall", True, 6.0, t0),
        ("invoke", "unstall", False, None, t0),
        ("complete", "unstall", False, None, t0),
    ]
    assert all(e["targets"] == ["m0", "m2"] for e in stall + unstall)


def test_restart_broker_keeps_broker_zero_down_for_the_downtime() -> None:
    ctx = FakeContext()
    t0 = ctx.now_ns
    events = _perform(Step.of(1.0, "restart_broker", value=1.5), ctx)
    assert ctx.cluster.calls == ["stop 0", "start 0"]
    assert ctx.waited == [1.5]
    assert events[1]["ts_ns"] - t0 == 1_500_000_000


def test_add_partitions_pairs_carry_the_new_partition_count() -> None:
    pair = ActionPair(Step.of(1.0, "add_partitions", value=6.0), 1, Recorded(), lambda: 0)
    assert pair.fields["partitions"] == 6
    assert ActionPair(Step.of(1.0, "crash", ("m0",)), 2, Recorded(), lambda: 0).fields["partitions"] is None


def test_a_migration_start_passes_its_kind_and_props_and_both_events_carry_the_migration_fields() -> None:
    ctx = FakeContext()
    t0 = ctx.now_ns

    def boot(c: FakeContext) -> None:
        for n in ("r0", "r1"):
            c.ready.setdefault(n, c.now_ns)

    ctx.on_poll = boot
    props = (("offsets.storage", "kafka"), ("dual.commit.enabled", "true"))
    step = Step.of(
        9.5,
        "start_member",
        ("r0", "r1"),
        member_kind="legacy_zk",
        props=props,
        migration="rollback",
        migration_step=2,
    )
    events = _perform(step, ctx)
    want = {"offsets.storage": "kafka", "dual.commit.enabled": "true"}
    assert ctx.started_as == [("r0", "legacy_zk", want), ("r1", "legacy_zk", want)]
    assert [e["kind"] for e in events] == ["invoke", "complete"]
    for e in events:
        assert (e["member_kind"], e["props"], e["migration"], e["migration_step"]) == (
            "legacy_zk",
            want,
            "rollback",
            2,
        )
    assert events[1]["ready_ns"] == {"r0": t0, "r1": t0}


def test_a_plain_restart_leaves_kind_and_props_to_the_rig_and_its_events_carry_no_migration_fields() -> None:
    ctx = FakeContext()

    def boot(c: FakeContext) -> None:
        c.ready.setdefault("m1", c.now_ns)

    ctx.on_poll = boot
    events = _perform(Step.of(7.0, "start_member", ("m1",)), ctx)
    assert ctx.started_as == [("m1", None, None)]  # the rig keeps what m1 was started as
    for e in events:
        assert not {"member_kind", "props", "migration", "migration_step", "mode"} & set(e)
    stop = _perform(
        Step.of(5.0, "stop_member", ("m1",), migration="switch", migration_step=1, mode="rolling"), ctx
    )
    assert [(e["kind"], e["migration"], e["migration_step"], e["mode"]) for e in stop] == [
        ("invoke", "switch", 1, "rolling"),
        ("complete", "switch", 1, "rolling"),
    ]
    assert "member_kind" not in stop[0] and "props" not in stop[0]


# -- the ZooKeeper-leader faults on a fake ensemble -----------------------------------------------------
@dataclass
class FakeEnsemble:
    """Three servers; ``elect_after`` polls after the leader is lost, ``successor`` becomes the leader."""

    leader_now: int | None = 1
    successor: int = 2
    elect_after: int = 3
    paused: set[int] = field(default_factory=set)
    down: set[int] = field(default_factory=set)
    calls: list[str] = field(default_factory=list)
    polls: int = 0

    def leader(self) -> int | None:
        if self.leader_now is None:
            self.polls += 1
            if self.polls >= self.elect_after:
                self.leader_now = self.successor
        return self.leader_now

    def kill_server(self, index: int) -> None:
        self.calls.append(f"kill {index}")
        self.down.add(index)
        self.leader_now = None

    def start_server(self, index: int, timeout: float = 60.0) -> float:
        self.calls.append(f"start {index}")
        self.down.discard(index)
        return 0.8

    def pause(self, index: int, timeout: float = 10.0) -> None:
        self.calls.append(f"pause {index}")
        self.paused.add(index)
        self.leader_now = None

    def resume(self, index: int, timeout: float = 10.0) -> None:
        self.calls.append(f"resume {index}")
        self.paused.discard(index)


@dataclass
class EnsembleCluster(FakeCluster):
    zookeeper_ensemble: FakeEnsemble | None = field(default_factory=FakeEnsemble)

    def fault_controls(self) -> FaultControls:
        return FaultControls(ensemble=self.zookeeper_ensemble)


@pytest.mark.parametrize("impl", ["legacy_zk", "coordinator"])
def test_kill_zk_leader_kills_the_leader_and_completes_once_another_leads(impl: str) -> None:
    ctx = FakeContext(impl=impl, cluster=EnsembleCluster())
    ensemble = ctx.cluster.zookeeper_ensemble
    t0 = ctx.now_ns
    events = _perform(Step.of(10.0, "kill_zk_leader", value=3.0), ctx)
    assert ensemble.calls == ["kill 1"]
    assert [e["kind"] for e in events] == ["invoke", "complete"]
    done = events[1]
    assert (done["old_leader"], done["new_leader"], done["trigger"]) == (1, 2, True)
    # the fake clock polls every 0.1 s; the third poll of a lost leader sees the successor: 0.2 s
    assert done["elected_s"] == pytest.approx(0.2) and done["ts_ns"] - t0 == 200_000_000


def test_pause_zk_leader_then_resume_zk_server_resumes_that_same_server() -> None:
    ctx = FakeContext(cluster=EnsembleCluster())
    ensemble = ctx.cluster.zookeeper_ensemble
    paused = _perform(Step.of(20.0, "pause_zk_leader", value=2.0), ctx)
    resumed = _perform(Step.of(22.0, "resume_zk_server"), ctx)
    assert ensemble.calls == ["pause 1", "resume 1"]
    assert paused[1]["kind"] == "complete" and (paused[1]["old_leader"], paused[1]["new_leader"]) == (1, 2)
    assert resumed[1]["kind"] == "complete" and resumed[1]["server"] == 1 and not ensemble.paused


def test_restart_zk_server_starts_the_killed_server() -> None:
    ctx = FakeContext(cluster=EnsembleCluster())
    ensemble = ctx.cluster.zookeeper_ensemble
    _perform(Step.of(10.0, "kill_zk_leader", value=3.0), ctx)
    events = _perform(Step.of(13.0, "restart_zk_server"), ctx)
    assert ensemble.calls == ["kill 1", "start 1"]
    assert events[1]["kind"] == "complete" and events[1]["server"] == 1 and events[1]["rejoined_s"] == 0.8


def test_a_leader_that_is_never_replaced_fails_the_unit() -> None:
    ctx = FakeContext(cluster=EnsembleCluster(zookeeper_ensemble=FakeEnsemble(elect_after=10**9)))
    with pytest.raises(ActionFailed, match="no new ZooKeeper leader"):
        _perform(Step.of(10.0, "kill_zk_leader", value=3.0), ctx)


@pytest.mark.parametrize(
    "action", ["kill_zk_leader", "pause_zk_leader", "restart_zk_server", "resume_zk_server"]
)
def test_zk_actions_on_one_zookeeper_server_are_skipped_with_the_reason(action: str) -> None:
    for cluster in (FakeCluster(), EnsembleCluster(zookeeper_ensemble=None)):
        events = _perform(Step.of(10.0, action), FakeContext(cluster=cluster))
        assert [e["kind"] for e in events] == ["invoke", "skipped"]
        assert events[1]["reason"] == NEEDS_ENSEMBLE
