"""The tables every report shows, as plain data (rendered by :mod:`.html`, :mod:`.markdown` and
:mod:`.terminal`), and the formatting of values.

Nothing here computes a figure: it arranges the aggregates and the verdict of ``metrics.json``.
A statistic reads ``never`` when the analysis says so (the string ``"never"``), ``no effect`` /
``skipped`` when the sample is empty because of those outcomes, and ``—`` when nothing was measured.
A row whose sample holds one value shows that value once, not four equal statistics.
"""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

from harness.analysis.coordinators import OURS
from harness.analysis.definitions import TRIGGER_METRICS, UNIT_METRICS, metric
from harness.analysis.legacy_clients import client_of as legacy_client_of
from harness.analysis.metrics_model import Aggregate, MetricsDocument, Verdict
from harness.analysis.samples import outcome
from harness.analysis.startup import start_up_line
from harness.analysis.stats import NEVER
from harness.analysis.verdict import verdict

DASH = "—"
STATS = ("p50", "p95", "p99", "max")


def fmt(v: Any, unit: str = "", never: bool = False) -> str:
    """One value: ``1.234 s``, ``12``, ``3.5``; ``"never"`` -> ``never``; None -> ``never`` when
    ``never`` else ``—``."""
    if v is None:
        return NEVER if never else DASH
    if v == NEVER:
        return NEVER
    if isinstance(v, bool):
        return "yes" if v else "no"
    if isinstance(v, int | float):
        if unit == "s":
            return f"{v:.3f} s"
        if float(v).is_integer():
            return f"{int(v)}"
        return f"{v:.1f}" if abs(v) >= 10 else f"{v:.2f}"
    return str(v)


def fmt_bytes(v: Any) -> str:
    """A size in bytes as ``512 B``, ``1.5 KiB``, ``240.0 MiB`` or ``23.5 GiB`` (binary units);
    anything not a whole number of bytes as :func:`fmt` shows it."""
    if isinstance(v, bool) or not isinstance(v, int):
        return fmt(v)
    size = float(v)
    for unit in ("B", "KiB", "MiB", "GiB"):
        if abs(size) < 1024 or unit == "GiB":
            return f"{v} B" if unit == "B" else f"{size:.1f} {unit}"
        size /= 1024
    raise AssertionError("unreachable")


def _empty(a: Mapping[str, Any]) -> str:
    """What an empty sample reads: its outcomes, or ``—``."""
    if a.get("no_effect") and not a.get("m"):
        return "no effect"
    if a.get("skipped") and not a.get("m"):
        return "skipped"
    return DASH


def fmt_stat(a: Mapping[str, Any], stat: str) -> str:
    """One statistic (``p50`` ... ``max``, or ``value``) of an aggregate row."""
    v = a.get(stat)
    return _empty(a) if v is None else fmt(v, metric(a["metric"]).unit)


def fmt_mean(a: Mapping[str, Any]) -> str:
    """``mean [lo, hi]``, with how many never values it left out; ``never`` when all were."""
    m = metric(a["metric"])
    if a.get("mean") is None:
        return NEVER if a.get("left_out") else _empty(a)
    s = fmt(a["mean"], m.unit)
    if a.get("ci95"):
        lo, hi = a["ci95"]
        s += f" [{fmt(lo, m.unit)}, {fmt(hi, m.unit)}]"
    if a.get("left_out"):
        s += f" ({a['left_out']} never left out)"
    return s


def single(a: Mapping[str, Any]) -> bool:
    """Whether the row's sample holds at most one value (shown as one value)."""
    return int(a.get("m") or 0) <= 1


def fmt_one(a: Mapping[str, Any]) -> str:
    """The one value of a row whose sample holds at most one."""
    return fmt_stat(a, "value")


@dataclass
class SideBySide:
    """One table: rows are metrics, column groups are implementations. ``single``: every cell holds
    at most one value (one repetition), so the table shows one column per implementation."""

    case: str
    trigger: str
    targets: list[str]
    impls: list[str]
    rows: list[tuple[str, Mapping[str, Mapping[str, Any]]]] = field(default_factory=list)
    single: bool = False
    #: implementation -> its column label (:func:`column_label`); absent: the implementation's name
    labels: dict[str, str] = field(default_factory=dict)

    def label(self, impl: str) -> str:
        """The column label of ``impl`` in this table."""
        return self.labels.get(impl, impl)


# --- column labels: (implementation, client, broker[, assignor]) ------------------------------------

SEP = " · "
#: in :func:`varying`'s answer: the legacy_zk units' clients vary (python and the original)
LEGACY_CLIENT = "legacy_client"


