"""The Go clients' pure parts: their option tables (harness/members/go/*/options.json), Kafka's typed
shorthands mapped to each client's own options, the one-line errors for a name or value a client cannot
take (properties.go_options and the scenario check), and go_dist's answers without a build."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from harness.kernel.errors import ConfigError
from harness.members import go_dist
from harness.members.recorder import MemberConfig
from harness.run.launch import Endpoints, coordinator_argv
from harness.scenario import load_scenario
from harness.scenario.properties import check_client_properties, go_duration_ms, go_option_table, go_options


def test_kafka_gos_typed_shorthands_become_its_consumer_group_fields() -> None:
    props = {
        "session.timeout.ms": "6000",
        "heartbeat.interval.ms": "500",
        "max.poll.interval.ms": "30000",
        "metadata.max.age.ms": "300000",
        "partition.assignment.strategy": "roundrobin,range",
        "auto.offset.reset": "latest",
        "enable.auto.commit": "true",
        "auto.commit.interval.ms": "200",
    }
    assert go_options("kafka-go", props) == {
        "SessionTimeout": "6000ms",
        "HeartbeatInterval": "500ms",
        "RebalanceTimeout": "30000ms",  # Kafka's consumers send max.poll.interval.ms as the rebalance timeout
        "PartitionWatchInterval": "300000ms",
        "GroupBalancers": "roundrobin,range",
        "StartOffset": "LastOffset",
    }


def test_franz_gos_typed_shorthands_become_its_kgo_options() -> None:
    props = {"max.poll.interval.ms": "45000", "metadata.max.age.ms": "1000", "auto.offset.reset": "earliest"}
    assert go_options("franz-go", props) == {
        "RebalanceTimeout": "45000ms",
        "MetadataMaxAge": "1000ms",
        "ConsumeResetOffset": "AtStart",
    }


def test_a_clients_own_name_wins_over_the_shorthand_mapped_to_the_same_option() -> None:
    props = {"session.timeout.ms": "6000", "SessionTimeout": "10s", "MaxWait": "250ms", "MinBytes": 1}
    assert go_options("kafka-go", props) == {"SessionTimeout": "10s", "MaxWait": "250ms", "MinBytes": "1"}
    assert go_options("franz-go", {"SessionTimeout": "7s", "session.timeout.ms": "6000"}) == {
        "SessionTimeout": "7s"
    }


@pytest.mark.parametrize(
    ("client", "props", "message"),
    [
        ("kafka-go", {"fetch.min.bytes": "1"}, "unknown kafka-go option 'fetch.min.bytes'"),
        ("franz-go", {"SessionTimeOut": "1s"}, "unknown franz-go option 'SessionTimeOut'"),
        ("kafka-go", {"CommitInterval": "1s"}, "unknown kafka-go option 'CommitInterval'"),
        ("kafka-go", {"SessionTimeout": "10"}, "kafka-go option 'SessionTimeout': bad value '10'"),
        ("franz-go", {"FetchMinBytes": "one"}, "franz-go option 'FetchMinBytes': bad value 'one'"),
        ("kafka-go", {"WatchPartitionChanges": "yes"}, "expected true or false"),
        ("kafka-go", {"partition.assignment.strategy": "cooperative-sticky"}, "kafka-go has no assignor"),
        ("franz-go", {"Balancers": "sticky,nope"}, "'nope' is not one of range, roundrobin, sticky"),
        ("kafka-go", {"auto.offset.reset": "none"}, "expected one of earliest, latest"),
        ("franz-go", {"session.timeout.ms": "6s"}, "expected an integer"),
        ("franz-go", {"group.id": "x"}, "set by the harness"),
    ],
)
def test_a_name_or_value_a_go_client_cannot_take_is_one_line_naming_it(
    client: str, props: dict[str, str], message: str
) -> None:
    with pytest.raises(ValueError, match=message) as e:
        check_client_properties(client, props)
    assert "\n" not in str(e.value)


def test_the_commit_policys_properties_are_the_members_on_a_go_client_too() -> None:
    check_client_properties("kafka-go", {"enable.auto.commit": False, "auto.commit.interval.ms": 100})
    with pytest.raises(ValueError, match="enable.auto.commit"):
        check_client_properties("franz-go", {"enable.auto.commit": "sometimes"})


def test_each_table_maps_every_typed_shorthand_to_one_of_its_options() -> None:
    shorthands = {
        "session.timeout.ms",
        "heartbeat.interval.ms",
        "max.poll.interval.ms",
        "metadata.max.age.ms",
        "partition.assignment.strategy",
        "auto.offset.reset",
        "fetch.max.wait.ms",
    }
    for client in ("kafka-go", "franz-go"):
        table = go_option_table(client)
        assert table["client"] == client
        assert set(table["kafka"]) == shorthands
        assert {k["option"] for k in table["kafka"].values()} <= set(table["options"])


def _load(*overrides: str):  # noqa: ANN202 - a Scenario
    return load_scenario("herd-small", ['implementations=["coordinator"]', *overrides])


def test_a_scenario_passes_a_go_clients_own_options_to_its_members() -> None:
    s = _load(
        'group.coordinator.client="franz-go"',
        'group.assignor="cooperative-sticky"',
        'group.coordinator.properties={SessionTimeout="10s", FetchMaxWait="100ms"}',
    )
    argv = coordinator_argv(s, "m0", Endpoints("", "127.0.0.1:9"), Path("h.jsonl"), "g", "t")
    x = dict(argv[i + 1].split("=", 1) for i, a in enumerate(argv) if a == "-X")
    assert x["SessionTimeout"] == "10s" and x["FetchMaxWait"] == "100ms"
    assert x["session.timeout.ms"] == "6000"  # the typed key is still passed; the own name wins in the member
    assert go_options("franz-go", x)["SessionTimeout"] == "10s"


@pytest.mark.parametrize(
    ("overrides", "message"),
    [
        (
            ('group.coordinator.client="kafka-go"', 'group.assignor="sticky"'),
            "not an assignor of client 'kafka-go'",
        ),
        (
            ('group.coordinator.client="kafka-go"', 'group.coordinator.properties={"fetch.min.bytes"=50}'),
            "unknown kafka-go option 'fetch.min.bytes'",
        ),
        (('group.coordinator.client="franz-go"', "group.coordinator.properties={Nope=1}"), "'Nope'"),
    ],
)
def test_a_scenario_with_what_a_go_client_cannot_take_is_an_error_naming_it(
    overrides: tuple[str, ...], message: str
) -> None:
    with pytest.raises(ConfigError, match=message):
        _load(*overrides)


def test_a_go_client_has_one_pinned_version() -> None:
    assert go_dist.resolve_version("kafka-go", None) == "0.4.51"
    assert go_dist.resolve_version("franz-go", "v1.22.3") == "1.22.3"
    with pytest.raises(ConfigError, match="builds version 0.4.51 only"):
        go_dist.resolve_version("kafka-go", "0.4.47")


def test_a_member_of_an_unbuilt_go_client_says_how_to_build_it(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("HERDLAB_CACHE_DIR", str(tmp_path))
    config = MemberConfig(bootstrap="127.0.0.1:1", group="g", topic="t", name="m0", client="kafka-go")
    with pytest.raises(ConfigError, match=r"run `herdlab clients build kafka-go`"):
        go_dist.command(config)
    bad = MemberConfig(**{**config.__dict__, "properties": {"Nope": "1"}})
    with pytest.raises(ValueError, match="unknown kafka-go option 'Nope'"):
        go_dist.command(bad)
    static = MemberConfig(**{**config.__dict__, "group_instance_id": "i-0"})
    with pytest.raises(ValueError, match="'kafka-go' has no static membership"):
        go_dist.command(static)


def test_a_build_of_other_sources_is_not_current(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("HERDLAB_CACHE_DIR", str(tmp_path))
    home = go_dist.build_dir("franz-go")
    home.mkdir(parents=True)
    marker = {"client": "franz-go", "version": "1.22.3", "sources": "0" * 16}
    (home / go_dist.MARKER).write_text(json.dumps(marker))
    assert not go_dist.built("franz-go")
    (home / go_dist.MARKER).write_text(json.dumps({**marker, "sources": go_dist.sources_digest("franz-go")}))
    assert go_dist.built("franz-go")


def test_the_sources_digest_is_of_the_programs_sources_not_of_their_go_tests(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    for d in ("franzgo", "common"):
        (tmp_path / d).mkdir()
        (tmp_path / d / "main.go").write_text("package main\n")
    monkeypatch.setattr(go_dist, "SOURCES", tmp_path)
    before = go_dist.sources_digest("franz-go")
    (tmp_path / "franzgo" / "main_test.go").write_text("package main\n")
    assert go_dist.sources_digest("franz-go") == before
    (tmp_path / "franzgo" / "main.go").write_text("package main\n\n// changed\n")
    assert go_dist.sources_digest("franz-go") != before


def test_without_go_on_path_missing_says_so(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("HERDLAB_CACHE_DIR", str(tmp_path))
    monkeypatch.setenv("PATH", str(tmp_path))
    assert go_dist.missing("franz-go", None) == (
        "go not found on PATH: install Go 1.26 or newer to build the franz-go member"
    )
    with pytest.raises(ConfigError, match="go not found on PATH"):
        go_dist.build("franz-go")


def test_gos_last_error_line_is_the_one_reported() -> None:
    out = 'go: downloading x v1\n\ngo: github.com/x@v1: Get "https://proxy.golang.org/x": dial tcp: refused\n'
    assert go_dist.go_error(out) == 'go: github.com/x@v1: Get "https://proxy.golang.org/x": dial tcp: refused'


def test_go_durations_in_milliseconds() -> None:
    assert go_duration_ms("250ms") == 250
    assert go_duration_ms("1m30s") == 90_000
    assert go_duration_ms("1.5s") == 1_500
    assert go_duration_ms("0") == 0
    assert go_duration_ms("10") is None and go_duration_ms("soon") is None


def test_a_go_clients_fetch_wait_bounds_the_processing_gap() -> None:
    from harness.scenario.processing import fetch_and_poll_ms

    kafka_go = _load('group.coordinator.client="kafka-go"')
    assert fetch_and_poll_ms(kafka_go, "coordinator") == 10_000 + 200  # MaxWait's default, one poll window
    franz = _load(
        'group.coordinator.client="franz-go"', 'group.coordinator.properties={FetchMaxWait="300ms"}'
    )
    assert fetch_and_poll_ms(franz, "coordinator") == 300 + 200


FAKE_GO = """#!/bin/sh
if [ "$1" = env ]; then echo go1.26.0; exit 0; fi
echo "go: downloading github.com/twmb/franz-go v1.22.3" >&2
echo 'go: github.com/twmb/franz-go@v1.22.3: Get "https://proxy.golang.org/x": dial tcp: lookup proxy.golang.org: no such host' >&2
exit 1
"""


def test_a_build_that_cannot_reach_the_proxy_is_one_line_with_gos_last_error(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    bin_dir = tmp_path / "bin"
    bin_dir.mkdir()
    (bin_dir / "go").write_text(FAKE_GO)
    (bin_dir / "go").chmod(0o755)
    monkeypatch.setenv("PATH", str(bin_dir))
    monkeypatch.setenv("HERDLAB_CACHE_DIR", str(tmp_path / "cache"))
    lines: list[str] = []
    with pytest.raises(ConfigError) as e:
        go_dist.build("franz-go", progress=lines.append)
    assert str(e.value) == (
        "go build of the franz-go member failed: go: github.com/twmb/franz-go@v1.22.3: "
        'Get "https://proxy.golang.org/x": dial tcp: lookup proxy.golang.org: no such host'
    )
    assert lines == ["building the franz-go 1.22.3 member with go build (modules from the Go module proxy)"]
    assert list((tmp_path / "cache" / "go-member").iterdir()) == []  # nothing half-built is left


def test_a_go_older_than_the_program_needs_is_what_is_missing(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    (tmp_path / "go").write_text("#!/bin/sh\necho go1.21.5\n")
    (tmp_path / "go").chmod(0o755)
    monkeypatch.setenv("PATH", str(tmp_path))
    monkeypatch.setenv("HERDLAB_CACHE_DIR", str(tmp_path / "cache"))
    assert go_dist.missing("kafka-go", None) == (
        f"the kafka-go member needs Go 1.23 or newer; {tmp_path / 'go'} is go1.21"
    )
