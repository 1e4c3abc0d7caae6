"""One TLS translation for every client: Java's ``ssl.*`` keys parsed once into :class:`TlsSettings`, then
rendered for each library that speaks TLS here.

* librdkafka (producers, consumers, admin clients): :func:`librdkafka_tls` gives its keys.
* Python's ``ssl``: :func:`ssl_context` gives an ``SSLContext``, for the group membership client
  (kafka-python), and for the REST listener and the client that forwards to another worker's listener
  (:mod:`connect_runtime.rest.tls` parses the ``listeners.https.ssl.*`` keys with :func:`parse_tls`).

Stores. librdkafka reads neither JKS nor Java's PKCS12 trust stores, so the stores are read here
(:mod:`connect_runtime.clients.java_stores`) and handed over as PEM text in memory: ``ssl.ca.pem`` for the
trusted certificates, ``ssl.certificate.pem`` (the whole chain) and ``ssl.key.pem`` (the decrypted key)
for the client identity. Nothing is written to disk, so a Java mm2.properties works unmodified and no copy
of a private key outlives the process. Inline PEM (``ssl.truststore.certificates``,
``ssl.keystore.certificate.chain``, ``ssl.keystore.key``) is taken as Kafka takes it.

Versions and suites. What each library can enforce decides what is accepted
(:mod:`connect_runtime.clients.security_keys` refuses the rest, with the refusals below):

* librdkafka has no TLS version setting: it offers TLSv1.2 and TLSv1.3 (its OpenSSL 3 refuses anything
  older). It can still be kept to TLSv1.3 alone: its ``ssl.cipher.suites`` is OpenSSL's TLSv1.2 cipher
  list, and set to :data:`TLS13_ONLY_CIPHERS` (the PSK suites, which a client offers only with a PSK
  callback, and librdkafka installs none) it offers no TLSv1.2 suite at all, so a TLSv1.2-only server
  finds no shared cipher and the handshake fails; TLSv1.3 suites are a separate list OpenSSL keeps.
  It cannot be kept off TLSv1.3, and it cannot narrow the TLSv1.3 suites (OpenSSL's
  ``SSL_CTX_set_ciphersuites`` is not exposed).
* Python's ``ssl`` enforces both bounds (``minimum_version`` / ``maximum_version``) and the TLSv1.2
  suites (``set_ciphers``), but not the TLSv1.3 suites either.

So for a Kafka client: ``ssl.enabled.protocols`` TLSv1.2,TLSv1.3 (Java's default) or TLSv1.3 alone is
enforced; TLSv1.2 alone, or an ``ssl.protocol`` that caps the version below TLSv1.3 (Java's
``SSLContext`` protocol, e.g. the pre-3.0 default TLSv1.2), is refused. TLSv1.1 and older in the list
are accepted and not enabled, as in current JDKs (``jdk.tls.disabledAlgorithms``). Java names cipher
suites by their IANA names; they are translated to OpenSSL's. A list must include every TLSv1.3 suite
OpenSSL offers (Java would otherwise leave the missing ones, or TLSv1.3 altogether, unused). An endpoint
only Python's ``ssl`` serves (the REST listener) honours TLSv1.2 alone too.

librdkafka's own keys. A config may also name librdkafka's TLS keys (``ssl.ca.location``,
``ssl.certificate.location``, ``ssl.key.location``, ``ssl.crl.location``, ``ssl.ca.pem``,
``enable.ssl.certificate.verification`` ...). They reach librdkafka by name (the factory passes them) and
are parsed here too, so that the Python contexts apply them as librdkafka does; those Python's ``ssl``
has no equivalent for are refused for the group membership client (``security_keys``).

Key material for Python's ``ssl``. It loads trusted certificates from memory but a certificate chain and
key only from a file path. So such PEM text is handed to OpenSSL through :func:`private_file`: an
anonymous in-memory file (``memfd_create``, Linux, closed on exec), or where there is none, a file
readable only by this process in a private directory. Either is gone when the :func:`private_files` scope
it was written in ends, however it ends: an ``SSLContext`` keeps what it loaded in memory, so no copy of
key material outlives the context's construction, on disk or in a child.
"""

from __future__ import annotations

