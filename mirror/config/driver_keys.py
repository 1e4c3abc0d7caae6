"""The keys only the MM2 driver reads (Java's ``MirrorMakerConfig``): ``clusters``, the REST listeners, config
providers, the plugin allowlist..., and their :class:`ConfigDef` (defaults, types, docs).

Their own module because they are a catalogue: :class:`~mirror.config.mirror_maker_config.MirrorMakerConfig`
parses them, while config lint, ``mirror config docs`` and the key tests enumerate them without
deriving any config.
"""

from __future__ import annotations

from connect_runtime.api.config import ConfigDef, ConfigKey, Importance, Type
from connect_runtime.api.plugin_allowlist import PLUGIN_ALLOWLIST, PLUGIN_ALLOWLIST_DOC
from connect_runtime.api.rest_config import REST_SECURITY_CONFIG_DEF
from mirror.config.client_keys import CLIENT_SECURITY_CONFIG_DEF
from mirror.config.secret_references import CONFIGS_TOPIC_COMPATIBILITY_KEY

# ---- driver-only keys ---------------------------------------------------------------------------------

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
