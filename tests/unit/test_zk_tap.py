"""The ZooKeeper tap's pure parts: connect strings, the registration path, loopback only."""

from __future__ import annotations

import pytest

from harness.cluster.zk_tap import ZooKeeperTap, parse_connect, registered_member
from harness.kernel.history import NullHistory


def test_a_connect_string_is_its_servers_and_its_chroot() -> None:
    assert parse_connect("127.0.0.1:2181") == ([("127.0.0.1", 2181)], "")
    assert parse_connect("127.0.0.1:1, 127.0.0.2:2/kafka/a") == (
        [("127.0.0.1", 1), ("127.0.0.2", 2)],
        "/kafka/a",
    )


def test_the_tap_offers_one_listener_per_server_and_keeps_the_chroot() -> None:
    tap = ZooKeeperTap("127.0.0.1:1,127.0.0.1:2/c", NullHistory())
    tap.ports = [5001, 5002]  # as start() binds them
    assert tap.connect == "127.0.0.1:5001,127.0.0.1:5002/c"


def test_the_registering_path_names_the_consumer_id_under_any_chroot() -> None:
    assert registered_member("/consumers/g/ids/g_host-1-ab") == "g_host-1-ab"
    assert registered_member("/chroot/consumers/g/ids/c1") == "c1"
    assert registered_member("/consumers/g/owners/t/0") is None
    assert registered_member("/consumers/g/ids") is None
    assert registered_member(None) is None


def test_only_loopback_addresses() -> None:
    with pytest.raises(ValueError, match="loopback"):
        ZooKeeperTap("10.0.0.1:2181", NullHistory())
    with pytest.raises(ValueError, match="loopback"):
        ZooKeeperTap("127.0.0.1:2181", NullHistory(), listen_host="0.0.0.0")
