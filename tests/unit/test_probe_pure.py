"""Pure parts of the address check (harness.cluster.probe): address parsing and client log capture."""

from __future__ import annotations

import logging

import pytest

from harness.cluster.probe import client_logs_captured, last_problem, split_hosts
from harness.kernel.errors import ConfigError


@pytest.mark.parametrize(
    ("value", "default_port", "expected"),
    [
        ("127.0.0.1:9093", 9092, [("127.0.0.1", 9093)]),
        ("kafka-1:19092, kafka-2", 9092, [("kafka-1", 19092), ("kafka-2", 9092)]),
        ("zk1:2181,zk2:2182/herd/chroot", 2181, [("zk1", 2181), ("zk2", 2182)]),
        ("zk1/chroot", 2181, [("zk1", 2181)]),
        ("[::1]:9094,[::1]", 9092, [("::1", 9094), ("::1", 9092)]),
    ],
)
def test_split_hosts_reads_host_port_lists(
    value: str, default_port: int, expected: list[tuple[str, int]]
) -> None:
    assert split_hosts(value, default_port, "bootstrap") == expected


@pytest.mark.parametrize(
    ("value", "message"),
    [
        ("127.0.0.1:x", "'127.0.0.1:x' has no valid port"),
        ("127.0.0.1:70000", "'127.0.0.1:70000' has no valid port"),
        (":9092", "':9092' has no host name"),
        (" , ", "no address in"),
        ("[::1]9092", "'[::1]9092' is not HOST:PORT"),
    ],
)
def test_split_hosts_rejects_malformed_addresses_naming_them(value: str, message: str) -> None:
    with pytest.raises(ConfigError, match="^bootstrap: ") as e:
        split_hosts(value, 9092, "bootstrap")
    assert message in str(e.value)


def test_client_logs_are_kept_during_the_block_and_flow_again_after(
    caplog: pytest.LogCaptureFixture,
) -> None:
    kafka_log = logging.getLogger("kafka.net.manager")
    caplog.set_level(logging.INFO)
    with client_logs_captured() as records:
        kafka_log.warning("Bootstrap connection to %s failed: %s", "bootstrap-0", "socket disconnected")
        logging.getLogger("kazoo.client").error("Connection dropped:\n  socket connection broken")
        logging.getLogger("harness.run").warning("not a client log")
    assert [r.name for r in records] == ["kafka.net.manager", "kazoo.client"]
    assert [r.name for r in caplog.records] == ["harness.run"]  # client records never reached the root
    assert last_problem(records) == "Connection dropped: socket connection broken"
    assert logging.getLogger("kafka").propagate and logging.getLogger("kazoo").propagate
    kafka_log.warning("after the block")
    assert [r.name for r in caplog.records] == ["harness.run", "kafka.net.manager"]
    assert len(records) == 2


def test_last_problem_skips_records_below_warning() -> None:
    info = logging.LogRecord("kafka", logging.INFO, __file__, 1, "connected", None, None)
    warn = logging.LogRecord("kafka", logging.WARNING, __file__, 1, "timed out after %d ms", (500,), None)
    assert last_problem([warn, info]) == "timed out after 500 ms"
    assert last_problem([info]) == ""
