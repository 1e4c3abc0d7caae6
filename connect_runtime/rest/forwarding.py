"""Forwarding a request to the worker that can serve it (docs/architecture.md,
"Distributed mode"; Connect's ``HerderRequestHandler.completeOrForwardRequest``).

A herder that is not the leader (or does not own a connector/task) raises a
:class:`~connect_runtime.api.errors.RequestTargetError` naming ``target_url``. The REST layer re-issues
the same method, path, query and body there with ``forward=true``; that worker may forward once more
with ``forward=false``; a request that arrives with ``forward=false`` and still cannot be served means
the cluster is rebalancing, so the answer is 409. Two hops bound the chase during a rebalance.
"""

from __future__ import annotations

import logging
import ssl
import threading
from collections.abc import Sequence
from typing import TYPE_CHECKING
from urllib.parse import urlencode

from starlette.responses import Response

from connect_runtime.api.errors import RequestTargetError
from connect_runtime.rest.parsing import Call
from connect_runtime.rest.responses import error_response

if TYPE_CHECKING:
    # Imported when the first request is forwarded: httpx drags click, rich and pygments in (~100 ms at
    # start-up) and most workers never forward.
    import httpx

logger = logging.getLogger(__name__)

NO_LEADER_MESSAGE = ("Cannot complete request momentarily due to no known leader URL, "
                     "likely because a rebalance was underway.")
CONFLICT_MESSAGE = "Cannot complete request because of a conflicting operation (e.g. worker rebalance)"

#: Connect copies only this header onto a forwarded public request (``RestClient.addHeadersToRequest``).
PUBLIC_FORWARD_HEADERS = ("authorization",)

#: Response headers worth passing back to the client; hop-by-hop and length headers are recomputed.
_RESPONSE_HEADERS = ("content-type", "location")

#: Connect's ``rest.request.timeout.ms`` default is 90 s; a forwarded request gets the same budget.
DEFAULT_FORWARD_TIMEOUT_S = 90.0


class Forwarder:
    """Re-issues calls to other workers over one shared, thread-safe HTTP client."""

    def __init__(self, timeout_s: float = DEFAULT_FORWARD_TIMEOUT_S, verify: ssl.SSLContext | None = None) -> None:
        self._timeout_s = timeout_s
        #: The trust (and client certificate) for other workers' https listeners; None: system defaults.
        self._verify: ssl.SSLContext | bool = verify if verify is not None else True
        self._client: httpx.Client | None = None
        self._lock = threading.Lock()

    def _http(self) -> httpx.Client:
        # Created lazily: most workers never forward, and an unused client still holds a pool.
        with self._lock:
            if self._client is None:
                import httpx

                self._client = httpx.Client(timeout=self._timeout_s, follow_redirects=False, trust_env=False,
                                            verify=self._verify)
            return self._client

    def close(self) -> None:
        with self._lock:
            client, self._client = self._client, None
        if client is not None:
            client.close()

    def forward(self, call: Call, exc: RequestTargetError,
                copy_headers: Sequence[str] = PUBLIC_FORWARD_HEADERS) -> Response:
        """The response for ``call`` after the herder said another worker must serve it."""
        flag = call.forward_flag()
        if flag is False:
            logger.error("Request '%s %s' failed because it couldn't find the target Connect worker within "
                         "two hops (between workers).", call.method, call.raw_path)
            return error_response(409, CONFLICT_MESSAGE)
        if exc.target_url is None:
            return error_response(409, NO_LEADER_MESSAGE)
        params = [(k, v) for k, v in call.query if k != "forward"]
        params.append(("forward", "true" if flag is None else "false"))
        url = f"{exc.target_url.rstrip('/')}{call.raw_path}?{urlencode(params)}"
        headers = {name: call.headers[name] for name in copy_headers if name in call.headers}
        if call.body:
            headers["content-type"] = "application/json"
        logger.debug("Forwarding request %s %s to %s (forward=%s)", call.method, call.raw_path, url,
                     params[-1][1])
        import httpx

        try:
            answer = self._http().request(call.method, url, content=call.body or None, headers=headers)
        except httpx.HTTPError as http_exc:
            logger.warning("Forwarding %s %s to %s failed: %s", call.method, call.raw_path, url, http_exc)
            return error_response(500, f"IO Error trying to forward REST request: {http_exc}")
        passed = {k: v for k, v in answer.headers.items() if k.lower() in _RESPONSE_HEADERS}
        return Response(content=answer.content, status_code=answer.status_code, headers=passed)
