"""The baseline store: named copies of what ``herdlab compare`` needs from a run.

Contract
--------
* The store is a directory: ``--store DIR``, else the environment variable ``HERDLAB_BASELINES``,
  else ``reports/baselines`` (relative to the working directory) (:func:`store_dir`).
* A baseline ``NAME`` is the directory ``STORE/NAME/`` holding ``metrics.json`` (required),
  ``manifest.json`` (when the run has one) and ``baseline.json`` (name, saved time in UTC, the
  source run directory, scenario, run id, repetitions, git commit). The history is not copied.
* A name is letters, digits, ``.``, ``_`` and ``-``, not starting with ``.``, at most 100 characters
  (no slash: one directory level) (:func:`check_name`).
* :func:`save` copies a run directory's files (ConfigError when it has no ``metrics.json``: run
  ``herdlab report`` first; when NAME exists, unless ``replace``); :func:`names` lists the store;
  :func:`info` reads one baseline's ``baseline.json``; :func:`metrics_path` is its metrics file;
  :func:`delete` removes it. Every user error is a one-line :class:`ConfigError`.
"""

from __future__ import annotations

import json
import os
import re
import shutil
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from harness.kernel.errors import ConfigError

ENV = "HERDLAB_BASELINES"
DEFAULT_STORE = Path("reports") / "baselines"
INFO = "baseline.json"
COPIED = ("metrics.json", "manifest.json")
_NAME = re.compile(r"^[A-Za-z0-9_-][A-Za-z0-9._-]{0,99}$")


def store_dir(store: str | Path | None = None) -> Path:
    """The store directory: ``store``, else ``$HERDLAB_BASELINES``, else ``reports/baselines``."""
    if store is not None:
        return Path(store)
    env = os.environ.get(ENV)
    return Path(env) if env else DEFAULT_STORE


def check_name(name: str) -> str:
    """``name`` if it is a valid baseline name, else ConfigError."""
    if "/" in name or "\\" in name:
        raise ConfigError(f"baseline name {name!r}: no slashes (a name, not a path)")
    if not _NAME.match(name):
        raise ConfigError(
            f"baseline name {name!r}: use letters, digits, '.', '_' and '-' (not starting with '.'), "
            "at most 100 characters"
        )
    return name


def _dir(name: str, store: str | Path | None) -> Path:
    return store_dir(store) / check_name(name)


def exists(name: str, store: str | Path | None = None) -> bool:
    """Whether a valid ``name`` is a baseline of the store (False for an invalid name)."""
    try:
        return (_dir(name, store) / "metrics.json").is_file()
    except ConfigError:
        return False


def _unknown(name: str, store: str | Path | None) -> ConfigError:
    return ConfigError(f"unknown baseline {name!r} in {store_dir(store)} (see `herdlab baseline list`)")


def save(name: str, run_dir: str | Path, store: str | Path | None = None, replace: bool = False) -> Path:
    """Copy ``run_dir``'s metrics.json (and manifest.json) into the store as ``name``; its directory."""
    d = _dir(name, store)
    src = Path(run_dir)
    if not src.is_dir():
        raise ConfigError(f"{src} is not a run directory")
    metrics_file = src / "metrics.json"
    if not metrics_file.is_file():
        raise ConfigError(f"no metrics.json in {src}: run `herdlab report {src}` first")
    try:
        m = json.loads(metrics_file.read_text(encoding="utf-8"))
    except ValueError as e:
        raise ConfigError(f"{metrics_file} is not valid JSON ({str(e).splitlines()[0]})") from None
    if not isinstance(m, dict) or not str(m.get("format", "")).startswith("herdlab-metrics/"):
        raise ConfigError(f"{metrics_file} is not a herdlab metrics file (no herdlab-metrics format tag)")
    if d.exists() and not replace:
        raise ConfigError(f"baseline {name!r} exists in {d.parent} (use --force to replace it)")
    tmp = d.with_name(f".{name}.saving")
    shutil.rmtree(tmp, ignore_errors=True)
    tmp.mkdir(parents=True)
    for f in COPIED:
        if (src / f).is_file():
            shutil.copy2(src / f, tmp / f)
    run = m.get("run") or {}
    meta = {
        "name": name,
        "saved": datetime.now(UTC).isoformat(timespec="seconds"),
        "source": str(src.resolve()),
        "scenario": run.get("scenario"),
        "run_id": run.get("run_id"),
        "repetitions": run.get("repetitions"),
        "git_commit": run.get("git_commit"),
        "format": m.get("format"),
    }
    (tmp / INFO).write_text(json.dumps(meta, indent=1) + "\n", encoding="utf-8")
    if d.exists():
        shutil.rmtree(d)
    tmp.rename(d)
    return d


def names(store: str | Path | None = None) -> list[str]:
    """The baselines of the store, sorted (none when the store does not exist)."""
    s = store_dir(store)
    if not s.is_dir():
        return []
    return sorted(p.name for p in s.iterdir() if p.is_dir() and (p / "metrics.json").is_file())


def info(name: str, store: str | Path | None = None) -> dict[str, Any]:
    """``baseline.json`` of ``name`` plus ``path`` and ``files``; ConfigError when unknown."""
    d = _dir(name, store)
    if not (d / "metrics.json").is_file():
        raise _unknown(name, store)
    meta: dict[str, Any] = {}
    if (d / INFO).is_file():
        meta = json.loads((d / INFO).read_text(encoding="utf-8"))
    return {**meta, "name": name, "path": str(d), "files": sorted(p.name for p in d.iterdir())}


def metrics_path(name: str, store: str | Path | None = None) -> Path:
    """The ``metrics.json`` of baseline ``name``; ConfigError when unknown."""
    p = _dir(name, store) / "metrics.json"
    if not p.is_file():
        raise _unknown(name, store)
    return p


def delete(name: str, store: str | Path | None = None) -> Path:
    """Remove baseline ``name``; its former directory. ConfigError when unknown."""
    d = _dir(name, store)
    if not (d / "metrics.json").is_file():
        raise _unknown(name, store)
    shutil.rmtree(d)
    return d
