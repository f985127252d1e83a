"""Finding Java and the ZooKeeper jars that ship inside the pyspark wheel.

Both functions raise :class:`harness.kernel.errors.EnvironmentProblem` with a one-line message that says
what is missing and how to fix it.
"""

from __future__ import annotations

import functools
import importlib.util
import os
import re
import shutil
import subprocess
from pathlib import Path

from harness.kernel.errors import EnvironmentProblem

MIN_JAVA = 17

# The jars QuorumPeerMain needs (ZooKeeper 3.9 in pyspark 4.x): the server, its wire format (jute),
# logging through slf4j -> log4j2, netty (client port), metrics, snappy, commons-io/cli.
_ZK_JAR_PREFIXES = (
    "zookeeper-",
    "slf4j-api-",
    "log4j-slf4j2-impl-",
    "log4j-api-",
    "log4j-core-",
    "netty-buffer-",
    "netty-codec-",
    "netty-common-",
    "netty-handler-",
    "netty-resolver-",
    "netty-transport-",
    "metrics-core-",
    "snappy-java-",
    "commons-io-",
    "commons-cli-",
    "audience-annotations-",
)


def java_executable() -> str:
    """Path of the ``java`` to use: ``$HERDLAB_JAVA``, ``$JAVA_HOME/bin/java`` or ``java`` on PATH."""
    explicit = os.environ.get("HERDLAB_JAVA")
    if explicit:
        return explicit
    home = os.environ.get("JAVA_HOME")
    if home and (Path(home) / "bin" / "java").exists():
        return str(Path(home) / "bin" / "java")
    found = shutil.which("java")
    if not found:
        raise EnvironmentProblem(
            f"Java not found: ZooKeeper needs Java {MIN_JAVA} or newer on PATH "
            "(e.g. `apt-get install openjdk-17-jre-headless`), or set JAVA_HOME"
        )
    return found


@functools.cache
def java_version(java: str) -> int:
    """The major version of ``java`` (``17`` for ``openjdk version "17.0.15"``)."""
    try:
        out = subprocess.run([java, "-version"], capture_output=True, text=True, timeout=30)
    except (OSError, subprocess.TimeoutExpired) as e:
        raise EnvironmentProblem(f"cannot run {java} -version: {e}") from None
    text = out.stderr + out.stdout
    m = re.search(r'version "(\d+)(?:\.(\d+))?', text)
    if not m:
        raise EnvironmentProblem(f"cannot tell the version of {java}: {text.strip()[:200]!r}")
    major = int(m.group(1))
    if major == 1 and m.group(2):  # "1.8.0_292" style
        major = int(m.group(2))
    return major


def check_java() -> str:
    """The java executable, after checking that it is version 17 or newer."""
    java = java_executable()
    major = java_version(java)
    if major < MIN_JAVA:
        raise EnvironmentProblem(
            f"Java {major} found at {java}, but ZooKeeper here needs Java {MIN_JAVA} or newer"
        )
    return java


def pyspark_jars_dir() -> Path:
    """The ``jars`` directory of the installed pyspark wheel."""
    spec = importlib.util.find_spec("pyspark")
    if spec is None or not spec.origin:
        raise EnvironmentProblem(
            "pyspark is not installed: its wheel carries the ZooKeeper jars (pip install pyspark)"
        )
    jars = Path(spec.origin).parent / "jars"
    if not jars.is_dir():
        raise EnvironmentProblem(f"pyspark is installed but has no jars directory at {jars}")
    return jars


def zookeeper_classpath(jars_dir: Path | None = None) -> list[Path]:
    """The jars needed to run the ZooKeeper server, from ``jars_dir`` (default: pyspark's)."""
    jars_dir = jars_dir or pyspark_jars_dir()
    jars = sorted(
        p
        for p in jars_dir.glob("*.jar")
        if p.name.startswith(_ZK_JAR_PREFIXES) and "-native-" not in p.name and "-tcnative-" not in p.name
    )
    if not any(re.match(r"zookeeper-\d", p.name) for p in jars):
        raise EnvironmentProblem(
            f"no zookeeper-<version>.jar in {jars_dir}: this pyspark does not ship ZooKeeper"
        )
    return jars


def zookeeper_version(jars: list[Path]) -> str:
    """The ZooKeeper version, read from the jar name (``zookeeper-3.9.5.jar`` -> ``3.9.5``)."""
    for p in jars:
        m = re.fullmatch(r"zookeeper-(\d[\w.]*)\.jar", p.name)
        if m:
            return m.group(1)
    return "unknown"
