"""Secrets in the configs topic: stored as Java stores them, so a Java node can run what we configured.

Java MM2's leader writes each connector's config to ``mm2-configs.<src>.internal`` as it derives it from
mm2.properties, and every node of either kind runs what is stored there. By default
(``configs.topic.compatibility = java``) ours stores the same, so a Java node in the same group runs a task
we configured and Java's leader finds our stored configs equal to its own. Secrets still never reach the
topic in clear: a value taken from a config provider (``${file:...}``, ``${env:...}``) is stored as that
reference, which each node, Java's included, resolves itself; a literal secret there would be stored in
clear, so the file is refused at start naming the key (:func:`literal_secret`, checked by
:mod:`mirror.maker.config_check`), and the fix is a provider.

``configs.topic.compatibility = python`` stores each secret as ``${mm2:<mm2.properties key>}`` instead, in
Kafka's config-provider syntax, and every node of ours resolves it from its *own* file through
:class:`MirrorPropertiesProvider` (every node of a dedicated MM2 cluster has the same mm2.properties): a
literal secret in the file is then never in the topic. A Java node has no ``mm2`` provider and would take the
reference for the password, so that mode is for fleets where no Java node runs the flow.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping

from connect_runtime.api.config import ConfigKey, Importance, Type, one_of
from connect_runtime.api.config_provider import ConfigProvider
from connect_runtime.api.errors import ConfigError
from connect_runtime.api.secrets import is_reference, is_sensitive_key
from connect_runtime.clients.sasl_properties import parse_jaas

#: The provider name the references use; reserved (an mm2.properties may not declare its own).
MM2_PROVIDER = "mm2"

#: Not under ``config.storage.``: Java's worker passes those keys to the configs topic as topic configs,
#: and its herder dies creating the topic ("Unknown topic config name").
CONFIGS_TOPIC_COMPATIBILITY = "configs.topic.compatibility"
#: ``java`` (the default): values as Java MirrorMaker stores them; ``python``: secrets as ``${mm2:<key>}``.
CONFIGS_TOPIC_COMPATIBILITY_KEY = ConfigKey(
    CONFIGS_TOPIC_COMPATIBILITY, Type.STRING, "java", Importance.LOW, validator=one_of("python", "java"),
    group="MirrorMaker",
    doc="How the leader stores connector configs in the configs topic. 'java' (the default): every value as "
        "Java MirrorMaker stores it, so that Java MirrorMaker nodes run the stored configs (Java and Python "
        "nodes side by side, or handing a flow back to Java); a secret must then come from a config provider "
        "(stored as its reference, which every node resolves), and a literal secret that would be stored is "
        "refused at start. 'python': each secret (a password key) as a ${mm2:<key>} reference that every node "
        "of ours resolves from its own mm2.properties, literal secrets included; Java nodes cannot run those "
        "configs.")

_JAAS = "sasl.jaas.config"


def stores_secrets_in_clear(compatibility: str) -> bool:
    """Whether the ``configs.topic.compatibility`` value asks for Java's stored configs."""
    return compatibility.strip().lower() == "java"


def literal_secret(key: str, value: str) -> bool:
    """Whether ``value`` under connector key ``key`` is a secret written in clear, not a provider reference.

    A JAAS login line is a reference when every secret option in it (``password``, ``clientSecret``...) is a
    placeholder (``password="${file:/etc/mm2/secrets.properties:password}"``); one that does not parse counts
    as a secret.
    """
    if not value.strip() or not is_sensitive_key(key) or is_reference(value):
        return False
    if key == _JAAS or key.endswith("." + _JAAS):
        try:
            _, options = parse_jaas(value)
        except ConfigError:
            return True
        return any(is_sensitive_key(name) and option.strip() and not is_reference(option)
                   for name, option in options.items())
    return True


def secret_reference(key: str) -> str:
    """``${mm2:<key>}`` (``${mm2::<key>}`` when the key holds ``:``, so the pattern takes no path)."""
    if "}" in key:
        raise ConfigError(f"Configuration {key}: a secret under a key containing '}}' cannot be referenced "
                          f"from the configs topic; rename the cluster alias", key)
    return f"${{{MM2_PROVIDER}:{':' if ':' in key else ''}{key}}}"


class MirrorPropertiesProvider(ConfigProvider):
    """``${mm2:<key>}``: the value of ``<key>`` in this node's mm2.properties, its placeholders resolved."""

    def __init__(self, raw: Mapping[str, str], resolve: Callable[[Mapping[str, str]], dict[str, str]]) -> None:
        self._raw = dict(raw)
        self._resolve = resolve

    def get(self, path: str, keys: set[str]) -> dict[str, str]:
        if path:
            raise ConfigError(f"The {MM2_PROVIDER} config provider takes no path, got {path!r}")
        return self._resolve({k: self._raw[k] for k in keys if k in self._raw})
