"""Input checks of a run directory: one-line ConfigErrors, no Spark involved."""

from __future__ import annotations

import json
from pathlib import Path

import pyarrow as pa
import pyarrow.parquet as pq
import pytest

from harness.analysis.load import load_run
from harness.history.schema import SCHEMA
from harness.kernel.errors import ConfigError


def test_missing_directory(tmp_path: Path) -> None:
    with pytest.raises(ConfigError, match="is not a directory"):
        load_run(tmp_path / "nope")


def test_directory_without_history(tmp_path: Path) -> None:
    with pytest.raises(ConfigError, match="has no history.parquet"):
        load_run(tmp_path)


def test_corrupt_parquet(tmp_path: Path) -> None:
    (tmp_path / "history.parquet").write_bytes(b"PAR1garbagePAR1")
    with pytest.raises(ConfigError, match="not a readable Parquet file"):
        load_run(tmp_path)


def test_parquet_without_history_columns(tmp_path: Path) -> None:
    pq.write_table(pa.table({"ts_ns": [1], "kind": ["record"]}), tmp_path / "history.parquet")
    with pytest.raises(ConfigError, match="lacks the history columns"):
        load_run(tmp_path)


def test_bad_manifest(tmp_path: Path) -> None:
    pq.write_table(SCHEMA.empty_table(), tmp_path / "history.parquet")
    (tmp_path / "manifest.json").write_text("{not json")
    with pytest.raises(ConfigError, match="manifest.json is not valid JSON"):
        load_run(tmp_path)


def test_settle_window_from_manifest_with_default(tmp_path: Path) -> None:
    pq.write_table(SCHEMA.empty_table(), tmp_path / "history.parquet")
    assert load_run(tmp_path).settle_window_s == 3.0  # no manifest: the scenario default
    (tmp_path / "manifest.json").write_text(json.dumps({"scenario": {"settle_window": 1.5}}))
    run = load_run(tmp_path)
    assert (run.settle_window_s, run.rows) == (1.5, 0)


def test_load_run_keeps_the_files_own_schema(tmp_path: Path) -> None:
    # a history whose repetition is int64 (an integer column of another width is accepted)
    table = SCHEMA.empty_table().set_column(
        SCHEMA.get_field_index("repetition"), "repetition", pa.array([], pa.int64())
    )
    pq.write_table(table, tmp_path / "history.parquet")
    schema = load_run(tmp_path).schema
    assert schema is not None
    assert schema.field("repetition").type == pa.int64()
    assert schema.names == SCHEMA.names


def test_spark_schema_translates_the_history_columns() -> None:
    from pyspark.sql import types as T

    from harness.analysis.frames import spark_schema

    got = spark_schema(SCHEMA)
    assert got is not None
    by_name = {f.name: f for f in got.fields}
    assert got.names == SCHEMA.names  # every column, in the file's order
    assert by_name["ts_ns"].dataType == T.LongType()
    assert by_name["repetition"].dataType == T.IntegerType()
    assert by_name["partition"].dataType == T.IntegerType()
    assert by_name["duration_ms"].dataType == T.DoubleType()
    assert by_name["kind"].dataType == T.StringType()
    assert by_name["extra"].dataType == T.StringType()
    assert all(f.nullable for f in got.fields)


def test_spark_schema_leaves_unknown_types_to_spark() -> None:
    from harness.analysis.frames import spark_schema

    odd = SCHEMA.append(pa.field("big", pa.uint64()))  # Spark has no unsigned 64-bit type
    assert spark_schema(odd) is None
