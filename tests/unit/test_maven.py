"""harness.kernel.maven: the throw-away POM, and how a build step's failure (Maven's, javac's) becomes one line.

``copy_dependencies`` is driven here by small shell programs standing in for ``mvn`` so that its own contract
(the argument list, the POM removed on success, the one-line errors) is checked without a Maven repository;
the real Maven failing offline is checked by ``tests/integration/kafka/test_apache_kafka.py``.
"""

from __future__ import annotations

import stat
from pathlib import Path

import pytest

from harness.kernel.errors import ConfigError
from harness.kernel.maven import copy_dependencies, maven_error, pom, run_tool

DEPS = [("org.example", "a", "1.0"), ("org.example", "b", "2.0")]


def _program(tmp_path: Path, body: str) -> str:
    path = tmp_path / "mvn"
    path.write_text("#!/bin/sh\n" + body)
    path.chmod(path.stat().st_mode | stat.S_IEXEC)
    return str(path)


def test_the_pom_lists_the_dependencies_in_order() -> None:
    text = pom("x", DEPS)
    a = text.index("<artifactId>a</artifactId><version>1.0</version>")
    b = text.index("<artifactId>b</artifactId><version>2.0</version>")
    assert a < b and "<artifactId>x</artifactId>" in text and "<packaging>pom</packaging>" in text


def test_maven_error_is_the_first_error_line_else_the_last_line() -> None:
    assert maven_error("[INFO] x\n[ERROR] \n[ERROR] first\n[ERROR] second\n") == "first"
    assert maven_error("one\ntwo\n") == "two"
    assert maven_error("") == "no output"


def test_a_resolution_passes_the_settings_and_removes_its_pom(tmp_path: Path) -> None:
    work = tmp_path / "work"
    work.mkdir()
    # The stand-in records its arguments and the POM it was given, and "copies" one jar.
    mvn = _program(
        tmp_path,
        f'echo "$@" > {tmp_path}/argv\ncp "$3" {tmp_path}/seen.xml\nmkdir -p {work}/libs && touch {work}/libs/a.jar\n',
    )
    settings = tmp_path / "settings.xml"
    copy_dependencies(mvn, work, "x", DEPS, "the example", settings, 30)
    argv = (tmp_path / "argv").read_text().split()
    assert argv == [
        "-B",
        "-f",
        str(work / "pom.xml"),
        "-s",
        str(settings),
        "dependency:copy-dependencies",
        f"-DoutputDirectory={work / 'libs'}",
        "-DincludeScope=runtime",
    ]
    assert (tmp_path / "seen.xml").read_text() == pom("x", DEPS)
    assert not (work / "pom.xml").exists() and (work / "libs" / "a.jar").exists()


def test_a_failed_resolution_is_one_line_with_mavens_first_error(tmp_path: Path) -> None:
    mvn = _program(
        tmp_path, 'echo "[INFO] Scanning"\necho "[ERROR] Cannot access central in offline mode"\nexit 1\n'
    )
    with pytest.raises(ConfigError) as caught:
        copy_dependencies(mvn, tmp_path, "x", DEPS, "org.example:a:1.0", None, 30)
    assert (
        str(caught.value)
        == "Maven could not resolve org.example:a:1.0: Cannot access central in offline mode"
    )


def test_a_resolution_that_does_not_finish_in_time_says_so(tmp_path: Path) -> None:
    mvn = _program(tmp_path, "exec sleep 30\n")
    with pytest.raises(ConfigError) as caught:
        copy_dependencies(mvn, tmp_path, "x", DEPS, "org.example:a:1.0", None, 0.5)
    assert str(caught.value) == "Maven resolving org.example:a:1.0 did not finish within 0.5 s"


def test_a_failed_build_step_names_javacs_first_error_line(tmp_path: Path) -> None:
    javac = _program(
        tmp_path, 'echo "Foo.java:3: error: cannot find symbol" >&2\necho "1 error" >&2\nexit 1\n'
    )
    with pytest.raises(ConfigError) as caught:
        run_tool([javac], "javac", 30)
    assert str(caught.value) == "javac failed: Foo.java:3: error: cannot find symbol"


def test_a_build_step_gives_its_output() -> None:
    assert run_tool(["echo", "names"], "dumping", 30) == "names\n"
