"""Secrets stay in mm2.properties: the configs topic holds references that each node resolves itself.

Java MM2's leader writes each connector's config, passwords included, to ``mm2-configs.<src>.internal``,
readable by anyone who may read that topic. Every node of a dedicated MM2 cluster has the same
mm2.properties (it is how nodes know the flows at all), so the leader can store
``${mm2:<mm2.properties key>}`` instead, in Kafka's config-provider syntax, and every node's worker
resolves it from its *own* file through :class:`MirrorPropertiesProvider`, including that key's own
``${file:...}`` / ``${env:...}`` placeholders through the node's providers.

Consequence for interoperation: a Java MM2 node reading such a topic has no ``mm2`` provider and would
keep the reference as the literal password. ``configs.topic.compatibility = java`` makes the leader store
each value as Java does, the secrets in clear (docs/migration.md, "Handing a flow back to Java"): Java's
nodes then run what ours stored, and Java's leader finds it equal to its own and rewrites nothing.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping

from connect_runtime.api.config import ConfigKey, Importance, Type, one_of
from connect_runtime.api.config_provider import ConfigProvider
from connect_runtime.api.errors import ConfigError

#: The provider name the references use; reserved (an mm2.properties may not declare its own).
MM2_PROVIDER = "mm2"

#: Not under ``config.storage.``: Java's worker passes those keys to the configs topic as topic configs,
#: and its herder dies creating the topic ("Unknown topic config name").
CONFIGS_TOPIC_COMPATIBILITY = "configs.topic.compatibility"
#: ``python``: secrets as ``${mm2:<key>}`` references; ``java``: as Java MM2 stores them, in clear.
CONFIGS_TOPIC_COMPATIBILITY_KEY = ConfigKey(
    CONFIGS_TOPIC_COMPATIBILITY, Type.STRING, "python", Importance.LOW, validator=one_of("python", "java"),
    group="MirrorMaker",
    doc="How the leader stores connector configs in the configs topic. 'python': each secret (a password "
        "key) as a ${mm2:<key>} reference that every node resolves from its own mm2.properties. 'java': "
        "every value as Java MirrorMaker stores it, secrets in clear, so that Java MirrorMaker nodes can run "
        "the stored configs (handing a flow back to Java, or Java and Python nodes side by side); the "
        "secrets are then readable by whoever may read the configs topic, as with Java.")


def stores_secrets_in_clear(compatibility: str) -> bool:
    """Whether the ``configs.topic.compatibility`` value asks for Java's stored configs."""
    return compatibility.strip().lower() == "java"


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
