"""The public Connect REST resources of one herder: ``/``, ``/health``,
``/connectors/...`` and ``/connector-plugins/...``.

Handlers validate the request completely before they call the herder, so a malformed request never
reaches it; they return Connect's exact status codes and JSON shapes. Unlike Connect, secrets are never
returned: connector and task configs show ``${provider:...}`` references as stored but hide literal
secret values (:func:`~connect_runtime.api.secrets.mask_config`), and validation results hide the values
of PASSWORD keys. A config submitted here may only use the config providers of the operator's allowlist
(``rest.config.providers.allowlist``), and may name files in client keys (key stores, key tabs, ``file:``
URLs) only under the operator's ``rest.allowed.paths`` or as the operator's file gives them
(:mod:`~connect_runtime.api.path_allowlist`), so a caller cannot make the worker read its files.
"""

from __future__ import annotations

import logging
from collections.abc import Mapping, Sequence
from importlib import metadata
from typing import Any
from urllib.parse import quote

from starlette.responses import Response
from starlette.routing import BaseRoute

from connect_runtime.api import path_allowlist
from connect_runtime.api.config_provider import check_allowed_providers
from connect_runtime.api.errors import BadRequestError, NotFoundError
from connect_runtime.api.secrets import HIDDEN, is_sensitive_key, mask_config
from connect_runtime.lifecycle import ConnectorTaskId, TargetState
from connect_runtime.rest.forwarding import Forwarder
from connect_runtime.rest.handling import DEFAULT_REQUEST_TIMEOUT_S, Handler
from connect_runtime.rest.handling import route as make_route
from connect_runtime.rest.parsing import (
    Call,
    is_json_string,
    json_type,
    plain,
    strict_string_map,
    string_map,
)
from connect_runtime.rest.responses import empty_response, json_response
from connect_runtime.runtime.herder import ConfigInfos, ConnectorInfo, ConnectorOffset, Herder

logger = logging.getLogger(__name__)

_INITIAL_STATES = {"RUNNING": TargetState.STARTED, "PAUSED": TargetState.PAUSED,
                   "STOPPED": TargetState.STOPPED}
_HEALTH_STATUS = {"healthy": 200, "starting": 503, "unhealthy": 500}
_PLUGIN_ALIAS_SUFFIX = "Connector"
ALTERED_MESSAGE = "The offsets for this connector have been altered successfully"
RESET_MESSAGE = "The offsets for this connector have been reset successfully"
OFFSETS_REQUIRED_MESSAGE = "Partitions / offsets need to be provided for an alter offsets request"


def software_version() -> str:
    try:
        return metadata.version("pymirrormaker")
    except metadata.PackageNotFoundError:
        return "unknown"


def server_info(kafka_cluster_id: str | None) -> dict[str, Any]:
    """Connect's ``ServerInfo``; there is no git commit id for a Python package, hence "unknown"."""
    return {"version": software_version(), "commit": "unknown", "kafka_cluster_id": kafka_cluster_id}


def check_connector_name(path_name: str, config: dict[str, str]) -> None:
    """Connect's ``checkAndPutConnectorConfigName``: the config's ``name`` must match, else it is added."""
    included = config.get("name")
    if included is None:
        config["name"] = path_name
    elif included != path_name:
        raise BadRequestError(f"Connector name configuration ({included}) doesn't match connector name "
                              f"in the URL ({path_name})")


def _normalized_plugin(name: str) -> str:
    return name[: -len(_PLUGIN_ALIAS_SUFFIX)] if name.endswith(_PLUGIN_ALIAS_SUFFIX) else name


def _redacted_config_infos(infos: ConfigInfos) -> dict[str, Any]:
    """Validation echoes values back; hide those of PASSWORD-typed or sensitive keys, as Connect does."""
    out = infos.to_json()
    configs: list[Any] = []
    for entry in out.get("configs", []):
        entry = dict(entry)
        definition = entry.get("definition") or {}
        value = dict(entry.get("value") or {})
        name = str(value.get("name") or definition.get("name") or "")
        hidden = str(definition.get("type", "")).upper() == "PASSWORD" or is_sensitive_key(name)
        if hidden and value.get("value") is not None:
            value["value"] = HIDDEN
        if "value" in entry:
            entry["value"] = value
        configs.append(entry)
    out["configs"] = configs
    return out


