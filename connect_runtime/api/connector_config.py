"""The keys every source connector has (Kafka's ``ConnectorConfig`` + ``SourceConnectorConfig``), defined once.

The runtime validates each submitted config against :data:`CONNECTOR_CONFIG_DEF` before the connector's
own keys (``PUT /connector-plugins/{plugin}/config/validate``), and connectors built on the runtime
(MirrorMaker 2's three) merge it into their own ConfigDef, so the REST answer, a connector's parsing and
its generated reference all describe the same keys. It lives in the API layer because connectors may
import the API but never the engine.
"""

from __future__ import annotations

from typing import Any

from connect_runtime.api.config import (
    NO_DEFAULT,
    ConfigDef,
    ConfigKey,
    Importance,
    Type,
    Validator,
    at_least,
    non_empty_string,
    one_of,
)
from connect_runtime.api.errors import ConfigError

NAME = "name"
CONNECTOR_CLASS = "connector.class"
TASKS_MAX = "tasks.max"
TASKS_MAX_ENFORCE = "tasks.max.enforce"
KEY_CONVERTER = "key.converter"
VALUE_CONVERTER = "value.converter"
HEADER_CONVERTER = "header.converter"
TRANSFORMS = "transforms"
PREDICATES = "predicates"
CONFIG_ACTION_RELOAD = "config.action.reload"
ERRORS_RETRY_TIMEOUT = "errors.retry.timeout"
ERRORS_RETRY_DELAY_MAX_MS = "errors.retry.delay.max.ms"
ERRORS_TOLERANCE = "errors.tolerance"
ERRORS_LOG_ENABLE = "errors.log.enable"
ERRORS_LOG_INCLUDE_MESSAGES = "errors.log.include.messages"
EXACTLY_ONCE_SUPPORT = "exactly.once.support"
TRANSACTION_BOUNDARY = "transaction.boundary"
TRANSACTION_BOUNDARY_INTERVAL_MS = "transaction.boundary.interval.ms"
OFFSETS_STORAGE_TOPIC = "offsets.storage.topic"
TOPIC_CREATION_GROUPS = "topic.creation.groups"

BYTE_ARRAY_CONVERTER = "org.apache.kafka.connect.converters.ByteArrayConverter"

COMMON_GROUP = "Common"
_ERRORS = "Error Handling"
_EOS = "Exactly Once Support"



def not_supported_yet(why: str, *, allowed: tuple[Any, ...] = (None, [], "")) -> Validator:
    """A validator that refuses any value but ``allowed`` (the default): the key names a feature this
    runtime does not have, and accepting it would silently do nothing."""

    def check(name: str, value: Any) -> None:
        if value not in allowed:
            raise ConfigError(f"Invalid value for configuration {name}: not supported yet: {name} ({why})", name)

    check.__doc__ = "not supported yet: leave unset" if allowed == (None, [], "") else \
        f"only {', '.join(str(a) for a in allowed if a not in (None, [], ''))}"
    return check


def _converter(name: str, value: Any) -> None:
    if value is not None and str(value).strip() not in ("", BYTE_ARRAY_CONVERTER):
        raise ConfigError(f"Invalid value {value} for configuration {name}: not supported: records are copied as "
                          f"bytes, so the only converter is {BYTE_ARRAY_CONVERTER}", name)


_converter.__doc__ = f"{BYTE_ARRAY_CONVERTER} or unset"


def _aliases(name: str, value: Any) -> None:
    aliases = list(value or [])
    duplicates = sorted({a for a in aliases if aliases.count(a) > 1})
    if duplicates:
        raise ConfigError(f"Invalid value {','.join(aliases)} for configuration {name}: duplicate alias "
                          f"{', '.join(duplicates)}", name)


_aliases.__doc__ = "comma-separated unique aliases"


_NO_STAGES = "records copied as bytes go through no converter or transformation stage to retry"

