"""Spark's class archive: where it lives, when a JVM is told to map it, and the bench's line. No JVM
here (building and mapping one: tests/integration/analysis/test_class_archive.py, marked long)."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from harness.analysis import class_archive
from harness.bench.analysis import archive_line


def _spark(root: Path, jars: dict[str, int]) -> Path:
    (root / "jars").mkdir(parents=True)
    for name, size in jars.items():
        (root / "jars" / name).write_bytes(b"x" * size)
    return root


def _java(root: Path, modules: bytes) -> Path:
    (root / "lib").mkdir(parents=True)
    (root / "lib" / "modules").write_bytes(modules)
    return root


def test_the_key_changes_with_the_jars_and_the_java_and_only_with_them(tmp_path: Path) -> None:
    spark = _spark(tmp_path / "spark", {"a.jar": 3, "b.jar": 5})
    java = _java(tmp_path / "java", b"mods")
    key = class_archive.archive_key(java, spark)
    assert class_archive.archive_key(java, spark) == key
    (spark / "jars" / "b.jar").write_bytes(b"x" * 6)  # a jar replaced by another build
    changed_jar = class_archive.archive_key(java, spark)
    assert changed_jar != key
    (spark / "jars" / "c.jar").write_bytes(b"")  # a jar added
    added = class_archive.archive_key(java, spark)
    assert added not in {key, changed_jar}
    (java / "lib" / "modules").write_bytes(b"other modules")  # another Java build at the same path
    assert class_archive.archive_key(java, spark) not in {key, changed_jar, added}
    other_java = _java(tmp_path / "java2", b"other modules")
    assert class_archive.archive_key(other_java, spark) != class_archive.archive_key(java, spark)
    # the same jars written again (pyspark reinstalled): the JVM checks their modification times too
    before = class_archive.archive_key(java, spark)
    st = (spark / "jars" / "a.jar").stat()
    os.utime(spark / "jars" / "a.jar", ns=(st.st_atime_ns, st.st_mtime_ns + 1_000_000_000))
    assert class_archive.archive_key(java, spark) != before
    # the same jars in another virtual environment: the JVM checks the class path by its paths
    copy = _spark(tmp_path / "venv2" / "spark", {"a.jar": 3, "b.jar": 6, "c.jar": 0})
    assert class_archive.archive_key(java, copy) != class_archive.archive_key(java, spark)


def test_the_cache_directory_is_herdlabs_then_xdgs_then_the_homes(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("HOME", str(tmp_path / "home"))
    monkeypatch.delenv("HERDLAB_CACHE_DIR", raising=False)
    monkeypatch.delenv("XDG_CACHE_HOME", raising=False)
    assert class_archive.cache_dir() == tmp_path / "home" / ".cache" / "herdlab"
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path / "xdg"))
    assert class_archive.cache_dir() == tmp_path / "xdg" / "herdlab"
    monkeypatch.setenv("HERDLAB_CACHE_DIR", str(tmp_path / "mine"))
    assert class_archive.cache_dir() == tmp_path / "mine"


def test_the_archive_path_is_in_the_cache_and_named_by_the_key(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    spark = _spark(tmp_path / "spark", {"a.jar": 1})
    java = _java(tmp_path / "java", b"m")
    monkeypatch.setenv("SPARK_HOME", str(spark))
    monkeypatch.setenv("JAVA_HOME", str(java))
    monkeypatch.setenv("HERDLAB_CACHE_DIR", str(tmp_path / "cache"))
    key = class_archive.archive_key(java, spark)
    assert class_archive.archive_path() == tmp_path / "cache" / f"spark-classes-{key}.jsa"


def test_a_jvm_is_told_to_map_only_a_file_that_is_an_archive(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.delenv(class_archive.SWITCH, raising=False)
    path = tmp_path / "spark-classes.jsa"
    # none: a SharedArchiveFile that does not exist would turn off the JDK's own archive too
    assert class_archive.use_options(path) == []
    path.write_bytes(b"PK\x03\x04 not an archive")
    assert class_archive.use_options(path) == []
    path.write_bytes(bytes([0xA8, 0xAB, 0x0B, 0xF0]) + b"\0" * 64)  # HotSpot's dynamic archive magic
    assert class_archive.use_options(path) == [
        f"-XX:SharedArchiveFile={path}",
        "-Xlog:cds=off",
        "-Xlog:cds+dynamic=off",
    ]


@pytest.mark.parametrize("value", ["off", "0", "no", "OFF"])
def test_the_switch_turns_archives_off(tmp_path: Path, monkeypatch: pytest.MonkeyPatch, value: str) -> None:
    path = tmp_path / "a.jsa"
    path.write_bytes(bytes([0xA8, 0xAB, 0x0B, 0xF0]))
    monkeypatch.setenv(class_archive.SWITCH, value)
    assert class_archive.use_options(path) == []


def test_dump_options_name_the_file_the_jvm_writes_at_exit(tmp_path: Path) -> None:
    assert class_archive.dump_options(tmp_path / "x.part") == [
        f"-XX:ArchiveClassesAtExit={tmp_path / 'x.part'}",
        "-Xlog:cds=off",
        "-Xlog:cds+dynamic=off",
    ]


def test_discard_removes_the_mapped_file_only(tmp_path: Path) -> None:
    mapped, other = tmp_path / "a.jsa", tmp_path / "b.jsa"
    mapped.write_bytes(b"1")
    other.write_bytes(b"2")
    class_archive.discard([f"-XX:SharedArchiveFile={mapped}", "-Xlog:cds=off"])
    assert not mapped.exists()
    assert other.exists()


def test_mapped_reads_the_archive_back_from_a_jvms_options() -> None:
    assert (
        class_archive.mapped("-XX:+UseParallelGC -XX:SharedArchiveFile=/c/a.jsa -Xlog:cds=off") == "/c/a.jsa"
    )
    assert class_archive.mapped("-XX:+UseParallelGC -XX:ArchiveClassesAtExit=/c/a.jsa") is None
    assert class_archive.mapped(None) is None


def test_the_bench_says_whether_its_children_mapped_the_archive() -> None:
    assert archive_line({None}).startswith("Spark class archive: none")
    assert archive_line({"/c/a.jsa"}) == "Spark class archive: used (/c/a.jsa)"
    assert archive_line({None, "/c/a.jsa"}) == ("Spark class archive: used by some runs only (/c/a.jsa)")