def varying(metrics: MetricsDocument) -> tuple[str, ...]:
    """Which of a unit's ``client``, ``broker`` and ``assignor`` take more than one value in the run
    (the clients of coordinator units, and apart from them those of legacy_zk units: herdlab's own, whose
    client is "", against the original 0.8.2.2 consumer; then also :data:`LEGACY_CLIENT`). The client and
    broker label a column together: both when either varies."""
    units = metrics.get("units") or []
    clients = {u.get("client") for u in units if u.get("impl") != "legacy_zk" and u.get("client")}
    legacy = {legacy_client_of(u) for u in units if u.get("impl") == "legacy_zk"}
    brokers = {u.get("broker") for u in units if u.get("broker")}
    assignors = {u.get("assignor") for u in units if u.get("assignor")}
    several = len(clients) > 1 or len(legacy) > 1 or len(brokers) > 1
    out: tuple[str, ...] = ("client", "broker") if several else ()
    out += ("assignor",) if len(assignors) > 1 else ()
    return out + ((LEGACY_CLIENT,) if len(legacy) > 1 else ())


def column_label(u: Mapping[str, Any], vary: tuple[str, ...]) -> str:
    """A unit's column label: its implementation, then (``vary``, see :func:`varying`) its client,
    broker and assignor where it has them, e.g. ``coordinator · librdkafka · tansu``; where the legacy_zk
    units' clients vary (:data:`LEGACY_CLIENT` in ``vary``), a legacy_zk unit's client is ``python``
    (herdlab's own member) or the original's, e.g. ``legacy_zk · kafka-0.8.2.2 · apache-kafka 3.9.2``."""
    values = {k: u.get(k) for k in vary if k != LEGACY_CLIENT}
    if u["impl"] == "legacy_zk" and LEGACY_CLIENT in vary:
        values["client"] = legacy_client_of(u)
    return SEP.join([u["impl"], *(str(v) for v in values.values() if v)])


def implementations(metrics: MetricsDocument) -> list[str]:
    """Implementations in the run, in the scenario's order."""
    named = (metrics.get("run") or {}).get("implementations") or []
    seen = {u["impl"] for u in metrics.get("units", [])}
    return [i for i in named if i in seen] + sorted(seen - set(named))


def cases(metrics: MetricsDocument) -> list[str]:
    """Case labels in the manifest's order (then any others found in the units)."""
    out: list[Any] = [c.get("label") for c in metrics.get("cases") or []]
    for u in metrics.get("units", []):
        if u["case"] not in out:
            out.append(u["case"])
    return out


def side_by_side(metrics: MetricsDocument, breakdown: bool = False) -> list[SideBySide]:
    """Per case and trigger key (then ``unit``): the aggregates side by side.

    ``breakdown``: the by-operation / by-API metrics instead of the headline ones. Metrics no
    implementation has a value, a never or an outcome for are left out.
    """
    impls = implementations(metrics)
    vary = varying(metrics)
    labels: dict[str, dict[str, str]] = defaultdict(dict)
    for u in metrics.get("units") or []:
        if vary:
            labels[u["case"]][u["impl"]] = column_label(u, vary)
    by: dict[tuple[str, str], dict[str, dict[str, Aggregate]]] = defaultdict(lambda: defaultdict(dict))
    targets: dict[tuple[str, str], list[str]] = {}
    order: dict[tuple[str, str], int] = {}
    for a in metrics.get("aggregates", []):
        k = (a["case"], a["trigger"])
        by[k][a["metric"]][a["impl"]] = a
        targets.setdefault(k, a.get("targets") or [])
        order.setdefault(k, a.get("trigger_index", 0) if a["trigger"] != "unit" else 10**6)
    tables = []
    for case in cases(metrics):
        for k in sorted((k for k in by if k[0] == case), key=lambda k: order[k]):
            if breakdown:
                names = sorted(n for n in by[k] if "[" in n)
            else:
                names = [m.name for m in (UNIT_METRICS if k[1] == "unit" else TRIGGER_METRICS)]
            t = SideBySide(
                case=case, trigger=k[1], targets=targets[k], impls=impls, labels=labels.get(case, {})
            )
            for n in names:
                cells = by[k].get(n, {})
                if any(c.get("m") or c.get("no_effect") or c.get("skipped") for c in cells.values()):
                    t.rows.append((f"unit.{n}" if k[1] == "unit" else n, cells))
            t.single = all(single(a) for _, cells in t.rows for a in cells.values())
            if t.rows:
                tables.append(t)
    return tables


def trigger_title(t: SideBySide) -> str:
    if t.trigger == "unit":
        return f"{t.case}: whole units"
    tg = f" {','.join(t.targets)}" if t.targets else ""
    return f"{t.case}: trigger {t.trigger}{tg}"


def columns(t: SideBySide) -> list[str]:
    """The statistic columns under each implementation."""
    return ["value"] if t.single else [*STATS, "mean [95% CI]", "n"]


