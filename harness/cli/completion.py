"""``herdlab completion bash|zsh|fish``: the shell completion script, and the completion of scenario names.

Contract
--------
* ``herdlab completion SHELL`` prints click's completion script for SHELL (what
  ``_HERDLAB_COMPLETE=SHELL_source herdlab`` prints); loading it (``eval "$(herdlab completion bash)"``
  in ``~/.bashrc``, ``eval "$(herdlab completion zsh)"`` in ``~/.zshrc``) completes commands, options
  and, where a command takes a SCENARIO, scenario names.
* :func:`complete_scenario` is the ``shell_complete`` of every SCENARIO argument: the built-in names
  that start with what was typed, then the ``*.toml`` files of the directory typed so far (the current
  one when none) whose path starts with it, each once, in that order.
"""

from __future__ import annotations

from pathlib import Path

import click
from click.shell_completion import CompletionItem, get_completion_class

from harness.scenario.loading import builtin_names

SHELLS = ("bash", "zsh", "fish")


def complete_scenario(ctx: click.Context, param: click.Parameter, incomplete: str) -> list[CompletionItem]:
    """Built-in scenario names and ``*.toml`` files starting with ``incomplete`` (see the contract)."""
    items = [CompletionItem(n, help="built-in scenario") for n in builtin_names() if n.startswith(incomplete)]
    directory = Path(incomplete) if incomplete.endswith("/") else Path(incomplete).parent
    try:
        files = sorted(str(p) for p in directory.glob("*.toml") if p.is_file())
    except OSError:
        files = []
    items += [CompletionItem(f, help="scenario file") for f in files if f.startswith(incomplete)]
    return items


@click.command("completion")
@click.argument("shell", type=click.Choice(SHELLS))
def completion(shell: str) -> None:
    """Print the shell completion script for SHELL (bash, zsh or fish).

    Load it from your shell's start-up file: eval "$(herdlab completion bash)" in ~/.bashrc,
    eval "$(herdlab completion zsh)" in ~/.zshrc. It completes commands, options and scenario names
    (the built-ins and `*.toml` files)."""
    root = click.get_current_context().find_root().command
    cls = get_completion_class(shell)
    assert cls is not None, shell  # click ships a class for each of SHELLS
    click.echo(cls(root, {}, "herdlab", "_HERDLAB_COMPLETE").source())
