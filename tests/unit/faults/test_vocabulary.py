"""The nemesis's timeline actions: degraded networks (toxics), ZooKeeper restarts, broker-ZooKeeper cuts, from
the scenario through the plan to the nemesis's invoke / complete pair (fake cluster and proxies)."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import pytest

from harness.faults.actions import nemesis_for
from harness.faults.nemesis import ActionPair, FaultControls
from harness.faults.toxics import Toxic
from harness.run.plan import Step, make_plan
from harness.scenario.model import Scenario
from tests.support.recording import RecordingHistory


def _scenario(*timeline: dict[str, Any], **rest: Any) -> Scenario:
    return Scenario.model_validate({"name": "t", "group": {"members": 4}, "timeline": list(timeline), **rest})


# -- the scenario ---------------------------------------------------------------------------------------
def test_toxic_actions_take_toxiproxys_names_and_defaults() -> None:
    s = _scenario(
        {
            "action": "latency",
            "at": "5s",
            "target": "zookeeper",
            "duration": "10s",
            "latency": 250,
            "jitter": 50,
        },
        {"action": "bandwidth", "at": "20s", "target": "broker", "duration": "5s", "rate": 64},
    )
    lat, bw = s.timeline
    assert lat.toxic_attributes() == {"kind": "latency", "stream": "downstream", "latency": 250, "jitter": 50}  # type: ignore[union-attr]
    assert bw.toxic_attributes() == {"kind": "bandwidth", "stream": "downstream", "rate": 64}  # type: ignore[union-attr]


@pytest.mark.parametrize(
    ("entry", "rest", "message"),
    [
        ({"action": "latency", "target": "broker", "duration": 1, "latency": 10, "jitter": 20}, {}, "jitter"),
        ({"action": "restart_zk", "server": 3}, {"zookeeper": {"servers": 3}}, "server 3 does not exist"),
        ({"action": "cut_broker_zk", "broker": 1, "duration": 5}, {}, "broker 1 does not exist"),
        (
            {"action": "restart_zk"},
            {"cluster": {"broker": "tansu"}, "implementations": ["coordinator"]},
            "need cluster.broker = 'herdlab'",
        ),
    ],
)
def test_bad_new_actions_are_refused(entry: dict[str, Any], rest: dict[str, Any], message: str) -> None:
    with pytest.raises(ValueError, match=message):
        _scenario({"at": "5s", **entry}, **rest)


def test_a_zookeeper_restart_during_a_leader_fault_is_refused() -> None:
    with pytest.raises(ValueError, match="restart_zk at 8s starts before the kill_zk_leader at 5s ended"):
        _scenario(
            {"action": "kill_zk_leader", "at": "5s", "downtime": "5s"},
            {"action": "restart_zk", "at": "8s"},
            zookeeper={"servers": 3},
        )


# -- the plan -------------------------------------------------------------------------------------------
def test_a_toxic_is_a_trigger_on_chosen_members_proxies_and_is_removed_after_its_duration() -> None:
    s = _scenario(
        {
            "action": "slow_close",
            "at": "5s",
            "target": "zookeeper",
            "duration": "7s",
            "delay": 300,
            "count": 2,
        }
    )
    plan = make_plan(s, 4)
    on, off = plan.steps
    toxic = {"kind": "slow_close", "stream": "downstream", "delay": 300}
    assert (on.at, on.kind, on.target, on.trigger, dict(on.extra)) == (
        5.0,
        "slow_close",
        "zookeeper",
        True,
        {"toxic": toxic},
    )
    assert (off.at, off.kind, off.targets, off.trigger, dict(off.extra)) == (
        12.0,
        "remove_toxic",
        on.targets,
        False,
        {"toxic": toxic},
    )
    assert len(on.targets) == 2
    assert all(plan.proxied[n] == {"zookeeper"} for n in on.targets)  # they run behind proxies
    assert set(on.targets) <= plan.isolated


def test_restart_zk_draws_a_random_server_from_the_seed() -> None:
    s = _scenario({"action": "restart_zk", "at": "5s", "downtime": "2s"}, zookeeper={"servers": 3})
    servers = {dict(make_plan(s, 4, seed=seed).steps[0].extra)["server"] for seed in range(30)}
    assert servers == {0, 1, 2}
    assert make_plan(s, 4, seed=9).steps == make_plan(s, 4, seed=9).steps
    (step,) = make_plan(_scenario({"action": "restart_zk", "at": "5s", "server": 0}), 4).steps
    assert (step.kind, step.value, dict(step.extra), step.trigger) == ("restart_zk", 1.0, {"server": 0}, True)


def test_cut_broker_zk_is_a_cut_and_a_heal_of_one_broker() -> None:
    s = _scenario(
        {"action": "cut_broker_zk", "at": "5s", "duration": "9s", "broker": 1}, cluster={"brokers": 2}
    )
    cut, heal = make_plan(s, 4).steps
    assert (cut.kind, cut.at, cut.trigger, dict(cut.extra)) == ("cut_broker_zk", 5.0, True, {"broker_id": 1})
    assert (heal.kind, heal.at, heal.trigger, dict(heal.extra)) == (
        "heal_broker_zk",
        14.0,
        False,
        {"broker_id": 1},
    )


# -- the nemesis ----------------------------------------------------------------------------------------
@dataclass
class FakeProxies:
    calls: list[tuple[str, str, Any]] = field(default_factory=list)

    def cut(self, name: str) -> None:
        self.calls.append(("cut", name, None))

    def restore(self, name: str) -> None:
        self.calls.append(("restore", name, None))

    def add_toxic(self, name: str, toxic: Toxic) -> None:
        self.calls.append(("add", name, toxic))

    def remove_toxic(self, name: str, kind: str) -> None:
        self.calls.append(("remove", name, kind))


@dataclass
class FakeZooKeeper:
    calls: list[str] = field(default_factory=list)

    def stop_server(self, index: int) -> None:
        self.calls.append(f"stop {index}")

    def start_server(self, index: int, timeout: float = 60.0) -> float:
        self.calls.append(f"start {index}")
        return 0.5


@dataclass
class FakeCluster:
    zookeeper: FakeZooKeeper | None = field(default_factory=FakeZooKeeper)
    zookeeper_connect: str = "127.0.0.1:2181"
    bootstrap: str = "127.0.0.1:9092"
    brokers_cut: set[int] = field(default_factory=set)
    calls: list[str] = field(default_factory=list)

    def stop_broker(self, index: int = 0) -> None: ...

    def start_broker(self, index: int = 0) -> None: ...

    def kill_broker(self, broker_id: int) -> None: ...

    def cut_broker_zookeeper(self, broker_id: int) -> None:
        self.calls.append(f"cut {broker_id}")

    def heal_broker_zookeeper(self, broker_id: int) -> None:
        self.calls.append(f"heal {broker_id}")

    def fault_controls(self) -> FaultControls:
        """Broker faults and a restartable ZooKeeper server (the local backend's)."""
        return FaultControls(brokers=self, zookeeper_restart=self.zookeeper)  # type: ignore[arg-type]


@dataclass
class FakeContext:
    impl: str = "legacy_zk"
    unit_key: str = "u"
    logs_dir: Path = Path("/logs")
    stable_timeout: float = 5.0
    topic: str = "herd"
    group: str = "g"
    members: dict[str, Any] = field(default_factory=dict)
    cluster: Any = field(default_factory=FakeCluster)
    proxies: FakeProxies | None = field(default_factory=FakeProxies)
    now_ns: int = 1_000_000_000_000
    waited: list[float] = field(default_factory=list)

    def wait(self, seconds: float, until: Callable[[], bool] | None = None) -> bool:
        self.waited.append(seconds)
        self.now_ns += int(seconds * 1e9)
        return until is None or until()

    def time_ns(self) -> int:
        return self.now_ns


def _perform(step: Step, ctx: FakeContext) -> list[dict[str, Any]]:
    history = RecordingHistory()
    nemesis_for(step).run(ActionPair(step, 3, history, ctx.time_ns, {"impl": ctx.impl}), ctx)  # type: ignore[arg-type]
    return history.events


def test_a_toxic_goes_on_each_targets_proxy_and_both_events_carry_it() -> None:
    toxic = {"kind": "latency", "stream": "both", "latency": 200, "jitter": 10}
    ctx = FakeContext()
    events = _perform(
        Step.of(5.0, "latency", ("m0", "m2"), target="zookeeper", value=8.0, extra={"toxic": toxic}), ctx
    )
    assert [e["kind"] for e in events] == ["invoke", "complete"]
    assert all(e["toxic"] == toxic and e["targets"] == ["m0", "m2"] for e in events)
    t = Toxic("latency", stream="both", latency=200, jitter=10)
    assert ctx.proxies is not None
    assert ctx.proxies.calls == [("add", "m0-zookeeper", t), ("add", "m2-zookeeper", t)]
    _perform(Step.of(13.0, "remove_toxic", ("m0",), target="zookeeper", extra={"toxic": toxic}), ctx)
    assert ctx.proxies.calls[-1] == ("remove", "m0-zookeeper", "latency")


def test_a_zookeeper_toxic_on_the_coordinator_is_skipped_as_a_cut_is() -> None:
    ctx = FakeContext(impl="coordinator")
    toxic = {"kind": "reset_peer", "stream": "downstream", "timeout": 0}
    events = _perform(Step.of(5.0, "reset_peer", ("m0",), target="zookeeper", extra={"toxic": toxic}), ctx)
    assert [e["kind"] for e in events] == ["invoke", "skipped"]
    assert ctx.proxies is not None and ctx.proxies.calls == []


def test_restart_zk_stops_waits_and_starts_the_server_then_completes() -> None:
    ctx = FakeContext()
    events = _perform(Step.of(5.0, "restart_zk", value=2.0, extra={"server": 0}), ctx)
    assert ctx.cluster.zookeeper.calls == ["stop 0", "start 0"]
    assert ctx.waited == [2.0]
    invoke, complete = events
    assert (invoke["kind"], invoke["server"], complete["kind"], complete["server"]) == (
        "invoke",
        0,
        "complete",
        0,
    )
    assert complete["restarted_s"] == pytest.approx(2.0)  # the fake clock moves only while waiting


def test_restart_zk_without_a_local_zookeeper_is_skipped() -> None:
    ctx = FakeContext(cluster=FakeCluster(zookeeper=None))
    events = _perform(Step.of(5.0, "restart_zk", value=1.0, extra={"server": 0}), ctx)
    assert [e["kind"] for e in events] == ["invoke", "skipped"]
    assert events[1]["reason"] == "needs the local backend's ZooKeeper"


@pytest.mark.parametrize("impl", ["legacy_zk", "coordinator"])
def test_cut_broker_zk_cuts_and_heals_the_named_broker_on_both_sides(impl: str) -> None:
    ctx = FakeContext(impl=impl)
    cut = _perform(Step.of(5.0, "cut_broker_zk", value=9.0, extra={"broker_id": 1}), ctx)
    heal = _perform(Step.of(14.0, "heal_broker_zk", extra={"broker_id": 1}), ctx)
    assert ctx.cluster.calls == ["cut 1", "heal 1"]
    assert [e["kind"] for e in cut + heal] == ["invoke", "complete", "invoke", "complete"]
    assert {e["broker_id"] for e in cut + heal} == {1}
