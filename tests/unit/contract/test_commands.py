"""The machine-readable commands (CliRunner, no processes, no Spark): ``scenarios --json`` and
``schema``, ``metrics schema`` and ``check``, ``runs list`` on hand-made run directories, the
``latest`` link, ``run --json`` and ``report --json`` (a stand-in session and analysis; the reports are
really rendered), and ``cluster up``'s broker count and replication."""

from __future__ import annotations

import json
import os
from pathlib import Path
from typing import Any

import pytest
from click.testing import CliRunner

import harness.cli.run as run_cli
from harness.cli import cli
from harness.cli.cluster import broker_count, replication_args
from harness.cli.runs import list_runs, update_latest
from harness.kernel.errors import ConfigError
from harness.run.runner import RunResult
from harness.scenario.loading import builtin_names, load_scenario
from tests.support.metrics import build, metrics, trigger, unit

#: the commands' output on a wide console (tests/conftest.py), whatever the temporary paths' length
pytestmark = pytest.mark.usefixtures("wide_console")


def _invoke(args: list[str]) -> Any:
    return CliRunner().invoke(cli, args, catch_exceptions=False)


def test_scenarios_json_lists_every_builtin() -> None:
    r = _invoke(["scenarios", "--json"])
    assert r.exit_code == 0
    rows = json.loads(r.stdout)
    assert [row["name"] for row in rows] == builtin_names()
    (small,) = [row for row in rows if row["name"] == "herd-small"]
    assert set(small) == {"name", "implementations", "cases", "repetitions", "description"}
    assert small["implementations"] == ["legacy_zk", "coordinator"]


def test_schema_commands_print_the_schemas() -> None:
    s = json.loads(_invoke(["scenarios", "schema"]).stdout)
    assert s["title"] == "herdlab scenario file" and "name" in s["required"]
    m = json.loads(_invoke(["metrics", "schema"]).stdout)
    assert m["$defs"]["verdict"]["properties"]["valid"] == {"enum": [True, False, "unknown"]}


def test_metrics_check(tmp_path: Path) -> None:
    good = tmp_path / "good"
    good.mkdir()
    (good / "metrics.json").write_text(json.dumps({**metrics(), "metric_info": {}}))
    r = _invoke(["metrics", "check", str(good)])
    assert r.exit_code == 0 and "conforms" in r.stdout
    bad = tmp_path / "bad"
    bad.mkdir()
    doc = {**metrics(), "metric_info": {}}
    doc["verdict"] = {**doc["verdict"], "valid": "yes"}
    (bad / "metrics.json").write_text(json.dumps(doc))
    r = CliRunner().invoke(cli, ["metrics", "check", str(bad)])
    assert r.exit_code == 1
    assert r.stderr == f"{bad}: verdict.valid: 'yes' is not one of [True, False, 'unknown']\n"


def _run_dir(
    out: Path, scenario: str, run_id: str, started: str, verdict: Any = "absent", **manifest: Any
) -> Path:
    d = out / scenario / run_id
    d.mkdir(parents=True)
    units = manifest.pop("units", [{"unit": "c0-legacy_zk-r0"}, {"unit": "c0-coordinator-r0", "failed": "x"}])
    man = {"run_id": run_id, "scenario": {"name": scenario}, "started": started, "units": units, **manifest}
    (d / "manifest.json").write_text(json.dumps(man))
    if verdict != "absent":
        (d / "metrics.json").write_text(
            json.dumps({"format": "herdlab-metrics/2", "verdict": {"valid": verdict}})
        )
    return d


