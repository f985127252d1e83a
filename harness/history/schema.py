"""The event schema of a run's history, and the merge of JSON-lines files into one Parquet file.

Contract
--------
While a run goes on, every process appends events to its own JSON-lines file (:mod:`.writer`).
When the run ends, :func:`to_parquet` merges all of them into ``history.parquet`` with the columns of
:data:`SCHEMA`: the known fields become typed columns; any other field of an event is kept, as JSON,
in the ``extra`` column, so nothing recorded is lost. Run-level columns (``run_id``, ``scenario``,
``case``, ``impl``, ``repetition``) come from the file's context (the unit it belongs to) where one is
given, else from the event. Rows are sorted by ``ts_ns`` (a stable sort: equal times keep the order
of the files, then of their lines). The same code serves both implementations.

How a file is converted (column by column, no Python object per event for the bulk): its lines are
one Arrow string array (split at newlines with numpy); a line is *plain* when every top-level
key is a typed column (counted with Arrow's substring kernels: its ``":`` occurrences equal its
``[{,]"<typed>":`` matches, so a nested object, a free field or a string value containing ``":``
makes it not plain) and no typed value differs from the file's context. Plain lines are parsed by
``pyarrow.json`` with the typed schema (their ``extra`` is null); the others (events with free
fields: nemesis steps, counter reports ...) are parsed one by one and converted by
:func:`rows_to_table`, exactly as before. A file the Arrow reader refuses (a value that does not
fit its column: ``"partition": "x"``, ``"offset": 1.0``; a line that is not JSON) is converted
entirely by :func:`rows_to_table` over :func:`~harness.history.writer.read_events`, so the result
never depends on the path taken. A torn last line (no newline) is parsed on its own and skipped
if it is not JSON, as :func:`~harness.history.writer.read_events` does. A file is read in chunks of
whole lines (:data:`CHUNK_BYTES`), each converted as above (a chunk the Arrow reader refuses is
converted line by line, as that whole file would be), so converting a simulated unit's file of tens
of millions of events holds one chunk's copies at a time, not the file's. The sort is bounded too: a
history longer than :data:`RUN_ROWS` is sorted in runs spilled to disk and merged (:func:`to_parquet`).
"""

from __future__ import annotations

import io
import json
import re
import tempfile
from collections.abc import Iterable, Mapping
from pathlib import Path
from typing import Any

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc
import pyarrow.json as pj
import pyarrow.parquet as pq

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
#: The typed columns as ``pyarrow.json`` reads them from a plain line.
_TYPED_SCHEMA = pa.schema([f for f in SCHEMA if f.name != "extra"])
#: A top-level typed key (after ``{`` or ``,``, as the writer's compact separators put it).
_TYPED_KEY = '[{,]"(?:' + "|".join(re.escape(c) for c in COLUMNS[:-1]) + ')":'
#: Bytes of JSON per block of the Arrow reader (a longer line makes the file take the exact path).
_BLOCK = 1 << 24
#: :func:`file_table` reads a file this many bytes at a time (whole lines: a chunk ends at its last newline).
CHUNK_BYTES = 1 << 28
#: :func:`to_parquet` sorts at most this many rows at once (a run); a longer history is merged from runs.
RUN_ROWS = 2_000_000
#: :func:`to_parquet` reads this many rows of each run at a time while it merges them.
MERGE_BATCH_ROWS = 262_144
#: The column that numbers rows in the order read while a history is sorted (never written).
_SEQ = "__seq"
#: The sort's time column: ``ts_ns`` with a missing time as the largest (last, as Arrow sorts nulls).
_TS = "__ts"


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


def _pc(name: str, *args: Any, options: Any = None) -> Any:
    """An Arrow compute kernel by name (its module functions are generated at run time)."""
    return pc.call_function(name, list(args), options)


