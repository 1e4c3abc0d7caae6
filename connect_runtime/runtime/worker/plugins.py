"""Finding connector classes (Connect's ``Plugins`` / ``DelegatingClassLoader``, for Python).

Connectors are discovered through the entry-point group ``connect_runtime.connectors`` (declared in a
package's ``pyproject.toml``), so installing a package is all it takes to make its connectors usable.
A ``connector.class`` value is resolved, in this order:

1. an entry-point name or a registered alias: ``MirrorSourceConnector``;
2. the same without Connect's ``Connector`` suffix, as Java's aliases allow: ``MirrorSource``;
3. the dotted Python path of one of those: ``mirror.source.connector.MirrorSourceConnector``;
4. a Java class name, by its last dotted segment: ``org.apache.kafka.connect.mirror.MirrorSourceConnector``
   (so configs written for Java MM2 work unchanged);
5. any other dotted Python path, imported only if the process's code policy permits it
   (:mod:`connect_runtime.api.plugin_allowlist`: ``plugin.allowlist`` or the operator's own file),
   checked before anything is imported.

Entry points are only *listed* at construction; a connector's module is imported the first time it is
asked for, so a plugin that fails to import (or is still being written) breaks only itself.

Other plugin kinds (``GET /connector-plugins?connectorsOnly=false``) are listed from data, never from
a hard-coded list of features: the entry-point groups of :data:`PLUGIN_GROUPS` (an entry's *name* is
the class name users put in configs, e.g. ``org.apache.kafka.connect.transforms.Filter``; its version
is its distribution's), what was :meth:`Plugins.register_plugin`-ed, and the one converter records go
through here, the ByteArrayConverter (a converter and a header converter, as in Java).
"""

from __future__ import annotations

import importlib
import importlib.metadata
import logging
import threading
from typing import Any

from connect_runtime.api import plugin_allowlist
from connect_runtime.api.connector import Connector, SourceConnector
from connect_runtime.api.connector_config import BYTE_ARRAY_CONVERTER
from connect_runtime.api.errors import NotFoundError
from connect_runtime.api.task import Task
from connect_runtime.runtime.herder import PluginInfo

logger = logging.getLogger(__name__)

ENTRY_POINT_GROUP = "connect_runtime.connectors"
#: PluginInfo type -> the entry-point group that declares plugins of that kind.
PLUGIN_GROUPS = {"transformation": "connect_runtime.transformations", "predicate": "connect_runtime.predicates",
                 "converter": "connect_runtime.converters", "header_converter": "connect_runtime.header_converters"}


def class_path(cls: type[Any]) -> str:
    """``module.QualName``: how a class is named in configs (``task.class``) and in PluginInfo."""
    return f"{cls.__module__}.{cls.__qualname__}"


