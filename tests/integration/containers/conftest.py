"""Fixtures for the containers backend tests (marked ``containers``).

* ``engine``: a connected Docker client; the test is **skipped** with the reason when no engine is
  reachable or the images are missing (build them with ``herdlab images build --offline``). The
  default test command therefore skips these tests on a machine without Docker.
* ``images``: the image names the tests use (``HERDLAB_TEST_IMAGE_PREFIX``, default ``herdlab/``).
* ``baseline``: the engine's containers of ours, networks and volumes before the test; after the
  test, every container labelled ``herdlab`` must be gone and the network and volume lists must be
  what they were (nothing of ours remains).
* ``kafka_stub``: an image that stands in for Apache Kafka (cp-kafka's ``KAFKA_*`` interface in
  front of the herdlab broker), built once per session from the herdlab image and removed after.
"""

from __future__ import annotations

import os
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from harness.images import ImageNames, docker_client, image_labels, image_names
from harness.kernel.errors import EnvironmentProblem

STUB_DIR = Path(__file__).parent / "kafka_stub"
IMAGE_PREFIX = os.environ.get("HERDLAB_TEST_IMAGE_PREFIX", "herdlab/")


@pytest.fixture(scope="session")
def images() -> ImageNames:
    return image_names(IMAGE_PREFIX)


@pytest.fixture(scope="session")
def engine(images: ImageNames) -> Any:
    try:
        client = docker_client(timeout=60)
    except EnvironmentProblem as e:
        pytest.skip(f"containers tests need a Docker engine: {e}")
    missing = [ref for ref in (images.zookeeper, images.herdlab) if image_labels(client, ref) is None]
    if missing:
        pytest.skip(f"images {', '.join(missing)} not built: run `herdlab images build --offline`")
    return client


def _state(client: Any) -> tuple[set[str], set[str], set[str]]:
    containers = {
        c.name for c in client.containers.list(all=True, ignore_removed=True, filters={"label": "herdlab"})
    }
    networks = {n.name for n in client.networks.list()}
    volumes = {v.name for v in client.volumes.list()}
    return containers, networks, volumes


def assert_nothing_left(client: Any, before: tuple[set[str], set[str], set[str]]) -> None:
    """No container labelled ``herdlab`` beyond ``before``; networks and volumes as they were."""
    containers, networks, volumes = _state(client)
    assert containers <= before[0], f"containers left behind: {sorted(containers - before[0])}"
    assert networks == before[1], f"networks changed: {sorted(networks ^ before[1])}"
    assert volumes == before[2], f"volumes changed: {sorted(volumes ^ before[2])}"


@pytest.fixture
def baseline(engine: Any) -> Iterator[tuple[set[str], set[str], set[str]]]:
    before = _state(engine)
    yield before
    assert_nothing_left(engine, before)


@pytest.fixture(scope="session")
def kafka_stub(engine: Any, images: ImageNames) -> Iterator[str]:
    tag = f"herdlab-test/kafka-stub:{images.herdlab.rpartition(':')[2]}"
    engine.images.build(
        path=str(STUB_DIR),
        tag=tag,
        buildargs={"HERDLAB_IMAGE": images.herdlab},
        network_mode="none",
        rm=True,
        forcerm=True,
    )
    yield tag
    engine.images.remove(tag, force=True)
