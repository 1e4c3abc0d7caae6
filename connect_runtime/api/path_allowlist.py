"""Which files a connector config submitted through REST may name: what the operator allowed, nothing else.

Client keys name files on the worker's disk: key and trust stores (``ssl.keystore.location``,
``ssl.truststore.location``), librdkafka's PEM files, CRLs and key tabs, a key tab inside
``sasl.jaas.config`` (``keyTab="..."``), ``file:`` URLs, and under any prefix (MM2's
``source.cluster.ssl.truststore.location``, ``producer.override.ssl.ca.location``...). Accepted from a REST
caller, any of them makes the worker read a file the caller chose (``/etc/shadow`` as a key store) and
report what it found in an error. So a REST-submitted value that names a file is refused, one line
naming the key, unless

* the path, resolved canonically (:func:`os.path.realpath`: ``..`` and symbolic links followed), is a
  directory listed in ``rest.allowed.paths`` or under one (empty by default: none); or
* the operator's own file (worker.properties, mm2.properties) gives that exact path, under any key and
  prefix: the configs the MM2 driver writes from mm2.properties, and a caller repeating them, pass.

Keys that name *code* on disk (``plugin.library.paths``, ``ssl.engine.location``: shared libraries;
``sasl.kerberos.kinit.cmd``: a command line) take only the operator's exact values, never a path under
``rest.allowed.paths``. A value with a ``${provider:...}`` placeholder is accepted only as the operator
wrote it (what it resolves to is not known here). Configs that do not come through REST (the operator's
files, the MM2 driver's own connector configs) are not checked: the REST handlers call :func:`check`, as
they call the config-provider allowlist check, with the :class:`PathPolicy` built from the operator's file
at start (:func:`operator_policy`), as :mod:`connect_runtime.api.plugin_allowlist` builds its code policy.
"""

from __future__ import annotations

import os
import re
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from urllib.parse import unquote

from connect_runtime.api.config_provider import PLACEHOLDER
from connect_runtime.api.errors import ConfigError

REST_ALLOWED_PATHS = "rest.allowed.paths"
REST_ALLOWED_PATHS_DOC = (
    "Directories under which connector configs submitted through REST may name files in client keys "
    "(ssl.keystore.location, ssl.truststore.location, librdkafka's ssl.*.location, sasl.kerberos.keytab, "
    "keyTab in sasl.jaas.config, file: URLs..., under any prefix such as source.cluster.). A path is resolved "
    "canonically (.. and symbolic links) before the check. Empty by default: a REST caller may name no file "
    "except the exact paths this file itself gives. Shared libraries and commands (plugin.library.paths, "
    "ssl.engine.location, sasl.kerberos.kinit.cmd) are never taken from here. List only directories that "
    "REST callers cannot write to.")

#: Client keys (after any prefix) whose value is a path to a file (or a directory) the client reads: Java's
#: declared keys (mirror/config/client_keys.py) and librdkafka's (connect_runtime/clients/librdkafka_properties.py).
DATA_FILE_KEYS = frozenset({
    "ssl.keystore.location", "ssl.truststore.location",
    "ssl.ca.location", "ssl.certificate.location", "ssl.key.location", "ssl.crl.location", "https.ca.location",
    "sasl.kerberos.keytab", "sasl.oauthbearer.assertion.file", "sasl.oauthbearer.assertion.jwt.template.file",
    "sasl.oauthbearer.assertion.private.key.file", "offset.store.path",
})
#: Client keys whose value is code on disk: a shared library librdkafka loads, or the kinit command it runs.
CODE_FILE_KEYS = frozenset({"plugin.library.paths", "ssl.engine.location", "sasl.kerberos.kinit.cmd"})
JAAS_KEY = "sasl.jaas.config"
#: Values that name no file: librdkafka's CA probe, and Java's default kinit command.
_NOT_A_PATH = {"ssl.ca.location": "probe", "sasl.kerberos.kinit.cmd": "/usr/bin/kinit"}
#: JAAS options naming a file: Krb5LoginModule's keyTab and ticketCache, and any *File/*Path/*Location option.
_JAAS_FILE_OPTION = re.compile(r"(?i)^(keytab|ticketcache|\w*(file|path|location))$")
_JAAS_OPTION = re.compile(r'([A-Za-z_][\w.\-]*)\s*=\s*("(?:[^"\\]|\\.)*"|[^\s;"]+)')
_FILE_URL = re.compile(r"(?i)^\s*file:")
_URL_KEY = re.compile(r"(^|\.)[\w-]*(url|uri|urls|uris)$")


