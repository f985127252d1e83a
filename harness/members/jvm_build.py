"""Building a JVM member program into herdlab's cache: the steps the Java member (:mod:`.java_dist`) and Kafka
0.8.2.2's member (:mod:`.legacy08_dist`) share.

Contract
--------
* :func:`common_source`: ``HerdlabIo.java``, what both programs share (JSON lines on stdout, the one-line
  failure, the release-file wait, the stdin reader); each build compiles it beside the program's own source.
* :func:`built`: whether ``dest`` holds a build of ``source`` (its marker file names :func:`digest`, over the
  program's source and :func:`common_source`), so a change to either is built again.
* :func:`tool`: a tool on PATH, or a one-line :class:`ConfigError` naming what to install.
* :func:`building`: a context giving a work directory beside ``dest``; when its block ends without error the
  marker (``version`` and :func:`digest`) is written and the directory moved to ``dest`` whole: an earlier
  build there is moved aside first and removed after; losing a race to a concurrent build of the same
  program (:func:`built` then) is no error. The work directory is removed in any case.
* :func:`compile_program`: ``javac --release 17`` compiles ``source`` and :func:`common_source` into
  ``<work>/classes`` against ``classpath``, as a :func:`harness.kernel.maven.run_tool` step.
* :func:`classpath`: the class path of a build (its ``classes`` and every jar of ``libs``).
"""

from __future__ import annotations

import hashlib
import json
import shutil
import tempfile
from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from importlib import resources
from pathlib import Path

from harness.kernel.errors import ConfigError
from harness.kernel.maven import run_tool


def common_source() -> Path:
    """The source both member programs compile beside their own (shipped as package data)."""
    return Path(str(resources.files("harness.members") / "jvm_common" / "HerdlabIo.java"))


def digest(source: Path) -> str:
    """The SHA-256 of a program's source file and :func:`common_source`, each with its name."""
    h = hashlib.sha256()
    for path in (source, common_source()):
        h.update(path.name.encode() + b"\0" + path.read_bytes() + b"\0")
    return h.hexdigest()


def built(dest: Path, marker: str, source: Path) -> bool:
    """Whether ``dest`` holds a build of ``source`` as it is now."""
    try:
        return json.loads((dest / marker).read_text()).get("source") == digest(source)
    except (OSError, ValueError):
        return False


def tool(name: str, member: str) -> str:
    """``name`` on PATH, needed to build the ``member`` member."""
    found = shutil.which(name)
    if found is None:
        raise ConfigError(f"building the {member} member needs {name} on PATH: install a JDK 17+ and Maven")
    return found


@contextmanager
def building(dest: Path, marker: str, source: Path, version: str) -> Iterator[Path]:
    """A work directory for a build of ``source`` that becomes ``dest`` (see the module contract)."""
    dest.parent.mkdir(parents=True, exist_ok=True)
    work = Path(tempfile.mkdtemp(prefix=f".{dest.name}-", dir=dest.parent))
    try:
        yield work
        (work / marker).write_text(json.dumps({"version": version, "source": digest(source)}))
        old = None
        if dest.exists():  # a build of an earlier program: moved aside, removed below
            old = Path(tempfile.mkdtemp(prefix=f".{dest.name}-old-", dir=dest.parent))
            dest.rename(old / "member")
        try:
            work.rename(dest)
        except OSError:
            if not built(dest, marker, source):  # not a concurrent build of the same program that won
                raise
        if old is not None:
            shutil.rmtree(old, ignore_errors=True)
    finally:
        shutil.rmtree(work, ignore_errors=True)


def compile_program(
    javac: str, work: Path, classpath: str, source: Path, timeout_s: float, flags: Sequence[str] = ()
) -> None:
    """Compile the program with the shared source (see the module contract)."""
    argv = [javac, "--release", "17", "-nowarn", *flags, "-cp", classpath, "-d", str(work / "classes")]
    run_tool([*argv, str(source), str(common_source())], "javac", timeout_s)


def classpath(where: Path) -> str:
    """The class path of the build in ``where``."""
    return f"{where / 'classes'}:{where / 'libs' / '*'}"
