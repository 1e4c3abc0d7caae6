"""KIP-507/KIP-710 internal endpoints: task configs and zombie fencing sent between workers (§2.4, §10.3).

``POST /connectors/{c}/tasks`` (a JSON array of task-config string maps) and ``PUT /connectors/{c}/fence``
must carry ``X-Connect-Authorization`` = base64(HMAC(session key, raw body)) and
``X-Connect-Request-Signature-Algorithm``. The session key is the cluster's shared secret from the config
topic, so any worker can verify; a non-leader then forwards (signature headers included, the body is
unchanged so the signature still holds). Errors as in Connect's ``DistributedHerder``: missing signature
or unsupported algorithm 400, no session key yet 503, bad signature 403.

Herders opt in by implementing :class:`InternalHerder`; others simply do not get these routes.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Protocol, runtime_checkable

from starlette.responses import Response
from starlette.routing import BaseRoute

from connect_runtime.api.errors import BadRequestError
from connect_runtime.rest.forwarding import PUBLIC_FORWARD_HEADERS, Forwarder
from connect_runtime.rest.handling import DEFAULT_REQUEST_TIMEOUT_S, route
from connect_runtime.rest.parsing import Call, json_type, strict_string_map
from connect_runtime.rest.responses import empty_response
from connect_runtime.runtime.request_signing import (
    DEFAULT_SIGNATURE_ALGORITHM,
    SIGNATURE_ALGORITHM_HEADER,
    SIGNATURE_HEADER,
    verify_request,
)

INTERNAL_FORWARD_HEADERS = (*PUBLIC_FORWARD_HEADERS, SIGNATURE_HEADER.lower(),
                            SIGNATURE_ALGORITHM_HEADER.lower())


@runtime_checkable
class InternalHerder(Protocol):
    """What a herder offers to serve the internal endpoints."""

    def session_key(self) -> bytes | None:
        """The current session key, or None while it has not been read from the config topic yet."""

    def put_task_configs(self, connector: str, configs: list[dict[str, str]]) -> None:
        """Write task configs (leader only: NotLeaderError otherwise)."""

    def fence_zombies(self, connector: str) -> None:
        """Run a zombie-fencing round for the connector's tasks (leader only)."""


def _task_configs(body: object) -> list[dict[str, str]]:
    if not isinstance(body, list):
        raise BadRequestError(f"Expected a JSON array of task configs (objects of strings), "
                              f"got a JSON {json_type(body)}")
    return [strict_string_map(entry, f"task config {i}") for i, entry in enumerate(body)]


class InternalResources:
    def __init__(self, herder: InternalHerder) -> None:
        self._herder = herder

    def _allowed(self) -> Sequence[str]:
        allowed = getattr(self._herder, "verification_algorithms", None)
        return tuple(allowed()) if callable(allowed) else (DEFAULT_SIGNATURE_ALGORITHM,)

    def put_task_configs(self, call: Call) -> Response:
        verify_request(call.headers, call.body, self._herder.session_key(), self._allowed())
        configs = _task_configs(call.json("a JSON array of task configs"))
        self._herder.put_task_configs(call.param("connector"), configs)
        return empty_response(204)

    def fence(self, call: Call) -> Response:
        verify_request(call.headers, call.body, self._herder.session_key(), self._allowed())
        self._herder.fence_zombies(call.param("connector"))
        return empty_response(204)


def internal_routes(herder: object, forwarder: Forwarder,
                    request_timeout_s: float = DEFAULT_REQUEST_TIMEOUT_S) -> list[BaseRoute]:
    """The internal routes for ``herder``, or none if it does not implement :class:`InternalHerder`."""
    if not isinstance(herder, InternalHerder):
        return []
    resources = InternalResources(herder)
    return [route("/connectors/{connector}/tasks", resources.put_task_configs, ["POST"], forwarder,
                  INTERNAL_FORWARD_HEADERS, request_timeout_s),
            route("/connectors/{connector}/fence", resources.fence, ["PUT"], forwarder,
                  INTERNAL_FORWARD_HEADERS, request_timeout_s)]
