"""Apache Kafka's own brokers: fetched with Maven, started, served and stopped, and a small herd run on each.

Marked ``kafka`` (CI runs them in .ci/run): the first fetch needs Maven Central; later ones find the
versions in herdlab's cache.
"""

from __future__ import annotations

import os
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path

import pytest

from harness.cluster.apache_kafka import ApacheKafkaCluster
from harness.cluster.kafka_dist import LINES, KafkaHome, fetch
from harness.cluster.probe import check_bootstrap
from harness.kernel.errors import ConfigError
from harness.run.runner import RunOptions, run_scenario
from harness.scenario import load_scenario
from tests.support.runs import FAST

pytestmark = [pytest.mark.slow, pytest.mark.kafka]


@pytest.fixture(scope="module", params=["3.9", "4"])
def home(request: pytest.FixtureRequest) -> Iterator[KafkaHome]:
    yield fetch(request.param)


def test_both_lines_are_fetched_with_their_broker_and_log_binding(home: KafkaHome) -> None:
    assert home.version in LINES.values()
    names = {p.name for p in home.libs.iterdir()}
    assert f"kafka_2.13-{home.version}.jar" in names and f"kafka-tools-{home.version}.jar" in names
    binding = "slf4j-reload4j-1.7.36.jar" if home.zookeeper_mode else "log4j-slf4j-impl-2.24.3.jar"
    assert binding in names
    assert fetch(home.version) == home  # cached: not fetched again


def test_maven_that_cannot_resolve_is_a_one_line_error(tmp_path: Path) -> None:
    settings = tmp_path / "settings.xml"
    settings.write_text(
        f"<settings><offline>true</offline><localRepository>{tmp_path / 'empty'}</localRepository></settings>"
    )
    env = {**os.environ, "HERDLAB_CACHE_DIR": str(tmp_path / "cache")}
    done = subprocess.run(
        [sys.executable, "-m", "harness", "kafka", "fetch", "3.9", "--settings", str(settings)],
        capture_output=True,
        text=True,
        env=env,
        timeout=300,
        check=False,
    )
    assert done.returncode == 2
    lines = done.stderr.strip().splitlines()
    assert len(lines[-1:]) == 1 and lines[-1].startswith(
        "herdlab: error: Maven could not resolve org.apache.kafka:"
    )
    assert "Traceback" not in done.stderr
    assert not (tmp_path / "cache" / "apache-kafka" / LINES["3.9"]).exists()  # nothing half-fetched
    with pytest.raises(ConfigError, match="does not exist"):
        fetch("3.9", tmp_path / "missing.xml")


def _alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    return True


def test_a_broker_starts_serves_through_the_tap_restarts_and_stops_with_nothing_left(
    home: KafkaHome, tmp_path: Path
) -> None:
    c = ApacheKafkaCluster(home.version, settings={"group.initial.rebalance.delay.ms": "0"}, workdir=tmp_path)
    with c:
        assert c.pid is not None and bool(c.zookeeper_connect) == home.zookeeper_mode
        zk_pid = c.zookeeper.process.pid if c.zookeeper and c.zookeeper.process else None
        check_bootstrap(c.bootstrap, time.monotonic() + 10)  # raises Unreachable when it does not serve
        # the broker advertises the tap, so every client request passes it
        assert f"PLAINTEXT://127.0.0.1:{c.tap.port if c.tap else 0}" in c.properties["advertised.listeners"]
        assert (tmp_path / "server.properties").read_text().count("group.initial.rebalance.delay.ms=0") == 1
        first = c.pid
        c.stop_broker()
        assert not _alive(first)
        c.start_broker()
        check_bootstrap(c.bootstrap, time.monotonic() + 10)
        pid = c.pid
    assert pid is not None and not _alive(pid)
    assert zk_pid is None or not _alive(zk_pid)
    assert "started" in (tmp_path / "kafka.log").read_text()


@pytest.mark.long
@pytest.mark.parametrize("version", ["3.9", "4"])
def test_a_small_herd_run_on_apache_kafka(version: str, tmp_path: Path) -> None:
    fetch(version)
    impls = '["legacy_zk", "coordinator"]' if version == "3.9" else '["coordinator"]'
    s = load_scenario(
        "herd-small",
        [
            *FAST,
            "group.members=2",
            "cluster.broker=apache-kafka",
            f"cluster.kafka_version={version}",
            f"implementations={impls}",
            'timeline=[{at="1s",action="join"},{at="8s",action="crash",select="oldest"}]',
        ],
    )
    result = run_scenario(s, RunOptions(out=tmp_path))
    assert not [u for u in result.units if u.get("failed")], result.units
    for u in result.units:
        assert u["broker_config"]["broker"] == "apache-kafka"
        assert u["broker_config"]["version"] == LINES[version]
        assert u["broker_config"]["properties"]["group.min.session.timeout.ms"] == "1000"
        events = (result.run_dir / "units" / u["unit"] / "events" / "tap.jsonl").read_text()
        if u["impl"] == "coordinator":
            assert '"api":"JoinGroup"' in events and '"observed":"tap"' in events


@pytest.mark.long
def test_the_documented_migration_on_apache_kafka_3_9_is_proved_from_kafkas_own_commit_answers(
    tmp_path: Path,
) -> None:
    """The built-in ``migration`` on Apache Kafka 3.9 (ZooKeeper mode): the legacy members dual-commit
    into Kafka's offsets, coordinator members take over on Kafka's own group coordinator, and the proof's
    broker-side commits are Kafka's answers to OffsetCommit as the tap decoded them."""
    from tests.support.migration import run_migration

    fetch("3.9")
    events, metrics, _members = run_migration(
        "migration", tmp_path, ("cluster.broker=apache-kafka", "cluster.kafka_version=3.9")
    )
    (unit,) = metrics["units"]
    assert unit["broker"] == f"apache-kafka {LINES['3.9']}"
    m = metrics["migration"]
    assert (m["expect"], m["verdict"], m["as_expected"]) == ("clean", "clean", True)
    # both kinds of member committed into Kafka, and Kafka's answers are in the history (from the tap):
    # the legacy members' dual commits before the switch, the coordinator members' after it
    switch_at = min(e["ts_ns"] for e in events if e["kind"] == "invoke" and e.get("migration") == "switch")
    accepted = [e["ts_ns"] for e in events if e["kind"] == "commit" and e.get("observed") == "tap"]
    assert any(t < switch_at for t in accepted) and any(t > switch_at for t in accepted)
    (switch,) = unit["migration"]["switches"]
    for p in switch["partitions"]:
        assert p["lost"] == 0, p
        assert p["kafka_committed"] is not None, p
