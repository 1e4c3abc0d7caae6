"""Which configuration values are secrets, and keeping them out of everything the process emits.

One place decides what a secret is (:func:`is_sensitive_key`): Kafka's PASSWORD-typed keys
(``ssl.key.password``, ``ssl.keystore.password``, ``ssl.truststore.password``, ``ssl.keystore.key``,
``ssl.keystore.certificate.chain``, ``ssl.truststore.certificates``, ``sasl.jaas.config``,
``sasl.oauthbearer.client.credentials.client.secret``, ``basic.auth.user.info``...) and any key whose
name says it holds a password, secret, credential, token or private key, under any prefix
(``A.``, ``source.cluster.``, ``producer.override.``...). Keys that only *locate* a secret (a
``.location``, ``.file``, ``.url``) are not secrets themselves.

Names are the first defence (:func:`redact`, :func:`mask_config`). The second is by value: every
secret value the process resolves is remembered (:func:`remember_secrets`, called by the config
provider resolution), and :func:`scrub` replaces it wherever it would otherwise leak in free text:
log lines (:class:`SecretScrubbingFilter`), failure traces and REST error messages.
"""

from __future__ import annotations

import logging
import re
import threading
from collections.abc import Callable, Mapping, Sequence
from typing import Any

HIDDEN = "[hidden]"
#: The operator's extra secret key patterns (declared with the REST security keys, applied here).
SECRETS_KEYS = "secrets.keys"

#: Exact names of Kafka's PASSWORD-typed client keys (the name rule below covers them too; listed so
#: the intent is explicit and a test can hold each one).
KAFKA_PASSWORD_KEYS = frozenset({
    "ssl.key.password", "ssl.keystore.password", "ssl.truststore.password", "ssl.keystore.key",
    "ssl.keystore.certificate.chain", "ssl.truststore.certificates", "sasl.jaas.config",
    "sasl.oauthbearer.client.credentials.client.secret", "sasl.oauthbearer.assertion.private.key.passphrase",
    "basic.auth.user.info", "trust.store.password", "key.store.password",
})
_SECRET_NAME = re.compile(r"(password|passphrase|passwd|pwd|secret|jaas|credential|token|api\.key|private\.key|"
                          r"keystore\.key|certificate\.chain|truststore\.certificates|user\.info)", re.I)
#: Keys that name where a secret is, not the secret.
_LOCATOR = re.compile(r"\.(location|file|url|path|type|algorithm|class|ms|seconds|enable|enabled)$", re.I)
_PLACEHOLDER_ONLY = re.compile(r"^(\$\{[^}]*\})+$")
#: Shorter values are not scrubbed from free text: "abc" would blank out half of every log line.
MIN_SCRUB_LENGTH = 4


#: The operator's ``secrets.keys`` patterns (process-wide, set once from the worker or mm2 file).
_operator_patterns: tuple[re.Pattern[str], ...] = ()


def configure_secret_keys(patterns: Sequence[str]) -> None:
    """Add the operator's ``secrets.keys`` regular expressions (searched in key names, any case) to the
    built-in rule; ValueError naming the pattern that does not compile. Replaces earlier ones."""
    global _operator_patterns
    compiled = []
    for pattern in patterns:
        if not pattern.strip():
            continue
        try:
            compiled.append(re.compile(pattern.strip(), re.I))
        except re.error as exc:
            raise ValueError(f"secrets.keys: {pattern!r} is not a regular expression ({exc})") from None
    _operator_patterns = tuple(compiled)


def apply_secret_keys(props: Mapping[str, Any]) -> None:
    """:func:`configure_secret_keys` from a worker or mm2 file's ``secrets.keys`` (comma-separated);
    ValueError naming the bad pattern. Call it before the file's secrets are remembered."""
    raw = props.get(SECRETS_KEYS)
    configure_secret_keys(str(raw).split(",") if raw else ())


def is_sensitive_key(name: str) -> bool:
    """Whether a config key holds a secret that must never be printed, logged, returned or stored."""
    if any(name == k or name.endswith("." + k) for k in KAFKA_PASSWORD_KEYS):
        return True
    if any(p.search(name) for p in _operator_patterns):
        return True  # the operator's word wins over the locator rule
    return bool(_SECRET_NAME.search(name)) and not _LOCATOR.search(name)


