"""The client registry (harness.members.clients.registry): one table whose names are the kernel's
``CLIENTS``; each Python client's member class, imported only when asked for; a child client's command line;
and a hand-made child client (a Python program printing the JSON lines) registered and made through the
registry, of both member kinds."""

from __future__ import annotations

import subprocess
import sys
import threading
from pathlib import Path
from typing import Any, get_args

import pytest

from harness.kernel.errors import ConfigError
from harness.kernel.events import CLIENTS, LEGACY_CLIENTS, MEMBER_KINDS
from harness.members.child import ChildMember
from harness.members.clients.registry import (
    CLIENT_SPECS,
    ChildClient,
    MemberKind,
    PythonClient,
    child_argv,
    clients_of,
    hold,
    make_member,
    member_class,
)
from harness.members.recorder import MemberConfig
from harness.scenario.model import CoordinatorSettings
from tests.support.recording import RecordingHistory
from tests.support.waiting import wait_until


def _config(client: str, **kw: Any) -> MemberConfig:
    return MemberConfig(bootstrap="127.0.0.1:1", group="g", topic="t", name="m0", client=client, **kw)


def test_the_table_holds_exactly_the_kernels_client_names_in_its_order() -> None:
    assert tuple(CLIENT_SPECS) == CLIENTS + LEGACY_CLIENTS
    assert CLIENTS == ("kafka-python", "librdkafka", "aiokafka", "java", "kafka-go", "franz-go")
    assert LEGACY_CLIENTS == ("kafka-0.8.2.2",)
    assert clients_of("coordinator") == CLIENTS
    assert clients_of("legacy_zk") == LEGACY_CLIENTS
    assert set(get_args(MemberKind)) == set(MEMBER_KINDS)


def test_the_scenario_models_client_choice_is_the_kernels_list() -> None:
    assert get_args(CoordinatorSettings.model_fields["client"].annotation) == CLIENTS


def test_each_python_client_has_its_member_class_and_library() -> None:
    python = [c for c, s in CLIENT_SPECS.items() if isinstance(s, PythonClient)]
    assert {c: member_class(c).__name__ for c in python} == {
        "kafka-python": "KafkaPythonMember",
        "librdkafka": "LibrdkafkaMember",
        "aiokafka": "AiokafkaMember",
    }
    libraries = {c: s.library for c, s in CLIENT_SPECS.items() if isinstance(s, PythonClient)}
    assert libraries == {"kafka-python": "kafka", "librdkafka": "confluent_kafka", "aiokafka": "aiokafka"}


