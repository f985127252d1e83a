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
