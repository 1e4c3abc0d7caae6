"""TLS for the REST listener (``listeners=https://...``) from Connect's ``listeners.https.ssl.*`` keys.

Connect reads an HTTPS listener's key and trust material from ``listeners.https.ssl.*`` or, when no
``listeners.https.*`` key is set at all, from the top-level ``ssl.*`` keys (``SSLUtils``,
``valuesWithPrefixAllOrNothing``); the same keys give the client side (forwarding to another worker)
its trust store. We keep that.

The keys are read by the TLS translation every Kafka client here goes through
(:func:`connect_runtime.clients.tls_properties.parse_tls`: JKS, PKCS12 and PEM stores, inline PEM, the TLS
versions and suites), so a store that works for a worker's clients works for its listener. Only two things
are the listener's own: ``ssl.client.auth`` (whether it asks for client certificates), and the TLS
versions, which Python's ``ssl`` alone enforces here, so TLSv1.2 alone is honoured
(``security_keys.python_refusal``).
"""

from __future__ import annotations

import ssl
from collections.abc import Mapping

from connect_runtime.api.errors import ConfigError
from connect_runtime.api.prefixed_keys import with_prefix_stripped
from connect_runtime.clients import security_keys
from connect_runtime.clients.tls_properties import TlsSettings, parse_tls, ssl_context

HTTPS_PREFIX = "listeners.https."
CLIENT_AUTH = "ssl.client.auth"
_CLIENT_AUTH_MODES = {"none": ssl.CERT_NONE, "requested": ssl.CERT_OPTIONAL, "required": ssl.CERT_REQUIRED}


def listener_ssl_props(props: Mapping[str, str]) -> dict[str, str]:
    """The ``ssl.*`` keys of the HTTPS listener, Connect's "all or nothing" way: the
    ``listeners.https.ssl.*`` keys if any is set, else the top-level ``ssl.*`` keys."""
    prefixed = {k: str(v) for k, v in with_prefix_stripped(props, HTTPS_PREFIX).items()}
    if prefixed:
        return prefixed
    return {k: str(v) for k, v in props.items() if k.startswith("ssl.")}


def _listener_settings(props: Mapping[str, str]) -> tuple[TlsSettings, dict[str, str]]:
    """The listener's TLS settings and its ``ssl.*`` keys; a value Python's ``ssl`` cannot enforce (a Java
    provider...) is a ConfigError naming the key as written (connect_runtime/clients/security_keys.py)."""
    ssl_props = listener_ssl_props(props)
    prefix = HTTPS_PREFIX if any(k.startswith(HTTPS_PREFIX) for k in props) else ""
    for key, value in ssl_props.items():
        why = security_keys.python_refusal(key, value)
        if why is not None:
            raise security_keys.error(prefix + key, value, why)
    return parse_tls(ssl_props, prefix=prefix), ssl_props


def server_ssl_context(props: Mapping[str, str]) -> ssl.SSLContext:
    """The server-side context of an HTTPS listener; ConfigError naming the key when it cannot be built."""
    settings, ssl_props = _listener_settings(props)
    if settings.identity is None and not settings.certificate_location:
        raise ConfigError("an https listener needs a key store: set listeners.https.ssl.keystore.location "
                          "(PEM: private key and certificate chain) and listeners.https.ssl.keystore.type=PEM",
                          f"{HTTPS_PREFIX}ssl.keystore.location")
    mode = (ssl_props.get(CLIENT_AUTH) or "none").strip().lower()
    if mode not in _CLIENT_AUTH_MODES:
        raise ConfigError(f"Invalid value {mode!r} for configuration {HTTPS_PREFIX}{CLIENT_AUTH}: expected "
                          f"none, requested or required", f"{HTTPS_PREFIX}{CLIENT_AUTH}")
    if mode != "none" and not (settings.trusted_pem or settings.ca_location):
        raise ConfigError(f"{HTTPS_PREFIX}{CLIENT_AUTH}={mode} needs a trust store to check client "
                          f"certificates: set {HTTPS_PREFIX}ssl.truststore.location", f"{HTTPS_PREFIX}{CLIENT_AUTH}")
    context = ssl_context(settings, server=True)
    context.verify_mode = _CLIENT_AUTH_MODES[mode]
    return context


def client_ssl_context(props: Mapping[str, str]) -> ssl.SSLContext:
    """The context a worker uses to call another worker's HTTPS listener (forwarding to the leader).

    It trusts the listener trust store (or the system's when none is set) and presents the listener's
    own certificate, so forwarding works when the listeners require client certificates.
    """
    return ssl_context(_listener_settings(props)[0])
