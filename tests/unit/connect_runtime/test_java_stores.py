"""Java trust and key stores read as they are (keytool-made JKS / PKCS12, PEM), and their errors.

The stores come from the session ``pki`` fixture (tests/support/tls.py), made by the JDK's keytool, so
these are the files a Java MirrorMaker user has. The end-to-end proof that librdkafka accepts what comes
out, over TLS and mutual TLS against real brokers, is tests/integration/test_tls_replication.py.
"""

from __future__ import annotations

import os
import shutil
from pathlib import Path

import pytest
from confluent_kafka import Producer
from cryptography import x509
from cryptography.hazmat.primitives import serialization

from connect_runtime.api.errors import ConfigError
from connect_runtime.clients import java_stores
from connect_runtime.clients.factory import translate
from connect_runtime.clients.java_stores import StoreError, load_key_store, load_trust_store
from tests.support.tls import KEY_PASSWORD, STORE_PASSWORD, TRUST_PASSWORD, Pki

SECRETS = (STORE_PASSWORD, KEY_PASSWORD, TRUST_PASSWORD)


def _subjects(pem: str) -> list[str]:
    return [c.subject.rfc4514_string() for c in x509.load_pem_x509_certificates(pem.encode())]


def _key_matches_leaf(chain_pem: str, key_pem: str) -> bool:
    leaf = x509.load_pem_x509_certificates(chain_pem.encode())[0]
    key = serialization.load_pem_private_key(key_pem.encode(), password=None)
    der = serialization.Encoding.DER, serialization.PublicFormat.SubjectPublicKeyInfo
    return leaf.public_key().public_bytes(*der) == key.public_key().public_bytes(*der)


@pytest.mark.parametrize("kind", ["JKS", "PKCS12", "PEM"])
def test_trust_stores_give_the_trusted_ca_as_pem(pki: Pki, kind: str) -> None:
    keys = pki.java_truststore(kind)
    pem = load_trust_store(keys["ssl.truststore.location"], keys.get("ssl.truststore.password"), kind)
    assert _subjects(pem) == ["CN=test-root-ca"]
    assert pem == pki.ca_pem.read_text()


def test_a_jks_declaration_reads_a_pkcs12_file_and_back_as_java_9_does(pki: Pki) -> None:
    assert load_trust_store(str(pki.truststore_p12), TRUST_PASSWORD, "JKS") == pki.ca_pem.read_text()
    assert load_trust_store(str(pki.truststore_jks), TRUST_PASSWORD, "PKCS12") == pki.ca_pem.read_text()
    assert load_trust_store(str(pki.truststore_jks), TRUST_PASSWORD, None) == pki.ca_pem.read_text()  # Java: JKS


@pytest.mark.parametrize("kind", ["JKS", "PKCS12"])
def test_key_stores_give_the_whole_chain_and_the_decrypted_key(pki: Pki, kind: str) -> None:
    keys = pki.java_keystore(kind)
    material = load_key_store(keys["ssl.keystore.location"], keys["ssl.keystore.password"], kind,
                              keys.get("ssl.key.password"))
    assert _subjects(material.certificate_chain_pem) == ["CN=mm2-client", "CN=test-client-ca"]
    assert "ENCRYPTED" not in material.private_key_pem
    assert _key_matches_leaf(material.certificate_chain_pem, material.private_key_pem)
    assert "BEGIN" not in repr(material) and "hidden" in repr(material)


def test_pem_key_store_file_and_inline_pem_with_an_encrypted_key(pki: Pki, tmp_path: Path) -> None:
    store = tmp_path / "keystore.pem"
    store.write_text(pki.client_key_encrypted_pem.read_text() + pki.client_chain_pem.read_text())
    from_file = load_key_store(str(store), None, "PEM", KEY_PASSWORD)
    inline = java_stores.key_material_from_pem(pki.client_chain_pem.read_text(),
                                               pki.client_key_encrypted_pem.read_text(), KEY_PASSWORD)
    assert from_file == inline
    assert _subjects(inline.certificate_chain_pem) == ["CN=mm2-client", "CN=test-client-ca"]
    assert _key_matches_leaf(inline.certificate_chain_pem, inline.private_key_pem)