def test_java_is_a_coordinator_child_whose_command_is_the_built_programs(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    spec = CLIENT_SPECS["java"]
    assert isinstance(spec, ChildClient) and spec.kind == "coordinator"
    monkeypatch.setenv("HERDLAB_CACHE_DIR", str(tmp_path))
    with pytest.raises(
        ConfigError, match=r"kafka-clients 4\.1\.1 is not built: run `herdlab clients build java`"
    ):
        spec.command_for(_config("java", client_version="4"))


def test_an_unknown_client_is_an_error_naming_the_known_ones() -> None:
    with pytest.raises(
        ValueError,
        match="unknown client 'nope' \\(known: kafka-python, librdkafka, aiokafka, java, kafka-go, franz-go, kafka-0.8.2.2\\)",
    ):
        make_member(_config("nope"), RecordingHistory())  # pyright: ignore[reportArgumentType]


#: The client modules of ours and the libraries of the other two clients (kafka-python's library is left
#: out: the scenario model, which the history writer imports, checks producer properties with it).
LAZY = """
import sys
from harness.members.clients import registry
watched = ("confluent_kafka", "aiokafka", "asyncio")
watched += tuple(f"harness.members.clients.{m}" for m in ("kafka_python", "librdkafka", "aiokafka"))
print(sorted(m for m in watched if m in sys.modules))
registry.member_class("kafka-python")
print(sorted(m for m in watched if m in sys.modules))
"""


def test_the_registry_imports_a_clients_modules_only_when_that_client_is_asked_for() -> None:
    out = subprocess.run([sys.executable, "-c", LAZY], capture_output=True, text=True, timeout=60, check=True)
    assert out.stdout.splitlines() == ["[]", "['harness.members.clients.kafka_python']"]


def test_the_go_clients_are_child_clients_of_the_coordinator_kind() -> None:
    for client in ("kafka-go", "franz-go"):
        spec = CLIENT_SPECS[client]
        assert isinstance(spec, ChildClient) and spec.kind == "coordinator"
        with pytest.raises(ValueError, match="is a child process, not a Python member class"):
            member_class(client)


def test_a_childs_command_line_carries_the_members_settings() -> None:
    config = _config("java", properties={"session.timeout.ms": "6000", "a": "b=c"}, group_instance_id="i-0")
    assert child_argv(["java", "-jar", "m.jar"], config, Path("/h/release")) == [
        *("java", "-jar", "m.jar"),
        *("--bootstrap", "127.0.0.1:1", "--group", "g", "--topic", "t", "--name", "m0"),
        *("--group-instance-id", "i-0"),
        *("-X", "session.timeout.ms=6000", "-X", "a=b=c"),
        *("--hold-until", "/h/release"),
    ]
    assert child_argv(["go-member"], _config("go")) == [
        *("go-member", "--bootstrap", "127.0.0.1:1", "--group", "g", "--topic", "t", "--name", "m0")
    ]


#: A coordinator-kind child: says what command line it got (in ``started``), is assigned two partitions, and
#: on SIGTERM gives them back and stops.
CHILD = """
import json, signal, sys
signal.pthread_sigmask(signal.SIG_BLOCK, {signal.SIGTERM})
def out(**e):
    print(json.dumps(e), flush=True)
out(kind="ready")
out(kind="started", argv=sys.argv[1:])
out(kind="joined", generation=1, member="m-1")
out(kind="assigned", partitions=[1, 0])
signal.sigwait({signal.SIGTERM})
out(kind="revoked", partitions=[0, 1], lost=False)
out(kind="stopped", clean=True)
"""


def test_a_hand_made_child_client_is_registered_and_made_through_the_registry(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setitem(
        CLIENT_SPECS, "py-child", ChildClient([sys.executable, "-c", CHILD], kind="coordinator")
    )
    history = RecordingHistory()
    changes: list[tuple[str, list[int], int]] = []
    config = _config("py-child", properties={"session.timeout.ms": "6000"})
    member = make_member(config, history, lambda *c: changes.append(c))  # pyright: ignore[reportArgumentType]
    assert isinstance(member, ChildMember)
    t = threading.Thread(target=member.run)
    t.start()
    wait_until(lambda: changes, timeout=30, what="the child's assignment")
    member.stop(clean=True)
    t.join(30)
    assert not t.is_alive()
    (started,) = history.of("started")
    assert started["argv"] == [
        *("--bootstrap", "127.0.0.1:1", "--group", "g", "--topic", "t", "--name", "m0"),
        *("-X", "session.timeout.ms=6000"),
    ]
    assert started["library"] == "py-child"
    assert changes == [("assigned", [0, 1], 1), ("revoked", [0, 1], 1)]
    assert [e["kind"] for e in history.events] == [
        *("ready", "started", "assigned", "assigned", "rebalance_end"),
        *("rebalance_begin", "revoked", "revoked", "stopped"),
    ]
    assert history.of("stopped")[0]["clean"] is True


LEGACY_CHILD = """
import json
for e in ({"kind": "ready", "member": "c-1"}, {"kind": "registered"}):
    print(json.dumps(e), flush=True)
"""


def test_a_legacy_kind_child_client_writes_the_legacy_members_events(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setitem(
        CLIENT_SPECS, "py-legacy", ChildClient([sys.executable, "-c", LEGACY_CHILD], kind="legacy_zk")
    )
    assert clients_of("legacy_zk") == (*LEGACY_CLIENTS, "py-legacy")
    history = RecordingHistory()
    member = make_member(_config("py-legacy"), history)  # pyright: ignore[reportArgumentType]
    member.run()  # the child exits 0 after its lines: the member ends, unclean
    head = {"source": "m0", "impl": "legacy_zk", "group": "g", "member": "c-1"}
    assert history.events == [
        {"kind": "ready", **head},
        {"kind": "registered", **head},
        {"kind": "stopped", **head, "clean": False},
    ]


def test_a_child_holds_itself_and_a_python_member_is_held_until_its_release_file(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setitem(CLIENT_SPECS, "py-child", ChildClient(["true"], kind="coordinator"))
    release = tmp_path / "release"
    hold("py-child", release)  # returns at once: no release file, the child waits for it
    release.touch()
    hold("kafka-python", release)
    assert not release.exists()  # the hold consumed it
    assert "kafka" in sys.modules
