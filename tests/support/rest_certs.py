"""A self-signed PEM certificate for HTTPS listeners in tests, made with ``cryptography``.

The certificate is its own CA (basic constraints CA=true) and names ``localhost`` and ``127.0.0.1``, so
a client that trusts the file verifies the loopback listener with host name checks on.
"""

from __future__ import annotations

import datetime
import ipaddress
from dataclasses import dataclass
from pathlib import Path

from cryptography import x509
from cryptography.hazmat.primitives import hashes, serialization
from cryptography.hazmat.primitives.asymmetric import ec
from cryptography.x509.oid import NameOID


@dataclass(frozen=True)
class PemFiles:
    #: Private key then certificate: what Kafka calls a PEM key store.
    keystore: Path
    #: The certificate alone: the trust store clients use.
    certificate: Path
    key_pem: str
    cert_pem: str


def self_signed(directory: Path, name: str = "rest", key_password: str | None = None) -> PemFiles:
    key = ec.generate_private_key(ec.SECP256R1())
    subject = x509.Name([x509.NameAttribute(NameOID.COMMON_NAME, "localhost")])
    now = datetime.datetime.now(datetime.UTC)
    cert = (x509.CertificateBuilder().subject_name(subject).issuer_name(subject).public_key(key.public_key())
            .serial_number(x509.random_serial_number())
            .not_valid_before(now - datetime.timedelta(minutes=5))
            .not_valid_after(now + datetime.timedelta(days=1))
            .add_extension(x509.SubjectAlternativeName([x509.DNSName("localhost"),
                                                        x509.IPAddress(ipaddress.ip_address("127.0.0.1"))]),
                           critical=False)
            .add_extension(x509.BasicConstraints(ca=True, path_length=None), critical=True)
            .sign(key, hashes.SHA256()))
    encryption: serialization.KeySerializationEncryption = (
        serialization.BestAvailableEncryption(key_password.encode()) if key_password
        else serialization.NoEncryption())
    key_pem = key.private_bytes(serialization.Encoding.PEM, serialization.PrivateFormat.PKCS8,
                                encryption).decode()
    cert_pem = cert.public_bytes(serialization.Encoding.PEM).decode()
    keystore = directory / f"{name}-keystore.pem"
    keystore.write_text(key_pem + cert_pem)
    keystore.chmod(0o600)
    certificate = directory / f"{name}-cert.pem"
    certificate.write_text(cert_pem)
    return PemFiles(keystore, certificate, key_pem, cert_pem)