def test_runs_list_newest_first_with_verdicts(tmp_path: Path) -> None:
    out = tmp_path / "reports"
    _run_dir(out, "herd", "20260101-000000-aaaa", "2026-01-01T00:00:00+00:00", verdict=True)
    _run_dir(out, "herd-small", "20260103-000000-cccc", "2026-01-03T00:00:00+00:00", simulated=True)
    _run_dir(out, "herd", "20260102-000000-bbbb", "2026-01-02T00:00:00+00:00", verdict="unknown")
    _run_dir(
        out, "herd", "20260104-000000-dddd", "2026-01-04T00:00:00+00:00", verdict=False, interrupted=True
    )
    # not runs: a manifest naming another run id (a copy), a stray file, the latest link
    copy = out / "baselines" / "mine"
    copy.mkdir(parents=True)
    (copy / "manifest.json").write_text(json.dumps({"run_id": "20260101-000000-aaaa", "started": "2027"}))
    (out / "herd" / "notes.txt").write_text("x")
    update_latest(out / "herd" / "20260104-000000-dddd")
    entries = list_runs(out)
    assert [(e["run_id"], e["scenario"], e["verdict"], e["simulated"]) for e in entries] == [
        ("20260104-000000-dddd", "herd", False, False),
        ("20260103-000000-cccc", "herd-small", None, True),
        ("20260102-000000-bbbb", "herd", "unknown", False),
        ("20260101-000000-aaaa", "herd", True, False),
    ]
    assert (entries[0]["units"], entries[0]["failed_units"], entries[0]["interrupted"]) == (2, 1, True)
    r = _invoke(["runs", "list", "--out", str(out), "--json"])
    assert r.exit_code == 0 and json.loads(r.stdout) == entries
    table = _invoke(["runs", "list", "--out", str(out)]).stdout
    assert "INVALID (interrupted)" in table and "not analysed" in table and "unknown" in table


def test_runs_list_where_nothing_has_run_is_empty(tmp_path: Path) -> None:
    for out in (tmp_path, tmp_path / "nowhere"):  # empty, and not created yet
        assert list_runs(out) == []
        assert _invoke(["runs", "list", "--out", str(out)]).stdout == f"no run under {out}\n"
        assert _invoke(["runs", "list", "--out", str(out), "--json"]).stdout == "[]\n"
    a_file = tmp_path / "file"
    a_file.write_text("x")
    with pytest.raises(ConfigError, match="is not a directory"):
        list_runs(a_file)


def test_latest_is_a_relative_link_replaced_in_place(tmp_path: Path) -> None:
    a = tmp_path / "herd" / "run-a"
    b = tmp_path / "herd" / "run-b"
    a.mkdir(parents=True)
    b.mkdir()
    link = update_latest(a)
    assert link == tmp_path / "herd" / "latest" and os.readlink(link) == "run-a"
    update_latest(b)
    assert os.readlink(link) == "run-b" and link.resolve() == b.resolve()
    assert sorted(p.name for p in (tmp_path / "herd").iterdir()) == ["latest", "run-a", "run-b"]


def test_cluster_up_starts_one_broker_by_default() -> None:
    assert broker_count(None, False) == 1
    assert broker_count(None, True) == 0
    assert broker_count(3, False) == 3
    assert broker_count(0, False) == 0
    with pytest.raises(ConfigError, match="contradict"):
        broker_count(2, True)


def test_cluster_up_replicates_as_a_scenario_does() -> None:
    replicated = ("--replication", "--no-unclean-leader-election")
    assert replication_args(1, None) == ()
    assert replication_args(3, None)[:2] == replicated
    assert replication_args(3, False) == ()
    assert replication_args(1, True)[:2] == replicated
    assert replication_args(0, None) == replication_args(0, False) == ()
    with pytest.raises(ConfigError, match="--replication needs brokers"):
        replication_args(0, True)
    # the options a scenario's [cluster] brokers = 3 gives its brokers
    scenario = load_scenario("herd-small", ["cluster.brokers=3"])
    assert replication_args(3, None) == scenario.cluster.broker_args()


