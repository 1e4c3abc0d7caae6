"""The one exception tree of the runtime.

Every error a connector or the engine raises descends from :class:`ConnectError`::

    ConnectError
    ├── RetriableError        transient; the caller may retry the same call later
    ├── ConfigError           bad configuration (also a ValueError); names the key
    ├── DataError             a record that cannot be converted or encoded
    ├── NotFoundError         unknown connector / task (REST 404)
    ├── AlreadyExistsError    create of an existing connector (REST 409)
    ├── ConflictError         request cannot be served now, e.g. during a rebalance (REST 409)
    ├── BadRequestError       a well-formed request that is not acceptable (REST 400)
    ├── ForbiddenError        refused: a disabled feature, a forged internal request (REST 403)
    ├── ServiceUnavailableError  this worker cannot serve it yet, e.g. no session key (REST 503)
    └── RequestTargetError    the request must be served by another worker
        ├── NotLeaderError    ... the group leader (url in ``target_url``)
        └── NotAssignedError  ... the worker that owns the connector or task

Client errors from confluent-kafka are translated at the client boundary
(``connect_runtime.clients.errors``) and always chained with ``raise ... from``.
"""

from __future__ import annotations


class ConnectError(Exception):
    """Root of all runtime and connector errors."""


class RetriableError(ConnectError):
    """A transient failure: the same operation may succeed if retried."""


class ConfigError(ConnectError, ValueError):
    """A configuration value is missing or invalid.

    ``key`` names the offending key so that CLI and REST can point at it.
    """

    def __init__(self, message: str, key: str | None = None) -> None:
        super().__init__(message)
        self.key = key


class DataError(ConnectError):
    """A record could not be converted, serialized or deserialized."""


class NotFoundError(ConnectError):
    """The connector, task or plugin does not exist."""


class AlreadyExistsError(ConnectError):
    """A connector with that name already exists."""


class ConflictError(ConnectError):
    """The request conflicts with the current state (e.g. a rebalance is under way)."""


class BadRequestError(ConnectError):
    """The request is well formed but cannot be accepted (e.g. offsets altered while running)."""


class ForbiddenError(ConnectError):
    """The worker refuses the request: the feature is disabled here, or the caller is not trusted."""


class ServiceUnavailableError(ConnectError):
    """The worker is still starting and cannot serve the request yet; the caller retries later."""


class RequestTargetError(ConnectError):
    """The request must be served by another worker, reachable at ``target_url``."""

    def __init__(self, message: str, target_url: str | None) -> None:
        super().__init__(message)
        self.target_url = target_url


class NotLeaderError(RequestTargetError):
    """Only the group leader may serve this request."""


class NotAssignedError(RequestTargetError):
    """Only the worker running the connector or task may serve this request."""


def one_line(text: str) -> str:
    """``text`` with every character that is not printable (a line break, a carriage return, the record
    separators ``str.splitlines`` also breaks on) written as its escape, so that a value the user typed
    (a path, a flag) cannot split an error into several lines or rewrite the terminal's line."""
    if text.isprintable():
        return text
    return "".join(ch if ch.isprintable() else repr(ch)[1:-1] for ch in text)
