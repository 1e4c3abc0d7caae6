"""Secrets stay in mm2.properties: the configs topic holds references that each node resolves itself.

Java MM2's leader writes each connector's config, passwords included, to ``mm2-configs.<src>.internal``,
readable by anyone who may read that topic. Every node of a dedicated MM2 cluster has the same
mm2.properties (it is how nodes know the flows at all), so the leader can store
``${mm2:<mm2.properties key>}`` instead, in Kafka's config-provider syntax, and every node's worker
resolves it from its *own* file through :class:`MirrorPropertiesProvider`, including that key's own
``${file:...}`` / ``${env:...}`` placeholders through the node's providers.

Consequence for interoperation: a Java MM2 node reading such a topic has no ``mm2`` provider and would
keep the reference as the literal password; mixing Java and Python nodes in one flow's group is not
supported anyway, and a flow taken over from Java gets its configs rewritten by our leader at once.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping

from connect_runtime.api.config_provider import ConfigProvider
from connect_runtime.api.errors import ConfigError

#: The provider name the references use; reserved (an mm2.properties may not declare its own).
MM2_PROVIDER = "mm2"


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
