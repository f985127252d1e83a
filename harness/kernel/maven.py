"""Maven as herdlab uses it: a throw-away POM whose dependencies Maven resolves into a directory.

Contract
--------
* :func:`pom`: the text of a POM of packaging ``pom`` named ``artifact`` whose dependencies are ``deps``
  (group, artifact, version), in that order; ``mvn dependency:copy-dependencies`` on it copies their
  runtime closure.
* :func:`maven_error`: the most telling line of a failed Maven run's output: its first ``[ERROR]`` line
  without the prefix, else its last line.
"""

from __future__ import annotations

from collections.abc import Sequence


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
