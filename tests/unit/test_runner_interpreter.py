"""The unit interpreter (:class:`harness.run.runner.UnitRunner`) on a fake rig and a fake clock.

The fake members write their histories as real ones do (JSON lines under the unit's ``events``
directory, read back by the runner's observer); a fake group coordinator hands the partitions out
round-robin to the running members on every membership change. Nothing sleeps: the fake clock
advances when the runner waits.
"""

from __future__ import annotations

import signal
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import pytest

from harness.faults.kafka_probe import OffsetsAnswer
from harness.faults.nemesis import FaultControls
from harness.history.writer import HistoryWriter, read_events
from harness.run.plan import make_plan
from harness.run.rig import UnitFailed
from harness.run.runner import RunOptions, Unit, UnitRunner
from harness.scenario import expand, load_scenario

T0_NS = 1_700_000_000_000_000_000


@dataclass
class FakeClock:
    t: float = 0.0  # seconds since the unit began

    def monotonic(self) -> float:
        return self.t

    def time_ns(self) -> int:
        return T0_NS + round(self.t * 1e9)

    def sleep(self, seconds: float) -> None:
        self.t += seconds


@dataclass
class FakeMember:
    rig: FakeRig
    name: str
    running: bool = True
    paused: bool = False
    signals: list[int] = field(default_factory=list)

    def alive(self) -> bool:
        return self.running

    def signal(self, sig: int, group: bool = True) -> None:
        self.signals.append(sig)
        if sig == signal.SIGSTOP:
            self.paused = True
        elif sig == signal.SIGCONT:
            self.paused = False
        elif sig in (signal.SIGTERM, signal.SIGKILL) and self.running:
            self.running = False
            if sig == signal.SIGTERM:
                self.rig.emit(self.name, "stopped")
            self.rig.rebalance()

    def wait(self, timeout: float | None = None) -> int | None:
        return None if self.running else 0

    def stop(self, grace: float = 5.0) -> None:
        self.running = False


@dataclass
class FakeCluster:
    zookeeper_connect: str = "127.0.0.1:2181"
    bootstrap: str = "127.0.0.1:9092"
    packets: int = 0
    calls: list[str] = field(default_factory=list)

    def zk_mntr(self) -> dict[str, Any]:
        self.packets += 10
        return {"zk_packets_received": self.packets, "zk_version": "3.9"}

    def stop_broker(self, index: int = 0) -> None:
        self.calls.append("stop_broker")

    def start_broker(self, index: int = 0) -> None:
        self.calls.append("start_broker")

    def fault_controls(self) -> FaultControls:
        return FaultControls()


