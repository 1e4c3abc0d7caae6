"""Loading pluggable classes named in configuration (Kafka's ``ConfigDef.Type.CLASS``).

MM2 configs name classes by their Java names (``org.apache.kafka.connect.mirror.DefaultReplicationPolicy``).
A Python port must accept those names so that an existing ``mm2.properties`` keeps working, and must
also accept Python dotted paths for user-written plugins. Both forms resolve here, in one place, so the
replication policy and the three filters behave the same way.

Inside a server (``connect-distributed``, the MM2 driver) a dotted path is imported only if the runtime's
code policy permits it (:mod:`connect_runtime.api.plugin_allowlist`: registered names, ``plugin.allowlist``
and what the operator's own file names), checked before the import: a REST caller must not name code.
This package may not import the runtime (it stands alone), so it asks that module only when it is
loaded, which it is wherever a policy was installed; standalone, the caller's config is its own and any
path loads.
"""

from __future__ import annotations

import importlib
import sys
from collections.abc import Mapping
from typing import Any, TypeVar, cast

T = TypeVar("T")


def load_class(name: str, base: type[Any], aliases: Mapping[str, type[T]], what: str) -> type[T]:
    """Resolve ``name`` to a subclass of ``base``.

    ``name`` is looked up in ``aliases`` first (Java class names and short names), then imported as a
    dotted Python path, either ``pkg.mod.Class`` or ``pkg.mod:Class``.

    Raises:
        ValueError: the name is blank, cannot be imported, or is not a subclass of ``base``; the message
            names ``what`` (e.g. "replication policy") so the operator knows which key is wrong.
    """
    cleaned = name.strip()
    if not cleaned:
        raise ValueError(f"{what} class name is empty")
    if cleaned in aliases:
        return aliases[cleaned]
    by_path = {f"{cls.__module__}.{cls.__qualname__}": cls for cls in aliases.values()}
    if cleaned.replace(":", ".") in by_path:
        return by_path[cleaned.replace(":", ".")]
    _check_code_policy(cleaned, what)
    if ":" in cleaned:
        module_name, _, attr = cleaned.partition(":")
    else:
        module_name, _, attr = cleaned.rpartition(".")
    if not module_name or not attr:
        raise ValueError(
            f"unknown {what} class {cleaned!r}: expected one of {sorted(aliases)} "
            "or a dotted Python path such as 'package.module.Class' or 'package.module:Class'"
        )
    try:
        module = importlib.import_module(module_name)
    except ImportError as exc:
        raise ValueError(
            f"unknown {what} class {cleaned!r}: cannot import module {module_name!r} ({exc})"
        ) from exc
    try:
        obj = getattr(module, attr)
    except AttributeError as exc:
        raise ValueError(
            f"unknown {what} class {cleaned!r}: module {module_name!r} has no attribute {attr!r}"
        ) from exc
    if not isinstance(obj, type) or not issubclass(obj, base):
        raise ValueError(
            f"{what} class {cleaned!r} is not a subclass of {base.__module__}.{base.__qualname__}"
        )
    return cast("type[T]", obj)


def _check_code_policy(name: str, what: str) -> None:
    """ValueError if the runtime's code policy (when the runtime is loaded) does not permit ``name``."""
    policy = sys.modules.get("connect_runtime.api.plugin_allowlist")
    if policy is not None and not policy.permits(name):
        raise ValueError(f"{what} class {name!r} is not a registered plugin, and the operator has not allowed "
                         f"this Python name (add it to plugin.allowlist in the worker or mm2.properties file)")
