"""End to end: small versions of every built-in scenario, both implementations, asserted on the history.

Sizes and timeouts are shrunk (2 or 3 members, short sessions) so the whole file stays within a few
minutes; the behaviour asserted is what each scenario exists to show. Runs share one cluster
(``shared_cluster``, the ``external`` backend) unless they assert on the broker's own history or
restart the broker.

Elsewhere, so as not to run the same scenario twice: a member cut off from ZooKeeper (legacy_zk) or the
broker (coordinator) whose partitions the others take over, in
``tests/integration/analysis/test_split_brain_real.py``.
"""

from __future__ import annotations

import os
import signal
import subprocess
import sys
from collections import defaultdict
from pathlib import Path
from typing import Any

import psutil
import pytest

from harness.history.schema import read_parquet
from harness.kernel.ownership import GroupView
from harness.run.runner import RunOptions, run_scenario
from harness.scenario import load_scenario
from tests.support.runs import FAST, SharedCluster
from tests.support.waiting import wait_until

IMPLS = ["coordinator", "legacy_zk"]


def _run(
    tmp_path: Path, scenario: str, impl: str, extra: list[str], cluster: SharedCluster | None = None
) -> tuple[list[dict[str, Any]], dict[str, Any]]:
    """Run ``scenario`` on ``cluster`` (the module's shared one), or on a local cluster of its own when
    None (for assertions on the broker's own history, or a broker restart)."""
    s = load_scenario(scenario, [*FAST, f'implementations=["{impl}"]', *extra])
    result = run_scenario(s, cluster.options(tmp_path) if cluster else RunOptions(out=tmp_path))
    assert len(result.units) == 1
    unit = result.units[0]
    assert "failed" not in unit, unit.get("failed")
    unit["run_dir"] = result.run_dir
    return read_parquet(result.run_dir / "history.parquet"), unit


def _final_ownership(events: list[dict[str, Any]]) -> GroupView:
    o = GroupView()
    # Ownership as it stood at the end of the settling phase (before the teardown's own revokes).
    for e in events:
        if e["kind"] == "settling_end":
            break
        o.apply(e)
    return o


def _assert_complete(events: list[dict[str, Any]]) -> None:
    produced = {(e["partition"], e["offset"]) for e in events if e["kind"] == "produced"}
    processed = {(e["partition"], e["offset"]) for e in events if e["kind"] == "record"}
    assert produced, "the producer produced nothing"
    assert produced <= processed, f"{len(produced - processed)} produced records were never processed"


def _nemesis(events: list[dict[str, Any]], action: str, kind: str = "invoke") -> dict[str, Any]:
    """The nemesis ``invoke`` (or ``complete``) event of the first ``action``."""
    return next(e for e in events if e["kind"] == kind and e.get("action") == action)


@pytest.mark.long  # moved out of the default run (12-minute budget); CI's long step runs it
@pytest.mark.parametrize("impl", IMPLS)
def test_herd_join_leave_crash(tmp_path: Path, impl: str, shared_cluster: SharedCluster) -> None:
    timeline = 'timeline=[{at="1s",action="join"},{at="5s",action="leave"},{at="9s",action="crash"}]'
    events, unit = _run(
        tmp_path, "herd", impl, ["group.members=3", "topic.partitions=4", timeline], shared_cluster
    )
    _assert_complete(events)
    assert unit["settled_at_end"]
    o = _final_ownership(events)
    assert o.owned_once(), o.summary()
    joiner = _nemesis(events, "join")["targets"][0]
    left = _nemesis(events, "leave")["targets"][0]
    crashed = _nemesis(events, "crash")["targets"][0]
    by_source = defaultdict(set)
    for e in events:
        by_source[e["source"]].add(e["kind"])
    assert "started" in by_source[joiner]
    assert "stopped" in by_source[left]  # a clean leave
    assert "stopped" not in by_source[crashed]  # SIGKILL: no goodbye
    assert left not in o.live and crashed not in o.live


