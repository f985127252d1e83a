# pyright: strict
"""Every JVM option herdlab passes, per kind of JVM, each with its reason; overridable per kind.

Contract
--------
:data:`KINDS` maps each kind of JVM herdlab starts to its default options (:class:`Option`: the flag and
a one-line reason), in the order they go on the command line:

* ``zookeeper``: a ZooKeeper server (standalone or an ensemble's peer; :mod:`harness.cluster.zookeeper`);
* ``kafka``: an Apache Kafka broker and its storage tool (:mod:`harness.cluster.apache_kafka`);
* ``spark``: the analysis's Spark driver (in local mode also its executor;
  :mod:`harness.analysis.spark`), passed as ``spark.driver.extraJavaOptions``;
* ``spark_daemon``: a Spark standalone master or worker (:mod:`harness.cluster.spark_standalone`);
* ``member``: a coordinator member on Kafka's own Java consumer (:mod:`harness.members.java_dist`).

An option's flag may hold placeholders, ``{name}``, that :func:`options` fills from its caller's
values (a heap size, a log configuration's path, the process's name). The environment variable
``HERDLAB_JVM_<KIND>_OPTS`` (:func:`env_var`: ``HERDLAB_JVM_ZOOKEEPER_OPTS``, ``HERDLAB_JVM_KAFKA_OPTS``,
``HERDLAB_JVM_SPARK_OPTS``, ``HERDLAB_JVM_SPARK_DAEMON_OPTS``, ``HERDLAB_JVM_MEMBER_OPTS``), when set, replaces that kind's options
entirely: it is split as a shell would (:func:`shlex.split`) and may use the same placeholders. Set to
the empty string it passes none.

Not here: the options of Spark's class archive (``-XX:SharedArchiveFile``, ``-XX:ArchiveClassesAtExit``,
``-Xshare:on``), which are the archive's mechanism rather than settings and which
:mod:`harness.analysis.class_archive` appends after the ``spark`` kind's (``HERDLAB_SPARK_CLASS_ARCHIVE=off``
drops them). The ZooKeeper image's entry point (``harness/images/herdlab-zookeeper``) keeps no options of
its own: the containers backend passes it the ``zookeeper`` kind's
(:func:`harness.cluster.container_services.zookeeper_env`).

This module is pure data plus one lookup of the environment: it imports nothing of ours.
"""

from __future__ import annotations

import os
import shlex
from collections.abc import Mapping
from dataclasses import dataclass

__all__ = ["KINDS", "Option", "env_var", "options"]


@dataclass(frozen=True)
class Option:
    """One JVM option: ``flag`` as it goes on the command line (``{name}`` placeholders filled by
    :func:`options`) and ``reason``, why herdlab passes it."""

    flag: str
    reason: str


ZOOKEEPER = (
    Option("-Xmx{heap_mb}m", "the server's heap, sized by its caller (a test's ZooKeeper holds few znodes)"),
    Option("-Xms32m", "a small initial heap: it grows only as far as the group's znodes need"),
    Option(
        "-XX:+UseSerialGC",
        "one collector thread on a small heap, so ZooKeeper leaves the cores to the members",
    ),
    Option("-Djava.net.preferIPv4Stack=true", "listen and connect on IPv4 loopback, where the clients are"),
    Option(
        "-Dlog4j2.configurationFile={log4j}",
        "the log configuration herdlab writes: ZooKeeper's log to stdout",
    ),
    Option("-Dzookeeper.admin.enableServer=false", "no AdminServer, which would take port 8080"),
    Option("-Dzookeeper.jmx.log4j.disable=true", "no log4j JMX beans: herdlab reads the four-letter words"),
    Option(
        "-Dherdlab.name={name}", "the process's herdlab name on its command line, so ps tells servers apart"
    ),
)

KAFKA = (
    Option("-Xms256m", "an initial heap that holds a run's few small topics without growing"),
    Option("-Xmx768m", "a run's topics hold megabytes: below Kafka's script default of 1 GB"),
    Option("-XX:+UseG1GC", "Kafka's own collector choice (kafka-run-class.sh)"),
    Option("-XX:MaxGCPauseMillis=20", "Kafka's own pause goal (kafka-run-class.sh)"),
    Option("-XX:InitiatingHeapOccupancyPercent=35", "Kafka's own marking start (kafka-run-class.sh)"),
    Option("-XX:ParallelGCThreads=2", "the collector's threads capped at two, leaving cores to the members"),
    Option("-XX:ConcGCThreads=1", "one concurrent marking thread, leaving cores to the members"),
    Option("-XX:+ExitOnOutOfMemoryError", "a broker out of memory exits (a failed unit), not limps on"),
    Option("-Djava.awt.headless=true", "no display: as Kafka's scripts start it"),
    Option(
        "{log_config}", "the log configuration herdlab writes (log4j for ZooKeeper mode, log4j2 for KRaft)"
    ),
)

