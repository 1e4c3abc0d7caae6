"""Per-connector client overrides (``producer.override.*`` ...) and the policy that allows them (KIP-458).

A connector config may carry ``producer.override.X``, ``consumer.override.X`` and ``admin.override.X``:
client settings for that connector only, on top of the worker's. Which ``X`` a connector may set is the
worker's decision, ``connector.client.config.override.policy``, with Connect's policies and names:

* ``Allowlist`` (KIP-1188, Kafka 4.2; the default here, as it will be in Kafka 5.0): only the keys listed
  in ``connector.client.config.override.allowlist``, by default :data:`ALLOWLIST_DEFAULT`: the clients'
  batching, fetching, timing and buffer settings, none of which names a host, a principal, a file or
  code (Kafka's default list is empty: set the key to nothing for that);
* ``All`` (Connect's default from Kafka 3.0 to 4.x, and what Java MM2 installs): any key, including
  ``bootstrap.servers`` and a principal, so a REST caller could send a connector's records elsewhere;
* ``None``: no key at all;
* ``Principal`` (deprecated by KIP-1188): only ``sasl.jaas.config``, ``sasl.mechanism`` and
  ``security.protocol`` (a principal per connector).

The policy is checked where Connect checks it: when a config is validated (REST, ``mirror config show``,
the MM2 driver at start), and again when the worker starts the connector or a task, so a config that
reached the configs topic another way cannot slip through. The check lives here, in the pure API layer,
because the MM2 connectors (which may not import the engine) apply ``consumer.override.*`` and
``admin.override.*`` to the clients they build themselves.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass

from connect_runtime.api.errors import ConfigError

POLICY = "connector.client.config.override.policy"
ALLOWLIST = "connector.client.config.override.allowlist"
POLICY_DEFAULT = "Allowlist"

#: The keys the Allowlist policy lets connectors override unless the operator sets the list: tuning only.
ALLOWLIST_DEFAULT: tuple[str, ...] = (
    # producer batching, durability and timing
    "acks", "batch.size", "linger.ms", "compression.type", "buffer.memory", "max.request.size",
    "delivery.timeout.ms", "request.timeout.ms", "retries", "retry.backoff.ms", "retry.backoff.max.ms",
    "max.in.flight.requests.per.connection",
    # consumer fetching
    "fetch.min.bytes", "fetch.max.bytes", "fetch.max.wait.ms", "max.partition.fetch.bytes", "max.poll.records",
    "isolation.level", "auto.offset.reset",
    # connections
    "receive.buffer.bytes", "send.buffer.bytes", "metadata.max.age.ms", "connections.max.idle.ms",
    "reconnect.backoff.ms", "reconnect.backoff.max.ms", "socket.connection.setup.timeout.ms",
)

PRODUCER_OVERRIDES_PREFIX = "producer.override."
CONSUMER_OVERRIDES_PREFIX = "consumer.override."
ADMIN_OVERRIDES_PREFIX = "admin.override."
OVERRIDE_PREFIXES: tuple[str, ...] = (PRODUCER_OVERRIDES_PREFIX, CONSUMER_OVERRIDES_PREFIX, ADMIN_OVERRIDES_PREFIX)

#: Java's ``PrincipalConnectorClientConfigOverridePolicy.ALLOWED_CONFIG``.
PRINCIPAL_KEYS = frozenset({"sasl.jaas.config", "sasl.mechanism", "security.protocol"})

_PACKAGE = "org.apache.kafka.connect.connector.policy."
#: Policy names, Java class names included, to the canonical alias.
_ALIASES = {
    "all": "All", "none": "None", "principal": "Principal", "allowlist": "Allowlist",
    **{f"{_PACKAGE}{name}ConnectorClientConfigOverridePolicy".lower(): name
       for name in ("All", "None", "Principal", "Allowlist")},
}


@dataclass(frozen=True)
class OverridePolicy:
    """One configured policy: its Connect alias and, for ``Allowlist``, the allowed keys."""

    name: str = POLICY_DEFAULT
    allowlist: frozenset[str] = frozenset(ALLOWLIST_DEFAULT)

    def allows(self, key: str) -> bool:
        """Whether a connector may override client key ``key`` (the name after the prefix)."""
        if self.name == "All":
            return True
        if self.name == "Principal":
            return key in PRINCIPAL_KEYS
        if self.name == "Allowlist":
            return key in self.allowlist
        return False

    def errors(self, config: Mapping[str, str]) -> dict[str, str]:
        """Connect's message for each override key of ``config`` the policy refuses, by full key."""
        refused = {}
        for full_key in config:
            for prefix in OVERRIDE_PREFIXES:
                if full_key.startswith(prefix) and not self.allows(full_key[len(prefix):]):
                    refused[full_key] = (f"The '{self.name}' policy does not allow '{full_key[len(prefix):]}' to "
                                         f"be overridden in the connector configuration ({full_key}; the worker's "
                                         f"{POLICY} decides which client keys a connector may set)")
        return refused

    def check(self, config: Mapping[str, str], connector: str) -> None:
        """Raise a :class:`ConfigError` naming the first refused override key of ``config``."""
        for key, message in self.errors(config).items():
            raise ConfigError(f"Connector {connector}: {message}", key)


def parse_policy(name: str, allowlist: Iterable[str] = ()) -> OverridePolicy:
    """The policy named by ``connector.client.config.override.policy`` (a Connect alias or Java class name)."""
    canonical = _ALIASES.get(name.strip().lower())
    if canonical is None:
        raise ConfigError(f"Invalid value {name!r} for configuration {POLICY}: expected All, None, Principal or "
                          "Allowlist (or the Java class name of one of them)", POLICY)
    return OverridePolicy(canonical, frozenset(k.strip() for k in allowlist if k.strip()))


def validate_policy_name(name: str, value: object) -> None:
    """ConfigDef validator of :data:`POLICY`."""
    if value is not None:
        parse_policy(str(value))


validate_policy_name.__doc__ = "All, None, Principal, Allowlist"

ALLOW_ALL = OverridePolicy("All")


#: Principal keys by the ``security.protocol`` values under which a client reads them.
_PRINCIPAL_KEYS_READ_UNDER = (("sasl.", ("SASL_PLAINTEXT", "SASL_SSL")),
                              ("ssl.keystore.", ("SSL", "SASL_SSL")), ("ssl.key.password", ("SSL", "SASL_SSL")))


def unread_principal_overrides(client_overrides: Mapping[str, str], merged: Mapping[str, str]) -> list[str]:
    """The principal keys among ``client_overrides`` (``sasl.*``, ``ssl.keystore.*``, ``ssl.key.password``)
    that a client built from ``merged`` (the worker's settings with the overrides on top) would not read,
    because its ``security.protocol`` does not use them: applying the rest would run the connector as
    the worker's principal, or none, while its config names another."""
    protocol = str(merged.get("security.protocol", "PLAINTEXT")).strip().upper()
    return sorted(key for key in client_overrides for prefix, protocols in _PRINCIPAL_KEYS_READ_UNDER
                  if key.startswith(prefix) and protocol not in protocols)
