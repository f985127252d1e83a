"""Building the images of the ``containers`` backend (``herdlab images build``).

Contract
--------
:func:`build_images` builds, in order, and times each step:

1. the **base**: with ``offline=True``, ``<prefix>debian:bookworm`` made by
   ``debootstrap --variant=minbase bookworm`` into a temporary directory and ``docker import``
   (no image registry involved; reused when it exists unless ``rebuild_base``); otherwise the public
   ``debian:bookworm-slim``, pulled by the engine;
2. ``<prefix>zookeeper:<version>`` and 3. ``<prefix>herdlab:<version>`` from
   ``harness/images/Dockerfile`` (targets ``zookeeper`` and ``herdlab``; they share the ``runtime``
   stage: Debian's ``openjdk-17-jre-headless`` and ``python3``), with ``--network host`` so that
   apt inside the build reaches Debian's mirror;
4. with ``kafka_versions``: the ``runtime`` stage tagged ``<prefix>runtime:<version>`` (its layers are
   cached by then), and for each version ``<prefix>kafka:<exact version>`` from ``Dockerfile.kafka``: the
   jars :func:`harness.cluster.kafka_dist.fetch` put in herdlab's cache (fetched then if missing) copied
   onto it, labelled ``herdlab.kafka.version``.

The build context is assembled in a temporary directory: the Dockerfile, the ZooKeeper jars of the
installed pyspark wheel (:func:`harness.cluster.java.zookeeper_classpath`, the jars the local backend
runs), the wheels of :func:`runtime_requirements` fetched by the host's pip (its index, proxy and CA
settings apply; pip inside the build needs no network) and herdlab's wheel built from the checkout's
sources. Failures raise
:class:`~harness.kernel.errors.EnvironmentProblem` with one line (and the path of the full build log).
"""

from __future__ import annotations

import os
import platform
import re
import shutil
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from importlib.metadata import PackageNotFoundError, distribution
from pathlib import Path
from typing import Any

from harness.cluster.java import zookeeper_classpath, zookeeper_version
from harness.cluster.kafka_dist import fetch
from harness.images import (
    DEFAULT_PREFIX,
    LABEL_KAFKA_VERSION,
    LABEL_SOURCE,
    LABEL_ZOOKEEPER_VERSION,
    ImageNames,
    docker_client,
    image_labels,
    image_names,
    source_digest,
    source_files,
    source_root,
)
from harness.kernel.errors import EnvironmentProblem

HERE = Path(__file__).resolve().parent
ONLINE_BASE = "debian:bookworm-slim"
DEBIAN_MIRROR = "http://deb.debian.org/debian"
#: Left out of the herdlab image: the broker and the members never import them (analysis, plots and
#: the Docker client run on the host), and pyspark alone is several hundred MB.
EXCLUDED = frozenset({"pyspark", "matplotlib", "testcontainers", "docker"})
#: The image runs Debian bookworm's Python; dependency markers are evaluated for it.
IMAGE_PYTHON = {"python_version": "3.11", "python_full_version": "3.11.2", "sys_platform": "linux"}


@dataclass
class BuildResult:
    """What was built: image references, seconds per step and image sizes in bytes."""

    names: ImageNames
    base: str
    seconds: dict[str, float] = field(default_factory=dict)
    sizes: dict[str, int] = field(default_factory=dict)
    reused_base: bool = False
    log_path: Path | None = None
    kafka: list[str] = field(default_factory=list[str])


def _key(name: str) -> str:
    return re.sub(r"[-_.]+", "-", name).lower()


