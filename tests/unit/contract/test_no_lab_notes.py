"""No lab notes in code: the sources of harness, coordinator and legacy_zk carry no dates, no clock
times in UTC and no issue numbers (history goes in commit messages). The test names every offending
``file:line``."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[3]
PACKAGES = ("harness", "coordinator", "legacy_zk")
#: A day of a month ("28 Nov"), a clock time in UTC ("14:05 UTC"), an issue number ("issue 14").
LAB_NOTE = re.compile(
    r"\b[0-9]{1,2} (Jan|Feb|Mar|Apr|May|Jun|Jul|Aug|Sep|Oct|Nov|Dec)\b"
    r"|[0-9]{2}:[0-9]{2} UTC"
    r"|\b[Ii]ssues? #?[0-9]+"
)


def offending_lines(text: str) -> list[tuple[int, str]]:
    """(1-based line number, line) of every line of ``text`` that carries a lab note."""
    return [(n, line) for n, line in enumerate(text.splitlines(), 1) if LAB_NOTE.search(line)]


@pytest.mark.parametrize(
    "line",
    [
        "# fitted on 28 Nov",
        "seen at 14:05 UTC",
        '"""Added for issue 14."""',
        "see Issue #7",
        "issues 12 and 14",
    ],
)
def test_the_pattern_finds_each_kind_of_lab_note(line: str) -> None:
    assert offending_lines(line) == [(1, line)]


@pytest.mark.parametrize(
    "line",
    [
        "timeout_s = 28  # Nov is not a date here",
        'datetime.now(UTC).isoformat()  # "UTC" alone is a time zone',
        "the issue of a request",
        "KIP-848's consumer protocol",
    ],
)
def test_the_pattern_leaves_ordinary_code_alone(line: str) -> None:
    assert offending_lines(line) == []


def test_no_lab_notes_in_the_sources() -> None:
    found = [
        f"{path.relative_to(ROOT)}:{n}: {line.strip()}"
        for package in PACKAGES
        for path in sorted((ROOT / package).rglob("*.py"))
        for n, line in offending_lines(path.read_text(encoding="utf-8"))
    ]
    assert found == [], (
        "lab notes in code (state the contract or reason; history goes in commits):\n" + "\n".join(found)
    )


def test_no_lab_notes_in_the_readme_and_the_guide() -> None:
    """README.md and the hand-written docs pages hold no dates, clock times or issue numbers either:
    measurements and their hours belong in docs/validation/, each with the command that produced it."""
    pages = [ROOT / "README.md", *sorted((ROOT / "docs").glob("*.md"))]
    found = [
        f"{path.relative_to(ROOT)}:{n}: {line.strip()}"
        for path in pages
        for n, line in offending_lines(path.read_text(encoding="utf-8"))
    ]
    hint = "lab notes in the README or the docs (move them to docs/validation/):\n"
    assert found == [], hint + "\n".join(found)


def test_the_readme_is_a_front_door() -> None:
    """The README starts with the two commands (the main job, then the tests), stays short and points
    at nothing outside the repository."""
    text = (ROOT / "README.md").read_text(encoding="utf-8")
    lines = text.splitlines()
    first_block = text.split("```")[1].splitlines()
    assert first_block[1].startswith("./herdlab demo ") and first_block[2].startswith("./herdlab test ")
    assert len(lines) <= 200
    assert "../" not in text
