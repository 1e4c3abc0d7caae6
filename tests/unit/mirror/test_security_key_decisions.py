"""Every client ``ssl.*`` / ``sasl.*`` key Kafka declares is mapped to what the clients here enforce, or its
value is refused with one line naming the key and the reason (connect_runtime/clients/security_keys.py,
docs/security-keys.md). Checked at the client (what librdkafka and kafka-python's SSLContext are given)
and at every entry point: the factory, an mm2.properties file (exit 2), a worker file, REST validation.
Real handshakes for the TLS versions: tests/integration/test_tls_versions.py.
"""

from __future__ import annotations

import base64
import json
import logging
import socket
import ssl
import threading
import time
from pathlib import Path
from typing import Any

import pytest

from connect_runtime.api.config import ConfigDef, ConfigKey, Importance, Type
from connect_runtime.api.connector import SourceConnector
from connect_runtime.api.errors import ConfigError
from connect_runtime.clients import security_keys
from connect_runtime.clients.factory import translate
from connect_runtime.clients.group_client import group_client_config
from connect_runtime.clients.sasl_properties import kafka_python_sasl, sasl_login
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
    java = {**BASE, "ssl.enabled.protocols": "TLSv1.3", "ssl.truststore.type": "PEM",
            "ssl.truststore.certificates": _ca_pem()}
    config = translate(java, "admin")
    assert config["ssl.cipher.suites"] == "PSK"
    context = group_client_config(java)["ssl_context"]
    assert context.minimum_version is ssl.TLSVersion.TLSv1_3


def test_cipher_suites_are_given_by_their_openssl_names_to_both_clients() -> None:
    suites = f"{TLS13},TLS_ECDHE_RSA_WITH_AES_256_GCM_SHA384,TLS_ECDHE_ECDSA_WITH_CHACHA20_POLY1305_SHA256"
    config = translate({**BASE, "ssl.cipher.suites": suites}, "producer")
    assert config["ssl.cipher.suites"] == "ECDHE-RSA-AES256-GCM-SHA384:ECDHE-ECDSA-CHACHA20-POLY1305"
    context = group_client_config({**BASE, "ssl.cipher.suites": suites})["ssl_context"]
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


# --- the group membership client: every key applied by both renderings, or refused for both ----------

KRB5 = "com.sun.security.auth.module.Krb5LoginModule"
OAUTH = "org.apache.kafka.common.security.oauthbearer.OAuthBearerLoginModule"
TOKENS: list[str] = []


def token_for_test(config: str) -> tuple[str, float]:
    """A Python token callback named in sasl.login.callback.handler.class by the table test."""
    TOKENS.append(config)
    return f"token-{len(TOKENS)}", time.time() + 3600


def _summary(out: dict[str, Any]) -> dict[str, Any]:
    """A group client config with its SSLContext described by what it enforces (contexts do not compare)."""
    summary = dict(out)
    context = summary.pop("ssl_context", None)
    if context is not None:
        summary["ssl_context"] = (context.minimum_version, context.maximum_version, context.check_hostname,
                                  context.verify_mode, sorted(c["name"] for c in context.get_ciphers()),
                                  sorted(str(c["subject"]) for c in context.get_ca_certs()))
    return summary


def _peer_seen_by_server(context: ssl.SSLContext, pki: tls_support.Pki) -> str | None:
    """Handshake ``context`` with a local TLS server that has the test PKI's server certificate and asks
    for a client certificate: the client certificate's common name the server saw (None: none was sent).
    ssl.SSLError when ``context`` does not trust the server or speaks no version it does."""
    server = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
    server.load_cert_chain(pki.server_chain_pem, pki.server_key_pem)
    server.load_verify_locations(cafile=pki.ca_pem)
    server.verify_mode = ssl.CERT_OPTIONAL
    left, right = socket.socketpair()
    seen: list[Any] = []

    def serve() -> None:
        try:
            with server.wrap_socket(left, server_side=True) as tls:
                seen.append(tls.getpeercert())
        except (ssl.SSLError, OSError) as exc:
            seen.append(exc)

    thread = threading.Thread(target=serve)
    thread.start()
    try:
        with context.wrap_socket(right, server_hostname="localhost"):
            pass
    finally:
        right.close()
        thread.join(10)
    peer = seen[0] if seen else None
    if not isinstance(peer, dict) or not peer:
        return None
    return next(value for rdn in peer["subject"] for name, value in rdn if name == "commonName")


