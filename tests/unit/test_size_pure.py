"""Runs at size, the pure parts: per-implementation member counts, who shares a gevent
host, the start-up figure's entry and line, the host command line."""

from __future__ import annotations

from pathlib import Path

import pytest

from harness.analysis.startup import start_up_field, start_up_line
from harness.kernel.errors import ConfigError
from harness.run.launch import Endpoints, host_groups, legacy_argv
from harness.run.plan import make_plan
from harness.run.rig import UnitRig
from harness.run.runner import planned_cases, unit_members, unit_partitions
from harness.scenario import expand, load_scenario
from tests.support.rigs import local_rig_spec


# -- scenario keys: [group.legacy_zk] members / [group.coordinator] members ----------------------------
def test_per_implementation_members_override_group_members_and_size_the_partitions() -> None:
    (case,) = expand(load_scenario("size"))
    assert (unit_members(case, "legacy_zk"), unit_members(case, "coordinator")) == (500, 200)
    # partitions = "members": as many as the unit's own initial members
    assert (unit_partitions(case, "legacy_zk"), unit_partitions(case, "coordinator")) == (500, 200)


def test_without_the_keys_both_implementations_get_group_members() -> None:
    (case,) = expand(load_scenario("herd", ["group.members=7", "topic.partitions=3"]))
    assert (unit_members(case, "legacy_zk"), unit_members(case, "coordinator")) == (7, 7)
    assert (unit_partitions(case, "legacy_zk"), unit_partitions(case, "coordinator")) == (3, 3)


def test_only_one_implementation_overridden_leaves_the_other_on_group_members() -> None:
    (case,) = expand(load_scenario("herd", ["group.members=7", "group.legacy_zk.members=12"]))
    assert (unit_members(case, "legacy_zk"), unit_members(case, "coordinator")) == (12, 7)


@pytest.mark.parametrize(
    ("override", "says"),
    [
        ("group.coordinator.members=0", "group.coordinator.members"),
        ("group.legacy_zk.members=-3", "group.legacy_zk.members"),
        ("group.legacy_zk.members_per_host=-1", "group.legacy_zk.members_per_host"),
    ],
)
def test_bad_member_counts_are_one_line_errors(override: str, says: str) -> None:
    with pytest.raises(ConfigError) as e:
        load_scenario("size", [override])
    assert says in str(e.value) and "\n" not in str(e.value)


def test_per_implementation_members_with_a_members_axis_is_refused() -> None:
    # herd's group.members is the list [10, 25, 50]: which would the override replace?
    with pytest.raises(ConfigError, match="group.legacy_zk.members cannot be combined with a list"):
        load_scenario("herd", ["group.legacy_zk.members=30"])


def test_planning_checks_each_implementations_member_count() -> None:
    # 2 legacy members cannot lose 3 in one leave; the coordinator's 5 can
    with pytest.raises(ConfigError, match="wants 3 members but only 2"):
        planned_cases(
            load_scenario(
                "herd",
                [
                    "group.members=5",
                    "group.legacy_zk.members=2",
                    'timeline=[{at="5s",action="leave",count=3}]',
                ],
            )
        )


# -- who shares a gevent host -------------------------------------------------------------------------
def test_host_groups_take_untargeted_members_in_start_order() -> None:
    names = [f"m{i}" for i in range(7)]
    # m1 and m4 are hit by faults: alone; 5 others, 2 per host -> 2, 2, 1
    assert host_groups(names, {"m1", "m4"}, 2) == [("m0", "m2"), ("m3", "m5"), ("m6",)]
    assert host_groups(names, set(), 7) == [tuple(names)]
    assert host_groups(names, set(), 0) == []
    assert host_groups(names, set(names), 3) == []
    with pytest.raises(ValueError, match=">= 0"):
        host_groups(names, set(), -1)


def _rig(scenario_name: str, impl: str, *overrides: str) -> UnitRig:
    (case,) = expand(load_scenario(scenario_name, list(overrides)))
    plan = make_plan(case.scenario, unit_members(case, impl))
    return UnitRig(
        local_rig_spec(case.scenario, impl, plan, unit_partitions(case, impl), Path("/nonexistent"))
    )


def test_size_rig_hosts_every_untargeted_legacy_member_and_no_targeted_one() -> None:
    rig = _rig("size", "legacy_zk")
    plan = rig.spec.plan
    targeted = {t for st in plan.steps for t in st.targets}
    # the leave's and the crash's targets are initial members (the join's j0 is not initial)
    hit = targeted & set(plan.initial)
    assert len(hit) == 2
    assert set(rig.host_of) == set(plan.initial) - hit
    # 498 hosted members, 50 per host: 9 full hosts and one of 48
    sizes = sorted({(h, len(g)) for h, g in rig.host_of.values()})
    assert [n for _, n in sizes] == [50] * 9 + [48]
    assert all(name in group for name, (_, group) in rig.host_of.items())


