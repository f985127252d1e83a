"""The analysis on a real Spark standalone cluster (master and two workers from the pyspark wheel's
classes, child processes of this test) equals local mode's, and a history the executors cannot see
gives one clear error.

The cluster's analysis runs in a ``herdlab report`` subprocess: pyspark allows one SparkSession per
process and this one holds the local session of the ``spark`` fixture. The workers are started in a
mount namespace of their own (``unshare``, as root) where the directory ``hidden`` is an empty tmpfs:
the driver sees the run written there, the executors do not, as on a cluster whose workers do not
share the driver's filesystem.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import psutil
import pytest

from harness.analysis.analyze import analyze
from harness.analysis.load import load_run
from harness.analysis.synthetic import write_synthetic_run
from harness.cluster.spark_standalone import SparkStandalone
from tests.support.waiting import wait_until

# A cluster start, a local and a cluster analysis: minutes on a loaded 2-core machine.
pytestmark = [pytest.mark.long, pytest.mark.timeout(1500)]


def _hiding_prefix(hidden: Path) -> list[str]:
    """A command prefix that runs a command in a private mount namespace with ``hidden`` empty."""
    return [
        "unshare",
        "--mount",
        "--propagation",
        "private",
        "sh",
        "-c",
        'mount -t tmpfs herdlab-hidden "$0" && exec "$@"',
        str(hidden),
    ]


def _can_hide(hidden: Path) -> bool:
    probe = hidden / "probe"
    probe.write_text("x")
    try:
        r = subprocess.run([*_hiding_prefix(hidden), "test", "!", "-e", str(probe)], timeout=30)
    except (OSError, subprocess.TimeoutExpired):
        return False
    finally:
        probe.unlink()
    return r.returncode == 0


def _gone(pids: list[int]) -> bool:
    for pid in pids:
        try:
            if psutil.Process(pid).status() != psutil.STATUS_ZOMBIE:
                return False
        except psutil.NoSuchProcess:
            pass
    return True


@pytest.fixture(scope="module")
def cluster(tmp_path_factory: pytest.TempPathFactory) -> Iterator[tuple[SparkStandalone, Path | None]]:
    hidden = tmp_path_factory.mktemp("hidden")
    can_hide = _can_hide(hidden)
    c = SparkStandalone(
        workers=2, cores=1, memory="1g", worker_prefix=_hiding_prefix(hidden) if can_hide else ()
    )
    started: list[int] = []
    try:
        c.start()
        started = c.processes()
        assert len(started) == 3  # the master and two workers
        yield c, hidden if can_hide else None
    finally:
        tree = started + [
            ch.pid for p in started if psutil.pid_exists(p) for ch in psutil.Process(p).children(True)
        ]
        c.stop()
    # Nothing left behind: daemons, their executors and the executors' Python workers.
    wait_until(lambda: _gone(tree), timeout=30, what=f"Spark processes {tree} to exit")
    assert c.workdir is None  # the temporary work directory is removed


def _report(run_dir: Path, master: str) -> subprocess.CompletedProcess[str]:
    env = {k: v for k, v in os.environ.items() if k != "PYSPARK_PYTHON"}  # executors use the workers' Python
    return subprocess.run(
        [sys.executable, "-m", "harness", "-v", "report", str(run_dir), "--spark-master", master],
        capture_output=True,
        text=True,
        timeout=900,
        env=env,
    )


def _without_spark(metrics: dict[str, Any]) -> dict[str, Any]:
    """The document without its ``spark`` block (master, timings, which differ by design)."""
    return {k: v for k, v in metrics.items() if k != "spark"}


def test_cluster_analysis_equals_local_mode(
    cluster: tuple[SparkStandalone, Path | None], spark: Any, tmp_path: Path
) -> None:
    c, _ = cluster
    run = write_synthetic_run(tmp_path, members=(3,), repetitions=1, rate=20.0, run_id="shared")
    run_dir = tmp_path / "herd" / "shared"
    local = json.loads(json.dumps(analyze(spark, load_run(run_dir))))  # as metrics.json holds it

    r = _report(run_dir, c.master_url)

    assert r.returncode == 0, r.stdout[-3000:] + r.stderr[-3000:]
    on_cluster = json.loads((run_dir / "metrics.json").read_text())
    assert on_cluster["spark"]["master"] == c.master_url
    assert local["spark"]["master"].startswith("local")
    assert _without_spark(on_cluster) == _without_spark(local)
    assert len(on_cluster["units"]) == len(run.expected) == 2  # both implementations were analysed
    # The driver did not impose its interpreter: the executors ran the workers' python3.
    assert "Spark executors run Python 'python3'" in r.stderr


def test_history_the_executors_cannot_read_is_a_clear_error(
    cluster: tuple[SparkStandalone, Path | None],
) -> None:
    c, hidden = cluster
    if hidden is None:
        pytest.skip("cannot give the workers a filesystem of their own here (unshare --mount needs root)")
    write_synthetic_run(hidden, members=(3,), repetitions=1, rate=20.0, run_id="private")
    run_dir = hidden / "herd" / "private"

    r = _report(run_dir, c.master_url)

    assert r.returncode == 2, r.stdout[-3000:] + r.stderr[-3000:]
    errors = [ln for ln in r.stderr.splitlines() if ln.startswith("herdlab: error:")]
    assert len(errors) == 1, r.stderr[-3000:]
    history = run_dir / "history.parquet"
    assert f"cannot read the history {history}" in errors[0]
    assert "same filesystem at the same path" in errors[0]
    assert "Traceback" not in r.stderr
    assert not (run_dir / "metrics.json").exists()
