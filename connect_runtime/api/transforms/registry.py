"""Which class a ``transforms.<alias>.type`` or ``predicates.<alias>.type`` value names.

Resolved in this order: a built-in by Java's class name (``org.apache.kafka.connect.transforms.Filter``,
``...transforms.predicates.RecordIsTombstone``) or by its simple name (``Filter``), as Connect's plugin
aliases allow, or by its Python path; then a Python class by its dotted path, which must have the shape of
:class:`~connect_runtime.api.transforms.base.Transformation` (or ``Predicate``), imported only if the
process's code policy permits that name (:mod:`connect_runtime.api.plugin_allowlist`; checked before the
import). Java's transformations that read fields of a structured key or value are refused with that
reason, not as unknown classes.
"""

from __future__ import annotations

import importlib
from typing import Any

from connect_runtime.api import plugin_allowlist
from connect_runtime.api.transforms.builtin import (
    DropHeaders,
    Filter,
    HasHeaderKey,
    InsertHeader,
    RecordIsTombstone,
    RegexRouter,
    TimestampRouter,
    TopicNameMatches,
)

JAVA_TRANSFORMS = "org.apache.kafka.connect.transforms."
JAVA_PREDICATES = "org.apache.kafka.connect.transforms.predicates."

TRANSFORMATIONS: dict[str, type[Any]] = {cls.__name__: cls for cls in (
    Filter, RegexRouter, TimestampRouter, InsertHeader, DropHeaders)}
PREDICATES: dict[str, type[Any]] = {cls.__name__: cls for cls in (
    TopicNameMatches, HasHeaderKey, RecordIsTombstone)}

#: Java's built-ins that need a structured (schema'd) key or value: nothing to read in bytes.
_STRUCTURED = frozenset({"Cast", "ExtractField", "Flatten", "HeaderFrom", "HoistField", "InsertField", "MaskField",
                         "ReplaceField", "SetSchemaMetadata", "TimestampConverter", "ValueToKey"})

#: kind -> (built-ins, Java package, methods a Python class must have)
_KINDS: dict[str, tuple[dict[str, type[Any]], str, tuple[str, ...]]] = {
    "transformation": (TRANSFORMATIONS, JAVA_TRANSFORMS, ("configure", "apply")),
    "predicate": (PREDICATES, JAVA_PREDICATES, ("configure", "test")),
}


def resolve(kind: str, name: str) -> type[Any]:
    """The class ``name`` designates; ValueError saying why none (for the caller to name the key)."""
    builtins, java_package, methods = _KINDS[kind]
    name = name.strip()
    if not name:
        raise ValueError(f"no {kind} class given")
    simple = name[len(java_package):] if name.startswith(java_package) else name
    simple = simple.split("$", 1)[0]  # InsertField$Value -> InsertField
    if simple in builtins and (simple == name or name.startswith(java_package)):
        return builtins[simple]
    if simple in _STRUCTURED and (simple == name.split("$", 1)[0] or name.startswith(JAVA_TRANSFORMS)):
        raise ValueError(f"{name} reads fields of a structured key or value, and records are copied here as "
                         f"bytes: not supported ({_available(kind)})")
    by_path = {f"{cls.__module__}.{cls.__qualname__}": cls for cls in builtins.values()}
    if plugin_allowlist.normalized(name) in by_path:
        return by_path[plugin_allowlist.normalized(name)]
    if "." in name and not name.startswith("org.apache.kafka."):
        if not plugin_allowlist.permits(name):
            raise ValueError(f"not a registered {kind}, and the operator has not allowed this Python name (add it "
                             f"to {plugin_allowlist.PLUGIN_ALLOWLIST} in the worker or mm2.properties file)")
        cls = _import(name, kind)
        if isinstance(cls, type) and all(callable(getattr(cls, m, None)) for m in methods):
            return cls
        raise ValueError(f"{name} is not a {kind} class (it needs the methods {', '.join(methods)})")
    raise ValueError(f"class {name} could not be found ({_available(kind)})")


def _available(kind: str) -> str:
    names = ", ".join(_KINDS[kind][0])
    return f"the {kind}s here are {names}, or a Python class given by its dotted path"


def _import(path: str, kind: str) -> Any:
    """Import ``path``, which the code policy has permitted."""
    module_name, _, attr = path.rpartition(".")
    try:
        return getattr(importlib.import_module(module_name), attr)
    except Exception as exc:  # not installed, or a module that fails to import: say which
        cause = " ".join(str(exc).split())
        raise ValueError(f"class {path} could not be found: {cause} ({_available(kind)})") from None
