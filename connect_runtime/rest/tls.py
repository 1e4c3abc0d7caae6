"""TLS for the REST listener (``listeners=https://...``) from Connect's ``listeners.https.ssl.*`` keys.

Connect reads an HTTPS listener's key and trust material from ``listeners.https.ssl.*`` or, when no
``listeners.https.*`` key is set at all, from the top-level ``ssl.*`` keys (``SSLUtils``,
``valuesWithPrefixAllOrNothing``); the same keys give the client side (forwarding to another worker)
its trust store. We keep that.

Stores are turned into PEM files by a *store loader*: a function from the ``ssl.*`` keys (prefix
stripped) to :class:`PemMaterial`. :func:`pem_store_loader` handles ``ssl.keystore.type=PEM`` and
``ssl.truststore.type=PEM`` (files, or inline ``ssl.keystore.key`` / ``ssl.keystore.certificate.chain``
/ ``ssl.truststore.certificates`` written to files only this process can read); a loader for Java stores
(JKS, PKCS12) is passed in as ``store_loader`` by whoever has one.
"""

from __future__ import annotations

import ssl
from collections.abc import Callable, Mapping
from dataclasses import dataclass

from connect_runtime.api.errors import ConfigError
from connect_runtime.api.prefixed_keys import with_prefix_stripped
from connect_runtime.clients import java_stores, security_keys, tls_policy
from connect_runtime.clients.ssl_context import client_context, private_file, private_files, server_context

HTTPS_PREFIX = "listeners.https."
CLIENT_AUTH = "ssl.client.auth"
_CLIENT_AUTH_MODES = {"none": ssl.CERT_NONE, "requested": ssl.CERT_OPTIONAL, "required": ssl.CERT_REQUIRED}


@dataclass(frozen=True)
class PemMaterial:
    """PEM files for an SSL context: the certificate chain and private key, the CA certificates."""

    cert_chain_path: str | None = None
    key_path: str | None = None
    key_password: str | None = None
    ca_path: str | None = None


#: ``ssl.*`` keys (listener prefix stripped) -> PEM files; raises ConfigError for what it cannot read.
StoreLoader = Callable[[Mapping[str, str]], PemMaterial]


def listener_ssl_props(props: Mapping[str, str]) -> dict[str, str]:
    """The ``ssl.*`` keys of the HTTPS listener, Connect's "all or nothing" way: the
    ``listeners.https.ssl.*`` keys if any is set, else the top-level ``ssl.*`` keys."""
    prefixed = {k: str(v) for k, v in with_prefix_stripped(props, HTTPS_PREFIX).items()}
    if prefixed:
        return prefixed
    return {k: str(v) for k, v in props.items() if k.startswith("ssl.")}


def _java_store(ssl_props: Mapping[str, str], kind: str) -> str | tuple[str, str] | None:
    """A JKS or PKCS12 listener store converted to PEM "files" (:mod:`java_stores` reads it); None for
    PEM stores and unset ones, which the PEM path handles."""
    location = ssl_props.get(f"ssl.{kind}.location")
    declared = (ssl_props.get(f"ssl.{kind}.type") or "").strip() or None
    if not location or (declared or "").upper() == "PEM":
        return None
    prefix = f"{HTTPS_PREFIX}ssl.{kind}"
    if kind == "truststore":
        return private_file(java_stores.load_trust_store(
            location, ssl_props.get("ssl.truststore.password"), declared, prefix=prefix), "rest-tls.ca.pem")
    material = java_stores.load_key_store(
        location, ssl_props.get("ssl.keystore.password"), declared, ssl_props.get("ssl.key.password"),
        prefix=prefix, key_password_key=f"{HTTPS_PREFIX}ssl.key.password")
    return (private_file(material.certificate_chain_pem, "rest-tls.crt.pem"),
            private_file(material.private_key_pem, "rest-tls.key.pem"))


def pem_store_loader(ssl_props: Mapping[str, str]) -> PemMaterial:
    """Key and trust stores as PEM "files": PEM files or inline values as they are, JKS and PKCS12 stores
    converted in memory (a wrong password or type is a ConfigError naming the key)."""
    java_key, java_trust = _java_store(ssl_props, "keystore"), _java_store(ssl_props, "truststore")
    cert = key = ca = None
    inline_key, inline_chain = ssl_props.get("ssl.keystore.key"), ssl_props.get("ssl.keystore.certificate.chain")
    if inline_key or inline_chain:
        if not (inline_key and inline_chain):
            raise ConfigError("ssl.keystore.key and ssl.keystore.certificate.chain must be given together",
                              f"{HTTPS_PREFIX}ssl.keystore.key")
        key, cert = private_file(inline_key, "rest-tls.key.pem"), private_file(inline_chain, "rest-tls.crt.pem")
    elif isinstance(java_key, tuple):
        cert, key = java_key  # converted, the key decrypted: no password
        return PemMaterial(cert, key, None, java_trust if isinstance(java_trust, str) else _pem_ca(ssl_props))
    elif ssl_props.get("ssl.keystore.location"):
        cert = ssl_props["ssl.keystore.location"]  # a PEM keystore file holds the key and its chain
    ca = java_trust if isinstance(java_trust, str) else _pem_ca(ssl_props)
    password = ssl_props.get("ssl.key.password") or ssl_props.get("ssl.keystore.password") or None
    return PemMaterial(cert, key, password, ca)


