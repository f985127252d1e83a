"""Kafka's own Java consumer as a coordinator member: our small program (``java/HerdlabMember.java``,
the child protocol of :mod:`harness.members.child`), built at set-up against a kafka-clients version.

Why a program of ours rather than Kafka's ``VerifiableConsumer``: that tool prints no generation and
reports records per batch, where the history needs the generation of every assignment and one event per
record.

Contract
--------
* Versions: the client's version is ``MemberConfig.client_version`` (the scenario's
  ``group.coordinator.client_version``): ``3.9`` (kafka-clients 3.9.2), ``4`` (4.1.1) or an exact
  kafka-clients version (:mod:`harness.kernel.kafka_versions`). The default is the ``3.9`` line, as for
  the Apache Kafka broker: its consumer is the classic-protocol ``KafkaConsumer`` whose design the
  coordination notes describe (heartbeat thread, session and poll timers), and the line most groups run;
  ``4`` is one setting away.
* :func:`build` (idempotent): Maven (``mvn`` on PATH; ``settings``: a Maven settings file, ``mvn -s``)
  resolves ``org.apache.kafka:kafka-clients:VERSION`` and ``org.slf4j:slf4j-simple`` (its log on stderr)
  with their runtime closure into ``<dir>/libs``; ``javac --release 17`` compiles the program (with the
  shared ``HerdlabIo.java``) into ``<dir>/classes``; the program's ``--config-names`` is dumped into
  ``<dir>/config-names.json`` (what a scenario's java properties are checked against,
  :func:`harness.scenario.properties.java_config_names`, with no JVM at check time). ``<dir>`` is
  ``<cache>/java-member/<VERSION>`` (:func:`harness.scenario.properties.java_member_dir`); it is built beside
  and renamed into place, so it appears whole or not at all; its marker records the digest of both sources
  (:func:`harness.members.jvm_build.digest`), so a changed program is built again. A step that fails is a
  one-line :class:`ConfigError` with the tool's own error line.
* :func:`missing`: None when the client can be run (built, ``java`` on PATH) or built here (``java``,
  ``javac`` and ``mvn`` on PATH); else a short sentence saying what is missing. No network probe.
* :func:`command`: the start of a member's command line: ``java``, the ``member`` kind's JVM options
  (:mod:`harness.kernel.jvm`: heap :data:`HEAP_MB`), the class path, the main class and ``--poll-ms``
  (the member's poll window); the adapter appends :func:`~harness.members.clients.registry.child_argv`.
  :class:`ConfigError` saying how to build when the version is not built.
"""

from __future__ import annotations

import json
import shutil
from collections.abc import Callable
from importlib import resources
from pathlib import Path

from harness.kernel import jvm
from harness.kernel.errors import ConfigError
from harness.kernel.maven import check_settings, copy_dependencies, run_tool
from harness.members.jvm_build import building, built, classpath, compile_program, tool
from harness.members.recorder import MemberConfig
from harness.scenario.properties import JAVA_CONFIG_NAMES, java_member_dir, java_version

__all__ = ["HEAP_MB", "MAIN_CLASS", "MARKER", "build", "command", "member_dir", "missing", "source"]

CLIENT = "java"
MAIN_CLASS = "HerdlabMember"
MARKER = "herdlab-java-member.json"
#: slf4j's simple binding: the client's log on stderr (kafka-clients brings only slf4j-api)
SLF4J_SIMPLE = ("org.slf4j", "slf4j-simple", "1.7.36")
#: the member JVM's heap: one consumer's fetch buffers and metadata of a small test topic
HEAP_MB = 64


def source() -> Path:
    """The program's source file (shipped as package data)."""
    return Path(str(resources.files("harness.members") / "java" / f"{MAIN_CLASS}.java"))


def _check_client(client: str) -> None:
    if client != CLIENT:
        raise ConfigError(f"{client!r} is not built by harness.members.java_dist (it builds {CLIENT!r})")


def member_dir(version: str | None) -> Path:
    """The cache directory of the java member of ``version`` (a line or an exact version)."""
    try:
        return java_member_dir(java_version(version))
    except ValueError as e:
        raise ConfigError(str(e)) from None


def _built(dest: Path) -> bool:
    return built(dest, MARKER, source())


def build(
    client: str,
    version: str | None,
    *,
    progress: Callable[[str], None] | None = None,
    settings: Path | None = None,
    timeout_s: float = 900.0,
) -> Path:
    """Build the java member of ``version`` (see the module contract); its directory."""
    _check_client(client)
    dest = member_dir(version)
    if _built(dest):
        return dest
    v = dest.name
    say = progress or (lambda _line: None)
    check_settings(settings)
    mvn, javac, java = tool("mvn", CLIENT), tool("javac", CLIENT), tool("java", CLIENT)
    with building(dest, MARKER, source(), v) as work:
        say(f"resolving org.apache.kafka:kafka-clients:{v} with Maven")
        deps = [("org.apache.kafka", "kafka-clients", v), SLF4J_SIMPLE]
        copy_dependencies(
            mvn, work, "java-member", deps, f"org.apache.kafka:kafka-clients:{v}", settings, timeout_s
        )
        say(f"compiling {MAIN_CLASS}.java against kafka-clients {v}")
        compile_program(javac, work, str(work / "libs" / f"kafka-clients-{v}.jar"), source(), timeout_s)
        names = run_tool(
            [java, "-cp", classpath(work), MAIN_CLASS, "--config-names"],
            "dumping the client's properties",
            120,
        )
        (work / JAVA_CONFIG_NAMES).write_text(json.dumps(json.loads(names)))
    say(f"built the java member for kafka-clients {v} in {dest}")
    return dest


def missing(client: str, version: str | None) -> str | None:
    """What is missing to run or build the java member of ``version`` here (see the module contract)."""
    _check_client(client)
    if shutil.which("java") is None:
        return "java not found on PATH: install a JDK 17 or newer"
    if _built(member_dir(version)):
        return None
    if shutil.which("javac") is None:
        return "javac not found on PATH: install a JDK 17 or newer (a JRE cannot build the java member)"
    if shutil.which("mvn") is None:
        return "mvn not found on PATH: install Maven (it resolves kafka-clients for the java member)"
    return None


def command(config: MemberConfig) -> list[str]:
    """The start of the command line of the java member ``config`` (see the module contract)."""
    dest = member_dir(config.client_version)
    if not _built(dest):
        raise ConfigError(
            f"the java member for kafka-clients {dest.name} is not built: run `herdlab clients build java` "
            "for that version"
        )
    java = shutil.which("java") or "java"
    opts = jvm.options("member", heap_mb=HEAP_MB, name=config.name)
    return [java, *opts, "-cp", classpath(dest), MAIN_CLASS, "--poll-ms", str(config.poll_timeout_ms)]
