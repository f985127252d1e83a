"""Spark's and the JVM's start-up output goes to the run's spark.log, not the terminal: ``herdlab
report`` in a process of its own (a fresh JVM), its stdout and stderr captured. Real Spark: the
whole report is marked long, the JVM that fails at once only slow."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

from harness.analysis.synthetic import write_synthetic_run

#: Lines the driver JVM prints as it starts (Spark's log4j set-up, Hadoop's native-library warning).
STARTUP = ("Setting default log level", "log4j", "NativeCodeLoader", "sc.setLogLevel")


def _python(args: list[str], tmp_path: Path) -> subprocess.CompletedProcess[str]:
    env = dict(os.environ, COLUMNS="100", HERDLAB_CACHE_DIR=str(tmp_path / "cache"))
    return subprocess.run(
        [sys.executable, *args],
        env=env,
        cwd=tmp_path,
        capture_output=True,
        text=True,
        timeout=300,
        check=False,
    )


@pytest.mark.slow
@pytest.mark.long  # a whole analysis in a fresh JVM: kept out of the default run
def test_report_prints_no_startup_line_and_the_log_holds_them(tmp_path: Path) -> None:
    run = write_synthetic_run(
        tmp_path / "runs", rate=20.0, members=(3,), implementations=("coordinator",), repetitions=1
    ).run_dir
    done = _python(["-m", "harness", "report", str(run)], tmp_path)
    assert done.returncode == 0, done.stdout[-2000:] + done.stderr[-2000:]
    assert done.stderr == ""
    assert not [line for line in done.stdout.splitlines() if any(s in line for s in STARTUP)]
    assert done.stdout.startswith("verdict: ")
    log = (run / "spark.log").read_text()
    assert "Setting default log level" in log


@pytest.mark.slow
def test_a_jvm_that_does_not_start_is_one_line_naming_the_log(tmp_path: Path) -> None:
    log = tmp_path / "spark.log"
    code = (
        "from pathlib import Path\n"
        "from harness.analysis.spark import spark_session\n"
        "from harness.kernel.errors import EnvironmentProblem\n"
        "try:\n"
        f"    spark_session(driver_memory='lots', log_file=Path({str(log)!r}))\n"
        "except EnvironmentProblem as e:\n"
        "    print('failed:', e)\n"
    )
    done = _python(["-c", code], tmp_path)
    assert done.returncode == 0, done.stderr[-2000:]
    (line,) = done.stdout.splitlines()
    assert line.startswith("failed: could not start Spark (local[2]): ") and line.endswith(
        f"(its output: {log})"
    )
    # the JVM's complaint about the heap size is in the log, not on the terminal
    assert "heap" in log.read_text().lower() and "heap" not in done.stderr.lower()