def _both(java: dict[str, str]) -> tuple[dict[str, Any], dict[str, Any]]:
    return translate(java, "admin"), group_client_config(java)


def _both_refuse(java: dict[str, str], key: str) -> None:
    for render in (lambda: translate(java, "admin"), lambda: group_client_config(java)):
        with pytest.raises(ConfigError) as error:
            render()
        assert error.value.key == key and "\n" not in str(error.value)


@pytest.mark.parametrize("key", sorted(REFUSED))
def test_a_key_only_its_java_default_is_accepted_for_asks_nothing_of_either_client(key: str) -> None:
    """Refused for both renderings alike; Java's default changes neither (the group client's context
    included), so there is nothing one applies and the other leaves out."""
    _both_refuse({**BASE, key: REFUSED[key]}, key)
    plain_librdkafka, plain_group = _both(BASE)
    written_librdkafka, written_group = _both({**BASE, key: JAVA_DEFAULTS.get(key, "")})  # "": unset
    written_librdkafka.pop("ssl.endpoint.identification.algorithm", None)  # passed by name, librdkafka's default
    assert written_librdkafka == plain_librdkafka
    assert _summary(written_group) == _summary(plain_group)
    assert security_keys.DECISIONS[key].group


def test_tls_settings_reach_librdkafka_and_the_group_clients_context(pki: tls_support.Pki) -> None:
    """The stores, versions, suites and host name check: librdkafka's keys and the group client's context,
    the latter shown by handshakes with a local TLS server that asks for a client certificate."""
    tls = {**BASE, **pki.java_truststore("JKS"), **pki.java_keystore("JKS")}
    librdkafka, group = _both(tls)
    assert librdkafka["ssl.ca.pem"] == _pem_of(pki.ca_pem) and "BEGIN PRIVATE KEY" in librdkafka["ssl.key.pem"]
    assert _peer_seen_by_server(group["ssl_context"], pki) == "mm2-client"  # trusted the server, presented its key
    inline = {**BASE, "ssl.truststore.type": "PEM", "ssl.truststore.certificates": _pem_of(pki.ca_pem),
              "ssl.keystore.type": "PEM", "ssl.keystore.certificate.chain": _pem_of(pki.client_chain_pem),
              "ssl.keystore.key": _pem_of(pki.client_key_encrypted_pem), "ssl.key.password": tls_support.KEY_PASSWORD}
    librdkafka, group = _both(inline)
    assert "ENCRYPTED" not in librdkafka["ssl.key.pem"]
    assert _peer_seen_by_server(group["ssl_context"], pki) == "mm2-client"
    for key, value in (("ssl.truststore.password", "wrong"), ("ssl.key.password", "wrong")):
        _both_refuse({**tls, key: value}, key)
    # another CA only: neither client trusts the server
    untrusting = {**BASE, "ssl.truststore.type": "PEM", "ssl.truststore.location": str(pki.other_ca_pem)}
    with pytest.raises(ssl.SSLError):
        _peer_seen_by_server(group_client_config(untrusting)["ssl_context"], pki)
    assert translate(untrusting, "admin")["ssl.ca.pem"] == _pem_of(pki.other_ca_pem)
    # versions, suites and the host name check (ssl.protocol=TLS asks what the default does)
    tls13, group13 = _both({**tls, "ssl.enabled.protocols": "TLSv1.3", "ssl.protocol": "TLS"})
    assert tls13["ssl.cipher.suites"] == "PSK" and group13["ssl_context"].minimum_version is ssl.TLSVersion.TLSv1_3
    suites = f"{TLS13},TLS_ECDHE_RSA_WITH_AES_128_GCM_SHA256"
    listed, group_listed = _both({**tls, "ssl.cipher.suites": suites})
    assert listed["ssl.cipher.suites"] == "ECDHE-RSA-AES128-GCM-SHA256"
    assert {c["name"] for c in group_listed["ssl_context"].get_ciphers() if c["protocol"] == "TLSv1.2"} == {
        "ECDHE-RSA-AES128-GCM-SHA256"}
    unchecked, group_unchecked = _both({**tls, "ssl.endpoint.identification.algorithm": ""})
    assert unchecked["ssl.endpoint.identification.algorithm"] == "none"
    assert group_unchecked["ssl_context"].check_hostname is False


