"""Typed config attributes that take a ConfigDef key, instead of one hand-written property per key.

A config class declares ``topics = TextList(TOPICS)``; ``config.topics`` is then the value the class's
ConfigDef parsed for that key (through the class's ``get``), converted as the key's type says. The
attribute kinds mirror ConfigDef types, and :func:`check_settings` verifies, for a class, that every
attribute names a key of its ConfigDef whose type the attribute can read: a renamed key or a changed
type then fails a unit test instead of a replication flow.

Read-only on purpose: a config is the parsed view of what the operator wrote.
"""

from __future__ import annotations

from typing import Any, ClassVar, Generic, Protocol, Self, TypeVar, overload

from connect_runtime.api.config import ConfigDef, Type

T = TypeVar("T")


class ParsedConfig(Protocol):
    """What a setting reads from: the parsed value of a defined key."""

    def get(self, name: str) -> Any: ...


class Setting(Generic[T]):
    """One typed attribute backed by one ConfigDef key."""

    #: The ConfigDef types whose parsed values this kind of setting converts.
    types: ClassVar[frozenset[Type]] = frozenset()

    def __init__(self, key: str) -> None:
        self.key = key

    @overload
    def __get__(self, instance: None, owner: type[Any]) -> Self: ...

    @overload
    def __get__(self, instance: ParsedConfig, owner: type[Any]) -> T: ...

    def __get__(self, instance: ParsedConfig | None, owner: type[Any]) -> Self | T:
        if instance is None:
            return self
        return self.read(instance)

    def read(self, config: ParsedConfig) -> T:
        return self.convert(config.get(self.key))

    def convert(self, value: Any) -> T:
        raise NotImplementedError

    def keys(self) -> dict[str, frozenset[Type]]:
        """The keys this setting reads, each with the types it accepts (see :func:`check_settings`)."""
        return {self.key: self.types}


class Flag(Setting[bool]):
    """A BOOLEAN key."""

    types = frozenset({Type.BOOLEAN})

    def convert(self, value: Any) -> bool:
        return bool(value)


class Integer(Setting[int]):
    """An INT or LONG key."""

    types = frozenset({Type.INT, Type.LONG})

    def convert(self, value: Any) -> int:
        return int(value)


class Text(Setting[str]):
    """A STRING or CLASS key, as a string (a class is kept as the name the operator wrote)."""

    types = frozenset({Type.STRING, Type.CLASS})

    def convert(self, value: Any) -> str:
        return str(value)


class Choice(Text):
    """A STRING key validated by a case-insensitive ``one_of``: lower-cased, so callers compare once."""

    def convert(self, value: Any) -> str:
        return str(value).lower()


class TextList(Setting[list[str]]):
    """A LIST key, as a fresh list (callers may modify it); an unset list without default is empty."""

    types = frozenset({Type.LIST})

    def convert(self, value: Any) -> list[str]:
        return list(value or [])


class Period(Setting[int]):
    """Seconds between runs of a periodic job, or ``-1`` ("never schedule") when its flag is false.

    MM2 pairs each ``*.interval.seconds`` key with an ``*.enabled`` key; the scheduler takes ``-1``.
    """

    def __init__(self, enabled_key: str, seconds_key: str) -> None:
        super().__init__(seconds_key)
        self.enabled_key = enabled_key

    def read(self, config: ParsedConfig) -> int:
        return seconds_or_never(bool(config.get(self.enabled_key)), int(config.get(self.key)))

    def keys(self) -> dict[str, frozenset[Type]]:
        return {self.enabled_key: Flag.types, self.key: Integer.types}


def seconds_or_never(enabled: bool, seconds: int) -> int:
    """A period in seconds, or ``-1`` ("never schedule") when the matching ``*.enabled`` flag is false."""
    return seconds if enabled else -1


def settings_of(cls: type[Any]) -> dict[str, Setting[Any]]:
    """Every setting attribute of ``cls``, inherited ones included, by attribute name."""
    found: dict[str, Setting[Any]] = {}
    for klass in reversed(cls.__mro__):
        found.update({name: value for name, value in vars(klass).items() if isinstance(value, Setting)})
    return found


def check_settings(cls: type[Any], config_def: ConfigDef) -> list[str]:
    """Problems with ``cls``'s settings against ``config_def``: unknown keys and unreadable types."""
    problems = []
    for attribute, setting in settings_of(cls).items():
        for key, types in setting.keys().items():
            if key not in config_def:
                problems.append(f"{cls.__name__}.{attribute}: {key!r} is not a key of its ConfigDef")
            elif config_def[key].type not in types:
                problems.append(f"{cls.__name__}.{attribute}: {key!r} is {config_def[key].type.value}, "
                                f"not one of {sorted(t.value for t in types)}")
    return problems