def test_coordinator_units_and_the_default_host_nobody() -> None:
    assert _rig("size", "coordinator").host_of == {}
    assert _rig("herd", "legacy_zk", "group.members=6").host_of == {}  # members_per_host = 0


def test_a_host_runs_the_scenarios_legacy_settings_on_gevent_without_fetching(tmp_path: Path) -> None:
    from harness.run.launch import start_host

    (case,) = expand(load_scenario("size", ["group.legacy_zk.rebalance_max_retries=9"]))
    ep = Endpoints(zookeeper="127.0.0.1:1", bootstrap="127.0.0.1:2")
    single = legacy_argv(case.scenario, "m0", ep, tmp_path / "m0.jsonl", "g", "t")
    assert single[single.index("--handler") + 1] == "threading"
    with pytest.raises(ValueError, match="no member"):
        start_host(case.scenario, "host0", [], ep, tmp_path, tmp_path, "g", "t")


def test_host_argv_is_the_single_members_with_gevent_names_and_no_fetch(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    import harness.run.launch as launch

    started: list[list[str]] = []

    class Service:
        def __init__(self, name: str, argv: list[str], *rest: object) -> None:
            self.name, self.argv = name, argv

        def start(self) -> Service:
            started.append(self.argv)
            return self

    monkeypatch.setattr(launch, "MemberService", Service)
    (case,) = expand(load_scenario("size", ["group.legacy_zk.rebalance_max_retries=9"]))
    ep = Endpoints(zookeeper="127.0.0.1:1", bootstrap="127.0.0.1:2")
    launch.start_host(case.scenario, "host3", ["m1", "m5"], ep, tmp_path, tmp_path, "g", "t")
    (argv,) = started
    assert argv[argv.index("--handler") + 1] == "gevent"
    assert argv[argv.index("--names") + 1] == "m1,m5" and "--no-fetch" in argv
    assert argv[argv.index("--history") + 1] == str(tmp_path / "host3.jsonl")
    assert "rebalance.max.retries=9" in argv


# -- the start-up entry and line ----------------------------------------------------------------------
def test_start_up_entry_and_line() -> None:
    pu = {
        "startup_members_ready": 500.0,
        "startup_first_ready_s": 0.4321,
        "startup_ready_s": 3.14159,
        "startup_stable_s": 42.05,
    }
    entry = start_up_field(pu)
    assert entry == {"members_ready": 500, "first_ready_s": 0.432, "all_ready_s": 3.142, "stable_s": 42.05}
    assert start_up_line(entry) == "start-up: 500 members ready in 3.1 s, first stable after 42.0 s"
    never = start_up_field({k: v for k, v in pu.items() if k != "startup_stable_s"})
    assert start_up_line(never) == "start-up: 500 members ready in 3.1 s, never stable"
    assert start_up_field({}) is None and start_up_line(None) is None


@pytest.mark.parametrize("names", ["m1,m1", "m1,,m2", " "])
def test_a_host_refuses_repeated_or_empty_member_names_before_connecting(names: str) -> None:
    from harness.members.legacy_zk import legacy_zk

    args = ["--zookeeper", "127.0.0.1:1", "--group", "g", "--topic", "t", "--no-fetch", "--names", names]
    with pytest.raises(ConfigError, match="--names expects distinct names"):
        legacy_zk.main(args, standalone_mode=False)


def test_the_size_bench_attributes_a_process_to_its_unit_by_its_command_line() -> None:
    from harness.bench.size import unit_of

    member = [
        "python",
        "-m",
        "harness.members",
        "coordinator",
        "--history",
        "/o/size/r1/units/c0-coordinator-r0/events/m3.jsonl",
    ]
    zookeeper = [
        "java",
        "-Dlog4j2.configurationFile=/o/size/r1/units/c0-legacy_zk-r0/cluster/zk/log4j2.properties",
    ]
    assert unit_of(member) == "c0-coordinator-r0"
    assert unit_of(zookeeper) == "c0-legacy_zk-r0"
    assert unit_of(["java", "org.apache.spark.deploy.SparkSubmit", "pyspark-shell"]) is None


def test_the_size_bench_meter_sums_a_units_processes() -> None:
    import subprocess
    import sys

    from harness.bench.size import RigMeter

    argv = [sys.executable, "-c", "import sys; sys.stdin.read()", "/o/units/c0-legacy_zk-r0/events/m0.jsonl"]
    children = [subprocess.Popen(argv, stdin=subprocess.PIPE) for _ in range(2)]
    try:
        meter = RigMeter(every=1.0)
        meter.sample()
        u = meter.units["c0-legacy_zk-r0"]
        assert u.peak_procs == 2 and u.peak_rss > 0 and set(u.cpu) == {c.pid for c in children}
    finally:
        for c in children:
            c.communicate(b"")
