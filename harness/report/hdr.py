"""HdrHistogram logs of the end-to-end latency, one ``.hlog`` per unit beside the report.

:func:`write_hlogs` writes ``hdr/<impl>-<case>-r<rep>.hlog`` from ``series["e2e"]`` of a metrics
document (:mod:`harness.analysis.e2e`): one interval histogram per 1 s bucket of the processing
time that had records, in HdrHistogram's log format (version 1.2, what ``HistogramLogProcessor`` and
the other HdrHistogram tools read): interval start timestamps in seconds since the epoch (the
``StartTime`` header is the first bucket's), values in microseconds (the max column too). The histograms are the analysis's, decoded and written as they are:
rendering computes nothing.
"""

from __future__ import annotations

import io
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from harness.analysis.metrics_model import MetricsDocument

HDR_DIR = "hdr"


def hlog_name(entry: dict[str, Any]) -> str:
    """The file name of a unit's log (from its series entry)."""
    case = "".join(ch if ch.isalnum() or ch in "-_." else "_" for ch in str(entry["case"]))[:60]
    return f"{entry['impl']}-{case}-r{entry['repetition']}.hlog"


def hlog_text(entry: dict[str, Any]) -> str:
    """A unit's HdrHistogram log (see the module docstring)."""
    from hdrh.histogram import HdrHistogram
    from hdrh.log import HistogramLogWriter

    buf = io.StringIO()
    w = HistogramLogWriter(buf)
    starts = [s for s, enc in zip(entry["epoch_s"], entry["hdr"], strict=True) if enc]
    w.output_comment(
        f"herdlab end-to-end latency (us): {entry['impl']} {entry['case']} r{entry['repetition']}"
    )
    w.output_log_format_version()
    if starts:  # written here: hdrh's output_start_time formats the date wrongly (0.10.8)
        when = datetime.fromtimestamp(starts[0], tz=UTC).isoformat(" ")
        buf.write(f"#[StartTime: {float(starts[0]):.3f} (seconds since epoch), {when}]\n")
    w.output_legend()
    for start, enc in zip(entry["epoch_s"], entry["hdr"], strict=True):
        if not enc:
            continue
        h = HdrHistogram.decode(enc)
        w.output_interval_histogram(
            h,
            start_time_stamp_sec=start,
            end_time_stamp_sec=start + entry["bucket_s"],
            max_value_unit_ratio=1.0,
        )
    return buf.getvalue()


def write_hlogs(run_dir: Path, metrics: MetricsDocument) -> list[Path]:
    """Write every unit's log into ``run_dir/hdr/`` (old logs there removed first); the paths."""
    entries = (metrics.get("series") or {}).get("e2e") or []
    d = run_dir / HDR_DIR
    if d.is_dir():
        for old in d.glob("*.hlog"):
            old.unlink()
    if not entries:
        return []
    d.mkdir(exist_ok=True)
    out = []
    for e in entries:
        p = d / hlog_name(e)
        p.write_text(hlog_text(e), encoding="utf-8")
        out.append(p)
    return out