def runtime_requirements() -> list[str]:
    """``name==version`` lines: herdlab's runtime dependency closure minus :data:`EXCLUDED`.

    Versions are those installed here, so the containers run what the local backend runs.
    """
    try:
        from packaging.requirements import Requirement
    except ImportError:
        raise EnvironmentProblem(
            "the Python package 'packaging' is missing (pip install packaging)"
        ) from None
    try:
        herdlab = distribution("herdlab")
    except PackageNotFoundError:
        raise EnvironmentProblem("herdlab is not installed (pip install -e .)") from None
    env = {**IMAGE_PYTHON, "extra": ""}
    roots = [Requirement(r) for r in herdlab.requires or []]
    stack = [r.name for r in roots if not r.marker or r.marker.evaluate(env)]
    pins: dict[str, str] = {}
    while stack:
        name = stack.pop()
        key = _key(name)
        if key in pins or key in EXCLUDED:
            continue
        try:
            d = distribution(name)
        except PackageNotFoundError:
            raise EnvironmentProblem(f"{name} (a dependency of herdlab) is not installed here") from None
        pins[key] = d.version
        for r in d.requires or []:
            req = Requirement(r)
            if req.marker is None or req.marker.evaluate(env):
                stack.append(req.name)
    return [f"{k}=={v}" for k, v in sorted(pins.items())]


def _pip(args: list[str], log: Path, what: str) -> None:
    """Run this environment's pip (with the host's pip configuration: index, proxy, CA)."""
    with open(log, "ab") as out:
        rc = subprocess.run(
            [sys.executable, "-m", "pip", *args, "--disable-pip-version-check"],
            stdout=out,
            stderr=subprocess.STDOUT,
            check=False,
        ).returncode
    if rc != 0:
        raise EnvironmentProblem(f"{what} failed with status {rc} (log: {log})")


def _wheels(dest: Path, src: Path, log: Path) -> None:
    """Fetch the wheels of :func:`runtime_requirements` into ``dest/deps`` and build herdlab's wheel
    from ``src`` into ``dest/herdlab-wheel``, on the host: pip in the image then needs no network."""
    deps = dest / "deps"
    deps.mkdir()
    reqs = deps / "requirements.txt"
    reqs.write_text("\n".join(runtime_requirements()) + "\n")
    if sys.version_info[:2] == (3, 11):
        # Same Python as the image's: `pip wheel` also turns any sdist-only dependency into a wheel.
        _pip(["wheel", "--quiet", "-w", str(deps), "-r", str(reqs)], log, "fetching the dependency wheels")
    else:
        machine = platform.machine()
        plats = [f"manylinux_2_{v}_{machine}" for v in (36, 34, 28, 17)] + [f"manylinux2014_{machine}"]
        _pip(
            [
                "download",
                "--quiet",
                "--only-binary=:all:",
                "--python-version",
                "3.11",
                "--implementation",
                "cp",
            ]
            + [a for p in plats for a in ("--platform", p)]
            + ["-d", str(deps), "-r", str(reqs)],
            log,
            "fetching the dependency wheels for Python 3.11",
        )
    (dest / "herdlab-wheel").mkdir()
    _pip(
        ["wheel", "--quiet", "--no-deps", "-w", str(dest / "herdlab-wheel"), str(src)],
        log,
        "building herdlab's wheel",
    )


def _context(dest: Path, log: Path) -> str:
    """Fill ``dest`` with the build context; returns the ZooKeeper version of the jars."""
    shutil.copy(HERE / "Dockerfile", dest / "Dockerfile")
    shutil.copy(HERE / "herdlab-zookeeper", dest / "herdlab-zookeeper")
    jars = zookeeper_classpath()
    (dest / "zookeeper-lib").mkdir()
    for j in jars:
        shutil.copy(j, dest / "zookeeper-lib" / j.name)
    root = source_root()
    with tempfile.TemporaryDirectory(prefix="herdlab-src-") as d:
        src = Path(d)
        for rel in source_files(root):
            target = src / rel
            target.parent.mkdir(parents=True, exist_ok=True)
            shutil.copy(root / rel, target)
        _wheels(dest, src, log)
    return zookeeper_version(jars)


