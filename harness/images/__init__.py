"""The container images of the ``containers`` backend: names, the Docker engine, the source digest.

Contract
--------
* Two images run a cluster: ``<prefix>zookeeper:<version>`` (Apache ZooKeeper from the pyspark wheel's
  jars, started by ``herdlab-zookeeper CONF_DIR``) and ``<prefix>herdlab:<version>`` (the broker and
  the members: ``python -m harness.cluster.broker_main ...``, ``python -m harness member ...``). ``<version>`` is the
  herdlab version; the default prefix is ``herdlab/``. :mod:`harness.images.build` builds them, and
  ``<prefix>kafka:<kafka version>`` (Apache Kafka's fetched jars on the shared ``<prefix>runtime`` stage)
  for ``cluster.broker = "apache-kafka"`` on the containers backend.
* :func:`docker_client` returns a connected ``docker.DockerClient`` or raises
  :class:`~harness.kernel.errors.EnvironmentProblem` with one line that says whether Docker is not installed,
  the engine is not running, or the user may not use it.
* :func:`source_digest` is a digest of the herdlab sources; the herdlab image carries it in the label
  ``herdlab.source`` so a run can tell that an image was built from other sources.

Nothing here imports ``docker`` at module level: the herdlab image itself has no Docker SDK.
"""

from __future__ import annotations

import hashlib
import importlib.metadata
import os
import shutil
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from harness.kernel.errors import ConfigError, EnvironmentProblem

DEFAULT_PREFIX = "herdlab/"
#: Label keys put on images by the build.
LABEL_SOURCE = "herdlab.source"
LABEL_ZOOKEEPER_VERSION = "herdlab.zookeeper.version"
LABEL_KAFKA_VERSION = "herdlab.kafka.version"
#: The packages that hold herdlab's code (copied into the herdlab image).
PACKAGES = ("legacy_zk", "coordinator", "harness")


def herdlab_version() -> str:
    """The installed herdlab version (``0.1.0``), the tag of the images."""
    try:
        return importlib.metadata.version("herdlab")
    except importlib.metadata.PackageNotFoundError:
        return "dev"


@dataclass(frozen=True)
class ImageNames:
    """The image references of one prefix: the imported Debian base and the two runtime images."""

    base: str
    zookeeper: str
    herdlab: str
    #: the shared Java + Python stage the others start from (the Kafka images are built on it)
    runtime: str = f"{DEFAULT_PREFIX}runtime:dev"
    kafka_repository: str = f"{DEFAULT_PREFIX}kafka"

    def kafka(self, version: str) -> str:
        """The image of Apache Kafka ``version`` (exact): ``herdlab/kafka:3.9.2``."""
        return f"{self.kafka_repository}:{version}"


def image_names(prefix: str = DEFAULT_PREFIX) -> ImageNames:
    """Image references for ``prefix`` (``herdlab/`` -> ``herdlab/zookeeper:0.1.0`` ...)."""
    if prefix and not prefix.endswith(("/", "-", "_")):
        raise ConfigError(f"--tag-prefix {prefix!r} must end with '/', '-' or '_' (e.g. 'herdlab/')")
    v = herdlab_version()
    return ImageNames(
        base=f"{prefix}debian:bookworm",
        zookeeper=f"{prefix}zookeeper:{v}",
        herdlab=f"{prefix}herdlab:{v}",
        runtime=f"{prefix}runtime:{v}",
        kafka_repository=f"{prefix}kafka",
    )


def _docker_host() -> str:
    return os.environ.get("DOCKER_HOST") or "unix:///var/run/docker.sock"


def docker_client(timeout: float = 120.0) -> Any:
    """A ``docker.DockerClient`` that answered a ping (see the module contract for the errors)."""
    try:
        import docker
        import docker.errors
    except ImportError:
        raise EnvironmentProblem(
            "the Python package 'docker' is missing (pip install docker): the containers backend needs it"
        ) from None
    host = _docker_host()
    try:
        client = docker.from_env(timeout=int(timeout))
        client.ping()
        return client
    except docker.errors.DockerException as e:
        text = str(e)
    except Exception as e:  # requests' connection errors, depending on the transport
        text = f"{type(e).__name__}: {e}"
    socket_path = host[len("unix://") :] if host.startswith("unix://") else None
    installed = shutil.which("dockerd") or shutil.which("docker")
    if socket_path and not Path(socket_path).exists() and not installed:
        raise EnvironmentProblem(
            "Docker is not installed (no docker or dockerd on PATH, no engine socket at "
            f"{socket_path}): install it, e.g. `apt-get install docker.io`, or use --backend local"
        )
    if "ermission denied" in text:
        raise EnvironmentProblem(
            f"no permission to use the Docker engine at {host}: run as root or join the docker group"
        )
    raise EnvironmentProblem(
        f"the Docker engine is not running (no answer at {host}): start it, e.g. as root "
        "`dockerd --bridge=none --iptables=false &`, or use --backend local"
    )


def image_labels(client: Any, ref: str) -> dict[str, str] | None:
    """The labels of image ``ref`` in the engine, or None when the engine does not have it."""
    import docker.errors

    try:
        img = client.images.get(ref)
    except docker.errors.ImageNotFound:
        return None
    return dict((img.attrs.get("Config") or {}).get("Labels") or {})


def source_root() -> Path:
    """The checkout herdlab runs from (the directory with ``pyproject.toml`` and the packages)."""
    root = Path(__file__).resolve().parent.parent.parent
    if not (root / "pyproject.toml").is_file() or not all((root / p).is_dir() for p in PACKAGES):
        raise EnvironmentProblem(
            f"herdlab's sources are not beside its code ({root}): build images from a checkout "
            "(pip install -e .)"
        )
    return root


def source_files(root: Path) -> list[Path]:
    """The files the herdlab image is built from (relative to ``root``), sorted."""
    files = [Path("pyproject.toml"), Path("README.md")]
    for pkg in PACKAGES:
        for p in sorted((root / pkg).rglob("*")):
            if p.is_file() and "__pycache__" not in p.parts and p.suffix not in (".pyc", ".pyo"):
                files.append(p.relative_to(root))
    return [f for f in files if (root / f).is_file()]


def source_digest(root: Path | None = None) -> str:
    """A sha256 (first 16 hex digits) over the herdlab source files' paths and contents."""
    root = root or source_root()
    h = hashlib.sha256()
    for rel in source_files(root):
        h.update(str(rel).encode() + b"\0")
        h.update((root / rel).read_bytes())
        h.update(b"\0")
    return h.hexdigest()[:16]
