"""Validating a connector config before it is stored (Connect's ``AbstractHerder.validateConnectorConfig``).

A config is checked against two definitions: the keys every connector has
(:data:`connect_runtime.api.connector_config.CONNECTOR_CONFIG_DEF`, Connect's ``ConnectorConfig``:
``name``, ``connector.class``, ``tasks.max``...) and the connector's own ``validate`` (by default its
``config_def()``). The result is Connect's ConfigInfos shape, which
``PUT /connector-plugins/{plugin}/config/validate`` returns as is and which a create/update turns into
a 400 listing the errors. A key naming code the process's policy does not permit
(:mod:`connect_runtime.api.plugin_allowlist`) is one of those errors, found before anything is imported.
Values are returned as given (the REST layer redacts secrets); errors name keys, never values.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from connect_runtime.api.client_overrides import ALLOW_ALL, OVERRIDE_PREFIXES, OverridePolicy
from connect_runtime.api.config import ConfigDef, ConfigKey, ConfigValue, Type, parse_value
from connect_runtime.api.connector import Connector, ExactlyOnceSupport, SourceConnector
from connect_runtime.api.connector_config import (
    COMMON_GROUP,
    CONNECTOR_CONFIG_DEF,
    EXACTLY_ONCE_SUPPORT,
    TASKS_MAX,
    TRANSACTION_BOUNDARY,
)
from connect_runtime.api.connector_config import CONNECTOR_CLASS as CONNECTOR_CLASS  # read by the herders
from connect_runtime.api.errors import BadRequestError, ConnectError
from connect_runtime.api.prefixed_keys import with_prefix_stripped
from connect_runtime.api.transforms import validate_chain
from connect_runtime.clients import security_keys
from connect_runtime.clients.sasl_properties import check_code_keys
from connect_runtime.runtime.herder import ConfigInfos


def config_key_info(key: ConfigKey) -> dict[str, Any]:
    """Connect's ConfigKeyInfo JSON (note: ``order``, not ``order_in_group``)."""
    default = None if key.required else key.default_string()
    return {"name": key.name, "type": key.type.value, "required": key.required, "default_value": default,
            "importance": key.importance.value, "documentation": key.doc, "group": key.group,
            "order": key.order_in_group, "width": "NONE", "display_name": key.display_name or key.name,
            "dependents": list(key.dependents)}


def config_value_info(value: ConfigValue) -> dict[str, Any]:
    return {"name": value.name, "value": None if value.value is None else str(value.value),
            "recommended_values": list(value.recommended_values), "errors": list(value.errors),
            "visible": value.visible}


def _plugin_def(connector: Connector) -> ConfigDef:
    try:
        return type(connector).config_def()
    except Exception as exc:
        name = type(connector).__name__
        raise ConnectError(f"Connector {name} failed to describe its config: {exc}") from exc


def validate(connector: Connector, config: Mapping[str, str], policy: OverridePolicy = ALLOW_ALL, *,
             exactly_once: bool = False) -> ConfigInfos:
    """Validate ``config`` for ``connector`` (an unstarted instance); never raises for bad values.

    ``policy`` is the worker's ``connector.client.config.override.policy``: each ``producer.override.*``,
    ``consumer.override.*`` or ``admin.override.*`` key it refuses is an error on that key, as in Connect.
    ``exactly_once`` is the worker's ``exactly.once.source.support=enabled``.
    """
    base = CONNECTOR_CONFIG_DEF.validate(config)
    plugin_def = _plugin_def(connector)
    try:
        plugin_results = connector.validate(config)
    except ConnectError:
        raise
    except Exception as exc:
        name = type(connector).__name__
        raise ConnectError(f"Connector {name} failed to validate the config: {exc}") from exc
    groups: list[str] = [COMMON_GROUP]
    configs: list[dict[str, Any]] = []
    error_count = 0
    definitions: dict[str, ConfigKey] = {}
    for key in CONNECTOR_CONFIG_DEF.keys() + plugin_def.keys():
        definitions.setdefault(key.name, key)
        if key.group and key.group not in groups:
            groups.append(key.group)
    results: dict[str, ConfigValue] = dict(base)
    for name, value in plugin_results.items():
        if name in results:
            results[name].errors.extend(e for e in value.errors if e not in results[name].errors)
        else:
            results[name] = value
    for name, messages in validate_chain(config).items():  # transforms.<alias>.*, predicates.<alias>.*
        value = results.setdefault(name, ConfigValue(name, config.get(name)))
        value.errors.extend(m for m in messages if m not in value.errors)
    for name, message in policy.errors(config).items():
        results.setdefault(name, ConfigValue(name, config[name])).errors.append(message)
    for name, message in security_keys.errors(config, OVERRIDE_PREFIXES).items():  # values no client enforces
        results.setdefault(name, ConfigValue(name, config[name])).errors.append(message)
    for name, message in _override_code_errors(config).items():
        results.setdefault(name, ConfigValue(name, config[name])).errors.append(message)
    if isinstance(connector, SourceConnector):
        _exactly_once_checks(connector, config, results, exactly_once)
    for name, value in results.items():
        key = definitions.get(name) or ConfigKey(name, Type.STRING, None)
        error_count += len(value.errors)
        configs.append({"definition": config_key_info(key), "value": config_value_info(value)})
    return ConfigInfos(name=type(connector).__name__, error_count=error_count, groups=groups, configs=configs)