def test_librdkafkas_own_tls_keys_reach_the_group_clients_context_or_are_refused_for_it(pki: tls_support.Pki) -> None:
    """A config may name librdkafka's keys: those Python's ssl can apply are applied by both, the others
    refused for the group client naming the key and the client (librdkafka still gets them by name)."""
    native = {**BASE, **pki.librdkafka(mutual=True)}
    librdkafka, group = _both(native)
    assert librdkafka["ssl.ca.location"] == str(pki.ca_pem)
    assert _peer_seen_by_server(group["ssl_context"], pki) == "mm2-client"
    encrypted = {**native, "ssl.key.location": str(pki.client_key_encrypted_pem),
                 "ssl.key.password": tls_support.KEY_PASSWORD}
    librdkafka, group = _both(encrypted)
    assert librdkafka["ssl.key.password"] == tls_support.KEY_PASSWORD
    assert _peer_seen_by_server(group["ssl_context"], pki) == "mm2-client"
    unverified = {**BASE, "ssl.ca.location": str(pki.other_ca_pem), "enable.ssl.certificate.verification": "false"}
    librdkafka, group = _both(unverified)
    assert librdkafka["enable.ssl.certificate.verification"] == "false"
    assert _peer_seen_by_server(group["ssl_context"], pki) is None  # connected although the CA is not the server's
    for key, value in (("ssl.sigalgs.list", "RSA-PSS+SHA256"), ("ssl.curves.list", "P-256"),
                       ("ssl.providers", "default,legacy"), ("ssl.engine.location", "/usr/lib/engine.so")):
        assert translate({**BASE, key: value}, "admin")[key] == value
        with pytest.raises(ConfigError, match=r"the group membership client \(kafka-python\)") as error:
            group_client_config({**BASE, key: value})
        assert error.value.key == key and value not in str(error.value)
    # without TLS no ssl.* key is read, by either
    assert "ssl_context" not in group_client_config({"security.protocol": "PLAINTEXT", "ssl.sigalgs.list": "x"})


