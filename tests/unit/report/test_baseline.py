"""The baseline store (``herdlab baseline save|list|show|delete``) and ``herdlab compare NAME RUN_DIR``
through click's CliRunner, with hand-made metrics (tests.support.metrics), and ``herdlab run``'s
JUnit XML (:mod:`harness.report.junit`) on hand-made run directories."""

from __future__ import annotations

import json
import xml.etree.ElementTree as ET
from pathlib import Path

import pytest
from click.testing import CliRunner

from harness.cli import cli
from harness.kernel.errors import ConfigError
from harness.report import baseline as store
from harness.report.junit import write_run_junit
from tests.support.metrics import build, trigger, unit


def _run(d: Path, latencies: list[float], manifest: bool = True) -> Path:
    units = [
        unit("coordinator", "c", r, [trigger(latency=x, impl="coordinator")]) for r, x in enumerate(latencies)
    ]
    d.mkdir(parents=True)
    (d / "metrics.json").write_text(json.dumps(build(units)))
    if manifest:
        (d / "manifest.json").write_text(json.dumps({"run_id": "r1"}))
    (d / "history.parquet").write_bytes(b"not copied")
    return d


def _invoke(*args: str):  # noqa: ANN202
    return CliRunner().invoke(cli, list(args))


def test_store_round_trip_through_the_cli(tmp_path: Path) -> None:
    s = str(tmp_path / "store")
    run = _run(tmp_path / "run", [1.0, 1.1, 1.2, 1.3, 1.4, 1.5])
    slow = _run(tmp_path / "slow", [2.0, 2.1, 2.2, 2.3, 2.4, 2.5])
    r = _invoke("baseline", "save", "main-1", str(run), "--store", s)
    assert r.exit_code == 0, r.output
    assert sorted(p.name for p in (tmp_path / "store" / "main-1").iterdir()) == [
        "baseline.json",
        "manifest.json",
        "metrics.json",
    ]
    listed = _invoke("baseline", "list", "--store", s)
    assert listed.exit_code == 0 and "main-1" in listed.output and "herd" in listed.output
    shown = json.loads(_invoke("baseline", "show", "main-1", "--store", s).output)
    assert shown["name"] == "main-1" and shown["scenario"] == "herd" and shown["repetitions"] == 6
    assert shown["source"] == str(run.resolve())
    assert _invoke("compare", "main-1", str(run), "--store", s).exit_code == 0
    assert _invoke("compare", "main-1", str(slow), "--store", s).exit_code == 1
    assert _invoke("baseline", "delete", "main-1", "--store", s).exit_code == 0
    assert store.names(s) == []
    gone = _invoke("compare", "main-1", str(run), "--store", s)
    assert isinstance(gone.exception, ConfigError) and "not a baseline" not in str(gone.exception)
    assert "neither a run directory, a metrics.json nor a baseline in" in str(gone.exception)


