"""``MirrorMakerConfig``: one ``mm2.properties`` turned into herders, worker configs and connector configs.

This is a faithful port of Kafka's ``MirrorMakerConfig``: the same flat
namespace (``clusters``, ``<alias>.*``, ``<src>-><tgt>.*``, top-level defaults), the same four derivations
and the same precedence, so an operator's existing file means exactly what it meant under Java MM2 —
quirks included (the heartbeat-only reverse herder, the untrimmed ``A->B.enabled`` check).

Where Java silently ignores a mistake that would leave replication quietly broken (an undeclared alias
in ``--clusters``, a cluster in use without ``bootstrap.servers``),
:func:`mirror.maker.config_check.check_mm2_properties` reports it instead, pointing at
``file:line``, as it reports a key written where MM2 does not read it.
"""

from __future__ import annotations

import logging
import re
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from typing import Any

from connect_runtime.api import client_overrides as co
from connect_runtime.api.config import ConfigDef, ConfigKey, Importance, Type
from connect_runtime.api.config_provider import ConfigProvider, build_providers, resolve
from connect_runtime.api.connector_config import CONNECTOR_CLASS, NAME
from connect_runtime.api.errors import ConfigError
from connect_runtime.api.plugin_allowlist import PLUGIN_ALLOWLIST, PLUGIN_ALLOWLIST_DOC
from connect_runtime.api.prefixed_keys import with_prefix_stripped
from connect_runtime.api.properties import PropertiesFile, load_properties
from connect_runtime.api.rest_config import REST_SECURITY_CONFIG_DEF
from connect_runtime.api.secrets import SECRETS_KEYS, apply_secret_keys, is_sensitive_key, remember_secrets
from mirror.config import checkpoint as checkpoint_config
from mirror.config import heartbeat as heartbeat_config
from mirror.config import source as source_config
from mirror.config.client_keys import CLIENT_CONFIG_NAMES, CLIENT_SECURITY_CONFIG_DEF
from mirror.config.connector_base import (
    SOURCE_CLUSTER_ALIAS,
    TARGET_CLUSTER_ALIAS,
)
from mirror.config.secret_references import (
    CONFIGS_TOPIC_COMPATIBILITY,
    CONFIGS_TOPIC_COMPATIBILITY_KEY,
    MM2_PROVIDER,
    MirrorPropertiesProvider,
    secret_reference,
    stores_secrets_in_clear,
)
from mirror.config.settings import Flag

logger = logging.getLogger(__name__)

# ---- the keys only the driver reads -------------------------------------------------------------------
# clusters, the REST listeners, config providers, the plugin allowlist... and their ConfigDef (defaults,
# types, docs), which config lint, ``mirror config docs`` and the key tests enumerate too.

CLUSTERS = "clusters"
STRICT = "config.strict"
ENABLE_INTERNAL_REST = "dedicated.mode.enable.internal.rest"
CONFIG_PROVIDERS = "config.providers"
LISTENERS = "listeners"
LISTENERS_DEFAULT = "http://:8083"
REST_ADVERTISED_HOST_NAME = "rest.advertised.host.name"
REST_ADVERTISED_PORT = "rest.advertised.port"
REST_ADVERTISED_LISTENER = "rest.advertised.listener"
ACCESS_CONTROL_ALLOW_ORIGIN = "access.control.allow.origin"
ACCESS_CONTROL_ALLOW_METHODS = "access.control.allow.methods"
RESPONSE_HTTP_HEADERS_CONFIG = "response.http.headers.config"

_DRIVER = "MirrorMaker"

