"""A small real run (both implementations, real ZooKeeper and broker) goes through the PySpark
analysis and produces all three report files, with figures for every trigger of both sides."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from harness.analysis import analyze_run
from harness.history.schema import read_parquet
from harness.report import render_report
from harness.run.runner import RunOptions, run_scenario
from harness.scenario import load_scenario
from tests.support.runs import FAST

pytestmark = pytest.mark.slow  # a real run of both implementations, then Spark


def test_a_small_real_run_is_analysed_and_reported(tmp_path: Path, spark) -> None:
    s = load_scenario(
        "herd-small",
        [
            *FAST,
            "group.members=2",
            # The join's window runs from the joiner's `ready` to the leave's invoke: the joiner's process
            # start-up (under a second on a quiet machine, several seconds on a loaded one) comes out of
            # it, so the leave comes 7 s after the join.
            'timeline=[{at="1s",action="join"},{at="8s",action="leave",select="oldest"}]',
        ],
    )
    result = run_scenario(s, RunOptions(out=tmp_path))
    assert not [u for u in result.units if u.get("failed")]
    metrics = analyze_run(result.run_dir)
    paths = render_report(result.run_dir, metrics)
    for kind in ("html", "markdown", "json"):
        assert paths[kind].exists() and paths[kind].stat().st_size > 0
    html = paths["html"].read_text()
    assert "data:image/png;base64," in html and "<script src=" not in html  # opens offline
    on_disk = json.loads(paths["json"].read_text())
    units = {u["impl"]: u for u in on_disk["units"]}
    assert set(units) == {"legacy_zk", "coordinator"}
    for impl, u in units.items():
        assert u["lost"] == 0, impl
        actions = [t["key"] for t in u["triggers"]]
        assert actions == ["#1 join", "#2 leave"], (impl, actions)
        assert all(t["settled"] and t["latency_s"] > 0 for t in u["triggers"]), (impl, u["triggers"])
    # The joiner was started ahead of its join and held (UnitRig.prestart_member): it recorded nothing
    # before the join's invoke, and its ready (the join's t0) followed the invoke without a process
    # start-up in between (a process start-up takes up to seconds; a held member is released in milliseconds)
    events = read_parquet(result.run_dir / "history.parquet")
    for u in result.units:
        unit = (u["case"], u["impl"], u["repetition"])
        mine = [e for e in events if (e["case"], e["impl"], e["repetition"]) == unit]
        (join,) = [e for e in mine if e["kind"] == "invoke" and e.get("action") == "join"]
        (joiner,) = join["targets"]
        first = min((e for e in mine if e["source"] == joiner), key=lambda e: e["ts_ns"])
        assert first["kind"] == "ready" and first["ts_ns"] > join["ts_ns"], (u["impl"], first)
        assert (first["ts_ns"] - join["ts_ns"]) / 1e9 < 1.0, (u["impl"], first["ts_ns"] - join["ts_ns"])
        logs = result.run_dir / "units" / u["unit"] / "logs"
        assert "held until" in (logs / f"{joiner}.log").read_text(), u["impl"]
        assert not list((result.run_dir / "units" / u["unit"] / "events").glob(".*.release"))
    # The herd is visible where each design puts it: ZooKeeper watches for legacy, broker requests for the coordinator.
    assert all(t["watches"] >= 2 for t in units["legacy_zk"]["triggers"])
    assert all(t["watches"] == 0 for t in units["coordinator"]["triggers"])
