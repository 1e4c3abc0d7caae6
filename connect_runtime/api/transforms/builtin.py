"""Connect's built-in transformations that make sense for records copied as bytes.

Each takes the keys of its Java namesake (``org.apache.kafka.connect.transforms.*``) and behaves as it
does, with one adaptation: header values are bytes (``InsertHeader`` writes its literal as UTF-8). The
ones that read fields of a structured key or value (``InsertField``, ``HeaderFrom``, ``Cast``...) have
nothing to work on here and are refused at validation (:mod:`.registry`).
"""

from __future__ import annotations

import dataclasses
import re
from collections.abc import Callable
from datetime import UTC, datetime
from typing import Any

from connect_runtime.api.config import NO_DEFAULT, ConfigDef, ConfigKey, Importance, Type, non_empty_string
from connect_runtime.api.errors import ConfigError, DataError
from connect_runtime.api.records import SourceRecord
from connect_runtime.api.transforms.base import Configurable
from connect_runtime.api.transforms.java_syntax import (
    compile_java_regex,
    expand,
    parse_java_date_format,
    parse_java_replacement,
)


def java_regex(name: str, value: Any) -> None:
    try:
        compile_java_regex(str(value))
    except ValueError as exc:
        raise ConfigError(f"Invalid value {value} for configuration {name}: {exc}", name) from None


java_regex.__doc__ = "a valid regular expression"


def _non_empty_list(name: str, value: Any) -> None:
    if not value:
        raise ConfigError(f"Invalid value for configuration {name}: must name at least one header", name)


_non_empty_list.__doc__ = "non-empty list"


class Filter(Configurable):
    """Drops every record it is applied to (with a predicate: the records the predicate selects)."""

    def apply(self, record: SourceRecord) -> SourceRecord | None:
        return None


class RegexRouter(Configurable):
    """Renames the topic when the whole name matches ``regex`` (Java's ``matches()`` + ``replaceFirst``)."""

    CONFIG_DEF = ConfigDef([
        ConfigKey("regex", Type.STRING, NO_DEFAULT, Importance.HIGH,
                  "Regular expression the whole topic name must match.", java_regex),
        ConfigKey("replacement", Type.STRING, NO_DEFAULT, Importance.HIGH,
                  "Replacement string, Java syntax: $1 or ${name} for groups, \\ escapes."),
    ])

    def configured(self, values: dict[str, Any]) -> None:
        self._regex = compile_java_regex(values["regex"])
        try:
            self._parts = parse_java_replacement(values["replacement"], self._regex)
        except ValueError as exc:
            raise ConfigError(f"Invalid value {values['replacement']} for configuration replacement: {exc}",
                              "replacement") from None
        self._renamed: dict[str, str] = {}  # topic -> new name: one regex per topic, not per record

    def apply(self, record: SourceRecord) -> SourceRecord | None:
        topic = record.topic
        renamed = self._renamed.get(topic)
        if renamed is None:
            match = self._regex.fullmatch(topic)
            renamed = expand(self._parts, match) if match else topic
            if len(self._renamed) < 10_000:
                self._renamed[topic] = renamed
        return record if renamed == topic else dataclasses.replace(record, topic=renamed)


class TimestampRouter(Configurable):
    """Routes to a topic named after the record's topic and timestamp (UTC), e.g. ``orders-20240131``."""

    CONFIG_DEF = ConfigDef([
        ConfigKey("topic.format", Type.STRING, "${topic}-${timestamp}", Importance.HIGH,
                  "Format string which can contain ${topic} and ${timestamp}.", non_empty_string),
        ConfigKey("timestamp.format", Type.STRING, "yyyyMMdd", Importance.HIGH,
                  "Format string for the timestamp, java.text.SimpleDateFormat syntax (y, M, d, H, m, s, S "
                  "fields and quoted text), in UTC.", non_empty_string),
    ])

    def configured(self, values: dict[str, Any]) -> None:
        self._format = values["topic.format"]
        try:
            self._date: list[Callable[[datetime], str]] = parse_java_date_format(values["timestamp.format"])
        except ValueError as exc:
            raise ConfigError(f"Invalid value {values['timestamp.format']} for configuration timestamp.format: "
                              f"{exc}", "timestamp.format") from None

    def apply(self, record: SourceRecord) -> SourceRecord | None:
        timestamp = record.timestamp
        if timestamp is None:
            raise DataError(f"Timestamp missing on record for topic {record.topic}")
        moment = datetime.fromtimestamp(timestamp / 1000, UTC)
        formatted = "".join(field(moment) for field in self._date)
        topic = self._format.replace("${topic}", record.topic).replace("${timestamp}", formatted)
        return dataclasses.replace(record, topic=topic)


class InsertHeader(Configurable):
    """Adds a header with a literal value (as UTF-8 bytes), after any headers of the same name."""

    CONFIG_DEF = ConfigDef([
        ConfigKey("header", Type.STRING, NO_DEFAULT, Importance.HIGH, "The name of the header.", non_empty_string),
        ConfigKey("value.literal", Type.STRING, NO_DEFAULT, Importance.HIGH,
                  "The literal value of the header, written as UTF-8 bytes."),
    ])

    def configured(self, values: dict[str, Any]) -> None:
        self._header = (values["header"], values["value.literal"].encode())

    def apply(self, record: SourceRecord) -> SourceRecord | None:
        headers = list(record.headers or ())
        headers.append(self._header)
        return dataclasses.replace(record, headers=headers)


class DropHeaders(Configurable):
    """Removes every header whose name is in ``headers``."""

    CONFIG_DEF = ConfigDef([
        ConfigKey("headers", Type.LIST, NO_DEFAULT, Importance.HIGH, "The names of the headers to remove.",
                  _non_empty_list),
    ])

    def configured(self, values: dict[str, Any]) -> None:
        self._names = frozenset(values["headers"])

    def apply(self, record: SourceRecord) -> SourceRecord | None:
        headers = record.headers
        if not headers:
            return record
        names = self._names
        kept = [h for h in headers if h[0] not in names]
        return record if len(kept) == len(headers) else dataclasses.replace(record, headers=kept)


class TopicNameMatches(Configurable):
    """True for records whose whole topic name matches ``pattern``."""

    CONFIG_DEF = ConfigDef([
        ConfigKey("pattern", Type.STRING, NO_DEFAULT, Importance.MEDIUM,
                  "A Java regular expression the whole topic name must match.", java_regex),
    ])

    def configured(self, values: dict[str, Any]) -> None:
        self._pattern: re.Pattern[str] = compile_java_regex(values["pattern"])

    def test(self, record: SourceRecord) -> bool:
        return self._pattern.fullmatch(record.topic) is not None


class HasHeaderKey(Configurable):
    """True for records with at least one header named ``name``."""

    CONFIG_DEF = ConfigDef([
        ConfigKey("name", Type.STRING, NO_DEFAULT, Importance.MEDIUM, "The header name.", non_empty_string),
    ])

    def configured(self, values: dict[str, Any]) -> None:
        self._name = values["name"]

    def test(self, record: SourceRecord) -> bool:
        name = self._name
        return any(h[0] == name for h in record.headers or ())


class RecordIsTombstone(Configurable):
    """True for tombstones: records whose value is null."""

    def test(self, record: SourceRecord) -> bool:
        return record.value is None
