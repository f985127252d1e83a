"""Spark's class archive for real: written by a JVM, mapped by the next one, and a damaged one
neither crashes the analysis nor stays. Real JVMs and Spark (about a minute and a half: marked long)."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from harness.analysis import class_archive
from harness.analysis.synthetic import write_synthetic_run

SPARK_SESSION_CLASS = "org.apache.spark.sql.SparkSession"


def _python(args: list[str], env: dict[str, str], cwd: Path) -> subprocess.CompletedProcess[str]:
    """This interpreter run with ``args`` (output captured), as a process of its own: a fresh JVM."""
    return subprocess.run(
        [sys.executable, *args], env=env, cwd=cwd, capture_output=True, text=True, timeout=300, check=False
    )


def _bench_child(
    run_dir: Path, out: Path, env: dict[str, str], cwd: Path
) -> subprocess.CompletedProcess[str]:
    """The bench's child (one analysis in a fresh JVM); the JVMs log where each class came from."""
    return _python(["-m", "harness.analysis.bench", str(run_dir), str(out)], env, cwd)


def _class_sources(logs: Path) -> list[str]:
    """The lines of the JVMs' class-loading logs that name SparkSession's class."""
    return [
        line
        for f in sorted(logs.glob("classes-*.log"))
        for line in f.read_text(errors="replace").splitlines()
        if f" {SPARK_SESSION_CLASS} source:" in line
    ]


@pytest.mark.slow
@pytest.mark.long
def test_an_archive_is_written_once_mapped_after_and_a_damaged_one_is_dropped(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("HERDLAB_CACHE_DIR", str(tmp_path / "cache"))
    monkeypatch.delenv(class_archive.SWITCH, raising=False)
    path = class_archive.archive_path()
    assert path is not None and path.parent == tmp_path / "cache"

    built = class_archive.build()
    assert built.path == path
    assert class_archive.is_archive(path)
    assert not list(path.parent.glob("*.part"))  # written aside, then renamed into place

    run = write_synthetic_run(
        tmp_path / "runs", rate=20.0, members=(3,), implementations=("coordinator",), repetitions=1
    )
    logs = tmp_path / "logs"
    logs.mkdir()
    env = dict(os.environ, JAVA_TOOL_OPTIONS=f"-Xlog:class+load=info:file={logs}/classes-%p.log")
    done = _bench_child(run.run_dir, tmp_path / "mapped.json", env, tmp_path)
    assert done.returncode == 0, done.stderr[-2000:]
    result = json.loads((tmp_path / "mapped.json").read_text())
    assert result["class_archive"] == str(path)
    sources = _class_sources(logs)
    assert sources, "no JVM loaded SparkSession"
    assert all("shared objects file (top)" in s for s in sources), sources

    # cut short (as a full disk would leave it): a JVM that maps it crashes; the session starts
    # without it, and the file is gone until it is written again
    data = path.read_bytes()
    path.chmod(0o644)
    path.write_bytes(data[: len(data) // 100])
    for f in logs.iterdir():
        f.unlink()
    done = _bench_child(run.run_dir, tmp_path / "damaged.json", env, tmp_path)
    assert done.returncode == 0, done.stderr[-2000:]
    assert "did not start with the class archive" in done.stderr
    assert not path.exists()
    sources = _class_sources(logs)
    assert sources and not any("shared objects file" in s for s in sources), sources


@pytest.mark.slow
def test_a_start_that_fails_for_another_reason_keeps_the_archive(tmp_path: Path) -> None:
    # an archive-looking file (only its magic) and a driver memory no JVM accepts: Spark fails with it
    # and without it, so the archive was not the cause and stays
    env = dict(os.environ, HERDLAB_CACHE_DIR=str(tmp_path / "cache"))
    env.pop(class_archive.SWITCH, None)
    code = (
        "from harness.analysis import class_archive\n"
        "from harness.analysis.spark import spark_session\n"
        "from harness.kernel.errors import EnvironmentProblem\n"
        "path = class_archive.archive_path()\n"
        "path.parent.mkdir(parents=True)\n"
        "path.write_bytes(class_archive.DYNAMIC_MAGIC + bytes(64))\n"
        "try:\n"
        "    spark_session(driver_memory='lots')\n"
        "except EnvironmentProblem as e:\n"
        "    print('failed:', e)\n"
        "print('kept' if path.exists() else 'removed')\n"
    )
    done = _python(["-c", code], env, tmp_path)
    assert done.returncode == 0, done.stderr[-2000:]
    lines = done.stdout.splitlines()
    assert lines[0].startswith("failed: could not start Spark"), done.stdout
    assert lines[-1] == "kept", done.stdout + done.stderr[-2000:]
