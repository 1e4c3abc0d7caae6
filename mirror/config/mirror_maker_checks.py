"""Checking an ``mm2.properties`` before a run: everything a herder would trip over, reported at its line.

Java MM2 starts with a file that names an undeclared alias in ``--clusters``, leaves a cluster without
``bootstrap.servers`` or holds a connector value that does not parse, and then replicates nothing; here
:func:`validate_mirror_maker_config` refuses such a file with one :class:`ConfigError` naming
``file:line``. Kept apart from :mod:`mirror.config.mirror_maker_config`, which derives configs from the file
(the faithful port of Java's ``MirrorMakerConfig``): these checks are ours, and read the file only
through its public derivations.
"""

from __future__ import annotations

from collections.abc import Iterable

from connect_runtime.api.errors import ConfigError
from mirror.config.client_keys import BOOTSTRAP_SERVERS, CLIENT_CONFIG_NAMES, CLIENT_SECURITY_CONFIG_DEF
from mirror.config.connector_base import REPLICATION_POLICY_CLASS, validate_replication_policy_class
from mirror.config.mirror_maker_config import (
    CLIENT_PREFIXES,
    CLUSTERS,
    CONNECTOR_CLASSES,
    CONNECTOR_CONFIG_DEFS,
    MirrorMakerConfig,
    SourceAndTarget,
    connector_simple_name,
)
from mirror.config.secret_references import CONFIGS_TOPIC_COMPATIBILITY, literal_secret, stores_secrets_in_clear


def validate_mirror_maker_config(config: MirrorMakerConfig, clusters: Iterable[str] | None = None, *,
                                 resolve_providers: bool = True) -> list[SourceAndTarget]:
    """Check everything a run needs and return the herder pairs; the first problem is a ConfigError.

    Checks, in order: ``--clusters`` aliases are declared; some
    flow exists; every cluster of a built pair has ``bootstrap.servers``; the top-level replication
    policy loads; every connector config of every pair parses (regexes, integers, enums...); no secret would
    be stored in clear in a configs topic (``configs.topic.compatibility = java``, the default).
    ``resolve_providers=False`` skips resolving ``${provider:...}`` (for ``config show``, which must
    work without the secrets at hand).
    """
    pairs = config.herder_pairs(clusters)
    if resolve_providers:
        _check_placeholders(config)
    for alias in dict.fromkeys(a for p in pairs for a in (p.source, p.target)):
        if not config.cluster_props(alias).get(BOOTSTRAP_SERVERS, "").strip():
            users = ", ".join(str(p) for p in pairs if alias in (p.source, p.target))
            raise ConfigError(
                f"{config.location(CLUSTERS)}: cluster {alias!r} has no bootstrap.servers: expected "
                f"'{alias}.bootstrap.servers = host:port[,host:port...]' (needed by {users})",
                f"{alias}.{BOOTSTRAP_SERVERS}")
    for alias in dict.fromkeys(a for p in pairs for a in (p.source, p.target)):
        _check_cluster_security(config, alias)
    raw = config.raw_properties()
    if REPLICATION_POLICY_CLASS in raw:
        try:
            validate_replication_policy_class(REPLICATION_POLICY_CLASS, raw[REPLICATION_POLICY_CLASS].strip())
        except ConfigError as exc:
            raise _error(config, REPLICATION_POLICY_CLASS, str(exc)) from exc
    for pair in pairs:
        config.worker_config(pair, resolve_providers=resolve_providers)  # a missing ${env:X} fails here
        for connector_class in CONNECTOR_CLASSES:
            _check_connector(config, pair, connector_class, resolve_providers)
    _check_stored_secrets(config, pairs)
    return pairs


def _check_stored_secrets(config: MirrorMakerConfig, pairs: Iterable[SourceAndTarget]) -> None:
    """Java's stored configs hold what the file holds: a secret must come from a config provider, whose
    reference is stored and resolved by each node (Java's too), never written in the file itself."""
    if not stores_secrets_in_clear(config.get(CONFIGS_TOPIC_COMPATIBILITY)):
        return  # stored as ${mm2:<key>} references instead (mirror.config.secret_references)
    for pair in pairs:
        for connector_class in CONNECTOR_CLASSES:
            for key, value in config.connector_base_config(pair, connector_class).items():
                if literal_secret(key, value):
                    origin = config.key_origin(key, pair) or key
                    raise _error(config, origin, (
                        f"{origin} holds a secret in clear, and the configs topic would carry it so that Java "
                        f"MirrorMaker nodes can run the connectors ({CONFIGS_TOPIC_COMPATIBILITY} = java, the "
                        f"default): take it from a config provider (config.providers; e.g. ${{file:<path>:<key>}} with "
                        f"Kafka's FileConfigProvider, in a JAAS line password=\"${{file:<path>:<key>}}\"), or set "
                        f"{CONFIGS_TOPIC_COMPATIBILITY} = python if no Java node runs these flows"))


def _error(config: MirrorMakerConfig, key: str | None, message: str) -> ConfigError:
    return ConfigError(f"{config.location(key)}: {message}", key)


def _check_placeholders(config: MirrorMakerConfig) -> None:
    """Resolve every ``${...}`` where it is written, so a missing secret is reported at its line."""
    for key, value in config.raw_properties().items():
        if "${" in value:
            config.resolved({key: value})


def _check_cluster_security(config: MirrorMakerConfig, alias: str) -> None:
    """``<alias>.security.protocol`` & co reach clients unparsed by any connector: check them here."""
    props = config.cluster_props(alias)
    raw = config.raw_properties()
    for client in ("", *CLIENT_PREFIXES):
        subset = {k[len(client):]: v for k, v in props.items()
                  if k.startswith(client) and k[len(client):] in CLIENT_CONFIG_NAMES}
        try:
            CLIENT_SECURITY_CONFIG_DEF.parse(subset)
        except ConfigError as exc:
            candidates = [f"{alias}.{client}{exc.key}", f"{alias}.{exc.key}", f"{exc.key}"]
            origin = next((c for c in candidates if c in raw), None)
            message = str(exc)
            if origin and exc.key:
                message = message.replace(f"configuration {exc.key}", f"configuration {origin}")
            raise _error(config, origin, f"{message} (cluster {alias})") from exc


def _check_connector(config: MirrorMakerConfig, pair: SourceAndTarget, connector_class: str,
                     resolve_providers: bool) -> None:
    """Parse a connector config as the worker will: after provider resolution."""
    try:
        config.connector_stored_config(pair, connector_class)
    except ConfigError as exc:
        raise _error(config, exc.key, str(exc)) from exc
    connector_config = config.connector_base_config(pair, connector_class)
    if resolve_providers:
        connector_config = config.resolved(connector_config)
    try:
        CONNECTOR_CONFIG_DEFS[connector_class].parse(connector_config)
    except ConfigError as exc:
        origin = config.key_origin(exc.key, pair)
        message = str(exc)
        if exc.key and origin and origin != exc.key:
            message = message.replace(f"configuration {exc.key}", f"configuration {origin}")
        raise ConfigError(f"{config.location(origin)}: {message} "
                          f"({connector_simple_name(connector_class)} of flow {pair})", origin) from exc
