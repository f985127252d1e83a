"""The Go clients' members (kafka-go, franz-go): small Go programs of herdlab's, built with ``go build`` from
the Go module proxy into herdlab's cache.

Contract
--------
* :data:`GO_CLIENTS`: client name -> the pinned version of its Go module (one version each). A client's
  program is ``harness/members/go/<program>/`` (:data:`harness.scenario.properties.GO_PROGRAMS`), its own
  Go module with a committed ``go.sum``, plus the ``common`` module beside it (the child protocol, shared
  through a ``replace`` directive).
* :func:`build`: ``go build`` of the client's program into ``<cache>/go-member/<client>-<version>/member``,
  with the program's option table beside it (``options.json``: the program's ``--options``); the
  directory appears whole or not at all (built beside it, renamed). Idempotent: a member built from the
  same sources (:func:`sources_digest`, kept in its marker) is not built again; one built from other
  sources is rebuilt and replaced. The build downloads the pinned modules through the module proxy (``GOPROXY``, the Go
  default unless the user set one) into Go's module cache and checks them against ``go.sum``
  (``-mod=readonly``; ``GOTOOLCHAIN=local``: the Go on PATH builds or says why not, no other toolchain is
  fetched; ``GOWORK=off``; ``CGO_ENABLED=0``). ``GOCACHE``/``GOMODCACHE`` are Go's own unless they
  cannot be had (no home directory): then under the cache's ``go-member``. A build that fails (no
  proxy, no toolchain, a compile error) is a one-line :class:`ConfigError` with go's last error line.
  ``progress`` gets one line before the build (which takes tens of seconds on a cold module cache).
* :func:`missing`: None when the client is built or can be built here; else a short sentence saying what
  is missing (no ``go`` on PATH, or a Go older than the program's ``go.mod`` needs). No network probe.
* :func:`command`: the start of a member's command line (the built program); ConfigError saying how to
  build it when it is not built, ValueError naming a property the client cannot take
  (:func:`harness.scenario.properties.go_options`) or a static member of a client without static
  membership (kafka-go).
"""

from __future__ import annotations

import hashlib
import json
import os
import re
import shutil
import subprocess
import tempfile
import time
from collections.abc import Callable
from pathlib import Path

from harness.kernel.cache import cache_dir
from harness.kernel.errors import ConfigError
from harness.members.recorder import MemberConfig
from harness.scenario.properties import GO_PROGRAMS, STATIC_MEMBERSHIP, go_options

#: client -> the pinned version of its Go module (github.com/segmentio/kafka-go, github.com/twmb/franz-go)
GO_CLIENTS = {"kafka-go": "0.4.51", "franz-go": "1.22.3"}
SOURCES = Path(__file__).resolve().parent / "go"
MARKER = "herdlab-go-member.json"
PROGRAM = "member"


def cache_root() -> Path:
    """Where built Go members live: ``<cache>/go-member``."""
    return cache_dir() / "go-member"


def resolve_version(client: str, version: str | None) -> str:
    """The pinned version of ``client``; ``version`` may be None or that version (with or without ``v``)."""
    if client not in GO_CLIENTS:
        raise ConfigError(f"{client!r} is not a Go client (the Go clients: {', '.join(GO_CLIENTS)})")
    pinned = GO_CLIENTS[client]
    if version is not None and version.strip().removeprefix("v") != pinned:
        raise ConfigError(f"{client}: herdlab builds version {pinned} only, not {version!r}")
    return pinned


def build_dir(client: str, version: str | None = None) -> Path:
    """The directory of ``client``'s built member."""
    return cache_root() / f"{client}-{resolve_version(client, version)}"


def sources_digest(client: str) -> str:
    """A digest of the sources ``client``'s member is built from (its program and the common module, their
    ``_test.go`` files aside): a build is current only while they are unchanged."""
    h = hashlib.sha256()
    for directory in (SOURCES / GO_PROGRAMS[client], SOURCES / "common"):
        for f in sorted(directory.iterdir()):
            if f.suffix in (".go", ".mod", ".sum", ".json") and not f.name.endswith("_test.go"):
                h.update(f.name.encode() + b"\0" + f.read_bytes() + b"\0")
    return h.hexdigest()[:16]


def built(client: str, version: str | None = None) -> bool:
    """Whether ``client``'s member is built from the current sources."""
    try:
        marker = json.loads((build_dir(client, version) / MARKER).read_text())
    except (OSError, ValueError):
        return False
    return marker.get("sources") == sources_digest(client)


def _required_go(client: str) -> tuple[int, int]:
    """The Go release the program's go.mod needs (its ``go`` line), as (major, minor)."""
    text = (SOURCES / GO_PROGRAMS[client] / "go.mod").read_text()
    m = re.search(r"^go (\d+)\.(\d+)", text, re.MULTILINE)
    return (int(m.group(1)), int(m.group(2))) if m else (1, 22)


