"""The machine-readable contract on a real analysis (Spark): ``herdlab report --json`` on a hand-made
history prints the verdict metrics.json holds, that metrics.json conforms to the published schema
(and a copy broken on purpose does not), and ``runs list`` shows the run with its verdict."""

from __future__ import annotations

import copy
import json
from pathlib import Path
from typing import Any

import pytest
from click.testing import CliRunner

from harness.analysis.metrics_schema import validate_metrics
from harness.cli import cli
from tests.support.histories import UnitHistory, write_run

# a Spark analysis of its own (tens of seconds on a shared machine): opt-in. The default run checks a
# real metrics document against the schema through test_checker's analysis, at no extra cost.
pytestmark = [pytest.mark.slow, pytest.mark.long]


def crash() -> UnitHistory:
    """Coordinator, two partitions: a owns p0, b owns p1 (generation 1, stable at 200). Produced: 0..9
    on each partition from 300, every 100 ms. a processes p0's 0..9 from 350, b p1's 0..4 from 350; b is
    crashed at 1000 (complete 1050); a revokes p0 at 2900 and gets p0 and p1 at 3000 (generation 2),
    then processes p1's 5..9 from 3100. Settling ends at 6000. Every produced record is processed,
    no unit failed, the run was not interrupted and its one trigger was applied: the verdict is valid.
    """
    u = UnitHistory("crash", partitions=2)
    u.unit_start(0, ["a", "b"]).ready(10, "a").ready(20, "b")
    u.joined(100, "a", 0, generation=1, member="A").joined(100, "b", 1, generation=1, member="B")
    u.stable(200)
    u.produced(0, range(10), 300, 100).produced(1, range(10), 300, 100)
    u.records("a", 0, range(10), 350, 100).records("b", 1, range(5), 350, 100)
    u.action(1000, "crash", ["b"], complete_ms=1050)
    u.revoked(2900, "a", 0, generation=1, member="A")
    u.joined(3000, "a", 0, 1, generation=2, member="A")
    u.records("a", 1, range(5, 10), 3100, 100)
    return u.settling_end(6000)


@pytest.fixture(scope="module")
def reported(spark: Any, tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, dict[str, Any], Any]:
    out = tmp_path_factory.mktemp("reports")
    run = write_run(out, [crash()], settle_window_s=1.0)
    r = CliRunner().invoke(cli, ["report", str(run), "--json"], catch_exceptions=False)
    return run, json.loads((run / "metrics.json").read_text()), r


def test_report_json_carries_the_verdict_of_metrics_json(reported: tuple[Path, dict[str, Any], Any]) -> None:
    run, doc, r = reported
    printed = json.loads(r.stdout)  # stdout is the JSON document alone
    v = doc["verdict"]
    assert printed["verdict"] == {"valid": v["valid"], "reasons": v["reasons"], "line": v["line"]}
    assert printed["paths"]["json"] == str(run / "metrics.json")
    assert (v["valid"], v["reasons"]) == (True, [])  # worked out in crash()'s docstring
    assert r.exit_code == 0


def test_a_real_metrics_json_conforms_and_a_broken_one_does_not(
    reported: tuple[Path, dict[str, Any], Any],
) -> None:
    run, doc, _ = reported
    assert validate_metrics(doc) == []
    (u,) = doc["units"]
    assert [t["action"] for t in u["triggers"]] == ["crash"]
    broken = copy.deepcopy(doc)
    broken["verdict"]["valid"] = "valid"
    broken["units"][0]["repetition"] = -1
    assert validate_metrics(broken) == [
        "units.0.repetition: -1 is less than the minimum of 0",
        "verdict.valid: 'valid' is not one of [True, False, 'unknown']",
    ]
    assert CliRunner().invoke(cli, ["metrics", "check", str(run)]).exit_code == 0


def test_runs_list_shows_the_analysed_run(reported: tuple[Path, dict[str, Any], Any]) -> None:
    run, doc, _ = reported
    r = CliRunner().invoke(cli, ["runs", "list", "--out", str(run.parent.parent), "--json"])
    (entry,) = json.loads(r.stdout)
    assert (entry["run_id"], entry["scenario"], entry["verdict"]) == (
        "run-1",
        "handmade",
        doc["verdict"]["valid"],
    )
