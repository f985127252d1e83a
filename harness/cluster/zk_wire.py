# pyright: strict
"""ZooKeeper's client wire protocol (jute), decoded from the bytes of one connection: no sockets.

Contract
--------
* Both directions are sequences of frames: a 4-byte big-endian length, then that many bytes. A frame may
  arrive split across reads and one read may hold several frames: :class:`Conversation` buffers each
  direction and decodes every frame once it is whole.
* The first client frame of a connection is the ``ConnectRequest`` (protocolVersion int, lastZxidSeen long,
  timeOut int, sessionId long, passwd buffer, then an optional readOnly byte); the first server frame the
  ``ConnectResponse`` (protocolVersion int, timeOut int, sessionId long, passwd buffer, optional readOnly).
  A server answers a reconnect to a session it no longer knows with timeOut 0 and sessionId 0
  (:attr:`ConnectResponse.expired`).
* Later client frames are a ``RequestHeader`` (xid int, type int) and the request's body; server frames a
  ``ReplyHeader`` (xid int, zxid long, err int) and the reply's body. A server frame of xid -1 is a watch
  notification (``WatcherEvent``: type int, state int, path ustring); the others answer the client's
  requests and are matched to them by xid (the server answers a connection's requests in order; the
  special xids, -2 ping, -4 auth, -8 SetWatches, recur, so each xid keeps a FIFO of its requests).
* What is decoded of a request: its op code and, for the ops whose body starts with the path (create,
  create2, delete, exists, getData, setData, getACL, setACL, getChildren, getChildren2, sync, check and the
  later server's createContainer, createTTL, deleteContainer, checkWatches, removeWatches, addWatch,
  getEphemerals, getAllChildrenNumber), the path; a ``multi`` (op 14) is one request whose sub-ops (op
  names and paths) are decoded too, and whose path is its first sub-op's. Of a reply: its error code; for
  a ``multi`` whose header says OK, the first failing sub-op's code (what the Java client throws).
* :data:`OP_NAMES` names ops in the Python legacy member's vocabulary (``create``, ``delete``, ``exists``,
  ``get``, ``set``, ``get_children``, ``multi``, ``sync``, ``set_watches``; create2 counts as ``create``,
  getChildren2 as ``get_children``, SetWatches2 as ``set_watches``; every other op ``op<code>``);
  :func:`error_name` names error codes as the Java client's ``KeeperException`` subclasses do (``NodeExists``,
  ``NoNode``, ``BadVersion``, ...: the class name without ``Exception``), None for OK.
* A frame that cannot be decoded (a four-letter-word command on the port, a length beyond
  :data:`MAX_FRAME`, a truncated body) raises :class:`WireError`; the conversation is then ``broken``
  and decodes nothing more (the caller keeps forwarding the bytes).
"""

from __future__ import annotations

import struct
from collections import deque
from collections.abc import Iterator
from dataclasses import dataclass

__all__ = [
    "CLOSE_SESSION",
    "MAX_FRAME",
    "NOTIFICATION_XID",
    "OP_NAMES",
    "PING",
    "SESSION_OPS",
    "ConnectRequest",
    "ConnectResponse",
    "Conversation",
    "FrameBuffer",
    "Notification",
    "Reply",
    "Request",
    "WireError",
    "error_name",
    "op_name",
    "session_hex",
    "watch_type",
]

#: The largest frame decoded (ZooKeeper's own jute.maxbuffer default is 1 MiB; a length beyond this is
#: not ZooKeeper's protocol).
MAX_FRAME = 64 * 1024 * 1024

_INT = struct.Struct(">i")
_LONG = struct.Struct(">q")
_REQUEST_HEADER = struct.Struct(">ii")  # xid, type
_REPLY_HEADER = struct.Struct(">iqi")  # xid, zxid, err
_MULTI_HEADER = struct.Struct(">i?i")  # type, done, err
_CONNECT_REQUEST = struct.Struct(">iqiq")  # protocolVersion, lastZxidSeen, timeOut, sessionId
_CONNECT_RESPONSE = struct.Struct(">iiq")  # protocolVersion, timeOut, sessionId
_STAT_SIZE = 68  # Stat: 4 longs, 3 ints, a long, 2 ints, a long

NOTIFICATION_XID = -1
PING = 11
CLOSE_SESSION = -11
CREATE_SESSION = -10
MULTI = 14
#: Session traffic, never counted as requests: ping, createSession, closeSession.
SESSION_OPS = frozenset({PING, CREATE_SESSION, CLOSE_SESSION})

