"""Which topics, consumer groups and topic-config properties MM2 replicates (Kafka ``*Filter`` classes).

Semantics copied from Kafka (``DefaultTopicFilter``, ``DefaultGroupFilter``, ``DefaultConfigPropertyFilter``):

* Include/exclude keys are comma-separated lists of regular expressions. The entries are joined with
  ``|`` and must match the **whole** name (Java ``Matcher.matches``, i.e. ``re.fullmatch``).
* An **empty** list matches nothing (an empty regex would match everything, which is never what a blank
  setting means). So ``topics=`` replicates no topic, and ``topics.exclude=`` excludes none.
* Exclude wins over include.

Filters are pluggable by class name (``topic.filter.class``, ``group.filter.class``,
``config.property.filter.class``). The Java default class names map to the classes here; anything else is
a Python dotted path. A plugin is built with no arguments, then ``configure(config)`` is called if it
has one, with the whole connector config (Kafka's ``Configurable``).
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Mapping
from typing import Any, Protocol, runtime_checkable

from connect_runtime.api.config import Type, parse_value
from connect_runtime.api.errors import ConfigError
from mirror.client.plugins import load_class

TOPICS_INCLUDE = "topics"
TOPICS_INCLUDE_DEFAULT = ".*"
TOPICS_EXCLUDE = "topics.exclude"
TOPICS_EXCLUDE_DEFAULT = r".*[\-\.]internal, .*\.replica, __.*"
GROUPS_INCLUDE = "groups"
GROUPS_INCLUDE_DEFAULT = ".*"
GROUPS_EXCLUDE = "groups.exclude"
GROUPS_EXCLUDE_DEFAULT = "console-consumer-.*, connect-.*, __.*"
CONFIG_PROPERTIES_EXCLUDE = "config.properties.exclude"
CONFIG_PROPERTIES_EXCLUDE_DEFAULT = (
    r"follower\.replication\.throttled\.replicas, "
    r"leader\.replication\.throttled\.replicas, "
    r"message\.timestamp\.difference\.max\.ms, "
    r"message\.timestamp\.type, "
    r"unclean\.leader\.election\.enable, "
    r"min\.insync\.replicas"
)
USE_DEFAULTS_FROM = "use.defaults.from"
USE_DEFAULTS_FROM_DEFAULT = "target"

TOPIC_FILTER_CLASS = "topic.filter.class"
TOPIC_FILTER_CLASS_DEFAULT = "org.apache.kafka.connect.mirror.DefaultTopicFilter"
GROUP_FILTER_CLASS = "group.filter.class"
GROUP_FILTER_CLASS_DEFAULT = "org.apache.kafka.connect.mirror.DefaultGroupFilter"
CONFIG_PROPERTY_FILTER_CLASS = "config.property.filter.class"
CONFIG_PROPERTY_FILTER_CLASS_DEFAULT = "org.apache.kafka.connect.mirror.DefaultConfigPropertyFilter"


@runtime_checkable
class TopicFilter(Protocol):
    """Decides which source topics are replicated (and checkpointed). Must be pure and thread-safe."""

    def should_replicate_topic(self, topic: str) -> bool:
        """True if ``topic`` (a source-side name) should be replicated."""
        ...


@runtime_checkable
class GroupFilter(Protocol):
    """Decides which source consumer groups get checkpoints. Must be pure and thread-safe."""

    def should_replicate_group(self, group: str) -> bool:
        """True if consumer group ``group`` should be checkpointed."""
        ...


@runtime_checkable
class ConfigPropertyFilter(Protocol):
    """Decides which topic config properties are synced to remote topics."""

    def should_replicate_config_property(self, name: str) -> bool:
        """True if topic config ``name`` should be synced at all."""
        ...

    def should_replicate_source_default(self, name: str) -> bool:
        """For a property that has its *default* value on the source (and passed the check above): True to
        copy the source's default value explicitly, False to delete the target override so that the
        target's own default applies."""
        ...