import contextlib
import os
import shutil
import ssl
import tempfile
from collections.abc import Callable, Iterator, Mapping
from contextvars import ContextVar
from dataclasses import dataclass
from typing import Any

from connect_runtime.api.errors import ConfigError
from connect_runtime.clients import java_stores
from connect_runtime.clients.java_stores import KeyMaterial

PROTOCOL = "ssl.protocol"
ENABLED_PROTOCOLS = "ssl.enabled.protocols"
CIPHER_SUITES = "ssl.cipher.suites"
ENDPOINT_IDENTIFICATION = "ssl.endpoint.identification.algorithm"

#: Java TLS keys the store reading consumes; they are never passed to librdkafka by name.
HANDLED = frozenset({
    "ssl.truststore.location", "ssl.truststore.type", "ssl.truststore.password", "ssl.truststore.certificates",
    "ssl.keystore.location", "ssl.keystore.type", "ssl.keystore.password", "ssl.keystore.certificate.chain",
    "ssl.keystore.key", "ssl.key.password",
})

#: librdkafka's own TLS keys that :class:`TlsSettings` holds too (they reach librdkafka by name).
LIBRDKAFKA_KEYS = frozenset({
    "ssl.ca.location", "ssl.ca.pem", "ssl.certificate.location", "ssl.certificate.pem", "ssl.key.location",
    "ssl.key.pem", "ssl.crl.location", "enable.ssl.certificate.verification",
})

#: librdkafka ``ssl.cipher.suites`` that leaves a client only TLSv1.3 (see the module docstring).
TLS13_ONLY_CIPHERS = "PSK"

#: The TLSv1.3 suites OpenSSL offers; a Java list must name all of them (neither library can drop one).
TLS13_SUITES = ("TLS_AES_256_GCM_SHA384", "TLS_CHACHA20_POLY1305_SHA256", "TLS_AES_128_GCM_SHA256")

#: Java (IANA) TLSv1.2 cipher suite names -> OpenSSL's, for the suites both know
#: (``openssl ciphers -stdname``: the AES and ChaCha20 suites; Java enables no ARIA, Camellia or CCM suite).
TLS12_SUITES: dict[str, str] = {
    "TLS_ECDHE_ECDSA_WITH_AES_256_GCM_SHA384": "ECDHE-ECDSA-AES256-GCM-SHA384",
    "TLS_ECDHE_RSA_WITH_AES_256_GCM_SHA384": "ECDHE-RSA-AES256-GCM-SHA384",
    "TLS_DHE_DSS_WITH_AES_256_GCM_SHA384": "DHE-DSS-AES256-GCM-SHA384",
    "TLS_DHE_RSA_WITH_AES_256_GCM_SHA384": "DHE-RSA-AES256-GCM-SHA384",
    "TLS_ECDHE_ECDSA_WITH_CHACHA20_POLY1305_SHA256": "ECDHE-ECDSA-CHACHA20-POLY1305",
    "TLS_ECDHE_RSA_WITH_CHACHA20_POLY1305_SHA256": "ECDHE-RSA-CHACHA20-POLY1305",
    "TLS_DHE_RSA_WITH_CHACHA20_POLY1305_SHA256": "DHE-RSA-CHACHA20-POLY1305",
    "TLS_ECDHE_ECDSA_WITH_AES_128_GCM_SHA256": "ECDHE-ECDSA-AES128-GCM-SHA256",
    "TLS_ECDHE_RSA_WITH_AES_128_GCM_SHA256": "ECDHE-RSA-AES128-GCM-SHA256",
    "TLS_DHE_DSS_WITH_AES_128_GCM_SHA256": "DHE-DSS-AES128-GCM-SHA256",
    "TLS_DHE_RSA_WITH_AES_128_GCM_SHA256": "DHE-RSA-AES128-GCM-SHA256",
    "TLS_ECDHE_ECDSA_WITH_AES_256_CBC_SHA384": "ECDHE-ECDSA-AES256-SHA384",
    "TLS_ECDHE_RSA_WITH_AES_256_CBC_SHA384": "ECDHE-RSA-AES256-SHA384",
    "TLS_DHE_RSA_WITH_AES_256_CBC_SHA256": "DHE-RSA-AES256-SHA256",
    "TLS_DHE_DSS_WITH_AES_256_CBC_SHA256": "DHE-DSS-AES256-SHA256",
    "TLS_ECDHE_ECDSA_WITH_AES_128_CBC_SHA256": "ECDHE-ECDSA-AES128-SHA256",
    "TLS_ECDHE_RSA_WITH_AES_128_CBC_SHA256": "ECDHE-RSA-AES128-SHA256",
    "TLS_DHE_RSA_WITH_AES_128_CBC_SHA256": "DHE-RSA-AES128-SHA256",
    "TLS_DHE_DSS_WITH_AES_128_CBC_SHA256": "DHE-DSS-AES128-SHA256",
    "TLS_ECDHE_ECDSA_WITH_AES_256_CBC_SHA": "ECDHE-ECDSA-AES256-SHA",
    "TLS_ECDHE_RSA_WITH_AES_256_CBC_SHA": "ECDHE-RSA-AES256-SHA",
    "TLS_DHE_RSA_WITH_AES_256_CBC_SHA": "DHE-RSA-AES256-SHA",
    "TLS_DHE_DSS_WITH_AES_256_CBC_SHA": "DHE-DSS-AES256-SHA",
    "TLS_ECDHE_ECDSA_WITH_AES_128_CBC_SHA": "ECDHE-ECDSA-AES128-SHA",
    "TLS_ECDHE_RSA_WITH_AES_128_CBC_SHA": "ECDHE-RSA-AES128-SHA",
    "TLS_DHE_RSA_WITH_AES_128_CBC_SHA": "DHE-RSA-AES128-SHA",
    "TLS_DHE_DSS_WITH_AES_128_CBC_SHA": "DHE-DSS-AES128-SHA",
    "TLS_RSA_WITH_AES_256_GCM_SHA384": "AES256-GCM-SHA384",
    "TLS_RSA_WITH_AES_128_GCM_SHA256": "AES128-GCM-SHA256",
    "TLS_RSA_WITH_AES_256_CBC_SHA256": "AES256-SHA256",
    "TLS_RSA_WITH_AES_128_CBC_SHA256": "AES128-SHA256",
    "TLS_RSA_WITH_AES_256_CBC_SHA": "AES256-SHA",
    "TLS_RSA_WITH_AES_128_CBC_SHA": "AES128-SHA",
}

