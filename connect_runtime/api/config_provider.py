"""Config providers: ``${provider:[path:]key}`` placeholders resolved at load time (Kafka KIP-297/KIP-421).

So that secrets can stay out of configuration files, a value such as ``${env:KAFKA_PASSWORD}`` or
``${file:/etc/kafka/secrets.properties:sasl.password}`` is replaced by what the named provider returns.
Providers are declared as Kafka declares them::

    config.providers = env, file
    config.providers.env.class = org.apache.kafka.common.config.provider.EnvVarConfigProvider
    config.providers.file.class = org.apache.kafka.common.config.provider.FileConfigProvider

Kafka's Java class names map to the built-in Python providers; a dotted Python path works too.
"""

from __future__ import annotations

import importlib
import os
import re
from abc import ABC, abstractmethod
from collections.abc import Mapping
from pathlib import Path
from typing import Any

from connect_runtime.api.errors import ConfigError
from connect_runtime.api.prefixed_keys import with_prefix_stripped
from connect_runtime.api.secrets import remember_secrets

#: ``${provider:path:key}`` or ``${provider:key}`` (Kafka's ConfigTransformer pattern).
PLACEHOLDER = re.compile(r"\$\{([^}]*?):(([^}]*?):)?([^}]*?)\}")


class ConfigProvider(ABC):
    """Returns values for keys under a path (a file, a vault path...)."""

    def configure(self, config: Mapping[str, str]) -> None:  # noqa: B027 - optional hook
        """Receive ``config.providers.<name>.param.*`` settings."""

    @abstractmethod
    def get(self, path: str, keys: set[str]) -> dict[str, str]:
        """Values for ``keys`` at ``path``; missing keys are simply absent."""


class EnvVarConfigProvider(ConfigProvider):
    """``${env:VAR}``: environment variables (the path must be empty)."""

    def __init__(self) -> None:
        self._allow: re.Pattern[str] | None = None

    def configure(self, config: Mapping[str, str]) -> None:
        pattern = config.get("allowlist.pattern")
        self._allow = re.compile(pattern) if pattern else None

    def get(self, path: str, keys: set[str]) -> dict[str, str]:
        if path:
            raise ConfigError(f"The env config provider takes no path, got {path!r}")
        return {k: os.environ[k] for k in keys
                if k in os.environ and (not self._allow or self._allow.fullmatch(k))}


class AllowedPaths:
    """Kafka's ``allowed.paths`` (KIP-993) for the file and directory providers, resolved canonically.

    ``config.providers.<name>.param.allowed.paths`` is a comma-separated list of absolute paths; a path a
    placeholder names is resolved (``..`` and symbolic links followed, as the OS would open it) and must
    lie under one of them, else the lookup is refused with a ConfigError. Without the key every path is
    allowed, as in Kafka; connector configs submitted through REST cannot use a provider the operator has
    not put in ``rest.config.providers.allowlist`` anyway.
    """

    KEY = "allowed.paths"

    def __init__(self, provider: str) -> None:
        self._provider = provider
        self._roots: tuple[Path, ...] | None = None

    def configure(self, config: Mapping[str, str]) -> None:
        raw = config.get(self.KEY)
        if raw is None:
            self._roots = None
            return
        roots = []
        for entry in (e.strip() for e in str(raw).split(",")):
            if not entry:
                continue
            if not os.path.isabs(entry):
                raise ConfigError(f"config provider {self._provider!r}: {self.KEY} entry {entry!r} is not an "
                                  f"absolute path")
            roots.append(Path(os.path.realpath(entry)))
        self._roots = tuple(roots)

    def resolve(self, path: str) -> Path:
        """``path`` made canonical; ConfigError when it lies outside every allowed path."""
        canonical = Path(os.path.realpath(path))
        if self._roots is not None and not any(canonical == root or root in canonical.parents
                                               for root in self._roots):
            allowed = ", ".join(str(r) for r in self._roots) or "none"
            raise ConfigError(f"config provider {self._provider!r} may not read {path!r}: it is outside its "
                              f"{self.KEY} ({allowed})")
        return canonical


class FileConfigProvider(ConfigProvider):
    """``${file:/path/to/file.properties:key}``: a key of a Java properties file."""

    def __init__(self) -> None:
        self._allowed = AllowedPaths("file")

    def configure(self, config: Mapping[str, str]) -> None:
        self._allowed.configure(config)

    def get(self, path: str, keys: set[str]) -> dict[str, str]:
        import javaproperties  # local: keeps the api package free of third-party imports at import time

        file = self._allowed.resolve(path)
        try:
            with file.open(encoding="utf-8") as fh:
                values: dict[str, str] = javaproperties.load(fh)
        except OSError as exc:
            raise ConfigError(f"config provider 'file' cannot read {path}: {exc.strerror}") from exc
        return {k: values[k] for k in keys if k in values}


class DirectoryConfigProvider(ConfigProvider):
    """``${directory:/path/to/dir:file}``: the content of a file in a directory (Kubernetes secrets).

    A key is a file name in that directory, nothing else: a key holding a path separator, ``..`` or an
    absolute path is refused, and the file must resolve (links followed) inside the directory, as Kafka's
    provider only ever lists the directory's own regular files.
    """

    def __init__(self) -> None:
        self._allowed = AllowedPaths("directory")

    def configure(self, config: Mapping[str, str]) -> None:
        self._allowed.configure(config)

    def get(self, path: str, keys: set[str]) -> dict[str, str]:
        directory = self._allowed.resolve(path)
        out = {}
        for key in keys:
            if not key or key in (".", "..") or "/" in key or "\\" in key or os.path.isabs(key):
                raise ConfigError(f"config provider 'directory': key {key!r} is not a file name in {path!r}")
            file = Path(os.path.realpath(directory / key))
            if file.parent != directory:
                raise ConfigError(f"config provider 'directory': {key!r} in {path!r} resolves outside it")
            if file.is_file():
                out[key] = file.read_text(encoding="utf-8")
        return out


