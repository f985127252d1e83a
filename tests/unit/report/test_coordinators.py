"""The Coordinators summary (herdlab / tansu ratios per trigger, client and assignor), its table in
Markdown and HTML, and the (implementation, client, broker) column labels. Pure: hand-made metrics."""

from __future__ import annotations

from typing import Any

from harness.analysis.coordinators import ratio, summary
from harness.report.html import coordinators_block, render_html
from harness.report.markdown import coordinators_section, render_markdown
from harness.report.tables import column_label, coordinators_rows, side_by_side, unit_rows, varying
from tests.support.metrics import build, trigger, unit

#: (broker, assignor) -> ((join latency, join requests), (crash latency or None = never, crash requests))
FIGURES: dict[tuple[str, str], tuple[tuple[float, int], tuple[float | None, int]]] = {
    ("herdlab", "range"): ((0.5, 12), (6.2, 8)),
    ("tansu", "range"): ((5.0, 20), (6.4, 10)),
    ("herdlab", "cooperative-sticky"): ((1.0, 24), (None, 16)),
    ("tansu", "cooperative-sticky"): ((5.5, 30), (6.0, 0)),
}


def _run() -> dict[str, Any]:
    units = []
    for (broker, assignor), ((jl, jr), (cl, cr)) in FIGURES.items():
        crash = (
            trigger(1, "crash", latency=cl, requests=cr, impl="coordinator")
            if cl is not None
            else trigger(1, "crash", outcome="never", latency=None, requests=cr, impl="coordinator")
        )
        units.append(
            unit(
                "coordinator",
                f"{broker} {assignor}",
                0,
                [trigger(0, "join", latency=jl, requests=jr, impl="coordinator"), crash],
                client="kafka-python",
                broker=broker,
                assignor=assignor,
            )
        )
    m = build(units)
    m["coordinators"] = summary(m["units"], m["aggregates"])
    return m


def test_ratios_are_herdlab_over_tansu_per_trigger_client_and_assignor() -> None:
    c = _run()["coordinators"]
    assert c["brokers"] == ["herdlab", "tansu"]
    rows = {(r["trigger"], r["assignor"]): r for r in c["rows"]}
    assert [(r["trigger"], r["client"], r["assignor"]) for r in c["rows"]] == [
        ("#1 join", "kafka-python", "cooperative-sticky"),
        ("#1 join", "kafka-python", "range"),
        ("#2 crash", "kafka-python", "cooperative-sticky"),
        ("#2 crash", "kafka-python", "range"),
    ]
    j = rows[("#1 join", "range")]
    assert j["action"] == "join"
    assert j["latency_s"] == {"herdlab": 0.5, "tansu": 5.0} and j["coordination_requests"] == {
        "herdlab": 12,
        "tansu": 20,
    }
    assert (j["vs"]["tansu"]["latency_ratio"], j["vs"]["tansu"]["requests_ratio"]) == (
        0.1,
        0.6,
    )  # 0.5 / 5.0, 12 / 20
    crash = rows[("#2 crash", "range")]["vs"]["tansu"]
    # 6.2 / 6.4 = 0.96875 (the ratio of means, to 6 digits); 8 / 10
    assert (crash["latency_ratio"], crash["requests_ratio"]) == (
        0.96875,
        0.8,
    )
    # 1.0 / 5.5 = 0.181818...; 24 / 30
    coop_join = rows[("#1 join", "cooperative-sticky")]
    assert (coop_join["vs"]["tansu"]["latency_ratio"], coop_join["vs"]["tansu"]["requests_ratio"]) == (
        0.181818,
        0.8,
    )
    # one repetition a side: a ratio, no interval
    assert j["vs"]["tansu"]["latency_ci95"] is None and j["vs"]["tansu"]["latency_outside"] is None
    # ours never settled: no finite latency, no ratio; tansu's 0 requests: no ratio either
    coop_crash = rows[("#2 crash", "cooperative-sticky")]
    assert coop_crash["latency_s"]["herdlab"] == "never"
    assert (coop_crash["vs"]["tansu"]["latency_ratio"], coop_crash["vs"]["tansu"]["requests_ratio"]) == (
        None,
        None,
    )


def test_ratio_needs_two_finite_numbers_and_a_nonzero_divisor() -> None:
    assert ratio(3, 4) == 0.75
    assert ratio("never", 4) is None and ratio(3, None) is None and ratio(3, 0) is None
    assert ratio(float("inf"), 2.0) is None


def test_no_summary_with_one_broker() -> None:
    m = _run()
    one = [u for u in m["units"] if u["broker"] == "herdlab"]
    assert summary(one, m["aggregates"]) is None