#: Java's signalling pseudo-suite (renegotiation info): OpenSSL always sends its equivalent.
_SIGNALLING = frozenset({"TLS_EMPTY_RENEGOTIATION_INFO_SCSV"})
_OLD_PROTOCOLS = frozenset({"SSLV2HELLO", "SSLV3", "TLSV1", "TLSV1.1"})
_MODERN = {"TLSV1.2": ssl.TLSVersion.TLSv1_2, "TLSV1.3": ssl.TLSVersion.TLSv1_3}
#: ``ssl.protocol`` values whose SSLContext supports TLSv1.3: no cap on the enabled protocols.
_UNCAPPED_CONTEXTS = frozenset({"TLS", "TLSV1.3"})


@dataclass(frozen=True)
class TlsVersions:
    """The TLS versions a client may negotiate."""

    minimum: ssl.TLSVersion
    maximum: ssl.TLSVersion


@dataclass(frozen=True, repr=False)
class TlsSettings:
    """What one endpoint's TLS keys ask for, parsed once (:func:`parse_tls`), for every library to render.

    ``trusted_pem`` and ``identity`` come from the Java stores (or inline PEM, or librdkafka's own
    ``ssl.ca.pem`` / ``ssl.certificate.pem`` + ``ssl.key.pem``); the ``*_location`` fields are librdkafka's
    file keys, with ``key_password`` for ``key_location``'s key.
    """

    versions: TlsVersions
    tls12_suites: tuple[str, ...] = ()  # OpenSSL names; empty: OpenSSL's defaults
    only_tls13: bool = False  # by the versions, or by a suite list naming no TLSv1.2 suite
    check_hostname: bool = True
    verify: bool = True
    trusted_pem: str | None = None
    identity: KeyMaterial | None = None
    ca_location: str | None = None
    certificate_location: str | None = None
    key_location: str | None = None
    key_password: str | None = None
    crl_location: str | None = None

    def __repr__(self) -> str:  # never print key material or a password by accident
        return (f"TlsSettings(versions={self.versions}, verify={self.verify}, check_hostname={self.check_hostname}, "
                f"identity={self.identity!r})")