def _lines(data: bytes) -> tuple[pa.LargeStringArray, bytes]:
    """The complete lines of ``data`` (each with its newline) as one Arrow array, and the torn tail."""
    nl = np.flatnonzero(np.frombuffer(data, dtype=np.uint8) == 10)
    end = int(nl[-1]) + 1 if len(nl) else 0
    offsets = np.concatenate([[0], nl + 1]).astype(np.int64)
    lines = pa.LargeStringArray.from_buffers(
        len(nl), pa.py_buffer(offsets.tobytes()), pa.py_buffer(data[:end])
    )
    return lines, data[end:]


def _body(lines: pa.LargeStringArray) -> io.BytesIO:
    """The bytes of ``lines`` (newlines included) as one stream for the Arrow JSON reader."""
    offsets = np.frombuffer(lines.buffers()[1], dtype=np.int64)[lines.offset : lines.offset + len(lines) + 1]
    return io.BytesIO(lines.buffers()[2][int(offsets[0]) : int(offsets[-1])])


def _read(lines: pa.LargeStringArray, schema: pa.Schema, unexpected: str) -> pa.Table:
    opts = pj.ParseOptions(explicit_schema=schema, unexpected_field_behavior=unexpected)
    return pj.read_json(_body(lines), read_options=pj.ReadOptions(block_size=_BLOCK), parse_options=opts)


def _typed(table: pa.Table, context: Mapping[str, Any]) -> tuple[pa.Table, np.ndarray]:
    """The rows of ``table`` (the typed columns of plain lines) as :data:`SCHEMA` with the context's
    columns set, and per row whether the context overrode a different value the event carried."""
    cols, over = [], np.zeros(table.num_rows, bool)
    for f in SCHEMA:
        if f.name == "extra":
            cols.append(pa.nulls(table.num_rows, pa.string()))
            continue
        col = table.column(f.name).cast(f.type)
        if f.name not in context:
            cols.append(col)
            continue
        want = _coerce(f.name, context[f.name])
        if want is None:
            differs = _pc("is_valid", col)
        else:
            differs = _pc("coalesce", _pc("not_equal", col, pa.scalar(want, f.type)), pa.scalar(False))
        over |= np.asarray(differs.to_numpy(zero_copy_only=False), dtype=bool)
        cols.append(pa.repeat(pa.scalar(want, f.type), table.num_rows))
    return pa.Table.from_arrays(cols, schema=SCHEMA), over


def file_table(path: str | Path, context: Mapping[str, Any] | None = None) -> pa.Table:
    """One JSON-lines file as a table of :data:`SCHEMA`, in line order (see the module contract):
    the same table as ``rows_to_table(read_events(path), context)``. Read :data:`CHUNK_BYTES` at a
    time (a simulated unit's single file can hold tens of millions of events), so memory is bounded
    by a chunk's copies plus the table."""
    tables = list(file_tables(path, context))
    return tables[0] if len(tables) == 1 else pa.concat_tables(tables)


def file_tables(
    path: str | Path, context: Mapping[str, Any] | None = None, chunk_bytes: int | None = None
) -> Iterable[pa.Table]:
    """:func:`file_table` as a table per chunk of whole lines, in order (at least one table)."""
    ctx = dict(context or {})
    size = chunk_bytes or CHUNK_BYTES
    carry = b""
    produced = False
    with open(path, "rb") as f:
        while block := f.read(size):
            lines, carry = _lines(carry + block if carry else block)
            if len(lines):
                produced = True
                yield _chunk_table(lines, b"", ctx)
    if carry or not produced:
        yield _chunk_table(_lines(b"")[0], carry, ctx)