def cells(t: SideBySide, a: Mapping[str, Any] | None) -> list[str]:
    """The cells of one implementation in one row of ``t`` (see :func:`columns`). A row whose sample
    holds one value, in a table that is not ``single``, shows it under p50 and leaves the rest blank."""
    width = len(columns(t))
    if a is None:
        return [DASH] * width
    if t.single:
        return [fmt_one(a)]
    if single(a):
        return [fmt_one(a), "", "", "", "", str(a["n"])]
    return [*(fmt_stat(a, s) for s in STATS), fmt_mean(a), str(a["n"])]


# --- the verdict -------------------------------------------------------------------------------------


def verdict_of(metrics: MetricsDocument) -> Verdict:
    """The metrics' verdict; computed from the units when the file predates it."""
    if metrics.get("verdict"):
        return metrics["verdict"]

    return verdict(metrics)


def fmt_ratio(r: dict[str, Any]) -> str:
    """``2.00× [1.16, 13.9]``, ``2.00×`` (no interval) or ``—``."""
    if r.get("ratio") is None:
        return DASH
    s = f"{sig3(r['ratio'])}×"
    if r.get("ci95"):
        s += f" [{sig3(r['ci95'][0])}, {sig3(r['ci95'][1])}]"
    return s


def sig3(v: float) -> str:
    """Three significant digits (``2.00``, ``13.9``, ``0.500``); whole numbers from 100 on."""
    return f"{v:#.3g}" if abs(v) < 100 else f"{v:.0f}"


VERDICT_COLUMNS = [
    "case",
    "trigger kind",
    "ratio",
    "latency",
    "latency means",
    "coordination requests",
    "request means",
    "repetitions",
    "notes",
]
#: :data:`VERDICT_COLUMNS` as a reader's column headings (the HTML and Markdown reports).
VERDICT_HEADERS = [
    "case",
    "trigger kind",
    "compared (legacy_zk / other)",
    "latency ratio",
    "mean latency (legacy_zk / other)",
    "request ratio",
    "mean requests (legacy_zk / other)",
    "repetitions (legacy_zk / other)",
    "notes",
]


def one_note(notes: str) -> str:
    """A ratio row's notes with a note both of its ratios share said once ("latency: n=1, no CI; requests:
    n=1, no CI" reads "n=1, no CI")."""
    parts = notes.split("; ")
    if len(parts) == 2 and parts[0].startswith("latency: ") and parts[1].startswith("requests: "):
        lat, req = parts[0].removeprefix("latency: "), parts[1].removeprefix("requests: ")
        if lat == req:
            return lat
    return notes


#: The ratio table's title when it compares several pairs, all against legacy_zk / not all of them.
SEVERAL_AGAINST_LEGACY = "legacy_zk against the other implementations, per trigger kind"
EACH_PAIR = "each pair of designs (older / newer), per trigger kind"


def pairs_beyond_legacy(pairs: set[str]) -> bool:
    """Whether some of the ratio table's pairs (its ``ratio`` cells, ``num / den``) has a numerator other
    than legacy_zk (coordinator / consumer): the table then speaks of the older and newer design."""
    return any(not p.startswith("legacy_zk / ") for p in pairs)


def pair_headers(headers: list[str], pairs: set[str]) -> list[str]:
    """``headers`` as they read over ``pairs`` (see :func:`pairs_beyond_legacy`): ``(legacy_zk / other)``
    becomes ``(older / newer)`` when some pair does not start with legacy_zk; else unchanged."""
    if not pairs_beyond_legacy(pairs):
        return headers
    return [h.replace("(legacy_zk / other)", "(older / newer)") for h in headers]


def ratio_table(rows: list[list[str]], headers: list[str]) -> tuple[str, list[str], list[list[str]]]:
    """The ratio table as a report shows it: (title, headers, rows) of :func:`verdict_rows`' ``rows``
    under ``headers`` (:data:`VERDICT_COLUMNS` or :data:`VERDICT_HEADERS`, or a selection of them that keeps
    the first three and the notes last). When every row compares the same pair (two implementations), the
    title names the pair and its column goes; a note both ratios of a row share is said once. With three
    designs (legacy_zk, coordinator, consumer) the rows compare each pair, and the title and the means'
    headers say older / newer (:func:`pair_headers`)."""
    pair = VERDICT_COLUMNS.index("ratio")
    rows = [[*r[:-1], one_note(r[-1])] for r in rows]
    pairs = {r[pair] for r in rows}
    headers = pair_headers(headers, pairs)
    if len(pairs) != 1:
        return EACH_PAIR if pairs_beyond_legacy(pairs) else SEVERAL_AGAINST_LEGACY, headers, rows
    keep = [i for i in range(len(headers)) if i != pair]
    return (
        f"{next(iter(pairs))}, per trigger kind",
        [headers[i] for i in keep],
        [[r[i] for i in keep] for r in rows],
    )


