"""Java key and trust stores (JKS, PKCS12, PEM) read as they are, turned into PEM text.

Java clients name a store file, its type and its passwords (``ssl.truststore.*``, ``ssl.keystore.*``,
``ssl.key.password``); OpenSSL-based libraries (librdkafka, Python's ``ssl``) want PEM. Operators should
not have to convert the stores their Java MirrorMaker already uses, so this module reads them in memory
(``pyjks`` for JKS/JCEKS, ``cryptography`` for PKCS12 and PEM) and hands back PEM text: nothing is
written to disk, and an encrypted private key comes back decrypted only in this process's memory.

Public API (also for the REST server's HTTPS listener):

* :func:`load_trust_store` -> a PEM bundle of the trusted certificates.
* :func:`load_key_store` -> :class:`KeyMaterial`: the PEM certificate chain (leaf first) and the PEM
  (unencrypted PKCS#8) private key.
* :func:`key_material_from_pem` for inline PEM (``ssl.keystore.key`` + ``ssl.keystore.certificate.chain``).

Every failure is a :class:`StoreError` (a ConfigError) naming the key to fix; passwords and key bytes
never appear in a message. Results are cached per (file, size, mtime, type, passwords), because every
client of every task is built from the same few stores.
"""

from __future__ import annotations

import functools
import re
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING

from connect_runtime.api.errors import ConfigError

if TYPE_CHECKING:
    # pyjks and cryptography cost ~150 ms to import (pyasn1 tables, Cryptodome, cffi); only a process
    # that actually reads a store pays it, so each function below imports what it uses when it runs.
    import jks
    from cryptography import x509
    from cryptography.hazmat.primitives.asymmetric.types import PrivateKeyTypes
    from cryptography.hazmat.primitives.serialization import pkcs12

#: Store types Java accepts for ``ssl.*store.type`` that we read (JCEKS is JKS's sibling format).
STORE_TYPES = ("JKS", "PKCS12", "PEM", "JCEKS")

_JKS_MAGIC = (b"\xfe\xed\xfe\xed", b"\xce\xce\xce\xce")


class StoreError(ConfigError):
    """A store cannot be used: missing file, wrong password, unknown type or unreadable content."""


@dataclass(frozen=True)
class KeyMaterial:
    """A client (or server) identity: the certificate chain, leaf first, and its private key, as PEM."""

    certificate_chain_pem: str
    private_key_pem: str

    def __repr__(self) -> str:  # never print key bytes by accident
        return f"KeyMaterial(certificates={self.certificate_chain_pem.count('BEGIN CERTIFICATE')}, key=<hidden>)"


def store_type(declared: str | None, key: str) -> str:
    """The upper-cased store type, or StoreError naming ``key`` when Java would not know it either."""
    value = (declared or "JKS").strip().upper()
    if value == "PKCS#12":
        value = "PKCS12"
    if value not in STORE_TYPES:
        raise StoreError(f"{key}: unknown store type '{declared}' (expected JKS, PKCS12 or PEM)", key)
    return value


def load_trust_store(location: str, password: str | None = None, declared_type: str | None = None, *,
                     prefix: str = "ssl.truststore") -> str:
    """The trusted certificates of the store at ``location`` as one PEM bundle.

    ``declared_type`` is ``ssl.truststore.type`` (Java's default, JKS, when None). As Java 9+ does
    (``keystore.type.compat``), a JKS/PKCS12 declaration reads either binary format: the file decides.
    ``prefix`` names the keys in error messages (``listeners.https.ssl.truststore`` for a REST listener).
    """
    kind = store_type(declared_type, f"{prefix}.type")
    return _trust_pem(location, _stat(location, f"{prefix}.location"), kind, password, prefix)


def load_key_store(location: str, password: str | None = None, declared_type: str | None = None,
                   key_password: str | None = None, *, prefix: str = "ssl.keystore",
                   key_password_key: str = "ssl.key.password") -> KeyMaterial:
    """The first private key of the store at ``location`` with its certificate chain, as PEM.

    ``key_password`` is ``ssl.key.password``; Java falls back to the store password when it is unset,
    and so do we. A PEM store holds a PKCS#8 key (encrypted with ``key_password`` or not) and its chain.
    """
    kind = store_type(declared_type, f"{prefix}.type")
    return _key_material(location, _stat(location, f"{prefix}.location"), kind, password, key_password, prefix,
                         key_password_key)


