"""Which keys are secrets, and the by-value scrubbing of logs, traces and task configs."""

from __future__ import annotations

import io
import logging

import pytest

from connect_runtime.api.config_provider import (
    EnvVarConfigProvider,
    check_allowed_providers,
    resolve,
    reverse_transform,
)
from connect_runtime.api.errors import ConfigError
from connect_runtime.api.secrets import (
    HIDDEN,
    KAFKA_PASSWORD_KEYS,
    SecretScrubbingFilter,
    is_sensitive_key,
    mask_config,
    remember_secrets,
    scrub,
)
from connect_runtime.runtime.status import trace_of


@pytest.mark.parametrize("key", sorted(KAFKA_PASSWORD_KEYS))
@pytest.mark.parametrize("prefix", ["", "A.", "source.cluster.", "target.producer.", "producer.override.",
                                    "listeners.https."])
def test_kafka_password_keys_are_secret_under_any_prefix(prefix: str, key: str) -> None:
    assert is_sensitive_key(prefix + key)


@pytest.mark.parametrize("key", ["ssl.keystore.location", "ssl.truststore.location", "ssl.keystore.type",
                                 "sasl.oauthbearer.token.endpoint.url", "sasl.kerberos.service.name",
                                 "sasl.oauthbearer.assertion.private.key.file", "topics", "bootstrap.servers",
                                 "sasl.mechanism", "ssl.endpoint.identification.algorithm"])
def test_locators_and_plain_keys_are_not_secret(key: str) -> None:
    assert not is_sensitive_key(key)


def test_mask_config_shows_references_hides_literals() -> None:
    masked = mask_config({"ssl.key.password": "literal", "sasl.jaas.config": "${mm2:A.sasl.jaas.config}",
                          "a.password": "${env:X}-suffix", "topics": "t"})
    assert masked == {"ssl.key.password": HIDDEN, "sasl.jaas.config": "${mm2:A.sasl.jaas.config}",
                      "a.password": HIDDEN, "topics": "t"}


def test_resolved_secrets_are_scrubbed_from_log_lines_and_traces(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("SCRUB_TEST_SECRET", "pr0vider-s3cret-value")
    resolved = resolve({"ssl.truststore.password": "${env:SCRUB_TEST_SECRET}"}, {"env": EnvVarConfigProvider()})
    assert resolved["ssl.truststore.password"] == "pr0vider-s3cret-value"
    remember_secrets({"sasl.jaas.config": 'PlainLoginModule required username="u" password="jaas-pw-123";'})
    assert scrub("pw pr0vider-s3cret-value and jaas-pw-123") == f"pw {HIDDEN} and {HIDDEN}"

    stream = io.StringIO()
    handler = logging.StreamHandler(stream)
    handler.addFilter(SecretScrubbingFilter())
    log = logging.getLogger("tests.secrets.scrub")
    log.addHandler(handler)
    try:
        log.error("connecting with %s", "pr0vider-s3cret-value")
        try:
            raise ValueError("bad password jaas-pw-123")
        except ValueError:
            log.exception("failed")
    finally:
        log.removeHandler(handler)
    text = stream.getvalue()
    assert "pr0vider-s3cret-value" not in text and "jaas-pw-123" not in text
    assert text.count(HIDDEN) == 3 and "ValueError: bad password [hidden]" in text  # message, source, error
    try:
        raise RuntimeError("cannot log in with jaas-pw-123")
    except RuntimeError as exc:
        trace = trace_of(exc)
    assert "jaas-pw-123" not in trace and HIDDEN in trace


def test_reverse_transform_puts_placeholders_back() -> None:
    raw = {"source.cluster.ssl.key.password": "${mm2:A.ssl.key.password}", "topics": "t.*",
           "x": "prefix-${env:Y}"}
    task = {"source.cluster.ssl.key.password": "resolved", "topics": "t.*", "x": "prefix-y",
            "task.assigned.partitions": "t-0"}
    assert reverse_transform(raw, task) == {"source.cluster.ssl.key.password": "${mm2:A.ssl.key.password}",
                                            "topics": "t.*", "x": "prefix-${env:Y}",
                                            "task.assigned.partitions": "t-0"}


def test_provider_allowlist() -> None:
    check_allowed_providers({"a": "${vault:p:k}", "b": "plain", "c": None}, frozenset({"vault"}))
    with pytest.raises(ConfigError, match=r"'file'.*allowed: none"):
        check_allowed_providers({"a": "x ${file:/etc/passwd:root}"}, frozenset())


def test_plain_words_and_numbers_in_a_jaas_config_are_not_scrubbed_everywhere() -> None:
    """A JAAS config's option values are remembered for scrubbing, but ``useKeyTab="true"`` must not
    make every "true" (or "false", or a port number) in later messages read ``[hidden]``."""
    from connect_runtime.api.secrets import remember_secrets, scrub

    remember_secrets({"sasl.jaas.config": 'com.sun.security.auth.module.Krb5LoginModule required '
                                          'useKeyTab="true" storeKey="false" debug="FALSE" port="8443" '
                                          'principal="mm2-scrub-test@EXAMPLE.COM";'})
    assert scrub("must be 'true' or 'false', got 8443") == "must be 'true' or 'false', got 8443"
    assert scrub("login as mm2-scrub-test@EXAMPLE.COM failed") == "login as [hidden] failed"