@pytest.mark.long  # moved out of the default run (12-minute budget); CI's long step runs it
@pytest.mark.parametrize("impl", IMPLS)
def test_split_brain_pause_moves_partitions_and_a_zombie_is_caught(
    tmp_path: Path, impl: str, shared_cluster: SharedCluster
) -> None:
    timeline = 'timeline=[{at="1s",action="pause",duration="8s",select="oldest"}]'
    events, unit = _run(
        tmp_path, "split-brain", impl, ["group.members=3", "topic.partitions=6", timeline], shared_cluster
    )
    _assert_complete(events)
    pause = _nemesis(events, "pause")
    resume = _nemesis(events, "resume")
    zombie = pause["targets"][0]
    zombie_parts = {
        e["partition"]
        for e in events
        if e["kind"] == "assigned" and e["source"] == zombie and e["ts_ns"] < pause["ts_ns"]
    }
    assert zombie_parts
    # While the zombie sleeps past its session, the others take its partitions over.
    taken = {
        e["partition"]
        for e in events
        if e["kind"] == "assigned" and e["source"] != zombie and pause["ts_ns"] < e["ts_ns"] < resume["ts_ns"]
    }
    assert zombie_parts <= taken
    if impl == "coordinator":
        # Its late commit after waking is refused by the broker (it is no longer a member).
        late = [e for e in events if e["kind"] == "commit_rejected" and e["ts_ns"] > resume["ts_ns"]]
        assert late, "the zombie's late commit was not rejected"
    else:
        # The legacy zombie learns its session expired and rejoins.
        rejoined = [
            e
            for e in events
            if e["source"] == zombie and e["kind"] == "assigned" and e["ts_ns"] > resume["ts_ns"]
        ]
        expired = [
            e
            for e in events
            if e["source"] == zombie and e["ts_ns"] > resume["ts_ns"] and "expire" in str(e.get("kind"))
        ]
        assert rejoined or expired
    assert unit["settled_at_end"]


@pytest.mark.slow
@pytest.mark.long  # about 30 s each: opt-in, CI runs them (.ci/run), the default run stays under 12 minutes
@pytest.mark.parametrize("impl", IMPLS)
@pytest.mark.parametrize("static", [False, True], ids=["dynamic", "static"])
def test_rolling_restart(tmp_path: Path, impl: str, static: bool) -> None:
    if impl == "legacy_zk" and static:
        pytest.skip("static membership is a coordinator feature (KIP-345)")
    # Two members: a window per member is what is asserted, and a third restart would only add 10 s.
    # Each restart must settle before the next stop (the window ends there): a clean stop with its
    # process exit, the downtime (1 s), a new process booting (seconds when the machine is loaded), the
    # rebalance and the settle window (1 s) must fit in the interval with room for a loaded machine.
    timeline = 'timeline=[{at="1s",action="rolling_restart",interval="10s",downtime="1s"}]'
    extra = [
        "group.members=2",
        "topic.partitions=3",
        timeline,
        f"group.coordinator.static_membership={str(static).lower()}",
    ]
    if static:  # a restart (1 s down + a process start-up) must come back within the session
        extra.append("group.coordinator.session_timeout_ms=10000")
    events, unit = _run(tmp_path, "rolling-restart", impl, extra)
    _assert_complete(events)
    restarts = [e for e in events if e["kind"] == "complete" and e["action"] == "start_member"]
    assert len(restarts) == 2
    assert unit["settled_at_end"]
    # One compound window per member, from its stop until the group settled after its restart:
    # every one of them has a finite latency.
    from harness.analysis import analyze_run

    m = analyze_run(unit["run_dir"])
    (u,) = m["units"]
    assert [(t["action"], t["outcome"]) for t in u["triggers"]] == [("stop_member", "settled")] * 2
    assert all(t["latency_s"] > 0 for t in u["triggers"])
    if impl == "coordinator":
        stable_at = next(e["ts_ns"] for e in events if e["kind"] == "stable")
        rebalances = [
            e["generation"]
            for e in events
            if e["kind"] == "group_state" and e.get("to_state") == "Stable" and e["ts_ns"] > stable_at
        ]
        if static:
            # Static members come back within their session: the group never rebalances.
            assert rebalances == [], rebalances
            fenced = [e for e in events if e["kind"] == "member_removed" and e.get("reason") == "fenced"]
            assert len(fenced) == 2  # each old incarnation's member id is fenced
        else:
            assert len(rebalances) >= 2, rebalances  # every restart costs the whole group a rebalance


