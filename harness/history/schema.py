"""The event schema of a run's history, and the merge of JSON-lines files into one Parquet file.

Contract
--------
While a run goes on, every process appends events to its own JSON-lines file (:mod:`.writer`).
When the run ends, :func:`to_parquet` merges all of them into ``history.parquet`` with the columns of
:data:`SCHEMA`: the known fields become typed columns; any other field of an event is kept, as JSON,
in the ``extra`` column, so nothing recorded is lost. Run-level columns (``run_id``, ``scenario``,
``case``, ``impl``, ``repetition``) come from the file's context (the unit it belongs to) where one is
given, else from the event. Rows are sorted by ``ts_ns``. The same code serves both implementations.
"""

from __future__ import annotations

import json
from collections.abc import Iterable, Mapping
from pathlib import Path
from typing import Any

import pyarrow as pa
import pyarrow.parquet as pq

from harness.history.writer import read_events

SCHEMA = pa.schema(
    [
        ("ts_ns", pa.int64()),
        ("run_id", pa.string()),
        ("scenario", pa.string()),
        ("case", pa.string()),
        ("impl", pa.string()),
        ("repetition", pa.int32()),
        ("source", pa.string()),
        ("role", pa.string()),
        ("kind", pa.string()),
        ("group", pa.string()),
        ("member", pa.string()),
        ("generation", pa.int64()),
        ("topic", pa.string()),
        ("partition", pa.int32()),
        ("offset", pa.int64()),
        ("seq", pa.int64()),
        ("op", pa.string()),
        ("path", pa.string()),
        ("error", pa.string()),
        ("outcome", pa.string()),
        ("attempt", pa.int32()),
        ("duration_ms", pa.float64()),
        ("count", pa.int64()),
        ("extra", pa.string()),
    ]
)
COLUMNS = [f.name for f in SCHEMA]
_TYPED = set(COLUMNS) - {"extra"}
_INT = {f.name for f in SCHEMA if pa.types.is_integer(f.type)}
_FLOAT = {f.name for f in SCHEMA if pa.types.is_floating(f.type)}
_STR = {f.name for f in SCHEMA if pa.types.is_string(f.type)} - {"extra"}


def _coerce(name: str, value: Any) -> Any:
    if value is None:
        return None
    try:
        if name in _INT:
            return int(value)
        if name in _FLOAT:
            return float(value)
    except (TypeError, ValueError):
        return None
    if name in _STR:
        return value if isinstance(value, str) else json.dumps(value, default=str)
    return value


def rows_to_table(events: Iterable[Mapping[str, Any]], context: Mapping[str, Any] | None = None) -> pa.Table:
    """A table of :data:`SCHEMA` from events; ``context`` sets the run-level columns.

    The context (the unit a file belongs to) wins over what an event says: a broker started by a
    legacy_zk unit writes ``impl=coordinator`` into its events, but they belong to that unit; an
    event's own differing value is kept in ``extra`` under its name (a coordinator member of a
    legacy_zk unit's migration: its ``impl``, the member kind the checker reads). A field
    whose value does not fit its column's type is kept in ``extra`` rather than dropped.
    """
    cols: dict[str, list[Any]] = {c: [] for c in COLUMNS}
    ctx = dict(context or {})
    for e in events:
        extra: dict[str, Any] = {}
        for k, v in e.items():
            if k not in _TYPED:
                extra[k] = v
        for c in COLUMNS[:-1]:
            raw = ctx[c] if c in ctx else e.get(c)
            value = _coerce(c, raw)
            if value is None and raw is not None:
                extra[c] = raw
            elif c in ctx and e.get(c) is not None and e[c] != ctx[c]:
                extra[c] = e[c]  # the context wins the column; the event's own value is kept
            cols[c].append(value)
        cols["extra"].append(json.dumps(extra, separators=(",", ":"), default=str) if extra else None)
    return pa.table(cols, schema=SCHEMA)


def to_parquet(
    sources: Iterable[tuple[str | Path, Mapping[str, Any]]],
    out: str | Path,
) -> int:
    """Merge JSON-lines files (each with its context) into one Parquet file sorted by time.

    Returns the number of events written. Missing files are skipped (a member that never started).
    """
    tables = []
    for path, context in sources:
        p = Path(path)
        if not p.exists():
            continue
        tables.append(rows_to_table(read_events(p), context))
    table = pa.concat_tables(tables) if tables else SCHEMA.empty_table()
    if table.num_rows:
        table = table.sort_by("ts_ns")
    out = Path(out)
    out.parent.mkdir(parents=True, exist_ok=True)
    pq.write_table(table, out, compression="zstd")
    return table.num_rows


def read_parquet(path: str | Path) -> list[dict[str, Any]]:
    """Events of a Parquet history as dicts, with ``extra`` folded back in (for checks in Python): a
    typed column's value wins over an ``extra`` field of the same name (an event's own value the
    unit's context overrode), so ``impl`` is always the unit's."""
    rows = pq.read_table(path).to_pylist()
    out = []
    for r in rows:
        extra = r.pop("extra")
        d = {k: v for k, v in r.items() if v is not None}
        if extra:
            for k, v in json.loads(extra).items():
                d.setdefault(k, v)
        out.append(d)
    return out
