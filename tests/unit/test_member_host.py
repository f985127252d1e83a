"""Several coordinator members in one child process (harness.members.child_host, registry.make_host): a
hand-made child (a Python program printing the JSON lines with ``m``) stands for the JVM; the command line
of a host; which clients and scenarios may host; the rig's hosts of a coordinator unit."""

from __future__ import annotations

import sys
import threading
from pathlib import Path
from typing import Any

import pytest

from harness.members.child import ChildExited, ChildProtocolError
from harness.members.child_host import HostSink
from harness.members.clients.registry import CLIENT_SPECS, ChildClient, host_argv, make_host
from harness.members.recorder import MemberConfig
from harness.run.plan import make_plan
from harness.run.rig import UnitRig
from harness.run.runner import unit_members, unit_partitions
from harness.scenario import expand, load_scenario
from tests.support.recording import RecordingHistory
from tests.support.rigs import local_rig_spec
from tests.support.waiting import wait_until


def _config(name: str, **kw: Any) -> MemberConfig:
    return MemberConfig(bootstrap="127.0.0.1:1", group="g", topic="t", name=name, client="py-host", **kw)


#: Two members in one child: b (slot 1) is assigned first, then a; on SIGTERM only a prints ``stopped``
#: (b's is left to the adapter, as when a member's thread died).
HOST = """
import json, signal, sys
signal.pthread_sigmask(signal.SIG_BLOCK, {signal.SIGTERM})
def out(m, **e):
    print(json.dumps({**e, "m": m}), flush=True)
for m in (0, 1):
    out(m, kind="ready")
out(0, kind="started", argv=sys.argv[1:])
out(1, kind="started", argv=[])
out(1, kind="joined", generation=3, member="b-1")
out(1, kind="assigned", partitions=[2, 3])
out(0, kind="joined", generation=3, member="a-1")
out(0, kind="assigned", partitions=[0, 1])
signal.sigwait({signal.SIGTERM})
out(0, kind="revoked", partitions=[0, 1], lost=False)
out(0, kind="stopped", clean=True, close_ms=1.5)
"""


