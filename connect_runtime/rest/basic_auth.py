"""HTTP basic authentication read the way Kafka's ``BasicAuthSecurityRestExtension`` reads it.

An operator moving from Java Connect keeps the files they have::

    rest.extension.classes = org.apache.kafka.connect.rest.basic.auth.extension.BasicAuthSecurityRestExtension
    # JVM: -Djava.security.auth.login.config=/etc/kafka/connect-jaas.conf  (or our key below)

    # connect-jaas.conf
    KafkaConnect {
      org.apache.kafka.connect.rest.basic.auth.extension.PropertyFileLoginModule required
      file="/etc/kafka/connect-users.properties";
    };

    # connect-users.properties: one "user: password" per line (Java properties syntax)
    admin: s3cret

The JAAS file is found, in order, at ``rest.basic.auth.jaas.config`` (our key), the key
``java.security.auth.login.config`` in the properties file, or ``-Djava.security.auth.login.config=``
in ``KAFKA_OPTS`` (where Kafka's start scripts put it). As in Kafka, the login context is
``KafkaConnect`` and a module without ``file=`` accepts nobody. The credentials file is re-read when it
changes (Kafka caches it for the life of the process; a rotated password should not need a restart).
Passwords are compared in constant time and never logged.
"""

from __future__ import annotations

import base64
import binascii
import hmac
import os
import re
import shlex
import threading
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path

from connect_runtime.api.errors import ConfigError

BASIC_AUTH_EXTENSION = "org.apache.kafka.connect.rest.basic.auth.extension.BasicAuthSecurityRestExtension"
PROPERTY_FILE_LOGIN_MODULE = "org.apache.kafka.connect.rest.basic.auth.extension.PropertyFileLoginModule"
LOGIN_CONTEXT = "KafkaConnect"
JAAS_CONFIG_KEY = "rest.basic.auth.jaas.config"
JAVA_JAAS_PROPERTY = "java.security.auth.login.config"

_SECTION = re.compile(r"(?P<name>[A-Za-z0-9_.\-]+)\s*\{(?P<body>.*?)\}\s*;", re.S)
_COMMENT = re.compile(r"//[^\n]*|/\*.*?\*/|^\s*#[^\n]*", re.S | re.M)


def jaas_file_location(props: Mapping[str, str], environ: Mapping[str, str] | None = None) -> str | None:
    """Where the JAAS file is, from our key, the Java property name, or ``KAFKA_OPTS``; None if nowhere."""
    for key in (JAAS_CONFIG_KEY, JAVA_JAAS_PROPERTY):
        value = str(props.get(key) or "").strip()
        if value:
            return value
    env = os.environ if environ is None else environ
    for arg in shlex.split(env.get("KAFKA_OPTS", "")):
        if arg.startswith(f"-D{JAVA_JAAS_PROPERTY}="):
            return arg.split("=", 1)[1]
    return None


def credentials_file_from_jaas(jaas_text: str, where: str) -> str:
    """The ``file=`` option of the ``KafkaConnect`` section's PropertyFileLoginModule."""
    text = _COMMENT.sub("", jaas_text)
    for section in _SECTION.finditer(text):
        if section.group("name") != LOGIN_CONTEXT:
            continue
        try:
            tokens = shlex.split(section.group("body").replace(";", " ; "), posix=True)
        except ValueError as exc:
            raise ConfigError(f"{where}: cannot parse the {LOGIN_CONTEXT} section: {exc}") from exc
        if not tokens or tokens[0] != PROPERTY_FILE_LOGIN_MODULE:
            raise ConfigError(f"{where}: the {LOGIN_CONTEXT} section must use {PROPERTY_FILE_LOGIN_MODULE}, "
                              f"got {tokens[0] if tokens else 'nothing'}")
        options = dict(t.split("=", 1) for t in tokens[2:] if "=" in t)
        if not options.get("file"):
            raise ConfigError(f"{where}: {PROPERTY_FILE_LOGIN_MODULE} needs a file=\"/path/users.properties\" "
                              f"option (without it Kafka accepts nobody)")
        return options["file"]
    raise ConfigError(f"{where}: no '{LOGIN_CONTEXT} {{ ... }};' section (the login context Kafka's "
                      f"BasicAuthSecurityRestExtension uses)")


@dataclass(frozen=True)
class _Loaded:
    mtime_ns: int
    users: dict[str, str]


class BasicAuthenticator:
    """Checks ``Authorization: Basic ...`` headers against a users.properties file."""

    def __init__(self, credentials_file: str) -> None:
        self.credentials_file = credentials_file
        self._lock = threading.Lock()
        self._loaded: _Loaded | None = None
        self._users()  # a missing or unreadable file fails the start, not the first request

    @classmethod
    def from_jaas(cls, jaas_file: str) -> BasicAuthenticator:
        try:
            text = Path(jaas_file).read_text(encoding="utf-8")
        except OSError as exc:
            raise ConfigError(f"cannot read the JAAS file {jaas_file}: {exc.strerror or exc}",
                              JAAS_CONFIG_KEY) from exc
        return cls(credentials_file_from_jaas(text, jaas_file))

    def _users(self) -> dict[str, str]:
        import javaproperties  # the runtime's properties reader (same syntax as Java's)

        path = Path(self.credentials_file)
        try:
            mtime = path.stat().st_mtime_ns
            with self._lock:
                if self._loaded is not None and self._loaded.mtime_ns == mtime:
                    return self._loaded.users
            with path.open(encoding="utf-8") as fh:
                users: dict[str, str] = javaproperties.load(fh)
        except OSError as exc:
            raise ConfigError(f"cannot read the REST credentials file {self.credentials_file}: "
                              f"{exc.strerror or exc}", JAAS_CONFIG_KEY) from exc
        with self._lock:
            self._loaded = _Loaded(mtime, users)
        return users

    def authenticate(self, authorization: str | None) -> str | None:
        """The user name if the header carries valid credentials, else None."""
        if not authorization:
            return None
        scheme, _, encoded = authorization.partition(" ")
        if scheme.lower() != "basic":
            return None
        try:
            decoded = base64.b64decode(encoded.strip(), validate=True).decode("utf-8")
        except (binascii.Error, UnicodeDecodeError):
            return None
        user, sep, password = decoded.partition(":")
        if not sep:
            return None
        try:
            expected = self._users().get(user)
        except ConfigError:
            return None  # the file vanished: refuse everyone rather than fail open
        if expected is None:
            hmac.compare_digest(password.encode(), password.encode())  # same work for unknown users
            return None
        return user if hmac.compare_digest(password.encode(), expected.encode()) else None