def redact(config: Mapping[str, Any]) -> dict[str, Any]:
    """A copy of ``config`` with every sensitive value replaced by ``[hidden]``."""
    return {k: (HIDDEN if is_sensitive_key(k) and v is not None else v) for k, v in config.items()}


def is_reference(value: str) -> bool:
    """A value made only of ``${provider:...}`` placeholders (it names a secret, it is not one)."""
    return bool(_PLACEHOLDER_ONLY.match(value.strip()))


def mask_config(config: Mapping[str, Any]) -> dict[str, Any]:
    """For display of a stored connector config: secrets hidden, but references to them shown."""
    return {k: (HIDDEN if is_sensitive_key(k) and v is not None and not is_reference(str(v)) else v)
            for k, v in config.items()}


class _Known:
    """The secret values seen so far (process-wide), longest first for scrubbing."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._values: set[str] = set()
        self._pattern: re.Pattern[str] | None = None

    def add(self, values: set[str]) -> None:
        new = {v for v in values if _scrubbable(v)} - self._values
        if not new:
            return
        with self._lock:
            self._values |= new
            ordered = sorted(self._values, key=len, reverse=True)
            self._pattern = re.compile("|".join(re.escape(v) for v in ordered))

    def scrub(self, text: str) -> str:
        pattern = self._pattern
        return text if pattern is None else pattern.sub(HIDDEN, text)


#: Values that are never secrets however they are keyed (JAAS options such as ``useKeyTab="true"``):
#: scrubbing them would garble every log line and error message that says "true" or "false".
_PLAIN_WORDS = frozenset({"true", "false", "none", "null", "required", "requisite", "sufficient", "optional"})


def _scrubbable(value: str) -> bool:
    return (len(value) >= MIN_SCRUB_LENGTH and value != HIDDEN and value.lower() not in _PLAIN_WORDS
            and not value.isdigit())


_KNOWN = _Known()


def remember_secrets(config: Mapping[str, Any]) -> None:
    """Remember the values of ``config``'s sensitive keys so :func:`scrub` hides them in free text.

    A ``sasl.jaas.config`` is remembered whole and by its quoted option values (the password inside
    can surface alone in an error message).
    """
    values: set[str] = set()
    for key, value in config.items():
        if value is None or not is_sensitive_key(key):
            continue
        text = value.value() if hasattr(value, "value") and callable(value.value) else str(value)
        if not text or is_reference(text):
            continue
        values.add(text)
        values.update(m.group(1) for m in re.finditer(r'=\s*"([^"]*)"', text))
    _KNOWN.add(values)


def scrub(text: str) -> str:
    """``text`` with every remembered secret value replaced by ``[hidden]``."""
    return _KNOWN.scrub(text)


class SecretScrubbingFilter(logging.Filter):
    """A handler filter that renders a record's message and traceback with secrets scrubbed.

    It runs before the formatter: the message is formatted once here (args dropped) and the exception
    text is pre-rendered, so whatever the handler's format, it only sees scrubbed text.
    """

    _formatter = logging.Formatter()

    def filter(self, record: logging.LogRecord) -> bool:
        try:
            message = record.getMessage()
        except Exception:  # a broken format string: leave it to the handler to report
            return True
        record.msg, record.args = scrub(message), None
        if record.exc_info and not record.exc_text:
            record.exc_text = self._formatter.formatException(record.exc_info)
        if record.exc_text:
            record.exc_text = scrub(record.exc_text)
        return True


_record_factory_installed = threading.Lock()
_installed_factory: Callable[..., logging.LogRecord] | None = None


def scrub_every_log_record() -> None:
    """Scrub secrets from every log record as it is created, whatever handler later emits it.

    A handler filter only covers the handlers present when it is put on; a record factory also covers
    handlers added after start-up (a library's, an embedding application's, a test's ``caplog``).
    Idempotent: the factory is wrapped once.
    """
    global _installed_factory
    with _record_factory_installed:
        current = logging.getLogRecordFactory()
        if current is _installed_factory:
            return
        scrubber = SecretScrubbingFilter()

        def factory(*args: Any, **kwargs: Any) -> logging.LogRecord:
            record = current(*args, **kwargs)
            scrubber.filter(record)
            if record.stack_info:
                record.stack_info = scrub(record.stack_info)
            return record

        logging.setLogRecordFactory(factory)
        _installed_factory = factory
