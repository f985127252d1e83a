"""``analyze_run``: one run directory in, the metrics dict (also ``metrics.json``'s content) out.

Contract
--------
``analyze_run(run_dir, spark_master=None) -> dict`` reads ``run_dir/history.parquet`` and
``manifest.json``, runs the metric families on Spark (local mode unless ``spark_master`` names a
cluster; a Spark JVM it starts writes its output to ``run_dir/spark.log``, :data:`SPARK_LOG`, not to
the terminal) and returns a JSON-serialisable dict (format ``herdlab-metrics/2``,
:data:`harness.analysis.document.FORMAT`):

* ``format``, ``run`` (run id, scenario, settle window, backend, versions...), ``spark``,
  ``definitions`` ([term, text] pairs), ``metric_info`` (label / unit / family per metric name),
  ``cases`` (from the manifest), ``alerts`` (one line each: lost records, failed units, triggers
  that never settled);
* ``units``: one dict per unit with its column (``client``, ``broker``, ``assignor``), completeness
  and split-brain totals, ``triggers`` (per trigger: t0_s, t1_s, settled, latency parts, herd
  counts, by-operation/API maps, rebalance rounds, partitions that never stopped, split brain in
  its window) and ``startup`` (split brain before the first trigger);
* ``aggregates``: per implementation, case and trigger key (``"#1 join"``; ``"unit"`` for unit
  totals) and metric: n, never, k (finite values), p50, p95, p99, max, mean, ci95 ([lo, hi] or
  None) and ci_note (``"n=1"`` ...);
* ``series``: rate of processed records per unit (for the consumption plot), the longest gap per
  trigger, and ownership timelines (claims, suspensions, overlaps) of chosen units;
* ``migration`` (only when some unit switched its members between kinds): the migration proof's
  verdict against the scenario's expected one; each such unit has ``migration`` (per switch and
  partition: committed offsets, resumed offsets, window, reprocessed, lost, overlaps, verdict);
* ``coordinators`` (only when the units ran against more than one broker): per trigger, client and
  assignor, each broker's median latency and coordination requests and the ratio herdlab / tansu
  (:mod:`.coordinators`);
* ``legacy_clients`` (only when legacy_zk units ran on more than one legacy client: herdlab's member and
  Kafka 0.8.2.2's own consumer): per case and trigger, each figure's median over the repetitions with
  the distribution-free interval of the median, and the figures whose intervals do not overlap
  (:mod:`.legacy_clients`);
* ``failover`` (only when some unit had a coordinator or ZooKeeper-leader fault): per implementation
  and fault action, the failover figures over its units (:func:`.failover_verdict.summary`); each
  such unit has ``failover`` (per fault: failover time and its parts, offsets lost, records lost
  and reprocessed, deposed acceptances, double-coordinator time; the unit's fenced refusals).

Times inside ``units`` and ``series`` are seconds since the unit's origin (its ``stable`` event,
else ``unit_start``, else its first event). A run with an empty history yields no units but a valid
dict. Errors in the input raise :class:`~harness.kernel.errors.ConfigError` (see :mod:`.load`).

Who computes what
-----------------
:mod:`.frames` splits the history; :mod:`.facts` folds each unit into trigger windows, outcomes
and ownership; then one module per metric family, each with its Spark job and its part of a
unit's entry: :mod:`.latency`, :mod:`.herd`, :mod:`.steady` (steady-state traffic),
:mod:`.split_brain` (overlap episodes), :mod:`.records` (lost, not drained, duplicates),
:mod:`.commits` (non-owner, stale generation, rejected), :mod:`.health` (session failures),
:mod:`.migration` (the migration proof; its verdicts in :mod:`.migration_verdict`), :mod:`.failover`
(coordinator and ZooKeeper-leader faults; the figures in :mod:`.failover_verdict`).
:mod:`.units` assembles the units, :mod:`.series` the plot series and :mod:`.document` the
document; this module only drives them.
"""

from __future__ import annotations

import time
from pathlib import Path
from typing import Any

from harness.analysis.document import finish, new_document
from harness.analysis.load import RunInputs, load_run
from harness.analysis.metrics_model import MetricsDocument
from harness.analysis.migration_verdict import expect_of
from harness.analysis.spark import check_history, shuffle_partitions_for, spark_session

#: The file in the run directory that the analysis's Spark JVM writes its stdout and stderr to.
SPARK_LOG = "spark.log"


def analyze_run(run_dir: str | Path, spark_master: str | None = None) -> MetricsDocument:
    """Analyse one run directory (see the module contract)."""
    inputs = load_run(run_dir)
    t = time.monotonic()
    spark = spark_session(spark_master, log_file=Path(run_dir) / SPARK_LOG)
    started = time.monotonic() - t
    metrics = analyze(spark, inputs)
    metrics["spark"]["session_s"] = round(started, 3)
    return metrics


def analyze(spark: Any, inputs: RunInputs) -> MetricsDocument:
    """Run the analysis on an already running ``spark`` session (see :func:`analyze_run`)."""
    # deferred: start-up: control, frames and units import pyspark; it loads only when a run is analysed
    from harness.analysis.control import Control
    from harness.analysis.frames import prepare
    from harness.analysis.units import assemble, unit_table

    t_start = time.monotonic()
    out = new_document(inputs, spark.sparkContext.master, spark.version)
    # the shuffle of every delivery (the record keys) gets partitions by the history's size; every
    # other shuffle is of small tables (control events, windows, per-partition figures), where more
    # tasks than cores only add task overhead
    cores = spark.sparkContext.defaultParallelism
    parts = shuffle_partitions_for(inputs.rows, cores)
    spark.conf.set("spark.sql.shuffle.partitions", str(min(parts, cores)))
    out["spark"]["shuffle_partitions"] = parts
    out["spark"]["small_shuffle_partitions"] = min(parts, cores)
    check_history(spark, inputs.history)  # a cluster's executors must read it (no-op in local mode)
    try:
        frames = prepare(spark, str(inputs.history), wide=parts, schema=inputs.schema)
        control = Control(frames)
        units = unit_table(frames, control, inputs.manifest)
        analysed = {k: u for k, u in units.items() if u.get("events")}
        if analysed:
            assemble(spark, frames, control, analysed, inputs.settle_window_s, out["series"])
    finally:
        spark.catalog.clearCache()  # the deliveries and record keys: the session may serve further analyses
    for k, u in units.items():  # units without events (failed before anything was recorded)
        if k not in analysed:
            u.setdefault("triggers", [])
    doc = finish(out, units, expect_of(inputs.manifest))
    doc["spark"]["analysis_s"] = round(time.monotonic() - t_start, 3)
    return doc
