"""What ``herdlab run`` and ``herdlab report`` print (rich): the verdict first, then the summary table."""

from __future__ import annotations

from typing import Any

from rich.console import Console, ConsoleOptions, Group, JustifyMethod, RenderResult
from rich.table import Table
from rich.text import Text

from harness.analysis.metrics_model import MetricsDocument
from harness.report.case_labels import CaseLabels, short_labels
from harness.report.headline import headline
from harness.report.simulation import banner
from harness.report.tables import (
    COMPLETENESS_COLUMNS,
    DASH,
    EACH_PAIR,
    FAILOVER_COLUMNS,
    SEVERAL_AGAINST_LEGACY,
    VERDICT_COLUMNS,
    cases,
    completeness_rows,
    coordinators_columns,
    coordinators_rows,
    failover_rows,
    fmt_stat,
    implementations,
    migration_line,
    pairs_beyond_legacy,
    ratio_table,
    single,
    startup_rows,
    verdict_intro,
    verdict_of,
    verdict_rows,
)

#: The ratio table's columns left out of the narrow terminal (``--wide`` shows them): the means the
#: ratios are made of.
VERDICT_WIDE_ONLY = ("latency means", "request means")


def verdict_panel(metrics: MetricsDocument, wide: bool = False) -> Group:
    """The verdict: the headline sentence (as the HTML and Markdown reports lead with), the one-line run
    verdict, the ratio table, the completeness table and, when some
    unit switched member kinds, the migration verdict with the expected one, and when some unit had a
    coordinator or ZooKeeper-leader fault, the coordinator failover table, and when the run compared
    brokers, the coordinators table. One start-up line per unit follows the completeness table. The
    ratio table shows short case labels (:func:`case_labels`) and, unless ``wide``, leaves out the
    means (:data:`VERDICT_WIDE_ONLY`); with ``wide`` no table folds a word to fit the width
    (:class:`FittedTable`'s ``spill``)."""
    v = verdict_of(metrics)
    style = {True: "bold green", "unknown": "bold yellow"}.get(v["valid"], "bold red")
    parts: list[Any] = [Text(f"verdict: {v['line']}", style=style)]
    if line := headline(metrics):
        parts.insert(0, Text(line, style="bold"))
    sim = banner(metrics)
    if sim:
        parts.insert(0, Text(sim, style="bold magenta"))
    ratios = verdict_rows(metrics)
    if ratios:
        short = case_labels(metrics)
        ratios = [[short(r[0]), *r[1:]] for r in ratios]
        columns = [c for c in VERDICT_COLUMNS if wide or c not in VERDICT_WIDE_ONLY]
        narrow = [[r[VERDICT_COLUMNS.index(c)] for c in columns] for r in ratios]
        if wide:  # every column, the pair's too
            pairs = {r[VERDICT_COLUMNS.index("ratio")] for r in ratios}
            title, head, rows = (
                EACH_PAIR if pairs_beyond_legacy(pairs) else SEVERAL_AGAINST_LEGACY,
                columns,
                narrow,
            )
        else:
            title, head, rows = ratio_table(narrow, columns)
        t = FittedTable(title=title, title_justify="left", spill=wide)
        for name in head:
            _add_column(t, name)
        for r in rows:
            t.add_row(*r)
        parts += [t, Text(verdict_intro(metrics), style="dim")]
    c = FittedTable(title="completeness and split brain per implementation", title_justify="left", spill=wide)
    complete = completeness_rows(metrics)
    for name in COMPLETENESS_COLUMNS:
        _add_column(c, name, "left" if name == "implementation" else "right")
    for r in complete:
        bad = r[3] != "0" or r[4] != "0"
        c.add_row(*r, style="red" if bad else None)
    parts.append(c)
    parts += [Text(f"{r['unit']}: {r['text']}", style="dim") for r in startup_rows(metrics)]
    line = migration_line(metrics)
    if line is not None:
        ok = bool((metrics.get("migration") or {}).get("as_expected"))
        parts.append(Text(line, style="bold green" if ok else "bold red"))
    rows = [[r[0], _short_fault(r[1], case_labels(metrics)), *r[2:]] for r in failover_rows(metrics)]
    if rows:
        f = FittedTable(title="coordinator failover", title_justify="left", spill=wide)
        for name in FAILOVER_COLUMNS:
            _add_column(f, name, "left" if name in ("implementation", "fault") else "right")
        for r in rows:
            lost, deposed, double = r[7], r[10], r[11]
            bad = (
                lost not in ("0", "—") or deposed != "0" or double not in ("0.000 s", "—") or r[6] == "never"
            )
            f.add_row(*r, style="red" if bad else None)
        parts.append(f)
    head = coordinators_columns(metrics)
    if head:
        against = ", ".join(str(b) for b in (metrics.get("coordinators") or {}).get("reference") or [])
        k = FittedTable(
            title=f"coordinators: herdlab's broker against {against}", title_justify="left", spill=wide
        )
        krows = coordinators_rows(metrics)
        for name in head:
            _add_column(k, name, "left" if name in ("trigger", "client", "assignor") else "right")
        for r in krows:
            k.add_row(*r)
        parts.append(k)
    return Group(*parts)


