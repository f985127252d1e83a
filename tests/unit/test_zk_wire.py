"""The ZooKeeper wire decoder (harness.cluster.zk_wire) on hand-made frames and on frames kazoo's own
serializers produce: handshakes, requests by op with their paths, replies matched by xid with their error
names, multi, watch notifications, split and coalesced reads, bytes that are not ZooKeeper's."""

from __future__ import annotations

import struct

import pytest
from kazoo.protocol.serialization import (
    CheckVersion,
    Close,
    Connect,
    Create,
    Create2,
    Delete,
    Exists,
    GetChildren,
    GetChildren2,
    GetData,
    Ping,
    SetData,
    Sync,
    Transaction,
)
from kazoo.security import OPEN_ACL_UNSAFE

from harness.cluster.zk_wire import (
    ConnectRequest,
    ConnectResponse,
    Conversation,
    FrameBuffer,
    Notification,
    Reply,
    Request,
    WireError,
    error_name,
    session_hex,
)


def frame(body: bytes) -> bytes:
    return struct.pack(">i", len(body)) + body


def ustring(s: str) -> bytes:
    raw = s.encode()
    return struct.pack(">i", len(raw)) + raw


def request(xid: int, opcode: int, body: bytes = b"") -> bytes:
    return frame(struct.pack(">ii", xid, opcode) + body)


def reply(xid: int, zxid: int, err: int, body: bytes = b"") -> bytes:
    return frame(struct.pack(">iqi", xid, zxid, err) + body)


def kazoo_request(xid: int, req: object) -> bytes:
    """A request as kazoo's connection writes it: length, xid, type, then the record."""
    body = bytes(req.serialize())  # type: ignore[attr-defined]
    return frame(struct.pack(">ii", xid, req.type) + body)  # type: ignore[attr-defined]


PASSWORD = bytes(range(16))
SESSION = 0x1000ABCDEF00001
CONNECT_REQUEST = frame(struct.pack(">iqiq", 0, 0, 6000, 0) + struct.pack(">i", 16) + bytes(16) + b"\x00")
CONNECT_RESPONSE = frame(struct.pack(">iiq", 0, 4000, SESSION) + struct.pack(">i", 16) + PASSWORD + b"\x00")


def connected() -> Conversation:
    c = Conversation()
    c.client(CONNECT_REQUEST)
    c.server(CONNECT_RESPONSE)
    return c


def test_the_handshake_gives_the_session_its_password_and_timeout() -> None:
    c = Conversation()
    [req] = c.client(CONNECT_REQUEST)
    assert req == ConnectRequest(0, 0, 6000, 0, bytes(16), False)
    assert c.session is None  # a new session: unknown until the server names it
    [resp] = c.server(CONNECT_RESPONSE)
    assert resp == ConnectResponse(0, 4000, SESSION, PASSWORD, False)
    assert not resp.expired
    assert c.session == SESSION
    assert session_hex(SESSION) == "0x1000abcdef00001"


def test_a_handshake_without_the_read_only_byte_and_kazoos_own() -> None:
    c = Conversation()
    old = frame(struct.pack(">iqiq", 0, 5, 30000, SESSION) + struct.pack(">i", 16) + PASSWORD)
    [req] = c.client(old)
    assert req == ConnectRequest(0, 5, 30000, SESSION, PASSWORD, None)
    assert c.session == SESSION  # a reconnect names its session before the server answers
    k = Conversation()
    [kreq] = k.client(frame(bytes(Connect(0, 42, 10000, SESSION, PASSWORD, False).serialize())))
    assert (kreq.last_zxid, kreq.timeout_ms, kreq.session, kreq.password) == (42, 10000, SESSION, PASSWORD)


def test_a_refused_reconnect_is_an_expired_session() -> None:
    c = Conversation()
    c.client(frame(struct.pack(">iqiq", 0, 5, 6000, SESSION) + struct.pack(">i", 16) + PASSWORD + b"\x00"))
    [resp] = c.server(frame(struct.pack(">iiq", 0, 0, 0) + struct.pack(">i", 16) + bytes(16) + b"\x00"))
    assert isinstance(resp, ConnectResponse) and resp.expired


@pytest.mark.parametrize(
    ("req", "op", "path"),
    [
        (Create("/consumers/g/ids/c1", b"{}", OPEN_ACL_UNSAFE, 1), "create", "/consumers/g/ids/c1"),
        (Create2("/a", b"x", OPEN_ACL_UNSAFE, 0), "create", "/a"),
        (Delete("/consumers/g/owners/t/0", -1), "delete", "/consumers/g/owners/t/0"),
        (Exists("/brokers/ids", True), "exists", "/brokers/ids"),
        (GetData("/consumers/g/ids/c2", False), "get", "/consumers/g/ids/c2"),
        (SetData("/consumers/g/offsets/t/0", b"17", 3), "set", "/consumers/g/offsets/t/0"),
        (GetChildren("/consumers/g/ids", True), "get_children", "/consumers/g/ids"),
        (GetChildren2("/brokers/topics", False), "get_children", "/brokers/topics"),
        (Sync("/x"), "sync", "/x"),
    ],
)
def test_kazoos_requests_decode_to_their_op_and_path(req: object, op: str, path: str) -> None:
    c = connected()
    [decoded] = c.client(kazoo_request(7, req))
    assert decoded == Request(7, req.type, op, path)  # type: ignore[attr-defined]


