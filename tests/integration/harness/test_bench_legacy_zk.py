"""``herdlab bench legacy_zk`` end to end at the smallest size: a real ZooKeeper, three legacy members
(two on gevent in one process, the victim alone), a join, a leave and a crash. It writes its histories
as a run directory, and prints, per change, the PySpark checker's figures of it beside the model with
the deviation. The model's figures, the notifications and the owner writes are worked out here by
hand (the model from its docstring, the counts from the histories the bench kept)."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

HERDLAB = os.path.join(os.path.dirname(sys.executable), "herdlab")


def _events(directory: Path) -> list[dict[str, Any]]:
    out = [json.loads(line) for f in directory.glob("*.jsonl") for line in f.read_text().splitlines()]
    return sorted(out, key=lambda e: e["ts_ns"])


def _rows(out: str, column: int) -> dict[str, list[str]]:
    """Markdown table rows whose cell ``column`` names a change, keyed by it (cells stripped)."""
    rows = {}
    for line in out.splitlines():
        cells = [c.strip() for c in line.strip().strip("|").split("|")]
        if line.startswith("|") and len(cells) > column and cells[column] in ("join", "leave", "crash"):
            rows[cells[column]] = cells
    return rows


def _deviation(measured: int, model: int) -> str:
    """A cell: measured (model) measured - model (its share of the model, %)."""
    d = measured - model
    return f"{measured} ({model}) {d:+d} ({100 * d / model:+.1f}%)"


@pytest.mark.slow
@pytest.mark.bench  # about 3 minutes on the shared 2-core machine, most of it the Spark analysis
def test_bench_prints_the_checkers_figures_beside_the_model(tmp_path: Path) -> None:
    argv = [HERDLAB, "bench", "legacy_zk", "--sizes", "3", "--session-timeout-ms", "1000"]
    argv += ["--backoff-ms", "200", "--retries", "8", "--members-per-host", "2", "--tick-time", "200"]
    argv += ["--settle-window", "1", "--idle", "0.5", "--workdir", str(tmp_path)]
    r = subprocess.run(argv, capture_output=True, text=True, timeout=600)
    assert r.returncode == 0, r.stdout + r.stderr
    out = r.stdout

    # the model by hand (B = 1, P = 3; M^2 + 11M + 9 + 2 min(M, 3) with M the members after the change):
    # join 3 -> 4: 16 + 44 + 9 + 6 = 75, notified 3; leave 4 -> 3: 9 + 33 + 9 + 6 = 57, notified 3;
    # crash 3 -> 2: 4 + 22 + 9 + 4 = 39, notified 2; owner writes 2P = 6 each
    model = {"join": (3, 75), "leave": (3, 57), "crash": (2, 39)}
    evs = _events(tmp_path / "N3")
    invokes = [e for e in evs if e["kind"] == "invoke"]
    assert [e["action"] for e in invokes] == ["join", "leave", "crash"]
    ready = next(e["ts_ns"] for e in evs if e["kind"] == "ready" and e["source"] == "joiner")
    end = next(e["ts_ns"] for e in evs if e["kind"] == "settling_end")
    starts = [ready, invokes[1]["ts_ns"], invokes[2]["ts_ns"]]
    windows = dict(zip(model, zip(starts, starts[1:] + [end], strict=True), strict=True))
    table = _rows(out, 0)
    assert set(table) == set(model), out
    for change, (notified, requests) in model.items():
        t0, t1 = windows[change]
        inside = [e for e in evs if e.get("role") == "member" and t0 <= e["ts_ns"] < t1]
        watches = sum(1 for e in inside if e["kind"] == "watch")
        owner_writes = sum(
            1
            for e in inside
            if e["kind"] == "zk_request"
            and e.get("op") in ("create", "delete")
            and "/owners/" in (e.get("path") or "")
        )
        row = table[change]
        assert row[1] == "settled", row
        assert row[4] == _deviation(watches, notified), row
        measured = int(row[5].split()[0])
        assert row[5] == _deviation(measured, requests), row
        assert row[6] == _deviation(owner_writes, 6), row

    run = tmp_path / "run"
    manifest = json.loads((run / "manifest.json").read_text())
    assert [u["case"] for u in manifest["units"]] == ["N=3"]
    assert manifest["scenario"]["settle_window"] == 1.0
    assert (run / "history.parquet").exists() and (run / "metrics.json").exists()
    # the figures printed are the checker's, of the run directory's one unit
    metrics = json.loads((run / "metrics.json").read_text())
    (unit,) = metrics["units"]
    for t in unit["triggers"]:
        row = table[t["action"]]
        assert int(row[4].split()[0]) == t["watches"] and int(row[5].split()[0]) == t["zk_requests"], (row, t)
