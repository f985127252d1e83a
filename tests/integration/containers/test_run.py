"""`herdlab run --backend containers`: the herd scenario end to end, faults, Apache Kafka's own broker in
containers (herdlab's Kafka images) and cleanup after an interrupted run.

The scenario is the small `herd` of the local end-to-end tests (3 members, 4 partitions, join at
1 s, leave at 5 s, crash at 9 s, short sessions).
"""

from __future__ import annotations

import os
import signal
import socket
import subprocess
import sys
from collections import defaultdict
from pathlib import Path
from typing import Any

import pytest

from harness.cluster.containers import ContainersOptions
from harness.history.schema import read_parquet
from harness.images import ImageNames
from harness.kernel.ownership import GroupView
from harness.run.runner import RunOptions, run_scenario
from harness.scenario import load_scenario
from tests.support.containers import IMAGE_PREFIX, assert_nothing_left, started_herdlab
from tests.support.runs import FAST as SHRUNK
from tests.support.waiting import wait_until

pytestmark = pytest.mark.containers

FAST = [*SHRUNK, "group.members=3", "topic.partitions=4"]  # the local end-to-end herd's size
HERD = 'timeline=[{at="1s",action="join"},{at="5s",action="leave"},{at="9s",action="crash"}]'
PAUSE = 'timeline=[{at="1s",action="pause",duration="8s",select="oldest"}]'


def _run(tmp: Path, options: RunOptions, extra: list[str]) -> tuple[list[dict[str, Any]], Any]:
    s = load_scenario("herd", [*FAST, *extra])
    result = run_scenario(s, options)
    for unit in result.units:
        assert "failed" not in unit, unit.get("failed")
    return read_parquet(result.run_dir / "history.parquet"), result


#: Aggregate cells present only when the data has them: a trigger has a consumption gap (``gap_s``) only
#: if consumption paused for a whole 100 ms bucket in its window, which a fast coordinator leave may not
#: cause (one run of this test had a gap in the containers run and none in the local one).
DATA_DEPENDENT = frozenset({"gap_s"})


def _report_shape(run_dir: Path) -> tuple[Any, ...]:
    """The PySpark report of a run (rendered), reduced to its shape: sections, units and the
    (implementation, case, metric, trigger) cells of its tables (per-API breakdowns left out)."""
    from harness.analysis.analyze import analyze_run
    from harness.report import render_report

    m = analyze_run(run_dir)
    paths = render_report(run_dir, m)
    assert paths["markdown"].stat().st_size > 0 and paths["html"].stat().st_size > 0
    return (
        sorted(m),
        sorted((u["impl"], u["case"], u["repetition"], tuple(sorted(u))) for u in m["units"]),
        sorted(
            {
                (a["impl"], a["case"], a["metric"], a["trigger_index"], a["action"])
                for a in m["aggregates"]
                if "[" not in a["metric"] and a["metric"] not in DATA_DEPENDENT
            }
        ),
    )


def _check_unit(events: list[dict[str, Any]], impl: str) -> None:
    evs = [e for e in events if e["impl"] == impl]
    produced = {(e["partition"], e["offset"]) for e in evs if e["kind"] == "produced"}
    processed = {(e["partition"], e["offset"]) for e in evs if e["kind"] == "record"}
    assert produced and produced <= processed, f"{impl}: {len(produced - processed)} records never processed"
    nemesis = {e["action"]: e["targets"][0] for e in evs if e["kind"] == "invoke"}
    kinds = defaultdict(set)
    for e in evs:
        kinds[e["source"]].add(e["kind"])
    assert "started" in kinds[nemesis["join"]]
    assert "stopped" in kinds[nemesis["leave"]]  # a clean leave (SIGTERM through docker kill)
    assert "stopped" not in kinds[nemesis["crash"]]  # docker kill: no goodbye
    # Once settled, the survivors own every partition once (ownership before the teardown's revokes).
    o = GroupView()
    for e in evs:
        if e["kind"] == "settling_end":
            assert e["settled"]
            break
        o.apply(e)
    assert o.owned_once(), o.summary()
    assert nemesis["leave"] not in o.live and nemesis["crash"] not in o.live


def test_herd_on_containers_ends_with_a_report_shaped_like_the_local_one(
    tmp_path: Path, images: ImageNames, baseline: Any
) -> None:
    both = ['implementations=["legacy_zk","coordinator"]', HERD]
    containers = RunOptions(
        backend="containers",
        out=tmp_path / "containers",
        containers=ContainersOptions(images=images, members_in_containers=True),
    )
    events_c, result_c = _run(tmp_path, containers, both)
    events_l, result_l = _run(tmp_path, RunOptions(backend="local", out=tmp_path / "local"), both)
    for impl in ("legacy_zk", "coordinator"):
        _check_unit(events_c, impl)
    # The PySpark report has the local run's shape.
    assert _report_shape(result_c.run_dir) == _report_shape(result_l.run_dir)
    # The unit directories look like the local ones, with the containers' logs saved in them.
    for unit in ("c0-legacy_zk-r0", "c0-coordinator-r0"):
        d = result_c.run_dir / "units" / unit
        assert (d / "cluster/zookeeper/zookeeper.log").stat().st_size > 0
        assert (d / "cluster/broker-0/broker.log").stat().st_size > 0
        assert all((d / "logs" / f"{m}.log").stat().st_size > 0 for m in ("m0", "m1", "m2", "j0"))


