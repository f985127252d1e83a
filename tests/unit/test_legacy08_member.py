"""The original 0.8.2.2 consumer as a legacy_zk member kind, its pure parts: the scenario setting
``group.legacy_zk.client`` and its checks, the clients a run builds, the member's command line, the unit's
report column, and the build module's refusals (no JVM, no Maven here)."""

from __future__ import annotations

from pathlib import Path

import pytest

from harness.analysis.units import columns
from harness.kernel.errors import ConfigError
from harness.members import legacy08_dist
from harness.members.recorder import MemberConfig
from harness.run.clients import case_clients
from harness.run.launch import Endpoints, legacy_argv
from harness.scenario import load_scenario
from harness.scenario.loading import expand

ORIGINAL = [
    'implementations=["legacy_zk"]',
    'group.legacy_zk.client="kafka-0.8.2.2"',
    'cluster.broker="apache-kafka"',
    'cluster.kafka_version="3.9"',
]


def test_herdlab_s_own_member_is_the_default_and_needs_nothing_built() -> None:
    s = load_scenario("herd-small", ['implementations=["legacy_zk"]'])
    assert s.group.legacy_zk.client == "python"
    assert case_clients(expand(s)) == []
    argv = legacy_argv(s, "m0", Endpoints("zk:1", "b:2"), Path("h.jsonl"), "g", "t")
    assert "--client" not in argv


def test_the_original_runs_on_apache_kafka_3_9_and_is_built_at_set_up() -> None:
    s = load_scenario("herd-small", ORIGINAL)
    assert case_clients(expand(s)) == [("kafka-0.8.2.2", None)]
    argv = legacy_argv(s, "m0", Endpoints("zk:1", "b:2"), Path("h.jsonl"), "g", "t")
    assert argv[argv.index("--client") + 1] == "kafka-0.8.2.2"
    assert argv[argv.index("--zookeeper") + 1] == "zk:1"
    # an exact 3.9 version is the 3.9 line too
    load_scenario("herd-small", [*ORIGINAL[:-1], 'cluster.kafka_version="3.9.2"'])


def test_the_original_is_counted_through_the_zookeeper_tap_unless_told_otherwise() -> None:
    assert load_scenario("herd-small", ORIGINAL).zookeeper_tapped  # unset: on with the original
    assert load_scenario("herd-small", [*ORIGINAL, "cluster.zookeeper_tap=true"]).zookeeper_tapped
    own = ['implementations=["legacy_zk"]']
    assert not load_scenario("herd-small", own).zookeeper_tapped  # unset: off with herdlab's member
    assert load_scenario("herd-small", [*own, "cluster.zookeeper_tap=true"]).zookeeper_tapped


@pytest.mark.parametrize(
    ("overrides", "message"),
    [
        (
            ['cluster.broker="herdlab"'],
            "group.legacy_zk.client = 'kafka-0.8.2.2' needs cluster.broker = 'apache-kafka' with kafka_version "
            "3.9, a broker that still serves 0.8 clients (not 'herdlab')",
        ),
        (
            ['cluster.kafka_version="3.8.1"'],
            "needs cluster.broker = 'apache-kafka' with kafka_version 3.9, a broker that still serves 0.8 "
            "clients (not 'apache-kafka' 3.8.1)",
        ),
        (["group.legacy_zk.takeover_delay_ms=500"], "group.legacy_zk.takeover_delay_ms is herdlab's own"),
        (["group.legacy_zk.fenced_commits=true"], "group.legacy_zk.fenced_commits is herdlab's own"),
        (
            ['group.legacy_zk.offsets_storage="kafka"'],
            "group.legacy_zk.offsets_storage = 'kafka' is herdlab's own",
        ),
        (
            ["cluster.zookeeper_tap=false"],
            "group.legacy_zk.client = 'kafka-0.8.2.2' needs cluster.zookeeper_tap",
        ),
    ],
)
def test_what_the_original_cannot_run_with_is_a_one_line_error(overrides: list[str], message: str) -> None:
    with pytest.raises(ConfigError) as e:
        load_scenario("herd-small", [*ORIGINAL, *overrides])
    assert message in str(e.value)
    assert "\n" not in str(e.value).split(": ", 1)[-1].strip()


def test_a_migration_of_the_original_is_refused() -> None:
    with pytest.raises(ConfigError, match="timeline actions switch migrate herdlab's legacy members"):
        load_scenario(
            "herd-small",
            [*ORIGINAL, 'timeline=[{at="1s",action="switch",to="coordinator"}]'],
        )


def test_a_legacy_unit_s_client_column_names_only_the_original() -> None:
    scenario = {"group": {"legacy_zk": {"client": "python"}}}
    assert columns("legacy_zk", None, {}, scenario)["client"] == ""
    assert columns("legacy_zk", None, {}, {})["client"] == ""
    assert columns("legacy_zk", None, {"group.legacy_zk.client": "kafka-0.8.2.2"}, scenario)["client"] == (
        "kafka-0.8.2.2"
    )


def test_the_build_module_builds_one_client_of_one_version(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("HERDLAB_CACHE_DIR", str(tmp_path))
    with pytest.raises(ConfigError, match="is not built by harness.members.legacy08_dist"):
        legacy08_dist.build("java")
    with pytest.raises(ConfigError, match=r"has one version \(0.8.2.2\), not '0.9.0.1'"):
        legacy08_dist.missing("kafka-0.8.2.2", "0.9.0.1")
    config = MemberConfig(bootstrap="zk:1", group="g", topic="t", name="m0", client="kafka-0.8.2.2")
    with pytest.raises(
        ConfigError, match="^the kafka-0.8.2.2 member is not built: run `herdlab clients build"
    ):
        legacy08_dist.command(config)
    monkeypatch.setenv("PATH", str(tmp_path))
    assert legacy08_dist.missing("kafka-0.8.2.2") == "java not found on PATH: install a JDK 17 or newer"
    assert legacy08_dist.source().name == "HerdlabLegacyMember.java" and legacy08_dist.source().is_file()
