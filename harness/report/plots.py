"""The report's plots, drawn with matplotlib (Agg, no display) from ``metrics.json`` as PNG bytes.

* :func:`latency_plot`: rebalance latency against N (members) per trigger, mean with its 95% CI,
  detection dotted; triggers that never settled are counted on the plot.
* :func:`herd_plot`: coordination requests (ZooKeeper requests plus broker coordination requests)
  per membership change against N, one panel per trigger, log-log, watch notifications dotted, with
  the analytic N and N-squared curves (anchored at the smallest N of the largest series: only their
  slopes mean anything). Nothing is pooled across triggers.
* :func:`unit_plot`: one unit: records processed per second over time with each trigger's
  consumption gap shaded (top), and who owned each partition when, suspensions hatched and
  processing overlaps in red (bottom).
* :func:`e2e_plot`: one unit: end-to-end latency p50, p99 and max per 1 s bucket (top) and the
  consumer lag (bottom) over time, each trigger's t0 a labelled vertical line (the units of the
  ownership timelines: the same choice).

When the cases do not differ by N, the x axis is the case label instead. Plots only arrange what
the analysis computed.
"""

from __future__ import annotations

import io
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from matplotlib.figure import Figure
from matplotlib.lines import Line2D
from matplotlib.patches import Patch
from matplotlib.ticker import FuncFormatter, NullFormatter

from harness.analysis.definitions import metric
from harness.analysis.metrics_model import MetricsDocument
from harness.report.tables import cases, column_label, implementations, varying

IMPL_COLORS = {"legacy_zk": "#d95f02", "coordinator": "#1b6ac9", "consumer": "#1b9e77"}
OTHER = ["#7570b3", "#66a61e", "#e7298a", "#a6761d"]


@dataclass
class Plot:
    """One rendered plot."""

    name: str  # file stem
    title: str
    png: bytes


def _png(fig: Figure) -> bytes:
    buf = io.BytesIO()
    fig.savefig(buf, format="png", dpi=110, bbox_inches="tight")
    return buf.getvalue()


def _color(impl: str, impls: list[str]) -> str:
    return IMPL_COLORS.get(impl) or OTHER[impls.index(impl) % len(OTHER)]


def _axis(metrics: MetricsDocument) -> tuple[dict[str, float], list[str] | None, str]:
    """Case label -> x; tick labels when categorical; the axis label."""
    labels = cases(metrics)
    n_of = {c.get("label"): c.get("members") for c in metrics.get("cases") or []}
    ns = [n_of.get(c) for c in labels]
    ints = [n for n in ns if isinstance(n, int)]
    if len(ints) == len(ns) and len(set(ints)) == len(ints) and len(ints) >= 2:
        return {c: float(n) for c, n in zip(labels, ints, strict=True)}, None, "N (members at the start)"
    return {c: float(i) for i, c in enumerate(labels)}, labels, "case"


def _aggs(metrics: MetricsDocument) -> dict[tuple[str, str, str, str], Mapping[str, Any]]:
    return {(a["impl"], a["case"], a["trigger"], a["metric"]): a for a in metrics.get("aggregates", [])}


