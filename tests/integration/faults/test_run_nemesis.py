"""End to end: a run whose timeline has a toxic and a ZooKeeper restart and whose random schedule draws
more, on the local cluster; the history records each pair, and the manifest replays the same steps."""

from __future__ import annotations

from pathlib import Path

import pytest

from harness.history.schema import read_parquet
from harness.run.plan import make_plan
from harness.run.runner import RunOptions, run_scenario
from harness.scenario import load_scenario
from harness.scenario.random_nemesis import draw
from tests.support.runs import FAST

SCENARIO = """
name = "nemesis-e2e"
implementations = ["legacy_zk"]
seed = 4
[group]
members = 3

[[timeline]]
action = "latency"
at = "2s"
target = "zookeeper"
duration = "4s"
latency = 200

[[timeline]]
action = "restart_zk"
at = "9s"
downtime = "1s"

[[nemesis]]
kind = "random"
actions = ["slow_close", "bandwidth", "reset_peer"]
rate = 12
seed = 5
duration = ["1s", "2s"]
start = "15s"
stop = "26s"
targets = ["zookeeper"]
"""


@pytest.mark.slow
@pytest.mark.long  # about a minute: opt-in (CI runs `long`), the default run stays under 12 minutes
def test_a_run_records_the_new_faults_and_its_manifest_replays_the_same_steps(tmp_path: Path) -> None:
    import json

    path = tmp_path / "nemesis-e2e.toml"
    path.write_text(SCENARIO)
    s = load_scenario(path, FAST)
    drawn = draw(s.nemesis[0], s)
    assert drawn  # 11 s at 12 a minute, one at a time: something to replay
    result = run_scenario(s, RunOptions(out=tmp_path / "out"))
    assert [u.get("failed") for u in result.units] == [None]

    events = [e for e in read_parquet(result.run_dir / "history.parquet") if e["role"] == "nemesis"]
    pairs: dict[int, list[dict]] = {}
    for e in events:
        pairs.setdefault(e["action_id"], []).append(e)
    steps = [(p[0]["action"], [e["kind"] for e in p]) for _, p in sorted(pairs.items())]
    # every step completed (none skipped: legacy members talk to ZooKeeper; the local backend restarts it)
    assert all(kinds == ["invoke", "complete"] for _, kinds in steps), steps
    latency = next(p for p in pairs.values() if p[0]["action"] == "latency")
    assert all(
        e["toxic"] == {"kind": "latency", "stream": "downstream", "latency": 200, "jitter": 0}
        for e in latency
    )
    restart = next(p for p in pairs.values() if p[0]["action"] == "restart_zk")
    assert restart[1]["server"] == 0 and restart[1]["restarted_s"] >= 1.0

    manifest = json.loads((result.run_dir / "manifest.json").read_text())
    assert [(e["action"], e["at"]) for e in manifest["drawn_timeline"]] == [
        (e["action"], e["at"]) for e in drawn
    ]
    # the replayed scenario plans exactly the steps this run performed, on the same members
    from harness.cli.run import replay_file

    with replay_file(result.run_dir) as replay:
        assert replay is not None
        replayed = load_scenario(replay)
    planned = [(st.kind, list(st.targets)) for st in make_plan(replayed, 3).steps]
    performed = [(p[0]["action"], list(p[0]["targets"])) for _, p in sorted(pairs.items())]
    assert planned == performed
