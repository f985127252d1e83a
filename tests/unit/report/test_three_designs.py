"""Three designs in one report: a consumer column beside legacy_zk's and coordinator's, and the ratios of
each pair (legacy_zk / coordinator, legacy_zk / consumer, coordinator / consumer), from hand-built metrics
(one repetition per design, one join). Expected values are worked out in the comments."""

from __future__ import annotations

from typing import Any

from harness.report.headline import headline
from harness.report.markdown import render_markdown
from harness.report.tables import (
    EACH_PAIR,
    VERDICT_HEADERS,
    ratio_table,
    side_by_side,
    verdict_intro,
    verdict_rows,
)
from tests.support.metrics import build, trigger, unit

#: per design: the join's latency (s) and coordination requests
FIGURES = {"legacy_zk": (3.0, 30), "coordinator": (1.5, 12), "consumer": (0.5, 4)}


def _three() -> Any:
    return build(
        [
            unit(impl, "c", 0, [trigger(action="join", latency=lat, requests=req, impl=impl)])
            for impl, (lat, req) in FIGURES.items()
        ]
    )


def test_the_verdict_compares_each_pair_older_over_newer() -> None:
    m = _three()
    got = [
        (
            r["numerator"],
            r["denominator"],
            r["latency_s"]["ratio"],
            r["coordination_requests"]["ratio"],
        )
        for r in m["verdict"]["ratios"]
    ]
    # latency 3.0 / 1.5 = 2, 3.0 / 0.5 = 6, 1.5 / 0.5 = 3; requests 30 / 12 = 2.5, 30 / 4 = 7.5, 12 / 4 = 3
    assert got == [
        ("legacy_zk", "coordinator", 2.0, 2.5),
        ("legacy_zk", "consumer", 6.0, 7.5),
        ("coordinator", "consumer", 3.0, 3.0),
    ]
    assert [c["impl"] for c in m["verdict"]["completeness"]] == ["legacy_zk", "coordinator", "consumer"]


def test_without_legacy_zk_the_two_newer_designs_still_pair() -> None:
    m: Any = build(
        [
            unit(impl, "c", 0, [trigger(action="join", latency=lat, requests=req, impl=impl)])
            for impl, (lat, req) in FIGURES.items()
            if impl != "legacy_zk"
        ]
    )
    (r,) = m["verdict"]["ratios"]
    assert (r["numerator"], r["denominator"], r["latency_s"]["ratio"]) == ("coordinator", "consumer", 3.0)


def test_the_side_by_side_tables_have_a_consumer_column() -> None:
    (join,) = [t for t in side_by_side(_three()) if t.trigger != "unit"]
    assert join.impls == ["legacy_zk", "coordinator", "consumer"]
    latency = dict(join.rows)["latency_s"]
    assert {impl: latency[impl]["value"] for impl in join.impls} == {
        "legacy_zk": 3.0,
        "coordinator": 1.5,
        "consumer": 0.5,
    }


def test_the_ratio_table_names_each_pair_and_reads_older_over_newer() -> None:
    m = _three()
    title, head, rows = ratio_table(verdict_rows(m), VERDICT_HEADERS)
    assert title == EACH_PAIR == "each pair of designs (older / newer), per trigger kind"
    assert head[2:5] == ["compared (older / newer)", "latency ratio", "mean latency (older / newer)"]
    assert [(r[2], r[3], r[5]) for r in rows] == [
        ("legacy_zk / coordinator", "2.00×", "2.50×"),
        ("legacy_zk / consumer", "6.00×", "7.50×"),
        ("coordinator / consumer", "3.00×", "3.00×"),
    ]
    assert rows[2][4] == "1.500 s / 0.500 s"
    assert verdict_intro(m).startswith("A ratio above 1: the older design of the pair (legacy_zk, then")


def test_a_two_design_report_reads_as_before() -> None:
    m: Any = build(
        [
            unit(impl, "c", 0, [trigger(action="join", latency=lat, requests=req, impl=impl)])
            for impl, (lat, req) in FIGURES.items()
            if impl != "consumer"
        ]
    )
    title, head, rows = ratio_table(verdict_rows(m), VERDICT_HEADERS)
    # one pair: the title names it and its column goes; the headers keep legacy_zk / other
    assert title == "legacy_zk / coordinator, per trigger kind"
    assert "mean latency (legacy_zk / other)" in head and "compared (legacy_zk / other)" not in head
    assert verdict_intro(m).startswith("A ratio above 1: legacy_zk took longer or sent more. ")


def test_the_headline_and_the_markdown_report_name_every_pair() -> None:
    m = _three()
    line = headline(m) or ""
    assert line.startswith(
        "legacy_zk sent 2.50× the coordination requests of coordinator; latency ratio 2.00×; "
        "legacy_zk sent 7.50× the coordination requests of consumer; latency ratio 6.00×; "
        "coordinator sent 3.00× the coordination requests of consumer; latency ratio 3.00×"
    )
    md = render_markdown(m, [])
    assert "each pair of designs (older / newer), per trigger kind" in md
    assert "| coordinator / consumer |" in md
