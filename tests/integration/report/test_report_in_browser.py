"""The HTML report in a real browser (headless Chromium): at 1,280 px the page never scrolls
sideways, even with every folded section open, and its first element (the headline, or the verdict
when the run has no ratio) lies on the first screen.

Each report is rendered from a real analysed run (the regression fixture's documents): the main
job's with its plots (:func:`render_report`, the way ``herdlab report`` writes it), the others without
(their plots are the same kind of image, and drawing them takes seconds each). The browser
loads a copy of the page with a small script that opens every ``<details>``, measures, and writes the
measurements into ``document.title``; ``--dump-dom`` prints the DOM once the page has loaded.
"""

from __future__ import annotations

import json
import os
import re
import shutil
import signal
import subprocess
from pathlib import Path
from typing import Any

import pytest

from harness.report import render_report
from harness.report.html import render_html

REGRESSION = Path(__file__).resolve().parents[2] / "data" / "regression"
CHROMIUM = shutil.which("chromium") or shutil.which("chromium-browser")
WIDTH, HEIGHT = 1280, 900
FIRST_SCREEN_PX = 800

pytestmark = [
    pytest.mark.slow,
    pytest.mark.skipif(
        CHROMIUM is None, reason="no headless Chromium on PATH (Debian: apt-get install chromium)"
    ),
]

MEASURE = """<script>
window.addEventListener("load", () => {
  for (const d of document.querySelectorAll("details")) d.open = true;
  const lead = document.getElementById("headline") || document.getElementById("verdict");
  const root = document.documentElement;
  document.title = JSON.stringify({
    scrollWidth: root.scrollWidth,
    clientWidth: root.clientWidth,
    lead: lead ? lead.id : null,
    leadTop: lead ? lead.getBoundingClientRect().top : null,
  });
});
</script>"""


def _measure(page: Path, profile: Path) -> dict[str, Any]:
    """Load ``page`` in headless Chromium at WIDTH x HEIGHT; the measurements MEASURE wrote."""
    assert CHROMIUM is not None
    probe = page.with_name("measured.html")
    probe.write_text(
        page.read_text(encoding="utf-8").replace("</body>", MEASURE + "</body>"), encoding="utf-8"
    )
    cmd = [
        CHROMIUM,
        "--headless",
        "--disable-gpu",
        "--no-sandbox",
        "--no-first-run",
        f"--user-data-dir={profile}",
        f"--window-size={WIDTH},{HEIGHT}",
        "--virtual-time-budget=10000",
        "--dump-dom",
        probe.as_uri(),
    ]
    # its own session: on a timeout the browser and every helper process it started are stopped
    proc = subprocess.Popen(
        cmd, stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, text=True, start_new_session=True
    )
    try:
        dom, _ = proc.communicate(timeout=120)
    finally:
        if proc.poll() is None:
            os.killpg(proc.pid, signal.SIGKILL)
            proc.wait()
    m = re.search(r"<title>(.*?)</title>", dom, re.S)
    assert m, f"no title in Chromium's DOM (exit {proc.returncode})"
    return json.loads(m.group(1).replace("&quot;", '"').replace("&amp;", "&"))


@pytest.mark.parametrize(
    "run", ["herd-small", "split-brain", "migration", "coordinator-failover", "coordinators"]
)
def test_no_sideways_scroll_at_1280_px_and_the_finding_on_the_first_screen(run: str, tmp_path: Path) -> None:
    doc = json.loads((REGRESSION / run / "expected-metrics.json").read_text(encoding="utf-8"))
    out = tmp_path / "run"
    out.mkdir()
    if run == "herd-small":
        page = render_report(out, doc)["html"]
    else:
        page = out / "index.html"
        page.write_text(render_html(doc, []), encoding="utf-8")
    m = _measure(page, tmp_path / "profile")
    assert m["clientWidth"] > 0
    assert m["scrollWidth"] <= m["clientWidth"], m
    # a run with legacy/coordinator ratios leads with the headline; one without, with the verdict
    assert m["lead"] == ("headline" if doc["verdict"]["ratios"] else "verdict"), m
    assert m["leadTop"] < FIRST_SCREEN_PX, m
