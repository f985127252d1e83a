# pyright: strict
"""What the harness itself asks the brokers: who coordinates a group, and what it returns for it.

Contract
--------
* :func:`find_coordinator` asks each broker of ``bootstrap`` in turn (FindCoordinator v1, key type
  group, client id ``herdlab-harness``, so the checker does not count it as the group's traffic) and
  returns the ``node_id`` of the first answer without error; ``None`` when no broker answers so within
  ``timeout`` seconds (each attempt bounded by the time left). It works with and without replication:
  the broker's answer is whatever it takes the coordinator to be.
* :func:`fetch_offsets` finds the coordinator that way and asks *it* (OffsetFetch v5) for the committed
  offsets of ``topic`` partitions ``0..partitions-1``: an :class:`OffsetsAnswer` with the broker id and
  ``"<topic>/<partition>" -> offset`` (-1: none), or, when no coordinator answered without error within
  ``timeout``, ``error`` = the last error name seen (Kafka's name, e.g. ``COORDINATOR_LOAD_IN_PROGRESS``,
  ``NOT_COORDINATOR``, or ``COORDINATOR_NOT_AVAILABLE`` when no broker named one, or the connection
  error's class name). A retriable answer is asked again until ``timeout``.
* Nothing here raises for a broker that is down, paused or cut: every socket has a deadline.

Only loopback brokers are ever asked (the cluster's own addresses). Pure Kafka protocol over a socket,
with kafka-python's codec (kafka-python's clients would spawn threads and retry on their own).
"""

from __future__ import annotations

import socket
import struct
import time
from dataclasses import dataclass, field
from typing import Any, cast

HARNESS_CLIENT_ID = "herdlab-harness"
FIND_COORDINATOR_V = 1
OFFSET_FETCH_V = 5
_POLL_S = 0.2  # between two attempts while the coordinator is not ready


@dataclass(frozen=True)
class OffsetsAnswer:
    """What :func:`fetch_offsets` got: ``broker_id`` (None when no coordinator answered), ``offsets``
    (``"<topic>/<partition>"`` -> committed offset, -1 for none) and ``error`` (None, or the name)."""

    broker_id: int | None
    offsets: dict[str, int] = field(default_factory=dict[str, int])
    error: str | None = None


def _error_name(code: int) -> str:
    import kafka.errors

    try:
        error = cast(Any, kafka.errors).for_code(code)
        return str(error.message)
    except Exception:  # noqa: BLE001 - a code kafka-python does not know
        return f"UNKNOWN({code})"


def _addresses(bootstrap: str) -> list[tuple[str, int]]:
    out: list[tuple[str, int]] = []
    for item in bootstrap.split(","):
        host, _, port = item.strip().rpartition(":")
        if host:
            out.append((host, int(port)))
    return out


def _call(address: tuple[str, int], request: Any, version: int, timeout: float) -> Any:
    """One request on a fresh connection; the decoded response (OSError / TimeoutError on failure)."""
    with socket.create_connection(address, timeout=timeout) as sock:
        sock.settimeout(timeout)
        request.API_VERSION = version
        request.with_header(correlation_id=1, client_id=HARNESS_CLIENT_ID)
        sock.sendall(bytes(request.encode(header=True, framed=True)))
        size = struct.unpack(">i", _recv(sock, 4))[0]
        frame = _recv(sock, size)
    return request.header.get_response_class().decode(frame, version=version, header=True)


def _recv(sock: socket.socket, n: int) -> bytes:
    chunks: list[bytes] = []
    while n:
        data = sock.recv(n)
        if not data:
            raise ConnectionError("connection closed by the broker")
        chunks.append(data)
        n -= len(data)
    return b"".join(chunks)


def _coordinator_once(
    bootstrap: str, group: str, deadline: float
) -> tuple[int | None, tuple[str, int] | None, str]:
    """One round over the brokers: (node id, address, '') of the first error-free answer, or
    (None, None, last error name)."""
    from kafka.protocol.metadata.find_coordinator import FindCoordinatorRequest

    error = "COORDINATOR_NOT_AVAILABLE"
    for address in _addresses(bootstrap):
        left = deadline - time.monotonic()
        if left <= 0:
            break
        try:
            r = _call(
                address, FindCoordinatorRequest(key=group, key_type=0), FIND_COORDINATOR_V, min(left, 2.0)
            )
        except (OSError, ConnectionError, ValueError) as e:
            error = type(e).__name__
            continue
        if r.error_code == 0:
            return int(r.node_id), (str(r.host), int(r.port)), ""
        error = _error_name(int(r.error_code))
    return None, None, error


def find_coordinator(bootstrap: str, group: str, timeout: float = 10.0) -> int | None:
    """The id of the broker that coordinates ``group`` now, or None (see the module contract)."""
    deadline = time.monotonic() + timeout
    while True:
        node, _, _ = _coordinator_once(bootstrap, group, deadline)
        if node is not None or time.monotonic() + _POLL_S >= deadline:
            return node
        time.sleep(_POLL_S)  # retry pacing toward a deadline, not synchronisation


def fetch_offsets(
    bootstrap: str, group: str, topic: str, partitions: int, timeout: float = 15.0
) -> OffsetsAnswer:
    """The group's committed offsets of ``topic`` as its coordinator returns them (see the contract)."""
    from kafka.protocol.consumer import OffsetFetchRequest  # pyright: ignore[reportMissingTypeStubs]

    deadline = time.monotonic() + timeout
    error = "COORDINATOR_NOT_AVAILABLE"
    while True:
        node, address, error_now = _coordinator_once(bootstrap, group, deadline)
        error = error_now or error
        if node is not None and address is not None:
            left = deadline - time.monotonic()
            topics = [
                OffsetFetchRequest.OffsetFetchRequestTopic(
                    name=topic, partition_indexes=list(range(partitions))
                )
            ]
            try:
                r = _call(
                    address,
                    OffsetFetchRequest(group_id=group, topics=topics),
                    OFFSET_FETCH_V,
                    max(0.1, min(left, 5.0)),
                )
            except (OSError, ConnectionError, ValueError) as e:
                error = type(e).__name__
            else:
                error = _fetch_error(r)
                if error is None:
                    offsets = {
                        f"{t.name}/{p.partition_index}": int(p.committed_offset)
                        for t in r.topics
                        for p in t.partitions
                    }
                    return OffsetsAnswer(node, offsets)
        if time.monotonic() + _POLL_S >= deadline:
            return OffsetsAnswer(None, error=error)
        time.sleep(_POLL_S)  # retry pacing toward a deadline, not synchronisation


def _fetch_error(response: Any) -> str | None:
    """The error of an OffsetFetch answer: the top-level one, else the first partition's; None if none."""
    if int(response.error_code) != 0:
        return _error_name(int(response.error_code))
    for t in response.topics:
        for p in t.partitions:
            if int(p.error_code) != 0:
                return _error_name(int(p.error_code))
    return None
