"""The child process of ``herdlab bench analysis``: analyse one run directory, report timings.

``python -m harness.analysis.bench RUN_DIR OUT_JSON [--spark-master URL] [--driver-memory 4g]``
starts Spark (timed), runs the full analysis (timed) and writes ``{"session_s", "analysis_s",
"events", "units", "triggers", "lost", "jobs", "stages", "tasks", "task_s", "busy_s", "families",
"class_archive"}`` to OUT_JSON. Every job the analysis starts is in one job group; afterwards
Spark's status store gives, of that group (:func:`job_profile`): ``jobs``, ``stages`` and ``tasks``
(completed), ``task_s`` (the tasks' executor run time, summed), ``busy_s`` (the time at least one of
its jobs ran: the union of their submission-to-completion intervals; ``analysis_s - busy_s`` is the
driver alone: reading footers, planning, Python) and ``families``: the same figures per job
description (the name :func:`harness.analysis.frames.together` gives each family's jobs; ``other``
for a job without one), each family's ``busy_s`` its own union.

``--bare`` instead starts the same Spark session (the same JVM settings and class archive), runs one
trivial job and stops: OUT_JSON gets ``bare_s`` (start to stopped) and ``session_s``. It runs in a
process of its own so that each size gets a fresh JVM and its peak memory can be measured from
outside. ``class_archive`` is the archive the JVM was given (:func:`harness.analysis.class_archive.mapped`
of its options), or null. ``--dump-class-archive PATH`` makes the JVM write Spark's class archive to
PATH instead, and the child waits until the JVM has exited (written it); OUT_JSON then also has the
JVM's ``class_path``.
"""

from __future__ import annotations

import argparse
import json
import time
from collections.abc import Iterable
from pathlib import Path
from typing import Any

from harness.analysis import class_archive
from harness.analysis.analyze import analyze
from harness.analysis.load import load_run
from harness.analysis.spark import shutdown_jvm, spark_session

#: The job group of the analysis's Spark jobs (what the bench counts).
JOB_GROUP = "herdlab-bench-analysis"


def busy_seconds(intervals: Iterable[tuple[float, float]]) -> float:
    """The length of the union of ``intervals`` ((start, end) in seconds): time covered by at least
    one of them, overlapping stretches counted once."""
    total, end = 0.0, float("-inf")
    for a, b in sorted(intervals):
        if b <= end:
            continue
        total += b - max(a, end)
        end = b
    return total


def _scala_list(seq: Any) -> list[Any]:
    it = seq.iterator()
    out = []
    while it.hasNext():
        out.append(it.next())
    return out


def _opt(o: Any) -> Any:
    return o.get() if o.isDefined() else None


def job_profile(sc: Any, group: str) -> dict[str, Any]:
    """Jobs, stages, tasks, task and busy seconds of job group ``group``, in all and per family
    (see the module contract), read from the SparkContext's status store (py4j)."""
    store = sc._jsc.sc().statusStore()  # pyright: ignore[reportPrivateUsage]
    families: dict[str, dict[str, Any]] = {}
    spans: dict[str, list[tuple[float, float]]] = {}
    for job in _scala_list(store.jobsList(None)):
        if _opt(job.jobGroup()) != group:
            continue
        name = _opt(job.description()) or "other"
        f = families.setdefault(name, {"jobs": 0, "stages": 0, "tasks": 0, "task_s": 0.0})
        f["jobs"] += 1
        start, end = _opt(job.submissionTime()), _opt(job.completionTime())
        if start is not None and end is not None:
            spans.setdefault(name, []).append((start.getTime() / 1e3, end.getTime() / 1e3))
        for sid in _scala_list(job.stageIds()):
            attempts = _scala_list(store.stageData(sid, False, None, False, None))
            if any(str(a.status()) != "SKIPPED" for a in attempts):
                f["stages"] += 1
            for a in attempts:
                f["tasks"] += int(a.numCompleteTasks())
                f["task_s"] += int(a.executorRunTime()) / 1e3
    for name, f in families.items():
        f["busy_s"] = round(busy_seconds(spans.get(name, [])), 3)
        f["task_s"] = round(f["task_s"], 3)
    every = [s for v in spans.values() for s in v]
    return {
        "jobs": sum(f["jobs"] for f in families.values()),
        "stages": sum(f["stages"] for f in families.values()),
        "tasks": sum(f["tasks"] for f in families.values()),
        "task_s": round(sum(f["task_s"] for f in families.values()), 3),
        "busy_s": round(busy_seconds(every), 3),
        "families": families,
    }


def main(argv: list[str] | None = None) -> None:
    ap = argparse.ArgumentParser(prog="python -m harness.analysis.bench")
    ap.add_argument("run_dir", type=Path)
    ap.add_argument("out", type=Path)
    ap.add_argument("--spark-master", default=None)
    ap.add_argument("--driver-memory", default=None)
    ap.add_argument("--dump-class-archive", type=Path, default=None)
    ap.add_argument("--bare", action="store_true")
    args = ap.parse_args(argv)

    t0 = time.monotonic()
    spark = spark_session(
        args.spark_master, driver_memory=args.driver_memory, dump_class_archive=args.dump_class_archive
    )
    t1 = time.monotonic()
    sc = spark.sparkContext
    archive = class_archive.mapped(sc.getConf().get("spark.driver.extraJavaOptions", None))
    if args.bare:
        spark.range(1).count()
        spark.stop()
        result = {"session_s": round(t1 - t0, 3), "bare_s": round(time.monotonic() - t0, 3)}
        args.out.write_text(json.dumps({**result, "class_archive": archive}))
        return
    inputs = load_run(args.run_dir)
    sc.setJobGroup(JOB_GROUP, "")  # no description: a job outside every family counts as "other"
    metrics = analyze(spark, inputs)
    t2 = time.monotonic()
    result = {
        "session_s": round(t1 - t0, 3),
        "analysis_s": round(t2 - t1, 3),
        "events": inputs.rows,
        "units": len(metrics["units"]),
        "triggers": sum(len(u.get("triggers") or []) for u in metrics["units"]),
        "lost": sum(u.get("lost") or 0 for u in metrics["units"]),
        **job_profile(sc, JOB_GROUP),
        "class_archive": archive,
    }
    if args.dump_class_archive:  # the class path the archive is for (class_archive.build checks it)
        result["class_path"] = sc._jvm.java.lang.System.getProperty("java.class.path")  # pyright: ignore[reportPrivateUsage]
    args.out.write_text(json.dumps(result))
    if args.dump_class_archive:
        code = shutdown_jvm()
        if code is None:
            raise SystemExit("the Spark JVM did not exit after writing its class archive")
    else:
        spark.stop()


if __name__ == "__main__":
    main()
