"""The external backend checks its addresses before anything starts: one line naming address and cause.

Real processes only: the session's ZooKeeper, herdlab brokers, ``herdlab`` as a subprocess. A port
"nobody listens on" is a socket of the test's own that is bound but not listening (a connect is
refused, and no other process can take the port meanwhile); a "silent" server is a socket that
listens but never reads or answers (the kernel completes the TCP handshake).
"""

from __future__ import annotations

import os
import re
import socket
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest

from harness.cluster.broker import BrokerProcess
from harness.cluster.external import ExternalCluster
from harness.cluster.probe import REQUEST_TIMEOUT_S
from harness.cluster.zookeeper import ZooKeeperServer
from harness.kernel.errors import Unreachable
from harness.run.runner import RunOptions, run_scenario
from harness.scenario import load_scenario
from tests.support.brokers import BrokerFactory

HERDLAB = os.path.join(os.path.dirname(sys.executable), "herdlab")


def _socket(listen: bool) -> Iterator[str]:
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as s:
        s.bind(("127.0.0.1", 0))
        if listen:
            s.listen(8)
        yield f"127.0.0.1:{s.getsockname()[1]}"


@pytest.fixture
def refused() -> Iterator[str]:
    """``host:port`` where a TCP connect is refused."""
    yield from _socket(listen=False)


@pytest.fixture
def silent() -> Iterator[str]:
    """``host:port`` that accepts TCP connections and never answers."""
    yield from _socket(listen=True)


