"""The child process of ``herdlab bench analysis``: analyse one run directory, report timings.

``python -m harness.analysis.bench RUN_DIR OUT_JSON [--spark-master URL] [--driver-memory 4g]``
starts Spark (timed), runs the full analysis (timed) and writes ``{"session_s", "analysis_s",
"events", "units", "triggers", "lost", "jobs", "stages", "class_archive"}`` to OUT_JSON: ``jobs`` and ``stages`` are
the Spark jobs and stages the analysis ran (every job it starts is in one job group, counted from
Spark's status tracker afterwards). It runs in a process of its own so that each size gets
a fresh JVM and its peak memory can be measured from outside. ``class_archive`` is the
archive the JVM was given (:func:`harness.analysis.class_archive.mapped` of its options), or null.
``--dump-class-archive PATH`` makes the JVM write Spark's class archive to PATH instead, and the
child waits until the JVM has exited (written it); OUT_JSON then also has the JVM's ``class_path``.
"""

from __future__ import annotations

import argparse
import json
import time
from pathlib import Path

#: The job group of the analysis's Spark jobs (what the bench counts).
JOB_GROUP = "herdlab-bench-analysis"


def main(argv: list[str] | None = None) -> None:
    ap = argparse.ArgumentParser(prog="python -m harness.analysis.bench")
    ap.add_argument("run_dir", type=Path)
    ap.add_argument("out", type=Path)
    ap.add_argument("--spark-master", default=None)
    ap.add_argument("--driver-memory", default=None)
    ap.add_argument("--dump-class-archive", type=Path, default=None)
    args = ap.parse_args(argv)

    from harness.analysis import class_archive
    from harness.analysis.analyze import analyze
    from harness.analysis.load import load_run
    from harness.analysis.spark import shutdown_jvm, spark_session

    t0 = time.monotonic()
    spark = spark_session(
        args.spark_master, driver_memory=args.driver_memory, dump_class_archive=args.dump_class_archive
    )
    t1 = time.monotonic()
    inputs = load_run(args.run_dir)
    sc = spark.sparkContext
    sc.setJobGroup(JOB_GROUP, "herdlab analysis (bench)")
    metrics = analyze(spark, inputs)
    t2 = time.monotonic()
    tracker = sc.statusTracker()
    jobs = tracker.getJobIdsForGroup(JOB_GROUP)
    stages = sum(len(info.stageIds) for j in jobs if (info := tracker.getJobInfo(j)) is not None)
    result = {
        "session_s": round(t1 - t0, 3),
        "analysis_s": round(t2 - t1, 3),
        "events": inputs.rows,
        "units": len(metrics["units"]),
        "triggers": sum(len(u.get("triggers") or []) for u in metrics["units"]),
        "lost": sum(u.get("lost") or 0 for u in metrics["units"]),
        "jobs": len(jobs),
        "stages": stages,
        "class_archive": class_archive.mapped(sc.getConf().get("spark.driver.extraJavaOptions", None)),
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
