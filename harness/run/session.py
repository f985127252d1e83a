# pyright: strict
"""A ``herdlab run`` session without its terminal: checks, the scenario, the units, the analysis.

Contract
--------
* :func:`prepare` turns a :class:`SessionRequest` (what the command line said) into a
  :class:`Session`, or raises a one-line :class:`~harness.kernel.errors.HerdlabError` before anything
  is started or written: it checks Java (ZooKeeper and Spark need it), refuses backend options given to the wrong backend, loads the scenario with its
  overrides, and for the external backend checks every address. ``--bootstrap`` is also taken with
  ``--backend local`` when the scenario (or one of its matrix cases) has ``cluster.broker = "external"``,
  and such a scenario without ``--bootstrap`` is an error. The caller installs the process's
  signal handlers first (:func:`harness.procs.install_signal_handlers`: SIGTERM stops cleanly). :attr:`Session.total_units` is how
  many units the run will have (cases x repetitions x columns).
* :meth:`Session.run` runs every unit (:func:`harness.run.runner.run_scenario`) reporting progress to a
  callback, and returns the :class:`~harness.run.runner.RunResult`; Ctrl-C propagates as
  ``KeyboardInterrupt`` once what was recorded is saved.
* :func:`analyse` computes a run's metrics (PySpark, or its ``metrics.json`` again), :func:`render`
  writes its reports, :func:`is_valid` says whether the run counts (nothing lost, drained, no unit
  failed, not interrupted). Printing is the caller's (``harness.cli``).
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from harness.analysis import analyze_run
from harness.analysis.metrics_model import MetricsDocument
from harness.cluster.containers import ContainersOptions
from harness.cluster.external import ExternalCluster
from harness.cluster.java import check_java
from harness.cluster.kafka_dist import kafka_home
from harness.images import image_names
from harness.kernel.errors import ConfigError
from harness.members.clients.registry import ChildClient, client_spec
from harness.report import load_metrics, render_report
from harness.run.clients import build_clients, case_clients, check_clients
from harness.run.runner import RunOptions, RunResult, run_scenario, unit_columns
from harness.scenario import Case, Scenario, expand, load_scenario


@dataclass(frozen=True)
class SessionRequest:
    """What to run and where (the options of ``herdlab run``)."""

    scenario: str
    overrides: tuple[str, ...] = ()
    backend: str = "local"
    zookeeper: str | None = None
    bootstrap: str | None = None
    out: Path = Path("reports")
    members_in_containers: bool = False
    kafka_image: str | None = None
    image_prefix: str | None = None
    kafka_home: Path | None = None


@dataclass
class Session:
    """A checked request: the loaded scenario and the run options (see the module contract)."""

    scenario: Scenario
    options: RunOptions
    total_units: int

    def run(self, progress: Callable[[dict[str, Any]], None] | None = None) -> RunResult:
        """Run every unit, reporting progress to ``progress``."""
        self.options.progress = progress
        build_clients(expand(self.scenario))
        return run_scenario(self.scenario, self.options)

    def build_clients(self, echo: Callable[[str], None] | None = None) -> None:
        """Build the client programs the run needs now (progress lines to ``echo``), rather than silently
        at the start of :meth:`run`."""
        build_clients(expand(self.scenario), echo)
        expand(self.scenario)  # the cases again: a built client's own property names are checked now


def prepare(req: SessionRequest) -> Session:
    """Check ``req`` and load its scenario (see the module contract)."""
    check_java()  # ZooKeeper and Spark need it: fail before anything is started or written
    if req.backend != "containers" and (req.members_in_containers or req.kafka_image or req.image_prefix):
        raise ConfigError(
            "--members-in-containers, --kafka-image and --image-prefix need --backend containers"
        )
    if req.backend != "external" and req.zookeeper:
        raise ConfigError("--zookeeper and --bootstrap need --backend external")
    s = load_scenario(req.scenario, list(req.overrides))
    cases = expand(s)
    broker_external = any(case.scenario.cluster.broker == "external" for case in cases)
    if req.backend != "external" and req.bootstrap and not broker_external:
        raise ConfigError("--zookeeper and --bootstrap need --backend external")
    if broker_external and req.backend == "containers":
        raise ConfigError("cluster.broker = 'external' needs --backend local or external (not containers)")
    if broker_external and not req.bootstrap:
        raise ConfigError(
            "cluster.broker = 'external' needs --bootstrap HOST:PORT of the Kafka-compatible cluster"
        )
    containers = ContainersOptions(
        members_in_containers=req.members_in_containers, kafka_image=req.kafka_image
    )
    if req.image_prefix is not None:
        containers.images = image_names(req.image_prefix)
    if req.backend == "external" or broker_external:
        # Constructing it checks every address (within seconds, one line on failure): do it before a
        # run directory is made; the runner constructs its own per unit.
        ExternalCluster(req.zookeeper, req.bootstrap or "")
    _check_kafka_homes(cases, req)
    check_clients(cases)
    if req.members_in_containers and any(
        isinstance(client_spec(c), ChildClient) for c, _ in case_clients(cases)
    ):
        raise ConfigError(
            "--members-in-containers runs the Python clients only (not java, kafka-go, franz-go, kafka-0.8.2.2)"
        )
    options = RunOptions(
        backend=req.backend,
        out=req.out,
        zookeeper=req.zookeeper,
        bootstrap=req.bootstrap,
        containers=containers,
        kafka_home=req.kafka_home,
    )
    total = len(cases) * s.repetitions * len(unit_columns(s, options))
    return Session(scenario=s, options=options, total_units=total)


def _check_kafka_homes(cases: list[Case], req: SessionRequest) -> None:
    """Every Apache Kafka version the ``cases`` run is at hand (fetched, ``--kafka-home`` or
    ``$HERDLAB_KAFKA_HOME``, in the case's mode): a one-line error before anything starts, not a failed
    unit an hour into the run."""
    versions = {
        c.scenario.cluster.kafka_version for c in cases if c.scenario.cluster.broker == "apache-kafka"
    }
    for given, flag in ((req.kafka_home, "--kafka-home"), (req.kafka_image, "--kafka-image")):
        if given is not None and not versions:
            raise ConfigError(f"{flag} needs a scenario with cluster.broker = 'apache-kafka'")
    if req.kafka_home is not None and req.backend == "containers":
        raise ConfigError(
            "--kafka-home is for the local backend; the containers backend runs the Kafka image"
        )
    if not versions or req.backend == "containers":  # there the images are checked when a unit starts
        return

    for v in sorted(versions):
        kafka_home(v, req.kafka_home)


def failed_units(result: RunResult) -> list[dict[str, Any]]:
    """The units of ``result`` that failed (each with its ``failed`` message)."""
    return [u for u in result.units if u.get("failed")]


def analyse(run_dir: Path, spark_master: str | None = None, from_metrics: bool = False) -> MetricsDocument:
    """The metrics document of ``run_dir``: analysed with PySpark (``spark_master``, default local),
    or read back from its ``metrics.json`` with ``from_metrics``."""
    if from_metrics:
        return load_metrics(run_dir)

    return analyze_run(run_dir, spark_master=spark_master)


def render(run_dir: Path, metrics: MetricsDocument) -> dict[str, Path]:
    """Write ``index.html``, ``summary.md`` and ``metrics.json`` into ``run_dir``; their paths by kind."""
    return render_report(run_dir, metrics)


def is_valid(metrics: MetricsDocument) -> bool:
    """Whether the run counts: no record lost, every tail drained, no unit failed, not interrupted."""
    # deferred: start-up: the report tables load only when a run is reported
    from harness.report.tables import verdict_of

    return bool(verdict_of(metrics)["valid"])
