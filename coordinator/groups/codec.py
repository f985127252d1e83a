"""What every group API adapter shares on the wire: kio error codes, the unrequested authorized operations."""

from __future__ import annotations

from kio.schema.errors import ErrorCode as KioError

__all__ = ["NO_AUTH_OPS", "kio_error"]

_KIO_ERROR: dict[int, KioError] = {int(e): e for e in KioError}

#: Authorized operations not asked for (Kafka's ``Int.MinValue``).
NO_AUTH_OPS = -(2**31)


def kio_error(error: int) -> KioError:
    """The kio enum member for a wire error code."""
    try:
        return _KIO_ERROR[int(error)]
    except KeyError:
        return KioError.unknown_server_error