def key_material_from_pem(certificate_chain: str, private_key: str, key_password: str | None = None, *,
                          prefix: str = "ssl.keystore", key_password_key: str = "ssl.key.password",
                          chain_key: str | None = None, private_key_key: str | None = None) -> KeyMaterial:
    """Inline PEM key material (``ssl.keystore.certificate.chain`` / ``ssl.keystore.key``, or librdkafka's
    ``ssl.certificate.pem`` / ``ssl.key.pem``: ``chain_key`` and ``private_key_key`` name them), checked and
    with the key decrypted, so every consumer gets the same unencrypted PKCS#8 form."""
    certs = _pem_certificates(certificate_chain.encode(), chain_key or f"{prefix}.certificate.chain")
    key = _pem_private_key(private_key.encode(), key_password, private_key_key or f"{prefix}.key", key_password_key)
    return KeyMaterial(_certs_pem(certs), _key_pem(key))


def trusted_certificates_from_pem(certificates: str, *, key: str = "ssl.truststore.certificates") -> str:
    """Inline trusted certificates (``ssl.truststore.certificates``), checked and normalised."""
    return _certs_pem(_pem_certificates(certificates.encode(), key))


# --- reading -------------------------------------------------------------------------------------


def _stat(location: str, key: str) -> tuple[int, int]:
    """(size, mtime) of a readable store file, the cache key part that notices a replaced file."""
    _read(location, key)
    stat = Path(location).stat()
    return stat.st_size, stat.st_mtime_ns


def _read(location: str, key: str) -> bytes:
    try:
        return Path(location).read_bytes()
    except FileNotFoundError:
        raise StoreError(f"{key}: file {location} does not exist", key) from None
    except IsADirectoryError:
        raise StoreError(f"{key}: {location} is a directory, not a store file", key) from None
    except OSError as exc:
        raise StoreError(f"{key}: cannot read {location}: {exc.strerror}", key) from None


def _format(data: bytes, kind: str) -> str:
    """What the file is: JKS (JKS or JCEKS magic), PEM (text), or PKCS12 (DER), whatever was declared
    between JKS and PKCS12; a PEM declaration must be PEM."""
    if kind == "PEM":
        return "PEM"
    if data[:4] in _JKS_MAGIC:
        return "JKS"
    if data.lstrip()[:10] == b"-----BEGIN":
        return "PEM"
    return "PKCS12"


@functools.lru_cache(maxsize=64)
def _trust_pem(location: str, stat: tuple[int, int], kind: str, password: str | None, prefix: str) -> str:
    from cryptography import x509

    data = _read(location, f"{prefix}.location")
    fmt = _format(data, kind)
    described = f"{fmt} store {location}"
    if fmt == "JKS":
        store = _jks(data, password, described, f"{prefix}.password")
        ders = [entry.cert for entry in store.certs.values()]
        # Java also trusts the leaf certificate of each key entry in a trust store (KeyStores.getTrustedCerts)
        ders += [entry.cert_chain[0][1] for entry in store.private_keys.values() if entry.cert_chain]
        certs = [x509.load_der_x509_certificate(der) for der in ders]
    elif fmt == "PKCS12":
        bundle = _pkcs12(data, password, described, f"{prefix}.password")
        certs = [c.certificate for c in bundle.additional_certs]
        if bundle.cert is not None:
            certs.insert(0, bundle.cert.certificate)
    else:
        certs = _pem_certificates(data, f"{prefix}.location")
    if not certs:
        raise StoreError(f"{prefix}.location: {described} holds no certificate", f"{prefix}.location")
    return _certs_pem(certs)


@functools.lru_cache(maxsize=64)
def _key_material(location: str, stat: tuple[int, int], kind: str, password: str | None,
                  key_password: str | None, prefix: str, key_password_key: str) -> KeyMaterial:
    data = _read(location, f"{prefix}.location")
    fmt = _format(data, kind)
    described = f"{fmt} store {location}"
    if fmt == "JKS":
        return _jks_key(data, password, key_password, described, prefix, key_password_key)
    if fmt == "PKCS12":
        try:
            bundle = _pkcs12(data, password, described, f"{prefix}.password")
        except StoreError:
            if not key_password or key_password == password:
                raise
            bundle = _pkcs12(data, key_password, described, key_password_key)
        if bundle.key is None or bundle.cert is None:
            raise StoreError(f"{prefix}.location: {described} holds no private key entry", f"{prefix}.location")
        chain = [bundle.cert.certificate] + [c.certificate for c in bundle.additional_certs]
        return KeyMaterial(_certs_pem(chain), _key_pem(bundle.key))
    certs = _pem_certificates(data, f"{prefix}.location")
    # a PEM store has no store password of its own: one given decrypts the key when ssl.key.password is unset
    key = _pem_private_key(data, key_password or password, f"{prefix}.location", key_password_key)
    return KeyMaterial(_certs_pem(certs), _key_pem(key))


