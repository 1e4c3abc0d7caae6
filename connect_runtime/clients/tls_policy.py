"""Java's TLS version and cipher keys (``ssl.protocol``, ``ssl.enabled.protocols``, ``ssl.cipher.suites``)
for librdkafka and Python's ``ssl``.

What each client can enforce decides what is accepted:

* librdkafka has no TLS version setting: it offers TLSv1.2 and TLSv1.3 (its OpenSSL 3 refuses anything
  older). It can still be kept to TLSv1.3 alone: its ``ssl.cipher.suites`` is OpenSSL's TLSv1.2 cipher
  list, and set to :data:`TLS13_ONLY_CIPHERS` (the PSK suites, which a client offers only with a PSK
  callback, and librdkafka installs none) it offers no TLSv1.2 suite at all, so a TLSv1.2-only server
  finds no shared cipher and the handshake fails; TLSv1.3 suites are a separate list OpenSSL keeps.
  It cannot be kept off TLSv1.3, and it cannot narrow the TLSv1.3 suites (OpenSSL's
  ``SSL_CTX_set_ciphersuites`` is not exposed).
* Python's ``ssl`` (the group membership client, REST HTTPS) enforces both bounds
  (``minimum_version`` / ``maximum_version``) and the TLSv1.2 suites (``set_ciphers``), but not the
  TLSv1.3 suites either.

So for a Kafka client: ``ssl.enabled.protocols`` TLSv1.2,TLSv1.3 (Java's default) or TLSv1.3 alone is
enforced; TLSv1.2 alone, or an ``ssl.protocol`` that caps the version below TLSv1.3 (Java's
``SSLContext`` protocol, e.g. the pre-3.0 default TLSv1.2), is refused. TLSv1.1 and older in the list
are accepted and not enabled, as in current JDKs (``jdk.tls.disabledAlgorithms``). Java names cipher
suites by their IANA names; they are translated to OpenSSL's. A list must include every TLSv1.3 suite
OpenSSL offers (Java would otherwise leave the missing ones, or TLSv1.3 altogether, unused).
"""

from __future__ import annotations

import ssl
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

PROTOCOL = "ssl.protocol"
ENABLED_PROTOCOLS = "ssl.enabled.protocols"
CIPHER_SUITES = "ssl.cipher.suites"

#: librdkafka ``ssl.cipher.suites`` that leaves a client only TLSv1.3 (see the module docstring).
TLS13_ONLY_CIPHERS = "PSK"

#: The TLSv1.3 suites OpenSSL offers; a Java list must name all of them (neither client can drop one).
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


def _items(value: Any) -> list[str]:
    if isinstance(value, (list, tuple)):
        return [str(v).strip() for v in value if str(v).strip()]
    return [v.strip() for v in str(value or "").split(",") if v.strip()]


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


def librdkafka_ciphers(java: Mapping[str, Any]) -> str | None:
    """librdkafka's ``ssl.cipher.suites`` for accepted Java keys: :data:`TLS13_ONLY_CIPHERS` when only
    TLSv1.3 is allowed (by the versions, or by a list naming no TLSv1.2 suite), else the OpenSSL names
    of the TLSv1.2 suites listed; None for OpenSSL's defaults."""
    tls12 = [TLS12_SUITES[n] for n in _items(java.get(CIPHER_SUITES)) if n in TLS12_SUITES]
    listed = [n for n in _items(java.get(CIPHER_SUITES)) if n not in _SIGNALLING]
    if versions(java).minimum is ssl.TLSVersion.TLSv1_3 or (listed and not tls12):
        return TLS13_ONLY_CIPHERS
    return ":".join(tls12) if tls12 else None


def configure_context(context: ssl.SSLContext, librdkafka: Mapping[str, Any]) -> None:
    """Give a Python client ``context`` the TLS limits of a librdkafka config (what librdkafka enforces,
    read back from its ``ssl.cipher.suites``), so both kinds of client of one cluster behave alike."""
    ciphers = librdkafka.get(CIPHER_SUITES)
    if ciphers == TLS13_ONLY_CIPHERS:
        context.minimum_version = ssl.TLSVersion.TLSv1_3
    elif ciphers:
        context.set_ciphers(str(ciphers))


def configure_python_context(context: ssl.SSLContext, java: Mapping[str, Any], prefix: str = "") -> None:
    """Give a Python-only ``context`` (REST HTTPS) the limits of Java TLS keys; Python enforces both version
    bounds, so TLSv1.2 alone is honoured here. ValueError (naming the key) when nothing is left."""
    allowed = versions(java)
    context.minimum_version, context.maximum_version = allowed.minimum, allowed.maximum
    tls12 = [TLS12_SUITES[n] for n in _items(java.get(CIPHER_SUITES)) if n in TLS12_SUITES]
    if tls12:
        context.set_ciphers(":".join(tls12))