def test_sasl_logins_reach_both_clients_or_are_refused_for_the_group_client(monkeypatch: pytest.MonkeyPatch) -> None:
    """One login, two renderings: the same credentials, the same Kerberos service, the same token source
    (a Python callback is called by both); a key tab kafka-python cannot log in from is refused naming the
    key and the client."""
    librdkafka, group = _both({**BASE, "sasl.mechanism": "SCRAM-SHA-512",
                               "sasl.jaas.config": PLAIN.replace("plain.PlainLoginModule", "scram.ScramLoginModule")})
    assert (librdkafka["sasl.mechanism"], librdkafka["sasl.username"], librdkafka["sasl.password"]) == (
        group["sasl_mechanism"], group["sasl_plain_username"], group["sasl_plain_password"])
    TOKENS.clear()
    callback = {**BASE, "sasl.mechanism": "OAUTHBEARER", "sasl.jaas.config": f"{OAUTH} required;",
                "sasl.login.callback.handler.class": f"{__name__}.token_for_test", "sasl.oauthbearer.config": "c=1"}
    librdkafka, group = _both(callback)
    assert librdkafka["oauth_cb"] is token_for_test
    assert group["sasl_oauth_token_provider"].token() == "token-1" and TOKENS == ["c=1"]
    unsecured = {**BASE, "sasl.mechanism": "OAUTHBEARER",
                 "sasl.jaas.config": f'{OAUTH} required unsecuredLoginStringClaim_sub="mm2" '
                                     'unsecuredLoginExtension_traceId="t1";'}
    librdkafka, group = _both(unsecured)
    assert librdkafka["sasl.oauthbearer.config"] == "principal=mm2 extension_traceId=t1"
    provider = group["sasl_oauth_token_provider"]
    claims = provider.token().split(".")[1]
    assert json.loads(base64.urlsafe_b64decode(claims + "=" * (-len(claims) % 4)))["sub"] == "mm2"
    assert provider.extensions() == {"traceId": "t1"}
    oidc = {**BASE, "sasl.mechanism": "OAUTHBEARER", "sasl.oauthbearer.token.endpoint.url": "https://idp.example/t",
            "sasl.jaas.config": f'{OAUTH} required clientId="mm2" clientSecret="s" scope="kafka";'}
    librdkafka, group = _both(oidc)
    source = group["sasl_oauth_token_provider"]._tokens
    assert (librdkafka["sasl.oauthbearer.token.endpoint.url"], librdkafka["sasl.oauthbearer.client.id"],
            librdkafka["sasl.oauthbearer.scope"]) == (source.endpoint, source.client_id, source.scope)
    assert security_keys.DECISIONS["sasl.oauthbearer.sub.claim.name"].group.startswith("nothing to apply")
    assert translate({**oidc, "sasl.oauthbearer.sub.claim.name": "uid"}, "admin")["sasl.oauthbearer.sub.claim.name"]
    # GSSAPI: the service name reaches both; a key tab is refused for the group client only
    ticket_cache = {**BASE, "sasl.mechanism": "GSSAPI", "sasl.kerberos.service.name": "kfk",
                    "sasl.kerberos.kinit.cmd": "/usr/bin/kinit", "sasl.kerberos.min.time.before.relogin": "30000",
                    "sasl.jaas.config": f'{KRB5} required useTicketCache=true principal="mm2@EXAMPLE.COM";'}
    librdkafka = translate(ticket_cache, "admin")
    assert librdkafka["sasl.kerberos.service.name"] == "kfk"
    assert librdkafka["sasl.kerberos.min.time.before.relogin"] == "0" and "sasl.kerberos.kinit.cmd" not in librdkafka
    assert kafka_python_sasl(sasl_login(ticket_cache) or _none())["sasl_kerberos_service_name"] == "kfk"
    key_tab = {**ticket_cache, "sasl.jaas.config": f'{KRB5} required keyTab="/etc/mm2.keytab" principal="mm2@X";'}
    assert translate(key_tab, "admin")["sasl.kerberos.keytab"] == "/etc/mm2.keytab"
    with pytest.raises(ConfigError, match=r"the group membership client \(kafka-python\) cannot log in from a key "
                                          r"tab") as error:
        group_client_config(key_tab)
    assert error.value.key == "sasl.jaas.config" and "/etc/mm2.keytab" not in str(error.value)
    with pytest.raises(ConfigError) as error:
        wc.DistributedWorkerConfig({"bootstrap.servers": "b:9092", "group.id": "g", "config.storage.topic": "c",
                                    "offset.storage.topic": "o", "status.storage.topic": "s", **key_tab})
    assert error.value.key == "sasl.jaas.config"
    # a callback handler with no equivalent is refused by both
    _both_refuse({**callback, "sasl.client.callback.handler.class": "com.acme.Handler"},
                 "sasl.client.callback.handler.class")


def test_every_declared_key_is_covered_by_the_group_client_tests() -> None:
    """The four tests above cover DECISIONS: the refusing keys one by one, the mapped ones by kind."""
    mapped = {k for k, d in security_keys.DECISIONS.items() if not d.refuses}
    covered = {"ssl.truststore.location", "ssl.truststore.type", "ssl.truststore.password",
               "ssl.truststore.certificates", "ssl.keystore.location", "ssl.keystore.type", "ssl.keystore.password",
               "ssl.keystore.key", "ssl.keystore.certificate.chain", "ssl.key.password", "sasl.mechanism",
               "sasl.jaas.config", "sasl.client.callback.handler.class", "sasl.login.callback.handler.class",
               "sasl.kerberos.service.name", "sasl.kerberos.kinit.cmd", "sasl.oauthbearer.token.endpoint.url",
               "sasl.kerberos.min.time.before.relogin", "sasl.oauthbearer.sub.claim.name"}
    assert mapped == covered
    assert all(d.group for d in security_keys.DECISIONS.values())


def _pem_of(path: Path) -> str:
    return path.read_text()


def _none() -> Any:
    raise AssertionError("no SASL login parsed")
