"""Kafka wire codec on top of ``kio``: request frames in, response frames out. No sockets here.

Contract
--------
* A frame is ``int32 size`` + ``size`` bytes. :func:`check_frame_size` rejects sizes below the
  smallest possible request header (8 bytes) or above the configured maximum; the connection must
  then be closed, since the stream cannot be re-synchronised.
* :func:`decode_request` reads the request header (v1 or v2, chosen by kio from the body schema's
  ``__header_schema__``) and the body with kio's native reader. It raises

  - :class:`UnknownApi` for an API key or version kio has no schema for (close the connection,
    as Kafka does; ApiVersions is special-cased by the server: answer v0 with UNSUPPORTED_VERSION);
  - :class:`VersionNotServed` for a version kio knows but this broker does not advertise (answer
    with :func:`error_response` if the response has a top-level error code, else close);
  - :class:`MalformedRequest` when the bytes do not decode (close the connection). Bodies are
    bounds-checked by :mod:`coordinator.guard` first: kio's native reader would abort the
    process on an absurd array count.

* :func:`encode_response` writes header (v0 or v1, from the response class) and body, framed.
* :func:`make` builds a kio dataclass from keyword arguments, dropping the ones the class (i.e. that
  version) does not have; :func:`nested` finds the class of a nested field. Together they let one
  handler serve every version of an API without per-version code.
"""

from __future__ import annotations

import dataclasses
import datetime
import io
import struct
import uuid
from collections.abc import Mapping
from dataclasses import MISSING
from functools import cache
from typing import Any

from kio.index import KioIndexError, load_request_schema, load_response_schema
from kio.schema.errors import ErrorCode
from kio.serial import entity_reader, entity_writer
from kio.serial._introspect import (
    EntityField,
    EntityTupleField,
    PrimitiveTupleField,
    classify_field,
    get_schema_field_type,
    is_optional,
)
from kio.serial.errors import SerialError

from coordinator.api_keys import ApiKey
from coordinator.guard import check_body

__all__ = [
    "MIN_FRAME",
    "CloseConnection",
    "FrameTooLarge",
    "MalformedRequest",
    "Request",
    "UnknownApi",
    "VersionNotServed",
    "check_frame_size",
    "decode_request",
    "encode_response",
    "error_response",
    "make",
    "milliseconds",
    "nested",
    "peek_header",
]

#: api_key int16 + api_version int16 + correlation_id int32: the least a request header holds.
MIN_FRAME = 8
_PEEK = struct.Struct(">hhi")
_SIZE = struct.Struct(">i")
ZERO_TD = datetime.timedelta(0)


def milliseconds(td: datetime.timedelta) -> int:
    """A kio duration in whole milliseconds (rounded)."""
    return round(td.total_seconds() * 1000)


class CloseConnection(Exception):
    """Stop serving this connection (raised by the server or a handler); the message starts with a reason key
    (``malformed: ...``), under which the server counts it."""


class FrameTooLarge(ValueError):
    """A frame size outside ``[MIN_FRAME, max]``; the connection cannot continue."""


class MalformedRequest(ValueError):
    """Bytes that do not decode as the request they claim to be."""


class UnknownApi(ValueError):
    """An API key / version pair kio has no schema for."""

    def __init__(self, api_key: int, api_version: int, correlation_id: int) -> None:
        super().__init__(f"unknown API key {api_key} version {api_version}")
        self.api_key = api_key
        self.api_version = api_version
        self.correlation_id = correlation_id


class VersionNotServed(UnknownApi):
    """A version kio knows but this broker does not advertise."""


@dataclasses.dataclass(slots=True)
class Request:
    """A decoded request: header fields plus the kio body dataclass."""

    api_key: int
    api_version: int
    correlation_id: int
    client_id: str | None
    body: Any
    size: int = 0


def check_frame_size(size: int, max_size: int) -> None:
    """Raise :class:`FrameTooLarge` unless ``MIN_FRAME <= size <= max_size``."""
    if size < MIN_FRAME or size > max_size:
        raise FrameTooLarge(f"frame size {size} outside [{MIN_FRAME}, {max_size}]")


def peek_header(frame: bytes) -> tuple[int, int, int]:
    """``(api_key, api_version, correlation_id)`` from the first 8 bytes of a request frame."""
    return _PEEK.unpack_from(frame, 0)


@cache
def _readers(api_key: int, api_version: int) -> tuple[Any, Any, type]:
    cls = load_request_schema(api_key, api_version)
    return entity_reader(cls.__header_schema__), entity_reader(cls), cls


def decode_request(frame: bytes, served: Mapping[int, tuple[int, int]]) -> Request:
    """Decode one request frame (without its size prefix); see the module docstring for errors."""
    if len(frame) < MIN_FRAME:
        raise MalformedRequest(f"frame of {len(frame)} bytes is shorter than a request header")
    api_key, api_version, correlation_id = _PEEK.unpack_from(frame, 0)
    try:
        read_header, read_body, cls = _readers(api_key, api_version)
    except (KioIndexError, KeyError, ValueError) as e:
        raise UnknownApi(api_key, api_version, correlation_id) from e
    rng = served.get(api_key)
    if rng is None or not rng[0] <= api_version <= rng[1]:
        raise VersionNotServed(api_key, api_version, correlation_id)
    try:
        header, hsize = read_header(frame, 0)
        check_body(cls, frame, hsize)  # before kio: a huge array count would abort the process
        body, bsize = read_body(frame, hsize)
    except (SerialError, ValueError, TypeError, OverflowError, UnicodeError, IndexError, KeyError) as e:
        # KeyError: kio refuses tagged fields it does not know.
        raise MalformedRequest(f"API {api_key} v{api_version}: {type(e).__name__}: {e}") from e
    if hsize + bsize > len(frame):  # defensive: a reader must never run past the buffer
        raise MalformedRequest("request body runs past the frame")
    return Request(api_key, api_version, correlation_id, header.client_id, body, len(frame))


