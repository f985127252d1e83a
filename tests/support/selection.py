"""Which marked tests a run selects (used by ``tests/conftest.py``).

Tests marked ``bench``, ``containers``, ``migration``, ``failover``, ``long``, ``kafka`` or ``clients`` run only when the ``-m`` expression names that marker. pytest keeps
only the last ``-m`` given, so an ``-m`` in the default options would be lost to ``-m "not slow"``; this
rule holds whatever ``-m`` the command line has.
"""

from __future__ import annotations

import re

OPT_IN_MARKERS = ("bench", "containers", "migration", "failover", "long", "kafka", "clients")


def opted_out_markers(markexpr: str) -> set[str]:
    """The opt-in markers the ``-m`` expression ``markexpr`` does not name (as a whole word)."""
    return {m for m in OPT_IN_MARKERS if not re.search(rf"\b{m}\b", markexpr)}
