"""Typed configuration definitions: each key defined once, as data.

A :class:`ConfigDef` is the single source of truth for a component's keys: name, type, default,
importance, documentation and validation. Parsing, REST validation (``/connector-plugins/.../validate``)
and generated docs (``mirror config docs``) all read it, so they cannot drift apart.

Parsing follows Kafka's ``ConfigDef.parseType`` so that an unmodified Java properties file means the
same thing here: values are trimmed, booleans accept any case, lists split on commas with optional
surrounding whitespace and a blank string is an empty list.
"""

from __future__ import annotations

import enum
import re
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass, field
from typing import Any

from connect_runtime.api.errors import ConfigError

# Re-exported: the rules live in api.secrets.
from connect_runtime.api.secrets import HIDDEN as HIDDEN
from connect_runtime.api.secrets import is_sensitive_key as is_sensitive_key
from connect_runtime.api.secrets import redact as redact


class Password:
    """A secret value that prints as ``[hidden]`` (Kafka's ``Password``)."""

    __slots__ = ("_value",)

    def __init__(self, value: str) -> None:
        self._value = value

    def value(self) -> str:
        return self._value

    def __repr__(self) -> str:
        return HIDDEN

    __str__ = __repr__

    def __eq__(self, other: object) -> bool:
        return isinstance(other, Password) and other._value == self._value

    def __hash__(self) -> int:
        return hash(self._value)


class Type(enum.Enum):
    BOOLEAN = "BOOLEAN"
    STRING = "STRING"
    INT = "INT"
    LONG = "LONG"
    DOUBLE = "DOUBLE"
    LIST = "LIST"
    CLASS = "CLASS"
    PASSWORD = "PASSWORD"


class Importance(enum.Enum):
    HIGH = "HIGH"
    MEDIUM = "MEDIUM"
    LOW = "LOW"


class _NoDefault:
    def __repr__(self) -> str:
        return "NO_DEFAULT"


#: Marks a required key.
NO_DEFAULT: Any = _NoDefault()

_INT32 = (-(2**31), 2**31 - 1)
_INT64 = (-(2**63), 2**63 - 1)
_LIST_SPLIT = re.compile(r"\s*,\s*")

Validator = Callable[[str, Any], None]


def _parse_string(name: str, type_: Type, value: str) -> Any:
    raw = value.strip()
    if type_ is Type.BOOLEAN:
        if raw.lower() in ("true", "false"):
            return raw.lower() == "true"
        raise ConfigError(f"Invalid value {value!r} for configuration {name}: expected true or false", name)
    if type_ in (Type.INT, Type.LONG):
        lo, hi = _INT32 if type_ is Type.INT else _INT64
        try:
            parsed = int(raw)
        except ValueError:
            raise ConfigError(f"Invalid value {value!r} for configuration {name}: expected an integer", name) from None
        if not lo <= parsed <= hi:
            raise ConfigError(f"Invalid value {value!r} for configuration {name}: out of range", name)
        return parsed
    if type_ is Type.DOUBLE:
        try:
            return float(raw)
        except ValueError:
            raise ConfigError(f"Invalid value {value!r} for configuration {name}: expected a number", name) from None
    if type_ is Type.LIST:
        return [] if raw == "" else _LIST_SPLIT.split(raw)
    return raw


def parse_value(name: str, type_: Type, value: Any) -> Any:
    """Parse one raw value (usually a string) into its typed form, Kafka-style.

    Raises :class:`ConfigError` naming the key and what was expected.
    """
    if value is None:
        return None
    if type_ is Type.PASSWORD:
        return value if isinstance(value, Password) else Password(str(value))
    if isinstance(value, str):
        return _parse_string(name, type_, value)
    is_int = isinstance(value, int) and not isinstance(value, bool)
    if (type_ is Type.BOOLEAN and isinstance(value, bool)) or (type_ in (Type.INT, Type.LONG) and is_int):
        return value
    if type_ is Type.DOUBLE and (is_int or isinstance(value, float)):
        return float(value)
    if type_ is Type.LIST and isinstance(value, (list, tuple)):
        return [str(v) for v in value]
    if type_ is Type.CLASS:
        return value
    if type_ is Type.STRING:
        return str(value)
    raise ConfigError(f"Invalid value {value!r} for configuration {name}: expected {type_.value}", name)


def format_value(type_: Type, value: Any) -> str | None:
    """The string form of a typed value, as it would be written in a properties file."""
    if value is None or value is NO_DEFAULT:
        return None
    if type_ is Type.PASSWORD:
        return HIDDEN
    if type_ is Type.BOOLEAN:
        return "true" if value else "false"
    if type_ is Type.LIST:
        return value if isinstance(value, str) else ",".join(value)  # defaults may be given as strings
    return str(value)


# ---- validators -----------------------------------------------------------------------------------


def at_least(minimum: int | float) -> Validator:
    def check(name: str, value: Any) -> None:
        if value is not None and value < minimum:
            raise ConfigError(f"Invalid value {value} for configuration {name}: must be at least {minimum}", name)

    check.__doc__ = f"[{minimum},...]"
    return check