CONFIG_DEF: ConfigDef = ConfigDef([
    ConfigKey(CLUSTERS, Type.LIST, importance=Importance.HIGH, group=_DRIVER,
              doc="Comma-separated list of cluster aliases, e.g. 'clusters = primary, backup'. "
                  "Each alias then takes '<alias>.bootstrap.servers' and other '<alias>.*' settings."),
    ConfigKey(STRICT, Type.BOOLEAN, False, Importance.LOW, group=_DRIVER,
              doc="Whether every warning about this file (a key MM2 does not apply where it is written, an "
                  "unknown key) refuses the start with exit 2, as the --strict flag does."),
    ConfigKey(ENABLE_INTERNAL_REST, Type.BOOLEAN, False, Importance.HIGH, group=_DRIVER,
              doc="Whether to serve the internal REST endpoints (KIP-710) so that followers can forward task "
                  "configs and zombie-fencing requests to the leader of each flow. Needed when several nodes "
                  "share the flows, as in Java MM2."),
    ConfigKey(CONFIG_PROVIDERS, Type.LIST, [], Importance.LOW, group=_DRIVER,
              doc="Names of ConfigProviders; declare each with 'config.providers.<name>.class'. They resolve "
                  "${provider:[path:]key} in worker and client configs; connector configs are resolved later "
                  "by the worker."),
    ConfigKey(LISTENERS, Type.LIST, LISTENERS_DEFAULT, Importance.LOW, group=_DRIVER,
              doc="Listeners of the REST server: each flow's Connect API under /<source>/<target>/, /metrics, "
                  "/ui, and the internal endpoints with dedicated.mode.enable.internal.rest. "
                  "http://host:port or https://host:port (with listeners.https.ssl.*)."),
    ConfigKey(REST_ADVERTISED_HOST_NAME, Type.STRING, None, Importance.LOW, group=_DRIVER,
              doc="Host name given to other workers to reach the internal REST server."),
    ConfigKey(REST_ADVERTISED_PORT, Type.INT, None, Importance.LOW, group=_DRIVER,
              doc="Port given to other workers to reach the internal REST server."),
    ConfigKey(REST_ADVERTISED_LISTENER, Type.STRING, None, Importance.LOW, group=_DRIVER,
              doc="Listener (http or https) given to other workers."),
    ConfigKey(ACCESS_CONTROL_ALLOW_ORIGIN, Type.STRING, "", Importance.LOW, group=_DRIVER,
              doc="Value of the Access-Control-Allow-Origin header of the internal REST server."),
    ConfigKey(ACCESS_CONTROL_ALLOW_METHODS, Type.STRING, "", Importance.LOW, group=_DRIVER,
              doc="Methods allowed by CORS on the internal REST server."),
    ConfigKey(RESPONSE_HTTP_HEADERS_CONFIG, Type.STRING, "", Importance.LOW, group=_DRIVER,
              doc="Rules for REST API HTTP response headers."),
    ConfigKey(PLUGIN_ALLOWLIST, Type.LIST, [], Importance.HIGH, group=_DRIVER, doc=PLUGIN_ALLOWLIST_DOC),
    CONFIGS_TOPIC_COMPATIBILITY_KEY,
]).merge(CLIENT_SECURITY_CONFIG_DEF).merge(REST_SECURITY_CONFIG_DEF)

# ---- connector classes, as Java MM2 writes them into connector.class -----------------------------------

SOURCE_CONNECTOR_CLASS = "org.apache.kafka.connect.mirror.MirrorSourceConnector"
CHECKPOINT_CONNECTOR_CLASS = "org.apache.kafka.connect.mirror.MirrorCheckpointConnector"
HEARTBEAT_CONNECTOR_CLASS = "org.apache.kafka.connect.mirror.MirrorHeartbeatConnector"
#: The order in which the leader submits the three connectors (Source, Heartbeat, Checkpoint).
CONNECTOR_CLASSES: tuple[str, ...] = (
    SOURCE_CONNECTOR_CLASS, HEARTBEAT_CONNECTOR_CLASS, CHECKPOINT_CONNECTOR_CLASS)

CONNECTOR_CONFIG_DEFS: dict[str, ConfigDef] = {
    SOURCE_CONNECTOR_CLASS: source_config.CONFIG_DEF,
    CHECKPOINT_CONNECTOR_CLASS: checkpoint_config.CONFIG_DEF,
    HEARTBEAT_CONNECTOR_CLASS: heartbeat_config.CONFIG_DEF,
}

