"""The reports' "Coordinator failover" section, rendered from a metrics dict written by hand."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from rich.console import Console

from harness.report import render_report
from harness.report.terminal import verdict_panel
from tests.support.metrics import build, metrics, unit

HEAD = (
    "| implementation | fault | detection | election | loading | rejoin | failover | offsets lost | records lost | "
    "reprocessed | deposed acceptances | double-coordinator | sessions lost |"
)


def failed_over() -> dict[str, Any]:
    """A coordinator unit with a kill (every step: 6.0 + 0.2 + 0.5 + 0.2 = 6.9 s) and a pause whose
    zombie acknowledged one commit and acted beside the new coordinator for 1.5 s, and a legacy_zk unit
    whose ZooKeeper leader was killed (elected in 0.4 s, m1's session lost)."""
    kill = {
        "action": "kill_coordinator",
        "action_id": 1,
        "kind": "coordinator",
        "broker_id": 1,
        "detection_s": 6.0,
        "election_s": 0.2,
        "loading_s": 0.5,
        "rejoin_s": 0.2,
        "failover_s": 6.9,
        "offsets_lost": 0,
        "offsets_lost_partitions": [],
        "records_lost": 0,
        "reprocessed": 3,
        "deposed_acceptances": {"commit": 0, "produce": 0},
        "double_coordinator_s": 0.0,
    }
    pause = {
        **kill,
        "action": "pause_coordinator",
        "action_id": 3,
        "detection_s": "never",
        "election_s": None,
        "loading_s": None,
        "rejoin_s": None,
        "failover_s": "never",
        "offsets_lost": 1,
        "offsets_lost_partitions": ["t/1"],
        "reprocessed": 0,
        "deposed_acceptances": {"commit": 1, "produce": 0},
        "double_coordinator_s": 1.5,
    }
    zk = {
        "action": "kill_zk_leader",
        "action_id": 1,
        "kind": "zookeeper",
        "zk_election_s": 0.4,
        "sessions_lost": ["m1"],
        "records_lost": 0,
        "reprocessed": 0,
        "deposed_acceptances": {"commit": 0, "produce": 0},
        "double_coordinator_s": 0.0,
    }
    fo = {"double_coordinator": {"seconds": 1.5, "episodes": 1}, "fenced": {}}
    units = [
        unit("legacy_zk", "failover", 0, [], failover={"faults": [zk], **fo}),
        unit("coordinator", "failover", 0, [], failover={"faults": [kill, pause], **fo}),
    ]
    return build(units)


def test_summary_has_the_failover_table_after_the_verdict(tmp_path: Path) -> None:
    lines = render_report(tmp_path, failed_over())["markdown"].read_text().splitlines()
    i = lines.index("## Coordinator failover")
    assert lines[i + 4 : i + 9] == [
        HEAD,
        "|" + "---|" * 13,
        "| legacy_zk | failover rep 0: #1 kill_zk_leader | — | 0.400 s | — | — | — | — | 0 | 0 | 0 | 0.000 s | 1 (m1) |",
        "| coordinator | failover rep 0: #1 kill_coordinator (broker 1) | 6.000 s | 0.200 s | 0.500 s | 0.200 s | "
        "6.900 s | 0 | 0 | 3 | 0 | 0.000 s | — |",
        "| coordinator | failover rep 0: #3 pause_coordinator (broker 1) | never | — | — | — | never | 1 (t/1) | 0 | "
        "0 | 1 commit, 0 produce | 1.500 s | — |",
    ]
    assert lines.index("## Verdict") < i < lines.index("## Results per trigger, side by side")


def test_html_and_terminal_show_the_table(tmp_path: Path) -> None:
    html = render_report(tmp_path, failed_over())["html"].read_text()
    assert "<h2>Coordinator failover</h2>" in html
    assert "<td>1 commit, 0 produce</td>" in html
    c = Console(width=250, record=True, color_system=None)
    c.print(verdict_panel(failed_over()))
    text = c.export_text()
    assert "coordinator failover" in text
    assert "1 commit, 0 produce" in text


def test_no_section_without_failover_faults(tmp_path: Path) -> None:
    paths = render_report(tmp_path, metrics())
    assert "Coordinator failover" not in paths["markdown"].read_text()
    assert "Coordinator failover" not in paths["html"].read_text()
    c = Console(width=200, record=True, color_system=None)
    c.print(verdict_panel(metrics()))
    assert "coordinator failover" not in c.export_text()