def test_pause_freezes_a_member_container_and_the_others_take_over(
    tmp_path: Path, images: ImageNames, baseline: Any
) -> None:
    options = RunOptions(
        backend="containers",
        out=tmp_path,
        containers=ContainersOptions(images=images, members_in_containers=True),
    )
    events, _ = _run(tmp_path, options, ['implementations=["coordinator"]', "topic.partitions=6", PAUSE])
    pause = next(e for e in events if e["kind"] == "complete" and e["action"] == "pause")
    resume = next(e for e in events if e["kind"] == "invoke" and e["action"] == "resume")
    zombie = pause["targets"][0]
    before = {
        e["partition"]
        for e in events
        if e["kind"] == "assigned" and e["source"] == zombie and e["ts_ns"] < pause["ts_ns"]
    }
    taken = {
        e["partition"]
        for e in events
        if e["kind"] == "assigned" and e["source"] != zombie and pause["ts_ns"] < e["ts_ns"] < resume["ts_ns"]
    }
    assert before and before <= taken
    # docker pause froze it: it recorded nothing at all while paused (a SIGSTOP would do the same).
    silent = [
        e for e in events if e["source"] == zombie and pause["ts_ns"] + 10**8 < e["ts_ns"] < resume["ts_ns"]
    ]
    assert silent == []


@pytest.mark.parametrize("version", ["3.9", "4"])
def test_a_small_herd_on_apache_kafka_in_containers(
    tmp_path: Path, images: ImageNames, engine: Any, baseline: Any, version: str
) -> None:
    """cluster.broker = "apache-kafka" on the containers backend: the broker (and for 3.9 its ZooKeeper)
    in containers from herdlab's own Kafka image, behind the tap on the host; a coordinator column."""
    from harness.cluster.kafka_dist import resolve_version
    from harness.images import image_labels

    exact = resolve_version(version)
    if image_labels(engine, images.kafka(exact)) is None:
        pytest.skip(
            f"image {images.kafka(exact)} not built: run `herdlab images build --offline --kafka {version}`"
        )
    options = RunOptions(backend="containers", out=tmp_path, containers=ContainersOptions(images=images))
    extra = [
        'implementations=["coordinator"]',
        "cluster.broker=apache-kafka",
        f"cluster.kafka_version={version}",
    ]
    events, result = _run(tmp_path, options, [*extra, HERD])
    (unit,) = result.units
    assert unit["impl"] == "coordinator"
    cfg = unit["broker_config"]
    assert (cfg["broker"], cfg["version"], cfg["image"]) == ("apache-kafka", exact, images.kafka(exact))
    assert cfg["properties"]["group.initial.rebalance.delay.ms"] == "0"
    _check_unit(events, "coordinator")
    # the coordination requests were counted on the wire, as on the local backend
    assert any(e["kind"] == "group_request" and e.get("observed") == "tap" for e in events)
    cluster = result.run_dir / "units" / unit["unit"] / "cluster"
    assert "started" in (cluster / "kafka.log").read_text()  # the container's log, saved at its removal
    assert (cluster / "zookeeper" / "zookeeper.log").exists() == (version == "3.9")


def _herdlab_run(out: Path) -> subprocess.Popen[bytes]:
    argv = [sys.executable, "-m", "harness", "run", "herd", "--backend", "containers"]
    argv += ["--members-in-containers", "--out", str(out), "--image-prefix", IMAGE_PREFIX]
    for kv in [*FAST, 'implementations=["coordinator"]', HERD]:
        argv += ["--set", kv]
    p = subprocess.Popen(argv, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, start_new_session=True)
    started_herdlab(p.pid)
    return p


def _owned_by(engine: Any, pid: int) -> list[Any]:
    owner = f"{socket.gethostname()}:{pid}"
    return engine.containers.list(all=True, ignore_removed=True, filters={"label": f"herdlab.owner={owner}"})


@pytest.mark.parametrize("how", ["ctrl-c", "sigkill"])
def test_interrupted_run_leaves_no_container(tmp_path: Path, engine: Any, baseline: Any, how: str) -> None:
    """Ctrl-C: the run removes its containers itself. SIGKILL: the reaper process does."""
    p = _herdlab_run(tmp_path)
    try:
        # Interrupt once the members run in their containers (ZooKeeper, broker, 3 members).
        wait_until(lambda: len(_owned_by(engine, p.pid)) >= 5, timeout=120, what="the run's containers")
        if how == "ctrl-c":
            os.killpg(p.pid, signal.SIGINT)  # what a terminal sends to the foreground group
            assert p.wait(60) == 130
        else:
            p.kill()
            p.wait(10)
        wait_until(lambda: not _owned_by(engine, p.pid), timeout=60, what="the containers to be removed")
    finally:
        if p.poll() is None:
            p.kill()
            p.wait(10)
    assert_nothing_left(engine, baseline)