def test_the_store_comes_from_the_environment(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("HERDLAB_BASELINES", str(tmp_path / "env-store"))
    store.save("b", _run(tmp_path / "run", [1.0]))
    assert (tmp_path / "env-store" / "b" / "metrics.json").is_file()
    assert store.store_dir(tmp_path / "x") == tmp_path / "x"
    monkeypatch.delenv("HERDLAB_BASELINES")
    assert store.store_dir() == Path("reports") / "baselines"


@pytest.mark.parametrize(
    ("name", "message"),
    [
        ("a/b", "no slashes"),
        (".hidden", "use letters, digits"),
        ("", "use letters, digits"),
    ],
)
def test_bad_names_are_one_line_errors(tmp_path: Path, name: str, message: str) -> None:
    with pytest.raises(ConfigError, match=message):
        store.save(name, _run(tmp_path / "run", [1.0]), tmp_path / "s")


def test_save_errors(tmp_path: Path) -> None:
    s = tmp_path / "s"
    empty = tmp_path / "empty"
    empty.mkdir()
    with pytest.raises(ConfigError, match=r"no metrics.json in .*: run `herdlab report .*` first"):
        store.save("x", empty, s)
    run = _run(tmp_path / "run", [1.0], manifest=False)
    store.save("x", run, s)
    assert (s / "x" / "metrics.json").is_file() and not (s / "x" / "manifest.json").exists()
    with pytest.raises(ConfigError, match=r"baseline 'x' exists in .* \(use --force to replace it\)"):
        store.save("x", run, s)
    store.save("x", run, s, replace=True)
    for f in (store.info, store.delete, store.metrics_path):
        with pytest.raises(ConfigError, match="unknown baseline 'nope'"):
            f("nope", s)


def test_cli_errors_are_config_errors(tmp_path: Path) -> None:
    r = _invoke("baseline", "show", "nope", "--store", str(tmp_path))
    assert isinstance(r.exception, ConfigError) and "unknown baseline 'nope'" in str(r.exception)
    r = _invoke("baseline", "save", "x/y", str(tmp_path), "--store", str(tmp_path))
    assert isinstance(r.exception, ConfigError) and "no slashes" in str(r.exception)


def test_run_junit_from_metrics(tmp_path: Path) -> None:
    # 4 units of one case: fine; never settled; lost 2 records; failed before any trigger -> one case
    # for the trigger (failing: rep 1 never settled) and one for the units (failing: rep 2 lost records,
    # rep 3 failed)
    units = [
        unit("coordinator", "group.members=4", 0, [trigger(latency=1.0, impl="coordinator")]),
        unit("coordinator", "group.members=4", 1, [trigger(outcome="never", impl="coordinator")]),
        unit("coordinator", "group.members=4", 2, [trigger(latency=1.5, impl="coordinator")], lost=2),
        unit("coordinator", "group.members=4", 3, [], failed="broker exited"),
    ]
    d = tmp_path / "run"
    d.mkdir()
    (d / "metrics.json").write_text(json.dumps(build(units)))
    suite = ET.parse(write_run_junit(tmp_path / "j.xml", d, [])).getroot().find("testsuite")
    assert suite is not None and suite.get("tests") == "2" and suite.get("failures") == "2"
    cases = [(tc.get("classname"), tc.get("name"), tc.get("time")) for tc in suite.iter("testcase")]
    assert cases == [
        ("herdlab-run coordinator group_members=4", "#1 crash", "2.500"),  # 1.0 + 1.5 s, settled reps
        ("herdlab-run coordinator group_members=4", "unit", "0.000"),
    ]
    assert suite.get("time") == "2.500"
    msgs = [f.get("message") for f in suite.iter("failure")]
    assert msgs == [
        "coordinator group.members=4 #1 crash: never settled in rep 1 (of 3)",
        "coordinator group.members=4: rep 2: 2 records lost (acknowledged offsets skipped); "
        "rep 3: the unit failed: broker exited",
    ]
    props = {p.get("name"): p.get("value") for p in suite.iter("property")}
    assert props["analysed"] == "true" and props["scenario"] == "herd"


def test_run_junit_has_one_case_per_implementation_case_and_trigger(tmp_path: Path) -> None:
    units = [
        unit(impl, case, rep, [trigger(index=0, action="join", latency=0.5, impl=impl), trigger(index=1)])
        for impl in ("legacy_zk", "coordinator")
        for case in ("c1", "c2")
        for rep in range(3)
    ]
    d = tmp_path / "run"
    d.mkdir()
    (d / "metrics.json").write_text(json.dumps(build(units)))
    suite = ET.parse(write_run_junit(tmp_path / "j.xml", d, [])).getroot().find("testsuite")
    assert suite is not None
    # 2 implementations x 2 cases x (2 triggers + the unit case), whatever the repetitions
    assert [(tc.get("classname"), tc.get("name")) for tc in suite.iter("testcase")] == [
        (f"herdlab-run {impl} {case}", name)
        for impl in ("legacy_zk", "coordinator")
        for case in ("c1", "c2")
        for name in ("#1 join", "#2 crash", "unit")
    ]
    assert suite.get("failures") == "0"
    assert [tc.get("time") for tc in suite.iter("testcase")][:3] == ["1.500", "3.000", "0.000"]


def test_run_junit_without_a_report_uses_the_session_units(tmp_path: Path) -> None:
    session = [
        {"unit": "c0-legacy_zk-r0", "case": "c", "impl": "legacy_zk", "repetition": 0},
        {"unit": "c0-legacy_zk-r1", "case": "c", "impl": "legacy_zk", "repetition": 1, "failed": "boom"},
    ]
    suite = ET.parse(write_run_junit(tmp_path / "j.xml", tmp_path, session)).getroot().find("testsuite")
    assert suite is not None and suite.get("tests") == "1" and suite.get("failures") == "1"
    assert [f.get("message") for f in suite.iter("failure")] == ["legacy_zk c: rep 1: the unit failed: boom"]
    assert {p.get("name"): p.get("value") for p in suite.iter("property")}["analysed"] == "false"