class FakeRig:
    """Members that write ready / rebalance / assigned / revoked events; a producer that produced
    ``produced`` records of which the members processed ``processed``."""

    def __init__(
        self, events: Path, clock: FakeClock, partitions: int, produced: int, processed: int
    ) -> None:
        self.events, self.clock, self.partitions = events, clock, partitions
        self.produced, self.processed = produced, processed
        self.cluster: FakeCluster | None = None
        self.proxies = None
        self.members: dict[str, FakeMember] = {}
        self.claims: dict[str, set[int]] = {}
        self.writers: dict[str, HistoryWriter] = {}
        self.log: list[str] = []
        self.never_settle = False
        self.started_as: list[tuple[str, str | None, dict[str, str] | None]] = []
        self.prestarted_as: list[tuple[str, str | None, dict[str, str] | None]] = []

    def emit(self, name: str, kind: str, **fields: Any) -> None:
        if name not in self.writers:
            self.writers[name] = HistoryWriter(self.events / f"{name}.jsonl", source=name, role="member")
        self.writers[name].emit(kind, ts_ns=self.clock.time_ns(), **fields)

    def rebalance(self) -> None:
        live = sorted(n for n, m in self.members.items() if m.running)
        for n in live:
            self.emit(n, "rebalance_begin")
        for i, n in enumerate(live):
            mine = set(range(i, self.partitions, len(live)))
            for p in sorted(self.claims.get(n, set()) - mine):
                self.emit(n, "revoked", partition=p)
            for p in sorted(mine - self.claims.get(n, set())):
                self.emit(n, "assigned", partition=p)
            self.claims[n] = mine
            if not self.never_settle:
                self.emit(n, "rebalance_end", outcome="ok")

    def start(self) -> None:
        self.log.append("start")
        self.cluster = FakeCluster()

    def start_producer(self) -> None:
        self.log.append("start_producer")
        for o in range(self.produced):
            self.emit("producer", "produced", partition=0, offset=o)

    def stop_producer(self) -> None:
        self.log.append("stop_producer")

    def start_member(
        self, name: str, kind: str | None = None, props: Mapping[str, str] | None = None
    ) -> None:
        self.log.append(f"start_member {name}")
        self.started_as.append((name, kind, None if props is None else dict(props)))
        self.members[name] = FakeMember(self, name)
        self.claims[name] = set()
        self.emit(name, "ready")
        if name == "m0":
            for o in range(self.processed):
                self.emit(name, "record", partition=0, offset=o)
        self.rebalance()

    def prestart_member(
        self, name: str, kind: str | None = None, props: Mapping[str, str] | None = None
    ) -> bool:
        self.log.append(f"prestart_member {name}")
        self.prestarted_as.append((name, kind, None if props is None else dict(props)))
        return True

    def frozen(self, member: Any) -> bool:
        return bool(member.paused)

    def stop_processes(self) -> None:
        self.log.append("stop_processes")

    def broker_config(self) -> dict[str, Any]:
        return {"broker": "fake"}

    def stop_cluster(self) -> None:
        self.log.append("stop_cluster")
        for w in self.writers.values():
            w.close()


def _runner(
    tmp_path: Path, impl: str, overrides: list[str], produced: int = 0, processed: int = 0
) -> tuple[UnitRunner, FakeRig, FakeClock]:
    s = load_scenario("herd", [f'implementations=["{impl}"]', "matrix={}", *overrides])
    case = expand(s)[0]
    unit = Unit(0, case, impl, 0, tmp_path / "run" / "units" / f"c0-{impl}-r0", number=3, of=5)
    clock = FakeClock()
    rig = FakeRig(unit.dir / "events", clock, case.partitions, produced, processed)
    progress: list[dict[str, Any]] = []
    runner = UnitRunner(
        s, unit, RunOptions(out=tmp_path, progress=progress.append), "r1", rig=rig, clock=clock
    )
    runner.progress_seen = progress  # type: ignore[attr-defined]
    return runner, rig, clock


def _history(runner: UnitRunner) -> list[dict[str, Any]]:
    return read_events(runner.events_dir / "nemesis.jsonl")