#: Java's ``allConfigNames()``: the keys a top-level property must have to reach a connector.
ALL_CONNECTOR_CONFIG_NAMES: frozenset[str] = frozenset().union(
    *(d.names() for d in CONNECTOR_CONFIG_DEFS.values()))

#: Top-level key prefixes that go into every worker config, overriding ``<target>.*``.
WORKER_PREFIXES: tuple[str, ...] = (
    "offset.storage", "config.storage", "status.storage", "key.converter", "value.converter",
    "header.converter", "task", "worker", "replication.policy",
)
BYTE_ARRAY_CONVERTER = "org.apache.kafka.connect.converters.ByteArrayConverter"
CLIENT_PREFIXES = ("producer.", "consumer.", "admin.")
_CLIENT_KEY = re.compile(r"^consumer.*|^producer.*|^admin.*")  # Java's regex, no dots: kept verbatim
_ENABLED = "enabled"


@dataclass(frozen=True, order=True)
class SourceAndTarget:
    """One replication flow / herder: ``source->target``."""

    source: str
    target: str

    def __str__(self) -> str:
        return f"{self.source}->{self.target}"

    @classmethod
    def parse(cls, flow: str) -> SourceAndTarget:
        """``"A->B"`` to ``SourceAndTarget("A", "B")``."""
        source, sep, target = flow.partition("->")
        if not sep or not source.strip() or not target.strip():
            raise ConfigError(f"Invalid flow {flow!r}: expected <source>-><target>, e.g. primary->backup")
        return cls(source.strip(), target.strip())


def parse_boolean(value: str | None) -> bool:
    """Java ``Boolean.parseBoolean``: ``true`` in any case, *untrimmed*; anything else (or None) is false."""
    return value is not None and value.lower() == "true"


def connector_simple_name(connector_class: str) -> str:
    """``org.apache.kafka.connect.mirror.MirrorSourceConnector`` -> ``MirrorSourceConnector``."""
    return connector_class.replace(":", ".").rsplit(".", 1)[-1]