def _items(value: Any) -> list[str]:
    if isinstance(value, (list, tuple)):
        return [str(v).strip() for v in value if str(v).strip()]
    return [v.strip() for v in str(value or "").split(",") if v.strip()]


def uses_tls(java: Mapping[str, Any]) -> bool:
    return str(java.get("security.protocol") or "PLAINTEXT").strip().upper() in ("SSL", "SASL_SSL")


# --- parsing ---------------------------------------------------------------------------------------


def tls_settings(java: Mapping[str, str]) -> TlsSettings | None:
    """The TLS settings of a Kafka client's Java properties; None unless ``security.protocol`` is SSL or
    SASL_SSL (as in Java, a PLAINTEXT override of a TLS cluster's settings does not need its store files).

    The values must already have passed :func:`connect_runtime.clients.security_keys.check`. Raises
    ConfigError (:class:`~connect_runtime.clients.java_stores.StoreError` for a store) naming the key.
    """
    return parse_tls(java) if uses_tls(java) else None


def parse_tls(java: Mapping[str, str], *, prefix: str = "") -> TlsSettings:
    """:class:`TlsSettings` from ``ssl.*`` keys, for an endpoint that is TLS whatever ``security.protocol``
    says (the REST listener); ``prefix`` is put before the key names in errors (``listeners.https.``)."""
    try:
        allowed = versions(java)
    except ValueError:
        raise ConfigError(f"{prefix}{PROTOCOL} and {prefix}{ENABLED_PROTOCOLS} leave no TLS version to use",
                          f"{prefix}{PROTOCOL}") from None
    listed = [n for n in _items(java.get(CIPHER_SUITES)) if n not in _SIGNALLING]
    tls12 = tuple(TLS12_SUITES[n] for n in listed if n in TLS12_SUITES)
    verify = str(java.get("enable.ssl.certificate.verification") or "true").strip().lower() != "false"
    return TlsSettings(
        versions=allowed, tls12_suites=tls12,
        only_tls13=allowed.minimum is ssl.TLSVersion.TLSv1_3 or bool(listed and not tls12),
        check_hostname=(_text(java, ENDPOINT_IDENTIFICATION) or "").lower() not in ("", "none")
        if java.get(ENDPOINT_IDENTIFICATION) is not None else True,
        verify=verify, trusted_pem=_trusted_pem(java, prefix), identity=_identity(java, prefix),
        ca_location=_text(java, "ssl.ca.location"), certificate_location=_text(java, "ssl.certificate.location"),
        key_location=_text(java, "ssl.key.location"), key_password=java.get("ssl.key.password") or None,
        crl_location=_text(java, "ssl.crl.location"))


def _text(java: Mapping[str, str], key: str) -> str | None:
    return str(java.get(key) or "").strip() or None


def _trusted_pem(java: Mapping[str, str], prefix: str) -> str | None:
    location = _text(java, "ssl.truststore.location")
    inline = _text(java, "ssl.truststore.certificates")
    if location and inline:
        raise ConfigError(f"{prefix}ssl.truststore.certificates and {prefix}ssl.truststore.location are both set; "
                          "set one", f"{prefix}ssl.truststore.certificates")
    if location:
        return java_stores.load_trust_store(location, java.get("ssl.truststore.password") or None,
                                            java.get("ssl.truststore.type"), prefix=f"{prefix}ssl.truststore")
    if inline:
        _require_pem(java, "ssl.truststore.type", "ssl.truststore.certificates", prefix)
        return java_stores.trusted_certificates_from_pem(inline, key=f"{prefix}ssl.truststore.certificates")
    return _text(java, "ssl.ca.pem")