class _FakeCluster:
    """Stands in for LocalCluster in ``cluster up``: records its broker count and broker options,
    stops at once."""

    seen: list[int] = []
    args: list[tuple[str, ...]] = []

    def __init__(self, brokers: int, broker_args: tuple[str, ...] = (), **kw: Any) -> None:
        self.seen.append(brokers)
        self.args.append(broker_args)
        self.zookeeper_connect = "127.0.0.1:2181"
        self.bootstrap = "127.0.0.1:9092" if brokers else ""
        self.zookeeper = self

    def is_serving(self) -> bool:
        return False

    def describe(self) -> list[Any]:
        return []

    def __enter__(self) -> _FakeCluster:
        return self

    def __exit__(self, *exc: object) -> None:
        return None


def test_cluster_up_prints_both_addresses(monkeypatch: pytest.MonkeyPatch) -> None:
    import harness.cli.cluster as cluster_cli

    monkeypatch.setattr(cluster_cli, "LocalCluster", _FakeCluster)
    monkeypatch.setattr(cluster_cli, "install_signal_handlers", lambda: None)
    _FakeCluster.seen.clear()
    r = CliRunner().invoke(cli, ["cluster", "up"])
    assert (
        "zookeeper.connect = 127.0.0.1:2181" in r.output and "bootstrap.servers = 127.0.0.1:9092" in r.output
    )
    r = CliRunner().invoke(cli, ["cluster", "up", "--no-broker"])
    assert "zookeeper.connect" in r.output and "bootstrap.servers" not in r.output
    assert _FakeCluster.seen == [1, 0]


def test_cluster_up_with_several_brokers_turns_replication_on(monkeypatch: pytest.MonkeyPatch) -> None:
    import harness.cli.cluster as cluster_cli

    monkeypatch.setattr(cluster_cli, "LocalCluster", _FakeCluster)
    monkeypatch.setattr(cluster_cli, "install_signal_handlers", lambda: None)
    _FakeCluster.seen.clear()
    _FakeCluster.args.clear()
    r = CliRunner().invoke(cli, ["cluster", "up", "--brokers", "3"])
    assert "replication: on (--no-replication to turn it off)" in r.output
    r = CliRunner().invoke(cli, ["cluster", "up", "--brokers", "3", "--no-replication"])
    assert "replication: off (--replication to turn it on)" in r.output
    r = CliRunner().invoke(cli, ["cluster", "up"])
    assert "replication: off" in r.output
    assert _FakeCluster.seen == [3, 3, 1]
    assert ["--replication" in a for a in _FakeCluster.args] == [True, False, False]


class _FakeSession:
    """A session that 'runs' by writing a run directory with a manifest (no process)."""

    def __init__(self, out: Path, units: list[dict[str, Any]]) -> None:
        self.out, self.units, self.total_units = out, units, len(units)

        class S:
            name = "herd"

        self.scenario = S()

    def build_clients(self, echo: Any = None) -> None:
        return None  # herd's clients are Python libraries: nothing to build

    def run(self, progress: Any = None) -> RunResult:
        d = self.out / "herd" / "20260101-000000-abcd"
        d.mkdir(parents=True)
        (d / "manifest.json").write_text(json.dumps({"run_id": d.name, "units": self.units}))
        print("progress that must not reach stdout")
        return RunResult(run_dir=d, run_id=d.name, units=self.units, events=10)


def _patch_run(
    monkeypatch: pytest.MonkeyPatch, out: Path, m: dict[str, Any], units: list[dict[str, Any]]
) -> None:
    import harness.cli.report as report_cli

    monkeypatch.setattr(run_cli, "prepare", lambda req: _FakeSession(out, units))
    monkeypatch.setattr(run_cli, "install_signal_handlers", lambda: None)
    # the analysis as `run` reaches it (harness.cli.report.publish_metrics imports it from harness.run.session)
    monkeypatch.setattr(report_cli, "analyse", lambda run_dir, **kw: {**m, "metric_info": {}})


