"""herdlab's cache directory: where fetched and built artefacts that outlive a run are kept.

``$HERDLAB_CACHE_DIR``, else ``$XDG_CACHE_HOME/herdlab``, else ``~/.cache/herdlab``; not created here.
"""

from __future__ import annotations

import os
from pathlib import Path


def cache_dir() -> Path:
    """herdlab's cache directory (see the module contract)."""
    given = os.environ.get("HERDLAB_CACHE_DIR")
    if given:
        return Path(given)
    xdg = os.environ.get("XDG_CACHE_HOME")
    return (Path(xdg) if xdg else Path.home() / ".cache") / "herdlab"