#: The summary table's columns: (header, right-aligned, in the narrow table). The narrow table keeps
#: the keys (case, trigger, implementation), the rebalance latency, the coordination requests and
#: the completeness and split-brain counts; ``--wide`` shows every column.
SUMMARY_COLUMNS: tuple[tuple[str, bool, bool], ...] = (
    ("case", False, True),
    ("trigger", False, True),
    ("impl", False, True),
    ("n", True, True),
    ("latency p50", True, True),
    ("latency max", True, True),
    ("detect", True, False),
    ("resumed", True, False),
    ("coord req", True, True),
    ("watches", True, False),
    ("zk req", True, False),
    ("zk pkts", True, False),
    ("broker coord", True, False),
    ("conflicts", True, False),
    ("failed", True, False),
    ("overlaps", True, True),
    ("dup", True, True),
    ("lost", True, True),
    ("not drained", True, True),
)

#: The key columns (the case, the trigger, the implementation): the last to fold in a very narrow table.
KEY_COLUMNS = (
    "case",
    "trigger",
    "trigger kind",
    "ratio",
    "impl",
    "implementation",
    "fault",
    "client",
    "assignor",
)

#: Cells that say nothing: a column of only these is left out of the table.
EMPTY_CELLS = ("", "-", DASH)


def case_labels(metrics: MetricsDocument) -> CaseLabels:
    """The run's short case labels (``N=4`` for ``group.members=4``; :mod:`.case_labels`)."""
    return short_labels(metrics.get("cases") or [])


def legend(metrics: MetricsDocument) -> Text | None:
    """The line under the tables that gives the short case labels' full names; None when none."""
    lines = case_labels(metrics).legend
    return Text("\n".join(lines), style="dim") if lines else None


def summary_rows(metrics: MetricsDocument) -> list[list[str]]:
    """The summary table's rows, one cell per :data:`SUMMARY_COLUMNS` entry (rich markup): one row per
    case, trigger and implementation (the median over repetitions, or the one value of a single
    repetition; ``never`` when the rank rule reaches a repetition that did not settle), then per case
    and implementation a ``whole unit`` row with loss, undrained tails, duplicates and overlap
    episodes (worst repetition). The case is its short label, on its first row only."""
    aggs = {(a["impl"], a["case"], a["trigger"], a["metric"]): a for a in metrics.get("aggregates", [])}
    keys: dict[str, list[str]] = {}
    for a in metrics.get("aggregates", []):
        if a["trigger"] != "unit":
            keys.setdefault(a["case"], [])
            if a["trigger"] not in keys[a["case"]]:
                keys[a["case"]].append(a["trigger"])

    def stat(impl: str, case: str, key: str, m: str, which: str = "p50") -> str:
        a = aggs.get((impl, case, key, m))
        if a is None:
            return "-"
        if single(a) and which == "max":
            return ""  # one value: shown once, under p50
        s = fmt_stat(a, "value" if single(a) else which)
        return f"[red]{s}[/red]" if s == "never" else s

    def worst(impl: str, case: str, m: str) -> str:
        a = aggs.get((impl, case, "unit", m))
        if a is None:
            return "-"
        s = fmt_stat(a, "value" if single(a) else "max")
        bad = m in ("lost", "not_drained") and s not in ("0", "-", "—")
        return f"[bold red]{s}[/bold red]" if bad else s

    short = case_labels(metrics)
    rows: list[list[str]] = []
    impls = implementations(metrics)
    for case in cases(metrics):
        first = True
        for key in keys.get(case, []):
            for impl in impls:
                a = aggs.get((impl, case, key, "latency_s"))
                if a is None:
                    continue
                rows.append(
                    [
                        short(case) if first else "",
                        f"{key} {','.join(a.get('targets') or [])}".strip(),
                        impl,
                        str(a["n"]),
                        stat(impl, case, key, "latency_s"),
                        stat(impl, case, key, "latency_s", "max"),
                        stat(impl, case, key, "detection_s"),
                        stat(impl, case, key, "resumed_s"),
                        stat(impl, case, key, "coordination_requests"),
                        stat(impl, case, key, "watches"),
                        stat(impl, case, key, "zk_requests"),
                        stat(impl, case, key, "zk_packets"),
                        stat(impl, case, key, "broker_group_requests"),
                        stat(impl, case, key, "conflicts"),
                        stat(impl, case, key, "failed_attempts"),
                        stat(impl, case, key, "overlap_episodes"),
                        stat(impl, case, key, "duplicates"),
                        "",
                        "",
                    ]
                )
                first = False
        for impl in impls:
            lost = aggs.get((impl, case, "unit", "lost"))
            if lost is None:
                continue
            rows.append(
                [
                    short(case) if first else "",
                    "whole unit (worst rep)",
                    impl,
                    str(lost["n"]),
                    *[""] * 11,
                    worst(impl, case, "overlap_episodes"),
                    worst(impl, case, "duplicates"),
                    worst(impl, case, "lost"),
                    worst(impl, case, "not_drained"),
                ]
            )
            first = False
    return rows