def _pem_ca(ssl_props: Mapping[str, str]) -> str | None:
    if ssl_props.get("ssl.truststore.certificates"):
        return private_file(ssl_props["ssl.truststore.certificates"], "rest-tls.ca.pem")
    return ssl_props.get("ssl.truststore.location") or None


def server_ssl_context(props: Mapping[str, str], store_loader: StoreLoader = pem_store_loader) -> ssl.SSLContext:
    """The server-side context of an HTTPS listener; ConfigError naming the key when it cannot be built."""
    with private_files():
        return _server_ssl_context(props, store_loader)


def _server_ssl_context(props: Mapping[str, str], store_loader: StoreLoader) -> ssl.SSLContext:
    ssl_props = listener_ssl_props(props)
    material = store_loader(ssl_props)
    if not material.cert_chain_path:
        raise ConfigError("an https listener needs a key store: set listeners.https.ssl.keystore.location "
                          "(PEM: private key and certificate chain) and listeners.https.ssl.keystore.type=PEM",
                          f"{HTTPS_PREFIX}ssl.keystore.location")
    context = server_context()
    _load_key_store(context, material)
    mode = (ssl_props.get(CLIENT_AUTH) or "none").strip().lower()
    if mode not in _CLIENT_AUTH_MODES:
        raise ConfigError(f"Invalid value {mode!r} for configuration {HTTPS_PREFIX}{CLIENT_AUTH}: expected "
                          f"none, requested or required", f"{HTTPS_PREFIX}{CLIENT_AUTH}")
    context.verify_mode = _CLIENT_AUTH_MODES[mode]
    apply_tls_keys(context, props)
    if material.ca_path:
        _load_ca(context, material.ca_path)
    elif mode != "none":
        raise ConfigError(f"{HTTPS_PREFIX}{CLIENT_AUTH}={mode} needs a trust store to check client "
                          f"certificates: set {HTTPS_PREFIX}ssl.truststore.location", f"{HTTPS_PREFIX}{CLIENT_AUTH}")
    return context


def client_ssl_context(props: Mapping[str, str], store_loader: StoreLoader = pem_store_loader) -> ssl.SSLContext:
    """The context a worker uses to call another worker's HTTPS listener (forwarding to the leader).

    It trusts the listener trust store (or the system's when none is set) and presents the listener's
    own certificate, so forwarding works when the listeners require client certificates.
    """
    with private_files():
        return _client_ssl_context(props, store_loader)


def _client_ssl_context(props: Mapping[str, str], store_loader: StoreLoader) -> ssl.SSLContext:
    material = store_loader(listener_ssl_props(props))
    context = client_context()
    if material.ca_path:
        _load_ca(context, material.ca_path)
    if material.cert_chain_path:
        _load_key_store(context, material)
    apply_tls_keys(context, props)
    algorithm = listener_ssl_props(props).get("ssl.endpoint.identification.algorithm", "https").strip()
    if not algorithm:
        context.check_hostname = False  # Kafka's way of turning host name checks off
    return context


def apply_tls_keys(context: ssl.SSLContext, props: Mapping[str, str]) -> None:
    """The listener's TLS versions and cipher suites (``ssl.enabled.protocols``, ``ssl.protocol``,
    ``ssl.cipher.suites``) on ``context``; a key whose value Python's ``ssl`` cannot enforce (a Java
    provider...) is a ConfigError naming it (connect_runtime/clients/security_keys.py)."""
    ssl_props = listener_ssl_props(props)
    prefix = HTTPS_PREFIX if any(k.startswith(HTTPS_PREFIX) for k in props) else ""
    for key, value in ssl_props.items():
        why = security_keys.python_refusal(key, value)
        if why is not None:
            raise security_keys.error(prefix + key, value, why)
    try:
        tls_policy.configure_python_context(context, ssl_props)
    except ValueError:
        raise ConfigError(f"{prefix}ssl.protocol and {prefix}ssl.enabled.protocols leave no TLS version to use",
                          f"{prefix}{tls_policy.PROTOCOL}") from None


def _load_key_store(context: ssl.SSLContext, material: PemMaterial) -> None:
    try:
        context.load_cert_chain(material.cert_chain_path or "", material.key_path, material.key_password)
    except (OSError, ssl.SSLError) as exc:
        raise ConfigError(f"cannot load the REST listener's key store {material.cert_chain_path}: {exc}",
                          f"{HTTPS_PREFIX}ssl.keystore.location") from None


def _load_ca(context: ssl.SSLContext, path: str) -> None:
    try:
        context.load_verify_locations(cafile=path)
    except (OSError, ssl.SSLError) as exc:
        raise ConfigError(f"cannot load the REST listener's trust store {path}: {exc}",
                          f"{HTTPS_PREFIX}ssl.truststore.location") from None