COMPLETENESS_COLUMNS = [
    "implementation",
    "units",
    "failed",
    "lost",
    "not drained",
    "overlap episodes",
    "overlap",
    "non-owner commits",
    "stale commits accepted",
]


def verdict_rows(metrics: MetricsDocument) -> list[list[str]]:
    """The ratio table of the verdict, one row per case, trigger kind and pair (see
    :data:`VERDICT_COLUMNS`)."""
    out = []
    for r in verdict_of(metrics).get("ratios") or []:
        lat, req = r["latency_s"], r["coordination_requests"]
        means = [
            " / ".join(fmt(v, unit) for v in x["means"]) if any(v is not None for v in x["means"]) else DASH
            for x, unit in ((lat, "s"), (req, ""))
        ]
        notes = [
            f"latency: {lat['note']}" if lat["note"] else "",
            f"requests: {req['note']}" if req["note"] else "",
        ]
        out.append(
            [
                r["case"],
                f"{r['action']} ({', '.join(r['triggers'])})",
                f"{r['numerator']} / {r['denominator']}",
                fmt_ratio(lat),
                means[0],
                fmt_ratio(req),
                means[1],
                f"{lat['n'][0] + lat['never'][0]} / {lat['n'][1] + lat['never'][1]}",
                "; ".join(n for n in notes if n),
            ]
        )
    return out


def completeness_rows(metrics: MetricsDocument) -> list[list[str]]:
    """Per implementation: units, failed, lost, not drained, split brain (see
    :data:`COMPLETENESS_COLUMNS`); ``n/a`` for stale commits of an implementation without generations."""
    out = []
    for c in verdict_of(metrics).get("completeness") or []:
        stale = c.get("commits_stale_generation")
        out.append(
            [
                c["impl"],
                str(c["units"]),
                str(c["failed"]),
                fmt(c.get("lost") or 0),
                fmt(c.get("not_drained") or 0),
                fmt(c.get("overlap_episodes") or 0),
                fmt(c.get("overlap_s") or 0.0, "s"),
                fmt(c.get("commits_non_owner") or 0),
                "n/a" if stale is None else fmt(stale),
            ]
        )
    return out


def verdict_intro(metrics: MetricsDocument) -> str:
    """The sentence under the verdict's ratio table: what a ratio is and how its interval is made."""
    v = verdict_of(metrics)
    older = any(r.get("numerator") != "legacy_zk" for r in v.get("ratios") or [])
    return (
        (
            "A ratio above 1: the older design of the pair (legacy_zk, then coordinator, then consumer) "
            "took longer or sent more. "
            if older
            else "A ratio above 1: legacy_zk took longer or sent more. "
        )
        + (v.get("method") or "")
        + " Completeness and split brain below: totals over every unit of each implementation."
    )


# --- every unit -------------------------------------------------------------------------------------

UNIT_COLUMNS = [
    ("trigger", ""),
    ("t0_s", "s"),
    ("outcome", ""),
    ("latency_s", "s"),
    ("detection_s", "s"),
    ("convergence_s", "s"),
    ("resumed_s", "s"),
    ("startup_s", "s"),
    ("coordination_requests", ""),
    ("watches", ""),
    ("zk_requests", ""),
    ("zk_packets", ""),
    ("broker_group_requests", ""),
    ("conflicts", ""),
    ("failed_attempts", ""),
    ("gave_up", ""),
    ("overlap_episodes", ""),
    ("overlap_s", "s"),
    ("duplicates", ""),
    ("commits_non_owner", ""),
    ("commits_stale_generation", ""),
]


def unit_column_headers() -> list[str]:
    """:data:`UNIT_COLUMNS` as a reader's column headings: each metric's label and unit."""
    out = []
    for name, unit in UNIT_COLUMNS:
        label = {"t0_s": "t0", "trigger": "trigger", "outcome": "outcome"}.get(name) or metric(name).label
        out.append(f"{label} ({unit})" if unit else label)
    return out


def startup_rows(metrics: MetricsDocument) -> list[dict[str, Any]]:
    """The ``start_up`` rows of :func:`unit_rows` (``unit``: its label, ``text``: its start-up line)."""
    return [r for r in unit_rows(metrics) if r["kind"] == "start_up"]


