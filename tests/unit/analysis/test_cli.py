"""The ``report`` and ``compare`` click commands (exit codes, messages, JUnit output)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from click.testing import CliRunner

from harness.cli.report import compare, report
from harness.errors import ConfigError
from tests.unit.analysis.metrics_fixture import metrics


def _write(d: Path, m: dict) -> Path:
    d.mkdir(parents=True, exist_ok=True)
    (d / "metrics.json").write_text(json.dumps(m))
    return d


def test_compare_passes_against_itself(tmp_path: Path) -> None:
    run = _write(tmp_path / "run", metrics())
    r = CliRunner().invoke(compare, [str(run), str(run)])
    assert r.exit_code == 0, r.output
    assert "no regression among" in r.output


def test_compare_fails_against_a_doctored_baseline_and_writes_junit(tmp_path: Path) -> None:
    base = metrics()
    for a in base["aggregates"]:
        if (a["impl"], a["case"], a["metric"]) == ("legacy_zk", "members=6", "zk_requests") and a[
            "trigger"
        ] == "#1 crash":
            a["p50"] = 27.0  # current: 54, +100 %
    b = _write(tmp_path / "base", base)
    c = _write(tmp_path / "cur", metrics())
    junit = tmp_path / "junit.xml"
    r = CliRunner().invoke(compare, [str(b), str(c), "--junit", str(junit)])
    assert r.exit_code == 1
    assert "REGRESSION" in r.output and "zk_requests" in r.output and "+100.0%" in r.output
    assert "1 regression among" in r.output
    assert junit.exists() and 'failures="1"' in junit.read_text()


def test_compare_tolerance_option(tmp_path: Path) -> None:
    base = metrics()
    for a in base["aggregates"]:
        if a["metric"] == "latency_s":
            a["p50"] = a["p50"] / 1.2  # current is 20 % slower everywhere
    b, c = _write(tmp_path / "b", base), _write(tmp_path / "c", metrics())
    assert CliRunner().invoke(compare, [str(b), str(c)]).exit_code == 1
    assert CliRunner().invoke(compare, [str(b), str(c), "--tolerance", "latency_s=0.25"]).exit_code == 0


def test_compare_without_metrics_is_a_config_error(tmp_path: Path) -> None:
    run = _write(tmp_path / "run", metrics())
    r = CliRunner().invoke(compare, [str(tmp_path), str(run)])
    assert isinstance(r.exception, ConfigError) and "herdlab report" in str(r.exception)


def test_report_from_metrics_rerenders_without_spark(tmp_path: Path) -> None:
    run = _write(tmp_path / "run", metrics())
    r = CliRunner().invoke(report, [str(run), "--from-metrics"])
    assert r.exit_code == 0, r.output
    assert {p.name for p in run.iterdir()} >= {"index.html", "summary.md", "metrics.json", "plots"}
    assert "index.html" in r.output


def test_report_exits_1_when_records_were_lost(tmp_path: Path) -> None:
    run = _write(tmp_path / "run", metrics(lost=1))
    r = CliRunner().invoke(report, [str(run), "--from-metrics"])
    assert r.exit_code == 1 and "LOST 1 produced records" in r.output


@pytest.mark.parametrize("name", ["report", "compare"])
def test_commands_are_named_for_registration(name: str) -> None:
    import harness.cli.report as mod

    assert getattr(mod, name).name == name
