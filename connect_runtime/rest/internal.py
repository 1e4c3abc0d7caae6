"""KIP-507/KIP-710 internal endpoints: task configs and zombie fencing sent between workers (docs/exactly-once.md).

``POST /connectors/{c}/tasks`` (a JSON array of task-config string maps) and ``PUT /connectors/{c}/fence``
must carry ``X-Connect-Authorization`` = base64(HMAC(session key, raw body)) and
``X-Connect-Request-Signature-Algorithm``. The session key is the cluster's shared secret from the config
topic, so any worker can verify; a non-leader then forwards (signature headers included, the body is
unchanged so the signature still holds). Errors as in Connect's ``DistributedHerder``: missing signature
or unsupported algorithm 400, no session key yet 503, bad signature 403
(:mod:`connect_runtime.runtime.request_signing` checks, the error tree carries the status).

Every herder serves them: :class:`~connect_runtime.runtime.herder.InternalHerder` is part of the
``Herder`` contract (as in Java, where a herder without a cluster refuses them itself).
"""

from __future__ import annotations

from starlette.responses import Response
from starlette.routing import BaseRoute

from connect_runtime.api.errors import BadRequestError
from connect_runtime.rest.forwarding import PUBLIC_FORWARD_HEADERS, Forwarder
from connect_runtime.rest.handling import DEFAULT_REQUEST_TIMEOUT_S, route
from connect_runtime.rest.parsing import Call, json_type, strict_string_map
from connect_runtime.rest.responses import empty_response
from connect_runtime.runtime.herder import InternalHerder
from connect_runtime.runtime.request_signing import (
    SIGNATURE_ALGORITHM_HEADER,
    SIGNATURE_HEADER,
    verify_request,
)

INTERNAL_FORWARD_HEADERS = (*PUBLIC_FORWARD_HEADERS, SIGNATURE_HEADER.lower(),
                            SIGNATURE_ALGORITHM_HEADER.lower())


def _task_configs(body: object) -> list[dict[str, str]]:
    if not isinstance(body, list):
        raise BadRequestError(f"Expected a JSON array of task configs (objects of strings), "
                              f"got a JSON {json_type(body)}")
    return [strict_string_map(entry, f"task config {i}") for i, entry in enumerate(body)]


class InternalResources:
    def __init__(self, herder: InternalHerder) -> None:
        self._herder = herder

    def _verify(self, call: Call) -> None:
        verify_request(call.headers, call.body, self._herder.session_key(), self._herder.verification_algorithms())

    def put_task_configs(self, call: Call) -> Response:
        self._verify(call)
        configs = _task_configs(call.json("a JSON array of task configs"))
        self._herder.put_task_configs(call.param("connector"), configs)
        return empty_response(204)

    def fence(self, call: Call) -> Response:
        self._verify(call)
        self._herder.fence_zombies(call.param("connector"))
        return empty_response(204)


def internal_routes(herder: InternalHerder, forwarder: Forwarder,
                    request_timeout_s: float = DEFAULT_REQUEST_TIMEOUT_S) -> list[BaseRoute]:
    """The internal routes of ``herder``; the signature headers are forwarded with the body."""
    resources = InternalResources(herder)
    return [route("/connectors/{connector}/tasks", resources.put_task_configs, ["POST"], forwarder,
                  INTERNAL_FORWARD_HEADERS, request_timeout_s),
            route("/connectors/{connector}/fence", resources.fence, ["PUT"], forwarder,
                  INTERNAL_FORWARD_HEADERS, request_timeout_s)]