def terminal_report(metrics: MetricsDocument, wide: bool = False) -> Group:
    """What ``run`` and ``report`` print of a run: the verdict (:func:`verdict_panel`), the summary
    table (:func:`summary_table`) and under it the legend of the short case labels (:func:`legend`)."""
    parts: list[Any] = [verdict_panel(metrics, wide=wide), summary_table(metrics, wide=wide)]
    line = legend(metrics)
    if line is not None:
        parts.append(line)
    return Group(*parts)


def summary_table(metrics: MetricsDocument, wide: bool = False) -> FittedTable:
    """The summary table (rows: :func:`summary_rows`): the narrow columns of :data:`SUMMARY_COLUMNS`,
    or with ``wide`` every one; a column whose every cell is empty (:data:`EMPTY_CELLS`) is left out.
    Laid out by :class:`FittedTable`: no column is cut with an ellipsis, and with ``wide`` no word is
    broken to fit the width (the table may be wider)."""
    run = metrics.get("run") or {}
    rows = summary_rows(metrics)
    shown = [
        i
        for i, (_, _, narrow) in enumerate(SUMMARY_COLUMNS)
        if (wide or narrow) and any(r[i] not in EMPTY_CELLS for r in rows)
    ]
    t = FittedTable(
        title=f"herdlab {run.get('scenario') or ''} {run.get('run_id') or ''}: medians over repetitions "
        "(one repetition: its value)",
        spill=wide,
    )
    for i in shown:
        name, right, _ = SUMMARY_COLUMNS[i]
        _add_column(t, name, "right" if right else "left")
    for r in rows:
        t.add_row(*(r[i] for i in shown))
    return t


def _short_fault(fault: str, short: CaseLabels) -> str:
    """A failover row's fault (``<case> rep <n>: ...``) with the case's short label."""
    for label, s in short.short.items():
        if fault.startswith(f"{label} rep "):
            return s + fault[len(label) :]
    return fault


def _add_column(t: Table, name: str, justify: JustifyMethod = "left") -> None:
    """A column that never shows an ellipsis: a cell too long for its column folds over lines (the
    key columns' widths are chosen when the table is rendered: :class:`FittedTable`)."""
    t.add_column(name, justify=justify, overflow="fold")


def _plain(cell: object) -> str:
    return Text.from_markup(cell).plain if isinstance(cell, str) else ""


class FittedTable(Table):
    """A rich Table laid out so that no cell is cut and no word broken while the width allows: when it
    is rendered, every column gets a fixed width: its longest cell or header when the table fits the
    width it is given, else its longest cell (the header wrapping between its words) when that fits,
    else the widest column is narrowed first, one character at a time, but not below its longest
    word (so cells wrap between words). When every column is down to its longest word and the table
    is still too wide: with ``spill`` (the ``--wide`` tables) it is laid out with whole cells, wider
    than the width given (printed uncropped, a line runs past the terminal's edge); without, columns narrow
    further, the key columns (:data:`KEY_COLUMNS`) last, and their cells fold over lines. No column
    shows an ellipsis. Laid out for the default box: one border between and around the columns, one
    space of padding on either side."""

    def __init__(self, *args: Any, spill: bool = False, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self.spill = spill

    def __rich_console__(self, console: Console, options: ConsoleOptions) -> RenderResult:
        width = self.fit(options.max_width)
        if width > options.max_width:
            options = options.update_width(width)
        yield from super().__rich_console__(console, options)

    def fit(self, max_width: int) -> int:
        """Set every column's width for a table at most ``max_width`` wide (see the class); the
        table's width (above ``max_width`` only with ``spill``)."""
        lo: list[int] = []
        widths: list[int] = []
        whole: list[int] = []
        for c in self.columns:
            texts = [_plain(c.header), *(_plain(x) for x in c.cells)]
            lo.append(max((len(w) for t in texts for w in t.split()), default=1))
            lines = [len(line) for t in texts[1:] for line in t.splitlines()]
            widths.append(max([lo[-1], *lines]))
            whole.append(max([widths[-1], len(texts[0])]))
        key = [c.header in KEY_COLUMNS for c in self.columns]
        borders = 3 * len(self.columns) + 1
        room = max_width - borders
        if sum(whole) <= room:
            widths = whole
        cells = list(widths)
        while sum(widths) > room:
            narrowable = [i for i, w in enumerate(widths) if w > lo[i]]
            if not narrowable and not self.spill:
                narrowable = [i for i, w in enumerate(widths) if w > 1 and not key[i]] or [
                    i for i, w in enumerate(widths) if w > 1
                ]
            if not narrowable:
                break
            widths[max(narrowable, key=lambda i: widths[i])] -= 1
        if sum(widths) > room:  # spilling: no word broken for nothing, the cells laid out whole
            widths = cells
        for c, w in zip(self.columns, widths, strict=True):
            c.width = w
        return sum(widths) + borders