def _run_external(tmp_path: Path, bootstrap: str, zookeeper: str) -> subprocess.CompletedProcess[str]:
    out = tmp_path / "reports"
    r = subprocess.run(
        [HERDLAB, "run", "herd-small", "--backend", "external", "--bootstrap", bootstrap]
        + ["--zookeeper", zookeeper, "--out", str(out)],
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert not out.exists(), "a run directory was made before the addresses were checked"
    return r


def _one_error_line(r: subprocess.CompletedProcess[str]) -> str:
    assert r.returncode == 2, r.stderr
    assert "Traceback" not in r.stderr
    lines = r.stderr.splitlines()
    assert len(lines) == 1, r.stderr  # no kafka-python / kazoo log lines, no progress
    assert lines[0].startswith("herdlab: error: ")
    assert r.stdout == ""
    return lines[0]


def test_unreachable_bootstrap_and_zookeeper(tmp_path: Path, refused: str) -> None:
    line = _one_error_line(_run_external(tmp_path, refused, refused))
    assert line == f"herdlab: error: bootstrap server {refused} is unreachable: connection refused"


def test_reachable_zookeeper_unreachable_bootstrap(
    tmp_path: Path, refused: str, zookeeper: ZooKeeperServer
) -> None:
    line = _one_error_line(_run_external(tmp_path, refused, zookeeper.connect_string))
    assert line == f"herdlab: error: bootstrap server {refused} is unreachable: connection refused"


def test_zookeeper_port_given_as_bootstrap_is_not_a_kafka_broker(
    tmp_path: Path, zookeeper: ZooKeeperServer
) -> None:
    zk = zookeeper.connect_string
    line = _one_error_line(_run_external(tmp_path, zk, zk))
    # ZooKeeper reads the ApiVersions frame as a bad connect request and closes the connection.
    assert line.startswith(
        f"herdlab: error: bootstrap server {zk} is not a Kafka broker: it closed the connection on a "
        "Kafka ApiVersions request"
    )


def test_reachable_broker_unreachable_zookeeper(tmp_path: Path, refused: str, broker: BrokerProcess) -> None:
    line = _one_error_line(_run_external(tmp_path, broker.bootstrap, refused))
    assert line == f"herdlab: error: ZooKeeper address {refused} is unreachable: connection refused"


def test_broker_port_given_as_zookeeper_is_not_zookeeper(tmp_path: Path, broker: BrokerProcess) -> None:
    line = _one_error_line(_run_external(tmp_path, broker.bootstrap, broker.bootstrap))
    # "srvr" read as a Kafka frame size is ~1.9 GB: the broker drops the connection without a reply.
    assert line == (
        f"herdlab: error: ZooKeeper address {broker.bootstrap} is not a ZooKeeper server: it closed the "
        "connection on the srvr four-letter command without a reply"
    )


def test_the_runner_stops_on_an_unreachable_cluster_instead_of_failing_units(
    tmp_path: Path, refused: str, zookeeper: ZooKeeperServer
) -> None:
    # The runner constructs the cluster per unit: the check's error ends the run, not just a unit.
    options = RunOptions(
        backend="external", bootstrap=refused, zookeeper=zookeeper.connect_string, out=tmp_path
    )
    expected = f"bootstrap server {refused} is unreachable: connection refused"
    with pytest.raises(Unreachable, match=f"^{re.escape(expected)}$"):
        run_scenario(load_scenario("herd-small"), options)


@pytest.mark.slow
def test_silent_server_is_neither_kafka_nor_zookeeper(silent: str, broker: BrokerProcess) -> None:
    with pytest.raises(Unreachable) as e:
        ExternalCluster(None, silent)
    assert str(e.value) == (
        f"bootstrap server {silent} is not a Kafka broker: no reply to a Kafka ApiVersions request "
        f"within {REQUEST_TIMEOUT_S:.1f}s"
    )
    with pytest.raises(Unreachable) as e:
        ExternalCluster(silent, broker.bootstrap)
    assert str(e.value) == (
        f"ZooKeeper address {silent} is not a ZooKeeper server: no reply to the srvr four-letter command "
        f"within {REQUEST_TIMEOUT_S:.1f}s"
    )


def test_advertised_broker_unreachable_from_here(broker_factory: BrokerFactory) -> None:
    # The broker listens on 127.0.0.1 only; advertising 127.0.0.2 sends clients where nothing listens.
    b = broker_factory(broker_id=3, extra_args=["--advertised-host", "127.0.0.2"])
    port = b.bootstrap.rpartition(":")[2]
    with pytest.raises(Unreachable) as e:
        ExternalCluster(None, b.bootstrap)
    assert str(e.value) == (
        f"bootstrap server {b.bootstrap} advertises broker 3 at 127.0.0.2:{port}, which is unreachable "
        "from here: connection refused"
    )


def test_a_real_cluster_passes_and_says_what_answered(
    zookeeper: ZooKeeperServer, broker: BrokerProcess
) -> None:
    zk, bootstrap = zookeeper.connect_string, broker.bootstrap
    c = ExternalCluster(f"{zk}/herdlab-check", bootstrap)
    assert [(p.role, p.address) for p in c.probes] == [
        ("bootstrap server", bootstrap),
        ("ZooKeeper address", zk),
        ("ZooKeeper address", f"{zk}/herdlab-check"),
    ]
    assert c.probes[0].detail.startswith("Kafka broker: ApiVersions lists ")
    assert c.probes[0].detail.endswith(f"brokers 0@{bootstrap}")  # advertised as the address we used
    assert c.probes[1].detail == f"ZooKeeper {zookeeper.version}"
    assert c.probes[2].detail.endswith("opened and closed; chroot /herdlab-check does not exist yet")


def test_cluster_check_of_an_external_cluster_prints_no_client_logs(
    zookeeper: ZooKeeperServer, broker: BrokerProcess
) -> None:
    zk, bootstrap = zookeeper.connect_string, broker.bootstrap
    # -vvv sets the kafka and kazoo loggers to DEBUG: every line they log would reach stderr.
    r = subprocess.run(
        [HERDLAB, "-vvv", "cluster", "check", "--bootstrap", bootstrap, "--zookeeper", zk],
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert r.returncode == 0, r.stderr
    assert bootstrap in r.stdout and zk in r.stdout and "pass" in r.stdout
    client_lines = [ln for ln in r.stderr.splitlines() if " kafka." in ln or " kazoo." in ln]
    assert client_lines == []
