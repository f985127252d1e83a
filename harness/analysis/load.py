"""Reading a run directory: its manifest and its Parquet history, with one-line errors.

Contract
--------
:func:`load_run` checks ``RUN_DIR/history.parquet`` (present, a readable Parquet file with the
columns of :data:`harness.history.schema.SCHEMA` that the analysis needs) and reads
``RUN_DIR/manifest.json`` if present (a run interrupted early may lack it: the analysis then takes
what it needs from the history). Problems raise :class:`~harness.kernel.errors.ConfigError` naming the
file. Nothing here starts Spark.
"""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import pyarrow as pa
import pyarrow.parquet as pq

from harness.history.schema import SCHEMA
from harness.kernel.errors import ConfigError

HISTORY = "history.parquet"
MANIFEST = "manifest.json"

#: Columns the analysis reads; a history without one of them cannot be analysed.
REQUIRED = (
    "ts_ns",
    "case",
    "impl",
    "repetition",
    "source",
    "kind",
    "group",
    "member",
    "generation",
    "partition",
    "offset",
    "op",
    "outcome",
    "extra",
)


@dataclass
class RunInputs:
    """A run directory's inputs: where the history is, its row count, and the manifest."""

    run_dir: Path
    history: Path
    rows: int
    manifest: dict[str, Any] = field(default_factory=dict)
    #: the history file's own schema (its footer, read here): Spark reads the file with it rather than
    #: inferring it in a job of its own (:func:`harness.analysis.frames.prepare`)
    schema: pa.Schema | None = None

    @property
    def settle_window_s(self) -> float:
        """The scenario's settle window (3 s, the scenario default, when the manifest lacks it)."""
        scenario = self.manifest.get("scenario") or {}
        value = scenario.get("settle_window", 3.0)
        try:
            return float(value)
        except (TypeError, ValueError):
            raise ConfigError(f"{self.run_dir / MANIFEST}: settle_window {value!r} is not a number") from None


def check_history(path: Path) -> tuple[int, pa.Schema]:
    """Validate a Parquet history file; return its row count and its schema (see the module contract)."""
    if not path.exists():
        raise ConfigError(f"{path.parent} has no {HISTORY}: not a run directory, or the run wrote nothing")
    try:
        meta = pq.read_metadata(path)
        schema = pq.read_schema(path)
    except (pa.ArrowInvalid, OSError) as e:
        raise ConfigError(f"{path} is not a readable Parquet file ({str(e).splitlines()[0]})") from None
    missing = [c for c in REQUIRED if c not in schema.names]
    if missing:
        raise ConfigError(f"{path} lacks the history columns {', '.join(missing)}: not a herdlab history")
    for name in REQUIRED:
        want = SCHEMA.field(name).type
        got = schema.field(name).type
        if want != got and not (pa.types.is_integer(want) and pa.types.is_integer(got)):
            raise ConfigError(f"{path}: column {name} is {got}, expected {want}")
    return meta.num_rows, schema


def load_run(run_dir: str | Path) -> RunInputs:
    """The inputs of a run directory (see the module contract)."""
    d = Path(run_dir)
    if not d.is_dir():
        raise ConfigError(f"{d} is not a directory")
    history = d / HISTORY
    rows, schema = check_history(history)
    manifest: dict[str, Any] = {}
    mpath = d / MANIFEST
    if mpath.exists():
        try:
            manifest = json.loads(mpath.read_text())
        except (OSError, ValueError) as e:
            raise ConfigError(f"{mpath} is not valid JSON ({e})") from None
        if not isinstance(manifest, dict):
            raise ConfigError(f"{mpath} is not a JSON object")
    return RunInputs(run_dir=d, history=history, rows=rows, manifest=manifest, schema=schema)
