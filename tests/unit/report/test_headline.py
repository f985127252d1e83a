"""The headline sentence: a summary of the verdict's ratio rows, written by hand here for
hand-made documents (only ``verdict.ratios`` matters to it)."""

from __future__ import annotations

from typing import Any

from harness.report.headline import headline
from harness.report.html import render_html
from harness.report.markdown import render_markdown
from tests.support.metrics import metrics


def _side(ratio: float | None, n: tuple[int, int]) -> dict[str, Any]:
    return {"ratio": ratio, "ci95": None, "means": [None, None], "n": list(n), "never": [0, 0], "note": ""}


def _row(
    case: str,
    action: str,
    latency: float | None,
    requests: float | None,
    n: tuple[int, int] = (1, 1),
    den: str = "coordinator",
) -> dict[str, Any]:
    return {
        "case": case,
        "action": action,
        "triggers": [f"#1 {action}"],
        "numerator": "legacy_zk",
        "denominator": den,
        "latency_s": _side(latency, n),
        "coordination_requests": _side(requests, n),
    }


def _doc(*rows: dict[str, Any]) -> Any:
    return {"verdict": {"valid": True, "line": "VALID", "ratios": list(rows), "completeness": []}}


def test_ranges_over_the_rows_and_advice_for_one_repetition() -> None:
    doc = _doc(
        _row("N=4", "join", 0.411778, 4.947368),
        _row("N=4", "crash", 1.14, 7.416667),
        _row("N=8", "leave", 0.304, 8.8),
    )
    assert headline(doc) == (
        "legacy_zk sent 4.95–8.80× the coordination requests of coordinator; latency ratio 0.304–1.14×; "
        "n=1, no CI: use 5 or more repetitions"
    )


def test_one_row_reads_one_value_and_repetitions_point_at_the_intervals() -> None:
    assert headline(_doc(_row("N=4", "crash", 2.0, 4.0, n=(5, 5)))) == (
        "legacy_zk sent 4.00× the coordination requests of coordinator; latency ratio 2.00×; "
        "n=5 per side, 95% CIs in the verdict table"
    )


def test_unequal_repetitions_name_the_fewest() -> None:
    doc = _doc(_row("N=4", "join", 1.5, 120.4, n=(3, 2)), _row("N=8", "join", 1.5, 12.0, n=(3, 3)))
    assert headline(doc) == (
        "legacy_zk sent 12.0–120× the coordination requests of coordinator; latency ratio 1.50×; "
        "n≥2 per side, 95% CIs in the verdict table"
    )


def test_a_row_without_a_latency_ratio_is_counted_not_hidden() -> None:
    # the leave never settled on one side: no latency ratio there, its request ratio still counts
    doc = _doc(_row("N=4", "join", 0.5, 3.0), _row("N=4", "leave", None, 6.0))
    assert headline(doc) == (
        "legacy_zk sent 3.00–6.00× the coordination requests of coordinator; "
        "latency ratio 0.500× (none in 1 of 2); n=1, no CI: use 5 or more repetitions"
    )


def test_no_ratio_of_a_kind_says_so() -> None:
    assert headline(_doc(_row("N=4", "join", None, None, n=(0, 0)))) == (
        "legacy_zk and coordinator: no coordination-request ratio; no latency ratio"
    )


def test_each_pair_has_its_clause() -> None:
    doc = _doc(_row("N=4", "join", 0.9, 5.0), _row("N=4", "join", 1.1, 2.5, den="eager"))
    assert headline(doc) == (
        "legacy_zk sent 5.00× the coordination requests of coordinator; latency ratio 0.900×; "
        "legacy_zk sent 2.50× the coordination requests of eager; latency ratio 1.10×; "
        "n=1, no CI: use 5 or more repetitions"
    )


def test_no_ratio_row_no_headline() -> None:
    assert headline(_doc()) is None


def test_both_reports_open_with_the_same_headline() -> None:
    # tests.support.metrics: members=3 requests 10 / 7 = 1.43x, members=6 37 / 13 = 2.85x; latency
    # 2 N / 3 over N / 3 = 2x in both cases; three repetitions per side
    expected = (
        "legacy_zk sent 1.43–2.85× the coordination requests of coordinator; latency ratio 2.00×; "
        "n=3 per side, 95% CIs in the verdict table"
    )
    m: Any = metrics()
    md = render_markdown(m, [])
    assert md.splitlines()[2] == expected and md.index(expected) < md.index("## Verdict")
    html = render_html(m, [])
    assert f'<p id="headline" class="headline">{expected}</p>' in html
    assert html.index('id="headline"') < html.index("<h2>Verdict</h2>")