def compile_pattern_list(name: str, value: Any) -> re.Pattern[str] | None:
    """Kafka ``MirrorUtils.compilePatternList``: a LIST of regexes joined with ``|``; None if empty.

    Raises:
        ConfigError: an entry is not a valid regular expression (names the key).
    """
    entries: list[str] = parse_value(name, Type.LIST, value)
    if not entries:
        return None
    joined = "|".join(entries)
    try:
        return re.compile(joined)
    except re.error as exc:
        raise ConfigError(
            f"Invalid value {value!r} for configuration {name}: not a valid regular expression ({exc})", name
        ) from exc


def _matches(pattern: re.Pattern[str] | None, name: str) -> bool:
    return pattern is not None and pattern.fullmatch(name) is not None


class DefaultTopicFilter:
    """``topics`` (default ``.*``) minus ``topics.exclude`` (default internal/replica/``__`` topics)."""

    def __init__(self, config: Mapping[str, str] | None = None) -> None:
        self.configure(config or {})

    def configure(self, config: Mapping[str, str]) -> None:
        """(Re)read ``topics`` and ``topics.exclude``."""
        self._include = compile_pattern_list(
            TOPICS_INCLUDE, config.get(TOPICS_INCLUDE, TOPICS_INCLUDE_DEFAULT)
        )
        self._exclude = compile_pattern_list(
            TOPICS_EXCLUDE, config.get(TOPICS_EXCLUDE, TOPICS_EXCLUDE_DEFAULT)
        )

    def should_replicate_topic(self, topic: str) -> bool:
        return _matches(self._include, topic) and not _matches(self._exclude, topic)


class DefaultGroupFilter:
    """``groups`` (default ``.*``) minus ``groups.exclude`` (default console/connect/``__`` groups)."""

    def __init__(self, config: Mapping[str, str] | None = None) -> None:
        self.configure(config or {})

    def configure(self, config: Mapping[str, str]) -> None:
        """(Re)read ``groups`` and ``groups.exclude``."""
        self._include = compile_pattern_list(
            GROUPS_INCLUDE, config.get(GROUPS_INCLUDE, GROUPS_INCLUDE_DEFAULT)
        )
        self._exclude = compile_pattern_list(
            GROUPS_EXCLUDE, config.get(GROUPS_EXCLUDE, GROUPS_EXCLUDE_DEFAULT)
        )

    def should_replicate_group(self, group: str) -> bool:
        return _matches(self._include, group) and not _matches(self._exclude, group)


class DefaultConfigPropertyFilter:
    """Sync every topic config except ``config.properties.exclude``; defaults per ``use.defaults.from``.

    ``use.defaults.from=target`` (default): a property at its default on the source is *deleted* on the
    target so the target's default applies. ``source``: the source default is copied explicitly.
    """

    def __init__(self, config: Mapping[str, str] | None = None) -> None:
        self.configure(config or {})

    def configure(self, config: Mapping[str, str]) -> None:
        """(Re)read ``config.properties.exclude`` and ``use.defaults.from``."""
        self._exclude = compile_pattern_list(
            CONFIG_PROPERTIES_EXCLUDE,
            config.get(CONFIG_PROPERTIES_EXCLUDE, CONFIG_PROPERTIES_EXCLUDE_DEFAULT),
        )
        use_defaults_from = str(config.get(USE_DEFAULTS_FROM, USE_DEFAULTS_FROM_DEFAULT)).strip()
        # Java compares with equals("source") and treats anything else as "target"; a typo silently
        # changing semantics is worse than an error, so we validate.
        if use_defaults_from not in ("source", "target"):
            raise ConfigError(
                f"Invalid value {use_defaults_from!r} for configuration {USE_DEFAULTS_FROM}: "
                "expected source or target",
                USE_DEFAULTS_FROM,
            )
        self._use_defaults_from = use_defaults_from

    def should_replicate_config_property(self, name: str) -> bool:
        return not _matches(self._exclude, name)

    def should_replicate_source_default(self, name: str) -> bool:
        return self._use_defaults_from == "source"