def _suffix_in(key: str, names: Iterable[str]) -> str | None:
    return next((n for n in names if key == n or key.endswith("." + n)), None)


def named_paths(key: str, value: str | None) -> list[tuple[str, str, bool]]:
    """The files ``key = value`` names: (what, path, is code) triples; ``what`` is the key, or the key and
    its JAAS option. Empty for a key that names no file."""
    if not value or not value.strip():
        return []
    if (name := _suffix_in(key, DATA_FILE_KEYS | CODE_FILE_KEYS)) is not None:
        if _NOT_A_PATH.get(name) == value:
            return []
        parts = re.split(r"[;,]", value) if name == "plugin.library.paths" else [value]
        return [(key, p if len(parts) == 1 else p.strip(), name in CODE_FILE_KEYS) for p in parts if p.strip()]
    if _suffix_in(key, (JAAS_KEY,)) is not None:
        out = []
        for option, raw in _JAAS_OPTION.findall(value):
            if _JAAS_FILE_OPTION.match(option):
                path = re.sub(r"\\(.)", r"\1", raw[1:-1]) if raw.startswith('"') else raw
                out.append((f"{key} (option {option})", path, False))
        return out
    if _URL_KEY.search(key) and _FILE_URL.match(value):
        path = unquote(re.sub(r"(?i)^\s*file:(//)?", "", value.strip()))  # as the URL's reader decodes it
        return [(key, path or value.strip(), False)]
    return []


def _canonical(path: str) -> str:
    """``path`` with ``..`` and symbolic links resolved; empty when it cannot be (a NUL byte, a link loop)."""
    try:
        return os.path.realpath(path, strict=False)
    except (ValueError, OSError):
        return ""


def _under(path: str, directory: str) -> bool:
    try:
        return os.path.commonpath([path, directory]) == directory
    except ValueError:  # a relative and an absolute path, or different drives
        return False


@dataclass(frozen=True)
class PathPolicy:
    """``directories``: canonical directories REST-submitted paths may be under; ``operator_paths``: the
    exact paths (and placeholder values) the operator's own file gives, accepted as they are."""

    directories: tuple[str, ...] = ()
    operator_paths: frozenset[str] = frozenset()

    def refusal(self, key: str, value: str | None) -> str | None:
        """Why ``key = value`` from a REST caller is refused, on one line; None when it is accepted."""
        for what, path, is_code in named_paths(key, value):
            if path in self.operator_paths:
                continue
            if PLACEHOLDER.search(path):
                return (f"Invalid value for configuration {what}: a file named through a config provider "
                        "placeholder is accepted from REST only as the worker or mm2.properties file gives it")
            if is_code:
                return (f"Invalid value {path!r} for configuration {what}: it names code on the worker's disk "
                        "(a shared library or a command), which a config submitted through REST may not do "
                        "unless the worker or mm2.properties file gives this exact value")
            # Readers differ on surrounding blanks (the store loader strips them, librdkafka does not): both
            # readings must resolve under an allowed directory.
            for candidate in dict.fromkeys((path, path.strip())):
                real = _canonical(candidate)
                if not real or not any(_under(real, d) for d in self.directories):
                    allowed = ", ".join(self.directories) or "none"
                    return (f"Invalid value {path!r} for configuration {what}: a config submitted through REST "
                            f"may name only files under {REST_ALLOWED_PATHS} (allowed: {allowed}; the path "
                            f"resolves to {real or 'nothing'}) or the exact paths the worker or mm2.properties "
                            "file gives")
        return None

    def describe(self) -> str:
        """One line for the start-up log."""
        dirs = ", ".join(self.directories) or "no directory"
        return (f"REST-submitted configs may name files under {dirs} and the {len(self.operator_paths)} "
                "path(s) the operator's file gives")


def check(config: Mapping[str, str | None], policy: PathPolicy) -> None:
    """ConfigError naming the first key (in key order) of a REST-submitted ``config`` whose value names a
    file ``policy`` does not allow."""
    for key in sorted(config):
        why = policy.refusal(key, config[key])
        if why is not None:
            raise ConfigError(why, key)


def operator_policy(props: Mapping[str, str], allowed: Iterable[str]) -> PathPolicy:
    """The policy of a server whose operator file is ``props`` and whose ``rest.allowed.paths`` is
    ``allowed``: each directory resolved canonically once, at start."""
    directories = tuple(dict.fromkeys(os.path.realpath(d.strip()) for d in allowed if d.strip()))
    paths = {path for key, value in props.items() for _what, path, _code in named_paths(key, str(value))}
    return PathPolicy(directories, frozenset(paths))