class MirrorMakerConfig:
    """The parsed top-level configuration of a MirrorMaker 2 node.

    ``props`` are the raw strings of ``mm2.properties``; pass the :class:`PropertiesFile` itself so that
    errors can name ``file:line``. Construction parses the driver keys and builds the config
    providers; :func:`mirror.maker.config_check.check_mm2_properties` checks everything a run would
    need.
    """

    CONFIG_DEF = CONFIG_DEF
    enable_internal_rest = Flag(ENABLE_INTERNAL_REST)

    def __init__(self, props: Mapping[str, str]) -> None:
        self._file: PropertiesFile | None = props if isinstance(props, PropertiesFile) else None
        self._raw: dict[str, str] = dict(props)
        try:
            apply_secret_keys(self._raw)  # before anything is remembered or masked
        except ValueError as exc:
            raise self._error(SECRETS_KEYS, str(exc)) from exc
        # Literal secrets: scrubbed from logs, traces and error lines from now on (an invalid value
        # quoted by a ConfigError below included).
        remember_secrets(self._raw)
        try:
            self._values: dict[str, Any] = CONFIG_DEF.parse(self._raw)
        except ConfigError as exc:
            raise self._error(exc.key, self._missing_clusters_message() if exc.key == CLUSTERS and
                              CLUSTERS not in self._raw else str(exc)) from exc
        self._clusters: list[str] = list(dict.fromkeys(a for a in self._values[CLUSTERS] if a))
        try:
            self._providers: dict[str, ConfigProvider] = build_providers(self._raw)
        except ConfigError as exc:
            raise self._error(exc.key, str(exc)) from exc
        if MM2_PROVIDER in self._providers:
            raise self._error(CONFIG_PROVIDERS, f"the config provider name {MM2_PROVIDER!r} is reserved (it "
                                                f"resolves the secret references in the configs topic)")

    @classmethod
    def from_file(cls, path: str) -> MirrorMakerConfig:
        """Load ``mm2.properties``; a missing or unreadable file is a :class:`ConfigError` naming it."""
        return cls(load_properties(path))

    # ---- basics ----

    @property
    def source_name(self) -> str:
        return self._file.path if self._file is not None else "<config>"

    @property
    def properties_file(self) -> PropertiesFile | None:
        """The file as loaded (every definition with its line), or None for a plain mapping."""
        return self._file

    @property
    def clusters(self) -> list[str]:
        """The declared aliases, in file order, without duplicates."""
        return list(self._clusters)

    def get(self, name: str) -> Any:
        """Parsed value of a driver key."""
        return self._values[name]

    def raw_properties(self) -> dict[str, str]:
        return dict(self._raw)

    def worker_providers(self) -> dict[str, ConfigProvider]:
        """The providers a herder's worker resolves connector configs with: the file's own, plus
        ``mm2`` for the secret references of :meth:`connector_stored_config`."""
        return {**self._providers, MM2_PROVIDER: MirrorPropertiesProvider(self._raw, self._resolve)}

    def location(self, key: str | None) -> str:
        """``file:line`` of ``key`` if it is defined in the file, else the file name."""
        if self._file is not None:
            return self._file.location(key)
        return self.source_name

    def _error(self, key: str | None, message: str) -> ConfigError:
        return ConfigError(f"{self.location(key)}: {message}", key)

    def _missing_clusters_message(self) -> str:
        return ("missing required key 'clusters': expected a comma-separated list of aliases, "
                "e.g. clusters = A, B")

    # ---- pairs (docs/architecture.md, "The MM2 driver") ----

    def cluster_pairs(self) -> list[SourceAndTarget]:
        """Every ordered pair that gets a herder: enabled flows plus heartbeat-only pairs.

        Uses Java's untrimmed ``Boolean.parseBoolean``, so ``A->B.enabled = true `` (trailing space)
        does not enable the flow here.
        """
        global_heartbeats = True
        if heartbeat_config.EMIT_HEARTBEATS_ENABLED in self._raw:
            global_heartbeats = parse_boolean(self._raw[heartbeat_config.EMIT_HEARTBEATS_ENABLED])
        pairs = []
        for source in self._clusters:
            for target in self._clusters:
                if source == target:
                    continue
                prefix = f"{source}->{target}."
                enabled = parse_boolean(self._raw.get(prefix + _ENABLED))
                heartbeats = global_heartbeats
                if prefix + heartbeat_config.EMIT_HEARTBEATS_ENABLED in self._raw:
                    heartbeats = parse_boolean(self._raw[prefix + heartbeat_config.EMIT_HEARTBEATS_ENABLED])
                if enabled or heartbeats:
                    pairs.append(SourceAndTarget(source, target))
        return pairs

    def herder_pairs(self, clusters: Iterable[str] | None = None) -> list[SourceAndTarget]:
        """The pairs this node runs: :meth:`cluster_pairs` whose target is in ``clusters`` (``--clusters``).

        ``None`` or empty means every declared alias. Raises :class:`ConfigError` for an undeclared
        alias and, as Java does, when no flow is left.
        """
        wanted = [c for c in (clusters or []) if c]
        for alias in wanted:
            if alias not in self._clusters:
                raise ConfigError(f"--clusters names {alias!r}, which is not declared in "
                                  f"{self.location(CLUSTERS)} (clusters = {', '.join(self._clusters)})",
                                  CLUSTERS)
        targets = set(wanted or self._clusters)
        pairs = [p for p in self.cluster_pairs() if p.target in targets]
        if not pairs:
            raise self._error(CLUSTERS, "No source->target replication flows: enable one with "
                                        "'<source>-><target>.enabled = true' (and check --clusters)")
        return pairs

    # ---- the four derivations ----

    def cluster_props(self, alias: str) -> dict[str, str]:
        """(a) ``<alias>.*`` stripped, with connection/security keys copied to ``producer./consumer./admin.``.

        Top-level connection/security keys are only a fallback for all four forms.
        """
        return {key: self._raw[origin] for key, origin in self._cluster_origins(alias).items()}

    def _cluster_origins(self, alias: str) -> dict[str, str]:
        """:meth:`cluster_props`'s keys, each mapped to the mm2.properties key its value comes from."""
        prefix = f"{alias}."
        origins = with_prefix_stripped({k: k for k in self._raw}, prefix)
        for key in CLIENT_CONFIG_NAMES:
            if key in origins:
                for client in CLIENT_PREFIXES:
                    origins.setdefault(client + key, origins[key])
        for key in CLIENT_CONFIG_NAMES:
            if key in self._raw:
                for client in CLIENT_PREFIXES:
                    origins.setdefault(client + key, key)
                origins.setdefault(key, key)
        return origins

    def worker_config(self, pair: SourceAndTarget, *, resolve_providers: bool = True) -> dict[str, str]:
        """(b) The Connect distributed-worker config of the herder for ``pair`` (it talks to the target).

        ``resolve_providers=False`` keeps ``${provider:...}`` placeholders, for display.
        """
        props = self.cluster_props(pair.target)
        for prefix in WORKER_PREFIXES:
            props.update(self._with_prefix(prefix))
        if resolve_providers:
            props = self._resolve(props)
        props.update(self._with_prefix(CONFIG_PROVIDERS))
        src = pair.source
        props.setdefault("client.id", str(pair))
        props.setdefault("group.id", f"{src}-mm2")
        props.setdefault("offset.storage.topic", f"mm2-offsets.{src}.internal")
        props.setdefault("status.storage.topic", f"mm2-status.{src}.internal")
        props.setdefault("config.storage.topic", f"mm2-configs.{src}.internal")
        for converter in ("key.converter", "value.converter", "header.converter"):
            props.setdefault(converter, BYTE_ARRAY_CONVERTER)
        return with_operator_overrides(props, (self.connector_base_config(pair, c) for c in CONNECTOR_CLASSES))

    def connector_base_config(self, pair: SourceAndTarget, connector_class_name: str) -> dict[str, str]:
        """(c) The config the leader submits for one connector of ``pair`` (not provider-resolved)."""
        return {key: self._raw[origin] if origin else value
                for key, (value, origin) in self._connector_origins(pair, connector_class_name).items()}

    def connector_stored_config(self, pair: SourceAndTarget, connector_class_name: str) -> dict[str, str]:
        """What the driver writes to the configs topic: :meth:`connector_base_config` with each secret
        replaced by a reference to the mm2.properties key it comes from (``${mm2:A.ssl.key.password}``),
        which every node resolves from its own file (:mod:`mirror.config.secret_references`).
        Java MM2 stores the secret itself, and so do we with ``configs.topic.compatibility = java``."""
        if stores_secrets_in_clear(self.get(CONFIGS_TOPIC_COMPATIBILITY)):
            return self.connector_base_config(pair, connector_class_name)
        out = {}
        for key, (value, origin) in self._connector_origins(pair, connector_class_name).items():
            raw = self._raw[origin] if origin else value
            out[key] = secret_reference(origin) if origin and is_sensitive_key(key) and raw else raw
        return out

    def _connector_origins(self, pair: SourceAndTarget,
                           connector_class_name: str) -> dict[str, tuple[str, str | None]]:
        """Each connector key -> (value, the mm2.properties key it comes from, or None for a default)."""
        origins: dict[str, tuple[str, str | None]] = {
            k: ("", k) for k in self._raw if k in ALL_CONNECTOR_CONFIG_NAMES}
        for prefix in (CONFIG_PROVIDERS, "replication.policy"):
            origins.update({k: ("", k) for k in self._with_prefix(prefix)})
        for side, alias in (("source", pair.source), ("target", pair.target)):
            for key, origin in self._cluster_origins(alias).items():
                origins[f"{side}.{key}" if _CLIENT_KEY.match(key) else f"{side}.cluster.{key}"] = ("", origin)
        for key, value in ((NAME, connector_simple_name(connector_class_name)),
                           (CONNECTOR_CLASS, connector_class_name), (SOURCE_CLUSTER_ALIAS, pair.source),
                           (TARGET_CLUSTER_ALIAS, pair.target)):
            origins.setdefault(key, (value, None))
        prefix = f"{pair}."
        origins.update(with_prefix_stripped({k: ("", k) for k in self._raw}, prefix))
        origins.setdefault(_ENABLED, ("false", None))
        return origins

    def client_config(self, alias: str) -> dict[str, str]:
        """(d) A ``MirrorClientConfig`` map for ``alias``: all top-level keys plus cluster props, resolved.

        Used by ``mirror offsets translate`` and other ``MirrorClient`` users.
        """
        props = dict(self._raw)
        props.update(self.cluster_props(alias))
        return self._resolve(props)

    def _origin(self, key: str | None, pair: SourceAndTarget) -> str | None:
        """The mm2.properties key that supplied connector key ``key`` for ``pair`` (for error locations)."""
        if key is None:
            return None
        candidates = [f"{pair}.{key}"]
        for side, alias in (("source", pair.source), ("target", pair.target)):
            for prefix in (f"{side}.cluster.", f"{side}."):
                if key.startswith(prefix):
                    rest = key[len(prefix):]
                    candidates += [f"{alias}.{rest}", rest]
                    client, _, plain = rest.partition(".")
                    if client in ("producer", "consumer", "admin"):
                        candidates += [f"{alias}.{plain}", plain]
        candidates.append(key)
        return next((c for c in candidates if c in self._raw), key)

    def key_origin(self, key: str | None, pair: SourceAndTarget, *, worker: bool = False) -> str | None:
        """The mm2.properties key that supplied ``key`` of ``pair``'s connector (or, ``worker``, worker) config."""
        if worker:
            return None if key is None else next(
                (c for c in (key, f"{pair.target}.{key}") if c in self._raw), key)
        return self._origin(key, pair)

    def resolved(self, props: Mapping[str, str]) -> dict[str, str]:
        """``props`` with ``${provider:...}`` placeholders resolved (ConfigError naming the file if one fails)."""
        return self._resolve(props)

    # ---- helpers ----

    def _with_prefix(self, prefix: str) -> dict[str, str]:
        """Top-level entries whose key starts with ``prefix``, keys unchanged (Java ``stringsWithPrefix``)."""
        return {k: v for k, v in self._raw.items() if k.startswith(prefix)}

    def _resolve(self, props: Mapping[str, str]) -> dict[str, str]:
        try:
            return resolve(props, self._providers)
        except ConfigError as exc:
            raise self._error(exc.key, str(exc)) from exc


