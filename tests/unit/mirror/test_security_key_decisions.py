"""Every client ``ssl.*`` / ``sasl.*`` key Kafka declares is mapped to what the clients here enforce, or its
value is refused with one line naming the key and the reason (connect_runtime/clients/security_keys.py,
docs/security-keys.md). Checked at the client (what librdkafka and kafka-python's SSLContext are given)
and at every entry point: the factory, an mm2.properties file (exit 2), a worker file, REST validation.
Real handshakes for the TLS versions: tests/integration/test_tls_versions.py.
"""

from __future__ import annotations

import logging
import ssl
from pathlib import Path
from typing import Any

import pytest

from connect_runtime.api.config import ConfigDef, ConfigKey, Importance, Type
from connect_runtime.api.connector import SourceConnector
from connect_runtime.api.errors import ConfigError
from connect_runtime.clients import security_keys
from connect_runtime.clients.factory import translate
from connect_runtime.clients.group_client import kafka_python_config
from connect_runtime.runtime import worker_config as wc
from connect_runtime.runtime.worker.connector_validation import validate
from mirror.cli.main import main
from mirror.config.client_keys import CLIENT_SECURITY_CONFIG_DEF
from tests.support import tls as tls_support

ROOT = Path(__file__).resolve().parents[3]
TLS13 = "TLS_AES_256_GCM_SHA384,TLS_CHACHA20_POLY1305_SHA256,TLS_AES_128_GCM_SHA256"
PLAIN = 'org.apache.kafka.common.security.plain.PlainLoginModule required username="u" password="p";'
#: SASL over TLS with a PLAIN login: every ssl.* and sasl.* key is read.
BASE = {"bootstrap.servers": "127.0.0.1:9092", "security.protocol": "SASL_SSL", "sasl.mechanism": "PLAIN",
        "sasl.jaas.config": PLAIN}

#: One value per key that asks for what no client here can do (the issue's list and the rest).
REFUSED: dict[str, str] = {
    "ssl.protocol": "TLSv1.2",
    "ssl.enabled.protocols": "TLSv1.2",
    "ssl.cipher.suites": "TLS_ECDHE_RSA_WITH_AES_128_GCM_SHA256",
    "ssl.endpoint.identification.algorithm": "ldaps",
    "ssl.provider": "SunJSSE",
    "ssl.engine.factory.class": "com.acme.PinnedSslEngineFactory",
    "ssl.keymanager.algorithm": "NewSunX509",
    "ssl.trustmanager.algorithm": "SunX509",
    "ssl.secure.random.implementation": "SHA1PRNG",
    "sasl.login.class": "com.acme.VaultLogin",
    "sasl.kerberos.ticket.renew.window.factor": "0.5",
    "sasl.kerberos.ticket.renew.jitter": "0.2",
    "sasl.login.refresh.window.factor": "0.6",
    "sasl.login.refresh.window.jitter": "0.1",
    "sasl.login.refresh.min.period.seconds": "30",
    "sasl.login.refresh.buffer.seconds": "120",
    "sasl.login.retry.backoff.ms": "500",
    "sasl.login.retry.backoff.max.ms": "60000",
    "sasl.login.connect.timeout.ms": "5000",
    "sasl.login.read.timeout.ms": "5000",
    "sasl.oauthbearer.scope.claim.name": "scp",
    "sasl.oauthbearer.jwks.endpoint.url": "https://idp.example/jwks",
    "sasl.oauthbearer.jwks.endpoint.refresh.ms": "60000",
    "sasl.oauthbearer.jwks.endpoint.retry.backoff.ms": "500",
    "sasl.oauthbearer.jwks.endpoint.retry.backoff.max.ms": "60000",
    "sasl.oauthbearer.clock.skew.seconds": "10",
    "sasl.oauthbearer.expected.audience": "kafka",
    "sasl.oauthbearer.expected.issuer": "https://idp.example",
}

