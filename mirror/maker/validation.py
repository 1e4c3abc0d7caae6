"""Checking an ``mm2.properties`` the way the running herders will, before anything starts.

:func:`~mirror.config.mirror_maker_checks.validate_mirror_maker_config` checks the file's own structure
(aliases, flows, bootstrap servers) and parses each connector config against its ConfigDef. A herder
does more: it parses its worker config (``exactly.once.source.support``, the client override policy...)
and, before storing a connector config, runs Connect's validation, i.e. the connector's own ``validate``
(MM2's cross-key rules) and the worker's ``connector.client.config.override.policy`` over
``producer.override.*`` & co. Java MM2 only logs such a refusal and runs without that connector; here
``connect-mirror-maker`` and ``mirror config show`` refuse the file with exit 2 and one line naming the
key, so a mistake is seen before a node starts rather than in a log line after it.

One refusal is kept as Java has it, because it is how an operator switches the checkpoint connector
off: ``emit.checkpoints.enabled=false`` or ``emit.offset-syncs.enabled=false`` on an enabled flow.
Those are returned as notices (the driver logs them, ``config show`` prints them), not errors.
"""

from __future__ import annotations

from collections.abc import Iterable

from connect_runtime.api.errors import ConfigError
from connect_runtime.runtime import worker_config as wc
from connect_runtime.runtime.worker import connector_validation
from connect_runtime.runtime.worker.plugins import Plugins
from mirror.config.checkpoint import EMIT_CHECKPOINTS_ENABLED
from mirror.config.mirror_maker_checks import validate_mirror_maker_config
from mirror.config.mirror_maker_config import (
    CHECKPOINT_CONNECTOR_CLASS,
    CONNECTOR_CLASSES,
    MirrorMakerConfig,
    SourceAndTarget,
    connector_simple_name,
)
from mirror.config.source import EMIT_OFFSET_SYNCS_ENABLED

#: (connector class, key): refusals that mean "this connector is switched off", not a mistake.
_SWITCHED_OFF = frozenset({(CHECKPOINT_CONNECTOR_CLASS, EMIT_CHECKPOINTS_ENABLED),
                           (CHECKPOINT_CONNECTOR_CLASS, EMIT_OFFSET_SYNCS_ENABLED)})


def validate_flows(config: MirrorMakerConfig, clusters: Iterable[str] | None = None, *,
                   resolve_providers: bool = True, plugins: Plugins | None = None) -> list[str]:
    """Run :func:`~mirror.config.mirror_maker_checks.validate_mirror_maker_config`, then what each herder
    would check; return the notices.

    Raises :class:`ConfigError` (``file:line: message``) for the first worker key or connector key a
    herder would refuse.
    """
    pairs = validate_mirror_maker_config(config, clusters, resolve_providers=resolve_providers)
    plugins = plugins or Plugins()
    notices: list[str] = []
    for pair in pairs:
        worker = _worker_config(config, pair, resolve_providers)
        for connector_class in CONNECTOR_CLASSES:
            notices += _check_connector(config, pair, connector_class, worker, plugins, resolve_providers)
    return notices


def _worker_config(config: MirrorMakerConfig, pair: SourceAndTarget,
                   resolve_providers: bool) -> wc.DistributedWorkerConfig:
    try:
        return wc.DistributedWorkerConfig(config.worker_config(pair, resolve_providers=resolve_providers))
    except ConfigError as exc:
        origin = config.key_origin(exc.key, pair, worker=True)
        raise ConfigError(f"{config.location(origin)}: {_renamed(str(exc), exc.key, origin)} "
                          f"(worker config of flow {pair})", origin) from exc


def _check_connector(config: MirrorMakerConfig, pair: SourceAndTarget, connector_class: str,
                     worker: wc.DistributedWorkerConfig, plugins: Plugins, resolve_providers: bool) -> list[str]:
    props = config.connector_base_config(pair, connector_class)
    if resolve_providers:
        props = config.resolved(props)
    connector = plugins.new_connector(connector_class)
    infos = connector_validation.validate(connector, props, worker.override_policy,
                                          exactly_once=worker.exactly_once_source_enabled)
    name = connector_simple_name(connector_class)
    notices = []
    for entry in infos.configs:
        key = entry["value"]["name"]
        for error in entry["value"]["errors"]:
            if (connector_class, key) in _SWITCHED_OFF:
                notices.append(f"{name} of flow {pair} will not run: {error}")
                continue
            origin = config.key_origin(key, pair)
            raise ConfigError(f"{config.location(origin)}: {_renamed(error, key, origin)} ({name} of flow {pair})",
                              origin)
    return notices


def _renamed(message: str, key: str | None, origin: str | None) -> str:
    """Name the key as the operator wrote it (``A->B.transforms``), not as the connector sees it; a
    connector's own message that names no key gets it in front."""
    if key and origin and origin != key:
        message = message.replace(f"configuration {key}", f"configuration {origin}")
    if origin and origin not in message:
        message = f"{origin}: {message}"
    return message
