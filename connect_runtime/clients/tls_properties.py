"""Java TLS settings (``ssl.truststore.*``, ``ssl.keystore.*``, ``ssl.key.password``) for librdkafka.

librdkafka reads neither JKS nor Java's PKCS12 trust stores, so the stores are read here
(:mod:`connect_runtime.clients.java_stores`) and handed over as PEM text in memory: ``ssl.ca.pem`` for
the trusted certificates, ``ssl.certificate.pem`` (the whole chain) and ``ssl.key.pem`` (the decrypted
key) for the client identity. Nothing is written to disk, so a Java mm2.properties works unmodified
and no copy of a private key outlives the process. Inline PEM (``ssl.truststore.certificates``,
``ssl.keystore.certificate.chain``, ``ssl.keystore.key``) is taken as Kafka takes it.

``ssl.endpoint.identification.algorithm`` passes through by name in the factory; the TLS versions and
cipher suites are :mod:`connect_runtime.clients.tls_policy`'s, and the Java-only keys
(``ssl.provider``, ``ssl.keymanager.algorithm`` ...) are accepted only at values OpenSSL does anyway
(:mod:`connect_runtime.clients.security_keys`).
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from connect_runtime.api.errors import ConfigError
from connect_runtime.clients import java_stores

#: Java TLS keys this module consumes; they are never passed to librdkafka by name.
HANDLED = frozenset({
    "ssl.truststore.location", "ssl.truststore.type", "ssl.truststore.password", "ssl.truststore.certificates",
    "ssl.keystore.location", "ssl.keystore.type", "ssl.keystore.password", "ssl.keystore.certificate.chain",
    "ssl.keystore.key", "ssl.key.password",
})


def translate_tls(java: Mapping[str, str], out: dict[str, Any]) -> None:
    """Add to ``out`` ``ssl.ca.pem`` / ``ssl.certificate.pem`` / ``ssl.key.pem`` for the stores in ``java``.

    As in Java, stores are read only when ``security.protocol`` is SSL or SASL_SSL (a PLAINTEXT override of
    a TLS cluster's settings does not need its store files). Raises
    :class:`~connect_runtime.clients.java_stores.StoreError` naming the key.
    """
    if java.get("security.protocol", "PLAINTEXT").strip().upper() not in ("SSL", "SASL_SSL"):
        return
    trust_location = java.get("ssl.truststore.location", "").strip()
    inline_trust = java.get("ssl.truststore.certificates", "").strip()
    if trust_location and inline_trust:
        raise ConfigError("ssl.truststore.certificates and ssl.truststore.location are both set; set one",
                          "ssl.truststore.certificates")
    if trust_location:
        out["ssl.ca.pem"] = java_stores.load_trust_store(trust_location, java.get("ssl.truststore.password") or None,
                                                         java.get("ssl.truststore.type"))
    elif inline_trust:
        _require_pem(java, "ssl.truststore.type", "ssl.truststore.certificates")
        out["ssl.ca.pem"] = java_stores.trusted_certificates_from_pem(inline_trust)

    key_location = java.get("ssl.keystore.location", "").strip()
    inline_chain = java.get("ssl.keystore.certificate.chain", "").strip()
    inline_key = java.get("ssl.keystore.key", "").strip()
    key_password = java.get("ssl.key.password") or None
    if key_location and (inline_chain or inline_key):
        raise ConfigError("ssl.keystore.key / ssl.keystore.certificate.chain and ssl.keystore.location are both "
                          "set; set one", "ssl.keystore.location")
    if key_location:
        material = java_stores.load_key_store(key_location, java.get("ssl.keystore.password") or None,
                                              java.get("ssl.keystore.type"), key_password)
    elif inline_chain or inline_key:
        if not (inline_chain and inline_key):
            missing = "ssl.keystore.key" if inline_chain else "ssl.keystore.certificate.chain"
            raise ConfigError(f"{missing} must be set with the other inline PEM key store key", missing)
        _require_pem(java, "ssl.keystore.type", "ssl.keystore.key")
        material = java_stores.key_material_from_pem(inline_chain, inline_key, key_password)
    else:
        return
    out["ssl.certificate.pem"] = material.certificate_chain_pem
    out["ssl.key.pem"] = material.private_key_pem


def _require_pem(java: Mapping[str, str], type_key: str, value_key: str) -> None:
    declared = java.get(type_key, "PEM").strip().upper()
    if declared != "PEM":
        raise ConfigError(f"{type_key} must be PEM when {value_key} is set (found {declared})", type_key)