def latency_plot(metrics: MetricsDocument) -> Plot | None:
    """Rebalance latency against N, one panel per trigger (see the module docstring)."""
    keys = _trigger_keys(metrics, "latency_s")
    if not keys:
        return None
    impls = implementations(metrics)
    xs, ticks, xlabel = _axis(metrics)
    aggs = _aggs(metrics)
    fig = Figure(figsize=(min(4.2 * len(keys), 14), 3.8), layout="constrained")
    axes = fig.subplots(1, len(keys), squeeze=False)[0]
    width = 0.08 * (max(xs.values()) - min(xs.values()) or 1) if ticks is None else 0.08
    for ax, key in zip(axes, keys, strict=True):
        for j, impl in enumerate(impls):
            col = _color(impl, impls)
            off = (j - (len(impls) - 1) / 2) * width
            px, py, lo, hi, dx, dy = [], [], [], [], [], []
            for case, x in xs.items():
                a = aggs.get((impl, case, key, "latency_s"))
                if not a:
                    continue
                if a.get("mean") is not None:
                    px.append(x + off)
                    py.append(a["mean"])
                    ci = a.get("ci95") or [a["mean"], a["mean"]]
                    lo.append(max(0.0, a["mean"] - ci[0]))
                    hi.append(max(0.0, ci[1] - a["mean"]))
                if a.get("never"):
                    ax.annotate(
                        f"{a['never']}/{a['n']} never",
                        (x + off, a["mean"] if a.get("mean") is not None else 0),
                        textcoords="offset points",
                        xytext=(0, 8),
                        ha="center",
                        fontsize=7,
                        color=col,
                    )
                d = aggs.get((impl, case, key, "detection_s"))
                if d and d.get("mean") is not None:
                    dx.append(x + off)
                    dy.append(d["mean"])
            if px:
                ax.errorbar(px, py, yerr=[lo, hi], fmt="o-", color=col, capsize=3, label=impl)
            if dx:
                ax.plot(dx, dy, linestyle=":", marker=".", color=col, alpha=0.8)
        ax.set_title(key, fontsize=10)
        ax.set_xlabel(xlabel)
        tops = [ln.get_ydata() for ln in ax.get_lines()]
        top = max((float(max(t)) for t in tops if len(t)), default=1.0)
        ax.set_ylim(0, top * 1.15 if top > 0 else 1.0)
        ax.grid(alpha=0.3)
        if ticks is not None:
            ax.set_xticks(range(len(ticks)), ticks, rotation=20, fontsize=7)
            ax.set_xlim(-0.5, len(ticks) - 0.5)
    axes[0].set_ylabel("seconds")
    fig.legend(
        handles=[Line2D([], [], color=_color(i, impls), marker="o", label=i) for i in impls],
        fontsize=8,
        loc="outside lower center",
        ncol=len(impls),
        frameon=False,
    )
    fig.suptitle("rebalance latency t1 - t0 (mean, 95% CI; dotted: detection)", fontsize=11)
    return Plot("latency", "Rebalance latency against N", _png(fig))


def _trigger_keys(metrics: MetricsDocument, name: str) -> list[str]:
    keys: list[str] = []
    for a in metrics.get("aggregates", []):
        if a["trigger"] != "unit" and a["metric"] == name and a["trigger"] not in keys:
            keys.append(a["trigger"])
    return sorted(keys, key=lambda k: int(k.split()[0].lstrip("#")) if k.startswith("#") else 0)