def unit_rows(metrics: MetricsDocument) -> list[dict[str, Any]]:
    """The per-unit detail table: per unit a ``start_up`` row (``text``: its start-up line, when it has
    one), a row per trigger (``cells`` under :data:`UNIT_COLUMNS`), then a ``totals`` row (``text``);
    a failed unit gets a ``failed`` row. A latency of a trigger
    that did not settle reads its outcome, never a number."""
    out: list[dict[str, Any]] = []
    vary = varying(metrics)
    for u in metrics.get("units", []):
        label = f"{column_label(u, vary)} {u['case']} r{u['repetition']}"
        if failed := u.get("failed"):
            out.append({"unit": label, "kind": "failed", "text": f"FAILED: {failed}"})
        started = start_up_line(u.get("start_up"))
        if started is not None:
            out.append({"unit": label, "kind": "start_up", "text": started})
        for t in u.get("triggers", []):
            o = outcome(t)
            row = []
            for name, unit in UNIT_COLUMNS:
                if name == "trigger":
                    row.append(f"{t['key']} {','.join(t.get('targets') or [])}".strip())
                elif name == "outcome" or (metric(name).censored and o != "settled"):
                    row.append(o.replace("_", " "))
                elif metric(name).censored:
                    row.append(fmt(t.get(name), unit, never=True))
                else:
                    row.append(fmt(t.get(name), unit))
            out.append({"unit": label, "kind": "trigger", "cells": row})
        if "produced" not in u:
            continue
        text = (
            f"produced {u.get('produced', 0)}, processed {u.get('processed', 0)}, lost {u.get('lost', 0)}, "
            f"not drained {u.get('not_drained', 0)}, duplicates {u.get('duplicates', 0)}, overlap episodes "
            f"{u.get('overlap_episodes', 0)} ({fmt(u.get('overlap_s'), 's')}), non-owner commits "
            f"{u.get('commits_non_owner', 0)}, stale-generation commits "
            f"{fmt(u.get('commits_stale_generation'))}, rejected commits {u.get('commits_rejected', 0)}"
        )
        if failures := u.get("session_failures"):
            text += f", session failures {failures}"
        bad = bool(u.get("lost") or u.get("not_drained"))
        out.append({"unit": label, "kind": "totals", "text": text, "lost": bad})
    return out


#: The columns of the overlap-episode table (:func:`overlap_rows`).
OVERLAP_COLUMNS = ["unit", "phase", "partition", "start", "end", "duration", "records per member"]
#: Episodes shown in a report (every one is in metrics.json's ``overlaps``).
MAX_OVERLAP_ROWS = 50
OVERLAP_INTRO = (
    "Every overlap episode (split brain): two members' processing intervals of one partition "
    "intersecting (see processing interval in the definitions). Times in seconds since the unit's "
    "origin; per member the records it processed inside the episode (first and last offset) and how "
    "many of those another member of the episode processed at any time (duplicates)."
)


def _phase_name(tid: int, keys: dict[int, str]) -> str:
    return {-1: "startup", -2: "drain"}.get(tid) or keys.get(tid, f"#{tid}")


def _member_records(m: Mapping[str, Any]) -> str:
    n = m["records"]
    if not n:
        return f"{m['member']}: no record"
    lo, hi = m["offsets"]
    span = f"offset {lo}" if lo == hi else f"offsets {lo}-{hi}"
    return f"{m['member']}: {n} record{'s' if n != 1 else ''} ({span}), {m['duplicates']} duplicate{'s' if m['duplicates'] != 1 else ''}"


def overlap_rows(metrics: MetricsDocument) -> tuple[list[list[str]], int]:
    """The overlap-episode table under :data:`OVERLAP_COLUMNS`, at most :data:`MAX_OVERLAP_ROWS` rows
    (by unit, then start), and how many episodes it leaves out."""
    vary = varying(metrics)
    rows: list[list[str]] = []
    total = 0
    for u in metrics.get("units", []):
        keys = {t["index"]: t["key"] for t in u.get("triggers") or []}
        label = f"{column_label(u, vary)} {u['case']} r{u['repetition']}"
        for e in u.get("overlaps") or []:
            total += 1
            if len(rows) < MAX_OVERLAP_ROWS:
                rows.append(
                    [
                        label,
                        _phase_name(e["tid"], keys),
                        str(e["p"]),
                        fmt(e["start_s"], "s"),
                        fmt(e["end_s"], "s"),
                        fmt(e["duration_s"], "s"),
                        "; ".join(_member_records(m) for m in e["members"]),
                    ]
                )
    return rows, total - len(rows)


#: What the migration proof's tables show (the definitions at the end of a report state each term).
MIGRATION_INTRO = (
    "Per unit and switch of its members between kinds, per partition: the last offset committed in "
    "ZooKeeper and in Kafka before a new-kind member took the partition over, where each new owner "
    "resumed, the uncommitted window (processed by the old owners beyond the last commit), the "
    "offsets reprocessed (at most the window when the offsets were carried), records lost (must be 0) "
    "and overlap episodes between a legacy and a coordinator owner."
)
#: The per-partition table of the migration proof (one per unit and switch).
MIGRATION_COLUMNS = [
    "partition",
    "taken over",
    "ZooKeeper committed",
    "Kafka committed",
    "committed",
    "processed last",
    "resumed (member@offset)",
    "window",
    "reprocessed",
    "lost",
    "overlap episodes",
    "overlap",
    "verdict",
]


