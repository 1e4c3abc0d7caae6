"""Turning sync handlers into Starlette routes: read the request, run the handler in the thread pool,
map errors to Connect's status codes, and forward requests another worker must serve.

Herder methods block (they wait for the herder's tick thread), so handlers are plain functions run by
Starlette's thread pool; only the body read happens on the event loop. Nothing escapes a handler: an
unexpected exception is logged here with its traceback and the client gets a 500 with the message only.
"""

from __future__ import annotations

import logging
from collections.abc import Callable, Sequence
from urllib.parse import quote

import anyio
from starlette.requests import Request
from starlette.responses import Response
from starlette.routing import Route
from starlette.types import Scope

from connect_runtime.api.errors import (
    AlreadyExistsError,
    BadRequestError,
    ConfigError,
    ConflictError,
    ForbiddenError,
    NotFoundError,
    RequestTargetError,
    ServiceUnavailableError,
)
from connect_runtime.rest.forwarding import PUBLIC_FORWARD_HEADERS, Forwarder
from connect_runtime.rest.parsing import Call
from connect_runtime.rest.request_limits import BodyTooLargeError
from connect_runtime.rest.responses import error_response

logger = logging.getLogger(__name__)

Handler = Callable[[Call], Response]

#: Connect's ``rest.request.timeout.ms`` default: a herder call that takes longer gets a 500.
DEFAULT_REQUEST_TIMEOUT_S = 90.0
TIMED_OUT_MESSAGE = "Request timed out"

_STATUS_BY_ERROR: tuple[tuple[type[Exception], int], ...] = (
    (NotFoundError, 404),
    (AlreadyExistsError, 409),
    (ConflictError, 409),
    (BadRequestError, 400),
    (ConfigError, 400),
    (ForbiddenError, 403),
    (ServiceUnavailableError, 503),
)


def raw_path(scope: Scope) -> str:
    """The path exactly as the client encoded it (servers put it in ``raw_path``)."""
    raw = scope.get("raw_path")
    if isinstance(raw, bytes) and raw:
        return raw.decode("latin-1").split("?", 1)[0]
    return quote(str(scope.get("root_path", "")) + str(scope["path"]))


def run_guarded(handler: Handler, call: Call, forwarder: Forwarder | None,
                copy_headers: Sequence[str] = PUBLIC_FORWARD_HEADERS) -> Response:
    """Run one handler and turn every outcome into a response (never raises)."""
    try:
        call.forward_flag()  # a malformed ``forward`` is a 400 before anything else happens
        return handler(call)
    except RequestTargetError as exc:
        if forwarder is None:
            return error_response(409, str(exc) or "Request must be served by another worker")
        return forwarder.forward(call, exc, copy_headers)
    except Exception as exc:
        for error_type, status in _STATUS_BY_ERROR:
            if isinstance(exc, error_type):
                return error_response(status, str(exc) or error_type.__name__)
        logger.exception("Uncaught error serving %s %s", call.method, call.raw_path)
        return error_response(500, str(exc) or type(exc).__name__)


def route(path: str, handler: Handler, methods: Sequence[str], forwarder: Forwarder | None,
          copy_headers: Sequence[str] = PUBLIC_FORWARD_HEADERS,
          timeout_s: float = DEFAULT_REQUEST_TIMEOUT_S) -> Route:
    """A Starlette route serving ``handler`` (sync, run in the thread pool).

    After ``timeout_s`` the client gets Connect's 500 "Request timed out"; the handler's thread is
    abandoned (a blocked herder call cannot be interrupted) and its late result dropped.
    """

    async def endpoint(request: Request) -> Response:
        try:
            body = await request.body()
        except BodyTooLargeError:
            raise  # BodyGuard answers 413
        except Exception as exc:  # client went away mid-body, ...
            return error_response(400, f"Could not read request body: {exc}")
        call = Call.build(request.method, raw_path(request.scope), request.path_params,
                          request.scope.get("query_string", b""), body, request.headers)
        try:
            with anyio.fail_after(timeout_s):
                return await anyio.to_thread.run_sync(run_guarded, handler, call, forwarder, copy_headers,
                                                      abandon_on_cancel=True)
        except TimeoutError:
            logger.warning("Request %s %s timed out after %.1f s", call.method, call.raw_path, timeout_s)
            return error_response(500, TIMED_OUT_MESSAGE)

    endpoint.__name__ = getattr(handler, "__name__", "endpoint")
    return Route(path, endpoint, methods=list(methods))