def _jks(data: bytes, password: str | None, described: str, password_key: str) -> jks.KeyStore:
    import jks

    try:
        return jks.KeyStore.loads(data, password)
    except jks.KeystoreSignatureException:
        raise StoreError(f"{password_key}: wrong password for {described}", password_key) from None
    except (jks.KeystoreException, ValueError) as exc:
        raise StoreError(f"{password_key}: {described} cannot be read ({type(exc).__name__})",
                         password_key) from None


def _jks_key(data: bytes, password: str | None, key_password: str | None, described: str, prefix: str,
             key_password_key: str) -> KeyMaterial:
    import jks
    from cryptography import x509
    from cryptography.hazmat.primitives import serialization

    store = _jks(data, password, described, f"{prefix}.password")
    if not store.private_keys:
        raise StoreError(f"{prefix}.location: {described} holds no private key entry", f"{prefix}.location")
    _alias, entry = sorted(store.private_keys.items())[0]
    if not entry.is_decrypted():
        try:
            entry.decrypt(key_password or password or "")
        except jks.DecryptionFailureException:
            raise StoreError(f"{key_password_key}: wrong key password for the private key in {described}",
                             key_password_key) from None
    key = serialization.load_der_private_key(entry.pkey_pkcs8, password=None)
    chain = [x509.load_der_x509_certificate(der) for _type, der in entry.cert_chain]
    return KeyMaterial(_certs_pem(chain), _key_pem(key))


def _pkcs12(data: bytes, password: str | None, described: str,
            password_key: str) -> pkcs12.PKCS12KeyAndCertificates:
    from cryptography.hazmat.primitives.serialization import pkcs12

    try:
        return pkcs12.load_pkcs12(data, password.encode() if password else None)
    except ValueError:
        if data[:1] != b"\x30":
            location_key = password_key.rsplit(".", 1)[0] + ".location"
            raise StoreError(f"{location_key}: {described.removeprefix('PKCS12 store ')} is neither a JKS, PKCS12 "
                             "nor PEM store", location_key) from None
        raise StoreError(f"{password_key}: wrong password for {described} (or the file is damaged)",
                         password_key) from None


def _pem_certificates(data: bytes, key: str) -> list[x509.Certificate]:
    from cryptography import x509

    if b"-----BEGIN CERTIFICATE-----" not in data:
        return []
    try:
        return x509.load_pem_x509_certificates(data)
    except ValueError:
        raise StoreError(f"{key}: a PEM certificate cannot be parsed", key) from None


_PEM_KEY = re.compile(rb"-----BEGIN ((?:ENCRYPTED |RSA |EC |DSA )?PRIVATE KEY)-----.*?-----END \1-----", re.S)


def _pem_private_key(data: bytes, password: str | None, key: str, key_password_key: str) -> PrivateKeyTypes:
    from cryptography.hazmat.primitives import serialization

    match = _PEM_KEY.search(data)
    if match is None:
        raise StoreError(f"{key}: no PEM private key found", key)
    pem = match.group(0)
    encrypted = match.group(1).startswith(b"ENCRYPTED") or b"Proc-Type: 4,ENCRYPTED" in pem
    if encrypted and not password:
        raise StoreError(f"{key_password_key}: the private key in {key} is encrypted; set {key_password_key}",
                         key_password_key)
    try:
        return serialization.load_pem_private_key(pem, password.encode() if (password and encrypted) else None)
    except (TypeError, ValueError):
        if encrypted:
            raise StoreError(f"{key_password_key}: wrong password for the private key in {key}",
                             key_password_key) from None
        raise StoreError(f"{key}: the private key cannot be read", key) from None


def _certs_pem(certs: list[x509.Certificate]) -> str:
    from cryptography.hazmat.primitives import serialization

    return "".join(c.public_bytes(serialization.Encoding.PEM).decode() for c in certs)


def _key_pem(key: PrivateKeyTypes) -> str:
    from cryptography.hazmat.primitives import serialization

    return key.private_bytes(serialization.Encoding.PEM, serialization.PrivateFormat.PKCS8,
                             serialization.NoEncryption()).decode()