def test_the_table_in_markdown_and_html_shows_medians_and_ratios() -> None:
    m = _run()
    rows = coordinators_rows(m)
    assert rows[1] == ["#1 join", "kafka-python", "range", "0.500 s", "5.000 s", "0.10", "12", "20", "0.60"]
    assert rows[2] == [
        "#2 crash",
        "kafka-python",
        "cooperative-sticky",
        "never",
        "6.000 s",
        "-",
        "16",
        "0",
        "-",
    ]
    md = "\n".join(coordinators_section(m))
    assert md.startswith("## Coordinators")
    assert "| #1 join | kafka-python | range | 0.500 s | 5.000 s | 0.10 | 12 | 20 | 0.60 |" in md
    html = coordinators_block(m)
    assert "<h2>Coordinators</h2>" in html and '<th class="l">latency herdlab/tansu</th>' in html
    # in the whole reports: after the alerts, before the side-by-side results
    full_md, full_html = render_markdown(m, []), render_html(m, [])
    assert full_md.index("## Coordinators") < full_md.index("## Results per trigger")
    assert full_html.index("<h2>Coordinators</h2>") < full_html.index("Results per trigger")
    # without the summary (one broker) neither format has the section
    del m["coordinators"]
    assert coordinators_section(m) == [] and coordinators_block(m) == ""


def test_columns_are_labelled_by_client_broker_and_assignor_only_when_they_vary() -> None:
    m = _run()
    # two brokers (one client) and two assignors: all three named
    assert varying(m) == ("client", "broker", "assignor")
    (t,) = [t for t in side_by_side(m) if t.case == "tansu range" and t.trigger == "#1 join"]
    assert t.label("coordinator") == "coordinator · kafka-python · tansu · range"
    assert unit_rows(m)[0]["unit"] == ("coordinator · kafka-python · herdlab · range herdlab range r0")
    # one broker, one assignor, two clients: client and broker; a legacy_zk unit names no client
    assert column_label({"impl": "legacy_zk", "client": "", "broker": "herdlab"}, ("client", "broker")) == (
        "legacy_zk · herdlab"
    )
    two_clients = build(
        [
            unit("coordinator", f"client {c}", 0, [trigger(impl="coordinator")], client=c, broker="herdlab")
            for c in ("kafka-python", "librdkafka")
        ]
    )
    assert varying(two_clients) == ("client", "broker")
    # one client and one broker (every run of an older herdlab): today's labels
    plain = build([unit("coordinator", "members=3", 0, [trigger(impl="coordinator")], client="kafka-python")])
    assert varying(plain) == ()
    assert side_by_side(plain)[0].label("coordinator") == "coordinator"
    assert unit_rows(plain)[0]["unit"] == "coordinator members=3 r0"


def test_the_terminal_verdict_ends_with_the_coordinators_table() -> None:
    from rich.console import Console

    from harness.report.terminal import verdict_panel

    m = _run()
    console = Console(width=200, record=True)
    console.print(verdict_panel(m))
    text = console.export_text()
    assert "coordinators: herdlab's broker against tansu" in text
    line = next(x for x in text.splitlines() if "#1 join" in x and "range" in x)
    cells = [c.strip() for c in line.strip().strip("│").split("│")]
    assert cells == ["#1 join", "kafka-python", "range", "0.500 s", "5.000 s", "0.10", "12", "20", "0.60"]
    del m["coordinators"]
    console = Console(width=200, record=True)
    console.print(verdict_panel(m))
    assert "coordinators:" not in console.export_text()


def test_legacy_zk_units_of_herdlab_s_member_and_of_the_original_are_told_apart() -> None:
    broker = "apache-kafka 3.9.2"
    m = build(
        [
            unit("legacy_zk", f"client {c or 'python'}", 0, [trigger()], client=c, broker=broker)
            for c in ("", "kafka-0.8.2.2")
        ]
    )
    # the legacy clients vary (herdlab's own member's client is ""): both columns name theirs
    assert varying(m) == ("client", "broker", "legacy_client")
    labels = {u["case"]: column_label(u, varying(m)) for u in m["units"]}
    assert labels == {
        "client python": "legacy_zk · python · apache-kafka 3.9.2",
        "client kafka-0.8.2.2": "legacy_zk · kafka-0.8.2.2 · apache-kafka 3.9.2",
    }
    # one legacy client: nothing varies, no label
    assert (
        varying(build([unit("legacy_zk", "one", 0, [trigger()], client="kafka-0.8.2.2", broker=broker)]))
        == ()
    )