def _identity(java: Mapping[str, str], prefix: str) -> KeyMaterial | None:
    location = _text(java, "ssl.keystore.location")
    inline_chain = _text(java, "ssl.keystore.certificate.chain")
    inline_key = _text(java, "ssl.keystore.key")
    key_password = java.get("ssl.key.password") or None
    names = {"prefix": f"{prefix}ssl.keystore", "key_password_key": f"{prefix}ssl.key.password"}
    if location and (inline_chain or inline_key):
        raise ConfigError(f"{prefix}ssl.keystore.key / {prefix}ssl.keystore.certificate.chain and "
                          f"{prefix}ssl.keystore.location are both set; set one", f"{prefix}ssl.keystore.location")
    if location:
        return java_stores.load_key_store(location, java.get("ssl.keystore.password") or None,
                                          java.get("ssl.keystore.type"), key_password, **names)
    if inline_chain or inline_key:
        if not (inline_chain and inline_key):
            missing = "ssl.keystore.key" if inline_chain else "ssl.keystore.certificate.chain"
            raise ConfigError(f"{prefix}{missing} must be set with the other inline PEM key store key",
                              f"{prefix}{missing}")
        _require_pem(java, "ssl.keystore.type", "ssl.keystore.key", prefix)
        return java_stores.key_material_from_pem(inline_chain, inline_key, key_password, **names)
    native_chain, native_key = _text(java, "ssl.certificate.pem"), _text(java, "ssl.key.pem")
    if native_chain or native_key:  # librdkafka's own inline PEM: checked and decrypted the same way
        if not (native_chain and native_key):
            missing = "ssl.key.pem" if native_chain else "ssl.certificate.pem"
            raise ConfigError(f"{prefix}{missing} must be set with the other inline PEM key", f"{prefix}{missing}")
        return java_stores.key_material_from_pem(native_chain, native_key, key_password,
                                                 chain_key=f"{prefix}ssl.certificate.pem",
                                                 private_key_key=f"{prefix}ssl.key.pem",
                                                 key_password_key=f"{prefix}ssl.key.password")
    return None


def _require_pem(java: Mapping[str, str], type_key: str, value_key: str, prefix: str) -> None:
    declared = str(java.get(type_key) or "PEM").strip().upper()
    if declared != "PEM":
        raise ConfigError(f"{prefix}{type_key} must be PEM when {prefix}{value_key} is set (found {declared})",
                          f"{prefix}{type_key}")


def versions(java: Mapping[str, Any]) -> TlsVersions:
    """The TLS versions ``ssl.protocol`` and ``ssl.enabled.protocols`` allow; ValueError when none."""
    enabled = [p.upper() for p in _items(java.get(ENABLED_PROTOCOLS) or "TLSv1.2,TLSv1.3")]
    allowed = sorted(_MODERN[p] for p in enabled if p in _MODERN)
    context = str(java.get(PROTOCOL) or "TLSv1.3").strip().upper()
    if context not in _UNCAPPED_CONTEXTS:
        allowed = [v for v in allowed if v <= ssl.TLSVersion.TLSv1_2]
    if not allowed:
        raise ValueError("no TLS version left")
    return TlsVersions(allowed[0], allowed[-1])


# --- what each library can enforce (security_keys' refusals) -----------------------------------------


def protocol_refusal(value: Any) -> str | None:
    """Why ``ssl.protocol = value`` cannot be enforced for a Kafka client, or None."""
    context = str(value or "TLSv1.3").strip().upper()
    if context in _UNCAPPED_CONTEXTS:
        return None
    if context in _MODERN or context in _OLD_PROTOCOLS or context == "SSL":
        return ("it keeps Java's client off TLSv1.3, and librdkafka cannot cap the TLS version (it negotiates "
                "TLSv1.2 or TLSv1.3): remove the key or set TLSv1.3, Kafka's default since 3.0")
    return "not a TLS protocol name (TLSv1.3, Kafka's default, or TLS)"


def enabled_protocols_refusal(value: Any) -> str | None:
    """Why ``ssl.enabled.protocols = value`` cannot be enforced for a Kafka client, or None."""
    names = [p.upper() for p in _items(value)]
    unknown = [p for p in _items(value) if p.upper() not in _MODERN and p.upper() not in _OLD_PROTOCOLS]
    if unknown:
        return f"{unknown[0]} is not a TLS protocol name (expected TLSv1.2 and/or TLSv1.3)"
    modern = {p for p in names if p in _MODERN}
    if not modern:
        return ("TLSv1.1 and older are disabled by OpenSSL 3 and by current JDKs: enable TLSv1.2 and/or TLSv1.3 "
                "(Kafka's default is TLSv1.2,TLSv1.3)")
    if modern == {"TLSV1.2"}:
        return ("librdkafka cannot keep a client off TLSv1.3 (it has no TLS version setting): enable TLSv1.3 "
                "too (Kafka's default is TLSv1.2,TLSv1.3), or TLSv1.3 alone")
    return None