def test_steps_run_at_their_offsets_from_stability_in_plan_order(tmp_path: Path) -> None:
    timeline = 'timeline=[{at="5s",action="join"},{at="10s",action="crash",select="oldest"}]'
    runner, rig, clock = _runner(tmp_path, "coordinator", ["group.members=2", "topic.partitions=4", timeline])
    outcome = runner.run()
    runner.close()
    h = _history(runner)
    assert [(e["kind"], e.get("label") or e.get("action")) for e in h] == [
        ("unit_start", None),
        ("zk_mntr", "start"),
        ("stable", None),
        ("zk_mntr", "stable"),
        ("zk_mntr", "invoke:1"),
        ("invoke", "join"),
        ("complete", "join"),
        ("zk_mntr", "invoke:2"),
        ("invoke", "crash"),
        ("complete", "crash"),
        ("zk_mntr", "settling_end"),
        ("settling_end", None),
        ("drained", None),
        ("zk_mntr", "end"),
    ]
    by = {(e["kind"], e.get("action")): e for e in h}
    stable = by[("stable", None)]["ts_ns"]
    # every member joined at t=0 and settled 3 s (the settle window) later: the first poll at or past it
    assert stable - T0_NS == pytest.approx(3e9, abs=0.1e9 + 1)
    assert by[("invoke", "join")]["ts_ns"] - stable == pytest.approx(5e9, abs=1e3)
    assert by[("invoke", "crash")]["ts_ns"] - stable == pytest.approx(10e9, abs=1e3)
    join = by[("complete", "join")]
    assert join["targets"] == ["j0"] and join["ready_ns"] == {"j0": by[("invoke", "join")]["ts_ns"]}
    assert by[("invoke", "crash")]["targets"] == ["m0"] and rig.members["m0"].signals == [signal.SIGKILL]
    assert [e["action_id"] for e in h if e["kind"] in ("invoke", "complete")] == [1, 1, 2, 2]
    # settling looks no earlier than one session timeout (6 s) after the last step
    settling_end = by[("settling_end", None)]["ts_ns"]
    assert settling_end - by[("complete", "crash")]["ts_ns"] >= 6e9
    assert by[("settling_end", None)]["settled"] is True
    assert by[("unit_start", None)] | {"ts_ns": 0} == {
        "ts_ns": 0,
        "source": "nemesis",
        "kind": "unit_start",
        "role": "harness",
        "topic": "herd",
        "group": "herd",
        "partitions": 4,
        "members": ["m0", "m1"],
        "case": runner.unit.case.label,
        "impl": "coordinator",
        "repetition": 0,
    }
    assert outcome == {
        "unit": "c0-coordinator-r0",
        "case": runner.unit.case.label,
        "impl": "coordinator",
        "repetition": 0,
        "broker_config": {"broker": "fake"},  # the rig's, as it reported it after its start
        "settled_at_end": True,
        "drained": True,
    }
    assert rig.log == [
        "start",
        "start_producer",
        "start_member m0",
        "start_member m1",
        # the joiner starts up with the initial members, held; its join releases it
        "prestart_member j0",
        "start_member j0",
        "stop_producer",
        "stop_processes",
        "stop_cluster",
    ]
    assert rig.prestarted_as == [("j0", None, None)]


def test_progress_reports_each_phase_with_the_groups_counts(tmp_path: Path) -> None:
    runner, _rig, _clock = _runner(
        tmp_path, "legacy_zk", ["group.members=2", "topic.partitions=2", "timeline=[]"]
    )
    runner.run()
    runner.close()
    seen: list[dict[str, Any]] = runner.progress_seen  # type: ignore[attr-defined]
    phases = list(dict.fromkeys(p["phase"] for p in seen))
    # no timeline: nothing is waited for (so nothing reported) between stability and settling
    assert phases == ["joining", "settling", "draining"]
    last_joining = [p for p in seen if p["phase"] == "joining"][-1]
    assert last_joining | {"run_dir": ""} == {
        "run_dir": "",
        "unit": "c0-legacy_zk-r0",
        "case": runner.unit.case.label,
        "impl": "legacy_zk",
        "repetition": 0,
        "phase": "joining",
        "number": 3,  # the unit's place in its run, as the runner numbered it
        "of": 5,
        "members_up": 2,
        "owned": 2,
        "partitions": 2,
        "produced": 0,
        "lag": 0,
    }
    assert seen[0]["run_dir"] == str(tmp_path / "run")


def test_a_zookeeper_cut_on_the_coordinator_is_skipped_and_the_unit_goes_on(tmp_path: Path) -> None:
    timeline = 'timeline=[{at="2s",action="cut",target="zookeeper",duration="4s"}]'
    runner, rig, _clock = _runner(tmp_path, "coordinator", ["group.members=2", timeline])
    outcome = runner.run()
    runner.close()
    pairs = [(e["kind"], e["action"], e.get("reason")) for e in _history(runner) if "action" in e]
    assert pairs == [
        ("invoke", "cut", None),
        ("skipped", "cut", "coordinator members do not use ZooKeeper"),
        ("invoke", "heal", None),
        ("skipped", "heal", "coordinator members do not use ZooKeeper"),
    ]
    assert outcome["settled_at_end"] is True
    # the heal is no trigger: no mntr sample marks a window edge before it
    labels = [e["label"] for e in _history(runner) if e["kind"] == "zk_mntr"]
    assert labels == ["start", "stable", "invoke:1", "settling_end", "end"]


