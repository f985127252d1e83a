"""``herdlab clients list|build`` and the run's client check: every client listed with how it runs; a
client with nothing to build, an unknown one and a machine without the JDK are one-line errors; a scenario
whose client cannot run here fails its check naming the client and what is missing."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

from harness.kernel.errors import ConfigError
from harness.kernel.events import CLIENTS, LEGACY_CLIENTS
from harness.run.clients import case_clients, check_clients
from harness.scenario import expand, load_scenario


def _herdlab(*args: str, path: str | None = None) -> subprocess.CompletedProcess[str]:
    env = None if path is None else {"PATH": path, "HERDLAB_CACHE_DIR": "/nonexistent-herdlab-cache"}
    return subprocess.run(
        [sys.executable, "-m", "harness", *args], capture_output=True, text=True, timeout=60, env=env
    )


def test_list_names_every_client_once_with_its_kind() -> None:
    out = _herdlab("clients", "list")
    assert out.returncode == 0, out.stderr
    rows = [line.split()[:2] for line in out.stdout.splitlines()]
    assert [r[0] for r in rows] == [*CLIENTS, *LEGACY_CLIENTS]
    assert {r[0]: r[1] for r in rows} == {
        **dict.fromkeys(CLIENTS, "coordinator"),
        "kafka-0.8.2.2": "legacy_zk",
    }


@pytest.mark.parametrize(
    ("target", "message"),
    [
        (
            "kafka-python",
            "herdlab: error: client 'kafka-python' has nothing to build (it is a Python library)",
        ),
        ("nosuch", "herdlab: error: unknown client 'nosuch' (known: "),
        ("java@", "herdlab: error: 'java@': expected CLIENT or CLIENT@VERSION"),
    ],
)
def test_build_of_what_cannot_be_built_is_one_line(target: str, message: str) -> None:
    out = _herdlab("clients", "build", target)
    assert out.returncode == 2
    assert out.stderr.startswith(message) and out.stderr.count("\n") == 1


def test_build_without_a_jdk_says_what_is_missing(tmp_path: Path) -> None:
    out = _herdlab("clients", "build", "java", path=str(tmp_path))  # an empty PATH: no java, javac, mvn
    assert out.returncode == 2
    assert out.stderr == (
        "herdlab: error: client 'java' cannot run here: java not found on PATH: install a JDK 17 or newer\n"
    )


def test_a_scenario_whose_client_cannot_run_here_fails_its_check(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    s = load_scenario("herd-small", ['implementations=["coordinator"]', 'group.coordinator.client="java"'])
    cases = expand(s)
    assert case_clients(cases) == [("java", None)]
    monkeypatch.setenv("PATH", str(tmp_path))
    with pytest.raises(ConfigError, match="^client 'java' cannot run here: java not found on PATH"):
        check_clients(cases)


def test_only_the_coordinator_units_clients_are_needed() -> None:
    s = load_scenario("herd-small", ['implementations=["legacy_zk"]', 'group.coordinator.client="java"'])
    assert case_clients(expand(s)) == []
