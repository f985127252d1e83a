"""``herdlab bench coordinator rebalance`` end to end at the smallest size: a real broker, three
kafka-python members run as the harness runs them, one join and one leave. The printed latencies
are finite and are the trigger windows' t1 - t0, worked out here by hand from the histories the bench
kept: t0 = the joiner's ``ready`` (join) or the ``invoke`` (leave); the first reaction = the first
broker ``group_state`` / ``rebalance_begin`` or member reaction by another member; t1 = the last
ownership change of the window (an ``assigned``, or the joiner becoming live with its first
``rebalance_end``), after which the bench waited W before acting again."""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

HERDLAB = os.path.join(os.path.dirname(sys.executable), "herdlab")
MEMBER_REACTIONS = ("watch", "rebalance_begin", "revoked", "assigned", "rebalance_end")


def _events(directory: Path) -> list[dict[str, Any]]:
    out = [json.loads(line) for f in directory.glob("*.jsonl") for line in f.read_text().splitlines()]
    return sorted(out, key=lambda e: e["ts_ns"])


def _by_hand(evs: list[dict[str, Any]], t0: int, end: int, joiner: str | None) -> tuple[float, float]:
    """(latency, detection) in ms of the window [t0, end) (see the module docstring)."""
    inside = [e for e in evs if t0 <= e["ts_ns"] < end]
    react = next(
        e["ts_ns"]
        for e in inside
        if (e["role"] == "broker" and e["kind"] in ("group_state", "rebalance_begin"))
        or (e["role"] == "member" and e["kind"] in MEMBER_REACTIONS and e["source"] != "j0")
    )
    changes = [e["ts_ns"] for e in inside if e["role"] == "member" and e["kind"] == "assigned"]
    if joiner is not None:
        changes.append(
            next(e["ts_ns"] for e in inside if e["source"] == joiner and e["kind"] == "rebalance_end")
        )
    return (max(changes) - t0) / 1e6, (react - t0) / 1e6


def _row(out: str, label: str) -> list[float]:
    m = re.search(re.escape(label) + r"[^│]*│\s*([\d /]+) ms\s*│", out)
    assert m, f"no row {label!r} in:\n{out}"
    return [float(x) for x in m.group(1).split("/")]


@pytest.mark.long  # 14 s: run by CI's long step, not the default run (its 12 min budget)
def test_rebalance_bench_prints_the_windows_latencies(tmp_path: Path) -> None:
    r = subprocess.run(
        [HERDLAB, "bench", "coordinator", "rebalance", "--members", "3", "--reps", "1"]
        + ["--settle-window", "1", "--workdir", str(tmp_path)],
        capture_output=True,
        text=True,
        timeout=240,
        env={**os.environ, "COLUMNS": "200"},
    )
    assert r.returncode == 0, r.stdout + r.stderr
    out = r.stdout
    evs = _events(tmp_path / "N3")
    nemesis = [e for e in evs if e["source"] == "nemesis"]
    join_invoke, leave_invoke = [e for e in nemesis if e["kind"] == "invoke"]
    assert (join_invoke["action"], leave_invoke["action"]) == ("join", "leave")
    assert join_invoke["targets"] == leave_invoke["targets"] == ["j0"]
    ready = next(e["ts_ns"] for e in evs if e["source"] == "j0" and e["kind"] == "ready")
    settling_end = next(e["ts_ns"] for e in nemesis if e["kind"] == "settling_end")

    join_latency, join_detection = _by_hand(evs, ready, leave_invoke["ts_ns"], "j0")
    leave_latency, leave_detection = _by_hand(evs, leave_invoke["ts_ns"], settling_end, None)
    join = _row(out, "N=3, one member joins: rebalance latency median / max (n=1)")
    leave = _row(out, "N=3, one member leaves: rebalance latency median / max (n=1)")
    assert join == [round(join_latency)] * 2 and leave == [round(leave_latency)] * 2, out
    assert 0 < join_latency < 60_000 and 0 < leave_latency < 60_000
    assert _row(out, "detection (first reaction - t0)")[0] == round(join_detection)
    startup = (ready - join_invoke["ts_ns"]) / 1e6
    assert _row(out, "start-up (t0 - invoke: the joiner booting)")[0] == round(startup)
    assert f"leave j0: {round(leave_latency)} ms (detection {round(leave_detection)} ms" in out
    assert "t0 = the invoke, for a join the joiner's ready" in " ".join(out.split())
