"""The ``report`` and ``compare`` click commands (exit codes, messages, JUnit output)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from click.testing import CliRunner

from harness.cli.report import compare, report
from harness.kernel.errors import ConfigError
from tests.support.metrics import build, default_units, metrics

#: the commands' output on a wide console (tests/conftest.py), whatever the temporary paths' length
pytestmark = pytest.mark.usefixtures("wide_console")


def _write(d: Path, m: dict) -> Path:
    d.mkdir(parents=True, exist_ok=True)
    (d / "metrics.json").write_text(json.dumps(m))
    return d


def test_compare_passes_against_itself(tmp_path: Path) -> None:
    run = _write(tmp_path / "run", metrics())
    # 3 repetitions: below the default minimum of 5 no comparison is a pass: inconclusive
    r = CliRunner().invoke(compare, [str(run), str(run)])
    assert r.exit_code == 3, r.output
    assert "inconclusive" in r.output
    r = CliRunner().invoke(compare, [str(run), str(run), "--min-repetitions", "3"])
    assert r.exit_code == 0, r.output
    assert "no regression among" in r.output


def test_compare_fails_against_a_better_baseline_and_writes_junit(tmp_path: Path) -> None:
    # baseline: legacy members=6 coordination requests halved (18, 18.5, 19 -> p50 18.5; current 37)
    units = default_units()
    for u in units:
        if (u["impl"], u["case"]) == ("legacy_zk", "members=6"):
            u["triggers"][0]["coordination_requests"] /= 2
    b = _write(tmp_path / "base", build(units))
    c = _write(tmp_path / "cur", metrics())
    junit = tmp_path / "junit.xml"
    r = CliRunner().invoke(compare, [str(b), str(c), "--junit", str(junit), "--stat", "p50"])
    assert r.exit_code == 1
    assert "REGRESSION" in r.output and "coordination_requests" in r.output and "+100.0%" in r.output
    assert "1 regression among" in r.output and "(1 statistics)" in r.output
    assert junit.exists() and 'failures="1"' in junit.read_text()


def test_compare_tolerance_option(tmp_path: Path) -> None:
    # every latency 20 % faster in the baseline
    units = default_units()
    for u in units:
        u["triggers"][0]["latency_s"] = round(u["triggers"][0]["latency_s"] / 1.2, 6)
    b, c = _write(tmp_path / "b", build(units)), _write(tmp_path / "c", metrics())
    old = ["--stat", "p50", "--min-repetitions", "3"]  # the single-statistic check on 3 repetitions
    assert CliRunner().invoke(compare, [str(b), str(c), *old]).exit_code == 1
    assert CliRunner().invoke(compare, [str(b), str(c), "--tolerance", "latency_s=0.25", *old]).exit_code == 0


def test_compare_names_each_kind_of_regression(tmp_path: Path) -> None:
    units = [u for u in default_units() if u["repetition"] < 2]
    units[0]["failed"] = "boom"
    units[1]["not_drained"] = 3
    b, c = _write(tmp_path / "b", metrics()), _write(tmp_path / "c", build(units))
    r = CliRunner().invoke(compare, [str(b), str(c)])
    assert r.exit_code == 1
    assert "fewer repetitions than the baseline: 2 instead of 3" in r.output
    assert "legacy_zk members=3 rep 0: the unit failed: boom" in r.output
    assert "3 records not drained" in r.output
    assert (
        "1 failed units" in r.output
        and "1 fewer repetitions" in r.output
        and "1 units not drained" in r.output
    )


def test_compare_mean_with_never(tmp_path: Path) -> None:
    from harness.analysis.stats import NEVER

    base = metrics()
    cur = json.loads(json.dumps(base))
    for a in cur["aggregates"]:
        if (a["impl"], a["case"], a["trigger"], a["metric"]) == (
            "coordinator",
            "members=3",
            "#1 crash",
            "latency_s",
        ):
            a.update(never=1, left_out=1, p95=NEVER, p99=NEVER, max=NEVER)  # the mean stays 1.0 s
    b, c = _write(tmp_path / "b", base), _write(tmp_path / "c", cur)
    r = CliRunner().invoke(compare, [str(b), str(c), "--stat", "mean"])
    assert r.exit_code == 1
    assert "latency_s mean: 1.000 s -> never" in r.output


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
    assert r.output.index("verdict: VALID") < r.output.index("medians over repetitions")


@pytest.mark.parametrize(
    ("kw", "message"),
    [({"lost": 1}, "LOST 1 records"), ({"not_drained": 2}, "NOT DRAINED: 2 acknowledged records")],
)
def test_report_exits_1_when_the_run_is_invalid(tmp_path: Path, kw: dict, message: str) -> None:
    run = _write(tmp_path / "run", metrics(**kw))
    r = CliRunner().invoke(report, [str(run), "--from-metrics"])
    assert r.exit_code == 1 and message in r.output and "verdict: INVALID" in r.output


@pytest.mark.parametrize("name", ["report", "compare"])
def test_commands_are_named_for_registration(name: str) -> None:
    import harness.cli.report as mod

    assert getattr(mod, name).name == name


def test_an_inconclusive_compare_says_what_to_run_next_and_inconclusive_ok_exits_0(tmp_path: Path) -> None:
    # 3 repetitions on each side, 5 needed: the baseline took 6 min (2 min a repetition, so 10 min for
    # 5), the current run 3 min (1 min a repetition, so 5 min for 5)
    b = _write(
        tmp_path / "b",
        build(default_units(), started="2026-01-01T00:00:00+00:00", finished="2026-01-01T00:06:00+00:00"),
    )
    c = _write(
        tmp_path / "c",
        build(default_units(), started="2026-01-02T00:00:00+00:00", finished="2026-01-02T00:03:00+00:00"),
    )
    advice = (
        "next: run again with at least 5 repetitions each (herdlab run herd --set repetitions=5): "
        "the current run had 3 usable of 3, about 5 min with 5; the baseline had 3 usable of 3, about "
        "10 min with 5; then compare again, or pass --inconclusive-ok to accept an inconclusive result"
    )
    r = CliRunner().invoke(compare, [str(b), str(c)])
    assert r.exit_code == 3
    assert advice + "\n" in r.stdout
    r = CliRunner().invoke(compare, [str(b), str(c), "--inconclusive-ok"])
    assert r.exit_code == 0
    assert advice + "\n" in r.stdout
    r = CliRunner().invoke(compare, [str(b), str(c), "--inconclusive-ok", "--json"])
    doc = json.loads(r.stdout)
    assert (r.exit_code, doc["verdict"], doc["exit_code"], doc["next_step"]) == (0, "inconclusive", 0, advice)


def test_inconclusive_ok_keeps_a_regression_failing(tmp_path: Path) -> None:
    units = default_units()
    for u in units:
        if (u["impl"], u["case"]) == ("legacy_zk", "members=6"):
            u["triggers"][0]["coordination_requests"] /= 2
    b, c = _write(tmp_path / "b", build(units)), _write(tmp_path / "c", metrics())
    r = CliRunner().invoke(compare, [str(b), str(c), "--stat", "p50", "--inconclusive-ok"])
    assert r.exit_code == 1
    assert "next:" not in r.output