@pytest.mark.slow
@pytest.mark.parametrize("impl", IMPLS)
def test_partition_growth(tmp_path: Path, impl: str, shared_cluster: SharedCluster) -> None:
    timeline = 'timeline=[{at="1s",action="add_partitions",to=6}]'
    events, unit = _run(
        tmp_path,
        "partition-growth",
        impl,
        ["group.members=3", "topic.partitions=3", timeline],
        shared_cluster,
    )
    _assert_complete(events)
    assert unit["settled_at_end"]
    o = _final_ownership(events)
    assert o.partitions == 6 and o.owned_once(), o.summary()
    assert {p for (p, _o) in {(e["partition"], e["offset"]) for e in events if e["kind"] == "record"}} >= set(
        range(3, 6)
    )


def test_malformed_scenario_gives_one_line_and_runs_nothing(tmp_path: Path) -> None:
    bad = tmp_path / "bad.toml"
    bad.write_text('name = "bad"\n[group]\nmembers = "many"\n')
    herdlab = os.path.join(os.path.dirname(sys.executable), "herdlab")
    r = subprocess.run(
        [herdlab, "run", str(bad), "--out", str(tmp_path / "out")], capture_output=True, text=True, timeout=60
    )
    assert r.returncode == 2
    assert r.stderr.strip().count("\n") == 0 and "group.members" in r.stderr and "Traceback" not in r.stderr
    assert not (tmp_path / "out").exists()


@pytest.mark.slow
def test_interrupted_run_keeps_its_history_and_leaves_no_process(tmp_path: Path) -> None:
    herdlab = os.path.join(os.path.dirname(sys.executable), "herdlab")
    argv = [herdlab, "run", "herd", "--out", str(tmp_path), *[a for x in FAST for a in ("--set", x)]]
    argv += ["--set", "group.members=2", "--set", 'implementations=["coordinator"]']
    proc = subprocess.Popen(argv, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
    descendants: set[int] = set()
    try:
        assert proc.stdout is not None
        for line in proc.stdout:
            descendants |= {p.pid for p in psutil.Process(proc.pid).children(recursive=True)}
            if ": timeline," in line:
                break
        descendants |= {p.pid for p in psutil.Process(proc.pid).children(recursive=True)}
        assert len(descendants) >= 4  # ZooKeeper, broker, producer, members
        proc.send_signal(signal.SIGINT)
        out = proc.stdout.read()
        assert proc.wait(60) == 130, out
        assert "interrupted; what was recorded is in" in out
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait()

    def gone(pid: int) -> bool:
        try:
            return psutil.Process(pid).status() == psutil.STATUS_ZOMBIE
        except psutil.NoSuchProcess:
            return True

    wait_until(lambda: all(gone(p) for p in descendants), timeout=15, what="every process of the run to exit")
    runs = list((tmp_path / "herd").iterdir())
    assert len(runs) == 1
    events = read_parquet(runs[0] / "history.parquet")
    assert any(e["kind"] == "stable" for e in events)
    assert (runs[0] / "manifest.json").exists()


@pytest.mark.slow
def test_expired_zookeeper_session_makes_a_legacy_member_re_register(
    tmp_path: Path, shared_cluster: SharedCluster
) -> None:
    timeline = 'timeline=[{at="1s",action="expire",select="oldest"}]'
    events, unit = _run(
        tmp_path, "herd", "legacy_zk", ["group.members=3", "topic.partitions=3", timeline], shared_cluster
    )
    _assert_complete(events)
    expire = _nemesis(events, "expire")
    victim = expire["targets"][0]
    after = [e for e in events if e["source"] == victim and e["ts_ns"] > expire["ts_ns"]]
    assert any(e["kind"] == "revoked" and e.get("reason") == "session_expired" for e in after)
    assert any(e["kind"] == "registered" for e in after)  # re-registered with a new session
    assert unit["settled_at_end"]


@pytest.mark.long  # moved out of the default run (12-minute budget); CI's long step runs it
@pytest.mark.parametrize("impl", IMPLS)
def test_broker_restart_is_survived_without_loss(tmp_path: Path, impl: str) -> None:
    timeline = 'timeline=[{at="1s",action="restart_broker",downtime="1s"}]'
    events, unit = _run(tmp_path, "herd", impl, ["group.members=2", "topic.partitions=2", timeline])
    _assert_complete(events)
    assert _nemesis(events, "restart_broker")
    starts = [e for e in events if e["source"] == "broker-0" and e["kind"] == "started"]
    assert len(starts) == 2  # the broker came back
    assert unit["settled_at_end"]