def python_protocol_refusal(value: Any) -> str | None:
    """``ssl.protocol`` for a Python-only TLS endpoint (REST HTTPS), which can cap the version too."""
    context = str(value or "TLSv1.3").strip().upper()
    return None if context in _UNCAPPED_CONTEXTS or context == "TLSV1.2" else protocol_refusal(value)


def python_enabled_protocols_refusal(value: Any) -> str | None:
    """``ssl.enabled.protocols`` for a Python-only TLS endpoint, which can keep off TLSv1.3 too."""
    modern = {p.upper() for p in _items(value)} & set(_MODERN)
    return None if modern == {"TLSV1.2"} else enabled_protocols_refusal(value)


def cipher_suites_refusal(value: Any) -> str | None:
    """Why ``ssl.cipher.suites = value`` cannot be enforced, or None (the empty list is Java's default)."""
    names = [n for n in _items(value) if n not in _SIGNALLING]
    if not names:
        return None
    unknown = [n for n in names if n not in TLS12_SUITES and not n.startswith("TLS_AES_")
               and n != "TLS_CHACHA20_POLY1305_SHA256"]
    if unknown:
        return (f"{unknown[0]} is not a cipher suite OpenSSL offers under that (IANA) name; Java's names are "
                "expected, e.g. TLS_ECDHE_RSA_WITH_AES_128_GCM_SHA256")
    missing = [s for s in TLS13_SUITES if s not in names]
    if missing:
        return (f"librdkafka and Python's ssl cannot narrow the TLSv1.3 suites, and a Java client given this "
                f"list would not use {missing[0]}: add {','.join(missing)} to the list")
    return None


# --- rendering: librdkafka ---------------------------------------------------------------------------


def librdkafka_tls(settings: TlsSettings) -> dict[str, str]:
    """librdkafka's keys for ``settings``: the trusted certificates and the identity as PEM in memory, the
    password of a ``ssl.key.location`` key, and ``ssl.cipher.suites``. librdkafka's own file keys and
    ``enable.ssl.certificate.verification`` reach it by name."""
    out: dict[str, str] = {}
    if settings.trusted_pem:
        out["ssl.ca.pem"] = settings.trusted_pem
    if settings.identity is not None:
        out["ssl.certificate.pem"] = settings.identity.certificate_chain_pem
        out["ssl.key.pem"] = settings.identity.private_key_pem
    elif settings.key_location and settings.key_password:
        out["ssl.key.password"] = settings.key_password
    if settings.only_tls13:
        out[CIPHER_SUITES] = TLS13_ONLY_CIPHERS
    elif settings.tls12_suites:
        out[CIPHER_SUITES] = ":".join(settings.tls12_suites)
    return out


# --- rendering: Python's ssl -------------------------------------------------------------------------


