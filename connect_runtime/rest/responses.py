"""Response helpers shared by every REST module: Connect's ``ErrorMessage`` body and JSON encoding."""

from __future__ import annotations

from typing import Any

from starlette.responses import JSONResponse, Response

from connect_runtime.api.secrets import scrub


def error_response(status: int, message: str) -> JSONResponse:
    """Connect's error body, ``{"error_code": <status>, "message": ...}``, for every failure; a secret
    value the message may quote (an exception's text) is scrubbed."""
    return JSONResponse({"error_code": status, "message": scrub(message)}, status_code=status)


def json_response(body: Any, status: int = 200, headers: dict[str, str] | None = None) -> JSONResponse:
    return JSONResponse(body, status_code=status, headers=headers)


def empty_response(status: int) -> Response:
    """Connect's void answers (204, and 202 for pause/resume) carry no body."""
    return Response(status_code=status)