#: Connect's connector-level keys, in Java's order. Keys naming a feature the runtime does not have
#: are refused with a validator that says so (never accepted and ignored), so a config that relies on
#: one fails at validation: 400 from REST, exit 2 from the command line.
CONNECTOR_CONFIG_DEF = ConfigDef([
    ConfigKey(NAME, Type.STRING, NO_DEFAULT, Importance.HIGH,
              "Globally unique name to use for this connector.", non_empty_string, COMMON_GROUP, 1,
              "Connector name"),
    ConfigKey(CONNECTOR_CLASS, Type.STRING, NO_DEFAULT, Importance.HIGH,
              "Name or alias of the class for this connector.", None, COMMON_GROUP, 2, "Connector class"),
    ConfigKey(TASKS_MAX, Type.INT, 1, Importance.HIGH,
              "Maximum number of tasks to use for this connector.", at_least(1), COMMON_GROUP, 3, "Tasks max"),
    ConfigKey(TASKS_MAX_ENFORCE, Type.BOOLEAN, True, Importance.LOW,
              "Fail tasks when the connector generates more task configs than tasks.max (deprecated).",
              None, COMMON_GROUP, 4),
    ConfigKey(KEY_CONVERTER, Type.CLASS, None, Importance.LOW,
              "Converter for record keys; the worker's converter when unset. Records are bytes here: only "
              "the ByteArrayConverter is accepted.", _converter, COMMON_GROUP, 5),
    ConfigKey(VALUE_CONVERTER, Type.CLASS, None, Importance.LOW,
              "Converter for record values; the worker's converter when unset. Records are bytes here: only "
              "the ByteArrayConverter is accepted.", _converter, COMMON_GROUP, 6),
    ConfigKey(HEADER_CONVERTER, Type.CLASS, None, Importance.LOW,
              "Converter for record headers; the worker's converter when unset. Headers are bytes here: "
              "only the ByteArrayConverter is accepted.", _converter, COMMON_GROUP, 7),
    ConfigKey(TRANSFORMS, Type.LIST, [], Importance.LOW,
              "Aliases for the transformations to apply to records, in order; each is configured by "
              "transforms.<alias>.type (Filter, RegexRouter, TimestampRouter, InsertHeader, DropHeaders by "
              "their Java class names, or a Python class by its dotted path), its own transforms.<alias>.* "
              "keys, and optionally transforms.<alias>.predicate and transforms.<alias>.negate. A source task "
              "with transformations copies record by record (no bulk path).", _aliases, "Transforms"),
    ConfigKey(PREDICATES, Type.LIST, [], Importance.LOW,
              "Aliases for the predicates used by transformations; each is configured by "
              "predicates.<alias>.type (TopicNameMatches, HasHeaderKey, RecordIsTombstone by their Java class "
              "names, or a Python class by its dotted path) and its own predicates.<alias>.* keys.",
              _aliases, "Predicates"),
    ConfigKey(CONFIG_ACTION_RELOAD, Type.STRING, "restart", Importance.LOW,
              "What to do when external configuration providers report a change. The providers here "
              "(env, file, directory and Python ones) report no changes (no TTL), as Kafka's built-in ones, "
              "so nothing triggers a reload with either value.",
              one_of("none", "restart"), COMMON_GROUP, 8),
    ConfigKey(ERRORS_RETRY_TIMEOUT, Type.LONG, 0, Importance.MEDIUM,
              "Maximum duration in ms a failed operation is retried; 0 means no retries, -1 infinite. "
              "Connect retries converter and transformation stages, which records copied as bytes do not "
              "go through (the producer retries deliveries itself): only 0 is accepted.",
              not_supported_yet(_NO_STAGES, allowed=(None, 0)), _ERRORS),
    ConfigKey(ERRORS_RETRY_DELAY_MAX_MS, Type.LONG, 60000, Importance.MEDIUM,
              "Maximum duration in ms between consecutive retries; only the default, as retries are not "
              "supported (see errors.retry.timeout).",
              not_supported_yet(_NO_STAGES, allowed=(None, 60000)), _ERRORS),
    ConfigKey(ERRORS_TOLERANCE, Type.STRING, "none", Importance.MEDIUM,
              "Behaviour for errors during operation: 'none' fails the task, 'all' skips bad records.",
              one_of("none", "all"), _ERRORS),
    ConfigKey(ERRORS_LOG_ENABLE, Type.BOOLEAN, False, Importance.MEDIUM,
              "Log each error and the details of the failed operation.", group=_ERRORS),
    ConfigKey(ERRORS_LOG_INCLUDE_MESSAGES, Type.BOOLEAN, False, Importance.MEDIUM,
              "Include the failing record in the error log.", group=_ERRORS),
    ConfigKey(EXACTLY_ONCE_SUPPORT, Type.STRING, "requested", Importance.MEDIUM,
              "Permitted values are requested, required. If set to 'required', forces a preflight check "
              "that the worker has exactly.once.source.support=enabled and that the connector supports "
              "exactly-once with this config (MirrorSourceConnector: a read_committed source consumer).",
              one_of("requested", "required"), _EOS),
    ConfigKey(TRANSACTION_BOUNDARY, Type.STRING, "poll", Importance.MEDIUM,
              "Transaction boundaries of exactly-once source tasks: 'poll' commits each batch the task "
              "polled, 'interval' every transaction.boundary.interval.ms, 'connector' where the connector "
              "says (refused for connectors that define no boundaries, as MirrorMaker's). Ignored without "
              "exactly.once.source.support=enabled on the worker.",
              one_of("poll", "interval", "connector"), _EOS),
    ConfigKey(TRANSACTION_BOUNDARY_INTERVAL_MS, Type.LONG, None, Importance.LOW,
              "Transaction commit interval with transaction.boundary=interval; unset: the worker's "
              "offset.flush.interval.ms.", at_least(0), _EOS),
    ConfigKey(OFFSETS_STORAGE_TOPIC, Type.STRING, None, Importance.LOW,
              "A separate offsets topic for this connector. Not supported yet: must be unset (the worker's "
              "offsets topic is used).", not_supported_yet("a per-connector offsets topic is not implemented"),
              "Offsets Topic"),
    ConfigKey(TOPIC_CREATION_GROUPS, Type.LIST, [], Importance.LOW,
              "Groups of configurations for topics created by source connectors. Not supported yet: must be "
              "empty (MirrorMaker creates its remote topics itself).",
              not_supported_yet("topic creation by the worker is not implemented"), "Topic Creation"),
])