class Plugins:
    """Resolves connector and task classes; thread-safe."""

    def __init__(self, group: str = ENTRY_POINT_GROUP) -> None:
        self._entry_points = {ep.name: ep for ep in importlib.metadata.entry_points(group=group)}
        self._registered: dict[str, type[Connector]] = {}
        self._loaded: dict[str, type[Connector]] = {}
        self._lock = threading.Lock()
        self._other: dict[tuple[str, str], PluginInfo] = {}
        for kind, kind_group in PLUGIN_GROUPS.items():
            for ep in importlib.metadata.entry_points(group=kind_group):
                self._other[(kind, ep.name)] = PluginInfo(ep.name, kind, _distribution_version(ep))
        for kind in ("converter", "header_converter"):
            self._other.setdefault((kind, BYTE_ARRAY_CONVERTER),
                                   PluginInfo(BYTE_ARRAY_CONVERTER, kind, _distribution_version(None)))

    def register(self, name: str, cls: type[Connector]) -> None:
        """Make ``cls`` resolvable as ``name`` (embedding applications and tests)."""
        with self._lock:
            self._registered[name] = cls

    def connector_class(self, name: str) -> type[Connector]:
        """The connector class ``name`` designates (see the module docstring); NotFoundError if none."""
        name = name.strip()
        with self._lock:
            cached = self._loaded.get(name)
        if cached is not None:
            return cached
        cls = self._resolve(name)
        with self._lock:
            self._loaded[name] = cls
        return cls

    def new_connector(self, name: str) -> Connector:
        return self.connector_class(name)()

    def task_class(self, path: str) -> type[Task]:
        """A task class from its dotted path (the ``task.class`` key the worker adds to task configs); one
        the code policy does not permit is NotFoundError (the worker then asks the connector for its task
        class, which is what it stored there)."""
        if not plugin_allowlist.permits(path):
            raise NotFoundError(plugin_allowlist.refusal(path, "task.class"))
        cls = _import_dotted(path.strip())
        if not (isinstance(cls, type) and issubclass(cls, Task)):
            raise NotFoundError(f"Task class {path} could not be found (not importable or not a Task)")
        return cls

    def connector_plugins(self) -> list[PluginInfo]:
        """Every connector that can be loaded, for ``GET /connector-plugins``.

        This imports each plugin's module; one that fails to import is left out with a warning.
        """
        names = sorted({*self._entry_points, *self._registered})
        infos: dict[str, PluginInfo] = {}
        for name in names:
            try:
                cls = self.connector_class(name)
            except NotFoundError as exc:
                logger.warning("connector plugin %s cannot be loaded: %s", name, exc.__cause__ or exc)
                continue
            path = class_path(cls)
            infos[path] = PluginInfo(path, _plugin_type(cls), _version_of(cls))
        return sorted(infos.values(), key=lambda info: info.class_name)

    def register_plugin(self, kind: str, class_name: str, version: str | None = None) -> None:
        """List a plugin of another kind (``transformation``, ``predicate``, ``converter``...)."""
        with self._lock:
            self._other[(kind, class_name)] = PluginInfo(class_name, kind, version)

    def plugins(self, connectors_only: bool = True) -> list[PluginInfo]:
        """``GET /connector-plugins``: the connectors, then (unless ``connectors_only``) every other kind,
        sorted by kind then class as Java sorts them."""
        infos = self.connector_plugins()
        if connectors_only:
            return infos
        with self._lock:
            others = sorted(self._other.values(), key=lambda info: (info.type, info.class_name))
        return infos + others

    def _resolve(self, name: str) -> type[Connector]:
        if not name:
            raise NotFoundError("No connector class given (connector.class is empty)")
        for alias in (name, f"{name}Connector"):
            found = self._by_alias(alias)
            if found is not None:
                return found
        if "." in name:
            found = self._by_target(name)
            if found is not None:
                return found
            if plugin_allowlist.permits(name):
                try:
                    cls = _import_dotted(name)
                except NotFoundError:
                    cls = None
                if cls is not None:
                    return _check_connector(name, cls)
            found = self._by_alias(name.rsplit(".", 1)[1])
            if found is not None:
                return found
            if not plugin_allowlist.permits(name):
                raise NotFoundError(plugin_allowlist.refusal(name, "connector.class"))
        known = ", ".join(sorted({*self._entry_points, *self._registered})) or "none"
        raise NotFoundError(f"Failed to find any class that implements Connector and which name matches "
                            f"{name}; available connectors are: {known}")

    def _by_target(self, path: str) -> type[Connector] | None:
        """The registered connector whose class is at dotted path ``path`` (no import of ``path`` itself)."""
        wanted = plugin_allowlist.normalized(path)
        with self._lock:
            registered = [cls for cls in self._registered.values() if class_path(cls) == wanted]
        if registered:
            return registered[0]
        for alias, ep in self._entry_points.items():
            if plugin_allowlist.normalized(ep.value) == wanted:
                return self._by_alias(alias)
        return None

    def _by_alias(self, alias: str) -> type[Connector] | None:
        with self._lock:
            registered = self._registered.get(alias)
        if registered is not None:
            return registered
        ep = self._entry_points.get(alias)
        if ep is None:
            return None
        try:
            cls = ep.load()
        except Exception as exc:  # a broken plugin is reported as not loadable, with its cause
            raise NotFoundError(f"Connector plugin {alias} ({ep.value}) failed to load: {exc}") from exc
        return _check_connector(alias, cls)


def _import_dotted(path: str) -> Any:
    module_name, sep, attr = path.replace(":", ".").rpartition(".")
    if not sep or not module_name:
        raise NotFoundError(f"{path} is not a dotted class path")
    try:
        return getattr(importlib.import_module(module_name), attr)
    except (ImportError, AttributeError) as exc:
        raise NotFoundError(f"Class {path} could not be found: {exc}") from exc


def _check_connector(name: str, cls: Any) -> type[Connector]:
    if isinstance(cls, type) and issubclass(cls, Connector):
        return cls
    raise NotFoundError(f"{name} resolves to {cls!r}, which is not a Connector")


def _plugin_type(cls: type[Connector]) -> str:
    return "source" if issubclass(cls, SourceConnector) else "unknown"


def _distribution_version(ep: importlib.metadata.EntryPoint | None) -> str | None:
    """The version of the package declaring ``ep`` (of this runtime for built-ins)."""
    try:
        if ep is not None and ep.dist is not None:
            return str(ep.dist.version)
        return importlib.metadata.version("pymirrormaker")
    except importlib.metadata.PackageNotFoundError:
        return None


def _version_of(cls: type[Connector]) -> str | None:
    try:
        return str(cls().version())
    except Exception:  # a plugin that cannot be instantiated just has no version
        return None
