"""A bounds check of request bodies *before* kio's native reader sees them.

Why: kio's Rust reader pre-allocates an array for the element count it reads from the wire. A
count of 2**31-1 in a 20-byte frame makes that allocation fail, and a failed allocation in Rust
aborts the whole process -- one bad frame would kill the broker. So every request body is first
walked here, field by field, following the same kio schema, and rejected
(:class:`~coordinator.wire.MalformedRequest`) if any array claims more elements than there are
bytes left, or any string / bytes / tagged field runs past the frame, or a non-nullable array is
null (kio would hand over None). Only sizes are checked; kio then decodes (and rejects anything
else that is wrong).

The walk is compiled once per (API, version) into nested closures; it costs a few microseconds per
request (see ``herdlab bench coordinator handling``).
"""

from __future__ import annotations

import dataclasses
import struct
from collections.abc import Callable
from functools import cache

from kio.serial._introspect import (
    EntityField,
    EntityTupleField,
    PrimitiveTupleField,
    classify_field,
    get_field_tag,
    get_schema_field_type,
    is_optional,
)

__all__ = ["BoundsError", "check_body"]

Walker = Callable[[bytes, int, int], int]
"""``walk(buf, pos, end) -> new pos``; raises :class:`BoundsError`."""

_FIXED = {
    "int8": 1,
    "uint8": 1,
    "bool": 1,
    "int16": 2,
    "uint16": 2,
    "error_code": 2,
    "int32": 4,
    "uint32": 4,
    "timedelta_i32": 4,
    "int64": 8,
    "uint64": 8,
    "float64": 8,
    "timedelta_i64": 8,
    "datetime_i64": 8,
    "uuid": 16,
}
_I16 = struct.Struct(">h").unpack_from
_I32 = struct.Struct(">i").unpack_from


class BoundsError(ValueError):
    """A length or count that runs past the frame."""


def _uvarint(buf: bytes, pos: int, end: int) -> tuple[int, int]:
    value = 0
    shift = 0
    while True:
        if pos >= end:
            raise BoundsError("varint runs past the frame")
        b = buf[pos]
        pos += 1
        value |= (b & 0x7F) << shift
        if not b & 0x80:
            return value, pos
        shift += 7
        if shift > 35:
            raise BoundsError("varint too long")


def _fixed(n: int) -> Walker:
    def walk(buf: bytes, pos: int, end: int) -> int:
        pos += n
        if pos > end:
            raise BoundsError("field runs past the frame")
        return pos

    return walk


def _sized(flexible: bool, legacy_width: int) -> Walker:
    """A string (legacy int16 length) or bytes (legacy int32 length); compact: uvarint length + 1."""
    if flexible:

        def walk_compact(buf: bytes, pos: int, end: int) -> int:
            n, pos = _uvarint(buf, pos, end)
            if n:
                pos += n - 1
                if pos > end:
                    raise BoundsError("string/bytes runs past the frame")
            return pos

        return walk_compact
    unpack = _I16 if legacy_width == 2 else _I32

    def walk_legacy(buf: bytes, pos: int, end: int) -> int:
        if pos + legacy_width > end:
            raise BoundsError("length runs past the frame")
        (n,) = unpack(buf, pos)
        pos += legacy_width
        if n > 0:
            pos += n
            if pos > end:
                raise BoundsError("string/bytes runs past the frame")
        return pos

    return walk_legacy


def _array(flexible: bool, elem: Walker, elem_min: int, nullable: bool) -> Walker:
    def walk(buf: bytes, pos: int, end: int) -> int:
        if flexible:
            n, pos = _uvarint(buf, pos, end)
            count = n - 1  # 0 means null
        else:
            if pos + 4 > end:
                raise BoundsError("array length runs past the frame")
            (count,) = _I32(buf, pos)
            pos += 4
        if count < 0 and not nullable:
            raise BoundsError("null array in a non-nullable field")  # kio would hand over None
        if count <= 0:
            return pos
        if count * elem_min > end - pos:
            raise BoundsError(f"array of {count} elements in {end - pos} bytes")
        for _ in range(count):
            pos = elem(buf, pos, end)
        return pos

    return walk


def _primitive(kafka_type: str, flexible: bool) -> tuple[Walker, int]:
    """Walker and minimal encoded size of one primitive."""
    if kafka_type in _FIXED:
        n = _FIXED[kafka_type]
        return _fixed(n), n
    if kafka_type == "string":
        return _sized(flexible, 2), 1
    if kafka_type in ("bytes", "records"):
        return _sized(flexible, 4), 1
    raise TypeError(f"no bounds walker for kafka type {kafka_type!r}")


def _field(f: dataclasses.Field, flexible: bool) -> tuple[Walker, int]:
    c = classify_field(f)
    nullable = is_optional(f)
    if isinstance(c, EntityTupleField):
        return _array(flexible, _entity(c.type_), 1, nullable), 1
    if isinstance(c, EntityField):
        inner = _entity(c.type_)
        if not nullable or get_field_tag(f) is not None:
            return inner, 1

        def walk_nullable(buf: bytes, pos: int, end: int) -> int:
            # A nullable struct carries an int8 marker in front (-1: null; KIP-893).
            if pos >= end:
                raise BoundsError("struct marker runs past the frame")
            if buf[pos] == 0xFF:
                return pos + 1
            return inner(buf, pos + 1, end)

        return walk_nullable, 1
    prim, size = _primitive(get_schema_field_type(f), flexible)
    if isinstance(c, PrimitiveTupleField):
        return _array(flexible, prim, size, nullable), 1
    return prim, size


@cache
def _entity(cls: type) -> Walker:
    flexible: bool = cls.__flexible__
    plain: list[Walker] = []
    tagged: dict[int, Walker] = {}
    for f in dataclasses.fields(cls):
        walker, _size = _field(f, flexible)
        tag = get_field_tag(f)
        if tag is None:
            plain.append(walker)
        else:
            tagged[int(tag)] = walker

    def walk(buf: bytes, pos: int, end: int) -> int:
        for w in plain:
            pos = w(buf, pos, end)
        if not flexible:
            return pos
        n, pos = _uvarint(buf, pos, end)
        if n > end - pos:
            raise BoundsError("more tagged fields than bytes")
        for _ in range(n):
            tag, pos = _uvarint(buf, pos, end)
            size, pos = _uvarint(buf, pos, end)
            stop = pos + size
            if stop > end:
                raise BoundsError("tagged field runs past the frame")
            w = tagged.get(tag)
            if w is not None:
                w(buf, pos, stop)
            pos = stop
        return pos

    return walk


def check_body(cls: type, buf: bytes, pos: int) -> None:
    """Raise :class:`BoundsError` if the body of request class ``cls`` at ``pos`` has a length or
    count that runs past the end of ``buf``."""
    _entity(cls)(buf, pos, len(buf))