#: Packages whose code only plans and ships the Spark jobs (Janino, Catalyst's trees and rules, the
#: closure cleaner's ASM, the SQL parser, py4j's pickler): the ``spark`` kind raises their C2 thresholds.
SPARK_PLANNING_CODE = (
    "org/codehaus/janino/",
    "org/apache/xbean/",
    "org/antlr/",
    "net/razorvine/",
    "org/apache/spark/sql/catalyst/trees/",
    "org/apache/spark/sql/catalyst/rules/",
    "org/apache/spark/sql/catalyst/optimizer/",
    "org/apache/spark/sql/catalyst/analysis/",
    "jdk/internal/org/objectweb/",
)

#: The analysis's driver: C2 held back to hot code and the throughput collector (the runs that chose them
#: are in docs/validation/analysis-speed.md). The generations keep their default sizes: a young half of the
#: heap (``-XX:NewRatio=1``) would cap the old one below what Spark may cache there (60 % of the heap less
#: 300 MB), so a large history would make the JVM collect in vain instead of Spark spilling to disk.
_C2_LATER = (
    "C2 compiles after ten times HotSpot's default count, so the stages' generated classes leave the cores"
)
SPARK = (
    Option(
        "-XX:+UseParallelGC",
        "the throughput collector: a batch job whose pauses nobody waits on (G1's concurrent work costs CPU);"
        " default generation sizes, so the old one holds what Spark caches",
    ),
    Option("-XX:Tier4InvocationThreshold=50000", _C2_LATER),
    Option("-XX:Tier4MinInvocationThreshold=6000", _C2_LATER),
    Option("-XX:Tier4CompileThreshold=150000", _C2_LATER),
    Option(
        "-XX:Tier4BackEdgeThreshold=400000", _C2_LATER + "; per-row loops of a large history still get there"
    ),
    Option("-XX:CompileCommand=quiet", "the compile commands below print nothing"),
    *(
        Option(
            f"-XX:CompileCommand=CompileThresholdScaling,{package}*.*,10.0",
            "planning code: thresholds ten times higher again, it reaches C2 anyway and is gone with the JVM",
        )
        for package in SPARK_PLANNING_CODE
    ),
)

SPARK_DAEMON = (
    Option(
        "-Xmx256m", "a master or worker only schedules; executors get spark.executor.memory from the driver"
    ),
    Option("-XX:+UseSerialGC", "one collector thread on a small heap, leaving the cores to the executors"),
    Option("-Djava.net.preferIPv4Stack=true", "listen and connect on IPv4 loopback, where the cluster is"),
    Option(
        "-Dspark.master.rest.enabled=false", "no REST submission server: herdlab submits no jobs through it"
    ),
    Option(
        "-Dherdlab.name={name}", "the process's herdlab name on its command line, so ps tells daemons apart"
    ),
)

#: A group member: one KafkaConsumer's buffers and metadata, dozens of members on two cores.
MEMBER = (
    Option(
        "-Xmx{heap_mb}m", "the member's heap, sized by its caller: a consumer's fetch buffers are small here"
    ),
    Option("-Xms16m", "a small initial heap: it grows only as far as the consumer needs"),
    Option(
        "-XX:+UseSerialGC",
        "one collector thread and no concurrent work: many member JVMs share the cores; pauses on a small "
        "heap stay far below a session timeout",
    ),
    Option(
        "-XX:TieredStopAtLevel=1",
        "C1 only: the member starts and joins sooner and leaves the cores to the others; its poll loop "
        "needs no peak speed",
    ),
    Option("-Xss512k", "a smaller stack per thread (the consumer, its heartbeat thread, stdin's reader)"),
    Option(
        "-XX:+ExitOnOutOfMemoryError",
        "a member out of memory exits (a crash the history shows), not limps on",
    ),
    Option("-Djava.net.preferIPv4Stack=true", "connect on IPv4 loopback, where the brokers listen"),
    Option(
        "-Dherdlab.name={name}", "the member's herdlab name on its command line, so ps tells members apart"
    ),
)

#: Each kind of JVM and its default options, in command-line order.
KINDS: Mapping[str, tuple[Option, ...]] = {
    "zookeeper": ZOOKEEPER,
    "kafka": KAFKA,
    "spark": SPARK,
    "spark_daemon": SPARK_DAEMON,
    "member": MEMBER,
}


def env_var(kind: str) -> str:
    """The environment variable that replaces ``kind``'s options: ``HERDLAB_JVM_<KIND>_OPTS``."""
    return f"HERDLAB_JVM_{kind.upper()}_OPTS"


def _fill(flag: str, values: Mapping[str, object]) -> str:
    for name, value in values.items():
        flag = flag.replace("{" + name + "}", str(value))
    return flag


def options(kind: str, environ: Mapping[str, str] | None = None, **values: object) -> list[str]:
    """``kind``'s JVM options (a key of :data:`KINDS`), placeholders filled from ``values``: the
    defaults, or the split value of :func:`env_var` when ``environ`` (default ``os.environ``) sets it."""
    defaults = KINDS[kind]  # a KeyError names an unknown kind
    env = os.environ if environ is None else environ
    given = env.get(env_var(kind))
    flags = shlex.split(given) if given is not None else [o.flag for o in defaults]
    return [_fill(flag, values) for flag in flags]
