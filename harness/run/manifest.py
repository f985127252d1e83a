"""A run's manifest: what ran, with what, where — written beside the history.

``manifest.json`` holds the scenario (as validated), the case parameters, repetitions and seed, the
versions of herdlab, kafka-python, kazoo, kio, pyspark and ZooKeeper, the git commit of the checkout
(if any), and the machine (platform, CPUs, memory, Python and Java versions).

``drawn_timeline`` lists the timeline entries a ``[[nemesis]] kind = "random"`` schedule drew
(empty without one), and ``replay_scenario`` is the scenario as run, its random schedules drawn and
merged into the timeline (:func:`harness.scenario.random_nemesis.replay_data`): :func:`replay_scenario`
reads it back and ``herdlab run --replay RUN_DIR`` runs it again, the same steps on the same members.
"""

from __future__ import annotations

import json
import os
import platform
import subprocess
from importlib import metadata
from pathlib import Path
from typing import Any, cast

import psutil

from harness.cluster.java import java_executable, java_version, zookeeper_classpath, zookeeper_version
from harness.kernel.errors import ConfigError, HerdlabError


def _version(dist: str) -> str | None:
    try:
        return metadata.version(dist)
    except metadata.PackageNotFoundError:
        return None


def git_commit(cwd: str | os.PathLike[str] | None = None) -> str | None:
    """The commit of the checkout herdlab runs from (with ``-dirty`` when modified), or None."""
    here = Path(cwd) if cwd else Path(__file__).resolve().parent
    try:
        commit = subprocess.run(
            ["git", "rev-parse", "HEAD"], cwd=here, capture_output=True, text=True, timeout=10, check=True
        ).stdout.strip()
        dirty = subprocess.run(
            ["git", "status", "--porcelain", "--untracked-files=no"],
            cwd=here,
            capture_output=True,
            text=True,
            timeout=10,
        ).stdout.strip()
    except (OSError, subprocess.SubprocessError):
        return None
    return commit + ("-dirty" if dirty else "")


def versions() -> dict[str, str | None]:
    """Versions of the parts a result depends on."""
    out: dict[str, str | None] = {
        d: _version(d) for d in ("herdlab", "kafka-python", "kazoo", "kio", "pyspark", "pyarrow")
    }
    try:
        out["zookeeper"] = zookeeper_version(zookeeper_classpath())
    except HerdlabError:
        out["zookeeper"] = None
    return out


def machine() -> dict[str, Any]:
    """The machine: platform, CPUs, memory, Python and Java."""
    try:
        java = str(java_version(java_executable()))
    except HerdlabError:
        java = None
    return {
        "platform": platform.platform(),
        "cpus": os.cpu_count(),
        "memory_bytes": psutil.virtual_memory().total,
        "python": platform.python_version(),
        "java": java,
        "hostname": platform.node(),
    }


def write_manifest(path: str | os.PathLike[str], **fields: Any) -> dict[str, Any]:
    """Write ``manifest.json`` with ``fields`` plus versions, git commit and machine; returns it."""
    manifest = dict(fields)
    manifest.setdefault("versions", versions())
    manifest.setdefault("git_commit", git_commit())
    manifest.setdefault("machine", machine())
    p = Path(path)
    p.parent.mkdir(parents=True, exist_ok=True)
    p.write_text(json.dumps(manifest, indent=2, default=str) + "\n")
    return manifest


def replay_scenario(run_dir: str | os.PathLike[str]) -> dict[str, Any]:
    """The ``replay_scenario`` of ``run_dir``'s ``manifest.json`` (see the module docstring); a
    :class:`~harness.kernel.errors.ConfigError` when there is no manifest or it has none (a run
    recorded by an older herdlab)."""
    path = Path(run_dir) / "manifest.json"
    try:
        manifest = json.loads(path.read_text())
    except OSError:
        raise ConfigError(f"--replay {run_dir}: no manifest.json there (give a run directory)") from None
    except json.JSONDecodeError as e:
        raise ConfigError(f"--replay {run_dir}: manifest.json is not JSON ({e})") from None
    data = manifest.get("replay_scenario")
    if not isinstance(data, dict):
        raise ConfigError(
            f"--replay {run_dir}: manifest.json has no replay_scenario (a run recorded by an older herdlab)"
        )
    return cast(dict[str, Any], data)