def test_run_json_prints_one_document_on_stdout(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    units = [{"unit": "c0-legacy_zk-r0", "case": "c", "impl": "legacy_zk", "repetition": 0, "drained": True}]
    _patch_run(monkeypatch, tmp_path, metrics(), units)
    r = CliRunner().invoke(cli, ["run", "herd", "--out", str(tmp_path), "--json"])
    assert r.exit_code == 0, r.output
    doc = json.loads(r.stdout)  # stdout is the document alone
    run_dir = tmp_path / "herd" / "20260101-000000-abcd"
    assert doc == {
        "run_id": "20260101-000000-abcd",
        "run_dir": str(run_dir),
        "scenario": "herd",
        "verdict": {
            "valid": True,
            "reasons": [],
            "line": "VALID: 12 units, no record lost, every tail drained, no unit failed",
        },
        "units": [{**units[0], "failed": None}],
        "exit_status": 0,
    }
    assert "progress that must not reach stdout" in r.stderr and "verdict: VALID" in r.stderr
    assert os.readlink(tmp_path / "herd" / "latest") == run_dir.name
    assert (run_dir / "summary.md").exists()


def test_run_json_of_an_invalid_run_exits_1_after_the_document(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    units = [{"unit": "c0-legacy_zk-r0", "case": "c", "impl": "legacy_zk", "repetition": 0, "failed": "boom"}]
    _patch_run(monkeypatch, tmp_path, metrics(lost=1), units)
    r = CliRunner().invoke(cli, ["run", "herd", "--out", str(tmp_path), "--json"])
    assert r.exit_code == 1
    doc = json.loads(r.stdout)
    assert doc["exit_status"] == 1 and doc["verdict"]["valid"] is False
    assert doc["units"][0]["failed"] == "boom"


def test_report_json_gives_the_verdict_and_paths(tmp_path: Path) -> None:
    m = build([unit("legacy_zk", "c", 0, [trigger(outcome="skipped", latency=None)])])
    (tmp_path / "metrics.json").write_text(json.dumps(m))
    r = CliRunner().invoke(cli, ["report", str(tmp_path), "--from-metrics", "--json"])
    assert r.exit_code == 0, r.output  # unknown does not fail the command (verdict.py)
    doc = json.loads(r.stdout)
    assert doc["verdict"] == {
        "valid": "unknown",
        "reasons": ["every trigger was skipped (1): no rebalance was measured"],
        "line": "UNKNOWN: every trigger was skipped (1): no rebalance was measured",
    }
    assert doc["paths"] == {
        "json": str(tmp_path / "metrics.json"),
        "markdown": str(tmp_path / "summary.md"),
        "html": str(tmp_path / "index.html"),
        "plots": str(tmp_path / "plots"),
    }
    md = (tmp_path / "summary.md").read_text()
    assert (
        "## Unit logs\n\n- legacy_zk c rep 0: [units/c0-legacy_zk-r0/logs/](units/c0-legacy_zk-r0/logs/)\n"
        in md
    )
    html = (tmp_path / "index.html").read_text()
    assert (
        '<li>legacy_zk c rep 0: <a href="units/c0-legacy_zk-r0/logs/">units/c0-legacy_zk-r0/logs/</a></li>'
        in html
    )


def test_simulate_points_latest_at_its_run(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    import harness.cli.simulate as simulate_command

    def fake_simulate(scenario: Any, options: Any) -> RunResult:
        d = options.out / scenario.name / "20260101-000000-5151"
        d.mkdir(parents=True)
        return RunResult(run_dir=d, run_id=d.name, units=[], events=0)

    monkeypatch.setattr(simulate_command, "simulate_scenario", fake_simulate)
    r = CliRunner().invoke(cli, ["simulate", "herd-small", "--out", str(tmp_path), "--no-report"])
    assert r.exit_code == 0, r.output
    assert os.readlink(tmp_path / "herd-small" / "latest") == "20260101-000000-5151"