def with_operator_overrides(worker: dict[str, str], connector_configs: Iterable[Mapping[str, str]]) -> dict[str, str]:
    """``worker`` (a flow's worker config) with the override keys of ``connector_configs`` allowed.

    A herder's ``connector.client.config.override.policy`` defaults to KIP-1188's Allowlist with tuning keys
    only (:data:`connect_runtime.api.client_overrides.ALLOWLIST_DEFAULT`), which is what a REST caller may
    set. The connector configs the driver writes come from the operator's file, which keeps its full power
    (Java MM2 runs its workers with the All policy for the same reason): each ``producer.override.X``,
    ``consumer.override.X`` or ``admin.override.X`` that file gives a connector of the flow is added to the
    flow's worker allowlist, unless the operator chose a policy (then it is applied as written).
    """
    if co.POLICY in worker:
        return worker
    used = sorted({key for config in connector_configs for prefix in co.OVERRIDE_PREFIXES
                   for key in with_prefix_stripped(config, prefix)})
    if not used:
        return worker
    listed = worker.get(co.ALLOWLIST)
    base = [k.strip() for k in listed.split(",") if k.strip()] if listed is not None else list(co.ALLOWLIST_DEFAULT)
    return {**worker, co.ALLOWLIST: ",".join(dict.fromkeys([*base, *used]))}