def _info_json(info: ConnectorInfo) -> dict[str, Any]:
    out = info.to_json()
    if isinstance(out.get("config"), dict):
        out["config"] = mask_config(out["config"])
    return out


def _offsets(body: Any) -> list[ConnectorOffset]:
    """Validate a ``ConnectorOffsets`` body: ``{"offsets": [{"partition": {...}, "offset": {...}|null}]}``."""
    if not isinstance(body, dict):
        raise BadRequestError(f"Expected a JSON object {{\"offsets\": [...]}}, got a JSON {json_type(body)}")
    entries = body.get("offsets")
    if entries is None or entries == []:
        raise BadRequestError(OFFSETS_REQUIRED_MESSAGE)
    if not isinstance(entries, list):
        raise BadRequestError(f"'offsets' must be a JSON array, got a JSON {json_type(entries)}")
    out: list[ConnectorOffset] = []
    for i, entry in enumerate(entries):
        if not isinstance(entry, dict):
            raise BadRequestError(f"offsets[{i}] must be a JSON object with 'partition' and 'offset', "
                                  f"got a JSON {json_type(entry)}")
        partition, offset = entry.get("partition"), entry.get("offset")
        if not isinstance(partition, dict):
            raise BadRequestError(f"offsets[{i}].partition must be a JSON object, "
                                  f"got a JSON {json_type(partition)}")
        if offset is not None and not isinstance(offset, dict):
            raise BadRequestError(f"offsets[{i}].offset must be a JSON object or null, "
                                  f"got a JSON {json_type(offset)}")
        out.append(ConnectorOffset(partition=partition, offset=offset))
    return out