@pytest.mark.parametrize(("change", "key", "says"), [
    ({"ssl.keystore.location": "/nonexistent/keystore.jks"}, "ssl.keystore.location", "does not exist"),
    ({"ssl.truststore.location": "/nonexistent/truststore.p12"}, "ssl.truststore.location", "does not exist"),
    ({"ssl.keystore.password": "not-the-password"}, "ssl.keystore.password", "wrong password for JKS store"),
    ({"ssl.key.password": "not-the-key-password"}, "ssl.key.password", "wrong key password"),
    ({"ssl.key.password": None}, "ssl.key.password", "wrong key password"),  # falls back to the store password
    ({"ssl.truststore.password": "nope"}, "ssl.truststore.password", "wrong password for PKCS12 store"),
    ({"ssl.keystore.type": "BCFKS"}, "ssl.keystore.type", "unknown store type 'BCFKS'"),
    ({"ssl.truststore.type": "PEM"}, "ssl.truststore.location", "holds no certificate"),
])
def test_store_errors_are_one_line_and_name_the_key(pki: Pki, change: dict[str, str | None], key: str,
                                                    says: str) -> None:
    java = {"security.protocol": "SSL", **pki.java_truststore("PKCS12"), **pki.java_keystore("JKS")}
    java.update({k: v for k, v in change.items() if v is not None})
    for k in [k for k, v in change.items() if v is None]:
        del java[k]
    with pytest.raises(StoreError) as info:
        translate(java, "producer")
    message = str(info.value)
    assert info.value.key == key and isinstance(info.value, ConfigError)
    assert message.startswith(f"{key}: ") and says in message and "\n" not in message
    assert not any(secret in message for secret in SECRETS)


def test_a_trust_store_is_not_a_key_store(pki: Pki) -> None:
    with pytest.raises(StoreError, match=r"ssl\.keystore\.location: JKS store .* holds no private key entry"):
        load_key_store(str(pki.truststore_jks), TRUST_PASSWORD, "JKS")
    with pytest.raises(StoreError, match="no PEM private key found"):
        load_key_store(str(pki.ca_pem), None, "PEM")


def test_translation_hands_librdkafka_pem_in_memory_and_it_builds_a_client(pki: Pki) -> None:
    java = {"security.protocol": "SSL", **pki.java_truststore("JKS"), **pki.java_keystore("PKCS12")}
    out = translate(java, "producer")
    assert out.keys() == {"security.protocol", "ssl.ca.pem", "ssl.certificate.pem", "ssl.key.pem"}
    assert out["ssl.ca.pem"] == pki.ca_pem.read_text()
    assert out["ssl.certificate.pem"] == pki.client_chain_pem.read_text()
    # librdkafka parses the PEM when the client is built (no bootstrap.servers: no connection is made)
    Producer({**out, "log_level": 0}).flush(0)


def test_stores_are_read_only_for_a_tls_protocol_as_in_java(pki: Pki) -> None:
    java = {"ssl.truststore.location": "/nonexistent/truststore.jks", "ssl.truststore.password": "x"}
    assert translate({**java, "security.protocol": "PLAINTEXT"}, "consumer") == {"security.protocol": "PLAINTEXT"}
    assert translate({**java, "security.protocol": "SASL_PLAINTEXT", "sasl.mechanism": "PLAIN",
                      "sasl.jaas.config": 'x.PlainLoginModule required username="u" password="p";'},
                     "consumer")["security.protocol"] == "SASL_PLAINTEXT"
    with pytest.raises(StoreError):
        translate({**java, "security.protocol": "SASL_SSL", "sasl.mechanism": "PLAIN",
                   "sasl.jaas.config": 'x.PlainLoginModule required username="u" password="p";'}, "consumer")


def test_inline_pem_keys_as_kafka_takes_them(pki: Pki) -> None:
    java = {"security.protocol": "SSL", "ssl.truststore.type": "PEM",
            "ssl.truststore.certificates": pki.ca_pem.read_text(), "ssl.keystore.type": "PEM",
            "ssl.keystore.certificate.chain": pki.client_chain_pem.read_text(),
            "ssl.keystore.key": pki.client_key_encrypted_pem.read_text(), "ssl.key.password": KEY_PASSWORD}
    out = translate(java, "consumer")
    assert out["ssl.ca.pem"] == pki.ca_pem.read_text()
    assert _key_matches_leaf(out["ssl.certificate.pem"], out["ssl.key.pem"])
    with pytest.raises(ConfigError) as info:
        translate({**java, "ssl.keystore.type": "JKS"}, "consumer")
    assert info.value.key == "ssl.keystore.type"
    with pytest.raises(ConfigError) as info:
        translate({**java, "ssl.truststore.location": str(pki.truststore_jks)}, "consumer")
    assert info.value.key == "ssl.truststore.certificates"


def test_a_replaced_store_file_is_read_again(pki: Pki, tmp_path: Path) -> None:
    store = tmp_path / "truststore.pem"
    shutil.copy(pki.ca_pem, store)
    assert _subjects(load_trust_store(str(store), None, "PEM")) == ["CN=test-root-ca"]
    shutil.copy(pki.other_ca_pem, store)
    os.utime(store, ns=(1, 1))  # a different mtime even on coarse file systems
    assert _subjects(load_trust_store(str(store), None, "PEM")) == ["CN=unrelated-ca"]