def herd_plot(metrics: MetricsDocument) -> Plot | None:
    """Coordination requests per membership change against N, one panel per trigger (mean, 95% CI;
    dotted: watch notifications), with N and N-squared curves when the x axis is N."""
    keys = _trigger_keys(metrics, "coordination_requests")
    impls = implementations(metrics)
    xs, ticks, xlabel = _axis(metrics)
    aggs = _aggs(metrics)
    numeric = ticks is None

    def points(impl: str, key: str, name: str) -> tuple[list[float], list[float], list[list[float]]]:
        px: list[float] = []
        py: list[float] = []
        err: list[list[float]] = [[], []]
        for case, x in xs.items():
            a = aggs.get((impl, case, key, name))
            if not a or a.get("mean") is None or (numeric and a["mean"] <= 0):
                continue
            px.append(x)
            py.append(a["mean"])
            ci = a.get("ci95") or [a["mean"], a["mean"]]
            # on log axes an interval reaching zero or below is cut at a third of the mean
            low = max(ci[0], a["mean"] / 3) if numeric else ci[0]
            err[0].append(max(0.0, a["mean"] - low))
            err[1].append(max(0.0, ci[1] - a["mean"]))
        return px, py, err

    if not any(points(i, k, "coordination_requests")[0] for i in impls for k in keys):
        return None
    fig = Figure(figsize=(min(4.4 * len(keys), 14), 3.8), layout="constrained")
    axes = fig.subplots(1, len(keys), squeeze=False)[0]
    for ax, key in zip(axes, keys, strict=True):
        best: tuple[float, list[float], list[float]] | None = None
        for impl in impls:
            col = _color(impl, impls)
            px, py, err = points(impl, key, "coordination_requests")
            if px:
                ax.errorbar(px, py, yerr=err, fmt="o-", color=col, capsize=3, label=impl)
                if best is None or max(py) > best[0]:
                    best = (max(py), px, py)
            wx, wy, _ = points(impl, key, "watches")
            if wx:
                ax.plot(wx, wy, linestyle=":", marker=".", color=col, alpha=0.8)
        if numeric and best is not None and len(best[1]) >= 2:
            x0, y0 = best[1][0], best[2][0]
            lo, hi = min(xs.values()), max(xs.values())
            grid = [lo * (hi / lo) ** (k / 40) for k in range(41)]  # even on the log axis, up to 10^4
            ax.plot(grid, [y0 * g / x0 for g in grid], "--", color="grey", lw=1, label="∝ N")
            ax.plot(grid, [y0 * (g / x0) ** 2 for g in grid], ":", color="black", lw=1, label="∝ N²")
        if numeric:
            ax.set_xscale("log")
            ax.set_yscale("log")
            ax.set_xticks(sorted(xs.values()), [f"{v:g}" for v in sorted(xs.values())])
            ax.xaxis.set_minor_formatter(NullFormatter())
            ax.yaxis.set_major_formatter(FuncFormatter(lambda v, _pos: f"{v:g}"))
            ax.yaxis.set_minor_formatter(NullFormatter())
        else:
            ax.set_xticks(range(len(ticks or [])), ticks or [], rotation=20, fontsize=7)
            ax.set_xlim(-0.5, len(ticks or []) - 0.5)
        ax.set_title(key, fontsize=10)
        ax.set_xlabel(xlabel)
        ax.grid(alpha=0.3, which="both")
        ax.legend(fontsize=7)
    axes[0].set_ylabel("requests per change")
    fig.suptitle(
        f"{metric('coordination_requests').label} per membership change (mean, 95% CI; dotted: "
        f"{metric('watches').label})",
        fontsize=11,
    )
    return Plot("herd", "Coordination requests against N", _png(fig))


