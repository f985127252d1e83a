"""``herdlab compare`` as a user runs it: the real command in its own process, on metrics.json files
written to disk, with its exit status, its messages and its JUnit XML. The four cases
that statistics alone would let through: a rising never count, a failed unit, fewer repetitions and a
mean that hides a never (the unit-level rules are in tests/unit/report/test_compare.py)."""

from __future__ import annotations

import copy
import json
import os
import subprocess
import sys
import xml.etree.ElementTree as ET
from pathlib import Path
from typing import Any

import pytest

from tests.support.metrics import build, default_units, metrics, trigger, unit


def _herdlab(*args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "harness", *args],
        capture_output=True,
        text=True,
        timeout=120,
        env={**os.environ, "COLUMNS": "250"},
    )


def _write(d: Path, m: dict) -> Path:
    d.mkdir(parents=True, exist_ok=True)
    (d / "metrics.json").write_text(json.dumps(m))
    return d


def _legacy3(*outcomes: float | str) -> dict:
    """The default run with legacy_zk members=3's #1 crash per repetition set to ``outcomes``."""
    units = copy.deepcopy(default_units())
    for u in units:
        if (u["impl"], u["case"]) == ("legacy_zk", "members=3"):
            o = outcomes[u["repetition"]]
            kw: dict[str, Any] = {"outcome": o} if isinstance(o, str) else {"latency": o}
            u["triggers"][0] = trigger(requests=u["triggers"][0]["coordination_requests"], **kw)
    return build(units)


def _failed() -> dict:
    units = default_units()
    units[7]["failed"] = "broker exited with status 1"  # coordinator members=3 rep 1
    return build(units)


CASES = {
    # 1.8, never, 2.2 s: p50 2.2 s is within 10 % + 0.05 s of 2.0 s; only the never count rose
    "never count": (
        _legacy3(1.8, "never", 2.2),
        [],
        "legacy_zk members=3 #1 crash: repetitions that never settled rose from 0 of 3 to 1 of 3",
    ),
    "failed unit": (
        _failed(),
        [],
        "coordinator members=3 rep 1: the unit failed: broker exited with status 1",
    ),
    "fewer repetitions": (
        build([u for u in default_units() if u["repetition"] < 2]),
        [],
        "fewer repetitions than the baseline: 2 instead of 3",
    ),
    # 1.8, 2.2 s and a never: the finite mean is 2.0 s, the baseline's; it reads never
    "mean with never": (
        _legacy3(1.8, 2.2, "never"),
        ["--stat", "mean"],
        "legacy_zk members=3 #1 crash latency_s mean: 2.000 s -> never",
    ),
}


@pytest.mark.parametrize("case", list(CASES))
def test_compare_flags_what_statistics_would_hide(tmp_path: Path, case: str) -> None:
    current, extra, message = CASES[case]
    base = _write(tmp_path / "base", metrics())
    cur = _write(tmp_path / "cur", current)
    junit = tmp_path / "junit.xml"
    p = _herdlab("compare", str(base), str(cur), "--junit", str(junit), *extra)
    assert p.returncode == 1, p.stdout + p.stderr
    assert message in " ".join(p.stdout.split()), p.stdout
    assert "Traceback" not in p.stderr
    suite = ET.parse(junit).getroot().find("testsuite")
    assert suite is not None and int(suite.get("failures", "0")) >= 1
    assert any(message in (f.get("message") or "") for f in suite.iter("failure"))


def test_compare_passes_a_run_against_itself_and_errors_in_one_line(tmp_path: Path) -> None:
    run = _write(tmp_path / "run", metrics())
    # 3 repetitions: below the default minimum of 5 a comparison is inconclusive (exit 3), never a pass
    few = _herdlab("compare", str(run), str(run))
    assert few.returncode == 3, few.stdout + few.stderr
    assert "inconclusive" in few.stdout
    ok = _herdlab("compare", str(run), str(run), "--min-repetitions", "3")
    assert ok.returncode == 0, ok.stdout + ok.stderr
    assert "no regression among" in ok.stdout
    missing = _herdlab("compare", str(tmp_path / "nope"), str(run))
    assert missing.returncode == 2
    assert missing.stderr.strip().splitlines() == [f"herdlab: error: {tmp_path / 'nope'} does not exist"]


def _six(*latencies: float) -> dict:
    """coordinator case ``c`` with six repetitions of one crash of the given latencies."""
    return build(
        [
            unit("coordinator", "c", r, [trigger(latency=x, impl="coordinator")])
            for r, x in enumerate(latencies)
        ]
    )


def test_a_named_baseline_in_its_own_process(tmp_path: Path) -> None:
    # baseline 1.0..1.5 s, current 2.0..2.5 s: no overlap, p = 2/924 < 0.05 and +80 % of the median
    store = tmp_path / "store"
    env_store = ["--store", str(store)]
    base = _write(tmp_path / "base", _six(1.0, 1.1, 1.2, 1.3, 1.4, 1.5))
    cur = _write(tmp_path / "cur", _six(2.0, 2.1, 2.2, 2.3, 2.4, 2.5))
    saved = _herdlab("baseline", "save", "main", str(base), *env_store)
    assert saved.returncode == 0, saved.stdout + saved.stderr
    worse = _herdlab("compare", "main", str(cur), "--json", *env_store)
    assert worse.returncode == 1, worse.stderr
    doc = json.loads(worse.stdout)
    assert doc["verdict"] == "regression" and doc["test"].startswith("Mann-Whitney U")
    unknown = _herdlab("compare", "nope", str(cur), *env_store)
    assert unknown.returncode == 2
    assert unknown.stderr.strip().splitlines() == [
        f"herdlab: error: 'nope' is neither a run directory, a metrics.json nor a baseline in {store} "
        "(see `herdlab baseline list`)"
    ]
