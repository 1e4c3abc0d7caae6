"""The status page: ``GET /ui`` (HTML + JS, no external resources) and ``GET /ui/api/status`` (JSON).

The page polls the JSON every two seconds and draws its charts itself (inline SVG), so it works on
machines and networks without Internet access. Mount with
``create_app(herders, registry, extra_routes=ui_routes(monitor))``.
"""

from __future__ import annotations

from importlib import resources

from starlette.requests import Request
from starlette.responses import JSONResponse, Response
from starlette.routing import BaseRoute, Route

from mirror.health.collector import HealthMonitor

_ASSETS = {"app.js": "text/javascript; charset=utf-8", "style.css": "text/css; charset=utf-8"}


def _asset(name: str) -> bytes:
    return resources.files("mirror").joinpath("ui").joinpath(name).read_bytes()


def ui_routes(monitor: HealthMonitor) -> list[BaseRoute]:
    """The routes of the status page, reading ``monitor``'s latest report and history."""

    async def page(_: Request) -> Response:
        return Response(_asset("index.html"), media_type="text/html; charset=utf-8",
                        headers={"Cache-Control": "no-cache"})

    async def asset(request: Request) -> Response:
        name = request.path_params["name"]
        if name not in _ASSETS:
            return Response(status_code=404)
        return Response(_asset(name), media_type=_ASSETS[name], headers={"Cache-Control": "no-cache"})

    async def status(_: Request) -> Response:
        report = monitor.latest()
        body = {"report": report.to_dict() if report is not None else None,
                "history": monitor.history(), "refresh_interval_seconds": monitor.interval_s}
        return JSONResponse(body, headers={"Cache-Control": "no-store"})

    return [
        Route("/ui", page, methods=["GET"]),
        Route("/ui/", page, methods=["GET"]),
        Route("/ui/api/status", status, methods=["GET"]),
        Route("/ui/static/{name}", asset, methods=["GET"]),
    ]
