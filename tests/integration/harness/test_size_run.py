"""A run of the ``size`` scenario shrunk to 9 legacy members (gevent hosts of 3) and 4 coordinator
members: the hosts run the untargeted members, every member is ready before the group is stable, and the
start-up line of each unit says so in the reports (the full size is ``herdlab bench size``)."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import psutil
import pytest

from harness.analysis.startup import start_up_line
from harness.run.runner import RunOptions, run_scenario
from harness.run.session import analyse, render
from harness.scenario import load_scenario
from tests.support.runs import FAST

LEGACY, COORDINATOR, PER_HOST = 9, 4, 3


@pytest.mark.long  # minutes with the Spark analysis (8 on the shared machine): opt-in, not the default run
def test_a_small_size_run_hosts_legacy_members_and_reports_each_units_start_up(tmp_path: Path) -> None:
    s = load_scenario(
        "size",
        [
            *FAST,
            f"group.legacy_zk.members={LEGACY}",
            f"group.legacy_zk.members_per_host={PER_HOST}",
            f"group.coordinator.members={COORDINATOR}",
            'timeline=[{at="3s",action="join"},{at="13s",action="leave"},{at="23s",action="crash"}]',
        ],
    )
    # children from before the run (an earlier test's Spark session: its JVM and Python daemons) are not
    # the run's; every process the run started is gone when it returns
    before = {p.pid for p in psutil.Process().children(recursive=True)}
    result = run_scenario(s, RunOptions(out=tmp_path))
    assert not [u for u in result.units if u.get("failed")], result.units
    left = [p for p in psutil.Process().children(recursive=True) if p.is_running() and p.pid not in before]
    assert not left, left
    legacy_dir = next((result.run_dir / "units").glob("c0-legacy_zk-r0"))
    # the leave's and the crash's targets alone, the 7 others in hosts of 3, 3 and 1
    hosts = sorted(legacy_dir.glob("events/host*.jsonl"))
    assert [h.name for h in hosts] == ["host0.jsonl", "host1.jsonl", "host2.jsonl"]
    sources: dict[str, set[str]] = {}
    for h in hosts:
        events = [json.loads(line) for line in h.read_text().splitlines() if line.strip()]
        sources[h.stem] = {e["source"] for e in events if e.get("kind") == "ready"}
    assert [len(sources[h]) for h in ("host0", "host1", "host2")] == [3, 3, 1]
    singles = {p.stem for p in legacy_dir.glob("events/m*.jsonl")}
    assert len(singles) == 2 and not singles & set().union(*sources.values())

    metrics: dict[str, Any] = analyse(result.run_dir)
    by_impl = {u["impl"]: u for u in metrics["units"]}
    for impl, n in (("legacy_zk", LEGACY), ("coordinator", COORDINATOR)):
        su = by_impl[impl]["start_up"]
        # every initial member wrote ready before the group was stable (the joiner after it)
        assert su["members_ready"] == n, (impl, su)
        assert 0 <= su["first_ready_s"] <= su["all_ready_s"] < su["stable_s"], (impl, su)
    render(result.run_dir, metrics)
    summary = (result.run_dir / "summary.md").read_text()
    for impl in ("legacy_zk", "coordinator"):
        line = start_up_line(by_impl[impl]["start_up"])
        assert line is not None and line.startswith(
            f"start-up: {by_impl[impl]['start_up']['members_ready']} "
        )
        assert line in summary
