"""A unit whose cluster does not come up fails that unit, not the run: the next units run, the manifest
records each failure, and nothing is left running. Real processes: a ZooKeeper server and a JVM that
cannot start Kafka (a "distribution" whose only jar is empty)."""

from __future__ import annotations

import json
from pathlib import Path

import psutil
import pytest

from harness.run.runner import RunOptions, run_scenario
from harness.scenario import load_scenario
from tests.support.runs import FAST

pytestmark = pytest.mark.slow


def test_a_broker_that_never_serves_fails_its_unit_and_the_run_goes_on(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    home = tmp_path / "kafka"
    (home / "libs").mkdir(parents=True)
    (home / "libs" / "kafka_2.13-3.9.9.jar").write_bytes(b"")  # found as 3.9.9, but no class in it
    monkeypatch.setenv("HERDLAB_KAFKA_HOME", str(home))
    before = {p.pid for p in psutil.Process().children(recursive=True)}
    s = load_scenario(
        "herd-small",
        [
            *FAST,
            "group.members=2",
            'implementations=["coordinator"]',
            "cluster.broker=apache-kafka",
            "repetitions=2",
        ],
    )
    result = run_scenario(s, RunOptions(out=tmp_path / "out"))
    assert result.stopped is None and not result.interrupted
    assert len(result.units) == 2  # both repetitions were tried
    for u in result.units:
        assert "Apache Kafka 3.9.9" in u["failed"], u
    manifest = json.loads((result.run_dir / "manifest.json").read_text())
    assert [bool(u.get("failed")) for u in manifest["units"]] == [True, True]
    assert manifest["stopped"] is None
    left = {p.pid for p in psutil.Process().children(recursive=True)} - before
    assert not left, left
