"""Apache Kafka's own broker jars: fetched from Maven Central into herdlab's cache, or a user's distribution.

Contract
--------
* :data:`LINES`: the two lines herdlab runs and the version each means: ``3.9`` (the last line with
  ZooKeeper mode) and ``4`` (KRaft only), kept in :mod:`harness.kernel.kafka_versions`, which Kafka's Java
  client member shares. :func:`resolve_version` turns ``3.9`` / ``4`` / ``4.1`` / an exact
  version into an exact one; :func:`zookeeper_mode` says which mode a version runs in (3.x: ZooKeeper).
* :func:`fetch`: Maven (``mvn`` on PATH) resolves ``org.apache.kafka:kafka_2.13:VERSION`` and
  ``kafka-tools`` with their runtime closure and a log binding (reload4j for 3.x, log4j 2 for 4.x, as
  Kafka's own distribution ships) into ``<cache>/apache-kafka/<VERSION>/libs``; the directory appears
  whole or not at all (built beside it, renamed). ``settings``: a Maven settings file (``mvn -s``).
  Idempotent: a version already in the cache is not fetched again. A Maven that cannot resolve is a
  one-line :class:`ConfigError` with Maven's own last error line.
* :func:`kafka_home`: the distribution a run uses: ``given`` (``--kafka-home``), else
  ``$HERDLAB_KAFKA_HOME``, else the cache's copy of ``version``; an unpacked Apache Kafka distribution
  (its ``libs/`` holds ``kafka_2.13-<version>.jar``) works as well as a fetched one, when it runs in the
  mode ``version`` does (ZooKeeper mode or KRaft: what the scenario was checked for). Neither, or a
  distribution of the other mode: a one-line :class:`ConfigError` saying what to do.
"""

from __future__ import annotations

import json
import os
import re
import shutil
import tempfile
from dataclasses import dataclass
from pathlib import Path

from harness.kernel.cache import cache_dir
from harness.kernel.errors import ConfigError
from harness.kernel.kafka_versions import LINES, resolve_version
from harness.kernel.maven import check_settings, copy_dependencies

__all__ = [
    "LINES",
    "MARKER",
    "KafkaHome",
    "cache_root",
    "fetch",
    "fetched_versions",
    "kafka_home",
    "resolve_version",
    "zookeeper_mode",
]

#: the log bindings of each major version: what Kafka's own distribution puts in libs/
_LOG_BINDINGS = {
    3: [("org.slf4j", "slf4j-reload4j", "1.7.36")],
    4: [("org.apache.logging.log4j", "log4j-slf4j-impl", "2.24.3")],
}
_VERSION = re.compile(r"^\d+\.\d+\.\d+$")
_CORE_JAR = re.compile(r"^kafka_2\.1[23]-(\d+\.\d+\.\d+)\.jar$")
MARKER = "herdlab-kafka.json"


@dataclass(frozen=True)
class KafkaHome:
    """An Apache Kafka distribution: its directory and version; ``libs`` holds every jar the broker needs."""

    path: Path
    version: str

    @property
    def libs(self) -> Path:
        return self.path / "libs"

    @property
    def classpath(self) -> str:
        """The JVM class path of the broker and its tools (every jar of ``libs``)."""
        return str(self.libs / "*")

    @property
    def zookeeper_mode(self) -> bool:
        return zookeeper_mode(self.version)


def zookeeper_mode(version: str) -> bool:
    """A 3.x broker runs in ZooKeeper mode here; 4.x has only KRaft."""
    return int(version.split(".", 1)[0]) < 4


def cache_root() -> Path:
    """Where fetched distributions live: ``<cache>/apache-kafka``."""
    return cache_dir() / "apache-kafka"


def _deps(version: str) -> list[tuple[str, str, str]]:
    major = int(version.split(".", 1)[0])
    deps = [("org.apache.kafka", "kafka_2.13", version), ("org.apache.kafka", "kafka-tools", version)]
    return deps + _LOG_BINDINGS[3 if major < 4 else 4]


def fetch(version: str | None, settings: Path | None = None, timeout_s: float = 900.0) -> KafkaHome:
    """Fetch Apache Kafka ``version`` (see the module contract); the cached distribution."""
    v = resolve_version(version)
    check_settings(settings)
    dest = cache_root() / v
    if (dest / MARKER).exists():
        return KafkaHome(dest, v)
    mvn = shutil.which("mvn")
    if mvn is None:
        raise ConfigError("herdlab kafka fetch needs Maven (mvn) on PATH: apt-get install maven")
    dest.parent.mkdir(parents=True, exist_ok=True)
    work = Path(tempfile.mkdtemp(prefix=f".{v}-", dir=dest.parent))
    try:
        copy_dependencies(
            mvn, work, "apache-kafka", _deps(v), f"org.apache.kafka:kafka_2.13:{v}", settings, timeout_s
        )
        (work / MARKER).write_text(
            json.dumps({"version": v, "source": "maven", "jars": len(list((work / "libs").iterdir()))})
        )
        try:
            work.rename(dest)
        except OSError:
            if not (dest / MARKER).exists():  # not a concurrent fetch of the same version that won
                raise
    finally:
        shutil.rmtree(work, ignore_errors=True)
    return KafkaHome(dest, v)


def _home_version(path: Path) -> str | None:
    libs = path / "libs"
    if not libs.is_dir():
        return None
    for jar in sorted(libs.iterdir()):
        m = _CORE_JAR.match(jar.name)
        if m:
            return m.group(1)
    return None


def fetched_versions() -> list[str]:
    """The exact versions whose fetch completed in herdlab's cache, oldest first."""
    root = cache_root()
    if not root.is_dir():
        return []
    found = [p.name for p in root.iterdir() if _VERSION.match(p.name) and (p / MARKER).exists()]
    return sorted(found, key=lambda v: tuple(int(x) for x in v.split(".")))


def kafka_home(version: str | None, given: Path | None = None) -> KafkaHome:
    """The distribution of ``version`` a run uses (see the module contract)."""
    env = os.environ.get("HERDLAB_KAFKA_HOME")
    where = given or (Path(env) if env else None)
    if where is not None:
        found = _home_version(where)
        if found is None:
            raise ConfigError(f"{where} is not an Apache Kafka distribution (no libs/kafka_2.13-*.jar)")
        wanted = resolve_version(version)
        if zookeeper_mode(found) != zookeeper_mode(wanted):
            mode = {True: "ZooKeeper mode", False: "KRaft"}
            raise ConfigError(
                f"{where} is Apache Kafka {found} ({mode[zookeeper_mode(found)]}) but the scenario asks for "
                f"{version or '3.9'} ({mode[zookeeper_mode(wanted)]}): give a distribution of that line, or "
                "set cluster.kafka_version to match it"
            )
        return KafkaHome(where, found)
    v = resolve_version(version)
    cached = cache_root() / v
    if (cached / MARKER).exists():
        return KafkaHome(cached, v)
    raise ConfigError(
        f"Apache Kafka {v} is not fetched: run `herdlab kafka fetch {v}`, or give --kafka-home DIR "
        "(or HERDLAB_KAFKA_HOME) with an unpacked Apache Kafka distribution"
    )