def test_a_hosts_lines_are_each_members_events_under_its_own_name(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setitem(
        CLIENT_SPECS, "py-host", ChildClient([sys.executable, "-c", HOST], kind="coordinator", hosts=True)
    )
    history = RecordingHistory()
    changes: list[tuple[str, str, list[int]]] = []

    def on_change_of(name: str) -> Any:
        return lambda what, partitions, _generation: changes.append((name, what, partitions))

    member = make_host([_config("a"), _config("b")], history, on_change_of)  # pyright: ignore[reportArgumentType]
    t = threading.Thread(target=member.run)
    t.start()
    wait_until(lambda: len(changes) == 2, timeout=30, what="both members assigned")
    member.stop(clean=True)
    t.join(30)
    assert not t.is_alive()
    assert changes == [("b", "assigned", [2, 3]), ("a", "assigned", [0, 1]), ("a", "revoked", [0, 1])]
    by = {n: [e for e in history.events if e["source"] == n] for n in ("a", "b")}
    assert len(by["a"]) + len(by["b"]) == len(history.events)
    assert [e["kind"] for e in by["a"]] == [
        *("ready", "started", "assigned", "assigned", "rebalance_end"),
        *("rebalance_begin", "revoked", "revoked", "stopped"),
    ]
    assert [e["kind"] for e in by["b"]] == [
        "ready",
        "started",
        "assigned",
        "assigned",
        "rebalance_end",
        "stopped",
    ]
    assert {e["member"] for e in by["b"] if e["kind"] == "assigned"} == {"b-1"}
    assert all("m" not in e for e in history.events)
    (a_started,) = [e for e in by["a"] if e["kind"] == "started"]
    assert a_started["argv"] == [
        *("--bootstrap", "127.0.0.1:1", "--group", "g", "--topic", "t", "--member", "a", "--member", "b"),
    ]
    a_stopped, b_stopped = by["a"][-1], by["b"][-1]
    assert (a_stopped["clean"], a_stopped["close_ms"]) == (True, 1.5)
    assert b_stopped["clean"] is True  # the adapter's, after the child ended as asked


def test_a_host_that_exits_non_zero_after_a_clean_stop_makes_the_silent_members_stop_unclean(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    # as HOST, then exit status 1: b printed no stopped (its thread died), so its stop was not clean
    monkeypatch.setitem(
        CLIENT_SPECS,
        "py-host",
        ChildClient([sys.executable, "-c", HOST + "sys.exit(1)\n"], kind="coordinator", hosts=True),
    )
    history = RecordingHistory()
    member = make_host([_config("a"), _config("b")], history)  # pyright: ignore[reportArgumentType]
    failed: list[BaseException] = []

    def run() -> None:
        try:
            member.run()
        except ChildExited as e:
            failed.append(e)

    t = threading.Thread(target=run)
    t.start()
    wait_until(lambda: len(history.of("assigned")) == 4, timeout=30, what="both members assigned")
    member.stop(clean=True)
    t.join(30)
    assert not t.is_alive()
    assert [str(e) for e in failed] == [f"the member's child {sys.executable} exited with status 1"]
    stopped = {e["source"]: (e["clean"], e.get("close_ms")) for e in history.of("stopped")}
    assert stopped == {"a": (True, 1.5), "b": (False, None)}


def test_a_line_for_no_member_of_the_host_is_a_protocol_error() -> None:
    sink = HostSink([_Sink(), _Sink()])
    sink.apply("ready", {"m": 1})
    for bad in ({}, {"m": 2}, {"m": True}, {"m": "0"}):
        with pytest.raises(ChildProtocolError, match="for no member of it"):
            sink.apply("ready", dict(bad))


class _Sink:
    def __init__(self) -> None:
        self.lines: list[tuple[str, dict[str, Any]]] = []

    def accepts(self, kind: str) -> bool:
        return True

    def apply(self, kind: str, fields: dict[str, Any]) -> None:
        self.lines.append((kind, fields))

    def stopped(self, clean: bool, **fields: Any) -> None:
        self.lines.append(("stopped", {"clean": clean, **fields}))


def test_a_hosts_command_line_names_each_member_and_a_static_ones_instance_id() -> None:
    configs = [
        _config("a", properties={"x.y": "1"}),
        _config("b", group_instance_id="b", properties={"x.y": "1"}),
    ]
    assert host_argv(["prog"], configs, Path("/r")) == [
        *("prog", "--bootstrap", "127.0.0.1:1", "--group", "g", "--topic", "t"),
        *("--member", "a", "--member", "b=b", "-X", "x.y=1", "--hold-until", "/r"),
    ]


def test_only_a_hosting_client_hosts_and_its_members_share_their_settings(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setitem(CLIENT_SPECS, "py-host", ChildClient(["prog"], kind="coordinator", hosts=True))
    history = RecordingHistory()
    with pytest.raises(ValueError, match="'kafka-python' cannot run several members in one process"):
        make_host([MemberConfig(bootstrap="b", group="g", topic="t", name="a")], history)  # pyright: ignore[reportArgumentType]
    with pytest.raises(ValueError, match="b differs"):
        make_host([_config("a"), _config("b", properties={"x": "1"})], history)  # pyright: ignore[reportArgumentType]


def test_a_coordinator_unit_of_a_hosting_client_hosts_its_untargeted_members(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    # the java properties are checked against the build's names: a fake build of 3.9.2
    monkeypatch.setenv("HERDLAB_CACHE_DIR", str(tmp_path))
    names = tmp_path / "java-member" / "3.9.2"
    names.mkdir(parents=True)
    (names / "config-names.json").write_text(
        '["session.timeout.ms","heartbeat.interval.ms","max.poll.interval.ms","auto.commit.interval.ms",'
        '"metadata.max.age.ms","partition.assignment.strategy"]'
    )
    overrides = [
        'implementations=["coordinator"]',
        'group.coordinator.client="java"',
        "group.coordinator.members_per_host=2",
    ]
    case = expand(load_scenario("herd-small", overrides))[0]
    plan = make_plan(case.scenario, unit_members(case, "coordinator"))
    rig = UnitRig(
        local_rig_spec(
            case.scenario, "coordinator", plan, unit_partitions(case, "coordinator"), Path("/none")
        )
    )
    targeted = {t for st in plan.steps for t in st.targets} | plan.isolated | set(plan.proxied)
    assert rig.host_of and set(rig.host_of) == set(plan.initial) - targeted
    assert all(len(group) <= 2 and name in group for name, (_, group) in rig.host_of.items())
    # a client that cannot host (a matrix over clients crosses it with members_per_host): one per process
    python = expand(
        load_scenario(
            "herd-small", ['implementations=["coordinator"]', "group.coordinator.members_per_host=2"]
        )
    )[0]
    python_plan = make_plan(python.scenario, unit_members(python, "coordinator"))
    python_rig = UnitRig(
        local_rig_spec(
            python.scenario, "coordinator", python_plan, unit_partitions(python, "coordinator"), Path("/none")
        )
    )
    assert python_rig.host_of == {}