def test_a_coordinator_unit_snapshots_offsets_after_each_fault_end_settled_and_at_its_end(
    tmp_path: Path,
) -> None:
    timeline = (
        'timeline=[{at="2s",action="kill_coordinator",downtime="2s"},'
        '{at="20s",action="pause_coordinator",duration="3s"}]'
    )
    overrides = ["group.members=2", "topic.partitions=2", "cluster.brokers=3", timeline]
    runner, _rig, _clock = _runner(tmp_path, "coordinator", overrides)
    assert runner.snapshots is not None
    asked: list[tuple[str, str, str, int]] = []

    def fetch(bootstrap: str, group: str, topic: str, partitions: int, timeout: float) -> OffsetsAnswer:
        asked.append((bootstrap, group, topic, partitions))
        return OffsetsAnswer(1, {"herd/0": 5, "herd/1": -1})

    runner.snapshots.fetch = fetch
    runner.run()
    runner.close()
    h = _history(runner)
    snaps = [e for e in h if e["kind"] == "offsets_snapshot"]
    assert [e["label"] for e in snaps] == ["after:2", "after:4", "end"]
    assert asked == [("127.0.0.1:9092", "herd", "herd", 2)] * 3
    for e in snaps:
        assert (e["role"], e["group"], e["broker_id"], e["error"]) == ("harness", "herd", 1, None)
        assert e["offsets"] == {"herd/0": 5, "herd/1": -1} and e["impl"] == "coordinator"
    ts = {(e["kind"], e.get("action") or e.get("label")): e["ts_ns"] for e in h}
    # after the restart: no earlier than one session timeout (6 s), before the next fault (20 s)
    assert ts[("skipped", "restart_coordinator")] + 6e9 <= ts[("offsets_snapshot", "after:2")]
    assert ts[("offsets_snapshot", "after:2")] <= ts[("invoke", "pause_coordinator")]
    assert ts[("settling_end", None)] <= ts[("offsets_snapshot", "after:4")]
    assert ts[("drained", None)] <= ts[("offsets_snapshot", "end")]


def test_units_without_a_coordinator_fault_or_of_legacy_zk_take_no_offsets_snapshot(tmp_path: Path) -> None:
    kill = 'timeline=[{at="2s",action="kill_coordinator",downtime="2s"}]'
    legacy, _, _ = _runner(tmp_path / "a", "legacy_zk", ["group.members=2", "cluster.brokers=3", kill])
    plain, _, _ = _runner(tmp_path / "b", "coordinator", ["group.members=2", "cluster.brokers=3"])
    assert legacy.snapshots is None and plain.snapshots is None


def test_a_group_that_never_settles_fails_the_unit_after_the_stable_timeout(tmp_path: Path) -> None:
    runner, rig, clock = _runner(tmp_path, "coordinator", ["group.members=2", "stable_timeout=7s"])
    rig.never_settle = True  # members never finish their rebalance: nobody is live
    with pytest.raises(
        UnitFailed, match=r"^c0-coordinator-r0: group not stable after 7s \(0 live, 0/2 owned"
    ):
        runner.run()
    runner.close()
    assert clock.t == pytest.approx(7.0)
    assert [e["kind"] for e in _history(runner)] == ["unit_start", "zk_mntr", "zk_mntr"]


def test_draining_waits_for_every_produced_record_up_to_the_drain_bound(tmp_path: Path) -> None:
    runner, _rig, clock = _runner(
        tmp_path, "coordinator", ["group.members=1", "drain=4s", "timeline=[]"], produced=3, processed=2
    )
    outcome = runner.run()
    runner.close()
    drained = next(e for e in _history(runner) if e["kind"] == "drained")
    settling_end = next(e for e in _history(runner) if e["kind"] == "settling_end")
    assert drained["all_processed"] is False and outcome["drained"] is False
    assert drained["ts_ns"] - settling_end["ts_ns"] == pytest.approx(4e9, abs=1e3)


def test_a_drain_with_everything_processed_ends_at_once(tmp_path: Path) -> None:
    runner, _rig, _clock = _runner(
        tmp_path, "coordinator", ["group.members=1", "timeline=[]"], produced=3, processed=3
    )
    outcome = runner.run()
    runner.close()
    drained = next(e for e in _history(runner) if e["kind"] == "drained")
    settling_end = next(e for e in _history(runner) if e["kind"] == "settling_end")
    assert drained["all_processed"] is True and outcome["drained"] is True
    assert drained["ts_ns"] == settling_end["ts_ns"]