#: Java's defaults (Kafka 4.x SslConfigs / SaslConfigs) and values equivalent to them, written out.
JAVA_DEFAULTS: dict[str, str] = {
    "ssl.protocol": "TLSv1.3", "ssl.enabled.protocols": "TLSv1.2,TLSv1.3", "ssl.cipher.suites": "",
    "ssl.endpoint.identification.algorithm": "https", "ssl.keymanager.algorithm": "SunX509",
    "ssl.trustmanager.algorithm": "PKIX", "ssl.provider": "", "ssl.secure.random.implementation": "",
    "ssl.engine.factory.class": "org.apache.kafka.common.security.ssl.DefaultSslEngineFactory",
    "sasl.login.class": "org.apache.kafka.common.security.authenticator.DefaultLogin",
    "sasl.kerberos.ticket.renew.window.factor": "0.8", "sasl.kerberos.ticket.renew.jitter": "0.05",
    "sasl.login.refresh.window.factor": "0.80", "sasl.login.refresh.window.jitter": "0.05",
    "sasl.login.refresh.min.period.seconds": "60", "sasl.login.refresh.buffer.seconds": "300",
    "sasl.login.retry.backoff.ms": "100", "sasl.login.retry.backoff.max.ms": "10000",
    "sasl.oauthbearer.scope.claim.name": "scope", "sasl.oauthbearer.jwks.endpoint.refresh.ms": "3600000",
    "sasl.oauthbearer.jwks.endpoint.retry.backoff.ms": "100",
    "sasl.oauthbearer.jwks.endpoint.retry.backoff.max.ms": "10000", "sasl.oauthbearer.clock.skew.seconds": "30",
}


def test_every_declared_security_key_has_a_decision_and_a_line_in_the_docs() -> None:
    declared = set(CLIENT_SECURITY_CONFIG_DEF.names()) - {"security.protocol"}
    assert declared == set(security_keys.DECISIONS)
    docs = (ROOT / "docs" / "security-keys.md").read_text()
    missing = [key for key in declared if f"`{key}`" not in docs]
    assert not missing, f"docs/security-keys.md does not list {missing}"
    # every decision that refuses something is exercised below
    assert set(REFUSED) == {k for k, d in security_keys.DECISIONS.items() if d.refuses}


def test_java_defaults_written_out_give_librdkafka_the_same_config(caplog: pytest.LogCaptureFixture) -> None:
    """Java's defaults are accepted as they are, change nothing librdkafka gets, and no declared key is
    dropped with an INFO line (before: 25 were, ``Ignoring client property``)."""
    caplog.set_level(logging.INFO, logger="connect_runtime.clients.factory")
    plain = translate(BASE, "producer")
    written_out = translate({**BASE, **JAVA_DEFAULTS}, "producer")
    assert written_out.pop("ssl.endpoint.identification.algorithm") == "https"  # librdkafka's default too
    assert written_out == plain
    dropped = [r.getMessage() for r in caplog.records if "Ignoring client property" in r.getMessage()]
    assert not dropped


@pytest.mark.parametrize(("key", "value"), sorted(REFUSED.items()))
def test_a_value_no_client_can_enforce_is_refused_at_client_build(key: str, value: str) -> None:
    with pytest.raises(ConfigError) as error:
        translate({**BASE, key: value}, "consumer")
    assert error.value.key == key
    message = str(error.value)
    assert message.startswith(f"Invalid value {value} for configuration {key}: ") and "\n" not in message


@pytest.mark.parametrize(("key", "value"), sorted(REFUSED.items()))
def test_mm2_file_with_a_refused_value_exits_2_naming_file_line_and_key(
        tmp_path: Path, capsys: pytest.CaptureFixture[str], key: str, value: str) -> None:
    path = tmp_path / "mm2.properties"
    path.write_text("clusters = A, B\nA.bootstrap.servers = a:9092\nB.bootstrap.servers = b:9092\n"
                    f"A->B.enabled = true\nB.producer.{key} = {value}\n")
    assert main(["config", "show", str(path)]) == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and err[0].startswith(f"error: {path}:5: ") and f"B.producer.{key}" in err[0], err


@pytest.mark.parametrize("line", ["A->B.producer.override.ssl.enabled.protocols = TLSv1.2",
                                  "A.ssl.protocol = TLSv1.2", "sasl.login.class = com.acme.VaultLogin"])
def test_mm2_file_keys_are_checked_wherever_they_are_set(tmp_path: Path, capsys: pytest.CaptureFixture[str],
                                                         line: str) -> None:
    """Per cluster, top level (every cluster) and as a per-flow override: one line naming the key as written."""
    path = tmp_path / "mm2.properties"
    path.write_text("clusters = A, B\nA.bootstrap.servers = a:9092\nB.bootstrap.servers = b:9092\n"
                    f"A->B.enabled = true\n{line}\n")
    assert main(["config", "show", str(path)]) == 2
    err = capsys.readouterr().err.strip().splitlines()
    key = line.split(" = ")[0]
    assert len(err) == 1 and err[0].startswith(f"error: {path}:5: Invalid value ") and f" {key}: " in err[0], err


