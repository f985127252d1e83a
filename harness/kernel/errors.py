"""Errors the user can act on.

Raise :class:`HerdlabError` (or a subclass) for anything caused by input or environment: a malformed
scenario, an unreachable ZooKeeper, Java missing. The CLI prints its message as one line and exits
non-zero without a traceback. Bugs raise anything else and keep their traceback.
"""


class HerdlabError(Exception):
    """A problem the user can fix; its message is one line that names the problem."""


class ConfigError(HerdlabError):
    """Bad configuration or input (scenario files, options)."""


class EnvironmentProblem(HerdlabError):
    """Something missing or broken on the machine (Java, jars, Docker)."""


class Unreachable(HerdlabError):
    """A server (ZooKeeper, broker) could not be reached or did not become ready in time."""