_TOPIC_FILTERS: dict[str, type[Any]] = {
    TOPIC_FILTER_CLASS_DEFAULT: DefaultTopicFilter,
    "DefaultTopicFilter": DefaultTopicFilter,
}
_GROUP_FILTERS: dict[str, type[Any]] = {
    GROUP_FILTER_CLASS_DEFAULT: DefaultGroupFilter,
    "DefaultGroupFilter": DefaultGroupFilter,
}
_CONFIG_PROPERTY_FILTERS: dict[str, type[Any]] = {
    CONFIG_PROPERTY_FILTER_CLASS_DEFAULT: DefaultConfigPropertyFilter,
    "DefaultConfigPropertyFilter": DefaultConfigPropertyFilter,
}


def _load(
    config: Mapping[str, str],
    key: str,
    default: str,
    aliases: Mapping[str, type[Any]],
    protocol: type[Any],
    what: str,
) -> Any:
    name = str(config.get(key, default))
    try:
        cls = load_class(name, object, aliases, what)
    except ValueError as exc:
        raise ConfigError(f"Invalid value for configuration {key}: {exc}", key) from exc
    try:
        instance = cls()
    except TypeError as exc:
        raise ConfigError(
            f"{what} class {name!r} must be constructible without arguments: {exc}", key
        ) from exc
    configure = getattr(instance, "configure", None)
    if callable(configure):
        configure(config)
    if not isinstance(instance, protocol):
        raise ConfigError(f"{what} class {name!r} does not implement {protocol.__name__}", key)
    return instance


def load_topic_filter(config: Mapping[str, str]) -> TopicFilter:
    """The configured ``topic.filter.class``, built and configured. Raises ConfigError."""
    result: TopicFilter = _load(
        config, TOPIC_FILTER_CLASS, TOPIC_FILTER_CLASS_DEFAULT, _TOPIC_FILTERS, TopicFilter, "topic filter"
    )
    return result


def load_group_filter(config: Mapping[str, str]) -> GroupFilter:
    """The configured ``group.filter.class``, built and configured. Raises ConfigError."""
    result: GroupFilter = _load(
        config, GROUP_FILTER_CLASS, GROUP_FILTER_CLASS_DEFAULT, _GROUP_FILTERS, GroupFilter, "group filter"
    )
    return result


def load_config_property_filter(config: Mapping[str, str]) -> ConfigPropertyFilter:
    """The configured ``config.property.filter.class``, built and configured. Raises ConfigError."""
    result: ConfigPropertyFilter = _load(
        config,
        CONFIG_PROPERTY_FILTER_CLASS,
        CONFIG_PROPERTY_FILTER_CLASS_DEFAULT,
        _CONFIG_PROPERTY_FILTERS,
        ConfigPropertyFilter,
        "config property filter",
    )
    return result


#: key -> (default, aliases, what): the filter classes a connector config names.
_FILTER_KEYS: dict[str, tuple[str, Mapping[str, type[Any]], str]] = {
    TOPIC_FILTER_CLASS: (TOPIC_FILTER_CLASS_DEFAULT, _TOPIC_FILTERS, "topic filter"),
    GROUP_FILTER_CLASS: (GROUP_FILTER_CLASS_DEFAULT, _GROUP_FILTERS, "group filter"),
    CONFIG_PROPERTY_FILTER_CLASS: (CONFIG_PROPERTY_FILTER_CLASS_DEFAULT, _CONFIG_PROPERTY_FILTERS,
                                   "config property filter"),
}


def filter_class_errors(config: Mapping[str, str], keys: Iterable[str]) -> dict[str, str]:
    """For a connector's ``validate``: each of ``keys`` (filter class keys) whose class cannot be resolved
    (unknown, or a Python name the process's code policy does not permit, which is refused before it is
    imported), with the one-line reason; the filters are not built. A REST caller gets a 400 naming the
    key instead of a connector that fails when it starts."""
    errors = {}
    for key in keys:
        default, aliases, what = _FILTER_KEYS[key]
        name = str(config.get(key) or default)
        try:
            load_class(name, object, aliases, what)
        except ValueError as exc:
            errors[key] = f"Invalid value {name!r} for configuration {key}: {exc}"
    return errors