def _chunk_table(lines: pa.LargeStringArray, tail: bytes, ctx: dict[str, Any]) -> pa.Table:
    """Complete ``lines`` and a torn ``tail`` (skipped unless it parses) as a table, in line order."""
    try:
        blank = np.asarray(
            _pc("equal", _pc("utf8_trim_whitespace", lines), pa.scalar("")).to_numpy(zero_copy_only=False),
            bool,
        )
        only_typed = _pc(
            "equal",
            _pc("count_substring", lines, options=pc.MatchSubstringOptions('":')),
            _pc("count_substring_regex", lines, options=pc.MatchSubstringOptions(_TYPED_KEY)),
        )
        plain = np.asarray(only_typed.to_numpy(zero_copy_only=False), dtype=bool) & ~blank
        idx = np.flatnonzero(plain)
        if len(idx):
            typed, over = _typed(_read(lines.take(pa.array(idx)), _TYPED_SCHEMA, "error"), ctx)
        else:
            typed, over = SCHEMA.empty_table(), np.zeros(0, bool)
    except (pa.ArrowInvalid, pa.ArrowTypeError, ValueError, OverflowError):
        return rows_to_table(_parse_each([*lines.to_pylist(), tail.decode("utf-8", "replace")]), ctx)
    if over.any():  # an event's own value the context overrides goes to extra: the exact path
        plain[idx[over]] = False
        typed = typed.filter(pa.array(~over))
    rest_pos = np.flatnonzero(~plain & ~blank)
    other = lines.take(pa.array(rest_pos)).to_pylist()
    candidates = [(int(i), line) for i, line in zip(rest_pos, other, strict=True)]
    if tail.strip():
        candidates.append((len(lines), tail.decode("utf-8", "replace")))
    pos, events = [], []
    for i, line in candidates:
        try:
            events.append(json.loads(line))
        except json.JSONDecodeError:
            continue
        pos.append(i)
    if not events:
        return typed
    both = pa.concat_tables([typed, rows_to_table(events, ctx)])
    order = np.argsort(np.concatenate([np.flatnonzero(plain), np.asarray(pos, np.int64)]), kind="stable")
    return both.take(pa.array(order))


def _parse_each(lines: Iterable[str | None]) -> list[dict[str, Any]]:
    """What :func:`~harness.history.writer.read_events` keeps of these lines: each that parses, blank and torn ones skipped."""
    out = []
    for line in lines:
        if line is None or not line.strip():
            continue
        try:
            out.append(json.loads(line))
        except json.JSONDecodeError:
            continue
    return out


def to_parquet(
    sources: Iterable[tuple[str | Path, Mapping[str, Any]]],
    out: str | Path,
    *,
    run_rows: int | None = None,
    batch_rows: int | None = None,
) -> int:
    """Merge JSON-lines files (each with its context) into one Parquet file sorted by time.

    Returns the number of events written. Missing files are skipped (a member that never started).
    Each file is converted column by column (:func:`file_tables`); rows are ordered by ``ts_ns``, ties
    in the order of the files, then of their lines (a stable sort). Memory is bounded: converted rows
    are collected into sorted runs of at most ``run_rows`` (:data:`RUN_ROWS`); a history of one run is
    sorted and written at once, a longer one has its runs spilled to Parquet files in a temporary
    directory beside ``out`` and merged ``batch_rows`` (:data:`MERGE_BATCH_ROWS`) rows of each run at a
    time (:func:`_merge_runs`), so the history is never held whole, in Python objects or in Arrow's
    memory. The temporary directory is removed on success and on failure.
    """
    out = Path(out)
    out.parent.mkdir(parents=True, exist_ok=True)
    limit = run_rows or RUN_ROWS
    with tempfile.TemporaryDirectory(prefix=".history-runs-", dir=out.parent) as tmp:
        runs: list[Path] = []
        pending: list[pa.Table] = []
        held = 0
        seq = 0

        def spill() -> None:
            nonlocal pending, held
            path = Path(tmp) / f"run-{len(runs):05d}.parquet"
            pq.write_table(_sorted(pa.concat_tables(pending)), path, compression="lz4")
            runs.append(path)
            pending, held = [], 0

        for path, context in sources:
            p = Path(path)
            if not p.exists():
                continue
            for table in file_tables(p, context):
                while table.num_rows:
                    take = table.slice(0, limit - held)
                    table = table.slice(take.num_rows)
                    pending.append(_keyed(take, seq))
                    seq += take.num_rows
                    held += take.num_rows
                    if held >= limit:
                        spill()
        if not runs:  # the whole history is one run: sort it in memory and write it
            table = _unkeyed(_sorted(pa.concat_tables(pending))) if pending else SCHEMA.empty_table()
            pq.write_table(table, out, compression="zstd")
            return table.num_rows
        if pending:
            spill()
        _merge_runs(runs, out, batch_rows or MERGE_BATCH_ROWS)
    return seq