def _go_version(go: str) -> tuple[int, int] | None:
    try:
        out = subprocess.run(
            [go, "env", "GOVERSION"], capture_output=True, text=True, timeout=30, check=False
        )
    except (OSError, subprocess.TimeoutExpired):
        return None
    m = re.match(r"go(\d+)\.(\d+)", out.stdout.strip())
    return (int(m.group(1)), int(m.group(2))) if m else None


def missing(client: str, version: str | None) -> str | None:
    """What is missing to run or build ``client`` here (see the module contract), or None."""
    v = resolve_version(client, version)
    if built(client, v):
        return None
    need = "{}.{}".format(*_required_go(client))
    go = shutil.which("go")
    if go is None:
        return f"go not found on PATH: install Go {need} or newer to build the {client} member"
    have = _go_version(go)
    if have is not None and have < _required_go(client):
        return f"the {client} member needs Go {need} or newer; {go} is go{have[0]}.{have[1]}"
    return None


def go_env() -> dict[str, str]:
    """The environment ``go`` runs in for a build (and for the programs' own ``go test``): see the module
    contract."""
    env = dict(os.environ)
    env.update({"GOTOOLCHAIN": "local", "GOWORK": "off", "CGO_ENABLED": "0"})
    env["GOFLAGS"] = "-mod=readonly -buildvcs=false"
    home = env.get("HOME")
    if not env.get("GOCACHE") and not env.get("XDG_CACHE_HOME") and not home:
        env["GOCACHE"] = str(cache_root() / "go-build")
    if not env.get("GOMODCACHE") and not env.get("GOPATH") and not home:
        env["GOMODCACHE"] = str(cache_root() / "go-mod")
    return env


def go_error(output: str) -> str:
    """go's most telling line of a failed command: its last line that is not blank."""
    lines = [line.strip() for line in output.splitlines() if line.strip()]
    return lines[-1] if lines else "no output"


def build(
    client: str,
    version: str | None = None,
    *,
    progress: Callable[[str], None] | None = None,
    timeout_s: float = 900.0,
) -> Path:
    """Build ``client``'s member (see the module contract); its directory."""
    v = resolve_version(client, version)
    dest = build_dir(client, v)
    if built(client, v):
        return dest
    why = missing(client, v)
    if why is not None:
        raise ConfigError(why)
    go = shutil.which("go")
    assert go is not None  # missing() said so
    dest.parent.mkdir(parents=True, exist_ok=True)
    work = Path(tempfile.mkdtemp(prefix=f".{client}-{v}-", dir=dest.parent))
    env = go_env()
    try:
        if progress is not None:
            progress(f"building the {client} {v} member with go build (modules from the Go module proxy)")
        t0 = time.monotonic()
        argv = [go, "build", "-trimpath", "-o", str(work / PROGRAM), "."]
        try:
            done = subprocess.run(
                argv,
                cwd=SOURCES / GO_PROGRAMS[client],
                env=env,
                capture_output=True,
                text=True,
                timeout=timeout_s,
                check=False,
            )
        except subprocess.TimeoutExpired:
            raise ConfigError(
                f"go build of the {client} member did not finish within {timeout_s:g} s"
            ) from None
        if done.returncode != 0:
            raise ConfigError(
                f"go build of the {client} member failed: {go_error(done.stderr + done.stdout)}"
            )
        seconds = time.monotonic() - t0
        options = subprocess.run(
            [str(work / PROGRAM), "--options"], capture_output=True, text=True, timeout=60, check=True
        ).stdout
        (work / "options.json").write_text(options)
        marker = {"client": client, "version": v, "sources": sources_digest(client), "go": _go_version(go)}
        (work / MARKER).write_text(json.dumps({**marker, "build_s": round(seconds, 1)}))
        if dest.exists():  # a build of older sources: set aside, replaced whole
            stale = Path(tempfile.mkdtemp(prefix=f".{client}-{v}-stale-", dir=dest.parent))
            dest.rename(stale / "old")
            shutil.rmtree(stale, ignore_errors=True)
        try:
            work.rename(dest)
        except OSError:
            if not built(client, v):  # not a concurrent build of the same sources that won
                raise
    finally:
        shutil.rmtree(work, ignore_errors=True)
    return dest


def command(config: MemberConfig) -> list[str]:
    """The start of the command line of a member of ``config.client`` (see the module contract)."""
    go_options(config.client, config.properties)
    if config.group_instance_id is not None and config.client not in STATIC_MEMBERSHIP:
        raise ValueError(f"client {config.client!r} has no static membership (group.instance.id)")
    path = build_dir(config.client, config.client_version)
    if not built(config.client, config.client_version):
        raise ConfigError(
            f"the {config.client} member is not built (or was built from other sources): run `herdlab clients build {config.client}` "
            "(needs Go and the Go module proxy)"
        )
    return [str(path / PROGRAM)]
