"""The shapes of a transformation and a predicate (Connect's ``Transformation`` and ``Predicate``).

Records are copied as bytes here (the only converter is the ByteArrayConverter), so a transformation sees
the :class:`~connect_runtime.api.records.SourceRecord` the task returned: topic, partition, key and value
bytes, headers, timestamp. A custom one is any class with this shape, named in the config by its dotted
Python path (``transforms.x.type = my_package.transforms.MyTransform``); it needs no base class. The
built-ins subclass :class:`Configurable` to parse their keys through a ConfigDef, so their validation
errors read as every other key's.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any, Protocol, runtime_checkable

from connect_runtime.api.config import ConfigDef
from connect_runtime.api.records import SourceRecord


@runtime_checkable
class Transformation(Protocol):
    """Connect's ``Transformation``: ``apply`` returns the record to write, or None to drop it."""

    def configure(self, configs: Mapping[str, str]) -> None: ...

    def apply(self, record: SourceRecord) -> SourceRecord | None: ...

    def close(self) -> None: ...


@runtime_checkable
class Predicate(Protocol):
    """Connect's ``Predicate``: whether a transformation applies to a record."""

    def configure(self, configs: Mapping[str, str]) -> None: ...

    def test(self, record: SourceRecord) -> bool: ...

    def close(self) -> None: ...


class Configurable:
    """A built-in: its keys are a :class:`ConfigDef` (``CONFIG_DEF``), parsed by ``configure``."""

    CONFIG_DEF = ConfigDef()

    def configure(self, configs: Mapping[str, str]) -> None:
        self.configured(self.CONFIG_DEF.parse(configs))

    def configured(self, values: dict[str, Any]) -> None:
        """Take the parsed values (raise ConfigError naming the key for a value the def cannot check)."""

    def close(self) -> None:
        """Nothing to release."""
