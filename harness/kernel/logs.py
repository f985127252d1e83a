"""Logging set-up shared by every herdlab process.

Log lines name the component first; components put the member, group and generation in the message
(e.g. ``group=g1 generation=4 member=c-1``), so one grep follows one member across processes.
"""

from __future__ import annotations

import logging
import os

FORMAT = "%(asctime)s.%(msecs)03d %(levelname)-5s %(name)s: %(message)s"


def setup_logging(verbose: int = 0) -> None:
    """Configure the root logger on stderr. ``verbose``: 0 warnings, 1 info, 2+ debug.

    ``HERDLAB_LOG_LEVEL`` (a level name) overrides ``verbose``, so child processes inherit the level.
    """
    level = logging.WARNING if verbose <= 0 else logging.INFO if verbose == 1 else logging.DEBUG
    env = os.environ.get("HERDLAB_LOG_LEVEL")
    if env:
        level = (
            logging.getLevelName(env.upper()) if isinstance(logging.getLevelName(env.upper()), int) else level
        )
    logging.basicConfig(level=level, format=FORMAT, datefmt="%H:%M:%S")
    # Third-party clients are chatty at INFO; keep them at WARNING unless debugging.
    for name in ("kazoo", "kafka", "py4j"):
        logging.getLogger(name).setLevel(logging.DEBUG if verbose >= 3 else logging.WARNING)