#: Op code -> the Python legacy member's name of the op (see the module contract).
OP_NAMES: dict[int, str] = {
    1: "create",
    2: "delete",
    3: "exists",
    4: "get",
    5: "set",
    8: "get_children",
    9: "sync",
    12: "get_children",
    14: "multi",
    15: "create",
    101: "set_watches",
    105: "set_watches",
}
#: Ops whose body starts with the path (``ZooDefs.OpCode``: create, delete, exists, getData, setData,
#: getACL, setACL, getChildren, sync, getChildren2, check, create2, checkWatches, removeWatches,
#: createContainer, deleteContainer, createTTL, getEphemerals, getAllChildrenNumber, addWatch).
_PATH_FIRST = frozenset({1, 2, 3, 4, 5, 6, 7, 8, 9, 12, 13, 15, 17, 18, 19, 20, 21, 103, 104, 106})

#: Error code -> the Java client's ``KeeperException`` subclass name without ``Exception``.
ERRORS: dict[int, str] = {
    -1: "SystemError",
    -2: "RuntimeInconsistency",
    -3: "DataInconsistency",
    -4: "ConnectionLoss",
    -5: "MarshallingError",
    -6: "Unimplemented",
    -7: "OperationTimeout",
    -8: "BadArguments",
    -12: "UnknownSession",
    -13: "NewConfigNoQuorum",
    -14: "ReconfigInProgress",
    -100: "APIError",
    -101: "NoNode",
    -102: "NoAuth",
    -103: "BadVersion",
    -108: "NoChildrenForEphemerals",
    -110: "NodeExists",
    -111: "NotEmpty",
    -112: "SessionExpired",
    -113: "InvalidCallback",
    -114: "InvalidACL",
    -115: "AuthFailed",
    -118: "SessionMoved",
    -119: "NotReadOnly",
    -120: "EphemeralOnLocalSession",
    -121: "NoWatcher",
    -122: "RequestTimeout",
    -123: "ReconfigDisabled",
    -124: "SessionClosedRequireSasl",
    -125: "QuotaExceeded",
    -127: "Throttled",
}

#: WatcherEvent type -> kazoo's ``EventType`` name (what the Python member writes).
WATCH_TYPES: dict[int, str] = {-1: "NONE", 1: "CREATED", 2: "DELETED", 3: "CHANGED", 4: "CHILD"}


def op_name(opcode: int) -> str:
    """The member-vocabulary name of ``opcode`` (``op<code>`` for the ops it has no name for)."""
    return OP_NAMES.get(opcode, f"op{opcode}")


def error_name(code: int) -> str | None:
    """``KeeperException``'s name of ``code`` (None for 0, OK; ``Unknown(<code>)`` for a code it lacks)."""
    if code == 0:
        return None
    return ERRORS.get(code, f"Unknown({code})")


def watch_type(code: int) -> str:
    """kazoo's ``EventType`` name of a WatcherEvent type (``TYPE<code>`` for a type kazoo lacks)."""
    return WATCH_TYPES.get(code, f"TYPE{code}")


def session_hex(session: int) -> str:
    """A session id as ZooKeeper logs it: ``0x`` and lower-case hex of the unsigned 64-bit value."""
    return f"0x{session & 0xFFFFFFFFFFFFFFFF:x}"


class WireError(ValueError):
    """Bytes that are not ZooKeeper's client protocol."""


# ---------------------------------------------------------------------------------------------- records


@dataclass(frozen=True)
class ConnectRequest:
    """A client's session handshake (session 0: a new session; otherwise the one it reconnects to)."""

    protocol_version: int
    last_zxid: int
    timeout_ms: int
    session: int
    password: bytes
    read_only: bool | None


@dataclass(frozen=True)
class ConnectResponse:
    """The server's answer to the handshake."""

    protocol_version: int
    timeout_ms: int
    session: int
    password: bytes
    read_only: bool | None

    @property
    def expired(self) -> bool:
        """The server refused the session (it expired): it answers timeOut 0 and sessionId 0."""
        return self.session == 0 or self.timeout_ms <= 0


@dataclass(frozen=True)
class Request:
    """One client request: ``xid``, ``opcode``, the member-vocabulary ``op``, the ``path`` (None when the op
    has none or it was not decoded) and, for a multi, ``subops`` as (op, path) pairs."""

    xid: int
    opcode: int
    op: str
    path: str | None
    subops: tuple[tuple[str, str | None], ...] = ()


@dataclass(frozen=True)
class Reply:
    """The server's answer to ``request`` (None when no request of that xid was pending): ``err`` is the
    reply header's code or, for a multi answered OK in its header, the first failing sub-op's."""

    request: Request | None
    xid: int
    zxid: int
    err: int

    @property
    def error(self) -> str | None:
        return error_name(self.err)


@dataclass(frozen=True)
class Notification:
    """A watch notification (xid -1): WatcherEvent ``type``, keeper ``state`` and ``path``."""

    type: int
    state: int
    path: str | None
    zxid: int

    @property
    def type_name(self) -> str:
        return watch_type(self.type)


