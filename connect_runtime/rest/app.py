"""The Connect REST application: one or many herders behind one Starlette app.

``connect-distributed`` mounts its single herder at the root. The MM2 driver runs one herder per
replication flow and mounts each under its KIP-710 REST namespace: ``("A", "B")`` is
served at ``/A/B/connectors/...``, each element URL-encoded the way Java's ``URLEncoder`` does, with
``+`` replaced by ``%20``. Namespaces are matched segment by segment on the *raw* request path, so an
alias holding ``/``, ``{`` or spaces cannot be confused with the route syntax. Server-wide endpoints
(``/metrics``, ``/flows``, ``/admin/loggers``) live at the root only.
"""

from __future__ import annotations

import contextlib
import logging
import time
from collections.abc import AsyncIterator, Mapping, Sequence
from typing import Any
from urllib.parse import quote, unquote

import prometheus_client
from starlette.applications import Starlette
from starlette.exceptions import HTTPException
from starlette.middleware import Middleware
from starlette.requests import Request
from starlette.responses import Response
from starlette.routing import BaseRoute
from starlette.types import ASGIApp, Message, Receive, Scope, Send

from connect_runtime.metrics import exposition
from connect_runtime.rest.connectors import ConnectorResources, server_info
from connect_runtime.rest.forwarding import Forwarder
from connect_runtime.rest.handling import DEFAULT_REQUEST_TIMEOUT_S, raw_path, route
from connect_runtime.rest.internal import internal_routes
from connect_runtime.rest.loggers import LoggerResources
from connect_runtime.rest.parsing import Call
from connect_runtime.rest.responses import error_response, json_response
from connect_runtime.rest.security import RestSecurity
from connect_runtime.runtime.herder import Herder

logger = logging.getLogger(__name__)

Namespace = tuple[str, ...]

_HEALTH_RANK = {"healthy": 0, "starting": 1, "unhealthy": 2}
_HEALTH_STATUS = {"healthy": 200, "starting": 503, "unhealthy": 500}


def encode_namespace_element(element: str) -> str:
    """KIP-710 encoding: Java ``URLEncoder.encode(s, UTF_8)`` then ``+`` -> ``%20``.

    Java leaves ``A-Za-z0-9 . - * _`` alone and percent-encodes everything else (``~`` included).
    """
    return quote(element, safe="*").replace("~", "%7E")


def namespace_path(namespace: Sequence[str]) -> str:
    """The path prefix of a namespace: ``("A", "B")`` -> ``"/A/B"``, ``()`` -> ``""``."""
    return "".join("/" + encode_namespace_element(e) for e in namespace)


async def _http_error(request: Request, exc: Exception) -> Response:
    """Unknown route (404) or wrong method (405), in Connect's (Jersey's) error shape."""
    assert isinstance(exc, HTTPException)
    phrase = {404: "Not Found", 405: "Method Not Allowed"}.get(exc.status_code, str(exc.detail))
    return error_response(exc.status_code, f"HTTP {exc.status_code} {phrase}")


_EXCEPTION_HANDLERS = {HTTPException: _http_error}


class _RequestLog:
    """Our own access log at DEBUG (uvicorn's is off): method, path, status, time; never bodies."""

    def __init__(self, app: ASGIApp) -> None:
        self.app = app

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http" or not logger.isEnabledFor(logging.DEBUG):
            await self.app(scope, receive, send)
            return
        started = time.monotonic()
        status: list[int] = []

        async def send_wrapper(message: Message) -> None:
            if message["type"] == "http.response.start":
                status.append(int(message["status"]))
            await send(message)

        try:
            await self.app(scope, receive, send_wrapper)
        finally:
            logger.debug("%s %s -> %s (%.1f ms)", scope.get("method"), raw_path(scope),
                         status[0] if status else "-", (time.monotonic() - started) * 1000)


class _NamespaceDispatch:
    """Routes ``/<ns...>/rest`` to the namespace's app, longest namespace first."""

    def __init__(self, app: ASGIApp, mounts: Sequence[tuple[Namespace, ASGIApp]]) -> None:
        self.app = app
        self._mounts = sorted(mounts, key=lambda m: len(m[0]), reverse=True)

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] == "http" and self._mounts:
            segments = raw_path(scope).split("/")[1:]
            decoded = tuple(unquote(s) for s in segments)
            for namespace, app in self._mounts:
                n = len(namespace)
                if decoded[:n] == namespace:
                    child = dict(scope)
                    child["path"] = str(scope.get("root_path", "")) + unquote("/" + "/".join(segments[n:]))
                    await app(child, receive, send)
                    return
        await self.app(scope, receive, send)


class _EveryHerder:
    """``scope=cluster`` on a server of namespaced herders (the MM2 driver): every flow's config topic
    gets the level, so every node of every flow applies it (applying it twice is harmless)."""

    def __init__(self, herders: Sequence[Herder]) -> None:
        self._herders = herders

    def set_cluster_logger_level(self, namespace: str, level: str) -> bool:
        told = [h.set_cluster_logger_level(namespace, level) for h in self._herders]
        return any(told)