class ConnectorResources:
    """The routes of one herder; ``prefix`` is its namespace path (``""`` at the root), for Location."""

    def __init__(self, herder: Herder, forwarder: Forwarder, prefix: str = "",
                 request_timeout_s: float = DEFAULT_REQUEST_TIMEOUT_S,
                 provider_allowlist: frozenset[str] | None = None,
                 path_policy: path_allowlist.PathPolicy | None = None) -> None:
        self._herder = herder
        #: Config providers a submitted config may use; None: any.
        self._allowed_providers = provider_allowlist
        #: Files a submitted config may name; None: any.
        self._path_policy = path_policy
        self._forwarder = forwarder
        self._prefix = prefix
        self._timeout_s = request_timeout_s

    def routes(self) -> list[BaseRoute]:
        f = self._forwarder
        c = "/connectors/{connector}"

        def route(path: str, handler: Handler, methods: Sequence[str], forwarder: Forwarder) -> BaseRoute:
            return make_route(path, handler, methods, forwarder, timeout_s=self._timeout_s)

        return [
            route("/", self.root, ["GET"], f),
            route("/health", self.health, ["GET"], f),
            route("/connectors", self.list_connectors, ["GET"], f),
            route("/connectors", self.create_connector, ["POST"], f),
            route(c, self.get_connector, ["GET"], f),
            route(c, self.delete_connector, ["DELETE"], f),
            route(c + "/config", self.get_config, ["GET"], f),
            route(c + "/config", self.put_config, ["PUT"], f),
            route(c + "/config", self.patch_config, ["PATCH"], f),
            route(c + "/status", self.status, ["GET"], f),
            route(c + "/tasks", self.tasks, ["GET"], f),
            route(c + "/tasks-config", self.tasks_config, ["GET"], f),
            route(c + "/tasks/{task}/status", self.task_status, ["GET"], f),
            route(c + "/tasks/{task}/restart", self.restart_task, ["POST"], f),
            route(c + "/restart", self.restart_connector, ["POST"], f),
            route(c + "/pause", self.pause, ["PUT"], f),
            route(c + "/resume", self.resume, ["PUT"], f),
            route(c + "/stop", self.stop, ["PUT"], f),
            route(c + "/offsets", self.get_offsets, ["GET"], f),
            route(c + "/offsets", self.alter_offsets, ["PATCH"], f),
            route(c + "/offsets", self.reset_offsets, ["DELETE"], f),
            route(c + "/topics", self.topics, ["GET"], f),
            route(c + "/topics/reset", self.reset_topics, ["PUT"], f),
            route("/connector-plugins", self.plugins, ["GET"], f),
            route("/connector-plugins/{plugin}/config", self.plugin_config, ["GET"], f),
            route("/connector-plugins/{plugin}/config/validate", self.validate, ["PUT"], f),
        ]

    def _check_submitted(self, config: Mapping[str, str | None]) -> None:
        if self._allowed_providers is not None:
            check_allowed_providers(config, self._allowed_providers)
        if self._path_policy is not None:
            path_allowlist.check(config, self._path_policy)

    # -- worker -------------------------------------------------------------------------------------
    def root(self, call: Call) -> Response:
        return json_response(server_info(self._herder.kafka_cluster_id()))

    def health(self, call: Call) -> Response:
        health = self._herder.health()
        status = _HEALTH_STATUS.get(health.status, 500)
        return json_response({"status": health.status, "message": health.message}, status)

    # -- connectors ---------------------------------------------------------------------------------
    def list_connectors(self, call: Call) -> Response:
        expansions = call.query_values("expand")
        if not any(k == "expand" for k, _ in call.query):
            return json_response(self._herder.connectors())
        out: dict[str, dict[str, Any]] = {}
        for name in self._herder.connectors():
            try:
                expanded: dict[str, Any] = {}
                for expansion in expansions:
                    if expansion == "status":
                        expanded["status"] = self._herder.connector_status(name).to_json()
                    elif expansion == "info":
                        expanded["info"] = _info_json(self._herder.connector_info(name))
                    else:
                        logger.info("Ignoring unknown expansion type %s", expansion)
                out[name] = expanded
            except NotFoundError:
                # Deleted while we were looking it up: Connect leaves it out rather than failing.
                logger.debug("Unable to get connector info for %s on this worker", name)
        return json_response(out)

    def create_connector(self, call: Call) -> Response:
        body = call.json('a JSON object {"name": ..., "config": {...}}')
        if not isinstance(body, dict):
            raise BadRequestError(f'Expected a JSON object {{"name": ..., "config": {{...}}}}, '
                                  f"got a JSON {json_type(body)}")
        raw_name = body.get("name")
        if raw_name is None:
            raise BadRequestError("Connector name must be provided in the request body ('name')")
        if not is_json_string(raw_name):
            raise BadRequestError(f"'name' must be a string, got a JSON {json_type(raw_name)}")
        name = str(raw_name).strip()
        if "config" not in body or body["config"] is None:
            raise BadRequestError("Connector configuration must be provided in the request body ('config')")
        config = strict_string_map(body["config"], "the connector config")
        initial = body.get("initial_state")
        state = None
        if initial is not None:
            if not is_json_string(initial) or str(initial).upper() not in _INITIAL_STATES:
                raise BadRequestError(f"'initial_state' must be one of {sorted(_INITIAL_STATES)}, "
                                      f"got {initial!r}")
            state = _INITIAL_STATES[str(initial).upper()]
        check_connector_name(name, config)
        self._check_submitted(config)
        created = self._herder.put_connector_config(name, config, allow_replace=False, initial_state=state)
        location = f"{self._prefix}/connectors/{quote(name, safe='')}"
        return json_response(_info_json(created.info), 201, {"Location": location})

    def get_connector(self, call: Call) -> Response:
        return json_response(_info_json(self._herder.connector_info(call.param("connector"))))

    def delete_connector(self, call: Call) -> Response:
        self._herder.delete_connector(call.param("connector"))
        return empty_response(204)

    def get_config(self, call: Call) -> Response:
        return json_response(mask_config(self._herder.connector_config(call.param("connector"))))

    def put_config(self, call: Call) -> Response:
        name = call.param("connector")
        config = strict_string_map(call.json("the connector config as a JSON object of strings"),
                                   "the connector config")
        check_connector_name(name, config)
        self._check_submitted(config)
        created = self._herder.put_connector_config(name, config, allow_replace=True)
        if created.created:
            location = f"{self._prefix}/connectors/{quote(name, safe='')}"
            return json_response(_info_json(created.info), 201, {"Location": location})
        return json_response(_info_json(created.info), 200)

    def patch_config(self, call: Call) -> Response:
        name = call.param("connector")
        patch = string_map(call.json("a JSON object of strings (null removes a key)"),
                           "the connector config patch", allow_null=True)
        if "name" in patch and patch["name"] != name:
            raise BadRequestError(f"Connector name configuration ({patch['name']}) doesn't match connector "
                                  f"name in the URL ({name})")
        self._check_submitted(patch)
        return json_response(_info_json(self._herder.patch_connector_config(name, patch)))

    def status(self, call: Call) -> Response:
        return json_response(self._herder.connector_status(call.param("connector")).to_json())

    def tasks(self, call: Call) -> Response:
        infos = self._herder.task_configs(call.param("connector"))
        return json_response([{"id": t.id.to_json(), "config": mask_config(t.config)} for t in infos])

    def tasks_config(self, call: Call) -> Response:
        infos = self._herder.task_configs(call.param("connector"))
        return json_response({str(t.id): mask_config(t.config) for t in infos})

    def task_status(self, call: Call) -> Response:
        task = ConnectorTaskId(call.param("connector"), call.int_param("task"))
        return json_response(self._herder.task_status(task).to_json())

    def restart_task(self, call: Call) -> Response:
        self._herder.restart_task(ConnectorTaskId(call.param("connector"), call.int_param("task")))
        return empty_response(204)

    def restart_connector(self, call: Call) -> Response:
        include_tasks = call.query_bool("includeTasks", False)
        only_failed = call.query_bool("onlyFailed", False)
        states = self._herder.restart_connector(call.param("connector"), include_tasks, only_failed)
        if (not include_tasks and not only_failed) or states is None:
            return empty_response(204)  # Connect: "just restart the connector instance", no body
        return json_response(states.to_json(), 202)

    def pause(self, call: Call) -> Response:
        self._herder.pause_connector(call.param("connector"))
        return empty_response(202)

    def resume(self, call: Call) -> Response:
        self._herder.resume_connector(call.param("connector"))
        return empty_response(202)

    def stop(self, call: Call) -> Response:
        self._herder.stop_connector(call.param("connector"))
        return empty_response(204)

    # -- offsets (KIP-875) --------------------------------------------------------------------------
    def get_offsets(self, call: Call) -> Response:
        offsets = self._herder.connector_offsets(call.param("connector"))
        return json_response({"offsets": [o.to_json() for o in offsets]})

    def alter_offsets(self, call: Call) -> Response:
        expected = 'a JSON object {"offsets": [{"partition": {...}, "offset": {...}}]}'
        offsets = _offsets(plain(call.json(expected, literal_numbers=False)))
        self._herder.alter_connector_offsets(call.param("connector"), offsets)
        return json_response({"message": ALTERED_MESSAGE})

    def reset_offsets(self, call: Call) -> Response:
        self._herder.reset_connector_offsets(call.param("connector"))
        return json_response({"message": RESET_MESSAGE})

    # -- topic tracking (KIP-558) -------------------------------------------------------------------
    def topics(self, call: Call) -> Response:
        name = call.param("connector")
        return json_response({name: {"topics": sorted(self._herder.connector_active_topics(name))}})

    def reset_topics(self, call: Call) -> Response:
        self._herder.reset_connector_active_topics(call.param("connector"))
        return empty_response(202)

    # -- plugins ------------------------------------------------------------------------------------
    def plugins(self, call: Call) -> Response:
        connectors_only = call.query_bool("connectorsOnly", True)
        return json_response([p.to_json() for p in self._herder.connector_plugins(connectors_only)])

    def plugin_config(self, call: Call) -> Response:
        return json_response(self._herder.plugin_config(call.param("plugin")))

    def validate(self, call: Call) -> Response:
        plugin = call.param("plugin")
        config = strict_string_map(call.json("the connector config as a JSON object of strings"),
                                   "the connector config")
        included = config.get("connector.class")
        if included is not None and not _normalized_plugin(included).endswith(_normalized_plugin(plugin)):
            raise BadRequestError(f"Included connector type {included} does not match request type {plugin}")
        self._check_submitted(config)
        infos = self._herder.validate_connector_config(config, plugin=plugin)
        return json_response(_redacted_config_infos(infos))