# ---------------------------------------------------------------------------------------------- reading


class _Reader:
    """Jute's primitives over one frame; reading past its end is a :class:`WireError`."""

    def __init__(self, data: bytes | memoryview, pos: int = 0) -> None:
        self.data = data
        self.pos = pos

    def _take(self, s: struct.Struct) -> tuple[object, ...]:
        if self.pos + s.size > len(self.data):
            raise WireError("frame ends inside a field")
        out = s.unpack_from(self.data, self.pos)
        self.pos += s.size
        return out

    def int(self) -> int:
        return int(self._take(_INT)[0])  # pyright: ignore[reportArgumentType]

    def long(self) -> int:
        return int(self._take(_LONG)[0])  # pyright: ignore[reportArgumentType]

    def bool(self) -> bool:
        if self.pos >= len(self.data):
            raise WireError("frame ends inside a field")
        self.pos += 1
        return self.data[self.pos - 1] != 0

    def buffer(self) -> bytes | None:
        n = self.int()
        if n < 0:
            return None
        if self.pos + n > len(self.data):
            raise WireError("frame ends inside a buffer")
        out = bytes(self.data[self.pos : self.pos + n])
        self.pos += n
        return out

    def string(self) -> str | None:
        raw = self.buffer()
        if raw is None:
            return None
        try:
            return raw.decode()
        except UnicodeDecodeError as e:
            raise WireError(f"a string that is not UTF-8: {e}") from None

    def skip(self, n: int) -> None:
        if self.pos + n > len(self.data):
            raise WireError("frame ends inside a field")
        self.pos += n

    def acls(self) -> None:
        """Skip a vector<ACL> (perms int, Id: scheme and id ustrings)."""
        for _ in range(self.vector_size()):
            self.int()
            self.string()
            self.string()

    def strings(self) -> list[str | None]:
        return [self.string() for _ in range(self.vector_size())]

    def vector_size(self) -> int:
        n = self.int()
        if n > len(self.data):  # every element takes at least a byte: a corrupt count
            raise WireError(f"a vector of {n} elements in a frame of {len(self.data)} bytes")
        return max(n, 0)

    @property
    def left(self) -> int:
        return len(self.data) - self.pos


def _read_subop(r: _Reader, opcode: int) -> str | None:
    """Read one multi sub-op's body (``opcode``'s request record) and return its path; WireError for an op
    whose record a multi cannot hold (its length is then unknown)."""
    path = r.string()
    if opcode in (1, 15, 19, 21):  # CreateRequest / CreateTTLRequest: path, data, acl, flags (ttl)
        r.buffer()
        r.acls()
        r.int()
        if opcode == 21:
            r.long()
    elif opcode in (2, 13):  # DeleteRequest / CheckVersionRequest: path, version
        r.int()
    elif opcode == 5:  # SetDataRequest: path, data, version
        r.buffer()
        r.int()
    elif opcode in (4, 8):  # multiRead's GetDataRequest / GetChildrenRequest: path, watch
        r.bool()
    elif opcode != 20:  # DeleteContainer: path only
        raise WireError(f"a multi sub-op of type {opcode}")
    return path


def decode_request(frame: bytes) -> Request:
    """One request frame (after the ConnectRequest, without its length): header and what the contract says."""
    r = _Reader(frame)
    xid, opcode = r.int(), r.int()
    path: str | None = None
    subops: list[tuple[str, str | None]] = []
    if opcode == MULTI:
        while True:
            if r.left < _MULTI_HEADER.size:
                raise WireError("a multi without its closing header")
            sub, done, _err = _MULTI_HEADER.unpack_from(frame, r.pos)
            r.skip(_MULTI_HEADER.size)
            if done:
                break
            subops.append((op_name(sub), _read_subop(r, sub)))
        path = subops[0][1] if subops else None
    elif opcode in _PATH_FIRST:
        path = r.string()
    return Request(xid, opcode, op_name(opcode), path, tuple(subops))


def _multi_error(r: _Reader) -> int:
    """The first non-zero error among a multi reply's results (0 when every sub-op succeeded)."""
    while r.left >= _MULTI_HEADER.size:
        sub, done, err = _MULTI_HEADER.unpack_from(r.data, r.pos)
        r.skip(_MULTI_HEADER.size)
        if done:
            break
        if sub == -1:  # ErrorResult
            code = r.int()
            if code != 0:
                return code
        elif sub == 1:  # CreateResponse: path
            r.string()
        elif sub == 15:  # Create2Response: path, stat
            r.string()
            r.skip(_STAT_SIZE)
        elif sub == 5:  # SetDataResponse: stat
            r.skip(_STAT_SIZE)
        elif sub == 8:  # multiRead's GetChildrenResponse
            r.strings()
        elif sub == 4:  # multiRead's GetDataResponse: data, stat
            r.buffer()
            r.skip(_STAT_SIZE)
        elif sub not in (2, 13, 20):  # delete, check, deleteContainer: no body
            return err  # a result this decoder does not know: stop at its header
    return 0