@dataclass
class MigrationTable:
    """One switch of one unit: its title and its per-partition rows (cells as text)."""

    unit: str
    title: str
    verdict: str
    rows: list[list[str]] = field(default_factory=list[list[str]])


def migration_line(metrics: MetricsDocument) -> str | None:
    """The migration proof's verdict line, with the expected verdict (None: no unit switched)."""
    m = metrics.get("migration")
    if not m:
        return None
    status = "as expected" if m.get("as_expected") else "NOT as expected"
    return f"Migration verdict: {m.get('verdict')} (expected: {m.get('expect')}, {status})"


def migration_tables(metrics: MetricsDocument) -> list[MigrationTable]:
    """Per unit with a switch and per switch, the per-partition table of ``units[i]["migration"]``."""
    out = []
    for u in metrics.get("units") or []:
        mig = u.get("migration")
        if not mig:
            continue
        name = f"{u['impl']} {u['case']} rep {u['repetition']}"
        for s in mig.get("switches") or []:
            title = (
                f"{name}: #{s['step']} {s['action']} ({s.get('mode')}) {s['from']} → {s['to']} "
                f"at {fmt(s.get('t_s'), 's')}: {s['verdict']}"
            )
            t = MigrationTable(unit=name, title=title, verdict=s["verdict"])
            for p in s.get("partitions") or []:
                resumed = ", ".join(f"{r['member']}@{fmt(r.get('offset'))}" for r in p.get("resumed") or [])
                t.rows.append(
                    [
                        f"{p.get('topic') or ''}/{p['partition']}" if p.get("topic") else str(p["partition"]),
                        fmt(p.get("taken_over_s"), "s"),
                        fmt(p.get("zookeeper_committed")),
                        fmt(p.get("kafka_committed")),
                        fmt(p.get("committed")),
                        fmt(p.get("processed_last")),
                        resumed or DASH,
                        fmt(p.get("window")),
                        fmt(p.get("reprocessed")),
                        fmt(p.get("lost")),
                        fmt(p.get("overlap_episodes")),
                        fmt(p.get("overlap_s"), "s"),
                        p["verdict"],
                    ]
                )
            out.append(t)
    return out


#: What the "Coordinator failover" table shows (the definitions at the end of a report state each term).
FAILOVER_INTRO = (
    "Per implementation and fault (a coordinator fault; on the legacy side its counterpart, the ZooKeeper "
    "leader's): the time from the fault until the group was served again and its parts (detection by "
    "the controller, election of a new leader of the group's offsets partition, loading of its groups, "
    "the group's first answered request), committed offsets the new coordinator did not return, records "
    "lost and reprocessed in the fault's window, requests a deposed leader or coordinator acknowledged, "
    "and the time two brokers both acted as the group's coordinator (the last three must be 0 with "
    "fencing). For a ZooKeeper-leader fault, election is the ensemble's and sessions lost the members "
    "(or brokers) whose ZooKeeper session expired."
)
#: The columns of the "Coordinator failover" table.
FAILOVER_COLUMNS = [
    "implementation",
    "fault",
    "detection",
    "election",
    "loading",
    "rejoin",
    "failover",
    "offsets lost",
    "records lost",
    "reprocessed",
    "deposed acceptances",
    "double-coordinator",
    "sessions lost",
]


def _deposed_cell(d: Mapping[str, Any] | None) -> str:
    d = d or {}
    commits, produces = int(d.get("commit") or 0), int(d.get("produce") or 0)
    return "0" if not commits and not produces else f"{commits} commit, {produces} produce"


def _listed(n: Any, names: list[str] | None) -> str:
    if n is None:
        return DASH
    return f"{fmt(n)} ({', '.join(names)})" if names else fmt(n)