def unit_plot(metrics: MetricsDocument, timeline: dict[str, Any]) -> Plot:
    """Consumption rate and ownership timeline of one unit (see the module docstring)."""
    case, impl, rep = timeline["case"], timeline["impl"], timeline["repetition"]
    vary = varying(metrics)
    unit = next(
        (u for u in metrics.get("units", []) if (u["case"], u["impl"], u["repetition"]) == (case, impl, rep)),
        {"impl": impl},
    )
    name = column_label(unit, vary) if vary else impl  # today's title with one client and one broker
    rate = next(
        (
            r
            for r in metrics.get("series", {}).get("rate", [])
            if (r["case"], r["impl"], r["repetition"]) == (case, impl, rep)
        ),
        None,
    )
    parts = timeline["partitions"]
    height = 1.6 + 0.16 * max(len(parts), 4)
    fig = Figure(figsize=(11, 2.6 + height), layout="constrained")
    ax_rate, ax_own = fig.subplots(2, 1, sharex=True, gridspec_kw={"height_ratios": [2.2, height]})
    triggers = timeline.get("triggers") or []
    if rate:
        ax_rate.plot(rate["t_s"], rate["rate"], color="#333333", lw=0.9, drawstyle="steps-post")
        for g in rate.get("gaps") or []:
            if g and g[0] is not None:
                ax_rate.axvspan(g[0], g[1], color="#e41a1c", alpha=0.18, lw=0)
        ax_rate.set_ylabel(f"records/s\n({rate['bin_s']:g} s bins)")
    ax_rate.set_title(
        f"{name} · {case} · repetition {rep}: consumption (red: stop-the-world gap of each trigger)",
        fontsize=10,
    )
    members = sorted({c[1] for c in timeline["claims"]})
    palette = [
        "#1b9e77", "#d95f02", "#7570b3", "#e7298a", "#66a61e", "#e6ab02", "#a6761d", "#666666",
        "#1f78b4", "#b2df8a", "#fb9a99", "#fdbf6f", "#cab2d6", "#8dd3c7", "#bebada", "#80b1d3",
    ]  # fmt: skip
    color = {m: palette[i % len(palette)] for i, m in enumerate(members)}
    row = {p: i for i, p in enumerate(parts)}
    susp: dict[str, list[tuple[float, float]]] = {}
    for ident, s, e in timeline.get("suspended") or []:
        susp.setdefault(ident, []).append((s, e))
    # concurrent claims of one partition get lanes of their own, so a second owner stays visible
    lanes: dict[tuple[int, str, float], int] = {}
    n_lanes: dict[int, int] = {}
    ends: dict[int, list[float]] = {}
    for p, ident, s, e in sorted(timeline["claims"], key=lambda c: (c[0], c[2])):
        lane_ends = ends.setdefault(p, [])
        lane = next((i for i, end in enumerate(lane_ends) if end <= s), len(lane_ends))
        if lane == len(lane_ends):
            lane_ends.append(e)
        else:
            lane_ends[lane] = e
        lanes[(p, ident, s)] = lane
        n_lanes[p] = len(lane_ends)
    for p, ident, s, e in timeline["claims"]:
        y = row.get(p)
        if y is None:
            continue
        h = 0.76 / n_lanes[p]
        y0 = y - 0.38 + lanes[(p, ident, s)] * h
        ax_own.broken_barh([(s, max(e - s, 1e-3))], (y0, h), facecolors=color[ident], edgecolor="none")
        for ss, se in susp.get(ident, []):
            lo, hi = max(s, ss), min(e, se)
            if hi > lo:
                ax_own.broken_barh(
                    [(lo, hi - lo)],
                    (y0, h),
                    facecolors="white",
                    alpha=0.55,
                    hatch="///",
                    edgecolor=color[ident],
                )
    for p, s, e in timeline.get("overlaps") or []:
        y = row.get(p)
        if y is not None:
            ax_own.broken_barh(
                [(s, max(e - s, 0.02))],
                (y - 0.48, 0.96),
                facecolors="#e41a1c",
                alpha=0.75,
                edgecolor="#e41a1c",
            )
    for ax in (ax_rate, ax_own):
        for t0, _key, t1 in triggers:
            if t0 is not None:
                ax.axvline(t0, color="black", ls="--", lw=0.8)
            if t1 is not None:
                ax.axvline(t1, color="#2ca02c", ls=":", lw=0.9)
    top = ax_rate.get_ylim()[1]
    for t0, key, _t1 in triggers:
        if t0 is not None:
            ax_rate.text(t0, top, f" {key}", fontsize=7, va="top", ha="left")
    ax_own.set_yticks(range(len(parts)), [f"p{p}" for p in parts], fontsize=6 if len(parts) > 24 else 8)
    ax_own.set_ylim(-0.6, len(parts) - 0.4)
    ax_own.invert_yaxis()
    ax_own.set_xlabel("seconds since the group was stable")
    note = (
        ""
        if timeline.get("partitions_total", len(parts)) <= len(parts)
        else f" (first {len(parts)} of {timeline['partitions_total']})"
    )
    ax_own.set_title(
        f"ownership per partition{note}: stacked = two claimants, hatched = claimant suspended, red = two members processing",
        fontsize=9,
    )
    handles = [Patch(color=color[m], label=m) for m in members[:16]]
    handles += [
        Patch(facecolor="#e41a1c", alpha=0.75, label="overlap"),
        Patch(facecolor="white", hatch="///", edgecolor="grey", label="suspended"),
    ]
    ax_own.legend(
        handles=handles,
        fontsize=7,
        ncol=min(9, len(handles)),
        loc="upper center",
        bbox_to_anchor=(0.5, -0.18 - 2.0 / (height * 10)),
        frameon=False,
    )
    ax_rate.grid(alpha=0.3)
    ax_own.grid(alpha=0.2, axis="x")
    return Plot(f"unit-{impl}-{_slug(case)}-r{rep}", f"{name} · {case} · repetition {rep}", _png(fig))


