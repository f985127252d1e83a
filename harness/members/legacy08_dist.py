"""Kafka 0.8.2.2's own ZooKeeper consumer as a legacy_zk member: our small program
(``legacy08/HerdlabLegacyMember.java``, the legacy_zk kind of :mod:`harness.members.child`), built at
set-up against ``org.apache.kafka:kafka_2.10:0.8.2.2``.

Why a program of ours: 0.8.2.2 ships no tool that prints what its high-level consumer does (its console
consumer prints records only, and 0.8.2.2 has no rebalance listener). The program runs the connector
unmodified and reads what it does from its own log4j messages (the program's class comment lists them).

Where the events come from: 0.8.2.2 has no ``ConsumerRebalanceListener``, so assignment and release come
from the owner znodes it writes, as the connector itself reports each write in its log, on the thread doing
it, at that moment (``... successfully owned partition P``, DEBUG ``... releasing ZNODE``, ``waiting for the
partition ownership to be deleted``, ``selected partitions`` before its fetchers start); its offset commits
from its ZooKeeper client's DEBUG reply of each offset-znode write, with the reply's error (0.8.2.2 logs no
commit). A second ZooKeeper client watching those znodes would see them later, miss short-lived ones (a
claim rolled back at once) and add the very ZooKeeper traffic the comparison counts; the log needs no
change to the library and costs no request.

Contract
--------
* One version: the client ``kafka-0.8.2.2`` (:data:`CLIENT`); the ``version`` arguments exist for the
  registry's signature and must be None or ``0.8.2.2``.
* :func:`build` (idempotent): Maven (``mvn`` on PATH; ``settings``: a Maven settings file, ``mvn -s``)
  resolves :data:`ARTIFACT` with its runtime closure (zkclient 0.3, ZooKeeper 3.4.6, scala-library 2.10,
  metrics-core, log4j 1.2 and slf4j-log4j12, snappy, lz4, ...) into ``<dir>/libs``; ``javac --release 17``
  compiles the program and the shared ``HerdlabIo.java`` into ``<dir>/classes``. ``<dir>`` is
  ``<cache>/legacy08-member/0.8.2.2``; it is built beside and renamed into place, so it appears whole or not
  at all; its marker records the digest of both sources (:func:`harness.members.jvm_build.digest`), so a
  changed program is built again. A step that fails is a one-line
  :class:`ConfigError` with the tool's own error line.
* :func:`missing`: None when the member can be run (built, ``java`` on PATH) or built here (``java``,
  ``javac`` and ``mvn`` on PATH); else a short sentence saying what is missing. No network probe.
* :func:`command`: the start of a member's command line: ``java``, the ``member`` kind's JVM options
  (:mod:`harness.kernel.jvm`: heap :data:`HEAP_MB`), the class path and the main class; the adapter appends
  :func:`~harness.members.clients.registry.child_argv` (``--bootstrap`` is the ZooKeeper connect string).
  :class:`ConfigError` saying how to build when it is not built.
"""

from __future__ import annotations

import shutil
from collections.abc import Callable
from importlib import resources
from pathlib import Path

from harness.kernel import jvm
from harness.kernel.cache import cache_dir
from harness.kernel.errors import ConfigError
from harness.kernel.maven import check_settings, copy_dependencies
from harness.members.jvm_build import building, built, classpath, compile_program, tool
from harness.members.recorder import MemberConfig

__all__ = [
    "ARTIFACT",
    "CLIENT",
    "HEAP_MB",
    "MAIN_CLASS",
    "MARKER",
    "build",
    "command",
    "member_dir",
    "missing",
]

CLIENT = "kafka-0.8.2.2"
VERSION = "0.8.2.2"
#: the original consumer (Scala 2.10 build: the one Maven Central has with its whole closure)
ARTIFACT = ("org.apache.kafka", "kafka_2.10", VERSION)
MAIN_CLASS = "HerdlabLegacyMember"
MARKER = "herdlab-legacy08-member.json"
#: the member JVM's heap: one connector's fetch queue (queued.max.message.chunks of a small topic)
HEAP_MB = 64


def source() -> Path:
    """The program's source file (shipped as package data)."""
    return Path(str(resources.files("harness.members") / "legacy08" / f"{MAIN_CLASS}.java"))


def _check(client: str, version: str | None) -> None:
    if client != CLIENT:
        raise ConfigError(f"{client!r} is not built by harness.members.legacy08_dist (it builds {CLIENT!r})")
    if version not in (None, VERSION):
        raise ConfigError(f"client {CLIENT!r} has one version ({VERSION}), not {version!r}")


def member_dir() -> Path:
    """The cache directory of the built member."""
    return cache_dir() / "legacy08-member" / VERSION


def _built(dest: Path) -> bool:
    return built(dest, MARKER, source())


def build(
    client: str,
    version: str | None = None,
    *,
    progress: Callable[[str], None] | None = None,
    settings: Path | None = None,
    timeout_s: float = 900.0,
) -> Path:
    """Build the member (see the module contract); its directory."""
    _check(client, version)
    dest = member_dir()
    if _built(dest):
        return dest
    say = progress or (lambda _line: None)
    check_settings(settings)
    mvn, javac = tool("mvn", CLIENT), tool("javac", CLIENT)
    tool("java", CLIENT)
    with building(dest, MARKER, source(), VERSION) as work:
        say(f"resolving {':'.join(ARTIFACT)} with Maven")
        copy_dependencies(mvn, work, "legacy08-member", [ARTIFACT], ":".join(ARTIFACT), settings, timeout_s)
        say(f"compiling {MAIN_CLASS}.java against Kafka {VERSION}")
        compile_program(
            javac, work, str(work / "libs" / "*"), source(), timeout_s, flags=["-XDignore.symbol.file"]
        )
    say(f"built the {CLIENT} member in {dest}")
    return dest


def missing(client: str, version: str | None = None) -> str | None:
    """What is missing to run or build the member here (see the module contract)."""
    _check(client, version)
    if shutil.which("java") is None:
        return "java not found on PATH: install a JDK 17 or newer"
    if _built(member_dir()):
        return None
    if shutil.which("javac") is None:
        return f"javac not found on PATH: install a JDK 17 or newer (a JRE cannot build the {CLIENT} member)"
    if shutil.which("mvn") is None:
        return f"mvn not found on PATH: install Maven (it resolves Kafka {VERSION} for the {CLIENT} member)"
    return None


def command(config: MemberConfig) -> list[str]:
    """The start of the command line of the member ``config`` (see the module contract)."""
    _check(config.client, config.client_version)
    dest = member_dir()
    if not _built(dest):
        raise ConfigError(
            f"the {CLIENT} member is not built: run `herdlab clients build {CLIENT}` (or start a run, which builds it)"
        )
    java = shutil.which("java") or "java"
    opts = jvm.options("member", heap_mb=HEAP_MB, name=config.name)
    return [java, *opts, "-cp", classpath(dest), MAIN_CLASS]
