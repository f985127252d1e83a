# pyright: strict
"""Where a key sits in a scenario's TOML text, for error messages (the standard ``tomllib`` gives no
positions, and this light scan spares a position-keeping TOML library).

Contract
--------
* :func:`key_lines` maps each key path to the 1-based line that sets it: ``("group", "members")`` for
  ``members = 4`` under ``[group]`` (or ``group.members = 4`` at the top), a table's own path for its
  header line (``[group]``), ``("timeline", 0)`` for the first ``[[timeline]]`` header and
  ``("timeline", 0, "at")`` for an ``at`` under it (entries counted from 0, as the parsed data is).
* It reads key lines and table headers only: keys inside inline tables (``{ a = 1 }``) and lines inside
  multi-line strings are not positions. The first line that sets a path wins.
* :func:`line_of` is the line of the longest prefix of a path that :func:`key_lines` found (a missing
  key points at its table's header), None when none was found.
"""

from __future__ import annotations

import re
import tomllib
from collections.abc import Sequence

_PART = r"""(?:[A-Za-z0-9_-]+|"[^"\n]*"|'[^'\n]*')"""
_DOTTED = rf"{_PART}(?:\s*\.\s*{_PART})*"
_HEADER = re.compile(rf"^\s*(\[\[?)\s*({_DOTTED})\s*\]\]?\s*(?:#.*)?$")
_KEY = re.compile(rf"^\s*({_DOTTED})\s*=")

Path = tuple[str | int, ...]


def _parts(dotted: str) -> tuple[str, ...] | None:
    """The parts of a TOML dotted key (``a."b.c"`` -> ("a", "b.c")), None when it is not one."""
    try:
        node: object = tomllib.loads(f"{dotted} = 0")
    except tomllib.TOMLDecodeError:
        return None
    parts: list[str] = []
    while isinstance(node, dict):
        items: list[tuple[str, object]] = list(node.items())  # pyright: ignore[reportUnknownMemberType, reportUnknownArgumentType]
        if len(items) != 1:
            return None
        part, node = items[0]
        parts.append(part)
    return tuple(parts) if node == 0 and parts else None


def key_lines(text: str) -> dict[Path, int]:
    """Key path -> the 1-based line that sets it (see the module contract)."""
    lines: dict[Path, int] = {}
    table: Path = ()
    entries: dict[tuple[str, ...], int] = {}
    open_string: str | None = None
    for n, line in enumerate(text.splitlines(), start=1):
        if open_string is not None:
            if line.count(open_string) % 2 == 1:
                open_string = None
            continue
        header = _HEADER.match(line)
        if header:
            parts = _parts(header.group(2))
            if parts is None:
                continue
            if header.group(1) == "[[":
                index = entries.get(parts, 0)
                entries[parts] = index + 1
                table = (*parts, index)
            else:
                table = parts
            lines.setdefault(table, n)
            continue
        key = _KEY.match(line)
        if key is None:
            continue
        parts = _parts(key.group(1))
        if parts is not None:
            lines.setdefault((*table, *parts), n)
        rest = line[key.end() :]
        for quotes in ('"""', "'''"):
            if rest.count(quotes) % 2 == 1:
                open_string = quotes
    return lines


def line_of(lines: dict[Path, int], path: Sequence[str | int]) -> int | None:
    """The line of ``path`` or of its longest prefix found in ``lines``; None when none is."""
    for end in range(len(path), 0, -1):
        found = lines.get(tuple(path[:end]))
        if found is not None:
            return found
    return None