def decode_connect_request(frame: bytes) -> ConnectRequest:
    r = _Reader(frame)
    version, zxid, timeout, session = (r.int(), r.long(), r.int(), r.long())
    password = r.buffer() or b""
    read_only = r.bool() if r.left else None
    return ConnectRequest(version, zxid, timeout, session, password, read_only)


def decode_connect_response(frame: bytes) -> ConnectResponse:
    r = _Reader(frame)
    version, timeout, session = r.int(), r.int(), r.long()
    password = r.buffer() or b""
    read_only = r.bool() if r.left else None
    return ConnectResponse(version, timeout, session, password, read_only)


# ---------------------------------------------------------------------------------------------- streams


class FrameBuffer:
    """Splits one direction's bytes into frames (without their length); see the module contract."""

    def __init__(self) -> None:
        self._buf = bytearray()
        self._pos = 0

    def feed(self, data: bytes) -> Iterator[bytes]:
        """Take ``data`` and yield every frame it completes, in order; WireError for an impossible length."""
        self._buf += data
        while True:
            if len(self._buf) - self._pos < 4:
                break
            (size,) = _INT.unpack_from(self._buf, self._pos)
            if size < 0 or size > MAX_FRAME:
                raise WireError(f"a frame length of {size} bytes")
            if len(self._buf) - self._pos - 4 < size:
                break
            start = self._pos + 4
            self._pos = start + size
            yield bytes(self._buf[start : self._pos])
        if self._pos:
            del self._buf[: self._pos]
            self._pos = 0

    @property
    def buffered(self) -> int:
        """Bytes of an incomplete frame held."""
        return len(self._buf) - self._pos


ClientItem = ConnectRequest | Request
ServerItem = ConnectResponse | Reply | Notification


class Conversation:
    """Both directions of one client connection, decoded (see the module contract).

    :meth:`client` takes bytes the client sent, :meth:`server` bytes the server sent, each returns what
    the frames they complete say. Replies are matched to the requests fed before them. ``session`` is the
    connection's session once known (the ConnectRequest's when it reconnects to one, the ConnectResponse's
    otherwise); ``broken`` the reason decoding stopped (None while it goes on).
    """

    def __init__(self) -> None:
        self._up = FrameBuffer()
        self._down = FrameBuffer()
        self.connect: ConnectRequest | None = None
        self.connected: ConnectResponse | None = None
        self.session: int | None = None
        self.broken: str | None = None
        self._pending: dict[int, deque[Request]] = {}

    def client(self, data: bytes) -> list[ClientItem]:
        """Decode what ``data`` completes of the client's stream (nothing once broken)."""
        out: list[ClientItem] = []
        if self.broken is not None:
            return out
        try:
            for frame in self._up.feed(data):
                if self.connect is None:
                    self.connect = decode_connect_request(frame)
                    if self.connect.session:
                        self.session = self.connect.session
                    out.append(self.connect)
                    continue
                request = decode_request(frame)
                self._pending.setdefault(request.xid, deque()).append(request)
                out.append(request)
        except (WireError, struct.error) as e:
            self.broken = f"client stream: {e}"
            raise WireError(self.broken) from None
        return out

    def server(self, data: bytes) -> list[ServerItem]:
        """Decode what ``data`` completes of the server's stream (nothing once broken)."""
        out: list[ServerItem] = []
        if self.broken is not None:
            return out
        try:
            for frame in self._down.feed(data):
                if self.connected is None:
                    self.connected = decode_connect_response(frame)
                    if not self.connected.expired:
                        self.session = self.connected.session
                    out.append(self.connected)
                    continue
                out.append(self._reply(frame))
        except (WireError, struct.error) as e:
            self.broken = f"server stream: {e}"
            raise WireError(self.broken) from None
        return out

    def _reply(self, frame: bytes) -> Reply | Notification:
        r = _Reader(frame)
        xid, zxid, err = r.int(), r.long(), r.int()
        if xid == NOTIFICATION_XID:
            etype, state = r.int(), r.int()
            return Notification(etype, state, r.string(), zxid)
        waiting = self._pending.get(xid)
        request = waiting.popleft() if waiting else None
        if waiting is not None and not waiting:
            del self._pending[xid]
        if err == 0 and request is not None and request.opcode == MULTI:
            err = _multi_error(r)
        return Reply(request, xid, zxid, err)

    @property
    def pending(self) -> int:
        """Requests sent and not answered yet."""
        return sum(len(q) for q in self._pending.values())
