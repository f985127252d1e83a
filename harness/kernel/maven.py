"""Build steps as herdlab runs them: any build tool with a one-line failure, and Maven resolving a throw-away
POM's dependencies into a directory.

Contract
--------
* :func:`pom`: the text of a POM of packaging ``pom`` named ``artifact`` whose dependencies are ``deps``
  (group, artifact, version), in that order; ``mvn dependency:copy-dependencies`` on it copies their
  runtime closure.
* :func:`maven_error`: the most telling line of a failed Maven run's output: its first ``[ERROR]`` line
  without the prefix, else its last line.
* :func:`check_settings`: a Maven settings file given (``mvn -s``) that does not exist is a one-line
  :class:`ConfigError`, raised before any work starts.
* :func:`run_tool`: runs one build step (Maven, javac, a built program); its stdout, or a one-line
  :class:`ConfigError`: ``<failed>: <line>`` (``failed`` defaults to ``<what> failed``) with the tool's most
  telling line (javac's first ``error:``, else :func:`maven_error`), or ``<what> did not finish within N s``.
* :func:`copy_dependencies`: ``mvn`` resolves ``deps`` with their runtime closure into ``<work>/libs``
  through a throw-away POM in ``work`` (removed after), ``mvn -s settings`` when given, as a
  :func:`run_tool` step: a Maven that fails is ``Maven could not resolve WHAT: <line>``, one that does not
  finish within ``timeout_s`` ``Maven resolving WHAT did not finish within N s``.
"""

from __future__ import annotations

import subprocess
from collections.abc import Sequence
from pathlib import Path

from harness.kernel.errors import ConfigError


def pom(artifact: str, deps: Sequence[tuple[str, str, str]]) -> str:
    """The POM text (see the module contract)."""
    body = "".join(
        f"<dependency><groupId>{g}</groupId><artifactId>{a}</artifactId><version>{v}</version></dependency>"
        for g, a, v in deps
    )
    return (
        '<project xmlns="http://maven.apache.org/POM/4.0.0"><modelVersion>4.0.0</modelVersion>'
        f"<groupId>herdlab</groupId><artifactId>{artifact}</artifactId><version>1</version>"
        f"<packaging>pom</packaging><dependencies>{body}</dependencies></project>"
    )


def maven_error(output: str) -> str:
    """The most telling line of a failed Maven run (see the module contract)."""
    for line in output.splitlines():
        if line.startswith("[ERROR]") and line[7:].strip():
            return line[7:].strip()
    return (output.strip().splitlines() or ["no output"])[-1]


def check_settings(settings: Path | None) -> None:
    """Refuse a settings file that does not exist (see the module contract)."""
    if settings is not None and not settings.is_file():
        raise ConfigError(f"Maven settings file {settings} does not exist")


def _last_error(output: str) -> str:
    for line in output.splitlines():
        if "error:" in line and not line.startswith("[ERROR]"):
            return line.strip()
    return maven_error(output)


def run_tool(argv: list[str], what: str, timeout_s: float, failed: str | None = None) -> str:
    """Run one build step (see the module contract)."""
    try:
        done = subprocess.run(argv, capture_output=True, text=True, timeout=timeout_s, check=False)
    except subprocess.TimeoutExpired:
        raise ConfigError(f"{what} did not finish within {timeout_s:g} s") from None
    if done.returncode != 0:
        raise ConfigError(f"{failed or f'{what} failed'}: {_last_error(done.stdout + done.stderr)}")
    return done.stdout


def copy_dependencies(
    mvn: str,
    work: Path,
    artifact: str,
    deps: Sequence[tuple[str, str, str]],
    what: str,
    settings: Path | None,
    timeout_s: float,
) -> None:
    """Resolve ``deps`` into ``<work>/libs`` (see the module contract)."""
    (work / "pom.xml").write_text(pom(artifact, deps))
    argv = [mvn, "-B", "-f", str(work / "pom.xml")]
    if settings is not None:
        argv += ["-s", str(settings)]
    argv += ["dependency:copy-dependencies", f"-DoutputDirectory={work / 'libs'}", "-DincludeScope=runtime"]
    run_tool(argv, f"Maven resolving {what}", timeout_s, failed=f"Maven could not resolve {what}")
    (work / "pom.xml").unlink()