def one_of(*allowed: str, case_sensitive: bool = False) -> Validator:
    def check(name: str, value: Any) -> None:
        if value is None:
            return
        ok = value in allowed if case_sensitive else str(value).lower() in {a.lower() for a in allowed}
        if not ok:
            raise ConfigError(
                f"Invalid value {value!r} for configuration {name}: expected one of {', '.join(allowed)}", name
            )

    check.__doc__ = "[" + ", ".join(allowed) + "]"
    return check


def regex_list(name: str, value: Any) -> None:
    """Each entry of a LIST must be a valid regular expression."""
    for entry in value or []:
        try:
            re.compile(entry)
        except re.error as exc:
            raise ConfigError(
                f"Invalid value {entry!r} for configuration {name}: not a valid regular expression ({exc})", name
            ) from None


regex_list.__doc__ = "comma-separated regular expressions"


def non_empty_string(name: str, value: Any) -> None:
    if value is not None and str(value).strip() == "":
        raise ConfigError(f"Invalid value for configuration {name}: must not be empty", name)


non_empty_string.__doc__ = "non-empty string"


@dataclass(frozen=True)
class ConfigKey:
    """The definition of one configuration key."""

    name: str
    type: Type
    default: Any = NO_DEFAULT
    importance: Importance = Importance.MEDIUM
    doc: str = ""
    validator: Validator | None = None
    group: str | None = None
    order_in_group: int = -1
    display_name: str | None = None
    dependents: tuple[str, ...] = ()

    @property
    def required(self) -> bool:
        return self.default is NO_DEFAULT

    def default_string(self) -> str | None:
        return format_value(self.type, self.default)


@dataclass
class ConfigValue:
    """The result of validating one key (the ``value`` half of Connect's ConfigInfo)."""

    name: str
    value: Any = None
    errors: list[str] = field(default_factory=list)
    recommended_values: list[str] = field(default_factory=list)
    visible: bool = True


class ConfigDef:
    """An ordered set of :class:`ConfigKey` definitions."""

    def __init__(self, keys: Iterable[ConfigKey] = ()) -> None:
        self._keys: dict[str, ConfigKey] = {}
        for key in keys:
            self.add(key)

    def add(self, key: ConfigKey) -> ConfigDef:
        self._keys[key.name] = key
        return self

    def define(self, name: str, type_: Type, default: Any = NO_DEFAULT, importance: Importance = Importance.MEDIUM,
               doc: str = "", validator: Validator | None = None, group: str | None = None) -> ConfigDef:
        return self.add(ConfigKey(name, type_, default, importance, doc, validator, group))

    def merge(self, other: ConfigDef) -> ConfigDef:
        """A new ConfigDef with this one's keys, then ``other``'s (later definitions win)."""
        merged = ConfigDef(self._keys.values())
        for key in other.keys():  # noqa: SIM118 - ConfigDef.keys() returns ConfigKeys
            merged.add(key)
        return merged

    def keys(self) -> list[ConfigKey]:
        return list(self._keys.values())

    def names(self) -> set[str]:
        return set(self._keys)

    def __contains__(self, name: object) -> bool:
        return name in self._keys

    def __getitem__(self, name: str) -> ConfigKey:
        return self._keys[name]

    def parse(self, props: Mapping[str, Any]) -> dict[str, Any]:
        """Parse and validate ``props``; unknown keys are ignored. Raises the first :class:`ConfigError`."""
        parsed: dict[str, Any] = {}
        for key in self._keys.values():
            if key.name in props:
                value = parse_value(key.name, key.type, props[key.name])
            elif key.required:
                raise ConfigError(f"Missing required configuration {key.name!r} which has no default value", key.name)
            else:
                value = parse_value(key.name, key.type, key.default)
            if key.validator is not None:
                key.validator(key.name, value)
            parsed[key.name] = value
        return parsed

    def validate(self, props: Mapping[str, Any]) -> dict[str, ConfigValue]:
        """Validate every key and collect all errors instead of stopping at the first."""
        results: dict[str, ConfigValue] = {}
        for key in self._keys.values():
            result = ConfigValue(key.name, props.get(key.name))
            try:
                if key.name in props:
                    value = parse_value(key.name, key.type, props[key.name])
                elif key.required:
                    raise ConfigError(f"Missing required configuration {key.name!r} which has no default value",
                                      key.name)
                else:
                    value = parse_value(key.name, key.type, key.default)
                if key.validator is not None:
                    key.validator(key.name, value)
            except ConfigError as exc:
                result.errors.append(str(exc))
            results[key.name] = result
        return results

    def to_markdown(self, title: str | None = None) -> str:
        """A Markdown reference table of every key (the source of ``mirror config docs``)."""
        lines = [f"### {title}", ""] if title else []
        lines += ["| key | type | default | valid values | importance | description |",
                  "|---|---|---|---|---|---|"]
        for key in self._keys.values():
            default = "(required)" if key.required else f"`{key.default_string()}`"
            if key.default is None:
                default = "null"
            valid = (key.validator.__doc__ or "") if key.validator else ""
            doc = " ".join(key.doc.split()).replace("|", "\\|")
            lines.append(f"| `{key.name}` | {key.type.value.lower()} | {default} | {valid} | "
                         f"{key.importance.value.lower()} | {doc} |")
        return "\n".join(lines) + "\n"