@cache
def _writers(cls: type) -> tuple[Any, Any]:
    return entity_writer(cls.__header_schema__), entity_writer(cls)


_HEARTBEAT_FLEX = struct.Struct(">iiBihB")  # size, correlation id, header tags, throttle, error, tags
_HEARTBEAT_V1 = struct.Struct(">iiih")  # size, correlation id, throttle, error


def _heartbeat_fast(correlation_id: int, response: Any) -> bytes | None:
    """Heartbeat v1-v4 responses without kio's generic writer (the hottest response there is)."""
    if response.throttle_time:
        return None
    if response.__flexible__:
        return _HEARTBEAT_FLEX.pack(12, correlation_id, 0, 0, response.error_code, 0)
    return _HEARTBEAT_V1.pack(10, correlation_id, 0, response.error_code)


def encode_response(correlation_id: int, response: Any) -> bytes:
    """Frame ``response`` (a kio response dataclass) with its header and size prefix."""
    if response.__api_key__ == ApiKey.HEARTBEAT and response.__version__ >= 1:
        fast = _heartbeat_fast(correlation_id, response)
        if fast is not None:
            return fast
    write_header, write_body = _writers(type(response))
    buf = io.BytesIO()
    buf.write(b"\0\0\0\0")
    write_header(buf, response.__header_schema__(correlation_id=correlation_id))
    write_body(buf, response)
    data = buf.getbuffer()
    _SIZE.pack_into(data, 0, len(data) - 4)
    del data
    return buf.getvalue()


# ---------------------------------------------------------------------- building responses


@cache
def _field_names(cls: type) -> frozenset[str]:
    return frozenset(f.name for f in dataclasses.fields(cls))


def make(cls: type, **kwargs: Any) -> Any:
    """``cls(**kwargs)`` keeping only the fields ``cls`` has (a version-neutral constructor)."""
    names = _field_names(cls)
    return cls(**{k: v for k, v in kwargs.items() if k in names})


def has_field(cls: type, name: str) -> bool:
    """True if the kio dataclass ``cls`` has a field ``name`` (i.e. this version carries it)."""
    return name in _field_names(cls)


@cache
def nested(cls: type, field_name: str) -> type:
    """The entity class of field ``field_name`` of ``cls`` (for arrays, the element class)."""
    for f in dataclasses.fields(cls):
        if f.name == field_name:
            c = classify_field(f)
            if isinstance(c, EntityField | EntityTupleField):
                return c.type_
            raise TypeError(f"{cls.__name__}.{field_name} is not an entity field")
    raise KeyError(f"{cls.__name__} has no field {field_name}")


@cache
def response_class(api_key: int, api_version: int) -> type:
    """The kio response class of ``api_key`` at ``api_version`` (cached: kio resolves it by name)."""
    return load_response_schema(api_key, api_version)


_ZERO_BY_TYPE: dict[str, Any] = {
    "int8": 0,
    "int16": 0,
    "int32": 0,
    "int64": 0,
    "uint8": 0,
    "uint16": 0,
    "uint32": 0,
    "uint64": 0,
    "float64": 0.0,
    "string": "",
    "bytes": b"",
    "records": None,
    "bool": False,
    "uuid": uuid.UUID(int=0),
    "error_code": ErrorCode.none,
    "timedelta_i32": ZERO_TD,
    "timedelta_i64": ZERO_TD,
    "datetime_i64": datetime.datetime.fromtimestamp(0, datetime.UTC),
}


def zero(cls: type, **overrides: Any) -> Any:
    """An instance of kio dataclass ``cls`` with every required field zero / empty.

    Used for error answers only (slow: introspection on every call).
    """
    kwargs: dict[str, Any] = {}
    for f in dataclasses.fields(cls):
        if f.name in overrides:
            kwargs[f.name] = overrides[f.name]
            continue
        if f.default is not MISSING or f.default_factory is not MISSING:
            continue
        c = classify_field(f)
        if isinstance(c, EntityTupleField | PrimitiveTupleField):
            kwargs[f.name] = ()
        elif isinstance(c, EntityField):
            kwargs[f.name] = None if is_optional(f) else zero(c.type_)
        elif is_optional(f):
            kwargs[f.name] = None
        else:
            kwargs[f.name] = _ZERO_BY_TYPE[get_schema_field_type(f)]
    return cls(**kwargs)


def error_response(api_key: int, api_version: int, error: ErrorCode) -> Any | None:
    """A response of that version whose top-level ``error_code`` is ``error``, or None if it has none."""
    try:
        cls = load_response_schema(api_key, api_version)
    except KioIndexError:
        return None
    if not has_field(cls, "error_code"):
        return None
    return zero(cls, error_code=error)