def test_a_check_and_an_unnamed_op_keep_their_code() -> None:
    c = connected()
    check, acl = c.client(
        request(3, 13, ustring("/v") + struct.pack(">i", 4)) + request(4, 6, ustring("/acl"))
    )
    assert (check.op, check.path, acl.op, acl.path) == ("op13", "/v", "op6", "/acl")


def test_a_multi_is_one_request_with_its_sub_ops() -> None:
    c = connected()
    tx = Transaction(
        [
            # kazoo's CheckVersion, SetData and Create records, as its transaction() builds them
            CheckVersion("/o/t/0", 1),
            SetData("/consumers/g/offsets/t/0", b"42", -1),
            Create("/n", b"", OPEN_ACL_UNSAFE, 0),
        ]
    )
    [m] = c.client(kazoo_request(9, tx))
    assert (m.op, m.path) == ("multi", "/o/t/0")
    assert m.subops == (("op13", "/o/t/0"), ("set", "/consumers/g/offsets/t/0"), ("create", "/n"))
    # the server's answer: header OK, the check failed (BadVersion), the later ops rolled back
    results = (
        struct.pack(">i?i", -1, False, -1)
        + struct.pack(">i", -103)
        + struct.pack(">i?i", -1, False, -1)
        + struct.pack(">i", -2)
        + struct.pack(">i?i", -1, False, -1)
        + struct.pack(">i", -2)
        + struct.pack(">i?i", -1, True, -1)
    )
    [r] = c.server(reply(9, 100, 0, results))
    assert isinstance(r, Reply) and r.request == m and r.error == "BadVersion"
    # a multi that succeeded: check (no body), set (a stat), create (a path)
    c.client(kazoo_request(10, tx))
    ok = (
        struct.pack(">i?i", 13, False, 0)
        + struct.pack(">i?i", 5, False, 0)
        + bytes(68)
        + struct.pack(">i?i", 1, False, 0)
        + ustring("/n")
        + struct.pack(">i?i", -1, True, -1)
    )
    [r2] = c.server(reply(10, 101, 0, ok))
    assert isinstance(r2, Reply) and r2.err == 0 and r2.error is None


def test_replies_match_their_requests_by_xid_and_name_their_errors() -> None:
    c = connected()
    c.client(
        kazoo_request(1, Create("/consumers/g/owners/t/0", b"c1", OPEN_ACL_UNSAFE, 1))
        + kazoo_request(-2, Ping)
        + kazoo_request(2, Delete("/gone", -1))
    )
    assert c.pending == 3
    first, ping, second = c.server(reply(1, 50, -110) + reply(-2, 50, 0) + reply(2, 51, -101))
    assert isinstance(first, Reply) and first.request is not None
    assert (first.request.path, first.error, first.zxid) == ("/consumers/g/owners/t/0", "NodeExists", 50)
    assert isinstance(ping, Reply) and ping.request is not None and ping.request.op == "op11"
    assert isinstance(second, Reply) and second.request is not None
    assert (second.request.op, second.error) == ("delete", "NoNode")
    assert c.pending == 0


def test_error_names_are_the_java_clients() -> None:
    assert [error_name(c) for c in (0, -4, -101, -103, -110, -111, -112, -999)] == [
        None,
        "ConnectionLoss",
        "NoNode",
        "BadVersion",
        "NodeExists",
        "NotEmpty",
        "SessionExpired",
        "Unknown(-999)",
    ]


def test_a_watch_notification_and_a_close() -> None:
    c = connected()
    body = struct.pack(">ii", 4, 3) + ustring("/consumers/g/ids")
    [n] = c.server(reply(-1, -1, 0, body))
    assert n == Notification(4, 3, "/consumers/g/ids", -1) and n.type_name == "CHILD"
    [close] = c.client(kazoo_request(5, Close))
    assert close.opcode == -11
    [r] = c.server(reply(5, 60, 0))
    assert isinstance(r, Reply) and r.request == close


def test_frames_split_across_reads_and_coalesced_in_one() -> None:
    c = Conversation()
    stream = CONNECT_REQUEST + kazoo_request(1, GetData("/a", False)) + kazoo_request(2, Exists("/b", False))
    out = []
    for i in range(len(stream)):  # one byte per read
        out += c.client(stream[i : i + 1])
    assert [type(x).__name__ for x in out] == ["ConnectRequest", "Request", "Request"]
    assert [x.path for x in out[1:]] == ["/a", "/b"]  # type: ignore[union-attr]
    buf = FrameBuffer()
    assert list(buf.feed(b"\x00\x00")) == [] and buf.buffered == 2
    assert list(buf.feed(b"\x00\x01x\x00\x00\x00\x00\x00\x00")) == [b"x", b""]
    assert buf.buffered == 2


def test_bytes_that_are_not_zookeepers_break_the_conversation() -> None:
    c = Conversation()
    with pytest.raises(WireError):
        c.client(b"mntr")  # a four-letter word: 0x6d6e7472 bytes is no frame length
    assert c.broken is not None
    assert c.client(CONNECT_REQUEST) == []  # decodes nothing more
    t = connected()
    with pytest.raises(WireError):
        t.client(request(1, 1, struct.pack(">i", 100) + b"short"))  # a path longer than its frame
