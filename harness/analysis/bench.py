"""The child process of ``herdlab bench analysis``: analyse one run directory, report timings.

``python -m harness.analysis.bench RUN_DIR OUT_JSON [--spark-master URL] [--driver-memory 4g]``
starts Spark (timed), runs the full analysis (timed) and writes ``{"session_s", "analysis_s",
"events", "units", "triggers"}`` to OUT_JSON. It runs in a process of its own so that each size gets
a fresh JVM and its peak memory can be measured from outside.
"""

from __future__ import annotations

import argparse
import json
import time
from pathlib import Path


def main(argv: list[str] | None = None) -> None:
    ap = argparse.ArgumentParser(prog="python -m harness.analysis.bench")
    ap.add_argument("run_dir", type=Path)
    ap.add_argument("out", type=Path)
    ap.add_argument("--spark-master", default=None)
    ap.add_argument("--driver-memory", default=None)
    args = ap.parse_args(argv)

    from harness.analysis.analyze import analyze
    from harness.analysis.load import load_run
    from harness.analysis.spark import spark_session

    t0 = time.monotonic()
    spark = spark_session(args.spark_master, driver_memory=args.driver_memory)
    t1 = time.monotonic()
    inputs = load_run(args.run_dir)
    metrics = analyze(spark, inputs)
    t2 = time.monotonic()
    result = {
        "session_s": round(t1 - t0, 3),
        "analysis_s": round(t2 - t1, 3),
        "events": inputs.rows,
        "units": len(metrics["units"]),
        "triggers": sum(len(u.get("triggers") or []) for u in metrics["units"]),
        "lost": sum(u.get("lost") or 0 for u in metrics["units"]),
    }
    args.out.write_text(json.dumps(result))
    spark.stop()


if __name__ == "__main__":
    main()