def e2e_plot(metrics: MetricsDocument, entry: dict[str, Any]) -> Plot:
    """End-to-end latency and consumer lag over time of one unit (see the module docstring)."""
    case, impl, rep = entry["case"], entry["impl"], entry["repetition"]
    vary = varying(metrics)
    unit = next(
        (u for u in metrics.get("units", []) if (u["case"], u["impl"], u["repetition"]) == (case, impl, rep)),
        {"impl": impl},
    )
    name = column_label(unit, vary) if vary else impl
    fig = Figure(figsize=(11, 5.2), layout="constrained")
    ax_lat, ax_lag = fig.subplots(2, 1, sharex=True, gridspec_kw={"height_ratios": [3, 2]})
    b = entry["bucket_s"]
    t = [*entry["t_s"], entry["t_s"][-1] + b]  # steps over each bucket: the last one closed too
    styles = (("max", "#e41a1c", ":"), ("p99", "#ff7f00", "-"), ("p50", "#1b6ac9", "-"))
    shown: list[float] = []
    for field, col, ls in styles:
        ys = [float("nan") if v is None else v for v in entry[field]]
        ys.append(ys[-1])
        shown += [v for v in entry[field] if v]
        ax_lat.plot(t, ys, color=col, ls=ls, lw=1.0, drawstyle="steps-post", label=field)
    if shown and max(shown) / min(shown) > 100:
        ax_lat.set_yscale("log")
    ax_lat.set_ylabel("seconds")
    ax_lat.legend(fontsize=7, loc="upper right")
    ax_lat.set_title(
        f"{name} · {case} · repetition {rep}: end-to-end latency per {entry['bucket_s']:g} s bucket "
        "(produce acknowledged to first processing)",
        fontsize=10,
    )
    ax_lag.plot([x + b for x in entry["t_s"]], entry["lag"], color="#333333", lw=1.0, marker=".", ms=3)
    ax_lag.set_ylabel("consumer lag (records)\nat each bucket's end")
    ax_lag.set_xlabel("seconds since the group was stable")
    for ax in (ax_lat, ax_lag):
        for t0, _key, _t1 in entry.get("triggers") or []:
            if t0 is not None:
                ax.axvline(t0, color="black", ls="--", lw=0.8)
        ax.grid(alpha=0.3)
    for t0, key, _t1 in entry.get("triggers") or []:
        if t0 is not None:
            ax_lag.text(t0, 1.0, f" {key}", transform=ax_lag.get_xaxis_transform(), fontsize=7, va="top")
    return Plot(
        f"e2e-{impl}-{_slug(case)}-r{rep}",
        f"End-to-end latency and lag · {name} · {case} · repetition {rep}",
        _png(fig),
    )


def _slug(s: str) -> str:
    return "".join(ch if ch.isalnum() or ch in "-_." else "_" for ch in s)[:60]


def all_plots(metrics: MetricsDocument) -> list[Plot]:
    """Every plot of a report, in the order the report shows them."""
    out = [p for p in (latency_plot(metrics), herd_plot(metrics)) if p is not None]
    e2e = {(e["case"], e["impl"], e["repetition"]): e for e in metrics.get("series", {}).get("e2e", [])}
    for tl in metrics.get("series", {}).get("timelines", []):
        out.append(unit_plot(metrics, tl))
        entry = e2e.get((tl["case"], tl["impl"], tl["repetition"]))
        if entry is not None:
            out.append(e2e_plot(metrics, entry))
    return out