def ssl_context(settings: TlsSettings, *, server: bool = False) -> ssl.SSLContext:
    """An ``SSLContext`` enforcing ``settings``: a client's (the group membership client, the REST
    forwarding client), or with ``server`` a TLS server's, which presents ``identity`` (the caller checks
    there is one) and trusts ``trusted_pem`` for client certificates (the caller sets whether it asks
    for them). As in Java and librdkafka, the certificates a config names replace the system's, which
    are trusted only when it names none. ConfigError naming the key when a librdkafka file key cannot be
    loaded."""
    context = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER if server else ssl.PROTOCOL_TLS_CLIENT)
    if not server:
        context.check_hostname = settings.verify and settings.check_hostname
        context.verify_mode = ssl.CERT_REQUIRED if settings.verify else ssl.CERT_NONE
    if settings.trusted_pem:
        try:
            context.load_verify_locations(cadata=settings.trusted_pem)
        except (OSError, ssl.SSLError) as exc:
            raise ConfigError(f"ssl.truststore.location: its certificates cannot be loaded by Python's ssl: {exc}",
                              "ssl.truststore.location") from None
    _load_files(context, settings)
    if not settings.trusted_pem and not (settings.ca_location and settings.ca_location != "probe"):
        context.load_default_certs(ssl.Purpose.CLIENT_AUTH if server else ssl.Purpose.SERVER_AUTH)
    if settings.identity is not None:
        try:
            load_key_material(context, settings.identity)
        except (OSError, ssl.SSLError) as exc:  # e.g. a key that does not match its certificate
            raise ConfigError(f"ssl.keystore.location: its key and certificate chain cannot be loaded by Python's "
                              f"ssl: {exc}", "ssl.keystore.location") from None
    context.minimum_version = ssl.TLSVersion.TLSv1_3 if settings.only_tls13 else settings.versions.minimum
    context.maximum_version = settings.versions.maximum
    if settings.tls12_suites:
        context.set_ciphers(":".join(settings.tls12_suites))
    return context


def _load_files(context: ssl.SSLContext, settings: TlsSettings) -> None:
    """librdkafka's file keys, loaded as librdkafka loads them (a CA file or directory, ``probe``: the
    system's CAs, which every context here trusts anyway; a CRL checked for the peer's certificate)."""
    key = "ssl.ca.location"
    try:
        if settings.ca_location and settings.ca_location != "probe":
            if os.path.isdir(settings.ca_location):
                context.load_verify_locations(capath=settings.ca_location)
            else:
                context.load_verify_locations(cafile=settings.ca_location)
        key = "ssl.crl.location"
        if settings.crl_location:
            context.load_verify_locations(cafile=settings.crl_location)
            context.verify_flags |= ssl.VERIFY_CRL_CHECK_LEAF
        key = "ssl.certificate.location"
        if (settings.certificate_location or settings.key_location) and settings.identity is None:
            context.load_cert_chain(settings.certificate_location or settings.key_location or "",
                                    settings.key_location, lambda: settings.key_password or "")
    except (OSError, ssl.SSLError) as exc:
        raise ConfigError(f"{key}: cannot be loaded by Python's ssl: {exc}", key) from None


def load_key_material(context: ssl.SSLContext, key: KeyMaterial) -> None:
    """``context.load_cert_chain`` from PEM text, without leaving the key in a file."""
    with private_files():
        context.load_cert_chain(private_file(key.certificate_chain_pem + key.private_key_pem, "key-material.pem"))


#: The clean-ups of the innermost :func:`private_files` scope of this thread (None outside any).
_SCOPE: ContextVar[list[Callable[[], None]] | None] = ContextVar("tls_private_files", default=None)


@contextlib.contextmanager
def private_files() -> Iterator[None]:
    """The scope of :func:`private_file`: every file written inside it is closed or deleted at its end."""
    cleanups: list[Callable[[], None]] = []
    token = _SCOPE.set(cleanups)
    try:
        yield
    finally:
        _SCOPE.reset(token)
        for cleanup in reversed(cleanups):
            with contextlib.suppress(OSError):
                cleanup()


def private_file(content: str, name: str) -> str:
    """``content`` as a file only this process can read, for ``ssl`` loaders that take a path; its path.

    In memory (``memfd_create``) where Linux offers it, so no decrypted key reaches a disk, else a 0600
    file in a new 0700 directory. Only inside :func:`private_files`, which removes it."""
    cleanups = _SCOPE.get()
    if cleanups is None:
        raise RuntimeError("private_file() is only for use inside a private_files() scope")
    data = content.encode("utf-8")
    memfd_create = getattr(os, "memfd_create", None)
    if memfd_create is not None and os.path.isdir("/proc/self/fd"):
        fd = memfd_create(name, getattr(os, "MFD_CLOEXEC", 0))
        cleanups.append(lambda: os.close(fd))
        os.write(fd, data)
        return f"/proc/self/fd/{fd}"
    directory = tempfile.mkdtemp(prefix="tls-")  # created 0700
    cleanups.append(lambda: shutil.rmtree(directory))
    path = os.path.join(directory, name)
    fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600)
    try:
        os.write(fd, data)
    finally:
        os.close(fd)
    return path