def failover_rows(metrics: MetricsDocument) -> list[list[str]]:
    """One row per unit's failover fault (``units[i]["failover"]["faults"]``), by implementation in the
    run's order, then case and repetition; empty when no unit had such a fault."""
    order = {impl: i for i, impl in enumerate(implementations(metrics))}
    units = sorted(
        (u for u in metrics.get("units") or [] if u.get("failover")),
        key=lambda u: (order.get(u["impl"], len(order)), u["case"], u["repetition"]),
    )
    rows = []
    for u in units:
        for f in (u.get("failover") or {}).get("faults") or []:
            broker = f.get("broker_id")
            on = f" (broker {broker})" if broker is not None else ""
            fault = f"{u['case']} rep {u['repetition']}: #{f['action_id']} {f['action']}{on}"
            zk = f.get("kind") == "zookeeper"
            sessions = f.get("sessions_lost")
            rows.append(
                [
                    u["impl"],
                    fault,
                    DASH if zk else fmt(f.get("detection_s"), "s"),
                    fmt(f.get("zk_election_s") if zk else f.get("election_s"), "s"),
                    DASH if zk else fmt(f.get("loading_s"), "s"),
                    DASH if zk else fmt(f.get("rejoin_s"), "s"),
                    DASH if zk else fmt(f.get("failover_s"), "s"),
                    DASH if zk else _listed(f.get("offsets_lost"), f.get("offsets_lost_partitions")),
                    fmt(f.get("records_lost")),
                    fmt(f.get("reprocessed")),
                    _deposed_cell(f.get("deposed_acceptances")),
                    fmt(f.get("double_coordinator_s"), "s"),
                    _listed(len(sessions), sessions) if sessions is not None else DASH,
                ]
            )
    return rows


# --- coordinators side by side ------------------------------------------------------------------------

COORDINATORS_INTRO = (
    "Per trigger, client and assignor: each broker's median rebalance latency and coordination requests "
    "(broker group requests), and herdlab / each other broker: the ratio of the mean latencies over the "
    "repetitions with its 95 % confidence interval (below 1: ours is faster; an interval wholly outside "
    "[0.9, 1.1] is marked *), and the ratio of the median requests. - when either side has no finite value."
)
REQUEST_KINDS_INTRO = (
    "Per trigger, client and assignor: the median count of each coordination request kind on each broker; "
    "the last column names the brokers whose median differs from herdlab's."
)


def _reference(c: Mapping[str, Any]) -> list[str]:
    """The brokers herdlab is compared with."""
    return list(c.get("reference") or [])


def coordinators_columns(metrics: MetricsDocument) -> list[str]:
    """The Coordinators table's header (empty without a ``coordinators`` summary)."""
    c = metrics.get("coordinators")
    if not c:
        return []
    brokers = list(c.get("brokers") or [])
    return [
        "trigger",
        "client",
        "assignor",
        *(f"latency {b}" for b in brokers),
        *(f"latency herdlab/{b}" for b in _reference(c)),
        *(f"requests {b}" for b in brokers),
        *(f"requests herdlab/{b}" for b in _reference(c)),
    ]


def _trigger(r: Mapping[str, Any]) -> str:
    return r["trigger"] if r.get("impl") == "coordinator" else f"{r['impl']} {r['trigger']}"


def _ratio(v: Any) -> str:
    return "-" if v is None else f"{v:.2f}"


def _latency_vs(vs: Mapping[str, Any]) -> str:
    """``0.95 [0.90, 1.01]``, ``*`` after an interval wholly outside the fidelity band."""
    r, ci = vs.get("latency_ratio"), vs.get("latency_ci95")
    if r is None or ci is None:
        return _ratio(r)
    return f"{r:.2f} [{ci[0]:.2f}, {ci[1]:.2f}]" + (" *" if vs.get("latency_outside") else "")


def coordinators_rows(metrics: MetricsDocument) -> list[list[str]]:
    """The rows of the Coordinators table, from ``metrics["coordinators"]`` (see
    :mod:`harness.analysis.coordinators`); a ratio the analysis left None reads ``-``."""
    c = metrics.get("coordinators")
    if not c:
        return []
    brokers = list(c.get("brokers") or [])
    reference = _reference(c)
    out = []
    for r in c.get("rows") or []:
        vs = r.get("vs") or {}
        out.append(
            [
                _trigger(r),
                r.get("client") or DASH,
                r.get("assignor") or DASH,
                *(fmt(r["latency_s"].get(b), "s") for b in brokers),
                *(_latency_vs(vs.get(b) or {}) for b in reference),
                *(fmt(r["coordination_requests"].get(b)) for b in brokers),
                *(_ratio((vs.get(b) or {}).get("requests_ratio")) for b in reference),
            ]
        )
    return out


def request_kind_columns(metrics: MetricsDocument) -> list[str]:
    """The request-kinds table's header (empty without a summary that has kinds)."""
    c = metrics.get("coordinators")
    if not c or not request_kind_rows(metrics):
        return []
    return ["trigger", "client", "assignor", "request", *(list(c.get("brokers") or [])), "differs"]