def _debootstrap_base(client: Any, ref: str, mirror: str, log: Path, say: Callable[[str], None]) -> None:
    """Make ``ref`` from ``debootstrap --variant=minbase bookworm`` and ``docker import``."""
    exe = shutil.which("debootstrap")
    if exe is None:
        raise EnvironmentProblem(
            "debootstrap is not installed: --offline builds the Debian base with it "
            "(apt-get install debootstrap), or build without --offline where a registry is reachable"
        )
    if os.geteuid() != 0:
        raise EnvironmentProblem("debootstrap needs root: run `herdlab images build --offline` as root")
    work = Path(tempfile.mkdtemp(prefix="herdlab-rootfs-", dir="/var/tmp"))
    try:
        rootfs = work / "rootfs"
        say(f"debootstrap --variant=minbase bookworm ({mirror}) ...")
        with open(log, "ab") as out:
            rc = subprocess.run(
                [exe, "--variant=minbase", "bookworm", str(rootfs), mirror],
                stdout=out,
                stderr=subprocess.STDOUT,
                check=False,
            ).returncode
        if rc != 0:
            raise EnvironmentProblem(f"debootstrap failed with status {rc}; log: {log}")
        # The same suites a debian:bookworm-slim image lists (updates and security fixes).
        (rootfs / "etc/apt/sources.list").write_text(
            f"deb {mirror} bookworm main\n"
            f"deb {mirror} bookworm-updates main\n"
            f"deb {mirror.rsplit('/debian', 1)[0]}/debian-security bookworm-security main\n"
        )
        shutil.rmtree(rootfs / "var/cache/apt/archives", ignore_errors=True)
        (rootfs / "var/cache/apt/archives/partial").mkdir(parents=True, exist_ok=True)
        tar = work / "rootfs.tar"
        subprocess.run(["tar", "--numeric-owner", "-C", str(rootfs), "-cf", str(tar), "."], check=True)
        say(f"docker import -> {ref}")
        repo, _, tag = ref.rpartition(":")
        client.api.import_image_from_file(
            str(tar),
            repository=repo,
            tag=tag,
            changes=[
                "ENV PATH=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin",
                'CMD ["/bin/bash"]',
            ],
        )
    finally:
        shutil.rmtree(work, ignore_errors=True)


def _docker_build(
    client: Any,
    ctx: Path,
    target: str | None,
    tag: str,
    base: str,
    labels: dict[str, str],
    log: Path,
    buildargs: dict[str, str] | None = None,
) -> None:
    """``docker build --network host [--target TARGET] -t TAG --build-arg BASE=...`` of ``ctx``
    (``buildargs`` instead of ``BASE`` when given)."""
    with open(log, "a", encoding="utf-8") as out:
        out.write(f"\n===== {target or 'Dockerfile'} -> {tag} (BASE={base})\n")
        stream = client.api.build(
            path=str(ctx),
            dockerfile="Dockerfile",
            tag=tag,
            target=target,
            buildargs=buildargs or {"BASE": base},
            labels=labels,
            network_mode="host",
            rm=True,
            forcerm=True,
            decode=True,
        )
        error = None
        for chunk in stream:
            if "stream" in chunk:
                out.write(chunk["stream"])
            elif "status" in chunk:
                out.write(f"{chunk['status']} {chunk.get('progress', '')}\n")
            if "error" in chunk:
                error = chunk["error"].strip()
                out.write(f"ERROR: {error}\n")
        if error:
            raise EnvironmentProblem(f"building {tag} failed: {error.splitlines()[-1][:300]} (log: {log})")