def _override_code_errors(config: Mapping[str, str]) -> dict[str, str]:
    """Client overrides that name code this process may not run (a token callback named in
    ``producer.override.sasl.login.callback.handler.class`` is called at client build): refused here, as a
    400, rather than failing (or running) when the task builds its client."""
    errors = {}
    for prefix in OVERRIDE_PREFIXES:
        for key, message in check_code_keys(with_prefix_stripped(config, prefix)).items():
            full = prefix + key
            named = message.replace(f"configuration {key}", f"configuration {full}")
            errors[full] = named if full in named else f"{full}: {named.removeprefix(f'{key}: ')}"
    return errors


def _exactly_once_checks(connector: SourceConnector, config: Mapping[str, str], results: dict[str, ConfigValue],
                         exactly_once: bool) -> None:
    """Connect's ``DistributedHerder.validateSourceConnectorExactlyOnceSupport`` and
    ``validateSourceConnectorTransactionBoundary``, on keys that passed their own checks."""
    _transaction_boundary_check(connector, config, results)
    support = results.get(EXACTLY_ONCE_SUPPORT)
    if support is not None and not support.errors and str(support.value or "").strip().lower() == "required":
        if not exactly_once:  # Java adds the connector's answer too; one line says what to do first
            support.errors.append("exactly.once.support=required: this worker does not have exactly-once source "
                                  "support enabled (set exactly.once.source.support=enabled on the worker; for "
                                  "MirrorMaker <target>.exactly.once.source.support=enabled)")
            return
        try:
            level = connector.exactly_once_support(config)
        except Exception as exc:
            support.errors.append(f"An unexpected error occurred during validation: {exc}")
        else:
            if level is None:
                support.errors.append("The connector does not implement the API required for preflight validation "
                                      "of exactly-once source support; use exactly.once.support=requested")
            elif level is not ExactlyOnceSupport.SUPPORTED and not support.errors:
                support.errors.append("The connector does not support exactly-once semantics with the provided "
                                      "configuration.")


def _transaction_boundary_check(connector: SourceConnector, config: Mapping[str, str],
                                results: dict[str, ConfigValue]) -> None:
    boundary = results.get(TRANSACTION_BOUNDARY)
    if boundary is not None and not boundary.errors and str(boundary.value or "").strip().lower() == "connector":
        try:
            supported = connector.can_define_transaction_boundaries(config)
        except Exception as exc:
            boundary.errors.append(f"An unexpected error occurred during validation: {exc}")
        else:
            if not supported:
                boundary.errors.append("transaction.boundary=connector: the connector does not support "
                                       "connector-defined transaction boundaries with the given configuration; "
                                       "use poll or interval")


def errors_message(infos: ConfigInfos) -> str:
    """Connect's 400 message for an invalid config: the count, then one line per error."""
    lines = [f"Connector configuration is invalid and contains the following {infos.error_count} error(s):"]
    for entry in infos.configs:
        lines.extend(entry["value"]["errors"])
    lines.append("You can also find the above list of errors at the endpoint "
                 "`/connector-plugins/{connectorType}/config/validate`")
    return "\n".join(lines)


def raise_if_invalid(infos: ConfigInfos) -> None:
    if infos.error_count > 0:
        raise BadRequestError(errors_message(infos))


def max_tasks(config: Mapping[str, str]) -> int:
    """``tasks.max`` of a stored (already validated) config."""
    return int(parse_value(TASKS_MAX, Type.INT, config.get(TASKS_MAX, "1")))
