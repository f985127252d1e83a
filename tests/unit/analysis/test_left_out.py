"""Matrix cases left out because their client cannot run them: the manifest's list becomes the document's
``left_out`` section and one alert line each, which every report shows (an alert is not a reason of the verdict)."""

from __future__ import annotations

from pathlib import Path

from harness.analysis.document import new_document
from harness.analysis.load import RunInputs

LEFT = {
    "label": "group.coordinator.client=aiokafka,group.assignor=cooperative-sticky",
    "params": {"group.coordinator.client": "aiokafka", "group.assignor": "cooperative-sticky"},
    "reason": "group.assignor 'cooperative-sticky' is not an assignor of client 'aiokafka' (it has range, roundrobin, sticky)",
}


def _document(manifest: dict[str, object]):  # noqa: ANN202 - a DocumentDraft
    inputs = RunInputs(
        run_dir=Path("/nonexistent"), history=Path("/nonexistent/h.parquet"), rows=0, manifest=manifest
    )
    return new_document(inputs, "local[1]", "4.0")


def test_each_left_out_case_is_a_section_entry_and_an_alert_naming_it_and_why() -> None:
    doc = _document({"scenario": {"name": "coordinators"}, "left_out": [LEFT]})
    assert doc.get("left_out") == [LEFT]
    assert doc["alerts"] == [
        "LEFT OUT case group.coordinator.client=aiokafka,group.assignor=cooperative-sticky: "
        "group.assignor 'cooperative-sticky' is not an assignor of client 'aiokafka' (it has range, roundrobin, sticky)"
    ]


def test_a_run_without_left_out_cases_has_no_such_alert() -> None:
    doc = _document({"scenario": {"name": "coordinators"}})
    assert doc["alerts"] == []
    assert "left_out" not in doc  # only a run that left cases out has the section