def build_images(
    offline: bool,
    prefix: str = DEFAULT_PREFIX,
    mirror: str = DEBIAN_MIRROR,
    rebuild_base: bool = False,
    log_path: Path | None = None,
    say: Callable[[str], None] = print,
    kafka_versions: Sequence[str] = (),
) -> BuildResult:
    """Build the base (offline), both images and the Kafka image of each of ``kafka_versions`` (see the
    module contract); returns timings."""
    names = image_names(prefix)
    client = docker_client()
    log = log_path or Path(tempfile.gettempdir()) / "herdlab-images-build.log"
    log.parent.mkdir(parents=True, exist_ok=True)
    log.write_text("")
    result = BuildResult(names=names, base=names.base if offline else ONLINE_BASE, log_path=log)
    t = time.monotonic()
    if offline:
        if image_labels(client, names.base) is not None and not rebuild_base:
            result.reused_base = True
            say(f"base {names.base} exists (reused; --rebuild-base makes it again)")
        else:
            _debootstrap_base(client, names.base, mirror, log, say)
    result.seconds["base"] = time.monotonic() - t
    with tempfile.TemporaryDirectory(prefix="herdlab-build-") as d:
        ctx = Path(d)
        say("fetching wheels and building herdlab's wheel (host pip) ...")
        t = time.monotonic()
        zk_version = _context(ctx, log)
        result.seconds["wheels"] = time.monotonic() - t
        zk_labels = {LABEL_ZOOKEEPER_VERSION: zk_version}
        labels = {"zookeeper": zk_labels, "herdlab": {**zk_labels, LABEL_SOURCE: source_digest()}}
        for target, tag in (("zookeeper", names.zookeeper), ("herdlab", names.herdlab)):
            say(f"building {tag} (FROM {result.base}) ...")
            t = time.monotonic()
            old = _image_id(client, tag)
            _docker_build(client, ctx, target, tag, result.base, labels[target], log)
            result.seconds[target] = time.monotonic() - t
            result.sizes[target] = int(client.images.get(tag).attrs.get("Size") or 0)
            if old is not None and old != _image_id(client, tag):
                _remove_if_untagged(client, old)
        if kafka_versions:
            _docker_build(client, ctx, "runtime", names.runtime, result.base, {}, log)  # cached layers
    for v in kafka_versions:
        _build_kafka(client, names, v, result, log, say)
    return result


def _build_kafka(
    client: Any, names: ImageNames, version: str, result: BuildResult, log: Path, say: Callable[[str], None]
) -> None:
    """``<prefix>kafka:<version>`` from ``Dockerfile.kafka``: the fetched jars of ``version`` (fetched now
    when the cache does not hold them) on the runtime stage."""
    home = fetch(version)
    tag = names.kafka(home.version)
    say(f"building {tag} (Apache Kafka {home.version} on {names.runtime}) ...")
    t = time.monotonic()
    with tempfile.TemporaryDirectory(prefix="herdlab-build-kafka-") as d:
        ctx = Path(d)
        shutil.copy(HERE / "Dockerfile.kafka", ctx / "Dockerfile")
        shutil.copytree(home.libs, ctx / "libs")
        old = _image_id(client, tag)
        _docker_build(
            client,
            ctx,
            None,
            tag,
            names.runtime,
            {LABEL_KAFKA_VERSION: home.version},
            log,
            {"RUNTIME": names.runtime, "KAFKA_VERSION": home.version},
        )
        if old is not None and old != _image_id(client, tag):
            _remove_if_untagged(client, old)
    result.seconds[tag] = time.monotonic() - t
    result.sizes[tag] = int(client.images.get(tag).attrs.get("Size") or 0)
    result.kafka.append(tag)


def _image_id(client: Any, ref: str) -> str | None:
    labels = image_labels(client, ref)
    return None if labels is None else str(client.images.get(ref).id)


def _remove_if_untagged(client: Any, image_id: str) -> None:
    """Remove the image a rebuild replaced, unless something still uses or names it."""
    import docker.errors

    try:
        if not client.images.get(image_id).tags:
            client.images.remove(image_id, noprune=False)
    except docker.errors.APIError:
        pass  # in use by a container, or a parent of another image: leave it
