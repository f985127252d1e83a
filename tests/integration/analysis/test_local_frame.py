"""frames.local_frame: small tables of Python rows built by the JVM (no Python worker process)."""

from __future__ import annotations

from typing import Any

import pytest

from harness.analysis.frames import local_frame

DDL = "case string, repetition int, t long, flag boolean"


def test_rows_come_back_with_the_schema_s_types(spark: Any) -> None:
    rows = [("members=10", 0, 2**40 + 7, True), ("members=50", 2, -1, None), (None, None, None, False)]
    df = local_frame(spark, rows, DDL)
    assert [(f.name, f.dataType.simpleString()) for f in df.schema.fields] == [
        ("case", "string"),
        ("repetition", "int"),
        ("t", "bigint"),
        ("flag", "boolean"),
    ]
    assert sorted((tuple(r) for r in df.collect()), key=str) == sorted(rows, key=str)


def test_no_rows_make_an_empty_table_with_the_columns(spark: Any) -> None:
    df = local_frame(spark, [], DDL)
    assert df.columns == ["case", "repetition", "t", "flag"]
    assert df.count() == 0


def test_the_table_is_scanned_in_the_jvm_not_by_python_workers(spark: Any) -> None:
    """A list given to createDataFrame is a PythonRDD of pickled rows (a ``Scan ExistingRDD`` that
    Python workers feed); a local frame is a table the JVM holds (``LocalTableScan``)."""
    df = local_frame(spark, [("a", 1, 2, True)], DDL)
    plan = df._jdf.queryExecution().executedPlan().toString()
    assert "LocalTableScan" in plan
    assert "ExistingRDD" not in plan


def test_a_row_of_the_wrong_width_is_refused(spark: Any) -> None:
    with pytest.raises(ValueError):
        local_frame(spark, [("a", 1, 2, True), ("b", 1, 2)], DDL)


def test_rows_given_as_mappings_are_refused(spark: Any) -> None:
    """A dict's tuple is its keys: a mapping row would fill the columns with the field names."""
    with pytest.raises(TypeError, match="not mappings"):
        local_frame(spark, [{"case": "a", "repetition": 1, "t": 2, "flag": True}], DDL)