_BUILTIN = {
    "org.apache.kafka.common.config.provider.EnvVarConfigProvider": EnvVarConfigProvider,
    "org.apache.kafka.common.config.provider.FileConfigProvider": FileConfigProvider,
    "org.apache.kafka.common.config.provider.DirectoryConfigProvider": DirectoryConfigProvider,
    "EnvVarConfigProvider": EnvVarConfigProvider,
    "FileConfigProvider": FileConfigProvider,
    "DirectoryConfigProvider": DirectoryConfigProvider,
}


def load_class(path: str, key: str | None = None) -> Any:
    """Import ``package.module.Name`` (or ``package.module:Name``); a clear ConfigError if impossible."""
    module_name, sep, attr = path.replace(":", ".").rpartition(".")
    if not sep or not module_name:
        raise ConfigError(f"Invalid value {path!r} for configuration {key}: expected a dotted class path",
                          key)
    try:
        return getattr(importlib.import_module(module_name), attr)
    except (ImportError, AttributeError) as exc:
        raise ConfigError(f"Invalid value {path!r} for configuration {key}: class could not be found ({exc})",
                          key) from None


def build_providers(config: Mapping[str, str]) -> dict[str, ConfigProvider]:
    """Instantiate the providers named by ``config.providers`` from a flat config map."""
    names = [n.strip() for n in config.get("config.providers", "").split(",") if n.strip()]
    providers: dict[str, ConfigProvider] = {}
    for name in names:
        key = f"config.providers.{name}.class"
        class_name = config.get(key, "").strip()
        if not class_name:
            raise ConfigError(f"Missing {key} for config provider {name!r} listed in config.providers", key)
        cls: Any = _BUILTIN.get(class_name) or load_class(class_name, key)
        provider = cls()
        if not isinstance(provider, ConfigProvider):
            raise ConfigError(f"Invalid value {class_name!r} for configuration {key}: not a ConfigProvider",
                              key)
        prefix = f"config.providers.{name}.param."
        provider.configure(with_prefix_stripped(config, prefix))
        providers[name] = provider
    return providers


def resolve(config: Mapping[str, str], providers: Mapping[str, ConfigProvider]) -> dict[str, str]:
    """Replace every ``${provider:[path:]key}`` whose provider is known; others are left as they are.

    A placeholder whose provider is known but has no such key is an error naming the config key, since
    silently keeping the literal placeholder as (say) a password hides the mistake until connect time.
    The resolved values of secret keys are remembered, so they are scrubbed from logs and traces
    (:func:`connect_runtime.api.secrets.scrub`).
    """
    out = _resolve(config, providers)
    remember_secrets(out)
    return out


def _resolve(config: Mapping[str, str], providers: Mapping[str, ConfigProvider]) -> dict[str, str]:
    out: dict[str, str] = {}
    for name, value in config.items():
        if not isinstance(value, str) or "${" not in value:
            out[name] = value
            continue

        def substitute(m: re.Match[str], name: str = name) -> str:
            provider_name, path, key = m.group(1), m.group(3) or "", m.group(4)
            provider = providers.get(provider_name)
            if provider is None:
                return m.group(0)
            found = provider.get(path, {key})
            if key not in found:
                where = f"{path}:{key}" if path else key
                raise ConfigError(
                    f"Configuration {name}: config provider {provider_name!r} has no value for {where!r}",
                    name)
            return found[key]

        out[name] = PLACEHOLDER.sub(substitute, value)
    return out


def placeholder_providers(value: str) -> set[str]:
    """The provider names ``value``'s ``${provider:...}`` placeholders use."""
    return {m.group(1) for m in PLACEHOLDER.finditer(value)} if "${" in value else set()


def check_allowed_providers(config: Mapping[str, str | None], allowed: frozenset[str]) -> None:
    """ConfigError if a value uses a provider outside ``allowed`` (REST-submitted connector configs).

    A REST caller must not make the worker read files or the environment through the worker's
    providers (CVE-2024-31141): only the operator's allowlist may be used.
    """
    for key, value in config.items():
        used = placeholder_providers(value) - allowed if value else set()
        if used:
            allowlist = ", ".join(sorted(allowed)) or "none"
            raise ConfigError(
                f"Configuration {key} uses config provider {sorted(used)[0]!r}, which connector configs "
                f"submitted through REST may not use (allowed: {allowlist}; the operator can add it to "
                f"rest.config.providers.allowlist)", key)


def reverse_transform(raw_config: Mapping[str, str], task_config: Mapping[str, str]) -> dict[str, str]:
    """Connect's ``AbstractHerder.reverseTransform``: task configs are computed from the *resolved*
    connector config, so each task key whose connector value held placeholders gets the placeholder
    text back before the task configs are stored: resolved secrets never reach the config topic."""
    out = dict(task_config)
    for key, raw in raw_config.items():
        if key in out and isinstance(raw, str) and PLACEHOLDER.search(raw):
            out[key] = raw
    return out
