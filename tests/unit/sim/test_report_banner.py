"""A simulated run's report says so at the top (Markdown, HTML, terminal); a real run's does not."""

from __future__ import annotations

import json
import re
from pathlib import Path
from typing import Any

from rich.console import Console

from harness.report.html import render_html
from harness.report.markdown import render_markdown
from harness.report.simulation import annotate, banner
from harness.report.terminal import verdict_panel
from tests.support.sim_units import machine_model


def metrics() -> dict[str, Any]:
    return {
        "format": "herdlab-metrics/2",
        "run": {"scenario": "herd", "run_id": "r1"},
        "units": [],
        "aggregates": [],
    }


def test_annotate_marks_a_simulated_run_with_its_model_and_leaves_a_real_one(tmp_path: Path) -> None:
    model = machine_model()
    (tmp_path / "manifest.json").write_text(
        json.dumps({"simulated": True, "delay_model": model.as_dict(), "delay_model_text": model.describe()})
    )
    m = metrics()
    annotate(tmp_path, m)
    assert m["run"]["simulation"]["model"] == model.describe()
    text = banner(m)
    assert text is not None and text.startswith("SIMULATION") and model.describe() in text

    # the simulator's options are in the banner, the fluid server's threshold in words
    (tmp_path / "manifest.json").write_text(
        json.dumps(
            {
                "simulated": True,
                "delay_model_text": "m",
                "sim_options": {"fluid_from": 2000, "wait_settled": 1},
            }
        )
    )
    m = metrics()
    annotate(tmp_path, m)
    text = banner(m)
    assert text is not None and "simulator options: fluid_from=2000, wait_settled=1" in text
    assert "from 2000 legacy members ZooKeeper is a fluid server" in text

    real = tmp_path / "real"
    real.mkdir()
    (real / "manifest.json").write_text(json.dumps({"backend": "local"}))
    r = metrics()
    annotate(real, r)
    assert "simulation" not in r["run"] and banner(r) is None


def test_every_form_of_the_report_starts_with_the_banner(tmp_path: Path) -> None:
    m = metrics()
    m["run"]["simulation"] = {"simulated": True, "model": "virtual time; delays in seconds: x=1"}
    md = render_markdown(m, [])
    assert md.splitlines()[2].startswith("> **SIMULATION") and "x=1" in md.splitlines()[2]
    html = render_html(m, [])
    assert re.search(r'</h1>\s*<div class="alert lost"><b>SIMULATION', html)  # right under the title
    console = Console(record=True, width=300)
    console.print(verdict_panel(m))
    assert console.export_text().lstrip().startswith("SIMULATION")
    plain = metrics()
    assert "SIMULATION" not in render_markdown(plain, [])