def test_worker_file_keys_are_checked_with_their_prefix() -> None:
    props = {"bootstrap.servers": "b:9092", "group.id": "g", "config.storage.topic": "c",
             "offset.storage.topic": "o", "status.storage.topic": "s"}
    wc.DistributedWorkerConfig({**props, "ssl.enabled.protocols": "TLSv1.3"})  # enforced: accepted
    with pytest.raises(ConfigError, match=r"configuration producer\.ssl\.provider: a Java security provider") as e:
        wc.DistributedWorkerConfig({**props, "producer.ssl.provider": "SunJSSE"})
    assert e.value.key == "producer.ssl.provider"


class _Source(SourceConnector):
    @classmethod
    def config_def(cls) -> ConfigDef:
        return ConfigDef([ConfigKey("topic", Type.STRING, "t", Importance.LOW, "")])

    def start(self, props: dict[str, str]) -> None:
        pass

    def task_class(self) -> Any:
        return None

    def task_configs(self, max_tasks: int) -> list[dict[str, str]]:
        return []

    def stop(self) -> None:
        pass

    def version(self) -> str:
        return "1"


def test_rest_validation_refuses_an_override_value_naming_the_key() -> None:
    """A REST caller's ``*.override.*`` key with a refused value is an error on that key (400 on create)."""
    config = {"name": "c", "connector.class": "x", "producer.override.ssl.enabled.protocols": "TLSv1.2",
              "consumer.override.sasl.login.class": "com.acme.VaultLogin",
              "admin.override.ssl.enabled.protocols": "TLSv1.3"}
    infos = validate(_Source(), config)
    errors = {c["value"]["name"]: c["value"]["errors"] for c in infos.configs if c["value"]["errors"]}
    assert set(errors) == {"producer.override.ssl.enabled.protocols", "consumer.override.sasl.login.class"}
    assert "cannot keep a client off TLSv1.3" in errors["producer.override.ssl.enabled.protocols"][0]


def test_tls13_only_reaches_librdkafka_and_the_membership_clients_context() -> None:
    config = translate({**BASE, "ssl.enabled.protocols": "TLSv1.3", "ssl.truststore.type": "PEM",
                        "ssl.truststore.certificates": _ca_pem()}, "admin")
    assert config["ssl.cipher.suites"] == "PSK"
    context = kafka_python_config(config)["ssl_context"]
    assert context.minimum_version is ssl.TLSVersion.TLSv1_3


def test_cipher_suites_are_given_by_their_openssl_names_to_both_clients() -> None:
    suites = f"{TLS13},TLS_ECDHE_RSA_WITH_AES_256_GCM_SHA384,TLS_ECDHE_ECDSA_WITH_CHACHA20_POLY1305_SHA256"
    config = translate({**BASE, "ssl.cipher.suites": suites}, "producer")
    assert config["ssl.cipher.suites"] == "ECDHE-RSA-AES256-GCM-SHA384:ECDHE-ECDSA-CHACHA20-POLY1305"
    context = kafka_python_config(config)["ssl_context"]
    tls12 = {c["name"] for c in context.get_ciphers() if c["protocol"] == "TLSv1.2"}
    assert tls12 == {"ECDHE-RSA-AES256-GCM-SHA384", "ECDHE-ECDSA-CHACHA20-POLY1305"}
    # only TLSv1.3 suites listed: Java could not use TLSv1.2, so neither may librdkafka
    assert translate({**BASE, "ssl.cipher.suites": TLS13}, "producer")["ssl.cipher.suites"] == "PSK"


def test_old_protocols_in_the_list_are_accepted_and_not_enabled() -> None:
    """Kafka 2.x's default list (TLSv1.2,TLSv1.1,TLSv1) works as in a current JDK: TLSv1.2 and up."""
    assert "ssl.cipher.suites" not in translate({**BASE, "ssl.enabled.protocols": "TLSv1.2,TLSv1.3,TLSv1.1"},
                                                "producer")
    with pytest.raises(ConfigError, match=r"TLSv1\.1 and older are disabled"):
        translate({**BASE, "ssl.enabled.protocols": "TLSv1.1,TLSv1"}, "producer")
    with pytest.raises(ConfigError, match=r"cannot keep a client off TLSv1\.3"):
        translate({**BASE, "ssl.enabled.protocols": "TLSv1.2,TLSv1.1"}, "producer")


def _ca_pem() -> str:
    key = tls_support._key()
    return tls_support._pem(tls_support._cert("ca", key, "ca", key, ca=True)).decode()