def _keyed(table: pa.Table, first: int) -> pa.Table:
    """``table`` with its sort key: :data:`_TS` (``ts_ns``, a missing time last) and :data:`_SEQ`
    (the rows numbered from ``first`` in the order read), unique over a history."""
    ts = _pc("coalesce", table.column("ts_ns"), pa.scalar(np.iinfo(np.int64).max, pa.int64()))
    return table.append_column(_TS, ts).append_column(
        _SEQ, pa.array(np.arange(first, first + table.num_rows, dtype=np.int64))
    )


def _sorted(table: pa.Table) -> pa.Table:
    """``table`` ordered by its key (:func:`_keyed`): time, ties in the order rows were read."""
    return table.sort_by([(_TS, "ascending"), (_SEQ, "ascending")])


def _unkeyed(table: pa.Table) -> pa.Table:
    return table.drop_columns([_TS, _SEQ])


def _head_upto(table: pa.Table, key: tuple[int, int]) -> int:
    """How many leading rows of ``table`` (sorted by its key, :func:`_keyed`) have a key <= ``key``."""
    ts = table.column(_TS).to_numpy()
    lo, hi = np.searchsorted(ts, key[0], "left"), np.searchsorted(ts, key[0], "right")
    return int(lo + np.searchsorted(table.column(_SEQ).to_numpy()[lo:hi], key[1], "right"))


def _merge_runs(runs: list[Path], out: Path, batch_rows: int) -> None:
    """K-way merge of sorted runs (each ordered by its key, :func:`_keyed`, unique over all runs) into
    ``out``, holding one batch of each run and what one step takes.

    Each step reads the next batch of every run whose buffer is empty, then takes from every buffer
    the rows whose key is at most the *cut*: the smallest last key among the buffers. Every unread
    row of every run has a larger key than the cut (runs are sorted, keys unique), so the rows taken
    precede every row not yet taken: sorted, they are the next stretch of the output. The run that set
    the cut empties its buffer, so every step moves on."""
    batches = [pq.ParquetFile(r).iter_batches(batch_size=batch_rows) for r in runs]
    buffers: list[pa.Table | None] = [None] * len(runs)
    pending: list[pa.Table] = []
    held = 0
    with pq.ParquetWriter(out, SCHEMA, compression="zstd") as writer:
        while True:
            for i, it in enumerate(batches):
                buffer = buffers[i]
                if buffer is None or buffer.num_rows == 0:
                    batch = next(it, None)
                    buffers[i] = None if batch is None else pa.Table.from_batches([batch])
            live = [(i, b) for i, b in enumerate(buffers) if b is not None and b.num_rows]
            if not live:
                break
            cut = min((b.column(_TS)[-1].as_py(), b.column(_SEQ)[-1].as_py()) for _, b in live)
            for i, b in live:
                n = _head_upto(b, cut)
                pending.append(b.slice(0, n))
                buffers[i] = b.slice(n)
                held += n
            if held >= batch_rows:
                writer.write_table(_unkeyed(_sorted(pa.concat_tables(pending))).cast(SCHEMA))
                pending, held = [], 0
        if held:
            writer.write_table(_unkeyed(_sorted(pa.concat_tables(pending))).cast(SCHEMA))


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
