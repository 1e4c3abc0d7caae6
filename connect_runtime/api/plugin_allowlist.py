"""Which Python code a configuration may name: registered plugins, and what the operator allowed.

A connector config names code in many keys: ``connector.class``, ``transforms.<a>.type``,
``predicates.<a>.type``, MM2's ``replication.policy.class`` and filter classes, a client's
``sasl.login.callback.handler.class``... Each of them is resolved first against the plugins this process
knows by name (entry points, the Java class names mapped to Python classes, the built-in transformations
and predicates, Kafka's callback handlers), which imports nothing a caller chose. A dotted Python path is
imported only when the process's :class:`CodePolicy` permits it: otherwise the key is refused with a
one-line :class:`~connect_runtime.api.errors.ConfigError` naming it, *before* anything is imported (an
import runs a module's code; a callable named in ``sasl.login.callback.handler.class`` is called with a
string from the same config, which made ``os.system`` a remote shell through REST).

``connect-distributed`` and the MM2 driver install their policy at start with :func:`install`
(:func:`operator_policy`): what ``plugin.allowlist`` lists (``pkg.module.Name``, or ``pkg.module.*`` for
every name in a module or package), plus every class or callable the operator's own file names (its
``*.class``, ``*.classes`` and ``transforms|predicates.<a>.type`` values), so the operator's files keep
their full power. Configs submitted through REST are then limited to the registered plugins and those
names. A process that installs nothing (a library user, ``mirror offsets``, tests) runs unrestricted: its
configs come from its own caller.

The policy is process-wide because the imports happen far from where configs arrive (task threads,
client builds, MM2's filters), and one gate at the import is the only way none is missed.
"""

from __future__ import annotations

import importlib
import re
import threading
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from typing import Any

from connect_runtime.api.errors import ConfigError

PLUGIN_ALLOWLIST = "plugin.allowlist"
PLUGIN_ALLOWLIST_DOC = (
    "Python classes and callables, beyond the registered plugins, that connector configs submitted through "
    "REST may name (connector.class, transforms, predicates, replication.policy.class, MM2's filter classes, "
    "sasl.login.callback.handler.class...): dotted paths (pkg.module.Name), or pkg.module.* for every name "
    "of a module or package. Empty by default. Classes named in this file itself are always allowed.")

#: Keys (after any prefix) whose values name code: ``*.class``, ``*.classes``, transformation and
#: predicate types.
_CODE_KEY = re.compile(r"(\.class|\.classes|(^|\.)(transforms|predicates)\.[^.]+\.type)$")


@dataclass(frozen=True)
class CodePolicy:
    """``restricted``: only ``names`` (exact dotted paths) and names under ``packages`` (prefixes ending in
    ``.``) may be imported from configs; unrestricted: any."""

    restricted: bool = False
    names: frozenset[str] = frozenset()
    packages: tuple[str, ...] = ()

    def permits(self, path: str) -> bool:
        name = normalized(path)
        return (not self.restricted or name in self.names
                or any(name.startswith(package) for package in self.packages))

    def describe(self) -> str:
        """One line for the start-up log (names only: they are not secrets)."""
        if not self.restricted:
            return "any Python class named in a config may be imported"
        allowed = sorted(self.names) + [f"{p}*" for p in self.packages]
        return (f"configs may import registered plugins and {len(allowed)} operator-allowed name(s)"
                + (f": {', '.join(allowed)}" if allowed else ""))


UNRESTRICTED = CodePolicy()

_lock = threading.Lock()
_current = UNRESTRICTED


def install(policy: CodePolicy) -> CodePolicy:
    """Make ``policy`` this process's; returns the previous one (to restore it when a server stops)."""
    global _current
    with _lock:
        previous, _current = _current, policy
    return previous


def current() -> CodePolicy:
    return _current


def permits(path: str) -> bool:
    """Whether a config may name the dotted path ``path`` in this process."""
    return _current.permits(path)


def refusal(path: str, key: str | None) -> str:
    """The one-line reason a config may not name ``path`` (``key`` is the config key, if known)."""
    return (f"{_where(path, key)}: not a registered plugin, and the operator has not allowed this Python name "
            f"(add it to {PLUGIN_ALLOWLIST} in the worker or mm2.properties file to allow it)")


def check(path: str, key: str | None) -> None:
    """ConfigError naming ``key`` unless this process's policy permits importing ``path``."""
    if not permits(path):
        raise ConfigError(refusal(path, key), key)


def import_named(path: str, key: str | None) -> Any:
    """The object ``pkg.module.Name`` (or ``pkg.module:Name``) names, if the policy permits it; else, or when
    it cannot be imported, a ConfigError naming ``key``. Nothing is imported for a refused name."""
    check(path, key)
    module_name, sep, attr = normalized(path).rpartition(".")
    if not sep or not module_name or not attr:
        raise ConfigError(f"{_where(path, key)}: expected a dotted Python path such as package.module.Name", key)
    try:
        return getattr(importlib.import_module(module_name), attr)
    except Exception as exc:  # not installed, or a module that fails to import: say which, on one line
        cause = " ".join(str(exc).split())
        raise ConfigError(f"{_where(path, key)}: it cannot be imported ({type(exc).__name__}: {cause})",
                          key) from None


def _where(path: str, key: str | None) -> str:
    return f"Invalid value {path.strip()!r} for configuration {key}" if key else f"Class {path.strip()!r}"


def normalized(path: str) -> str:
    return path.strip().replace(":", ".")


def code_names(props: Mapping[str, str]) -> set[str]:
    """Every class or callable name ``props`` (an operator's file) gives in a code-naming key."""
    names: set[str] = set()
    for key, value in props.items():
        if _CODE_KEY.search(key) and value:
            names.update(normalized(v) for v in str(value).split(",") if v.strip())
    return names


def operator_policy(props: Mapping[str, str], extra: Iterable[str] = ()) -> CodePolicy:
    """The restricted policy of a server whose operator file is ``props``: ``plugin.allowlist`` (a
    ``pkg.module.*`` entry allows a whole module or package) plus the code that file names itself.
    ``extra`` adds names (an embedding application's own classes)."""
    listed = [normalized(v) for v in str(props.get(PLUGIN_ALLOWLIST, "")).split(",") if v.strip()]
    packages = tuple(sorted({entry[:-1] for entry in listed if entry.endswith(".*")}))
    names = {entry for entry in listed if not entry.endswith(".*")} | code_names(props) | set(extra)
    return CodePolicy(restricted=True, names=frozenset(names), packages=packages)