def _herder_routes(herder: Herder, forwarder: Forwarder, prefix: str, timeout_s: float, security: RestSecurity,
                   internal_endpoints: bool) -> list[BaseRoute]:
    routes = ConnectorResources(herder, forwarder, prefix, timeout_s, security.provider_allowlist,
                                security.path_policy).routes()
    if internal_endpoints:
        routes += internal_routes(herder, forwarder, timeout_s)
    return routes


def _herder_app(herder: Herder, forwarder: Forwarder, prefix: str, timeout_s: float, security: RestSecurity,
                internal_endpoints: bool) -> Starlette:
    return Starlette(routes=_herder_routes(herder, forwarder, prefix, timeout_s, security, internal_endpoints),
                     exception_handlers=_EXCEPTION_HANDLERS)


def _aggregate_health(herders: Sequence[Herder]) -> Response:
    """``/health`` of a server with only namespaced herders: the worst of them."""
    worst, messages = "healthy", []
    for herder in herders:
        health = herder.health()
        messages.append(health.message)
        if _HEALTH_RANK.get(health.status, 2) > _HEALTH_RANK.get(worst, 2):
            worst = health.status
    message = "; ".join(sorted(set(messages))) or "No herders are mounted."
    return json_response({"status": worst, "message": message}, _HEALTH_STATUS.get(worst, 500))


def create_app(herders: Mapping[tuple[str, ...], Herder] | Herder,
               registry: prometheus_client.CollectorRegistry | None = None,
               extra_routes: Sequence[BaseRoute] = (), *,
               request_timeout_s: float = DEFAULT_REQUEST_TIMEOUT_S, security: RestSecurity | None = None,
               internal_endpoints: bool = True) -> Starlette:
    """The REST app for one herder (mounted at the root) or several (each under its namespace).

    ``registry`` is what ``GET /metrics`` exposes (the process-wide default registry when None).
    ``extra_routes`` are added at the root, before the herder routes. A herder call that takes longer
    than ``request_timeout_s`` (Connect's ``rest.request.timeout.ms``) is answered with a 500.
    ``security`` guards state changes (:mod:`connect_runtime.rest.security`; None: open, for tests and
    embedding; the commands pass ``RestSecurity.from_props``). ``internal_endpoints=False`` leaves out the
    KIP-507 worker-to-worker endpoints (MM2 without ``dedicated.mode.enable.internal.rest``).
    """
    security = security if security is not None else RestSecurity()
    mapping: dict[Namespace, Herder] = dict(herders) if isinstance(herders, Mapping) else {(): herders}
    for namespace in mapping:
        if any(not element for element in namespace):
            raise ValueError(f"REST namespace elements must be non-empty: {namespace!r}")
    forwarder = Forwarder(verify=security.client_ssl)
    metrics_registry = registry if registry is not None else prometheus_client.REGISTRY
    flows = [{"namespace": list(ns), "path": namespace_path(ns) or "/"} for ns in mapping]
    flows.sort(key=lambda f: str(f["path"]))

    def list_flows(call: Call) -> Response:
        return json_response(flows)

    def metrics(call: Call) -> Response:
        return Response(exposition(metrics_registry), media_type=prometheus_client.CONTENT_TYPE_LATEST)

    routes: list[BaseRoute] = [route("/flows", list_flows, ["GET"], None),
                               route("/metrics", metrics, ["GET"], None)]
    routes += LoggerResources(mapping.get(()) or _EveryHerder(list(mapping.values()))).routes()
    routes += list(extra_routes)
    root_herder = mapping.get(())
    if root_herder is not None:
        routes += _herder_routes(root_herder, forwarder, "", request_timeout_s, security, internal_endpoints)
    else:
        all_herders = list(mapping.values())

        def root(call: Call) -> Response:
            # Flows may span clusters; a single cluster id is only meaningful when all agree.
            ids = {h.kafka_cluster_id() for h in all_herders}
            return json_response(server_info(ids.pop() if len(ids) == 1 else None))

        def health(call: Call) -> Response:
            return _aggregate_health(all_herders)

        def unknown_flow(call: Call) -> Response:
            # MirrorRestServer's answer for a (source, target) pair it does not serve (KIP-710)
            return error_response(404, f"No replication flow found for source '{call.param('source')}' "
                                       f"and target '{call.param('target')}'")

        flow_path = "/{source}/{target}/connectors/{connector}"
        routes += [route("/", root, ["GET"], None), route("/health", health, ["GET"], None),
                   route(flow_path + "/tasks", unknown_flow, ["POST"], None),
                   route(flow_path + "/fence", unknown_flow, ["PUT"], None)]

    mounts = [(ns, _herder_app(h, forwarder, namespace_path(ns), request_timeout_s, security, internal_endpoints))
              for ns, h in mapping.items() if ns]

    @contextlib.asynccontextmanager
    async def lifespan(app: Starlette) -> AsyncIterator[dict[str, Any]]:
        try:
            yield {}
        finally:
            forwarder.close()

    return Starlette(routes=routes, exception_handlers=_EXCEPTION_HANDLERS, lifespan=lifespan,
                     middleware=[Middleware(_RequestLog), *security.middleware(),
                                 Middleware(_NamespaceDispatch, mounts=mounts)])
