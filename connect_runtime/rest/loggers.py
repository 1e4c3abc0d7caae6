"""``/admin/loggers`` (KIP-495, KIP-976) on Python's ``logging``.

Levels are reported with log4j's names (``WARN``, ``FATAL``, ``TRACE``...) so tools written for Connect
read them; both log4j and Python names are accepted (``WARNING`` = ``WARN``, ``CRITICAL`` = ``FATAL``).
As in Connect, setting a namespace's level also sets it on every existing descendant logger, and
``last_modified`` (epoch ms) is only known for levels set through this API. The levels themselves are
kept by :mod:`connect_runtime.runtime.worker.log_levels` (shared with the herders, which apply cluster-scope
levels read from their config topics); ``scope=cluster`` asks the herder to write one there (KIP-976).
"""

from __future__ import annotations

import logging
from typing import Any

from starlette.responses import Response
from starlette.routing import BaseRoute

from connect_runtime.api.errors import BadRequestError, NotFoundError
from connect_runtime.rest.handling import route
from connect_runtime.rest.parsing import Call, is_json_string, json_type
from connect_runtime.rest.responses import empty_response, json_response
from connect_runtime.runtime.herder import ClusterLoggerLevels
from connect_runtime.runtime.worker.log_levels import (
    LOG_LEVELS,
    ROOT,
    LogLevels,
    existing_loggers,
    level_name,
    parse_level,
)

logger = logging.getLogger(__name__)


class LoggerResources:
    """The admin logger endpoints; ``herder`` (optional) serves ``scope=cluster`` if it can."""

    def __init__(self, herder: ClusterLoggerLevels | None = None, levels: LogLevels = LOG_LEVELS) -> None:
        self._herder = herder
        self._levels = levels

    def routes(self) -> list[BaseRoute]:
        return [route("/admin/loggers", self.list_loggers, ["GET"], None),
                route("/admin/loggers/{logger}", self.get_logger, ["GET"], None),
                route("/admin/loggers/{logger}", self.set_logger, ["PUT"], None)]

    def _level_json(self, name: str, lg: logging.Logger) -> dict[str, Any]:
        return {"level": level_name(lg.getEffectiveLevel()), "last_modified": self._levels.last_modified(name)}

    def list_loggers(self, call: Call) -> Response:
        out = {name: self._level_json(name, lg) for name, lg in sorted(existing_loggers().items())
               if lg.level != logging.NOTSET}
        out[ROOT] = self._level_json(ROOT, logging.getLogger())
        return json_response(out)

    def get_logger(self, call: Call) -> Response:
        name = call.param("logger")
        if name == ROOT:
            return json_response(self._level_json(ROOT, logging.getLogger()))
        lg = existing_loggers().get(name)
        if lg is None:
            raise NotFoundError(f"Logger {name} not found.")
        return json_response(self._level_json(name, lg))

    def set_logger(self, call: Call) -> Response:
        name = call.param("logger")
        body = call.json('a JSON object {"level": "<LEVEL>"}')
        if not isinstance(body, dict):
            raise BadRequestError(f'Expected a JSON object {{"level": "<LEVEL>"}}, '
                                  f"got a JSON {json_type(body)}")
        raw_level = body.get("level")
        if raw_level is None:
            raise BadRequestError("Desired 'level' parameter was not specified in request.")
        if not is_json_string(raw_level):
            raise BadRequestError(f"'level' must be a string, got a JSON {json_type(raw_level)}")
        level = parse_level(str(raw_level))
        if level is None:
            raise NotFoundError(f"invalid log level '{raw_level}'.")  # Connect answers 404 here
        scope = (call.query_values("scope") or ["worker"])[0].lower()
        if scope == "cluster":
            if self._herder is None or not self._herder.set_cluster_logger_level(name, level_name(level)):
                self.apply(name, level)  # no cluster to tell: apply here, as Connect's standalone herder does
            return empty_response(204)
        if scope != "worker":
            logger.warning("Received request to alter logging level with unrecognized scope %s, "
                           "defaulting to worker scope", scope)
        return json_response(self.apply(name, level))

    def apply(self, namespace: str, level: int) -> list[str]:
        """Set ``namespace`` and its existing descendants to ``level``; the affected names, sorted."""
        return self._levels.apply(namespace, level)
