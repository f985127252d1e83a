"""``--json`` on commands: the JSON document alone on stdout, everything else on stderr.

:func:`stdout_to_stderr` sends whatever the command prints while it works (rich progress, tables,
child processes that inherit the descriptor) to stderr, at the descriptor level (fd 1 onto fd 2) and
at Python's level (``sys.stdout``); :func:`emit` then writes the document to the real stdout. A
script reads ``herdlab run --json ... | jq`` and sees one JSON value.
"""

from __future__ import annotations

import contextlib
import json
import os
import sys
from collections.abc import Iterator
from typing import Any

import click

from harness.analysis.metrics_model import MetricsDocument


def _fileno(stream: Any) -> int | None:
    try:
        return int(stream.fileno())
    except (AttributeError, OSError, ValueError):
        return None


@contextlib.contextmanager
def stdout_to_stderr(enabled: bool = True) -> Iterator[None]:
    """While inside, stdout (Python's and, when both are real descriptors, fd 1) goes to stderr."""
    if not enabled:
        yield
        return
    sys.stdout.flush()
    out_fd, err_fd = _fileno(sys.__stdout__), _fileno(sys.__stderr__)
    saved = os.dup(out_fd) if out_fd is not None and err_fd is not None else None
    if saved is not None and out_fd is not None and err_fd is not None:
        os.dup2(err_fd, out_fd)
    try:
        with contextlib.redirect_stdout(sys.stderr):
            yield
    finally:
        sys.stderr.flush()
        if saved is not None and out_fd is not None:
            os.dup2(saved, out_fd)
            os.close(saved)


def emit(doc: Any) -> None:
    """Write ``doc`` as indented JSON (one value) on stdout."""
    click.echo(json.dumps(doc, indent=1, default=str))


def verdict_summary(metrics: MetricsDocument) -> dict[str, Any]:
    """The verdict's machine-readable part: ``valid`` (true, false or "unknown"), ``reasons``, ``line``."""
    # deferred: start-up: the report tables load only for commands that print a verdict
    from harness.report.tables import verdict_of

    v = verdict_of(metrics)
    return {"valid": v.get("valid"), "reasons": list(v.get("reasons") or []), "line": v.get("line")}