def test_the_plan_interpreted_is_the_pure_plan_of_the_case(tmp_path: Path) -> None:
    timeline = 'timeline=[{at="5s",action="leave",count=2}]'
    runner, rig, _clock = _runner(tmp_path, "legacy_zk", ["group.members=3", timeline])
    runner.run()
    runner.close()
    plan = make_plan(runner.unit.case.scenario, 3)
    invoke = next(e for e in _history(runner) if e["kind"] == "invoke")
    assert invoke["targets"] == list(plan.steps[0].targets)
    for n in plan.steps[0].targets:
        assert rig.members[n].signals == [signal.SIGTERM]


def test_a_switch_starts_coordinator_members_in_the_group_and_settling_waits_their_session_timeout(
    tmp_path: Path,
) -> None:
    # legacy session 20 s, coordinator session 7 s: after a switch the group ends with coordinator
    # members, so settling looks no earlier than 7 s (not 20 s) after the last step.
    timeline = (
        "timeline=[{at='4s', action='set_property', interval='3s', downtime='1s',"
        " properties={'offsets.storage'='kafka', 'dual.commit.enabled'=true}},"
        " {at='12s', action='switch', mode='all_at_once', downtime='1s'}]"
    )
    runner, rig, clock = _runner(
        tmp_path,
        "legacy_zk",
        [
            "group.members=2",
            "topic.partitions=2",
            "group.legacy_zk.zookeeper_session_timeout_ms=20000",
            "group.coordinator.session_timeout_ms=7000",
            timeline,
        ],
    )
    outcome = runner.run()
    runner.close()
    kafka = {"offsets.storage": "kafka", "dual.commit.enabled": "true"}
    assert rig.started_as == [
        ("m0", None, None),
        ("m1", None, None),
        ("m0", "legacy_zk", kafka),
        ("m1", "legacy_zk", kafka),
        ("c0", "coordinator", None),
        ("c1", "coordinator", None),
    ]
    assert rig.prestarted_as == []  # no join: the migration's members start at their steps
    h = _history(runner)
    pairs = [
        (e["kind"], e["action"], tuple(e["targets"]), e.get("migration"), e.get("migration_step"))
        for e in h
        if e["kind"] in ("invoke", "complete")
    ]
    assert pairs == [
        (k, a, t, m, n)
        for a, t, m, n in [
            ("stop_member", ("m0",), "set_property", 1),
            ("start_member", ("m0",), "set_property", 1),
            ("stop_member", ("m1",), "set_property", 1),
            ("start_member", ("m1",), "set_property", 1),
            ("stop_member", ("m0", "m1"), "switch", 2),
            ("start_member", ("c0", "c1"), "switch", 2),
        ]
        for k in ("invoke", "complete")
    ]
    by = {(e["kind"], e.get("action")): e for e in h}
    last = max(e["ts_ns"] for e in h if e["kind"] == "complete")
    wait = by[("settling_end", None)]["ts_ns"] - last
    assert 7e9 <= wait < 20e9
    assert outcome["settled_at_end"] is True


def test_an_initial_member_that_exits_fails_the_unit_at_once_with_its_last_log_line(tmp_path: Path) -> None:
    runner, rig, clock = _runner(tmp_path, "coordinator", ["group.members=2", "topic.partitions=2"])
    start = rig.start_member

    def start_and_die(name: str, kind: str | None = None, props: Mapping[str, str] | None = None) -> None:
        start(name, kind, props)
        if name == "m1":  # refused by its client: the process ends at once, saying why in its log
            rig.members[name].running = False
            rig.never_settle = True
            (runner.logs_dir / "m1.log").write_text("booting\nError: Invalid value for -X: bad\n\n")

    rig.start_member = start_and_die  # type: ignore[method-assign]
    t0 = clock.monotonic()
    with pytest.raises(
        UnitFailed, match=r"member m1 exited before the group was stable: Error: Invalid value"
    ):
        runner.run()
    runner.close()
    # not after stable_timeout (the herd scenario's 120 s): within the waiter's first polls
    assert clock.monotonic() - t0 < 5