def request_kind_rows(metrics: MetricsDocument) -> list[list[str]]:
    """One row per trigger, client, assignor and request kind: each broker's median count, then the
    brokers whose median differs from herdlab's (``kinds_differ`` of the summary)."""
    c = metrics.get("coordinators")
    if not c:
        return []
    brokers = list(c.get("brokers") or [])
    out = []
    for r in c.get("rows") or []:
        vs = r.get("vs") or {}
        for kind, by in (r.get("requests_by_kind") or {}).items():
            differ = [b for b, v in vs.items() if kind in (v.get("kinds_differ") or [])]
            out.append(
                [
                    _trigger(r),
                    r.get("client") or DASH,
                    r.get("assignor") or DASH,
                    kind,
                    *(fmt(by.get(b)) for b in brokers),
                    ", ".join(differ) or DASH,
                ]
            )
    return out


# --- what each broker ran with --------------------------------------------------------------------------

BROKER_CONFIG_INTRO = (
    "What each broker ran with: the group settings herdlab's broker takes from the scenario and every "
    "property of Apache Kafka's server.properties, by their Kafka names (listeners, directories and "
    "ZooKeeper addresses, which differ per unit, are left out; every unit's full configuration is in the "
    "manifest). - where a broker has no such setting."
)
#: Properties that name a unit's own ports, directories or servers: they differ per unit by nature.
PER_UNIT_PROPERTIES = (
    "listeners",
    "advertised.listeners",
    "log.dirs",
    "zookeeper.connect",
    "controller.quorum.voters",
)


def broker_config_columns(metrics: MetricsDocument) -> list[str]:
    """The broker-configuration table's header: ``setting`` and each broker (empty without any)."""
    by = _broker_configs(metrics)
    return ["setting", *by] if by else []


def broker_config_rows(metrics: MetricsDocument) -> list[list[str]]:
    """One row per setting any broker ran with (see :data:`BROKER_CONFIG_INTRO`); a setting whose value
    differed between a broker's units lists each value."""
    by = _broker_configs(metrics)
    keys = sorted({k for props in by.values() for k in props})
    return [[k, *(" / ".join(sorted(by[b][k])) if k in by[b] else DASH for b in by)] for k in keys]


def _broker_configs(metrics: MetricsDocument) -> dict[str, dict[str, set[str]]]:
    """Broker column label -> setting -> the values its units ran with, from ``units[].broker_config``."""
    out: dict[str, dict[str, set[str]]] = {}
    for u in metrics.get("units") or []:
        cfg = u.get("broker_config")
        if not cfg:
            continue
        props = out.setdefault(str(u.get("broker") or cfg.get("broker")), {})
        for k, v in (cfg.get("properties") or {}).items():
            if k not in PER_UNIT_PROPERTIES:
                props.setdefault(k, set()).add(str(v))
    return dict(sorted(out.items(), key=lambda kv: (kv[0] != OURS, kv[0])))


# --- legacy fidelity: herdlab's member beside Kafka 0.8.2.2's own consumer --------------------------------

LEGACY_CLIENTS_INTRO = (
    "Per case and trigger: each figure's median over the repetitions for herdlab's legacy member (python) "
    "and for Kafka 0.8.2.2's own ZooKeeper consumer, with the distribution-free interval of the median "
    "(95 % where the repetitions allow, else [min, max] with the coverage it has, shown once per row); "
    "ZooKeeper counts come from the ZooKeeper tap for both. The last column marks figures whose intervals "
    "do not overlap: a difference to explain from the original's code."
)


def _median_cell(s: Mapping[str, Any] | None) -> str:
    """``12 [10, 15]``; ``-`` without values."""
    if not s or s.get("median") is None:
        return DASH
    ci = s.get("ci95") or [None, None]
    return f"{fmt(s['median'])} [{fmt(ci[0])}, {fmt(ci[1])}]"


def legacy_clients_columns(metrics: MetricsDocument) -> list[str]:
    """The legacy fidelity table's header (empty without a ``legacy_clients`` summary)."""
    c = metrics.get("legacy_clients")
    if not c:
        return []
    return ["case", "trigger", "figure", *(list(c.get("clients") or [])), "coverage", "differs"]


def legacy_clients_rows(metrics: MetricsDocument) -> list[list[str]]:
    """One row per case, trigger and figure (:mod:`harness.analysis.legacy_clients`)."""
    c = metrics.get("legacy_clients")
    if not c:
        return []
    clients = list(c.get("clients") or [])
    out = []
    for r in c.get("rows") or []:
        for name, per in (r.get("metrics") or {}).items():
            cov = sorted({f"{v['coverage'] * 100:.1f} %" for v in per.values() if v.get("coverage")})
            out.append(
                [
                    r.get("pairing") or DASH,
                    str(r.get("trigger")),
                    name,
                    *(_median_cell(per.get(cl)) for cl in clients),
                    " / ".join(cov) or DASH,
                    "yes" if name in (r.get("differs") or []) else "",
                ]
            )
    return out
