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
from tests.integration.analysis.test_checker import legacy, zombie
from tests.support.histories import write_run

# a Spark analysis of its own (tens of seconds on a shared machine): opt-in. The default run checks a
# real metrics document against the schema through test_checker's analysis, at no extra cost.
pytestmark = [pytest.mark.slow, pytest.mark.long]


@pytest.fixture(scope="module")
def reported(spark: Any, tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, dict[str, Any], Any]:
    out = tmp_path_factory.mktemp("reports")
    run = write_run(out, [zombie(), legacy()], settle_window_s=1.0)
    r = CliRunner().invoke(cli, ["report", str(run), "--json"], catch_exceptions=False)
    return run, json.loads((run / "metrics.json").read_text()), r


def test_report_json_carries_the_verdict_of_metrics_json(reported: tuple[Path, dict[str, Any], Any]) -> None:
    run, doc, r = reported
    printed = json.loads(r.stdout)  # stdout is the JSON document alone
    v = doc["verdict"]
    assert printed["verdict"] == {"valid": v["valid"], "reasons": v["reasons"], "line": v["line"]}
    assert printed["paths"]["json"] == str(run / "metrics.json")
    assert r.exit_code == (1 if v["valid"] is False else 0)


def test_a_real_metrics_json_conforms_and_a_broken_one_does_not(
    reported: tuple[Path, dict[str, Any], Any],
) -> None:
    run, doc, _ = reported
    assert validate_metrics(doc) == []
    assert len(doc["units"]) == 2 and all(u["triggers"] for u in doc["units"])
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
